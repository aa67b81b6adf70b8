/*
 * edhoc-cli bytes CAPTURE: the report of a capture, as text and as JSON
 * (docs/json/bytes.schema.json), from the engine's results
 * (src/tools/bytes). The link model's JSON is shared with --compare.
 */
#include "bytes_output.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_keylog_output.h"
#include "net_report.h"
#include "util.h"

static struct edhoc_netacct_radio capture_radio;
static bool capture_radio_set;

const char *const bytes_addr_names[] = {"ll", "ctx", "ctx16", "ctx64", "inline", "auto", NULL};
const enum edhoc_netacct_addr_mode bytes_addr_modes[] = {
    EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC, EDHOC_NETACCT_ADDR_CONTEXT_MAC,
    EDHOC_NETACCT_ADDR_CONTEXT_16,     EDHOC_NETACCT_ADDR_CONTEXT_64,
    EDHOC_NETACCT_ADDR_INLINE,         EDHOC_NETACCT_ADDR_AUTO,
};

static const char *addr_name(enum edhoc_netacct_addr_mode m)
{
    for (size_t i = 0; i < sizeof bytes_addr_modes / sizeof bytes_addr_modes[0]; i++)
        if (bytes_addr_modes[i] == m)
            return bytes_addr_names[i];
    return NULL;
}

json_t *bytes_link_json(const struct edhoc_netacct_link *l)
{
    bool mtu = l->type == EDHOC_NETACCT_LINK_MTU, f154 = l->type == EDHOC_NETACCT_LINK_802154;
    const char *model = f154                                    ? "802.15.4"
                        : mtu                                   ? "mtu"
                        : l->type == EDHOC_NETACCT_LINK_BLE     ? "ble"
                        : l->type == EDHOC_NETACCT_LINK_LORAWAN ? "lorawan"
                                                                : "none";
    json_t *o = json_object();
    cli_json_set(o, "model", json_string(model));
    cli_json_set(o, "mtu", cli_json_int_or_null(mtu, l->mtu));
    cli_json_set(o, "frame_overhead", cli_json_int_or_null(mtu, l->frame_overhead));
    cli_json_set(o, "mac_header", cli_json_int_or_null(f154, l->mac_header));
    cli_json_set(o, "fcs", cli_json_int_or_null(f154, l->fcs));
    cli_json_set(o, "security", cli_json_int_or_null(f154, l->security));
    cli_json_set(o, "phy_header", cli_json_int_or_null(f154, l->phy_header));
    cli_json_set(o, "hop_limit", cli_json_int_or_null(f154, l->hop_limit));
    cli_json_set(o, "addr", cli_json_string_or_null(f154 ? addr_name(l->src_addr) : NULL));
    cli_json_set(o, "air", cli_net_air_params_json(l));
    char desc[1024];
    edhoc_netacct_link_describe(l, desc, sizeof desc);
    cli_json_set(o, "description", json_string(desc));
    return o;
}

static void format_endpoint(int version, const uint8_t *addr, uint16_t port, char *buf, size_t cap)
{
    char a[INET6_ADDRSTRLEN];
    if (!inet_ntop(version == 6 ? AF_INET6 : AF_INET, addr, a, sizeof a))
        snprintf(a, sizeof a, "?");
    if (version == 6)
        snprintf(buf, cap, "[%s]:%u", a, port);
    else
        snprintf(buf, cap, "%s:%u", a, port);
}

static const char *outcome(const struct edhoc_capture_exchange *ex)
{
    if (edhoc_capture_exchange_failed(ex))
        return "failed";
    return ex->completed ? "completed" : "incomplete";
}

/* Milliseconds from the first to the last handshake message; false when
 * fewer than two were seen (no span to measure). */
static bool handshake_span(const struct edhoc_capture_exchange *ex, double *ms)
{
    const struct timespec *first = NULL, *last = NULL;
    for (size_t i = 0; i < ex->n_msgs; i++) {
        enum edhoc_capture_msg_type t = ex->msgs[i].type;
        if (t == EDHOC_CAPTURE_MSG_OSCORE_REQUEST || t == EDHOC_CAPTURE_MSG_OSCORE_RESPONSE ||
            t == EDHOC_CAPTURE_MSG_EMPTY)
            continue;
        if (!first)
            first = &ex->msgs[i].ts;
        last = &ex->msgs[i].ts;
    }
    *ms = 0;
    if (!first || first == last)
        return false;
    *ms = (double)(last->tv_sec - first->tv_sec) * 1e3 +
          (double)(last->tv_nsec - first->tv_nsec) / 1e6;
    return true;
}

static void suites_text(const struct edhoc_capture_exchange *ex, char *buf, size_t cap)
{
    size_t w = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ex->n_suites && w < cap; i++)
        w += (size_t)snprintf(buf + w, cap - w, "%s%d", i ? ", " : "", ex->suites[i]);
}

/* The handshake of an exchange on the link's air, from its totals: the
 * initiator (client) sends uplink. Link time is the messages' link times
 * summed; nothing is measured on a host here. */
static bool handshake_air(const struct edhoc_netacct_link *link,
                          const struct edhoc_netacct_total *t, struct cli_air_summary *s)
{
    memset(s, 0, sizeof *s);
    s->host_ms = -1;
    if (link->type == EDHOC_NETACCT_LINK_NONE || link->type == EDHOC_NETACCT_LINK_MTU)
        return false;
    struct edhoc_netacct_radio r = cli_net_radio(link, &capture_radio, capture_radio_set);
    cli_air_summary_add(s, &r, &t->up, 0, true);
    cli_air_summary_add(s, &r, &t->down, 0, false);
    s->frames = t->frames;
    s->link_us = t->up.link_us + t->down.link_us;
    s->e2e_us = s->link_us;
    return true;
}

static void print_air_line(const struct edhoc_netacct_link *link,
                           const struct edhoc_netacct_total *t)
{
    struct cli_air_summary s;
    if (!handshake_air(link, t, &s))
        return;
    char a[24], w[24], l[24];
    printf("  handshake on the link: %u frames%s, %s on air, link time %s, duty-cycle wait %s, "
           "energy initiator %.3f mJ, responder %.3f mJ\n",
           s.frames, s.fragments ? " (SCHC fragments among them)" : "",
           cli_air_time(s.air_us, a, sizeof a), cli_air_time(s.link_us, l, sizeof l),
           cli_air_time(s.wait_us, w, sizeof w), s.initiator_mj, s.responder_mj);
}

/* ---- Text ---- */

static void print_row(const char *name, unsigned packet, const char *dir, unsigned dgrams,
                      const char *edhoc, size_t coap, size_t udp, size_t ip, const char *frame,
                      bool link, unsigned link_frames, size_t link_bytes)
{
    char pkt[16];
    if (packet)
        snprintf(pkt, sizeof pkt, "%u", packet);
    else
        pkt[0] = '\0';
    printf("  %-20s %5s %-4s %6u %6s %6zu %6zu %6zu %6s", name, pkt, dir, dgrams, edhoc, coap, udp,
           ip, frame);
    if (link)
        printf(" %7u %7zu", link_frames, link_bytes);
    printf("\n");
}

/* An OSCORE request with its response, as one total. */
static bool oscore_pair(const struct edhoc_capture_exchange *ex, size_t resp,
                        struct edhoc_netacct_total *t)
{
    const struct edhoc_capture_msg *r = &ex->msgs[resp];
    if (r->type != EDHOC_CAPTURE_MSG_OSCORE_RESPONSE || r->answers < 0)
        return false;
    const struct edhoc_capture_msg *q = &ex->msgs[r->answers];
    if (q->type != EDHOC_CAPTURE_MSG_OSCORE_REQUEST)
        return false; /* the response to a combined request belongs to the handshake row */
    edhoc_netacct_total_clear(t);
    t->messages = 2;
    t->datagrams = q->datagrams + r->datagrams;
    t->coap = q->coap + r->coap;
    t->udp = q->udp + r->udp;
    t->ip = q->ip + r->ip;
    t->frames = q->link_frames + r->link_frames;
    t->link = q->link_bytes + r->link_bytes;
    return true;
}

static void print_total(const char *name, const struct edhoc_netacct_total *t, bool link,
                        bool show_edhoc)
{
    char e[24];
    snprintf(e, sizeof e, "%zu", t->edhoc);
    print_row(name, 0, "", t->datagrams, show_edhoc ? e : "-", t->coap, t->udp, t->ip, "", link,
              t->frames, t->link);
}

void bytes_print_text(const struct bytes_report *rep)
{
    const char *path = rep->path,
               *read_error = rep->run->read_error[0] ? rep->run->read_error : NULL;
    const struct edhoc_capture_analysis *a = rep->run->analysis;
    int dlt = rep->run->dlt;
    capture_radio = rep->radio;
    capture_radio_set = rep->radio_set;
    bool link = a->link.type != EDHOC_NETACCT_LINK_NONE;
    char desc[512];
    edhoc_netacct_link_describe(&a->link, desc, sizeof desc);
    printf("Capture %s (%s, link type %d): %u packets, %u UDP datagrams, %u CoAP messages\n", path,
           edhoc_capture_dlt_name(dlt) ? edhoc_capture_dlt_name(dlt) : "?", dlt, a->packets, a->udp,
           a->coap);
    if (link)
        printf("Link model: %s\n", desc);
    unsigned done = 0, failed = 0;
    for (size_t i = 0; i < a->n_ex; i++) {
        const struct edhoc_capture_exchange *ex = &a->ex[i];
        char cl[64], sv[64], suites[64], ci[40], cr[40];
        format_endpoint(ex->ip_version, ex->client, ex->client_port, cl, sizeof cl);
        format_endpoint(ex->ip_version, ex->server, ex->server_port, sv, sizeof sv);
        suites_text(ex, suites, sizeof suites);
        edhoc_capture_cid_format(ex->c_i, ex->c_i_len, ci, sizeof ci);
        if (ex->c_r_known)
            edhoc_capture_cid_format(ex->c_r, ex->c_r_len, cr, sizeof cr);
        else
            snprintf(cr, sizeof cr, "unknown (encrypted in message_2)");
        const char *oc = outcome(ex);
        if (strcmp(oc, "completed") == 0)
            done++;
        else if (strcmp(oc, "failed") == 0)
            failed++;

        printf("\nExchange %zu: initiator %s -> responder %s (IPv%d), framing %s\n", i + 1, cl, sv,
               ex->ip_version, ex->framing);
        printf("  method %d, suite %d (SUITES_I %s), C_I %s, C_R %s\n", ex->method,
               ex->n_suites ? ex->suites[ex->n_suites - 1] : -1, suites, ci, cr);
        printf("  ID_CRED_R: %s\n  ID_CRED_I: %s\n", ex->id_cred_r[0] ? ex->id_cred_r : "unknown",
               ex->id_cred_i[0] ? ex->id_cred_i : "unknown");
        if (rep->dec)
            bytes_keylog_print_exchange(&rep->dec->ex[i]);
        if (ex->error_code != -1)
            printf("  outcome: %s (EDHOC error, ERR_CODE %d)", oc, ex->error_code);
        else
            printf("  outcome: %s", oc);
        double span;
        if (handshake_span(ex, &span))
            printf(", handshake messages spanning %.3f ms\n", span);
        else
            printf(", fewer than two handshake messages\n");
        printf("  %-20s %5s %-4s %6s %6s %6s %6s %6s %6s", "message", "pkt", "dir", "dgrams",
               "EDHOC", "CoAP", "UDP", "IP", "frame");
        if (link)
            printf(" %7s %7s", "frames", "bytes");
        printf("\n");
        for (size_t k = 0; k < ex->n_msgs; k++) {
            const struct edhoc_capture_msg *m = &ex->msgs[k];
            char e[24], fr[24];
            bool is_edhoc =
                m->type <= EDHOC_CAPTURE_MSG_ERROR || m->type == EDHOC_CAPTURE_MSG_3_OSCORE;
            snprintf(e, sizeof e, is_edhoc ? "%zu" : "-", m->edhoc);
            snprintf(fr, sizeof fr, "%zu", m->frame);
            print_row(edhoc_capture_msg_type_name(m->type), m->packet,
                      m->from_initiator ? "I>R" : "R>I", m->datagrams, e, m->coap, m->udp, m->ip,
                      fr, link, m->link_frames, m->link_bytes);
            if (rep->dec)
                bytes_keylog_print_msg(m, &rep->dec->ex[i].msgs[k]);
        }
        if (ex->msgs_dropped)
            printf("  (%u more messages not listed; counted in the totals)\n", ex->msgs_dropped);
        print_total("handshake total", &ex->totals.handshake, link, true);
        unsigned pair = 0;
        for (size_t k = 0; k < ex->n_msgs; k++) {
            struct edhoc_netacct_total t;
            char name[40];
            if (!oscore_pair(ex, k, &t))
                continue;
            snprintf(name, sizeof name, "OSCORE exchange %u", ++pair);
            print_total(name, &t, link, false);
        }
        if (ex->totals.oscore.datagrams)
            print_total("OSCORE total", &ex->totals.oscore, link, false);
        if (ex->totals.other.datagrams)
            print_total("other (ACK/RST)", &ex->totals.other, link, false);
        print_total("exchange total", &ex->totals.all, link, true);
        print_air_line(&a->link, &ex->totals.handshake);
    }
    size_t total = a->n_ex + a->ex_evicted;
    done += a->ex_evicted_completed;
    failed += a->ex_evicted_failed;
    printf("\nSummary: %zu EDHOC exchange(s): %u completed, %u failed, %zu incomplete\n", total,
           done, failed, total - done - failed);
    if (a->ex_evicted)
        printf("  (the first %u are not listed above; they are in the totals)\n", a->ex_evicted);
    if (a->n_ex) {
        printf("  %-20s %5s %-4s %6s %6s %6s %6s %6s %6s", "", "", "", "dgrams", "EDHOC", "CoAP",
               "UDP", "IP", "");
        if (link)
            printf(" %7s %7s", "frames", "bytes");
        printf("\n");
        print_total("all handshakes", &a->totals.handshake, link, true);
        print_total("all OSCORE", &a->totals.oscore, link, false);
        print_total("everything", &a->totals.all, link, true);
    }
    printf("  other traffic: %u CoAP message(s) outside EDHOC exchanges, %u packet(s) ignored "
           "(not CoAP/UDP/IP), %u skipped\n",
           a->unmatched, a->ignored, a->skipped);
    if (a->n_issues) {
        printf("\nIssues:\n");
        for (size_t i = 0; i < a->n_issues; i++)
            printf("  packet %u: %s\n", a->issues[i].packet, a->issues[i].text);
        if (a->issues_dropped)
            printf("  (%u more)\n", a->issues_dropped);
    }
    if (read_error)
        printf("\nThe capture file is damaged after packet %u: %s\n", a->packets, read_error);
}

/* ---- JSON (docs/json/bytes.schema.json) ---- */

/* A connection identifier: its bytes, and the integer it stands for when
 * it has the one-byte integer form (RFC 9528 Section 3.3.2). */
static json_t *json_cid(const uint8_t *v, size_t len)
{
    json_t *o = json_object();
    cli_json_set(o, "hex", cli_json_hex_value(v, len));
    bool is_int = len == 1 && (v[0] <= 0x17 || (v[0] >= 0x20 && v[0] <= 0x37));
    cli_json_set(o, "int", cli_json_int_or_null(is_int, v[0] <= 0x17 ? v[0] : -1 - (v[0] - 0x20)));
    return o;
}

/* The capture library's inference of an ID_CRED type (a sentence such as
 * "kid (inferred: 1 byte, assuming no EAD)", capture.h) as values: the
 * type, the size it was inferred from and the assumptions made, so that
 * no reader has to take the sentence apart. NULL: nothing to infer from
 * (the message was not seen). */
static json_t *json_id_cred(const char *text)
{
    if (!text[0])
        return json_null();
    static const struct {
        const char *prefix, *type;
    } types[] = {
        {"kid (", "kid"},
        {"x5t (", "x5t"},
        {"x5chain or kccs (", "x5chain-or-kccs"},
    };
    const char *type = "unknown";
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strncmp(text, types[i].prefix, strlen(types[i].prefix)))
            type = types[i].type;
    /* The size: after "inferred: ", or first in "unknown (N bytes". */
    const char *n = strstr(text, "inferred: ");
    n = n ? n + 10 : strchr(text, '(') ? strchr(text, '(') + 1 : text;
    char *end;
    long bytes = strtol(n, &end, 10);
    bool have_bytes = end != n && bytes > 0;
    json_t *o = json_object();
    cli_json_set(o, "type", json_string(type));
    cli_json_set(o, "bytes", cli_json_int_or_null(have_bytes, bytes));
    json_t *assumed = json_array();
    if (strstr(text, "1-byte C_R"))
        json_array_append_new(assumed, json_string("c_r_1_byte"));
    if (strstr(text, "no EAD"))
        json_array_append_new(assumed, json_string("no_ead"));
    cli_json_set(o, "assumptions", assumed);
    return o;
}

/* The framing as the other commands name it (interop, initiator). */
static json_t *json_framing(const char *f)
{
    if (!f || !strcmp(f, "?"))
        return json_null();
    if (!strcmp(f, "RFC 9528 A.2"))
        return json_string("A.2");
    if (!strcmp(f, "RFC 9668 combined"))
        return json_string("combined");
    return json_string(f);
}

static bool is_edhoc_msg(enum edhoc_capture_msg_type t)
{
    return t <= EDHOC_CAPTURE_MSG_ERROR || t == EDHOC_CAPTURE_MSG_3_OSCORE;
}

static json_t *json_exchange(const struct edhoc_capture_exchange *ex, bool link,
                             const struct edhoc_netacct_link *link_model,
                             const struct bytes_dec_exchange *dec)
{
    json_t *o = json_object();
    char cl[64], sv[64];
    format_endpoint(ex->ip_version, ex->client, ex->client_port, cl, sizeof cl);
    format_endpoint(ex->ip_version, ex->server, ex->server_port, sv, sizeof sv);
    cli_json_set(o, "initiator", json_string(cl));
    cli_json_set(o, "responder", json_string(sv));
    cli_json_set(o, "ip_version", json_integer(ex->ip_version));
    cli_json_set(o, "framing", json_framing(ex->framing));
    cli_json_set(o, "outcome", json_string(outcome(ex)));
    cli_json_set(o, "method", cli_json_int_or_null(ex->method >= 0, ex->method));
    cli_json_set(
        o, "suite",
        cli_json_int_or_null(ex->n_suites > 0, ex->n_suites ? ex->suites[ex->n_suites - 1] : 0));
    json_t *suites = json_array();
    for (size_t k = 0; k < ex->n_suites; k++)
        json_array_append_new(suites, json_integer(ex->suites[k]));
    cli_json_set(o, "suites_i", suites);
    cli_json_set(o, "c_i", json_cid(ex->c_i, ex->c_i_len));
    cli_json_set(o, "c_r", ex->c_r_known ? json_cid(ex->c_r, ex->c_r_len) : json_null());
    cli_json_set(o, "id_cred_r", json_id_cred(ex->id_cred_r));
    cli_json_set(o, "id_cred_i", json_id_cred(ex->id_cred_i));
    cli_json_set(o, "err_code", cli_json_int_or_null(ex->error_code != -1, ex->error_code));
    double ms = 0;
    cli_json_set(o, "handshake_ms",
                 handshake_span(ex, &ms) ? cli_json_real_or_null(ms) : json_null());
    cli_json_set(o, "edhoc_row",
                 dec ? bytes_keylog_row_json(dec->has_edhoc_row, &dec->edhoc_row) : json_null());
    json_t *msgs = json_array();
    for (size_t k = 0; k < ex->n_msgs; k++) {
        const struct edhoc_capture_msg *m = &ex->msgs[k];
        json_t *j = json_object();
        /* First: the members after it keep the order readers match on. */
        cli_json_set(j, "decrypted", dec ? bytes_keylog_msg_json(m, &dec->msgs[k]) : json_null());
        cli_json_set(j, "name", json_string(edhoc_capture_msg_type_name(m->type)));
        cli_json_set(j, "packet", json_integer(m->packet));
        cli_json_set(j, "from", json_string(m->from_initiator ? "initiator" : "responder"));
        cli_json_set(j, "datagrams", json_integer(m->datagrams));
        cli_json_set(j, "retransmissions", json_integer(m->retransmissions));
        cli_json_set(j, "edhoc_bytes",
                     cli_json_int_or_null(is_edhoc_msg(m->type), (long long)m->edhoc));
        cli_json_set(j, "coap_bytes", json_integer((json_int_t)m->coap));
        cli_json_set(j, "udp_bytes", json_integer((json_int_t)m->udp));
        cli_json_set(j, "ip_bytes", json_integer((json_int_t)m->ip));
        cli_json_set(j, "frame_bytes", json_integer((json_int_t)m->frame));
        cli_json_set(j, "frames", cli_json_int_or_null(link, m->link_frames));
        cli_json_set(j, "link_bytes", cli_json_int_or_null(link, (long long)m->link_bytes));
        cli_json_set(j, "answers", cli_json_int_or_null(m->answers >= 0, m->answers));
        /* Its datagrams on the link's air, from the captured CoAP bytes. */
        bool air_model = link_model->type != EDHOC_NETACCT_LINK_NONE &&
                         link_model->type != EDHOC_NETACCT_LINK_MTU;
        if (air_model) {
            struct edhoc_netacct_radio r =
                cli_net_radio(link_model, &capture_radio, capture_radio_set);
            cli_json_set(j, "air", cli_net_air_json(&r, &m->air));
        } else {
            cli_json_set(j, "air", json_null());
        }
        json_array_append_new(msgs, j);
    }
    cli_json_set(o, "messages", msgs);
    cli_json_set(o, "messages_not_listed", json_integer(ex->msgs_dropped));
    json_t *pairs = json_array();
    for (size_t k = 0; k < ex->n_msgs; k++) {
        struct edhoc_netacct_total t;
        if (!oscore_pair(ex, k, &t))
            continue;
        json_t *p = json_object();
        cli_json_set(p, "request", json_integer(ex->msgs[k].answers));
        cli_json_set(p, "response", json_integer((json_int_t)k));
        cli_json_set(p, "totals", cli_net_total_json(&t, link));
        json_array_append_new(pairs, p);
    }
    cli_json_set(o, "oscore_exchanges", pairs);
    json_t *tot = json_object();
    cli_json_set(tot, "handshake", cli_net_total_json(&ex->totals.handshake, link));
    cli_json_set(tot, "oscore", cli_net_total_json(&ex->totals.oscore, link));
    cli_json_set(tot, "other", cli_net_total_json(&ex->totals.other, link));
    cli_json_set(tot, "all", cli_net_total_json(&ex->totals.all, link));
    cli_json_set(o, "totals", tot);
    struct cli_air_summary air;
    cli_json_set(o, "air",
                 handshake_air(link_model, &ex->totals.handshake, &air) ? cli_air_summary_json(&air)
                                                                        : json_null());
    return o;
}

int bytes_print_json(const struct bytes_report *rep)
{
    const char *path = rep->path,
               *read_error = rep->run->read_error[0] ? rep->run->read_error : NULL;
    const struct edhoc_capture_analysis *a = rep->run->analysis;
    int dlt = rep->run->dlt;
    capture_radio = rep->radio;
    capture_radio_set = rep->radio_set;
    bool link = a->link.type != EDHOC_NETACCT_LINK_NONE;
    json_t *root = json_object();
    cli_json_set(root, "file", json_string(path));
    cli_json_set(root, "link_type", json_integer(dlt));
    cli_json_set(root, "link_type_name", cli_json_string_or_null(edhoc_capture_dlt_name(dlt)));
    cli_json_set(root, "link", bytes_link_json(&a->link));
    cli_json_set(root, "packets", json_integer(a->packets));
    cli_json_set(root, "udp_datagrams", json_integer(a->udp));
    cli_json_set(root, "coap_messages", json_integer(a->coap));
    json_t *exs = json_array();
    unsigned done = a->ex_evicted_completed, failed = a->ex_evicted_failed;
    for (size_t i = 0; i < a->n_ex; i++) {
        json_array_append_new(
            exs, json_exchange(&a->ex[i], link, &a->link, rep->dec ? &rep->dec->ex[i] : NULL));
        const char *oc = outcome(&a->ex[i]);
        done += !strcmp(oc, "completed");
        failed += !strcmp(oc, "failed");
    }
    cli_json_set(root, "exchanges", exs);
    cli_json_set(root, "keylog", rep->keylog ? bytes_keylog_json(rep->keylog) : json_null());
    cli_json_set(root, "exchanges_not_listed", json_integer(a->ex_evicted));
    json_t *sum = json_object();
    size_t total = a->n_ex + a->ex_evicted;
    cli_json_set(sum, "exchanges", json_integer((json_int_t)total));
    cli_json_set(sum, "completed", json_integer(done));
    cli_json_set(sum, "failed", json_integer(failed));
    cli_json_set(sum, "incomplete", json_integer((json_int_t)(total - done - failed)));
    cli_json_set(sum, "handshake", cli_net_total_json(&a->totals.handshake, link));
    cli_json_set(sum, "oscore", cli_net_total_json(&a->totals.oscore, link));
    cli_json_set(sum, "other", cli_net_total_json(&a->totals.other, link));
    cli_json_set(sum, "all", cli_net_total_json(&a->totals.all, link));
    cli_json_set(sum, "unmatched", json_integer(a->unmatched));
    cli_json_set(sum, "ignored", json_integer(a->ignored));
    cli_json_set(sum, "skipped", json_integer(a->skipped));
    cli_json_set(root, "summary", sum);
    json_t *issues = json_array();
    for (size_t i = 0; i < a->n_issues; i++) {
        json_t *is = json_object();
        cli_json_set(is, "packet", json_integer(a->issues[i].packet));
        cli_json_set(is, "text", json_string(a->issues[i].text));
        json_array_append_new(issues, is);
    }
    cli_json_set(root, "issues", issues);
    cli_json_set(root, "issues_not_listed", json_integer(a->issues_dropped));
    cli_json_set(root, "error", cli_json_string_or_null(read_error));
    return cli_json_print(root, stdout);
}
