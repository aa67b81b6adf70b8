/*
 * edhoc-cli simulate: the report of a run (simulate_output.h), as text or
 * as the JSON object of docs/json/simulate.schema.json.
 */
#include "simulate_output.h"

#include <stdlib.h>
#include <string.h>

#include "edhoc/netacct.h"
#include "util.h"

const char *cli_sim_suite_list(const int *s, size_t n, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%d", i ? "," : "", s[i]);
    return buf;
}

static void print_hex_block(FILE *f, const uint8_t *p, size_t len, const char *indent)
{
    for (size_t i = 0; i < len; i += 16) {
        fputs(indent, f);
        for (size_t j = i; j < len && j < i + 16; j++)
            fprintf(f, "%s%02x", j == i ? "" : " ", p[j]);
        fputc('\n', f);
    }
    if (len == 0)
        fprintf(f, "%s(empty)\n", indent);
}

/* ---- Bytes per layer as the A.2 framing would send them ----
 *
 * simulate has no datagrams, so each message is put into the CoAP message
 * RFC 9528 Appendix A.2 would send (encoded here, not estimated): requests
 * CON POST with a 1-byte token, Uri-Path .well-known/edhoc, Content-Format
 * 65 and the CBOR true (message_1) or C_R prefix; responses ACK 2.04
 * Changed (4.00 for an error message) with the 1-byte token and
 * Content-Format 64; the empty 2.04 answering message_3 when there is no
 * message_4. UDP and IPv6 headers on top (ports 5683 and an ephemeral one),
 * then the link chosen with --link / --link-mtu, with its time on air and
 * energy when it has a time model (docs/airtime.md). */

#define FRAMED_MAX SIMULATE_MAX_FRAMED
#define FRAMING_ASSUMPTIONS                                                                        \
    "as the A.2 framing would send (not measured): CON POST, 1-byte token, Uri-Path "              \
    ".well-known/edhoc, Content-Format 65, true / C_R prefix; responses ACK 2.04 (4.00 for "       \
    "errors), 1-byte token, Content-Format 64; UDP over IPv6"

struct framed {
    const char *name;
    char from;
    long edhoc; /* -1: no EDHOC message */
    struct edhoc_netacct_layers l;
};

/* The link has a time and energy model (not NONE or a bare MTU). */
static bool sim_has_air(const struct cli_net_opts *net)
{
    enum edhoc_netacct_link_type t = net->link.type;
    return t == EDHOC_NETACCT_LINK_802154 || t == EDHOC_NETACCT_LINK_BLE ||
           t == EDHOC_NETACCT_LINK_LORAWAN;
}

/* The layers of one framed message: the CoAP bytes themselves go to the
 * link model, so SCHC on LoRaWAN compresses this very header, and the
 * initiator is the client (uplink on LoRaWAN). */
static void frame_layers(const struct cli_net_opts *net, const uint8_t *coap, size_t len, char from,
                         struct edhoc_netacct_layers *l)
{
    uint16_t client = 0, server = 5683; /* the client's port: unknown, not compressible */
    cli_net_layers_msg(&net->link, coap, len, true, from == 'I' ? client : server,
                       from == 'I' ? server : client, from == 'I', l);
}

/* Every recorded message framed, with its layers; returns the count (0
 * when a message cannot be framed or the handshake failed). */
static size_t frame_run(const struct simulate_run *run, const struct cli_net_opts *net,
                        struct framed *out, size_t max)
{
    struct simulate_framed *coap = calloc(max, sizeof *coap);
    if (!coap)
        return 0;
    size_t n = simulate_frame_run(run, coap, max);
    for (size_t i = 0; i < n; i++) {
        out[i] = (struct framed){coap[i].name, coap[i].from, coap[i].edhoc, {0}};
        frame_layers(net, coap[i].coap, coap[i].coap_len, coap[i].from, &out[i].l);
    }
    free(coap);
    return n;
}

static void framed_totals(const struct framed *fr, size_t n, struct edhoc_netacct_total *t)
{
    edhoc_netacct_total_clear(t);
    for (size_t i = 0; i < n; i++)
        edhoc_netacct_total_add(t, &fr[i].l, fr[i].edhoc > 0 ? (size_t)fr[i].edhoc : 0, true);
}

/* The exchange on the link's air: every framed message one after another
 * (edhoc_netacct_air_sequence), then the host time on top: the crypto time
 * of the reported run, measured in this process (both sides). */
static void framed_air(const struct cli_net_opts *net, const struct framed *fr, size_t n,
                       const struct edhoc_netacct_radio *radio, double host_ms,
                       struct cli_air_summary *s)
{
    memset(s, 0, sizeof *s);
    s->host_ms = host_ms;
    struct edhoc_netacct_step steps[FRAMED_MAX];
    for (size_t i = 0; i < n; i++) {
        cli_air_summary_add(s, radio, &fr[i].l.air, fr[i].l.frames, fr[i].from == 'I');
        s->link_us += fr[i].l.air.link_us;
        steps[i] = (struct edhoc_netacct_step){&fr[i].l.air, fr[i].from == 'I', 0};
    }
    uint64_t host_us = host_ms > 0 ? (uint64_t)(host_ms * 1000 + 0.5) : 0;
    s->e2e_us = edhoc_netacct_air_sequence(&net->link, steps, n) + host_us;
}

static void print_framed_text(FILE *f, const struct simulate_run *run,
                              const struct simulate_timing *t, const struct cli_net_opts *net)
{
    struct framed fr[FRAMED_MAX];
    size_t n = frame_run(run, net, fr, FRAMED_MAX);
    if (!n)
        return;
    bool link = net->link.type != EDHOC_NETACCT_LINK_NONE, air = sim_has_air(net);
    struct edhoc_netacct_radio radio = cli_net_radio(&net->link, &net->radio, net->radio_set);
    fprintf(f, "\nPer layer, %s:\n", FRAMING_ASSUMPTIONS);
    fprintf(f, "  %-16s %-4s %7s %7s %6s %6s%s", "message", "dir", "EDHOC", "CoAP", "UDP", "IPv6",
            link ? " frames    link" : "");
    if (air)
        fprintf(f, " %11s %11s %11s %9s", "on air", "link time", "duty wait", "mJ (S+R)");
    fputc('\n', f);
    struct edhoc_netacct_total tot;
    framed_totals(fr, n, &tot);
    for (size_t i = 0; i <= n; i++) {
        const struct edhoc_netacct_layers *l = i < n ? &fr[i].l : NULL;
        char eb[24];
        if (i == n)
            snprintf(eb, sizeof eb, "%zu", tot.edhoc);
        else if (fr[i].edhoc >= 0)
            snprintf(eb, sizeof eb, "%ld", fr[i].edhoc);
        else
            snprintf(eb, sizeof eb, "-");
        fprintf(f, "  %-16s %-4s %7s %7zu %6zu %6zu", i < n ? fr[i].name : "total",
                i == n              ? ""
                : fr[i].from == 'I' ? "I->R"
                                    : "R->I",
                eb, l ? l->coap : tot.coap, l ? l->udp : tot.udp, l ? l->ip : tot.ip);
        if (link)
            fprintf(f, " %6u %7zu", l ? l->frames : tot.frames, l ? l->link : tot.link);
        if (air && l) {
            char t1[24], t2[24], t3[24];
            struct edhoc_netacct_energy es = edhoc_netacct_energy_of(&radio, &l->air, true);
            struct edhoc_netacct_energy er = edhoc_netacct_energy_of(&radio, &l->air, false);
            fprintf(f, " %11s %11s %11s %9.3f", cli_air_time(l->air.tx_us, t1, sizeof t1),
                    cli_air_time(l->air.link_us, t2, sizeof t2),
                    cli_air_time(l->air.wait_us, t3, sizeof t3),
                    (es.tx_j + es.rx_j + er.tx_j + er.rx_j) * 1e3);
            if (l->air.fragments)
                fprintf(f, "  %u SCHC fragments", l->air.fragments);
        }
        fputc('\n', f);
    }
    char desc[512];
    edhoc_netacct_link_describe(&net->link, desc, sizeof desc);
    fprintf(f, "  Link: %s\n", desc);
    if (!air)
        return;
    struct cli_air_summary s;
    framed_air(net, fr, n, &radio, t->crypto_ms, &s);
    cli_air_summary_print(f, &s, &radio, "On the link", "the messages",
                          "the crypto time measured here, both sides");
}

/* The per-layer table as JSON, or null when there is none (a failed
 * handshake: C_R, and so the framing of message_3, is unknown). */
static json_t *framed_json(const struct simulate_run *run, const struct simulate_timing *t,
                           const struct cli_net_opts *net)
{
    struct framed fr[FRAMED_MAX];
    size_t n = frame_run(run, net, fr, FRAMED_MAX);
    if (!n)
        return json_null();
    bool link = net->link.type != EDHOC_NETACCT_LINK_NONE, air = sim_has_air(net);
    struct edhoc_netacct_radio radio = cli_net_radio(&net->link, &net->radio, net->radio_set);
    json_t *o = json_object();
    cli_json_set(o, "measured", json_false());
    cli_json_set(o, "framing", json_string("rfc9528_appendix_a2"));
    cli_json_set(o, "link", cli_net_link_json(&net->link));
    cli_json_set(o, "radio", air ? cli_net_radio_json(&radio) : json_null());
    json_t *msgs = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct edhoc_netacct_layers *l = &fr[i].l;
        json_t *m = json_object();
        cli_json_set(m, "name", json_string(fr[i].edhoc >= 0 ? fr[i].name : "empty_2.04"));
        cli_json_set(m, "from", json_string(fr[i].from == 'I' ? "initiator" : "responder"));
        cli_json_set(m, "edhoc_bytes", cli_json_int_or_null(fr[i].edhoc >= 0, fr[i].edhoc));
        cli_json_set(m, "coap_bytes", json_integer((json_int_t)l->coap));
        cli_json_set(m, "udp_bytes", json_integer((json_int_t)l->udp));
        cli_json_set(m, "ip_bytes", json_integer((json_int_t)l->ip));
        cli_json_set(m, "frames", cli_json_int_or_null(link, l->frames));
        cli_json_set(m, "link_bytes", cli_json_int_or_null(link, (long long)l->link));
        cli_json_set(m, "air", air ? cli_net_air_json(&radio, &l->air) : json_null());
        json_array_append_new(msgs, m);
    }
    cli_json_set(o, "messages", msgs);
    struct edhoc_netacct_total tot;
    framed_totals(fr, n, &tot);
    cli_json_set(o, "total", cli_net_total_json(&tot, link));
    json_t *ja = json_null();
    if (air) {
        struct cli_air_summary s;
        framed_air(net, fr, n, &radio, t->crypto_ms, &s);
        ja = cli_air_summary_json(&s);
    }
    cli_json_set(o, "air", ja);
    return o;
}

/* The library's error codes as the words the schema lists. */
static const char *error_word(int err)
{
    switch (err) {
    case EDHOC_ERR_ARG: return "argument";
    case EDHOC_ERR_STATE: return "state";
    case EDHOC_ERR_CONN_ID_CONFLICT: return "conn_id_conflict";
    case EDHOC_ERR_BUFFER: return "buffer";
    case EDHOC_ERR_TOO_LARGE: return "too_large";
    case EDHOC_ERR_CRYPTO: return "crypto";
    case EDHOC_ERR_CREDENTIAL: return "credential";
    case EDHOC_ERR_NO_COMMON_SUITE: return "no_common_suite";
    case EDHOC_ERR_MALFORMED: return "malformed";
    case EDHOC_ERR_NOT_DETERMINISTIC: return "not_deterministic";
    case EDHOC_ERR_TRAILING: return "trailing";
    case EDHOC_ERR_CONN_ID_ENCODING: return "conn_id_encoding";
    case EDHOC_ERR_SUITES_ENCODING: return "suites_encoding";
    case EDHOC_ERR_ID_CRED_ENCODING: return "id_cred_encoding";
    case EDHOC_ERR_EPHEMERAL_LENGTH: return "ephemeral_length";
    case EDHOC_ERR_INVALID_POINT: return "invalid_point";
    case EDHOC_ERR_MAC_LENGTH: return "mac_length";
    case EDHOC_ERR_METHOD: return "method";
    case EDHOC_ERR_WRONG_SUITE: return "wrong_suite";
    case EDHOC_ERR_CONN_ID_EQUAL: return "conn_id_equal";
    case EDHOC_ERR_EAD_CRITICAL: return "ead_critical";
    case EDHOC_ERR_EAD_REJECTED: return "ead_rejected";
    case EDHOC_ERR_UNSUPPORTED: return "unsupported";
    case EDHOC_ERR_MAC: return "mac";
    case EDHOC_ERR_SIGNATURE: return "signature";
    case EDHOC_ERR_DECRYPT: return "decrypt";
    case EDHOC_ERR_UNKNOWN_CREDENTIAL: return "unknown_credential";
    case EDHOC_ERR_PEER_ERROR: return "peer_error";
    case EDHOC_CRED_ERR_FORMAT: return "credential_format";
    case EDHOC_CRED_ERR_UNKNOWN: return "credential_unknown";
    case EDHOC_CRED_ERR_UNTRUSTED: return "credential_untrusted";
    case EDHOC_CRED_ERR_EXPIRED: return "credential_expired";
    case EDHOC_CRED_ERR_KEY_TYPE: return "credential_key_type";
    case EDHOC_CRED_ERR_FILE: return "credential_file";
    case EDHOC_CRED_ERR_PERMISSIONS: return "credential_permissions";
    case EDHOC_CRED_ERR_TOO_LARGE: return "credential_too_large";
    case EDHOC_CRED_ERR_CHAIN_LOOP: return "credential_chain_loop";
    case EDHOC_CRED_ERR_CHAIN_DEPTH: return "credential_chain_depth";
    case EDHOC_CRED_ERR_AMBIGUOUS: return "credential_ambiguous";
    default: return "other";
    }
}

/* ID_CRED's type word, or null when it cannot be read. */
static json_t *id_cred_json(const struct cli_side *s)
{
    int type = cli_id_cred_type_of(s->id_cred, s->id_cred_len);
    return type ? json_string(cli_id_cred_type_name(type)) : json_null();
}

/* Secret values only with --export-secrets (else null). */
static json_t *secret_hex(const uint8_t *p, size_t len, bool secrets)
{
    return secrets ? cli_json_hex_value(p, len) : json_null();
}

static json_t *key_update_json(const struct simulate_run *run, bool secrets)
{
    const struct simulate_key_update *ku = &run->ku;
    if (run->err || !ku->done)
        return json_null();
    json_t *o = json_object();
    cli_json_set(o, "context", cli_json_hex_value(ku->context, ku->context_len));
    cli_json_set(o, "sides_agree", json_boolean(ku->sides_agree));
    cli_json_set(o, "prk_out_before", secret_hex(ku->prk_out_before, ku->prk_len, secrets));
    cli_json_set(o, "prk_out_after", secret_hex(ku->prk_out_after, ku->prk_len, secrets));
    cli_json_set(o, "prk_exporter_after", secret_hex(ku->prk_exporter_after, ku->prk_len, secrets));
    /* Neither side has sent with the new context yet: both next numbers 0. */
    cli_json_set(o, "oscore",
                 run->have_oscore ? cli_oscore_json(&ku->oscore_i, secrets, 0, 0) : json_null());
    return o;
}

int cli_simulate_print_json(FILE *f, const struct cli_sim_report *rep)
{
    const struct cli_edhoc_opts *o = rep->opts;
    const struct cli_side *si = rep->si, *sr = rep->sr;
    const struct simulate_run *run = &rep->result->run;
    const struct simulate_timing *t = &rep->result->timing;
    const struct cli_sim_keys *keys = rep->keys;
    int suite = rep->result->suite;
    json_t *root = json_object();
    cli_json_set(root, "outcome", json_string(run->err ? "failed" : "ok"));
    json_t *err = json_null();
    if (run->err) {
        err = json_object();
        cli_json_set(err, "side", json_string(run->failed_side == 'I' ? "initiator" : "responder"));
        cli_json_set(err, "code", json_integer(run->err));
        cli_json_set(err, "name", json_string(error_word(run->err)));
        cli_json_set(err, "peer_err_code",
                     cli_json_int_or_null(run->have_peer_error, (long long)run->peer_error.code));
        cli_json_set(err, "peer_diagnostic",
                     run->have_peer_error && run->peer_error_text[0]
                         ? json_string(run->peer_error_text)
                         : json_null());
    }
    cli_json_set(root, "error", err);
    cli_json_set(root, "method", json_integer(o->method));
    cli_json_set(root, "suite", cli_json_int_or_null(suite >= 0, suite));
    cli_json_set(root, "attempts", json_integer(run->attempts));
    cli_json_set(root, "id_cred_i", id_cred_json(si));
    cli_json_set(root, "id_cred_r", id_cred_json(sr));
    json_t *msgs = json_array();
    for (size_t i = 0; i < run->n_msgs; i++) {
        const struct simulate_recorded *m = &run->msgs[i];
        json_t *jm = json_object();
        cli_json_set(jm, "name", json_string(m->name));
        cli_json_set(jm, "from", json_string(m->sender == 'I' ? "initiator" : "responder"));
        cli_json_set(jm, "bytes", json_integer((json_int_t)m->len));
        cli_json_set(jm, "hex", cli_json_hex_value(m->bytes, m->len));
        json_array_append_new(msgs, jm);
    }
    cli_json_set(root, "messages", msgs);
    cli_json_set(root, "total_bytes", json_integer((json_int_t)simulate_total_bytes(run)));
    cli_json_set(root, "handshake_bytes", json_integer((json_int_t)simulate_handshake_bytes(run)));
    cli_json_set(root, "time_ms", cli_json_real_or_null(t->handshake_ms));
    cli_json_set(root, "min_time_ms", cli_json_real_or_null(t->min_ms));
    cli_json_set(root, "crypto_ms", cli_json_real_or_null(t->crypto_ms));
    cli_json_set(root, "crypto_calls", json_integer(t->crypto_calls));
    cli_json_set(root, "runs", json_integer(t->runs));
    cli_json_set(root, "partial", json_boolean(t->partial));
    cli_json_set(root, "framed", framed_json(run, t, rep->net));
    bool osc = !run->err && run->have_oscore;
    cli_json_set(root, "oscore_contexts_match",
                 osc ? json_boolean(simulate_oscore_contexts_match(run)) : json_null());
    cli_json_set(root, "oscore",
                 osc ? cli_oscore_json(&run->oscore_i, o->export_secrets, 0, 0) : json_null());
    cli_json_set(root, "oscore_unavailable",
                 !run->err && !run->have_oscore ? json_string(run->no_oscore) : json_null());
    cli_json_set(root, "key_update", key_update_json(run, o->export_secrets));
    cli_json_set(root, "exports",
                 !run->err && keys->have_exports ? cli_exports_json(&keys->exports_i, run->ku.done)
                                                 : json_null());
    cli_json_set(root, "exports_match",
                 !run->err && keys->have_exports ? json_boolean(keys->exports_match) : json_null());
    json_t *trace = json_null();
    if (o->trace) {
        trace = json_array();
        for (size_t i = 0; i < run->n_trace; i++) {
            const struct simulate_trace_entry *e = &run->trace[i];
            json_t *je = json_object();
            cli_json_set(je, "side", json_string(e->side == 'I' ? "initiator" : "responder"));
            cli_json_set(je, "name", json_string(e->name));
            cli_json_set(je, "hex", cli_json_hex_value(e->value, e->len));
            json_array_append_new(trace, je);
        }
    }
    cli_json_set(root, "trace", trace);
    return cli_json_print(root, f);
}

static void print_oscore_text(FILE *f, const char *title, const struct edhoc_oscore_params *p,
                              bool secrets)
{
    fprintf(f, "%s: sender ID ", title);
    cli_hex_print(f, p->sender_id, p->sender_id_len);
    fprintf(f, " (C_R), recipient ID ");
    cli_hex_print(f, p->recipient_id, p->recipient_id_len);
    fprintf(f, " (C_I), AEAD %s, HKDF %s\n", edhoc_crypto_alg_name(p->aead_alg),
            edhoc_crypto_alg_name(p->hash_alg));
    if (secrets) {
        fprintf(f, "  master secret ");
        cli_hex_print(f, p->master_secret, p->master_secret_len);
        fprintf(f, "\n  master salt   ");
        cli_hex_print(f, p->master_salt, p->master_salt_len);
        fputc('\n', f);
    }
}

void cli_simulate_print_text(FILE *f, const struct cli_sim_report *rep)
{
    const struct cli_edhoc_opts *o = rep->opts;
    const struct cli_side *si = rep->si, *sr = rep->sr;
    const struct simulate_run *run = &rep->result->run;
    const struct simulate_timing *t = &rep->result->timing;
    const struct cli_sim_keys *keys = rep->keys;
    int suite = rep->result->suite;
    char b1[64], b2[64];
    const int *sr_list = o->n_suites_r ? o->suites_r : NULL;
    fprintf(f,
            "EDHOC in-process exchange: method %d (%s), initiator suites %s, responder suites %s\n",
            o->method, cli_method_name(o->method),
            cli_sim_suite_list(o->suites, o->n_suites, b1, sizeof b1),
            sr_list ? cli_sim_suite_list(o->suites_r, o->n_suites_r, b2, sizeof b2) : "all");
    fprintf(f, "  initiator: %s, ID_CRED_I by %s\n", si->cred_origin,
            cli_id_cred_type_name(cli_id_cred_type_of(si->id_cred, si->id_cred_len)));
    fprintf(f, "  responder: %s, ID_CRED_R by %s\n", sr->cred_origin,
            cli_id_cred_type_name(cli_id_cred_type_of(sr->id_cred, sr->id_cred_len)));

    if (o->trace && run->n_trace) {
        fprintf(f, "\nTrace (RFC 9529 names):\n");
        for (size_t i = 0; i < run->n_trace; i++) {
            const struct simulate_trace_entry *e = &run->trace[i];
            fprintf(f, "%s %s (%zu bytes)\n", e->side == 'I' ? "[I]" : "[R]", e->name, e->len);
            print_hex_block(f, e->value, e->len, "    ");
        }
    }

    fprintf(f, "\nMessages:\n");
    for (size_t i = 0; i < run->n_msgs; i++) {
        const struct simulate_recorded *m = &run->msgs[i];
        fprintf(f, "  %-10s %s -> %s %5zu bytes  ", m->name, m->sender == 'I' ? "I" : "R",
                m->sender == 'I' ? "R" : "I", m->len);
        cli_hex_print(f, m->bytes, m->len);
        fputc('\n', f);
    }
    fprintf(f, "  total      %zu bytes in %zu messages; message_1..3 of the handshake: %zu bytes\n",
            simulate_total_bytes(run), run->n_msgs, simulate_handshake_bytes(run));
    print_framed_text(f, run, t, rep->net);

    if (run->err) {
        fprintf(f, "\nOutcome: FAILED at the %s: %s\n",
                run->failed_side == 'I' ? "initiator" : "responder", run->why);
        if (run->have_peer_error)
            fprintf(f, "  error message ERR_CODE %lld%s%s\n", (long long)run->peer_error.code,
                    run->peer_error_text[0] ? ": " : "", run->peer_error_text);
        return;
    }
    if (run->have_oscore)
        fprintf(f, "\nOutcome: ok, suite %d, %d attempt%s; both sides derived %s OSCORE context\n",
                suite, run->attempts, run->attempts == 1 ? "" : "s",
                simulate_oscore_contexts_match(run) ? "the same" : "DIFFERENT");
    else
        fprintf(f, "\nOutcome: ok, suite %d, %d attempt%s; EDHOC only\n", suite, run->attempts,
                run->attempts == 1 ? "" : "s");
    fprintf(f,
            "Time: %.3f ms per handshake (median of %d; min %.3f ms), of which crypto %.3f ms "
            "(%.0f%%, %u calls)\n",
            t->handshake_ms, t->runs, t->min_ms, t->crypto_ms,
            t->handshake_ms > 0 ? 100.0 * t->crypto_ms / t->handshake_ms : 0.0, t->crypto_calls);
    if (t->partial)
        fprintf(f, "interrupted: partial results (%d handshakes timed)\n", t->runs);
    if (run->have_oscore)
        print_oscore_text(f, "OSCORE (initiator = client)", &run->oscore_i, o->export_secrets);
    else
        fprintf(f, "OSCORE: not available: %s\n", run->no_oscore);
    const struct simulate_key_update *ku = &run->ku;
    if (ku->done) {
        fprintf(f, "\nKeyUpdate (RFC 9528 Appendix H), context h'");
        cli_hex_print(f, ku->context, ku->context_len);
        fprintf(f, "': both sides derived %s PRK_out\n",
                ku->sides_agree ? "the same" : "DIFFERENT");
        if (o->export_secrets) {
            fprintf(f, "  PRK_out before      ");
            cli_hex_print(f, ku->prk_out_before, ku->prk_len);
            fprintf(f, "\n  PRK_out after       ");
            cli_hex_print(f, ku->prk_out_after, ku->prk_len);
            fprintf(f, "\n  PRK_exporter after  ");
            cli_hex_print(f, ku->prk_exporter_after, ku->prk_len);
            fputc('\n', f);
        }
        if (run->have_oscore)
            print_oscore_text(f, "OSCORE after KeyUpdate", &ku->oscore_i, o->export_secrets);
    }
    if (keys->have_exports) {
        fputc('\n', f);
        cli_exports_print(f, &keys->exports_i,
                          ku->done ? "PRK_exporter after the KeyUpdate" : "PRK_exporter");
        if (!keys->exports_match)
            fprintf(f, "  the responder derived DIFFERENT values\n");
    }
}
