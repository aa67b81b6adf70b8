/*
 * tests/nonce_check.h - proof from captures that no OSCORE (key, nonce)
 * pair sealed two different messages (RFC 8613 Section 7.2: "An AEAD
 * nonce MUST NOT be used more than once per AEAD key.").
 *
 * A test run leaves pcap/pcapng captures (from one or both ends) and the
 * OSCORE context files its endpoints used. The checker reads every UDP
 * datagram carrying CoAP with an OSCORE option, works out under which key
 * and nonce it was sealed, and reports every (key, nonce) that carries two
 * different ciphertexts.
 *
 * It trusts nothing on the wire to name a key: a message counts as sealed
 * under a key only when the AEAD verifies with that key, the nonce and the
 * AAD RFC 8613 Sections 5.2 and 5.4 give. The IDs and Partial IVs on the
 * wire only feed that computation (they are part of the nonce and AAD, so
 * a forged value fails to verify). Every key of every context is tried:
 * each context gives the key of its sender direction and the key of its
 * recipient direction, so one side's context file covers both directions,
 * and the two sides' files of one association describe the same two keys.
 *
 *   requests   nonce from (kid, Partial IV) and the Common IV, AAD from
 *              (kid, Partial IV);
 *   responses  matched to their request by the reversed UDP address pair
 *              and the CoAP token (the request preceding the response in the
 *              same capture first, then requests of other captures by time;
 *              the AEAD decides which one is right). With a Partial IV the
 *              nonce is built from the Sender ID of the key's owner and that
 *              Partial IV, without one it is the request's nonce; the AAD
 *              is always the request's kid and Partial IV.
 *
 * The same datagram seen twice (a retransmission, or both ends' captures of
 * one packet) has the same ciphertext and is not a violation; it is counted
 * in `repeats`. Messages that cannot be attributed (no known key verifies,
 * no request found for a response, a fragment of an outer block-wise
 * transfer, a malformed OSCORE option) are counted, never reported as
 * violations and never fatal. Undecodable frames and datagrams are skipped
 * and counted.
 *
 * Usage:
 *
 *   struct nonce_check *nc = nonce_check_new();
 *   char why[256];
 *   if (nonce_check_add_context_file(nc, "client.conf", why, sizeof why) ||
 *       nonce_check_add_pcap(nc, "client.pcap", why, sizeof why) ||
 *       nonce_check_add_pcap(nc, "server.pcap", why, sizeof why))
 *       fail_msg("%s", why);
 *   const struct nonce_check_report *r = nonce_check_report(nc);
 *   if (r->n_violations) {
 *       nonce_check_print(nc, stderr);
 *       fail();
 *   }
 *   nonce_check_free(nc);
 *
 * Contexts and captures may be added in any order: the analysis runs when
 * the report is asked for, and again after anything was added.
 */
#ifndef TESTS_NONCE_CHECK_H
#define TESTS_NONCE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "edhoc/crypto.h"
#include "edhoc/oscore.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nonce_check;

/* A new, empty checker; NULL when out of memory. */
struct nonce_check *nonce_check_new(void);

/* Wipe the derived keys and free everything (reports and violation texts
 * included). NULL is accepted. */
void nonce_check_free(struct nonce_check *nc);

/* Read a context file in libcoap's coap-oscore-conf(5) format (the one
 * edhoc-cli reads) and add its keys. Returns 0, or -1 with the reason in
 * why ("client.conf:3: unknown keyword 'x'", "cannot open ..."). */
int nonce_check_add_context_file(struct nonce_check *nc, const char *conf_path, char *why,
                                 size_t cap);

/* Add the two keys (sender and recipient direction) of a parsed
 * configuration, derived as oscore_context_init_config() derives them.
 * Adding the same keys again (e.g. the peer's file) changes nothing.
 * Returns 0, an OSCORE_ERR_* code of the derivation, or -1 (no memory). */
int nonce_check_add_context(struct nonce_check *nc, const struct oscore_config *cfg);

/* Read every frame of a pcap or pcapng file and keep the CoAP messages
 * carrying an OSCORE option. Returns 0, or -1 with the reason in why when
 * the file cannot be opened, or is truncated or corrupt (the packets read
 * before the damage are kept). */
int nonce_check_add_pcap(struct nonce_check *nc, const char *path, char *why, size_t cap);

/* Largest sizes of the values a violation names. */
#define NONCE_CHECK_MAX_ID         OSCORE_MAX_ID
#define NONCE_CHECK_MAX_ID_CONTEXT OSCORE_MAX_ID_CONTEXT
#define NONCE_CHECK_MAX_NONCE      EDHOC_CRYPTO_MAX_NONCE

/* One packet of a capture. */
struct nonce_check_location {
    const char *file; /* the path given to nonce_check_add_pcap */
    unsigned packet;  /* 1-based frame number in that file */
    bool response;    /* false: a request */
};

/* Two different ciphertexts sealed under one (key, nonce). */
struct nonce_check_violation {
    /* The key: the Sender Key of the endpoint with this Sender ID, in the
     * context with this ID Context (has_id_context false: none). */
    uint8_t sender_id[NONCE_CHECK_MAX_ID];
    size_t sender_id_len;
    bool has_id_context;
    uint8_t id_context[NONCE_CHECK_MAX_ID_CONTEXT];
    size_t id_context_len;
    int aead_alg;
    /* The nonce and what it was built from: ID_PIV and Partial IV (for a
     * response without Partial IV, those of its request). */
    uint8_t nonce[NONCE_CHECK_MAX_NONCE];
    size_t nonce_len;
    uint8_t id_piv[NONCE_CHECK_MAX_ID];
    size_t id_piv_len;
    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len;
    /* The first message seen under this pair, and the one that differs. */
    struct nonce_check_location first, second;
    /* All of the above in one line of English. */
    char text[512];
};

struct nonce_check_report {
    unsigned files;        /* captures added */
    unsigned frames;       /* frames read from them */
    unsigned datagrams;    /* UDP datagrams among the frames */
    unsigned coap;         /* datagrams that parse as CoAP */
    unsigned skipped;      /* frames or datagrams that do not decode (malformed,
                              * truncated, not CoAP): skipped */
    unsigned ignored;      /* frames not carrying UDP (ARP, TCP, ...) */
    unsigned oscore;       /* CoAP messages with an OSCORE option (each datagram
                              * counts, retransmissions too) */
    unsigned requests;     /* of which requests */
    unsigned responses;    /* of which responses */
    unsigned attributed;   /* verified under a known key */
    unsigned unattributed; /* oscore - attributed, the sum of: */
    unsigned no_key;       /*   no known key verifies it */
    unsigned no_request;   /*   a response whose request is in no capture */
    unsigned fragments;    /*   carries an outer Block1/Block2 option */
    unsigned malformed;    /*   bad OSCORE option, no payload, a request
                              *   without kid or Partial IV, a code neither
                              *   request nor response */
    unsigned repeats;      /* attributed messages whose (key, nonce) and
                              * ciphertext were seen before */
    size_t distinct_pairs; /* distinct (key, nonce) pairs seen */
    /* Requests (key, kid, Partial IV) answered with a success (2.xx
     * inside) by two different responses: processed twice, against RFC
     * 8613 Section 7.4 (a retransmitted answer is the same bytes). */
    unsigned accepted_twice;
    size_t n_violations;
    const struct nonce_check_violation *violations;
};

/* Analyse what was added (again, if anything was added since the last
 * call) and return the result; valid until the next add or free. NULL
 * only when out of memory. */
const struct nonce_check_report *nonce_check_report(struct nonce_check *nc);

/* The report as text: the counts on one line, then one line per
 * violation. */
void nonce_check_print(struct nonce_check *nc, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
