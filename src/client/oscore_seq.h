/*
 * Durable sender sequence numbers for the OSCORE contexts the client-side
 * commands send with (coap --oscore-context, initiator --export-oscore-conf),
 * and the state directory every command shares.
 *
 * Why: RFC 8613 Section 7.2 forbids two messages under one (key, nonce),
 * and a static context lives longer than one run of the tool. So each run
 * reserves a range of sequence numbers before it uses any (a high-water
 * mark stored ahead of use, Appendix B.1.1), under an exclusive lock, in a
 * file named after the context's keying material: runs one after another
 * continue above each other, runs at the same time get disjoint ranges, and
 * a run killed at any point leaves a mark above everything it sent.
 *
 * The file format is libcoap's seq_file (`coap-client -E conf,seq_file`):
 * one decimal number, the next sequence number that may be used. One
 * keying material may be recorded in several files: the state
 * directory's (found by the material, whatever the conf is called), the
 * conf's companion CONF.seq (what `coap-client -E CONF,CONF.seq` reads),
 * and a seq_file the user names (`--oscore-context CONF,SEQFILE`). Every
 * run reads all it knows of and goes above the highest, and writes each
 * before it sends: so whichever of the printed or documented spellings
 * comes next, it never goes back.
 */
#ifndef CLI_OSCORE_SEQ_H
#define CLI_OSCORE_SEQ_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "edhoc/oscore.h"

/* The state directory: `explicit_dir` when given ("none" -> returns 1 and
 * out is empty), else $STATE_DIRECTORY (its first entry, systemd), else
 * $XDG_STATE_HOME/edhoc-cli, else $HOME/.local/state/edhoc-cli. The
 * directory (and missing parents) is created, the last one with mode 0700.
 * Returns 0, 1 ("none") or -1 with why filled. */
int cli_state_dir(const char *explicit_dir, char *out, size_t cap, char *why, size_t why_cap);

/* Split `--oscore-context` values of the form conf,seqfile (libcoap's
 * convention): when `arg` names an existing file it is the conf alone;
 * otherwise the part after the last comma is the seq file. conf and seq
 * receive copies (seq empty when there is none). Returns 0 or -1 (too
 * long). */
int cli_oscore_context_arg(const char *arg, char *conf, size_t conf_cap, char *seq, size_t seq_cap);

struct cli_seq_store;

/* Open (creating) the sequence-number records of the context `cfg`
 * describes: STATE_DIR/oscore-seq/ (unless state_dir is NULL or ""),
 * the user's seq_file if given, and CONF.seq beside conf_path if given.
 * CONF.seq is left out only when it does not exist and its directory
 * refuses new files (a libcoap client of the same user could not create
 * it either); one that exists and cannot be kept in step is an error.
 * Returns 0 or -1 with why filled (also when no record is left). */
int cli_seq_open(struct cli_seq_store **s, const char *state_dir, const char *conf_path,
                 const char *seq_file, const struct oscore_config *cfg, char *why, size_t why_cap);

/* The lowest sequence number not yet reserved by any run (read under the
 * lock). Returns 0 or -1 with why. */
int cli_seq_peek(struct cli_seq_store *s, uint64_t *next, char *why, size_t why_cap);

/* Hand the context to the store: its sequence number moves to the stored
 * mark (or to at_least when higher; at_least below the stored mark is
 * refused with -2 and why names the mark), and it reserves `batch`
 * numbers at a time through the context's persistence before using any
 * (a run that starts meanwhile makes the next reservation start above
 * its own). The store must outlive the context's use. Returns 0, -1 (I/O,
 * why filled) or -2. */
int cli_seq_attach(struct cli_seq_store *s, struct oscore_context *ctx, uint32_t batch,
                   uint64_t at_least, char *why, size_t why_cap);

/* Record that every sequence number below `next` may have been used by
 * the context cfg describes (never lowers the mark): e.g. the initiator
 * exporting an EDHOC-derived context that it already sent with. Returns 0
 * or -1 with why. */
int cli_seq_note_used(const char *state_dir, const char *conf_path, const char *seq_file,
                      const struct oscore_config *cfg, uint64_t next, char *why, size_t why_cap);

/* At the end of a run: give back the reserved numbers from `next` (the
 * context's next sequence number) on, when no other run reserved after
 * this one, so that "already used" stays exact for the next --seq.
 * A run that dies before it keeps them reserved, which is safe. Returns 0
 * or -1 with why. */
int cli_seq_release(struct cli_seq_store *s, uint64_t next, char *why, size_t why_cap);

void cli_seq_close(struct cli_seq_store *s);

/* The hex name (32 digits and a NUL) of what fixes cfg's sender key and
 * nonces (master secret and salt, Sender ID, ID Context, algorithms): the
 * seq files' names here, the host-wide context locks of the responder
 * (cli/context_lock.c). Returns 0 or -1. */
int cli_oscore_material_id(const struct oscore_config *cfg, char hexid[33]);

#endif
