/*
 * edhoc-cli bytes --compare: how many bytes EDHOC puts on the wire in its
 * three credential modes, beside a DTLS 1.2 handshake of libcoap's OpenSSL
 * backend, measured in one run on loopback.
 *
 * Both protocols are counted the same way: a relay on 127.0.0.1 sits
 * between client and server and records every UDP datagram it forwards.
 * The EDHOC side runs this binary's own `responder` and `initiator` as
 * child processes (through the relay); the DTLS side runs libcoap's client
 * and server in this process (edhoc/dtls_compare.h). The link model
 * (--link 802.15.4, --link-mtu) is applied to each recorded datagram.
 */
#include "bytes_compare.h"
#include "output/bytes_output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo_creds.h"
#include "edhoc/dtls_compare.h"
#include "edhoc/netacct.h"
#include "net_report.h"
#include "output/progress.h"
#include "util.h"

#define CMP_MAX_MSGS   BYTES_INITIATOR_MAX_MSGS
#define CMP_MAX_RUNS   8
#define CMP_DETAIL_MAX 400

/* The figures people quote, with where they come from (not measured). */
#define PUBLISHED_SOURCE    "pre-RFC EDHOC draft and a paper; not measured here"
#define PUBLISHED_X5CHAIN   808
#define PUBLISHED_BY_REF    242
#define PUBLISHED_STATIC_DH 101
#define PUBLISHED_TLS13     1371
#define PUBLISHED_DTLS13    1500

struct cmp_msg {
    char name[48];
    char records[CMP_DETAIL_MAX]; /* DTLS: the records of the flight */
    bool from_client;
    bool handshake;
    long edhoc;           /* EDHOC message bytes, -1 for none */
    bool echo_challenged; /* the same message_1 is sent again with an Echo value */
    size_t udp;           /* UDP payload bytes */
    unsigned dgrams;
    unsigned frames;
    size_t frame_bytes;
    struct edhoc_netacct_air air; /* on the modelled link, its datagrams summed */
};

struct cmp_total {
    long edhoc;
    size_t udp;
    unsigned dgrams;
    unsigned frames;
    size_t frame_bytes;
};

/* CMP_INTERRUPTED: SIGINT/SIGTERM arrived during the run; it is left out
 * of the report. */
enum cmp_status { CMP_OK = 0, CMP_FAILED, CMP_UNSUPPORTED, CMP_INTERRUPTED };

struct cmp_run {
    const char *protocol; /* "EDHOC", "DTLS 1.2" */
    const char *mode;     /* short name: "x5chain", "x5t", "static DH (kid)", "X.509", ... */
    const char *key;      /* JSON id */
    char config[160];
    enum cmp_status status;
    char detail[320];
    struct cmp_msg msgs[CMP_MAX_MSGS];
    size_t n;
    struct cmp_total hs, req;
    unsigned round_trips;
    long published;     /* -1 none */
    int method, suite;  /* EDHOC */
    bool cross_checked; /* EDHOC: relay counts equal the initiator's own */
    uint16_t cipher_suite;
    unsigned response_code;
    double handshake_ms;
    struct cli_air_summary air; /* the handshake on the modelled link */
};

struct cmp_ctx {
    bool json;
    bool has_link;
    bool has_air; /* a link with a time model (802.15.4, BLE, LoRaWAN) */
    struct edhoc_netacct_link link;
    struct edhoc_netacct_radio radio;
    uint64_t deadline_ns;
    char tmpdir[64];
};

/* ---- Accounting ---- */

/* One datagram of message m; coap: its bytes when it is a whole CoAP
 * message the link model may compress (SCHC on LoRaWAN), else NULL. */
static void account(const struct cmp_ctx *c, struct cmp_msg *m, size_t len, const uint8_t *coap)
{
    m->udp += len;
    m->dgrams++;
    if (!c->has_link)
        return;
    struct edhoc_netacct_dgram d = {.udp_payload = len,
                                    .ipv6 = false,
                                    .payload = coap,
                                    .dir = m->from_client ? EDHOC_NETACCT_DIR_UP
                                                          : EDHOC_NETACCT_DIR_DOWN};
    struct edhoc_netacct_layers l;
    if (edhoc_netacct_datagram(&c->link, &d, &l, NULL, 0) == 0) {
        m->frames += l.frames;
        m->frame_bytes += l.link;
        edhoc_netacct_air_add(&m->air, &l.air);
    }
}

/* The handshake's messages on the link, one after another, then the host
 * time measured on loopback (both sides' processing) on top. */
static void air_totals(const struct cmp_ctx *c, struct cmp_run *r)
{
    memset(&r->air, 0, sizeof r->air);
    r->air.host_ms = r->handshake_ms;
    if (!c->has_air)
        return;
    struct edhoc_netacct_step steps[CMP_MAX_MSGS];
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct cmp_msg *m = &r->msgs[i];
        if (!m->handshake)
            continue;
        cli_air_summary_add(&r->air, &c->radio, &m->air, m->frames, m->from_client);
        r->air.link_us += m->air.link_us;
        steps[n].air = &m->air;
        steps[n].from_initiator = m->from_client;
        steps[n].host_us = 0;
        n++;
    }
    uint64_t seq = edhoc_netacct_air_sequence(&c->link, steps, n);
    uint64_t host = r->handshake_ms > 0 ? (uint64_t)(r->handshake_ms * 1000) : 0;
    r->air.e2e_us = seq + host;
}

static void totals(struct cmp_run *r)
{
    memset(&r->hs, 0, sizeof r->hs);
    memset(&r->req, 0, sizeof r->req);
    r->round_trips = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct cmp_msg *m = &r->msgs[i];
        struct cmp_total *t = m->handshake ? &r->hs : &r->req;
        /* A message_1 answered by 4.01 + Echo goes again unchanged (RFC
         * 9175 address check): one EDHOC message, two datagrams. */
        if (m->edhoc > 0 && !m->echo_challenged)
            t->edhoc += m->edhoc;
        t->udp += m->udp;
        t->dgrams += m->dgrams;
        t->frames += m->frames;
        t->frame_bytes += m->frame_bytes;
        /* A round trip: a client flight of the handshake answered by the
         * server (the next message goes the other way). */
        if (m->handshake && m->from_client && i + 1 < r->n && r->msgs[i + 1].handshake &&
            !r->msgs[i + 1].from_client)
            r->round_trips++;
    }
}

static uint64_t now_ns(void)
{
    return cli_now_ns();
}

static long remaining_ms(const struct cmp_ctx *c)
{
    uint64_t now = now_ns();
    return now >= c->deadline_ns ? 0 : (long)((c->deadline_ns - now) / 1000000u);
}

/* ---- Child processes ---- */

static pid_t spawn_self(char *const argv[], int out_fd, int err_fd)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* A child never outlives this run, even if the parent is killed. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0)
        dup2(devnull, 0);
    dup2(out_fd >= 0 ? out_fd : devnull, 1);
    dup2(err_fd >= 0 ? err_fd : devnull, 2);
    execv("/proc/self/exe", argv);
    _exit(127);
}

/* SIGTERM, then SIGKILL after a second; always reaps. Returns the wait
 * status. */
static int stop_child(pid_t pid)
{
    int status = 0;
    if (pid <= 0)
        return 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
        return status;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

/* ---- EDHOC runs ---- */

static bool wait_ready_port(const struct cmp_ctx *c, const char *path, pid_t pid, unsigned *port)
{
    while (remaining_ms(c) > 0 && !cli_interrupted()) {
        FILE *f = fopen(path, "r");
        if (f) {
            unsigned p = 0;
            int got = fscanf(f, "%u", &p);
            fclose(f);
            if (got == 1 && p > 0 && p < 65536) {
                *port = p;
                return true;
            }
        }
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return false;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void last_line_of(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    size_t len;
    uint8_t *data = cli_read_file(path, &len);
    if (!data)
        return;
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = 0;
    const char *s = (const char *)data;
    const char *nl = strrchr(s, '\n');
    snprintf(buf, cap, "%s", nl ? nl + 1 : s);
    free(data);
}

/* An integer member, or dflt when absent, null or not an integer. */
static long member_long(const json_t *obj, const char *key, long dflt)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

int bytes_initiator_report_parse(const char *text, struct bytes_initiator_report *r, char *why,
                                 size_t why_cap)
{
    memset(r, 0, sizeof *r);
    r->handshake_ms = -1;
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!json_is_object(root)) {
        snprintf(why, why_cap, "not a JSON object (%s)", root ? "another JSON value" : err.text);
        json_decref(root);
        return -1;
    }
    const json_t *outcome = json_object_get(root, "outcome");
    r->ok = json_is_string(outcome) && !strcmp(json_string_value(outcome), "ok");
    const json_t *hs = json_object_get(root, "handshake_ms");
    if (json_is_number(hs))
        r->handshake_ms = json_number_value(hs);
    const json_t *msgs = json_object_get(root, "messages");
    if (!json_is_array(msgs)) {
        snprintf(why, why_cap, "no \"messages\" array");
        json_decref(root);
        return -1;
    }
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m)
    {
        const json_t *name = json_object_get(m, "name"), *from = json_object_get(m, "from");
        if (!json_is_object(m) || !json_is_string(name) || !json_is_string(from)) {
            snprintf(why, why_cap, "messages[%zu] has no \"name\" or \"from\"", i);
            json_decref(root);
            return -1;
        }
        if (r->n_msgs == BYTES_INITIATOR_MAX_MSGS)
            break;
        struct bytes_initiator_msg *o = &r->msgs[r->n_msgs++];
        snprintf(o->name, sizeof o->name, "%s", json_string_value(name));
        o->from_initiator = !strcmp(json_string_value(from), "initiator");
        /* null (or absent) for a message that is not EDHOC's. */
        o->edhoc_bytes = member_long(m, "edhoc_bytes", -1);
        o->echo_challenged = json_is_true(json_object_get(m, "echo_challenged"));
        o->coap_bytes = member_long(m, "coap_bytes", -1);
        long d = member_long(m, "datagrams", 0);
        o->datagrams = d > 0 ? (unsigned)d : 0;
    }
    json_decref(root);
    return 0;
}

static void run_edhoc(const struct cmp_ctx *c, struct cmp_run *r, int method, const char *id_cred)
{
    char ready[128], rlog[128];
    snprintf(ready, sizeof ready, "%s/ready-%s", c->tmpdir, id_cred);
    snprintf(rlog, sizeof rlog, "%s/responder-%s.log", c->tmpdir, id_cred);
    int logfd = open(rlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    /* A throwaway responder on the public demo credentials (--demo: the
     * comparison measures their sizes, and it listens on loopback only):
     * its EDHOC contexts need not outlive it. */
    char *rargv[] = {"edhoc-cli",     "responder",    "--demo", "--listen",
                     "127.0.0.1:0",   "--ready-file", ready,    "--id-cred",
                     (char *)id_cred, "--state-dir",  "none",   NULL};
    pid_t resp = spawn_self(rargv, -1, logfd);
    if (logfd >= 0)
        close(logfd);
    pid_t init = -1;
    int pipefd[2] = {-1, -1};
    struct edhoc_udp_relay *relay = NULL;
    struct edhoc_relay_log *log = calloc(1, sizeof *log);
    struct bytes_initiator_report *rep = calloc(1, sizeof *rep);
    char *out = NULL;
    size_t out_len = 0, out_cap = 0;
    unsigned port = 0;

    if (remaining_ms(c) == 0) {
        snprintf(r->detail, sizeof r->detail, "the --timeout bound was reached before this run");
        goto fail;
    }
    if (resp < 0 || !log || !rep) {
        snprintf(r->detail, sizeof r->detail, "cannot start the responder: %s", strerror(errno));
        goto fail;
    }
    if (!wait_ready_port(c, ready, resp, &port)) {
        char line[200];
        last_line_of(rlog, line, sizeof line);
        snprintf(r->detail, sizeof r->detail, "the responder did not start%s%s%s",
                 remaining_ms(c) == 0 ? " within the --timeout bound" : "", line[0] ? ": " : "",
                 line);
        goto fail;
    }
    uint16_t front = 0;
    if (edhoc_udp_relay_open((uint16_t)port, false, log, &relay, &front) != 0) {
        snprintf(r->detail, sizeof r->detail, "cannot open the counting relay on 127.0.0.1");
        goto fail;
    }
    char uri[64], method_s[8], suite_s[8], timeout_s[24];
    snprintf(uri, sizeof uri, "coap://127.0.0.1:%u", front);
    snprintf(method_s, sizeof method_s, "%d", method);
    snprintf(suite_s, sizeof suite_s, "%d", r->suite);
    /* What is left of the bound, at most 10 s, in whole seconds (at least
     * one): the relay and this loop stop the run at the bound anyway. */
    long left_s = remaining_ms(c) / 1000;
    snprintf(timeout_s, sizeof timeout_s, "%ld", left_s < 1 ? 1 : left_s > 10 ? 10 : left_s);
    char *iargv[] = {"edhoc-cli", "initiator", uri,         "--method",      method_s,
                     "--suites",  suite_s,     "--id-cred", (char *)id_cred, "--c-i",
                     "37",        "--request", "GET /time", "--timeout",     timeout_s,
                     "--json",    NULL};
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(r->detail, sizeof r->detail, "pipe: %s", strerror(errno));
        goto fail;
    }
    init = spawn_self(iargv, pipefd[1], -1);
    close(pipefd[1]);
    pipefd[1] = -1;
    if (init < 0) {
        snprintf(r->detail, sizeof r->detail, "cannot start the initiator: %s", strerror(errno));
        goto fail;
    }
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    int status = 0;
    bool exited = false;
    while (!exited) {
        if (cli_interrupted())
            goto fail;
        if (remaining_ms(c) == 0) {
            snprintf(r->detail, sizeof r->detail,
                     "the initiator did not finish within the --timeout bound");
            goto fail;
        }
        edhoc_udp_relay_pump(relay, 5);
        for (;;) {
            if (out_len + 4096 > out_cap) {
                size_t nc = out_cap ? out_cap * 2 : 16384;
                char *no = realloc(out, nc);
                if (!no)
                    break;
                out = no;
                out_cap = nc;
            }
            ssize_t got = read(pipefd[0], out + out_len, out_cap - out_len - 1);
            if (got <= 0)
                break;
            out_len += (size_t)got;
        }
        if (waitpid(init, &status, WNOHANG) == init)
            exited = true;
    }
    init = -1;
    edhoc_udp_relay_pump(relay, 0);
    for (;;) {
        if (!out || out_len + 1 >= out_cap)
            break;
        ssize_t got = read(pipefd[0], out + out_len, out_cap - out_len - 1);
        if (got <= 0)
            break;
        out_len += (size_t)got;
    }
    if (out)
        out[out_len] = 0;
    char why[160];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !out ||
        bytes_initiator_report_parse(out, rep, why, sizeof why) != 0 || !rep->ok) {
        snprintf(r->detail, sizeof r->detail, "the initiator failed (exit %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        goto fail;
    }
    if (rep->n_msgs == 0) {
        snprintf(r->detail, sizeof r->detail, "the initiator's report lists no messages");
        goto fail;
    }
    /* The relay's datagrams, in order, are charged to the messages the
     * initiator reports, in order; the initiator's own byte counts must
     * agree with the relay's. */
    size_t k = 0;
    r->cross_checked = true;
    for (size_t i = 0; i < rep->n_msgs && r->n < CMP_MAX_MSGS; i++) {
        const struct bytes_initiator_msg *im = &rep->msgs[i];
        struct cmp_msg *m = &r->msgs[r->n++];
        memset(m, 0, sizeof *m);
        _Static_assert(sizeof m->name == sizeof im->name, "name sizes");
        memcpy(m->name, im->name, sizeof m->name);
        m->from_client = im->from_initiator;
        m->edhoc = im->edhoc_bytes;
        m->echo_challenged = im->echo_challenged;
        m->handshake = strncmp(im->name, "OSCORE", 6) != 0;
        for (unsigned j = 0; j < im->datagrams; j++) {
            if (k >= log->n || log->d[k].to_server != m->from_client) {
                r->cross_checked = false;
                break;
            }
            const struct edhoc_relay_dgram *rd = &log->d[k++];
            account(c, m, rd->len, rd->kept == rd->len ? rd->bytes : NULL);
        }
        if ((long)m->udp != im->coap_bytes)
            r->cross_checked = false;
    }
    if (k != log->n)
        r->cross_checked = false;
    totals(r);
    r->handshake_ms = rep->handshake_ms;
    air_totals(c, r);
    if (!r->cross_checked)
        snprintf(r->detail, sizeof r->detail,
                 "the relay saw %zu datagrams that do not match the "
                 "initiator's own count; relay numbers shown",
                 log->n);
    r->status = CMP_OK;
    goto done;

fail:
    r->status = cli_interrupted() ? CMP_INTERRUPTED : CMP_FAILED;
done:
    if (init > 0)
        stop_child(init);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    stop_child(resp);
    edhoc_udp_relay_close(relay);
    free(log);
    free(rep);
    free(out);
    unlink(ready);
    unlink(rlog);
}

/* ---- DTLS runs ---- */

static void run_dtls(const struct cmp_ctx *c, struct cmp_run *r, enum edhoc_dtls_mode mode)
{
    struct edhoc_dtls_result *res = calloc(1, sizeof *res);
    if (!res) {
        r->status = CMP_FAILED;
        snprintf(r->detail, sizeof r->detail, "out of memory");
        return;
    }
    /* The 293-byte demo certificates, as the EDHOC x5chain rows use. */
    struct demo_pki {
        struct edhoc_cred srv, cli, ca;
        struct edhoc_key srv_key, cli_key;
    } *pki = calloc(1, sizeof *pki);
    struct edhoc_dtls_creds creds = {0};
    if (pki && edhoc_demo_cred_293('R', &pki->srv, &pki->srv_key) == 0 &&
        edhoc_demo_cred_293('I', &pki->cli, &pki->cli_key) == 0 && edhoc_demo_ca(&pki->ca) == 0)
        creds = (struct edhoc_dtls_creds){.server_cred = &pki->srv,
                                          .client_cred = &pki->cli,
                                          .ca = &pki->ca,
                                          .server_key = &pki->srv_key,
                                          .client_key = &pki->cli_key};
    long left = remaining_ms(c);
    int rc = left > 0 ? edhoc_dtls_compare_run(mode, (unsigned)left, &creds, res)
                      : EDHOC_DTLS_ERR_TIMEOUT;
    if (pki) {
        edhoc_wipe(pki, sizeof *pki);
        free(pki);
    }
    if (left <= 0)
        snprintf(res->detail, sizeof res->detail,
                 "the --timeout bound was reached before this run");
    if (rc == EDHOC_DTLS_ERR_UNSUPPORTED) {
        r->status = CMP_UNSUPPORTED;
        snprintf(r->detail, sizeof r->detail, "%s", res->detail);
        free(res);
        return;
    }
    if (rc != 0) {
        r->status = CMP_FAILED;
        snprintf(r->detail, sizeof r->detail, "%s", res->detail[0] ? res->detail : "failed");
    } else {
        r->status = CMP_OK;
    }
    r->cipher_suite = res->cipher_suite;
    r->response_code = res->response_code;
    r->handshake_ms = res->handshake_ms;
    /* Flights: runs of consecutive datagrams in one direction. */
    unsigned flight = 0;
    for (size_t i = 0; i < res->log.n; i++) {
        const struct edhoc_relay_dgram *d = &res->log.d[i];
        bool hs = i < res->handshake_dgrams;
        struct cmp_msg *m = r->n ? &r->msgs[r->n - 1] : NULL;
        if (!m || m->from_client != d->to_server || m->handshake != hs) {
            if (r->n == CMP_MAX_MSGS)
                break;
            m = &r->msgs[r->n++];
            memset(m, 0, sizeof *m);
            m->from_client = d->to_server;
            m->handshake = hs;
            m->edhoc = -1;
            if (hs)
                snprintf(m->name, sizeof m->name, "flight %u", ++flight);
            else
                snprintf(m->name, sizeof m->name, "%s",
                         d->to_server ? "GET /time (DTLS)" : "2.05 response (DTLS)");
        }
        size_t used = strlen(m->records);
        snprintf(m->records + used, sizeof m->records - used, "%s%s", used ? " | " : "", d->label);
        account(c, m, d->len, NULL); /* DTLS records: no CoAP header to compress */
    }
    totals(r);
    air_totals(c, r);
    free(res);
}

/* ---- Output ---- */

static const char *status_name(enum cmp_status s)
{
    return s == CMP_OK ? "ok" : s == CMP_UNSUPPORTED ? "not supported" : "failed";
}

static void print_text(const struct cmp_ctx *c, const struct cmp_run *runs, size_t nruns,
                       bool partial)
{
    char lib[160];
    edhoc_dtls_library_describe(lib, sizeof lib);
    printf("EDHOC vs DTLS 1.2 on loopback, measured in one run (%s)\n", lib);
    printf("Counted: every UDP datagram between client and server, as forwarded by a relay on\n"
           "127.0.0.1; \"UDP\" is the UDP payload (the CoAP message, or the DTLS records).\n"
           "Handshake: EDHOC message_1..3 and the 2.04 response to message_3 (CoAP, RFC 9528\n"
           "Appendix A.2); DTLS every datagram before the first application_data record.\n"
           "Then one CoAP GET /time and its response, over OSCORE or over the DTLS session.\n"
           "Round trips: handshake flights of the client answered by the server.\n");
    if (c->has_link) {
        char d[400];
        edhoc_netacct_link_describe(&c->link, d, sizeof d);
        printf("Link: %s\n", d);
    }
    if (partial)
        printf("interrupted: partial results (%zu run%s completed)\n", nruns,
               nruns == 1 ? "" : "s");
    for (size_t i = 0; i < nruns; i++) {
        const struct cmp_run *r = &runs[i];
        printf("\n%s %s: %s", r->protocol, r->mode, r->config);
        if (r->cipher_suite) {
            const char *n = edhoc_dtls_cipher_suite_name(r->cipher_suite);
            printf(", %s (0x%04x)", n ? n : "cipher suite", r->cipher_suite);
        }
        printf("\n");
        if (r->status != CMP_OK || r->detail[0])
            printf("  %s%s%s\n", status_name(r->status), r->detail[0] ? ": " : "", r->detail);
        if (r->status == CMP_UNSUPPORTED || r->n == 0)
            continue;
        printf("  %-26s %-5s %6s %6s %6s", "message / flight", "dir", "EDHOC", "UDP", "dgrams");
        if (c->has_link)
            printf(" %6s %6s", "frames", "bytes");
        if (c->has_air)
            printf(" %11s %11s %11s %9s", "on air", "link time", "duty wait", "mJ (S+R)");
        printf("%s\n", strcmp(r->protocol, "EDHOC") ? "  records" : "");
        for (size_t j = 0; j < r->n; j++) {
            const struct cmp_msg *m = &r->msgs[j];
            char eb[24] = "-";
            if (m->edhoc >= 0)
                snprintf(eb, sizeof eb, "%ld", m->edhoc);
            printf("  %-26s %-5s %6s %6zu %6u", m->name, m->from_client ? "C->S" : "S->C", eb,
                   m->udp, m->dgrams);
            if (c->has_link)
                printf(" %6u %6zu", m->frames, m->frame_bytes);
            if (c->has_air) {
                char t1[24], t2[24], t3[24];
                struct edhoc_netacct_energy es = edhoc_netacct_energy_of(&c->radio, &m->air, true);
                struct edhoc_netacct_energy er = edhoc_netacct_energy_of(&c->radio, &m->air, false);
                printf(" %11s %11s %11s %9.3f", cli_air_time(m->air.tx_us, t1, sizeof t1),
                       cli_air_time(m->air.link_us, t2, sizeof t2),
                       cli_air_time(m->air.wait_us, t3, sizeof t3),
                       (es.tx_j + es.rx_j + er.tx_j + er.rx_j) * 1e3);
            }
            if (m->air.fragments)
                printf("  %u SCHC fragments", m->air.fragments);
            if (m->records[0])
                printf("  %s", m->records);
            printf("\n");
        }
        char eb[24] = "-";
        if (!strcmp(r->protocol, "EDHOC"))
            snprintf(eb, sizeof eb, "%ld", r->hs.edhoc);
        printf("  %-26s %-5s %6s %6zu %6u", "handshake total", "", eb, r->hs.udp, r->hs.dgrams);
        if (c->has_link)
            printf(" %6u %6zu", r->hs.frames, r->hs.frame_bytes);
        printf("  %u round trip%s\n", r->round_trips, r->round_trips == 1 ? "" : "s");
        printf("  %-26s %-5s %6s %6zu %6u", "GET /time + response", "", "-", r->req.udp,
               r->req.dgrams);
        if (c->has_link)
            printf(" %6u %6zu", r->req.frames, r->req.frame_bytes);
        printf("\n");
    }

    /* The summary in the form people quote. */
    printf("\nSummary (UDP payload bytes; handshake as defined above)\n");
    printf("%-24s %-26s %-22s %9s %3s %6s", "mode", "EDHOC message bytes", "UDP bytes per flight",
           "handshake", "RT", "dgrams");
    if (c->has_link)
        printf(" %6s %11s", "frames", "frame bytes");
    printf(" %8s  %s\n", "+GET/time", "published");
    for (size_t i = 0; i < nruns; i++) {
        const struct cmp_run *r = &runs[i];
        char name[64];
        snprintf(name, sizeof name, "%s %s", r->protocol, r->mode);
        if (r->status != CMP_OK) {
            printf("%-24s %s%s%s\n", name, status_name(r->status), r->detail[0] ? ": " : "",
                   r->detail);
            continue;
        }
        char eb[64] = "-", fl[160] = "";
        if (!strcmp(r->protocol, "EDHOC")) {
            size_t o = 0;
            eb[0] = 0;
            for (size_t j = 0; j < r->n && o < sizeof eb; j++)
                if (r->msgs[j].edhoc > 0)
                    o += (size_t)snprintf(eb + o, sizeof eb - o, "%s%ld", o ? "+" : "",
                                          r->msgs[j].edhoc);
            if (o < sizeof eb)
                snprintf(eb + o, sizeof eb - o, " = %ld", r->hs.edhoc);
        }
        size_t o = 0;
        for (size_t j = 0; j < r->n && o < sizeof fl; j++)
            if (r->msgs[j].handshake)
                o += (size_t)snprintf(fl + o, sizeof fl - o, "%s%zu", o ? "+" : "", r->msgs[j].udp);
        printf("%-24s %-26s %-22s %9zu %3u %6u", name, eb, fl, r->hs.udp, r->round_trips,
               r->hs.dgrams);
        if (c->has_link)
            printf(" %6u %11zu", r->hs.frames, r->hs.frame_bytes);
        printf(" %9zu", r->req.udp);
        if (r->published >= 0)
            printf("  %ld (EDHOC bytes)*", r->published);
        printf("\n");
    }
    printf("%-24s %-26s %-22s %9s %3s %6s", "TLS 1.3 (published)", "-", "-", "-", "", "");
    if (c->has_link)
        printf(" %6s %11s", "", "");
    printf(" %9s  %d*\n", "", PUBLISHED_TLS13);
    printf("%-24s %-26s %-22s %9s %3s %6s", "DTLS 1.3 (published)", "-", "-", "-", "", "");
    if (c->has_link)
        printf(" %6s %11s", "", "");
    printf(" %9s  %d*\n", "", PUBLISHED_DTLS13);
    printf("* Published figures from a pre-RFC EDHOC draft and a paper, not measured here:\n"
           "  EDHOC %d (x5chain, two 293-byte certificates), %d (by reference), %d (static DH);\n"
           "  TLS 1.3 %d; DTLS 1.3 %d. With RFC 9528 final, method 3 suite 2 with kid and one\n"
           "  suite is 37 + 45 + 19 = 101 bytes, and the RFC 9529 trace 1 configuration is\n"
           "  37 + 116 + 90 = 243.\n"
           "DTLS X.509 sends what libcoap 4.3.1's OpenSSL backend sends by default: each\n"
           "Certificate message carries the chain OpenSSL builds (sizes in the records column),\n"
           "where EDHOC x5chain carries the 293-byte leaf only. DTLS round trips include the\n"
           "HelloVerifyRequest cookie exchange; EDHOC's include the CoAP response to message_3.\n",
           PUBLISHED_X5CHAIN, PUBLISHED_BY_REF, PUBLISHED_STATIC_DH, PUBLISHED_TLS13,
           PUBLISHED_DTLS13);
    if (!c->has_air)
        return;
    printf("\nOn the link (handshake; docs/airtime.md): frames, time on air, duty-cycle wait,\n"
           "end-to-end = messages one after another on the link + host (the handshake time\n"
           "measured on loopback, both sides' processing); energy per role, radio %s\n",
           c->radio.name);
    printf("  (%s)\n", c->radio.source);
    if (c->link.type == EDHOC_NETACCT_LINK_LORAWAN)
        printf(
            "  LoRaWAN: SCHC compresses each EDHOC run's CoAP headers from the bytes the\n"
            "  relay forwarded; a DTLS record is not CoAP and travels whole after IPv6 + UDP.\n");
    printf("%-24s %6s %5s %11s %11s %11s %11s %11s %9s %9s\n", "mode", "frames", "frags", "on air",
           "duty wait", "link time", "host", "end-to-end", "I mJ", "R mJ");
    for (size_t i = 0; i < nruns; i++) {
        const struct cmp_run *r = &runs[i];
        if (r->status != CMP_OK)
            continue;
        char name[64], t1[24], t2[24], t3[24], t4[24], t5[24];
        snprintf(name, sizeof name, "%s %s", r->protocol, r->mode);
        printf("%-24s %6u %5u %11s %11s %11s %11s %11s %9.3f %9.3f\n", name, r->air.frames,
               r->air.fragments, cli_air_time(r->air.air_us, t1, sizeof t1),
               cli_air_time(r->air.wait_us, t2, sizeof t2),
               cli_air_time(r->air.link_us, t3, sizeof t3),
               r->air.host_ms >= 0 ? cli_air_time((uint64_t)(r->air.host_ms * 1000), t4, sizeof t4)
                                   : "-",
               cli_air_time(r->air.e2e_us, t5, sizeof t5), r->air.initiator_mj,
               r->air.responder_mj);
    }
}

/* ---- JSON (docs/json/bytes-compare.schema.json) ---- */

static json_t *json_total(const struct cmp_ctx *c, const struct cmp_total *t, bool edhoc)
{
    json_t *o = json_object();
    cli_json_set(o, "edhoc_bytes", cli_json_int_or_null(edhoc, t->edhoc));
    cli_json_set(o, "udp_bytes", json_integer((json_int_t)t->udp));
    cli_json_set(o, "datagrams", json_integer(t->dgrams));
    cli_json_set(o, "frames", cli_json_int_or_null(c->has_link, t->frames));
    cli_json_set(o, "link_bytes", cli_json_int_or_null(c->has_link, (long long)t->frame_bytes));
    return o;
}

static json_t *json_run(const struct cmp_ctx *c, const struct cmp_run *r)
{
    bool edhoc = !strcmp(r->protocol, "EDHOC");
    bool measured = r->status != CMP_UNSUPPORTED && r->n > 0;
    json_t *o = json_object();
    cli_json_set(o, "protocol", json_string(r->protocol));
    cli_json_set(o, "mode", json_string(r->key));
    cli_json_set(o, "config", json_string(r->config));
    cli_json_set(o, "status", json_string(status_name(r->status)));
    cli_json_set(o, "detail", cli_json_string_or_null(r->detail[0] ? r->detail : NULL));
    cli_json_set(o, "method", cli_json_int_or_null(edhoc, r->method));
    cli_json_set(o, "suite", cli_json_int_or_null(edhoc, r->suite));
    cli_json_set(o, "cross_checked",
                 edhoc && r->status == CMP_OK ? json_boolean(r->cross_checked) : json_null());
    const char *cs_name = r->cipher_suite ? edhoc_dtls_cipher_suite_name(r->cipher_suite) : NULL;
    cli_json_set(o, "cipher_suite", cli_json_int_or_null(r->cipher_suite != 0, r->cipher_suite));
    cli_json_set(o, "cipher_suite_name", cli_json_string_or_null(cs_name));
    json_t *msgs = json_array();
    for (size_t j = 0; measured && j < r->n; j++) {
        const struct cmp_msg *m = &r->msgs[j];
        json_t *jm = json_object();
        cli_json_set(jm, "name", json_string(m->name));
        cli_json_set(jm, "from", json_string(m->from_client ? "client" : "server"));
        cli_json_set(jm, "handshake", json_boolean(m->handshake));
        cli_json_set(jm, "edhoc_bytes", cli_json_int_or_null(m->edhoc >= 0, m->edhoc));
        cli_json_set(jm, "udp_bytes", json_integer((json_int_t)m->udp));
        cli_json_set(jm, "datagrams", json_integer(m->dgrams));
        cli_json_set(jm, "frames", cli_json_int_or_null(c->has_link, m->frames));
        cli_json_set(jm, "link_bytes",
                     cli_json_int_or_null(c->has_link, (long long)m->frame_bytes));
        cli_json_set(jm, "records", cli_json_string_or_null(m->records[0] ? m->records : NULL));
        cli_json_set(jm, "air", c->has_air ? cli_net_air_json(&c->radio, &m->air) : json_null());
        json_array_append_new(msgs, jm);
    }
    cli_json_set(o, "messages", msgs);
    cli_json_set(o, "handshake_total", measured ? json_total(c, &r->hs, edhoc) : json_null());
    cli_json_set(o, "round_trips", cli_json_int_or_null(measured, r->round_trips));
    cli_json_set(o, "handshake_ms",
                 r->status == CMP_OK && r->handshake_ms >= 0
                     ? cli_json_real_or_null(r->handshake_ms)
                     : json_null());
    cli_json_set(o, "request", measured ? json_total(c, &r->req, false) : json_null());
    cli_json_set(o, "air", measured && c->has_air ? cli_air_summary_json(&r->air) : json_null());
    cli_json_set(o, "published_edhoc_bytes", cli_json_int_or_null(r->published >= 0, r->published));
    return o;
}

static json_t *json_ints(const int *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static int print_json(const struct cmp_ctx *c, const struct cmp_run *runs, size_t nruns,
                      bool partial)
{
    char lib[160];
    edhoc_dtls_library_describe(lib, sizeof lib);
    json_t *root = json_object();
    cli_json_set(root, "library", json_string(lib));
    cli_json_set(root, "link", c->has_link ? bytes_link_json(&c->link) : json_null());
    cli_json_set(root, "radio", c->has_air ? cli_net_radio_json(&c->radio) : json_null());
    cli_json_set(root, "partial", json_boolean(partial));
    json_t *arr = json_array();
    for (size_t i = 0; i < nruns; i++)
        json_array_append_new(arr, json_run(c, &runs[i]));
    cli_json_set(root, "runs", arr);
    json_t *pub = json_object();
    cli_json_set(pub, "source", json_string(PUBLISHED_SOURCE));
    cli_json_set(pub, "edhoc_x5chain", json_integer(PUBLISHED_X5CHAIN));
    cli_json_set(pub, "edhoc_by_reference", json_integer(PUBLISHED_BY_REF));
    cli_json_set(pub, "edhoc_static_dh", json_integer(PUBLISHED_STATIC_DH));
    cli_json_set(pub, "tls13", json_integer(PUBLISHED_TLS13));
    cli_json_set(pub, "dtls13", json_integer(PUBLISHED_DTLS13));
    cli_json_set(root, "published", pub);
    /* What RFC 9528 final gives for the configurations people quote:
     * message sizes from its Section 3 and the RFC 9529 trace 1. */
    static const int kid_one_suite[] = {37, 45, 19}, trace1[] = {37, 116, 90};
    json_t *fin = json_object();
    cli_json_set(fin, "method3_suite2_kid_one_suite", json_ints(kid_one_suite, 3));
    cli_json_set(fin, "method3_suite2_kid_one_suite_total", json_integer(101));
    cli_json_set(fin, "rfc9529_trace1", json_ints(trace1, 3));
    cli_json_set(fin, "rfc9529_trace1_total", json_integer(243));
    cli_json_set(root, "rfc9528_final", fin);
    return cli_json_print(root, stdout);
}

/* ---- The run ---- */

/* Remove the temporary directory and what a run cut short left in it. */
static void remove_tmpdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

int bytes_compare_run(const struct bytes_compare_opts *o)
{
    struct cmp_ctx c = {0};
    c.json = o->json;
    c.has_link = o->link.type != EDHOC_NETACCT_LINK_NONE;
    c.has_air = c.has_link && o->link.type != EDHOC_NETACCT_LINK_MTU;
    c.link = o->link;
    c.radio = cli_net_radio(&o->link, &o->radio, o->radio_set);
    c.deadline_ns = now_ns() + (uint64_t)o->timeout_ms * 1000000u;
    const char *tmp = getenv("TMPDIR");
    snprintf(c.tmpdir, sizeof c.tmpdir, "%s/edhoc-compare-XXXXXX",
             tmp && *tmp && strlen(tmp) < 30 ? tmp : "/tmp");
    if (!mkdtemp(c.tmpdir)) {
        fprintf(stderr, "edhoc-cli bytes: cannot create a temporary directory: %s\n",
                strerror(errno));
        return CLI_EXIT_INTERNAL;
    }
    /* The children's exit must not stop this process; a closed pipe is
     * seen as an error instead of a signal. */
    signal(SIGPIPE, SIG_IGN);
    /* Ctrl-C or SIGTERM: stop the children, remove the temporary files and
     * print the runs that completed (issue 14, item 9). */
    cli_interrupt_catch();

    struct cmp_run *runs = calloc(CMP_MAX_RUNS, sizeof *runs);
    if (!runs) {
        remove_tmpdir(c.tmpdir);
        fprintf(stderr, "edhoc-cli bytes: out of memory\n");
        return CLI_EXIT_INTERNAL;
    }
    static const struct {
        const char *mode, *key, *id_cred, *config;
        int method;
        long published;
    } edhoc_modes[] = {
        {"x5chain", "x5chain", "x5chain",
         "method 0 (signatures), suite 2, ID_CRED_I/R x5chain (293-byte P-256 certificates "
         "by value), C_I/C_R 1 byte",
         0, PUBLISHED_X5CHAIN},
        {"x5t", "x5t", "x5t",
         "method 0 (signatures), suite 2, ID_CRED_I/R x5t (the same certificates by "
         "reference), C_I/C_R 1 byte",
         0, PUBLISHED_BY_REF},
        {"static DH (kid)", "static_dh_kid", "kid",
         "method 3 (static DH), suite 2, CCS P-256 static DH keys (the built-in RFC 9529 "
         "trace 2 ones) named by kid, C_I/C_R 1 byte",
         3, PUBLISHED_STATIC_DH},
        /* The smallest reference to a certificate: a kid naming it (RFC
         * 9528 Section 3.5.3: a kid may reference any credential), sent
         * as a one-byte int, where x5t takes a hash. */
        {"x5 by kid", "x5_kid", "kid",
         "method 0 (signatures), suite 2, ID_CRED_I/R kid naming the same certificates "
         "(one byte each), C_I/C_R 1 byte",
         0, -1},
    };
    static const struct {
        const char *mode, *key, *config;
        enum edhoc_dtls_mode m;
    } dtls_modes[] = {
        {"X.509", "x509",
         "mutual authentication with the same 293-byte certificates, the "
         "demo CA as trust anchor (OpenSSL sends the chain it can build)",
         EDHOC_DTLS_MODE_X509},
        {"RPK", "rpk", "raw public keys (the same P-256 keys)", EDHOC_DTLS_MODE_RPK},
        {"PSK", "psk", "16-byte PSK, identity \"" EDHOC_DTLS_PSK_IDENTITY "\", no hint",
         EDHOC_DTLS_MODE_PSK},
    };
    size_t n_edhoc = sizeof edhoc_modes / sizeof edhoc_modes[0];
    size_t n_all = n_edhoc + sizeof dtls_modes / sizeof dtls_modes[0];
    struct cli_progress pr;
    cli_progress_begin(&pr, "bytes --compare", o->verbose, o->quiet);
    size_t n = 0;
    for (size_t i = 0; i < n_all && !cli_interrupted(); i++) {
        struct cmp_run *r = &runs[n];
        if (i < n_edhoc) {
            r->protocol = "EDHOC";
            r->mode = edhoc_modes[i].mode;
            r->key = edhoc_modes[i].key;
            snprintf(r->config, sizeof r->config, "%s", edhoc_modes[i].config);
            r->method = edhoc_modes[i].method;
            r->suite = 2;
            r->published = edhoc_modes[i].published;
        } else {
            size_t k = i - n_edhoc;
            r->protocol = "DTLS 1.2";
            r->mode = dtls_modes[k].mode;
            r->key = dtls_modes[k].key;
            snprintf(r->config, sizeof r->config, "%s", dtls_modes[k].config);
            r->published = -1;
        }
        cli_progress_update(&pr, "run %zu of %zu: %s %s", i + 1, n_all, r->protocol, r->mode);
        if (i < n_edhoc)
            run_edhoc(&c, r, edhoc_modes[i].method, edhoc_modes[i].id_cred);
        else
            run_dtls(&c, r, dtls_modes[i - n_edhoc].m);
        /* A run the signal cut short measured nothing: left out. */
        if (r->status == CMP_INTERRUPTED || cli_interrupted())
            break;
        n++;
    }
    cli_progress_end(&pr);
    remove_tmpdir(c.tmpdir);

    bool partial = cli_interrupted() != 0;
    if (c.json)
        print_json(&c, runs, n, partial);
    else
        print_text(&c, runs, n, partial);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n; i++)
        if (runs[i].status == CMP_FAILED) {
            fprintf(stderr, "edhoc-cli bytes: %s %s failed: %s\n", runs[i].protocol, runs[i].mode,
                    runs[i].detail);
            rc = CLI_EXIT_FAILURE;
        }
    free(runs);
    return partial ? cli_interrupt_exit_code() : rc;
}
