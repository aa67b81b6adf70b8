/*
 * The initiator's reports: text (messages, per-layer and on-air figures,
 * outcome, responses) and JSON (docs/json/initiator.schema.json), from
 * the run the client engine filled (src/client/edhoc_client.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "initiator_output.h"
#include "output/json_out.h"

static void print_trace_text(FILE *f, const struct edhoc_client_run *run)
{
    fprintf(f, "\nTrace (RFC 9529 names, initiator side):\n");
    for (size_t i = 0; i < run->n_trace; i++) {
        fprintf(f, "  %s (%zu bytes) ", run->trace[i].name, run->trace[i].len);
        cli_hex_print(f, run->trace[i].v, run->trace[i].len);
        fputc('\n', f);
    }
}

static void totals(const struct edhoc_client_run *run, size_t *edhoc, size_t *coap, size_t *dgrams,
                   size_t *hs_coap)
{
    *edhoc = *coap = *dgrams = *hs_coap = 0;
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct edhoc_client_row *r = &run->rows[i];
        if (r->edhoc_bytes > 0 && !r->echo_challenged)
            *edhoc += (size_t)r->edhoc_bytes;
        *coap += r->coap_bytes;
        *dgrams += r->datagrams;
        if (strncmp(r->name, "OSCORE", 6) != 0)
            *hs_coap += r->coap_bytes;
    }
}

/* OSCORE request/response rows; the others belong to the handshake. */
static bool is_oscore_row(const struct edhoc_client_row *r)
{
    return strncmp(r->name, "OSCORE", 6) == 0;
}

/* Per-layer totals: handshake rows (message_1..4, errors, the combined
 * request), OSCORE rows, everything. */
static void layer_totals(const struct edhoc_client_run *run, struct edhoc_netacct_summary *sum)
{
    edhoc_netacct_summary_clear(sum);
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct edhoc_client_row *r = &run->rows[i];
        struct edhoc_netacct_total *k = is_oscore_row(r) ? &sum->oscore : &sum->handshake;
        edhoc_netacct_total_merge(k, &r->lay);
        edhoc_netacct_total_merge(&sum->all, &r->lay);
    }
}

static bool have_link(const struct initiator *c)
{
    return c->net.link.type != EDHOC_NETACCT_LINK_NONE;
}

/* The link has a time and energy model (not NONE or a bare MTU). */
static bool have_air(const struct initiator *c)
{
    enum edhoc_netacct_link_type t = c->net.link.type;
    return t == EDHOC_NETACCT_LINK_802154 || t == EDHOC_NETACCT_LINK_BLE ||
           t == EDHOC_NETACCT_LINK_LORAWAN;
}

/* A row's datagrams on the air: one direction each (the initiator is the
 * client, its datagrams uplinks), summed in case a row held both. */
static struct edhoc_netacct_air row_air(const struct edhoc_client_row *r)
{
    struct edhoc_netacct_air a = r->lay.up;
    edhoc_netacct_air_add(&a, &r->lay.down);
    return a;
}

/* The handshake rows on the link's air, one after another, then the host
 * time on top: the handshake time measured here (both sides' processing
 * and the loopback or network between them). */
static void handshake_air(const struct initiator *c, const struct edhoc_client_run *run,
                          const struct edhoc_netacct_radio *radio, struct cli_air_summary *s)
{
    memset(s, 0, sizeof *s);
    s->host_ms = run->t_handshake ? (double)(run->t_handshake - run->t0) / 1e6 : -1;
    struct edhoc_netacct_air airs[EDHOC_CLIENT_MAX_ROWS];
    struct edhoc_netacct_step steps[EDHOC_CLIENT_MAX_ROWS];
    size_t n = 0;
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct edhoc_client_row *r = &run->rows[i];
        if (is_oscore_row(r))
            continue;
        airs[n] = row_air(r);
        cli_air_summary_add(s, radio, &airs[n], r->lay.frames, r->dir == 'I');
        s->link_us += airs[n].link_us;
        steps[n] = (struct edhoc_netacct_step){&airs[n], r->dir == 'I', 0};
        n++;
    }
    uint64_t host_us = s->host_ms > 0 ? (uint64_t)(s->host_ms * 1000 + 0.5) : 0;
    s->e2e_us = edhoc_netacct_air_sequence(&c->net.link, steps, n) + host_us;
}

static void print_layer_row(FILE *f, const char *name, const char *dir, const char *edhoc,
                            const struct edhoc_netacct_total *t, bool link,
                            const struct edhoc_netacct_radio *radio)
{
    fprintf(f, "  %-32s %-4s %7s %7zu %6zu %6zu", name, dir, edhoc, t->coap, t->udp, t->ip);
    if (link)
        fprintf(f, " %6u %7zu", t->frames, t->link);
    if (radio) {
        struct edhoc_netacct_air a = t->up;
        edhoc_netacct_air_add(&a, &t->down);
        char t1[24], t2[24], t3[24];
        struct edhoc_netacct_energy es = edhoc_netacct_energy_of(radio, &a, true);
        struct edhoc_netacct_energy er = edhoc_netacct_energy_of(radio, &a, false);
        fprintf(f, " %11s %11s %11s %9.3f", cli_air_time(a.tx_us, t1, sizeof t1),
                cli_air_time(a.link_us, t2, sizeof t2), cli_air_time(a.wait_us, t3, sizeof t3),
                (es.tx_j + es.rx_j + er.tx_j + er.rx_j) * 1e3);
        if (a.fragments)
            fprintf(f, "  %u SCHC fragments", a.fragments);
    }
    fputc('\n', f);
}

static void print_layers_text(FILE *f, const struct initiator *c,
                              const struct edhoc_client_run *run)
{
    bool link = have_link(c), air = have_air(c);
    struct edhoc_netacct_radio radio = cli_net_radio(&c->net.link, &c->net.radio, c->net.radio_set);
    const struct edhoc_netacct_radio *rp = air ? &radio : NULL;
    bool v6 = false, v4 = false;
    for (size_t i = 0; i < run->n_rows; i++) {
        if (run->rows[i].datagrams) {
            v6 |= run->rows[i].ipv6;
            v4 |= !run->rows[i].ipv6;
        }
    }
    fprintf(f, "\nPer layer (datagrams as sent/received; IP = %s)\n",
            v6 && v4 ? "IPv6/IPv4"
            : v6     ? "IPv6"
                     : "IPv4");
    fprintf(f, "  %-32s %-4s %7s %7s %6s %6s%s", "message", "dir", "EDHOC", "CoAP", "UDP", "IP",
            link ? " frames    link" : "");
    if (air)
        fprintf(f, " %11s %11s %11s %9s", "on air", "link time", "duty wait", "mJ (S+R)");
    fputc('\n', f);
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct edhoc_client_row *r = &run->rows[i];
        char eb[24];
        if (r->edhoc_bytes >= 0)
            snprintf(eb, sizeof eb, "%ld", r->edhoc_bytes);
        else
            snprintf(eb, sizeof eb, "-");
        print_layer_row(f, r->name, r->dir == 'I' ? "I->R" : "R->I", eb, &r->lay, link, rp);
    }
    struct edhoc_netacct_summary sum;
    layer_totals(run, &sum);
    char eb[24];
    snprintf(eb, sizeof eb, "%zu", sum.handshake.edhoc);
    print_layer_row(f, "total handshake", "", eb, &sum.handshake, link, rp);
    print_layer_row(f, "total OSCORE", "", "-", &sum.oscore, link, rp);
    snprintf(eb, sizeof eb, "%zu", sum.all.edhoc);
    print_layer_row(f, "total exchange", "", eb, &sum.all, link, rp);
    char desc[512];
    edhoc_netacct_link_describe(&c->net.link, desc, sizeof desc);
    fprintf(f, "  Link: %s\n", desc);
    if (air) {
        struct cli_air_summary s;
        handshake_air(c, run, &radio, &s);
        cli_air_summary_print(f, &s, &radio, "Handshake on the link", "its messages",
                              "the handshake time measured here");
    }
    if (c->cl.log.link_errors)
        fprintf(f, "  (%u datagram%s too large for the link: counted without frames)\n",
                c->cl.log.link_errors, c->cl.log.link_errors == 1 ? "" : "s");
    if (c->net.pcap)
        fprintf(f, "  Capture: %s%s\n", c->net.pcap,
                c->cl.log.capture_errors ? " (some datagrams could not be written)" : "");
}

void cli_initiator_print_text(const struct initiator *c, const struct edhoc_client_run *run)
{
    FILE *f = stdout;
    fprintf(f, "EDHOC with coap://%s%s%s:%u%s: method %d (%s), framing %s%s\n",
            strchr(c->uri.host, ':') ? "[" : "", c->uri.host, strchr(c->uri.host, ':') ? "]" : "",
            c->uri.port, c->uri.path[0] ? c->uri.path : EDHOC_COAP_WELL_KNOWN, c->o.method,
            cli_method_name(c->o.method),
            c->cl.framing == EDHOC_FRAMING_A2 ? "RFC 9528 A.2"
                                              : "bare (no prefix, no Content-Format)",
            c->cl.combined ? ", EDHOC + OSCORE combined request (RFC 9668)" : "");
    if (c->cl.framing_auto && run->auto_a2_failure[0])
        fprintf(f, "  --framing auto: A.2 got no message_2 (%s); bare tried next\n",
                run->auto_a2_failure);
    else if (c->cl.framing_auto)
        fprintf(f, "  --framing auto: the device speaks A.2\n");
    fprintf(f, "  initiator: %s, ID_CRED_I by %s\n", c->side.cred_origin,
            cli_id_cred_type_name(cli_id_cred_type_of(c->side.id_cred, c->side.id_cred_len)));
    if (c->o.trace)
        print_trace_text(f, run);
    fprintf(f, "\nMessages                          dir     EDHOC  CoAP/UDP  datagrams\n");
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct edhoc_client_row *r = &run->rows[i];
        char eb[24];
        if (r->edhoc_bytes >= 0)
            snprintf(eb, sizeof eb, "%ld", r->edhoc_bytes);
        else
            snprintf(eb, sizeof eb, "-");
        fprintf(f, "  %-32s %s %7s %9zu %10u\n", r->name, r->dir == 'I' ? "I->R" : "R->I", eb,
                r->coap_bytes, r->datagrams);
    }
    size_t edhoc, coap, dgrams, hs;
    totals(run, &edhoc, &coap, &dgrams, &hs);
    fprintf(f, "  %-32s      %7zu %9zu %10zu\n", "total", edhoc, coap, dgrams);
    fprintf(f, "  EDHOC messages %zu bytes in %zu CoAP/UDP bytes (handshake exchanges)\n", edhoc,
            hs);
    fprintf(f,
            "  (CoAP/UDP: every datagram of the exchange in that direction, as sent or received:\n"
            "   retransmissions, block-wise follow-ups and empty ACKs included)\n");
    print_layers_text(f, c, run);
    double hs_ms = run->t_handshake ? (double)(run->t_handshake - run->t0) / 1e6 : 0;
    double all_ms = (double)(run->t_end - run->t_start) / 1e6;
    if (run->n_suites_r) {
        fprintf(f, "\nThe responder's SUITES_R (error code 2):");
        for (size_t i = 0; i < run->n_suites_r; i++)
            fprintf(f, " %d", run->suites_r[i]);
        fputc('\n', f);
    }
    if (run->exit_code) {
        fprintf(f, "\nOutcome: FAILED: %s\n", run->failure);
        fprintf(f, "Round trips: %zu; wall time %.3f ms\n", run->exchanges, all_ms);
        return;
    }
    bool unconfirmed = run->m3_acceptance && !strcmp(run->m3_acceptance, "unconfirmed");
    fprintf(f, "\nOutcome: %s, suite %d, %d attempt%s, ID_CRED_R by %s\n",
            unconfirmed ? "message_3 sent, its acceptance unconfirmed" : "ok", run->suite,
            run->attempts, run->attempts == 1 ? "" : "s",
            cli_id_cred_type_name(run->id_cred_r_type));
    if (unconfirmed)
        fprintf(f, "  (the bare framing answers nothing to message_3, and neither message_4 nor "
                   "an OSCORE response came: nothing shows the responder accepted it, RFC 9528 "
                   "Section 5.4.2; --request or --message-4 would)\n");
    if (run->tolerated) {
        char names[120];
        edhoc_deviations_format(run->tolerated, names, sizeof names);
        fprintf(f, "Tolerated (--tolerate): %s: the responder deviates from RFC 9528 there\n",
                names);
    }
    if (run->followed) {
        char names[120];
        edhoc_deviations_format(run->followed, names, sizeof names);
        fprintf(f,
                "Followed in message_3 (--tolerate): %s: context_3 built as the responder "
                "built context_2, so that it verifies MAC_3 its own way\n",
                names);
    }
    fprintf(f, "Round trips: %zu; handshake %.3f ms, wall time %.3f ms\n", run->exchanges, hs_ms,
            all_ms);
    if (c->have_exports)
        cli_exports_print(f, &c->exports, "PRK_exporter");
    if (!run->have_osc) {
        if (run->no_oscore[0])
            fprintf(f, "OSCORE: not available: %s\n", run->no_oscore);
        fprintf(f, "\nResponses: none asked (--request none)\n");
        return;
    }
    const struct edhoc_oscore_params *p = &run->osc;
    fprintf(f, "OSCORE: sender ID ");
    cli_hex_print(f, p->sender_id, p->sender_id_len);
    fprintf(f, " (C_R), recipient ID ");
    cli_hex_print(f, p->recipient_id, p->recipient_id_len);
    fprintf(f, " (C_I), AEAD %s, HKDF %s\n", edhoc_crypto_alg_name(p->aead_alg),
            edhoc_crypto_alg_name(p->hash_alg));
    if (c->o.export_secrets) {
        fprintf(f, "  master secret ");
        cli_hex_print(f, p->master_secret, p->master_secret_len);
        fprintf(f, "\n  master salt   ");
        cli_hex_print(f, p->master_salt, p->master_salt_len);
        fprintf(f,
                "\n  next sender sequence number: initiator %llu; responder: its own state, "
                "not known to this run\n",
                (unsigned long long)run->next_ssn);
        fprintf(f, "  as a libcoap OSCORE conf (the initiator's side):\n");
        cli_write_oscore_conf(f, p, "    ");
    }
    if (run->conf_written)
        cli_initiator_print_conf(f, c, run);
    fprintf(f, "\nResponses:%s\n", c->n_requests ? "" : " none asked (--request none)");
    for (size_t i = 0; i < run->n_answers; i++) {
        const struct edhoc_client_answer *a = &run->answers[i];
        char cn[48];
        fprintf(f, "  %s -> %s (request %zu bytes, response %zu bytes%s)", a->request,
                cli_coap_code_name(a->code, cn, sizeof cn), a->req_bytes, a->resp_bytes,
                a->attempts > 1 ? ", after Echo" : "");
        if (a->payload_len) {
            fprintf(f, "\n    ");
            cli_print_payload(f, a->payload, a->payload_len);
        }
        fputc('\n', f);
    }
}

/* ---- JSON report (docs/json/initiator.schema.json) ---- */

static json_t *int_array(const int *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* The link the per-layer figures are counted on: null when none. */
static json_t *link_json(const struct initiator *c)
{
    if (!have_link(c))
        return json_null();
    return cli_net_link_json(&c->net.link);
}

/* The OSCORE context in the terms another tool takes it; master secret and
 * salt only with --export-secrets (else null). The responder's next
 * sequence number is its own state, not known here: null. */
static json_t *oscore_json(const struct initiator *c, const struct edhoc_client_run *run)
{
    return cli_oscore_json(&run->osc, c->o.export_secrets, (long long)run->next_ssn, -1);
}

static json_t *message_json(const struct initiator *c, const struct edhoc_client_row *r)
{
    json_t *m = json_object();
    bool link = have_link(c);
    cli_json_set(m, "name", json_string(r->name));
    cli_json_set(m, "from", json_string(r->dir == 'I' ? "initiator" : "responder"));
    cli_json_set(m, "edhoc_bytes", cli_json_int_or_null(r->edhoc_bytes >= 0, r->edhoc_bytes));
    cli_json_set(m, "hex",
                 r->edhoc ? cli_json_hex_value(r->edhoc, (size_t)r->edhoc_bytes) : json_null());
    cli_json_set(m, "echo_challenged", json_boolean(r->echo_challenged));
    cli_json_set(m, "coap_bytes", json_integer((json_int_t)r->coap_bytes));
    cli_json_set(m, "datagrams", json_integer(r->datagrams));
    cli_json_set(m, "ip_version", cli_json_int_or_null(r->datagrams > 0, r->ipv6 ? 6 : 4));
    cli_json_set(m, "udp_bytes", json_integer((json_int_t)r->lay.udp));
    cli_json_set(m, "ip_bytes", json_integer((json_int_t)r->lay.ip));
    cli_json_set(m, "frames", cli_json_int_or_null(link, r->lay.frames));
    cli_json_set(m, "link_bytes", cli_json_int_or_null(link, (long long)r->lay.link));
    json_t *air = json_null();
    if (have_air(c)) {
        struct edhoc_netacct_radio radio =
            cli_net_radio(&c->net.link, &c->net.radio, c->net.radio_set);
        struct edhoc_netacct_air a = row_air(r);
        air = cli_net_air_json(&radio, &a);
    }
    cli_json_set(m, "air", air);
    return m;
}

void cli_initiator_print_json(const struct initiator *c, const struct edhoc_client_run *run)
{
    json_t *root = json_object();
    cli_json_set(root, "outcome", json_string(run->exit_code ? "failed" : "ok"));
    json_t *err = json_null();
    if (run->exit_code) {
        err = json_object();
        cli_json_set(err, "exit_code", json_integer(run->exit_code));
        cli_json_set(
            err, "text",
            json_string(run->failure[0] ? run->failure : "some repeated handshakes failed"));
        cli_json_set(err, "err_code",
                     cli_json_int_or_null(run->have_peer_error, run->peer_err_code));
        cli_json_set(err, "diagnostic",
                     run->have_peer_error ? json_string(run->peer_diag) : json_null());
    }
    cli_json_set(root, "error", err);
    cli_json_set(root, "partial", json_boolean(run->partial));
    cli_json_set(root, "peer",
                 cli_json_string_or_null(c->cl.t ? edhoc_transport_client_peer(c->cl.t) : NULL));
    cli_json_set(root, "framing", json_string(c->cl.framing == EDHOC_FRAMING_A2 ? "A.2" : "bare"));
    cli_json_set(root, "framing_auto", json_boolean(c->cl.framing_auto));
    cli_json_set(root, "framing_a2_failure",
                 run->auto_a2_failure[0] ? json_string(run->auto_a2_failure) : json_null());
    cli_json_set(root, "combined", json_boolean(c->cl.combined));
    cli_json_set(root, "method", json_integer(c->o.method));
    cli_json_set(root, "suite", cli_json_int_or_null(run->suite >= 0, run->suite));
    cli_json_set(root, "attempts", json_integer(run->attempts));
    /* SUITES_R of the last error code 2 the responder sent. */
    cli_json_set(root, "suites_r",
                 run->n_suites_r ? int_array(run->suites_r, run->n_suites_r) : json_null());
    /* Deviations accepted on this handshake, and the diagnosis of a
     * failed MAC_2 / signature (RFC 9528 Section 5.3.2). */
    json_t *tol = json_array();
    for (unsigned bit = 1; bit <= EDHOC_DEV_ALL; bit <<= 1) {
        if (run->tolerated & bit)
            json_array_append_new(tol, json_string(edhoc_deviation_name(bit)));
    }
    cli_json_set(root, "tolerated", tol);
    json_t *fol = json_array();
    for (unsigned bit = 1; bit <= EDHOC_DEV_ALL; bit <<= 1) {
        if (run->followed & bit)
            json_array_append_new(fol, json_string(edhoc_deviation_name(bit)));
    }
    cli_json_set(root, "followed", fol);
    cli_json_set(root, "message_3_acceptance",
                 run->m3_acceptance ? json_string(run->m3_acceptance) : json_null());
    cli_json_set(root, "diagnosis", run->diagnosis[0] ? json_string(run->diagnosis) : json_null());
    cli_json_set(root, "id_cred_i",
                 json_string(cli_id_cred_type_name(
                     cli_id_cred_type_of(c->side.id_cred, c->side.id_cred_len))));
    cli_json_set(root, "id_cred_r",
                 run->have_id_cred_r ? json_string(cli_id_cred_type_name(run->id_cred_r_type))
                                     : json_null());
    json_t *msgs = json_array();
    for (size_t i = 0; i < run->n_rows; i++)
        json_array_append_new(msgs, message_json(c, &run->rows[i]));
    cli_json_set(root, "messages", msgs);
    size_t edhoc, coap, dgrams, hs;
    totals(run, &edhoc, &coap, &dgrams, &hs);
    cli_json_set(root, "total_edhoc_bytes", json_integer((json_int_t)edhoc));
    cli_json_set(root, "total_coap_bytes", json_integer((json_int_t)coap));
    cli_json_set(root, "handshake_coap_bytes", json_integer((json_int_t)hs));
    cli_json_set(root, "datagrams", json_integer((json_int_t)dgrams));
    cli_json_set(root, "round_trips", json_integer((json_int_t)run->exchanges));
    cli_json_set(root, "link", link_json(c));
    struct edhoc_netacct_summary sum;
    layer_totals(run, &sum);
    json_t *layers = json_object();
    cli_json_set(layers, "handshake", cli_net_total_json(&sum.handshake, have_link(c)));
    cli_json_set(layers, "oscore", cli_net_total_json(&sum.oscore, have_link(c)));
    cli_json_set(layers, "all", cli_net_total_json(&sum.all, have_link(c)));
    cli_json_set(root, "layers", layers);
    json_t *radio_j = json_null(), *air_j = json_null();
    if (have_air(c)) {
        struct edhoc_netacct_radio radio =
            cli_net_radio(&c->net.link, &c->net.radio, c->net.radio_set);
        struct cli_air_summary s;
        handshake_air(c, run, &radio, &s);
        radio_j = cli_net_radio_json(&radio);
        air_j = cli_air_summary_json(&s);
    }
    cli_json_set(root, "radio", radio_j);
    cli_json_set(root, "air", air_j);
    json_t *pcap = json_null();
    if (c->net.pcap) {
        pcap = json_object();
        cli_json_set(pcap, "file", json_string(c->net.pcap));
        cli_json_set(pcap, "write_errors", json_integer(c->cl.log.capture_errors));
    }
    cli_json_set(root, "pcap", pcap);
    cli_json_set(root, "handshake_ms",
                 run->t_handshake ? json_real((double)(run->t_handshake - run->t0) / 1e6)
                                  : json_null());
    cli_json_set(root, "wall_ms", json_real((double)(run->t_end - run->t_start) / 1e6));
    cli_json_set(root, "oscore", run->have_osc ? oscore_json(c, run) : json_null());
    cli_json_set(root, "oscore_unavailable",
                 run->no_oscore[0] ? json_string(run->no_oscore) : json_null());
    cli_json_set(root, "exports",
                 c->have_exports ? cli_exports_json(&c->exports, false) : json_null());
    json_t *conf = json_null();
    if (run->conf_written) {
        bool libcoap;
        cli_oscore_conf_hkdf(run->osc.hash_alg, &libcoap);
        conf = json_object();
        cli_json_set(conf, "file", json_string(c->export_conf));
        cli_json_set(conf, "seq_file", json_string(c->seq_file));
        cli_json_set(conf, "state_dir", c->state_dir[0] ? json_string(c->state_dir) : json_null());
        cli_json_set(conf, "next_seq", json_integer((json_int_t)run->next_ssn));
        cli_json_set(conf, "libcoap", json_boolean(libcoap));
    }
    cli_json_set(root, "oscore_conf", conf);
    json_t *resps = json_array();
    for (size_t i = 0; i < run->n_answers; i++) {
        const struct edhoc_client_answer *a = &run->answers[i];
        char cn[48];
        json_t *o = json_object();
        cli_json_set(o, "request", json_string(a->request));
        /* "2.05 Content": the code, then the registry's name apart (as
         * coap --json has them). */
        cli_coap_code_name(a->code, cn, sizeof cn);
        char *space = strchr(cn, ' ');
        if (space)
            *space = '\0';
        cli_json_set(o, "code", json_string(cn));
        cli_json_set(o, "code_name", cli_json_string_or_null(space ? space + 1 : NULL));
        cli_json_set(o, "content_format", cli_json_int_or_null(a->cf >= 0, a->cf));
        cli_json_set(o, "request_bytes", json_integer((json_int_t)a->req_bytes));
        cli_json_set(o, "response_bytes", json_integer((json_int_t)a->resp_bytes));
        cli_json_set(o, "echo", json_boolean(a->attempts > 1));
        cli_json_set_bytes(o, "payload", a->payload ? a->payload : (const uint8_t *)"",
                           a->payload ? a->payload_len : 0);
        json_array_append_new(resps, o);
    }
    cli_json_set(root, "responses", resps);
    json_t *rep = json_null();
    if (run->repeat > 1) {
        rep = json_object();
        cli_json_set(rep, "handshakes", json_integer(run->repeat));
        cli_json_set(rep, "ok", json_integer(run->repeat_ok));
        cli_json_set(rep, "failed", json_integer(run->repeat_failed));
        cli_json_set(rep, "seconds", json_real(run->repeat_s));
        cli_json_set(rep, "handshakes_per_second",
                     cli_json_real_or_null(
                         run->repeat_s > 0 ? (double)(run->repeat_ok - 1) / run->repeat_s : NAN));
    }
    cli_json_set(root, "repeat", rep);
    json_t *trace = json_null();
    if (c->o.trace) {
        trace = json_array();
        for (size_t i = 0; i < run->n_trace; i++) {
            json_t *t = json_object();
            cli_json_set(t, "name", json_string(run->trace[i].name));
            cli_json_set(t, "hex", cli_json_hex_value(run->trace[i].v, run->trace[i].len));
            json_array_append_new(trace, t);
        }
    }
    cli_json_set(root, "trace", trace);
    cli_json_print(root, stdout);
}
