/*
 * edhoc-cli responder: the CoAP daemon. Serves /.well-known/edhoc to many
 * initiators at once and the OSCORE-protected resources to every peer
 * with a context (EDHOC-established or static), keeping contexts and
 * sequence-number marks in a state database.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "commands.h"
#include "daemon.h"
#include "edhoc/amplification.h"
#include "edhoc/blockwise.h"
#include "edhoc/capture.h"
#include "edhoc/datagram_guard.h"
#include "edhoc/coap_msg.h"
#include "edhoc/netacct.h"
#include "net_report.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "interop_log.h"
#include "context_lock.h"
#include "oscore_seq.h"
#include "responder_workers.h"
#include "state_stats.h"
#include "util.h"
#include "demo_creds.h"

_Static_assert((int)CLI_WORKERS_EXIT_OK == (int)CLI_EXIT_OK &&
                   (int)CLI_WORKERS_EXIT_FAILURE == (int)CLI_EXIT_FAILURE &&
                   (int)CLI_WORKERS_EXIT_USAGE == (int)CLI_EXIT_USAGE &&
                   (int)CLI_WORKERS_EXIT_INPUT == (int)CLI_EXIT_INPUT &&
                   (int)CLI_WORKERS_EXIT_INTERNAL == (int)CLI_EXIT_INTERNAL,
               "the supervisor's exit codes are the program's");

#define MAX_LISTEN 8
#define MAX_CREDS 8
#define MAX_STATIC 16
#define N_SUITE_IDS 9

static const int known_suites[N_SUITE_IDS] = {0, 1, 2, 3, 4, 5, 6, 24, 25};

/* One usable configuration: a credential for a method, with the suites it
 * serves. */
struct ident {
    bool ready;
    struct cli_side side;
    int suites[EDHOC_MAX_SUITES];
    /* The options side's configuration was set up from: its EAD items and
     * EAD callback context point into them, so they live as long as it. */
    struct cli_edhoc_opts opts;
};

struct responder {
    struct cli_edhoc_opts o;
    const char *cred_paths[MAX_CREDS], *key_paths[MAX_CREDS];
    size_t n_cred_paths, n_key_paths;
    /* Loaded credentials (explicit mode). */
    struct edhoc_cred *creds;
    struct edhoc_key *keys;
    size_t n_creds;
    struct edhoc_cred_store *trust;
    bool demo;
    /* explicit: [cred][method]; demo: [method][suite index] */
    struct ident *idents;
    size_t n_idents;
    int supported[EDHOC_MAX_SUITES];
    size_t n_supported;
    /* Per method, every supported suite some credential serves: what each
     * configuration of that method accepts and what error code 2 lists
     * (RFC 9528 Section 6.3), whichever credential answers. Worked out
     * on the first message_1 of the method after a (re)load. */
    int method_suites[4][EDHOC_MAX_SUITES];
    size_t n_method_suites[4];
    bool method_suites_known[4];
    struct interop_log *ilog; /* --interop-log: every configuration traces into it */
};

static volatile sig_atomic_t stop_signal, reload_signal, stats_signal;

static void on_signal(int sig)
{
    if (sig == SIGHUP)
        reload_signal = 1;
    else if (sig == SIGUSR1)
        stats_signal = 1;
    else
        stop_signal = sig;
}

/* SIGTERM/SIGINT stop, SIGHUP reloads, SIGUSR1 logs the counts (in the
 * supervisor of --workers, each is passed on to the workers). */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- Bytes per layer of each handshake, and --pcap ----
 *
 * Every datagram is charged to its peer (address and port). The server
 * logs a handshake while it handles the last request of it, before the
 * response exists, so handshake lines are held until the next datagram is
 * about to be sent (the transport's presend hook), and printed then, with
 * the peer's datagrams: from its A.2 message_1 (a POST whose payload
 * starts with CBOR true) or, in the bare framing, from the previous
 * handshake line of that peer, to that response (message_4 or the 2.04;
 * its first block when block-wise) included. Printing before the send
 * keeps the log ahead of what the peer sees. Lines without a response
 * (timeouts, a bare message_3 left unanswered) are printed when the
 * transport returns, with the datagrams so far. */

#define ACCT_PEERS 256
#define ACCT_LINES 32

struct peer_acct {
    bool used;
    struct sockaddr_storage addr;
    uint64_t last_use;
    struct edhoc_netacct_total tot;
    bool ipv6;
    bool absorb_next_sent; /* already counted on a printed line */
};

struct held_line {
    int level;
    struct sockaddr_storage peer;
    bool peer_known;
    char text[600];
};

struct responder_acct {
    struct edhoc_netacct_link link;
    struct edhoc_capture *cap;
    unsigned capture_errors;
    struct peer_acct peers[ACCT_PEERS];
    uint64_t uses;
    struct held_line held[ACCT_LINES];
    size_t n_held;
    struct interop_log *ilog;
    /* Handshake lines are printed at this log level (notice: failures),
     * so the bytes per peer they report are counted. */
    bool count_bytes;
};

/* The table is set-associative: a peer's address picks one set of
 * ACCT_WAYS entries, so a datagram costs a look at four entries rather
 * than a scan of all of them (that scan showed in profiles under load). */
#define ACCT_WAYS 4

static size_t acct_set_of(const struct sockaddr_storage *k)
{
    const uint8_t *b = (const uint8_t *)k;
    size_t n = k->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return (size_t)(h % (ACCT_PEERS / ACCT_WAYS)) * ACCT_WAYS;
}

/* The peer's entry; a new one replaces the least recently used of its set. */
static struct peer_acct *peer_acct_get(struct responder_acct *a, const struct sockaddr_storage *k,
                                       bool create)
{
    size_t first = acct_set_of(k);
    struct peer_acct *lru = &a->peers[first];
    for (size_t i = first; i < first + ACCT_WAYS; i++) {
        struct peer_acct *p = &a->peers[i];
        if (p->used && cli_addr_equal(&p->addr, k)) {
            p->last_use = ++a->uses;
            return p;
        }
        if (!p->used || (lru->used && p->last_use < lru->last_use))
            lru = p;
    }
    if (!create)
        return NULL;
    memset(lru, 0, sizeof *lru);
    lru->used = true;
    lru->addr = *k;
    lru->last_use = ++a->uses;
    return lru;
}

static bool is_a2_message_1(const uint8_t *payload, size_t len)
{
    struct coap_msg m;
    return edhoc_coap_msg_parse(payload, len, &m) == 0 && m.code == COAP_CODE_POST &&
           m.payload_len > 0 && m.payload[0] == 0xf5;
}

static void datagram_layers(struct responder_acct *a, bool sent, const struct sockaddr *local,
                            const struct sockaddr_storage *k, size_t len,
                            struct edhoc_netacct_layers *l)
{
    struct sockaddr_storage lk;
    cli_addr_normalize(local, &lk);
    uint16_t lport = lk.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&lk)->sin_port)
                                             : ntohs(((struct sockaddr_in6 *)&lk)->sin6_port);
    uint16_t pport = k->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)k)->sin_port)
                                             : ntohs(((const struct sockaddr_in6 *)k)->sin6_port);
    cli_net_layers(&a->link, len, k->ss_family == AF_INET6, sent ? lport : pport,
                   sent ? pport : lport, l);
}

static void on_datagram(void *user, bool sent, const struct sockaddr *local,
                        const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    struct responder_acct *a = user;
    if (a->cap && edhoc_capture_datagram_dir(a->cap, sent, local, peer, payload, len, NULL))
        a->capture_errors++;
    if (a->ilog)
        interop_log_datagram(a->ilog, sent, local, peer, payload, len);
    if (!a->count_bytes)
        return;
    struct sockaddr_storage k;
    cli_addr_normalize(peer, &k);
    if (k.ss_family != AF_INET && k.ss_family != AF_INET6)
        return;
    struct peer_acct *p = peer_acct_get(a, &k, true);
    if (sent && p->absorb_next_sent) {
        p->absorb_next_sent = false;
        return;
    }
    if (!sent && is_a2_message_1(payload, len))
        edhoc_netacct_total_clear(&p->tot);
    struct edhoc_netacct_layers l;
    datagram_layers(a, sent, local, &k, len, &l);
    p->ipv6 = k.ss_family == AF_INET6;
    edhoc_netacct_total_add(&p->tot, &l, 0, true);
}

static void held_print(struct responder_acct *a, size_t i, struct peer_acct *p)
{
    struct held_line *h = &a->held[i];
    char line[900];
    if (p) {
        int n = snprintf(line, sizeof line,
                         "%s; datagrams=%u coap_bytes=%zu udp_bytes=%zu ip_bytes=%zu ip=%s",
                         h->text, p->tot.datagrams, p->tot.coap, p->tot.udp, p->tot.ip,
                         p->ipv6 ? "IPv6" : "IPv4");
        if (a->link.type != EDHOC_NETACCT_LINK_NONE && n > 0 && (size_t)n < sizeof line)
            snprintf(line + n, sizeof line - (size_t)n, " frames=%u link_bytes=%zu",
                     p->tot.frames, p->tot.link);
        edhoc_netacct_total_clear(&p->tot);
    } else {
        snprintf(line, sizeof line, "%s", h->text);
    }
    cli_log_line(NULL, h->level, line);
}

/* A datagram about to leave: every held line is printed now, so the log
 * stays ahead of what any peer sees; the lines of its peer count it. */
static void on_presend(void *user, bool sent, const struct sockaddr *local,
                       const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    struct responder_acct *a = user;
    (void)payload;
    struct sockaddr_storage k;
    cli_addr_normalize(peer, &k);
    for (size_t i = 0; i < a->n_held; i++) {
        struct held_line *h = &a->held[i];
        struct peer_acct *p = h->peer_known ? peer_acct_get(a, &h->peer, false) : NULL;
        if (p && cli_addr_equal(&h->peer, &k) && !p->absorb_next_sent) {
            struct edhoc_netacct_layers l;
            datagram_layers(a, sent, local, &k, len, &l);
            p->ipv6 = k.ss_family == AF_INET6;
            edhoc_netacct_total_add(&p->tot, &l, 0, true);
            p->absorb_next_sent = true;
        }
        held_print(a, i, p);
    }
    a->n_held = 0;
}

static void held_flush(struct responder_acct *a)
{
    for (size_t i = 0; i < a->n_held; i++) {
        struct held_line *h = &a->held[i];
        held_print(a, i, h->peer_known ? peer_acct_get(a, &h->peer, false) : NULL);
    }
    a->n_held = 0;
    if (a->cap)
        edhoc_capture_flush(a->cap);
}

static void responder_log(void *user, int level, const char *line)
{
    struct responder_acct *a = user;
    static const char tag[] = "handshake peer=";
    if (strncmp(line, tag, sizeof tag - 1) != 0) {
        cli_log_line(NULL, level, line);
        return;
    }
    if (a->n_held == ACCT_LINES)
        held_flush(a);
    struct held_line *h = &a->held[a->n_held++];
    h->level = level;
    snprintf(h->text, sizeof h->text, "%s", line);
    char peer[100];
    size_t n = strcspn(line + sizeof tag - 1, " ");
    snprintf(peer, sizeof peer, "%.*s", (int)(n < sizeof peer ? n : sizeof peer - 1),
             line + sizeof tag - 1);
    struct sockaddr_storage ss;
    h->peer_known = edhoc_capture_endpoint_parse(peer, &ss) == 0;
    if (h->peer_known)
        cli_addr_normalize((const struct sockaddr *)&ss, &h->peer);
}

static int suite_index(int suite)
{
    for (int i = 0; i < N_SUITE_IDS; i++) {
        if (known_suites[i] == suite)
            return i;
    }
    return -1;
}

static bool supported(const struct responder *r, int suite)
{
    for (size_t i = 0; i < r->n_supported; i++) {
        if (r->supported[i] == suite)
            return true;
    }
    return false;
}

static void idents_free(struct responder *r)
{
    for (size_t i = 0; i < r->n_idents; i++) {
        if (r->idents[i].ready) {
            /* The shared trust store is not the identity's to free. */
            r->idents[i].side.store = NULL;
            cli_edhoc_side_free(&r->idents[i].side);
        }
    }
    free(r->idents);
    r->idents = NULL;
    r->n_idents = 0;
}

/* The suites a credential can serve for method m, among the supported. */
static size_t fitting_suites(const struct responder *r, const struct edhoc_cred *cred, int m,
                             int *out)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_supported && n < EDHOC_MAX_SUITES; i++) {
        if (edhoc_cred_check_key_type(cred, m, false, r->supported[i]) == 0)
            out[n++] = r->supported[i];
    }
    return n;
}

static void ident_finish(struct responder *r, struct ident *id, int m)
{
    struct edhoc_config *cfg = &id->side.cfg;
    size_t n = fitting_suites(r, &id->side.cred, m, id->suites);
    if (r->method_suites_known[m]) {
        cfg->suites = r->method_suites[m];
        cfg->n_suites = r->n_method_suites[m];
    } else {
        /* Until method_suites() has run: only it hands out configurations. */
        cfg->suites = id->suites;
        cfg->n_suites = n;
    }
    cfg->accept_methods = 1u << m;
    cfg->method = m;
    cfg->tolerate = r->o.side[CLI_SIDE_R].tolerate;
    cfg->emulate = r->o.side[CLI_SIDE_R].emulate;
    if (r->ilog) {
        cfg->trace = interop_log_trace;
        cfg->trace_ctx = r->ilog;
    }
    id->ready = n > 0;
}

/* Demo mode: the built-in credential cli_edhoc_side_setup picks for the
 * responder of this method and suite. */
static struct ident *demo_ident(struct responder *r, int m, int suite)
{
    int si = suite_index(suite);
    if (si < 0)
        return NULL;
    struct ident *id = &r->idents[(size_t)m * N_SUITE_IDS + (size_t)si];
    if (id->ready)
        return id;
    id->opts = r->o;
    struct cli_edhoc_opts *o = &id->opts;
    o->method = m;
    o->suites[0] = suite;
    o->n_suites = 1;
    o->n_suites_r = 0;
    /* Quiet: a suite without a built-in credential is simply not served. */
    int saved = dup(2), devnull = -1;
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        devnull = fileno(null);
        fflush(stderr);
        dup2(devnull, 2);
    }
    int rc = cli_edhoc_side_setup(o, CLI_SIDE_R, &id->side);
    if (rc && o->side[CLI_SIDE_R].id_cred_type) {
        /* --id-cred names a type this credential cannot have (kccs of a
         * certificate, x5t of a CCS): it keeps its default. */
        cli_edhoc_side_free(&id->side);
        o->side[CLI_SIDE_R].id_cred_type = 0;
        rc = cli_edhoc_side_setup(o, CLI_SIDE_R, &id->side);
    }
    if (null) {
        fflush(stderr);
        dup2(saved, 2);
        fclose(null);
    }
    if (saved >= 0)
        close(saved);
    if (rc) {
        cli_edhoc_side_free(&id->side);
        memset(&id->side, 0, sizeof id->side);
        return NULL;
    }
    /* load_identities built r->trust as cli_edhoc_side_setup builds each
     * side's (the --trust files, else the demo set): every demo
     * configuration of every method is set up once a message_1 of the
     * method comes (method_suites), so one copy serves them all rather
     * than about 200 KB each. */
    free(id->side.store);
    id->side.store = r->trust;
    ident_finish(r, id, m);
    if (!id->ready) {
        id->side.store = NULL;
        cli_edhoc_side_free(&id->side);
        memset(&id->side, 0, sizeof id->side);
        return NULL;
    }
    return id;
}

static struct ident *explicit_ident(struct responder *r, size_t c, int m)
{
    struct ident *id = &r->idents[c * 4 + (size_t)m];
    if (id->ready)
        return id;
    struct cli_side *side = &id->side;
    memset(side, 0, sizeof *side);
    side->role = CLI_SIDE_R;
    edhoc_cred_copy(&side->cred, &r->creds[c]);
    side->key = r->keys[c];
    int idt = r->o.side[CLI_SIDE_R].id_cred_type;
    if (idt == 0)
        idt = side->cred.type == EDHOC_CRED_X509 ? EDHOC_ID_CRED_X5T : EDHOC_ID_CRED_KID;
    if (edhoc_id_cred_encode(&side->cred, (enum edhoc_id_cred_type)idt, 0, side->id_cred,
                             sizeof side->id_cred, &side->id_cred_len)) {
        idt = side->cred.type == EDHOC_CRED_X509 ? EDHOC_ID_CRED_X5T : EDHOC_ID_CRED_KID;
        if (edhoc_id_cred_encode(&side->cred, (enum edhoc_id_cred_type)idt, 0, side->id_cred,
                                 sizeof side->id_cred, &side->id_cred_len))
            return NULL;
    }
    side->store = r->trust;
    side->cred_origin = r->cred_paths[c];
    struct edhoc_config *cfg = &side->cfg;
    cfg->ops = edhoc_crypto_default();
    cfg->cred = &side->cred;
    cfg->key = &side->key;
    cfg->id_cred = side->id_cred;
    cfg->id_cred_len = side->id_cred_len;
    for (int x = 2; x <= 4; x += 2) {
        if (r->o.n_ead[x]) {
            cfg->ead[x] = r->o.ead[x];
            cfg->n_ead[x] = r->o.n_ead[x];
        }
    }
    cfg->ead_receive = cli_edhoc_ead_receive;
    cfg->ead_ctx = &r->o;
    ident_finish(r, id, m);
    return id->ready ? id : NULL;
}

/* Whether some credential serves suite for method m (building its
 * configuration). */
static bool suite_served(struct responder *r, int m, int suite)
{
    if (r->demo)
        return demo_ident(r, m, suite) != NULL;
    for (size_t c = 0; c < r->n_creds; c++) {
        if (edhoc_cred_check_key_type(&r->creds[c], m, false, suite) == 0 &&
            explicit_ident(r, c, m))
            return true;
    }
    return false;
}

/* Every configuration of method m accepts the suites of method_suites[m],
 * not only those of its own credential: the core accepts a message_1
 * only when its selected suite is the first of SUITES_I in that set
 * (RFC 9528 Section 5.2.3), and answers error code 2 with that set when
 * SUITES_I has none of it (Section 6.3: "it SHOULD include all its
 * supported cipher suites"). With one credential's suites, a message_1
 * preferring a suite another credential serves was accepted with a less
 * preferred one, and SUITES_R named one credential's suites. */
static void method_suites(struct responder *r, int m)
{
    if (r->method_suites_known[m])
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->n_supported; i++) {
        if (suite_served(r, m, r->supported[i]))
            r->method_suites[m][n++] = r->supported[i];
    }
    r->n_method_suites[m] = n;
    r->method_suites_known[m] = true;
    for (size_t i = 0; i < r->n_idents; i++) {
        struct ident *id = &r->idents[i];
        if (id->ready && id->side.cfg.method == m) {
            id->side.cfg.suites = r->method_suites[m];
            id->side.cfg.n_suites = n;
        }
    }
}

static const struct edhoc_config *select_config(void *user, int m, int suite,
                                                edhoc_cred_resolver *resolve, void **resolve_ctx)
{
    struct responder *r = user;
    if (m < 0 || m > 3 || (r->o.accept_methods && !(r->o.accept_methods & (1u << m))))
        return NULL;
    method_suites(r, m);
    struct ident *id = NULL;
    if (r->demo) {
        if (supported(r, suite))
            id = demo_ident(r, m, suite);
        for (size_t i = 0; !id && i < r->n_supported; i++)
            id = demo_ident(r, m, r->supported[i]);
    } else {
        for (size_t c = 0; c < r->n_creds && !id; c++) {
            if (supported(r, suite) && edhoc_cred_check_key_type(&r->creds[c], m, false, suite) == 0)
                id = explicit_ident(r, c, m);
        }
        /* No credential for that suite: one that fits the method answers,
         * so the initiator learns our suites (error code 2). */
        for (size_t c = 0; c < r->n_creds && !id; c++)
            id = explicit_ident(r, c, m);
    }
    if (!id)
        return NULL;
    *resolve = cli_edhoc_resolve;
    *resolve_ctx = &id->side;
    return &id->side.cfg;
}

/* Load (or reload) credentials and trust. Returns 0 or a CLI exit code. */
static int load_identities(struct responder *r)
{
    char why[512] = "";
    struct edhoc_cred *creds = NULL;
    struct edhoc_key *keys = NULL;
    struct edhoc_cred_store *trust = calloc(1, sizeof *trust);
    if (!trust)
        return CLI_EXIT_INTERNAL;
    edhoc_cred_store_init(trust);
    size_t n = r->n_cred_paths;
    if (n) {
        creds = calloc(n, sizeof *creds);
        keys = calloc(n, sizeof *keys);
        if (!creds || !keys)
            goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = edhoc_cred_load_file(&creds[i], r->cred_paths[i], why, sizeof why);
        if (!rc)
            rc = edhoc_key_load_file(&keys[i], r->key_paths[i], creds[i].curve, why, sizeof why);
        if (!rc && edhoc_key_check_cred(&keys[i], &creds[i])) {
            snprintf(why, sizeof why, "key %s does not belong to credential %s", r->key_paths[i],
                     r->cred_paths[i]);
            rc = -1;
        }
        /* --kid names the one credential (a certificate included): the
         * responder's ID_CRED_R can then be a kid (RFC 9528 Section 3.5.3). */
        if (!rc && r->o.side[CLI_SIDE_R].kid_len)
            rc = edhoc_cred_set_kid(&creds[i], r->o.side[CLI_SIDE_R].kid,
                                    r->o.side[CLI_SIDE_R].kid_len);
        if (rc) {
            cli_log(LOG_ERR, "credential: %s", why[0] ? why : edhoc_cred_strerror(rc));
            goto fail;
        }
    }
    for (size_t i = 0; i < r->o.n_trust; i++) {
        int rc = edhoc_cred_store_add_file(trust, r->o.trust_paths[i], why, sizeof why);
        if (rc) {
            cli_log(LOG_ERR, "--trust: %s", why[0] ? why : edhoc_cred_strerror(rc));
            goto fail;
        }
    }
    if (r->o.n_trust == 0 && n == 0)
        edhoc_demo_trust(trust);

    /* Swap in. */
    idents_free(r);
    if (r->keys)
        edhoc_wipe(r->keys, r->n_creds * sizeof *r->keys);
    free(r->creds);
    free(r->keys);
    free(r->trust);
    r->creds = creds;
    r->keys = keys;
    r->n_creds = n;
    r->trust = trust;
    r->demo = n == 0;
    r->n_idents = r->demo ? 4 * N_SUITE_IDS : 4 * n;
    memset(r->method_suites_known, 0, sizeof r->method_suites_known);
    r->idents = calloc(r->n_idents, sizeof *r->idents);
    if (!r->idents)
        return CLI_EXIT_INTERNAL;
    return 0;
oom:
    cli_log(LOG_ERR, "out of memory");
fail:
    if (keys)
        edhoc_wipe(keys, n * sizeof *keys);
    free(creds);
    free(keys);
    free(trust);
    return CLI_EXIT_INPUT;
}

/* Notifications are confirmable, so that an observer that went away is
 * noticed (RFC 7641 Section 4.5). Among several workers the observer's
 * empty ACK or Reset finds the notifying worker by its Message ID
 * (edhoc/reuseport.h). */
static int send_notification(void *user, struct edhoc_transport_peer *peer, const uint8_t *msg,
                             size_t len)
{
    return edhoc_transport_peer_send(user, peer, msg, len, true);
}

/* ---- The command line ---- */

enum {
    OPT_LISTEN = 1,
    OPT_FRAMING,
    OPT_C_R_FORM,
    OPT_ECHO,
    OPT_AMPLIFICATION_FACTOR,
    OPT_PRESSURE_RATE,
    OPT_ALLOW_UNPROTECTED,
    OPT_DEMO,
    OPT_STATE_DIR,
    OPT_OSCORE_CONTEXT,
    OPT_MAX_PENDING,
    OPT_HANDSHAKE_TIMEOUT,
    OPT_MAX_CONTEXTS,
    OPT_CONTEXT_LIFETIME,
    OPT_BLOCK_SIZE,
    OPT_MAX_BODY,
    OPT_MAX_SESSIONS,
    OPT_WORKERS,
    OPT_TRANSFER_TIMEOUT,
    OPT_INTEROP_LOG,
    OPT_INTEROP_LOG_MAX,
    OPT_READY_FILE,
    OPT_DAEMON,
    OPT_PIDFILE,
    OPT_SYSLOG,
};

static const struct cli_opt serve_opts[] = {
    {OPT_LISTEN, "listen", "HOST[:PORT]",
     "UDP address to serve (repeatable, at most 8): a host name, an IPv4\n"
     "address or an IPv6 address in brackets, as in a URI (localhost:5683,\n"
     "[::1]:0); a name is resolved once, to its first address; port 0 picks a\n"
     "free port, no port means 5683 (default [::]:5683)"},
    {OPT_FRAMING, "framing", "a2|bare|both",
     "the EDHOC framings accepted (default both); with one, behave as a\n"
     "device that knows only that one"},
    {OPT_C_R_FORM, "c-r-form", "int|bstr|any",
     "which one-byte C_R to choose (default int: 0x00-0x17, 0x20-0x37); bstr\n"
     "avoids the int form that some devices encode wrongly in context_2\n"
     "(RFC 9528 3.3.2)"},
    {OPT_ECHO, "echo", NULL,
     "answer a message_1 without a valid Echo option with 4.01 + Echo\n"
     "(RFC 9175): reachability first, crypto later"},
    {OPT_AMPLIFICATION_FACTOR, "amplification-factor", "N",
     "send an address not yet verified (by an Echo round trip or an OSCORE\n"
     "request) at most N times the UDP payload bytes received from it; an\n"
     "answer beyond that becomes a 4.01 with Echo (RFC 9175 2.4, RFC 9528\n"
     "9.7). 0: no limit, for lab use (default 3, 0..1000)"},
    {OPT_PRESSURE_RATE, "pressure-rate", "N",
     "under pressure -- more than N message_1 a second from unverified\n"
     "addresses, or --max-pending handshakes in progress -- answer every\n"
     "message_1 of an unverified address with 4.01 + Echo before any crypto\n"
     "(RFC 9528 9.7), whatever the credential type; addresses verified by\n"
     "Echo alone then start at most N handshakes a second between them (5.03\n"
     "beyond). 0: off (default 500, 0..10000000; needs the amplification\n"
     "limit)"},
    {OPT_ALLOW_UNPROTECTED, "allow-unprotected", NULL,
     "also serve the resources to requests without OSCORE (CoAP-only tests,\n"
     "baselines); default: 4.01"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt demo_opts[] = {
    {OPT_DEMO, "demo", NULL,
     "serve the built-in demo credentials, for a test: their private keys are\n"
     "published, so they authenticate nobody (refused with --cred; without\n"
     "--trust the demo initiators are accepted). Without --demo the responder\n"
     "needs --cred, --key and --trust"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt state_opts[] = {
    {OPT_STATE_DIR, "state-dir", "DIR|none",
     "keep contexts and sequence-number marks in DIR/" EDHOC_STATE_FILE " (default\n"
     "$STATE_DIRECTORY, else $XDG_STATE_HOME/edhoc-cli, else\n"
     "~/.local/state/edhoc-cli; created 0700, one responder at a time); none:\n"
     "nothing survives a restart, which only EDHOC-derived contexts can afford:\n"
     "--oscore-context is then refused"},
    {OPT_OSCORE_CONTEXT, "oscore-context", "FILE",
     "a static OSCORE context (libcoap format; repeatable, at most 16); with\n"
     "rfc8613_b_2,bool,true it runs RFC 8613 Appendix B.2 where Echo would go"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt limit_opts[] = {
    {OPT_MAX_PENDING, "max-pending", "N",
     "handshakes in progress at once (1..65536, default 256); a new one takes\n"
     "the place of the oldest of the lowest-ranked endpoint (unverified, then\n"
     "verified by Echo alone, then authenticated), never of one ranked above\n"
     "it (5.03 then)"},
    {OPT_HANDSHAKE_TIMEOUT, "handshake-timeout", "SECONDS",
     "drop a handshake without message_3 after SECONDS (1..86400, default 60;\n"
     "counted in whole seconds, a fraction rounds up)"},
    {OPT_MAX_CONTEXTS, "max-contexts", "N",
     "OSCORE contexts established by EDHOC kept at once (1..100000000,\n"
     "default 1000000): the least recently used (by its last verified request)\n"
     "gives way to a new one; its peer then gets 4.01 and runs EDHOC again.\n"
     "The state directory keeps the same ones. Static --oscore-context\n"
     "contexts are never evicted and not counted"},
    {OPT_CONTEXT_LIFETIME, "context-lifetime", "SECONDS",
     "drop an EDHOC-established context, and its stored row, after SECONDS\n"
     "without a verified request (decimals allowed, 0.1..315360000, default\n"
     "604800: a week)"},
    {OPT_BLOCK_SIZE, "block-size", "N",
     "block-wise transfer above N bytes (16..1024, a power of two, default\n"
     "1024): outer for EDHOC messages, inner (RFC 8613 4.1.3.4.1) for OSCORE\n"
     "ones"},
    {OPT_MAX_BODY, "max-body", "N",
     "largest body reassembled or served, e.g. by /echo and /bytes?n=N\n"
     "(16..1048576, default 65536); above it: 4.13"},
    {OPT_MAX_SESSIONS, "max-sessions", "N",
     "CoAP sessions (source address and port) kept idle at once (1..1000000,\n"
     "default 512; idle ones go after 30 s; libcoap walks every session on\n"
     "each datagram, so a flood from many sources costs O(N) per datagram)"},
    {OPT_WORKERS, "workers", "N",
     "serve with N processes sharing the listen ports (1..64; default: the\n"
     "CPUs this process may run on; 1 with --pcap, --interop-log or --c-r).\n"
     "Each OSCORE request is steered to the worker owning its context, the\n"
     "rest by address; one process writes the state for all"},
    {OPT_TRANSFER_TIMEOUT, "transfer-timeout", "SECONDS",
     "drop a block-wise transfer or a kept response after SECONDS without\n"
     "progress (decimals allowed, 0.1..86400, default 247, EXCHANGE_LIFETIME)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt interop_opts[] = {
    {OPT_INTEROP_LOG, "interop-log", "DIR",
     "record every incoming handshake for `edhoc-cli interop --report DIR`:\n"
     "DIR/handshakes.jsonl (one JSON line each, docs/json/interop-log.schema.json),\n"
     "DIR/<id>.txt (trace, holds session secrets) and DIR/<id>.pcap; DIR is\n"
     "created 0700, files 0600"},
    {OPT_INTEROP_LOG_MAX, "interop-log-max", "N",
     "handshakes with trace and pcap files (default 10000; later ones get the\n"
     "jsonl line only)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt process_opts[] = {
    {OPT_READY_FILE, "ready-file", "FILE", "write the bound ports (one per line) once serving"},
    {OPT_DAEMON, "daemon", NULL, "detach from the terminal (not needed under systemd)"},
    {OPT_PIDFILE, "pidfile", "FILE", "write the process id (removed on a clean exit)"},
    {OPT_SYSLOG, "syslog", NULL, "log to syslog (facility daemon) instead of standard error"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group responder_groups[] = {
    {"Serving", serve_opts},
    {"EDHOC (credentials, trust, handshake)", cli_edhoc_opts_responder},
    {"Demo credentials", demo_opts},
    {"State and static OSCORE contexts", state_opts},
    {"Limits", limit_opts},
    {"Interop log", interop_opts},
    {"Process", process_opts},
    {"Bytes per layer (in the per-handshake log line)", cli_net_opts_link},
    {NULL, NULL},
};

static const struct cli_opt_renamed responder_renamed[] = {
    {"method", "--methods LIST (the methods accepted, e.g. --methods 0,3)"},
    {"cred-r", "--cred FILE (the responder's own options have no -r suffix)"},
    {"key-r", "--key FILE (the responder's own options have no -r suffix)"},
    {"id-cred-r", "--id-cred TYPE (the responder's own options have no -r suffix)"},
    {"suites-r", "--suites LIST (the responder's own options have no -r suffix)"},
    {"tolerate-r", "--tolerate LIST (the responder's own options have no -r suffix)"},
    {"emulate-r", "--emulate LIST (the responder's own options have no -r suffix)"},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_responder = {
    .name = "responder",
    .synopsis = "[OPTIONS]",
    .description =
        "Serves EDHOC (RFC 9528, POST /.well-known/edhoc, Appendix A.2 framing, bare framing\n"
        "of older devices, the RFC 9668 combined request) and the OSCORE-protected resources\n"
        "/.well-known/core, /echo (POST), /time, /bytes?n=N and /counter (observable).\n"
        "It needs its credentials and the peers it accepts: --cred FILE --key FILE (one pair\n"
        "per identity) and --trust FILE; --demo serves the built-in demo credentials instead,\n"
        "for tests. Logging: one line per handshake, with its datagrams and bytes per layer;\n"
        "-q: warnings and errors only; -v, -vv: more.",
    .groups = responder_groups,
    .renamed = responder_renamed,
    .epilogue =
        "Signals: SIGTERM/SIGINT store state and exit 0; SIGHUP reloads credentials and trust\n"
        "(established OSCORE contexts stay, handshakes in progress are dropped); SIGUSR1\n"
        "logs the counts (contexts, evicted, expired, handshakes in progress, RFC 8613\n"
        "Appendix B.2 runs; the amplification limit's answers held back, Echo\n"
        "challenges, endpoints verified).\n"
        "Exit codes: 0 stopped by a signal; 2 bad command line (also: no credentials without\n"
        "--demo, --cred without --trust, a --listen host that does not resolve); 3 unusable\n"
        "credential, trust or state file (a corrupt or foreign state database is refused,\n"
        "never overwritten); 1 cannot listen; 10 internal error.",
};

/* The state the limits govern: contexts held against --max-contexts and
 * those that went, handshakes in progress (SIGUSR1, and at the stop). */
static void log_stats(const struct edhoc_server_stats *st, const char *when)
{
    cli_log(LOG_NOTICE,
            "%s: contexts=%zu (max %zu) contexts_evicted=%llu contexts_expired=%llu pending=%zu "
            "pending_evicted=%llu pending_expired=%llu handshakes_ok=%llu handshakes_failed=%llu "
            "oscore_requests=%llu oscore_errors=%llu b2_started=%llu b2_completed=%llu "
            "b2_refused=%llu",
            when, st->contexts, st->max_contexts, (unsigned long long)st->contexts_evicted,
            (unsigned long long)st->contexts_expired, st->pending,
            (unsigned long long)st->evicted, (unsigned long long)st->expired,
            (unsigned long long)st->handshakes_ok, (unsigned long long)st->handshakes_failed,
            (unsigned long long)st->oscore_requests, (unsigned long long)st->oscore_errors,
            (unsigned long long)st->b2_started, (unsigned long long)st->b2_completed,
            (unsigned long long)st->b2_refused);
}

/* --listen HOST[:PORT], the host as a URI gives it (RFC 3986 Section
 * 3.2.2): a name, an IPv4 address, or an IPv6 address in brackets; no port
 * is CoAP's 5683 (RFC 7252 Section 6.1). A name is resolved once, here, to
 * the first address getaddrinfo gives. out: the numeric ADDR:PORT or
 * [ADDR]:PORT the transport binds. Returns 0, or -1 with why. */
static int listen_resolve(const char *spec, char *out, size_t cap, char *why, size_t why_cap)
{
    char host[256];
    const char *port = NULL;
    size_t hl;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || (close[1] && close[1] != ':')) {
            snprintf(why, why_cap, "--listen %s: an IPv6 address goes in brackets, followed by "
                                   "an optional :PORT (e.g. [::1]:5683)", spec);
            return -1;
        }
        hl = (size_t)(close - spec - 1);
        if (hl >= sizeof host)
            hl = sizeof host - 1;
        memcpy(host, spec + 1, hl);
        host[hl] = '\0';
        if (close[1] == ':')
            port = close + 2;
    } else {
        const char *colon = strchr(spec, ':');
        if (colon && strchr(colon + 1, ':')) {
            snprintf(why, why_cap, "--listen %s: an IPv6 address goes in brackets, as in a URI "
                                   "(e.g. [%s] or [::1]:5683)", spec, spec);
            return -1;
        }
        hl = colon ? (size_t)(colon - spec) : strlen(spec);
        if (hl >= sizeof host)
            hl = sizeof host - 1;
        memcpy(host, spec, hl);
        host[hl] = '\0';
        if (colon)
            port = colon + 1;
    }
    if (!host[0]) {
        snprintf(why, why_cap, "--listen %s: no host (every address: [::] or 0.0.0.0)", spec);
        return -1;
    }
    long port_n = 5683;
    if (port) {
        char *end = NULL;
        errno = 0;
        port_n = strtol(port, &end, 10);
        if (errno || end == port || *end || port_n < 0 || port_n > 65535) {
            snprintf(why, why_cap, "--listen %s: the port must be 0..65535", spec);
            return -1;
        }
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_protocol = IPPROTO_UDP;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(why, why_cap, "--listen %s: cannot resolve '%s': %s", spec, host,
                 rc ? gai_strerror(rc) : "no address");
        if (res)
            freeaddrinfo(res);
        return -1;
    }
    char addr[NI_MAXHOST];
    rc = getnameinfo(res->ai_addr, res->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
    bool v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    if (rc != 0) {
        snprintf(why, why_cap, "--listen %s: %s", spec, gai_strerror(rc));
        return -1;
    }
    snprintf(out, cap, v6 ? "[%s]:%ld" : "%s:%ld", addr, port_n);
    return 0;
}

static int load_static_context(struct edhoc_server *srv, const char *path, size_t *served)
{
    struct oscore_config cfg;
    int rc = cli_oscore_context_load("responder", "--oscore-context", path, &cfg);
    if (rc)
        return rc;
    rc = edhoc_server_add_static_context(srv, &cfg, path);
    edhoc_wipe(&cfg, sizeof cfg);
    if (rc == EDHOC_SERVER_NOT_OWNED)
        return 0; /* another worker serves it */
    if (rc == 0)
        (*served)++;
    if (rc) {
        cli_log(LOG_ERR, "--oscore-context %s: %s", path,
                rc == OSCORE_ERR_INVALID ? "recipient ID already in use or invalid"
                                         : rc <= -5000 && rc > -5100 ? edhoc_state_strerror(rc)
                                                                     : oscore_strerror(rc));
        return CLI_EXIT_INPUT;
    }
    return 0;
}

/* The amplification limit's counts, and the factor endpoints not yet
 * verified got: UDP payload bytes sent to them over bytes received
 * (SIGUSR1, and at the stop). */
static void log_amplification(const struct edhoc_amp *amp, const struct edhoc_server_stats *st,
                              const char *when)
{
    struct edhoc_amp_stats as;
    edhoc_amp_get_stats(amp, &as);
    cli_log(LOG_NOTICE,
            "%s: amplification_factor=%u answers_held_back=%llu answers_withheld=%llu "
            "echo_challenges=%llu endpoints_verified=%llu endpoints=%zu (verified %zu) "
            "endpoints_evicted=%llu unverified_bytes_received=%llu unverified_bytes_sent=%llu "
            "unverified_factor=%.2f pressure_challenges=%llu pressure_periods=%llu "
            "endpoints_authenticated=%zu pending_evicted_unverified=%llu "
            "pending_evicted_reachable=%llu pending_evicted_authenticated=%llu "
            "pending_refused=%llu pressure_refused=%llu",
            when, edhoc_amp_factor(amp), (unsigned long long)as.limited,
            (unsigned long long)as.withheld, (unsigned long long)st->echo_challenges,
            (unsigned long long)as.verified, as.endpoints, as.endpoints_verified,
            (unsigned long long)as.evicted, (unsigned long long)as.unverified_received,
            (unsigned long long)as.unverified_sent,
            as.unverified_received ? (double)as.unverified_sent / (double)as.unverified_received
                                   : 0.0,
            (unsigned long long)as.pressure_challenges, (unsigned long long)as.pressure_periods,
            as.endpoints_authenticated, (unsigned long long)as.pending_evicted[EDHOC_AMP_UNVERIFIED],
            (unsigned long long)as.pending_evicted[EDHOC_AMP_REACHABLE],
            (unsigned long long)as.pending_evicted[EDHOC_AMP_AUTHENTICATED],
            (unsigned long long)as.pending_refused, (unsigned long long)as.pressure_refused);
}

int cmd_responder(int argc, char **argv)
{
    /* The daemon holds private keys and OSCORE master secrets. */
    cli_no_core_dumps();
    struct responder *r = calloc(1, sizeof *r);
    if (!r)
        return CLI_EXIT_INTERNAL;
    cli_edhoc_opts_init(&r->o);
    const char *listen_spec[MAX_LISTEN];
    char listen_addr[MAX_LISTEN][NI_MAXHOST + 16];
    const char *listen[MAX_LISTEN];
    size_t n_listen = 0;
    const char *static_paths[MAX_STATIC];
    size_t n_static = 0;
    const char *state_dir = NULL, *pidfile = NULL, *ready_file = NULL, *interop_dir = NULL;
    long interop_max = INTEROP_LOG_MAX_FILES;
    bool daemon = false, use_syslog = false, echo_m1 = false, allow_unprotected = false;
    long amp_factor = EDHOC_AMP_DEFAULT_FACTOR;
    long pressure_rate = EDHOC_AMP_DEFAULT_PRESSURE_RATE;
    struct edhoc_amp *amp = NULL;
    bool demo = false;
    unsigned framings = 0; /* both */
    int c_r_form = EDHOC_C_R_FORM_INT;
    long max_contexts = (long)EDHOC_SERVER_DEFAULT_MAX_CONTEXTS,
         context_lifetime_ms = (long)EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS;
    long max_pending = 256, hs_timeout_ms = 60000, block_size = 0,
         max_body = EDHOC_BW_DEFAULT_MAX_BODY, max_sessions = 512,
         transfer_timeout_ms = EDHOC_BW_DEFAULT_LIFETIME_MS;
    long workers = 0; /* 0: the CPUs */
    struct cli_worker_role role = {.count = 1, .state_fd = -1, .ready_fd = -1, .go_fd = -1};
    int exit_code = CLI_EXIT_USAGE;
    struct cli_net_opts net;
    memset(&net, 0, sizeof net);
    struct responder_acct *acct = NULL;

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_responder, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT) {
            exit_code = p.exit_code;
            goto out;
        }
        if (st == CLI_OPT_POSITIONAL) {
            cli_opt_error(&p, "unexpected argument '%s' (the responder takes options only)",
                          p.value);
            goto out;
        }
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_EDHOC:
            /* --cred and --key come in pairs, one identity each: the
             * shared parser keeps one of each, so they are counted here. */
            if (!strcmp(p.opt->name, "cred") || !strcmp(p.opt->name, "key")) {
                bool cred = !strcmp(p.opt->name, "cred");
                size_t *count = cred ? &r->n_cred_paths : &r->n_key_paths;
                if (*count >= MAX_CREDS) {
                    cli_opt_error(&p, "at most %d %s", MAX_CREDS, p.flag);
                    goto out;
                }
                (cred ? r->cred_paths : r->key_paths)[(*count)++] = p.value;
            } else {
                bad = cli_edhoc_take(&r->o, CLI_SIDE_R, &p);
            }
            break;
        case CLI_OPT_ID_NET: bad = cli_net_take(&net, &p); break;
        case OPT_LISTEN:
            if (n_listen >= MAX_LISTEN) {
                cli_opt_error(&p, "at most %d --listen", MAX_LISTEN);
                goto out;
            }
            listen_spec[n_listen++] = p.value;
            break;
        case OPT_FRAMING:
            if (!strcmp(p.value, "a2") || !strcmp(p.value, "A.2"))
                framings = 1u << EDHOC_FRAMING_A2;
            else if (!strcmp(p.value, "bare"))
                framings = 1u << EDHOC_FRAMING_BARE;
            else if (!strcmp(p.value, "both"))
                framings = 0;
            else
                bad = cli_opt_error(&p, "--framing: a2, bare or both, got '%s'", p.value);
            break;
        case OPT_C_R_FORM: {
            static const char *const forms[] = {"int", "bstr", "any", NULL};
            static const int form_ids[] = {EDHOC_C_R_FORM_INT, EDHOC_C_R_FORM_BSTR,
                                           EDHOC_C_R_FORM_ANY};
            int k = 0;
            bad = cli_opt_choice(&p, forms, &k);
            if (!bad)
                c_r_form = form_ids[k];
            break;
        }
        case OPT_ECHO: echo_m1 = true; break;
        case OPT_AMPLIFICATION_FACTOR: bad = cli_opt_long(&p, 0, 1000, &amp_factor); break;
        case OPT_PRESSURE_RATE: bad = cli_opt_long(&p, 0, 10000000, &pressure_rate); break;
        case OPT_ALLOW_UNPROTECTED: allow_unprotected = true; break;
        case OPT_DEMO: demo = true; break;
        case OPT_STATE_DIR: state_dir = p.value; break;
        case OPT_OSCORE_CONTEXT:
            if (n_static >= MAX_STATIC) {
                cli_opt_error(&p, "at most %d --oscore-context", MAX_STATIC);
                goto out;
            }
            static_paths[n_static++] = p.value;
            break;
        case OPT_MAX_PENDING: bad = cli_opt_long(&p, 1, 65536, &max_pending); break;
        case OPT_HANDSHAKE_TIMEOUT: bad = cli_opt_seconds(&p, 1, 86400, &hs_timeout_ms); break;
        case OPT_MAX_CONTEXTS: bad = cli_opt_long(&p, 1, 100000000, &max_contexts); break;
        case OPT_CONTEXT_LIFETIME:
            bad = cli_opt_seconds(&p, 0.1, 315360000, &context_lifetime_ms);
            break;
        case OPT_BLOCK_SIZE:
            bad = cli_opt_long(&p, 16, 1024, &block_size);
            if (!bad && (block_size & (block_size - 1)))
                bad = cli_opt_error(&p, "--block-size: a power of two (16, 32, ..., 1024), "
                                        "got '%s'", p.value);
            break;
        case OPT_MAX_BODY:
            bad = cli_opt_long(&p, 16, (long)EDHOC_BW_MAX_BODY_LIMIT, &max_body);
            break;
        case OPT_MAX_SESSIONS: bad = cli_opt_long(&p, 1, 1000000, &max_sessions); break;
        case OPT_WORKERS: bad = cli_opt_long(&p, 1, 64, &workers); break;
        case OPT_TRANSFER_TIMEOUT:
            bad = cli_opt_seconds(&p, 0.1, 86400, &transfer_timeout_ms);
            break;
        case OPT_INTEROP_LOG: interop_dir = p.value; break;
        case OPT_INTEROP_LOG_MAX: bad = cli_opt_long(&p, 0, LONG_MAX, &interop_max); break;
        case OPT_READY_FILE: ready_file = p.value; break;
        case OPT_DAEMON: daemon = true; break;
        case OPT_PIDFILE: pidfile = p.value; break;
        case OPT_SYSLOG: use_syslog = true; break;
        default: break;
        }
        if (bad)
            goto out;
    }
    if (r->o.side[CLI_SIDE_R].n_c_id > 1) {
        cli_opt_error(&p, "--c-r: one value (every handshake uses it)");
        goto out;
    }
    {
        /* One capture file, one interop log and one fixed C_R belong to
         * one process. */
        const char *single = net.pcap ? "--pcap" : interop_dir ? "--interop-log"
                             : r->o.side[CLI_SIDE_R].n_c_id ? "--c-r" : NULL;
        if (single && workers > 1) {
            cli_opt_error(&p, "--workers %ld with %s: one process writes it; use --workers 1",
                          workers, single);
            goto out;
        }
        if (workers == 0) {
            unsigned cpus = cli_workers_cpus();
            workers = single ? 1 : cpus > 64 ? 64 : (long)cpus;
        }
    }
    if (r->n_cred_paths != r->n_key_paths) {
        cli_opt_error(&p, "give --cred and --key in pairs (%zu --cred, %zu --key)",
                      r->n_cred_paths, r->n_key_paths);
        goto out;
    }
    if (state_dir && !strcmp(state_dir, "none") && n_static) {
        cli_opt_error(&p, "--oscore-context needs a state directory: a static OSCORE context "
                          "restarted without its stored sequence-number mark repeats nonces and "
                          "forgets its replay window (RFC 8613 Section 7.2 and Appendix B.1); "
                          "drop --state-dir none");
        goto out;
    }
    /* Safe defaults: the demo keys are published (RFC 9529 and this
     * program), so serving them is a test, said with --demo; a responder
     * with its own credentials accepts only the peers --trust names, and
     * without any it would accept nobody. */
    if (demo && r->n_cred_paths) {
        cli_opt_error(&p, "--demo serves the built-in demo credentials: drop it to serve "
                          "--cred/--key, or drop --cred/--key for a test on the demo keys");
        goto out;
    }
    if (!demo && r->n_cred_paths == 0) {
        cli_opt_error(&p, "no credentials: give --cred FILE --key FILE (one pair per identity; "
                          "edhoc-cli keygen makes them) and --trust FILE (the CA certificates or "
                          "peer credentials to accept); the built-in demo credentials' private "
                          "keys are published, so add --demo only to run a test on them");
        goto out;
    }
    if (r->o.side[CLI_SIDE_R].kid_len && r->n_cred_paths != 1) {
        cli_opt_error(&p, "--kid names one credential: give exactly one --cred with it (or put "
                          "an 'EDHOC-kid: HEX' line before each certificate)");
        goto out;
    }
    if (r->n_cred_paths && r->o.n_trust == 0) {
        cli_opt_error(&p, "--cred without --trust: this responder would accept no initiator; add "
                          "--trust FILE (repeatable) with the CA certificates or the peer "
                          "credentials to accept");
        goto out;
    }
    for (size_t i = 0; i < n_listen; i++) {
        char why[NI_MAXHOST + 300];
        if (listen_resolve(listen_spec[i], listen_addr[i], sizeof listen_addr[i], why,
                           sizeof why)) {
            cli_opt_error(&p, "%s", why);
            goto out;
        }
        listen[i] = listen_addr[i];
    }
    if (n_listen == 0) {
        listen_spec[0] = listen[0] = "[::]:5683";
        n_listen = 1;
    }
    if (r->o.n_suites_r) {
        memcpy(r->supported, r->o.suites_r, r->o.n_suites_r * sizeof(int));
        r->n_supported = r->o.n_suites_r;
    } else {
        /* Every suite the library has, 25 included: an initiator selects
         * suite 25 only when it prefers it to all the others we serve
         * (RFC 9528 Section 5.2.3), and then gets EDHOC without OSCORE
         * (RFC 8613 Section 3.2.1 has no HKDF for SHAKE256), as the log
         * line of each such handshake says. */
        memcpy(r->supported, known_suites, sizeof known_suites);
        r->n_supported = N_SUITE_IDS;
    }
    bool edhoc_only_suite = false;
    for (size_t i = 0; i < r->n_supported; i++)
        edhoc_only_suite |= r->supported[i] == 25;

    /* Default: one line per handshake (info). -q: warnings and errors. */
    int threshold = p.quiet ? LOG_WARNING : LOG_INFO + p.verbose;
    if (threshold > LOG_DEBUG)
        threshold = LOG_DEBUG;
    int verbosity = p.quiet ? -1 : p.verbose;
    cli_log_open("edhoc-cli", use_syslog, threshold);
    /* libcoap's lines (-vv) go through our log too: whole, once, with our
     * time stamp and pid, to syslog with --syslog. */
    edhoc_transport_set_log_sink(cli_log_line, NULL);

    /* Paths stay valid after --daemon changes directory. */
    char state_abs[PATH_MAX], pid_abs[PATH_MAX], ready_abs[PATH_MAX], pcap_abs[PATH_MAX];
    if (net.pcap && net.pcap[0] != '/' && getcwd(pcap_abs, sizeof pcap_abs)) {
        size_t l = strlen(pcap_abs);
        snprintf(pcap_abs + l, sizeof pcap_abs - l, "/%s", net.pcap);
        net.pcap = pcap_abs;
    }
    {
        /* Durable by default: a static context's sequence numbers must
         * survive restarts (RFC 8613 Section 7.2, Appendix B.1), and
         * EDHOC-derived contexts then survive them too. */
        char why[PATH_MAX + 200] = "";
        int sd = cli_state_dir(state_dir, state_abs, sizeof state_abs, why, sizeof why);
        if (sd < 0) {
            cli_log(LOG_ERR, "state: %s", why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
        state_dir = sd == 0 ? state_abs : NULL;
        if (!state_dir)
            cli_log(LOG_NOTICE, "--state-dir none: EDHOC-derived contexts end with this process");
    }
    if (pidfile && pidfile[0] != '/' && getcwd(pid_abs, sizeof pid_abs)) {
        size_t l = strlen(pid_abs);
        snprintf(pid_abs + l, sizeof pid_abs - l, "/%s", pidfile);
        pidfile = pid_abs;
    }
    if (ready_file && ready_file[0] != '/' && getcwd(ready_abs, sizeof ready_abs)) {
        size_t l = strlen(ready_abs);
        snprintf(ready_abs + l, sizeof ready_abs - l, "/%s", ready_file);
        ready_file = ready_abs;
    }

    if (interop_dir) {
        char why[PATH_MAX + 200];
        if (interop_log_open(&r->ilog, interop_dir, interop_max, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
    }
    exit_code = load_identities(r);
    if (exit_code)
        goto out;
    acct = calloc(1, sizeof *acct);
    if (!acct) {
        exit_code = CLI_EXIT_INTERNAL;
        goto out;
    }
    acct->link = net.link;
    acct->ilog = r->ilog;
    acct->count_bytes = cli_log_threshold() >= LOG_NOTICE;
    if (cli_net_capture_open(&net, "responder", &acct->cap)) {
        exit_code = CLI_EXIT_INPUT;
        goto out;
    }
    edhoc_transport_set_datagram_hook2(on_datagram, acct);
    edhoc_transport_set_presend_hook(on_presend, acct);

    struct edhoc_state_db *db = NULL;
    if (state_dir) {
        char why[512] = "";
        int rc = edhoc_state_open(state_dir, &db, why, sizeof why);
        if (rc) {
            cli_log(LOG_ERR, "state: %s%s", why[0] ? why : edhoc_state_strerror(rc),
                    strstr(why, "in use")
                        ? " (two responders serving the same contexts would repeat nonces: give "
                          "each its own --state-dir, or --state-dir none to one that serves no "
                          "static context)"
                        : "");
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
        const char *recovery = edhoc_state_recovery(db);
        if (recovery)
            cli_log(LOG_WARNING, "state: %s", recovery);
    }
    /* A static context's nonces are unique only if one process on the host
     * serves it, whatever state directory or copy of the file each is
     * given: lock its keying material before anything serves (the workers
     * inherit the locks; they go with the process). */
    if (n_static) {
        char lock_dir[PATH_MAX], why[2 * PATH_MAX + 400] = "";
        if (cli_lock_dir(lock_dir, sizeof lock_dir, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto close_db;
        }
        char ids[MAX_STATIC][33];
        for (size_t i = 0; i < n_static; i++) {
            struct oscore_config cfg;
            int rc = cli_oscore_context_load("responder", "--oscore-context", static_paths[i],
                                             &cfg);
            if (rc) {
                exit_code = rc;
                goto close_db;
            }
            rc = cli_oscore_material_id(&cfg, ids[i]);
            for (size_t j = 0; rc == 0 && j < i; j++) {
                if (strcmp(ids[i], ids[j]))
                    continue;
                cli_log(LOG_ERR,
                        "--oscore-context %s has the sender key of --oscore-context %s (same "
                        "master secret and salt, ID Context and Sender ID): their nonces would "
                        "collide; RFC 8613 Section 3.3: \"the quartet (Master Secret, Master "
                        "Salt, ID Context, Sender ID) MUST be unique\"",
                        static_paths[i], static_paths[j]);
                rc = -1;
            }
            if (rc) {
                edhoc_wipe(&cfg, sizeof cfg);
                exit_code = CLI_EXIT_INPUT;
                goto close_db;
            }
            int lock_fd = -1;
            rc = cli_context_lock(lock_dir, &cfg, static_paths[i], state_dir, &lock_fd, why,
                                  sizeof why);
            edhoc_wipe(&cfg, sizeof cfg);
            if (rc) {
                cli_log(LOG_ERR, "%s", why);
                exit_code = CLI_EXIT_INPUT;
                goto close_db;
            }
        }
    }

    /* Before anything says the responder is up (the pid file, the ready
     * file, a worker's report): a supervisor may signal it the moment one
     * appears, and SIGTERM must then store state and exit 0, not kill. A
     * signal that comes while contexts load is acted on once they are. */
    catch_signals();
    if (workers > 1) {
        /* The stored rows are pruned once, here, to the whole responder's
         * bounds; each worker then loads the rows it owns. */
        if (db) {
            uint64_t lifetime = (uint64_t)context_lifetime_ms, expired = 0, evicted = 0;
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
            int64_t used_before = lifetime < (uint64_t)now_ms ? now_ms - (int64_t)lifetime : 0;
            int rc = edhoc_state_begin(db);
            if (!rc)
                rc = edhoc_state_prune(db, used_before, (uint64_t)max_contexts, &expired,
                                       &evicted);
            int crc = rc ? edhoc_state_rollback(db) : edhoc_state_commit(db);
            if (rc || crc) {
                cli_log(LOG_ERR, "state: cannot prune %s/%s: %s", state_dir, EDHOC_STATE_FILE,
                        edhoc_state_strerror(rc ? rc : crc));
                exit_code = CLI_EXIT_INPUT;
                goto close_db;
            }
            if (expired || evicted)
                cli_log(LOG_NOTICE, "state: %llu stored contexts idle for longer than the "
                                    "context lifetime and %llu beyond max contexts %ld deleted",
                        (unsigned long long)expired, (unsigned long long)evicted, max_contexts);
        }
        if (daemon && !use_syslog)
            cli_log(LOG_WARNING, "--daemon without --syslog: once detached, log lines go "
                                 "nowhere (add --syslog to keep them)");
        if (daemon && cli_daemonize()) {
            cli_log(LOG_ERR, "cannot detach: %s", strerror(errno));
            exit_code = CLI_EXIT_INTERNAL;
            goto close_db;
        }
        struct cli_workers_config wcfg = {
            .count = (unsigned)workers,
            .db = db,
            .listen = listen_addr,
            .listen_spec = listen_spec,
            .n_listen = n_listen,
            .ready_file = ready_file,
            .pidfile = pidfile,
            .state_dir = state_dir,
            .stop_signal = &stop_signal,
            .stats_signal = &stats_signal,
            .reload_signal = &reload_signal,
        };
        for (size_t i = 0; i < n_listen; i++) {
            if (listen[i] != listen_addr[i])
                snprintf(listen_addr[i], sizeof listen_addr[i], "%s", listen[i]);
            listen[i] = listen_addr[i];
        }
        int code = CLI_EXIT_INTERNAL;
        if (cli_workers_start(&wcfg, &role, &code)) {
            exit_code = code;
            goto close_db;
        }
        /* A worker from here on: the supervisor holds the database, the
         * pid file and the ready file. */
        db = NULL;
        if (role.state_fd >= 0 && edhoc_state_connect(role.state_fd, &db)) {
            exit_code = CLI_EXIT_INTERNAL;
            goto out;
        }
        daemon = false;
        pidfile = NULL;
        ready_file = NULL;
    }

    if (amp_factor > 0) {
        struct edhoc_amp_config acfg = {.factor = (unsigned)amp_factor,
                                        .pressure_rate = (unsigned)pressure_rate};
        const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
        if (ops->random(ops->rng_ctx, (uint8_t *)acfg.seed, sizeof acfg.seed) ||
            !(amp = edhoc_amp_new(&acfg))) {
            cli_log(LOG_ERR, "out of memory");
            exit_code = CLI_EXIT_INTERNAL;
            goto close_db;
        }
    }
    struct edhoc_server_config scfg = {
        .amp = amp,
        .ops = edhoc_crypto_default(),
        .select = select_config,
        .select_user = r,
        .max_pending = (size_t)max_pending,
        /* Each worker holds its share of the bound. */
        .max_contexts = (size_t)((max_contexts + (long)role.count - 1) / (long)role.count),
        .workers = role.count,
        .worker_index = role.index,
        .context_lifetime_ms = (uint64_t)context_lifetime_ms,
        /* Whole seconds in the server: a fraction rounds up. */
        .pending_timeout_s = (unsigned)((hs_timeout_ms + 999) / 1000),
        .message_4 = r->o.message_4,
        .echo_message_1 = echo_m1,
        .serve_unprotected = allow_unprotected,
        .framings = framings,
        .db = db,
        .log = responder_log,
        .log_user = acct,
        .log_max_level = cli_log_threshold(),
        .record = r->ilog ? interop_log_record : NULL,
        .oscore = r->ilog ? interop_log_oscore : NULL,
        .record_user = r->ilog,
        .max_body = (size_t)max_body,
        .block_size = (unsigned)block_size,
        .transfer_lifetime_ms = (uint32_t)transfer_timeout_ms,
        .c_r_form = c_r_form,
    };
    if (r->o.side[CLI_SIDE_R].n_c_id == 1) {
        scfg.c_r_len = r->o.side[CLI_SIDE_R].c_id_len[0];
        memcpy(scfg.c_r, r->o.side[CLI_SIDE_R].c_id[0], scfg.c_r_len);
        cli_log(LOG_WARNING, "--c-r: every handshake gets the same C_R (a test with one peer)");
    }
    struct edhoc_server *srv = edhoc_server_new(&scfg);
    struct edhoc_transport *t = NULL;
    if (!srv) {
        cli_log(LOG_ERR, "out of memory");
        exit_code = CLI_EXIT_INTERNAL;
        goto close_db;
    }
    if (r->ilog)
        interop_log_set_server(r->ilog, srv);
    if (role.count > 1)
        cli_worker_load_delay_for_tests(&role);
    long loaded = edhoc_server_load_state(srv);
    if (loaded < 0) {
        cli_log(LOG_ERR, "state: cannot read %s/%s: %s", state_dir, EDHOC_STATE_FILE,
                edhoc_state_strerror((int)loaded));
        exit_code = CLI_EXIT_INPUT;
        goto free_srv;
    }
    size_t n_static_served = 0;
    for (size_t i = 0; i < n_static; i++) {
        exit_code = load_static_context(srv, static_paths[i], &n_static_served);
        if (exit_code)
            goto free_srv;
    }
    /* No worker binds before every worker holds its contexts: the port's
     * group would hand the missing worker's requests to the others. */
    if (role.count > 1 && cli_worker_loaded(&role, listen_addr, n_listen)) {
        exit_code = stop_signal ? CLI_EXIT_OK : CLI_EXIT_INTERNAL;
        goto free_srv;
    }

    struct edhoc_transport_config tcfg = {
        .block_size = (unsigned)block_size,
        .max_body = (size_t)max_body,
        .max_sessions = (unsigned)max_sessions,
        .transfer_lifetime_ms = (uint32_t)transfer_timeout_ms,
        /* libcoap warns for every datagram the guard refused: only at -vv. */
        .log_level = verbosity >= 2 ? LOG_DEBUG : LOG_EMERG,
        .amp = amp,
        .limited = amp ? edhoc_server_echo_challenge : NULL,
        .workers = role.count,
        .worker_index = role.index,
    };
    char why[256] = "";
    int rc = edhoc_transport_server_open(&t, listen, n_listen, &tcfg, edhoc_server_handle, srv,
                                         why, sizeof why);
    if (rc) {
        cli_log(LOG_ERR, "%s", why[0] ? why : edhoc_transport_strerror(rc));
        exit_code = rc == EDHOC_TRANSPORT_ERR_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        goto free_srv;
    }
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    if (role.count > 1) {
        uint16_t ports[MAX_LISTEN];
        for (size_t i = 0; i < n_listen; i++)
            ports[i] = edhoc_transport_server_port(t, i);
        if (cli_worker_ready(&role, ports, n_listen, 0)) {
            exit_code = stop_signal ? CLI_EXIT_OK : CLI_EXIT_INTERNAL;
            goto free_t;
        }
    }
    for (size_t i = 0; i < n_listen && role.count <= 1; i++)
        cli_log_listening(listen[i], edhoc_transport_server_port(t, i), listen_spec[i], 1);
    cli_log(LOG_NOTICE,
            "serving %s credentials, %zu stored context%s loaded, %zu static; %zu bytes per "
            "handshake in progress, %zu per OSCORE context",
            r->demo ? "built-in demo" : "configured", (size_t)loaded, loaded == 1 ? "" : "s",
            n_static_served, st.bytes_per_pending, st.bytes_per_context);
    if (r->demo)
        cli_log(LOG_WARNING, "--demo: the built-in demo credentials' private keys are published: "
                             "anyone can pose as this responder%s; for tests only",
                r->o.n_trust ? "" : " and as the demo initiators it accepts");
    if (allow_unprotected)
        cli_log(LOG_WARNING, "--allow-unprotected: the resources answer requests without OSCORE "
                             "too");
    if (edhoc_only_suite)
        cli_log(LOG_NOTICE, "suite 25: EDHOC only for suite 25, no OSCORE context follows "
                            "(RFC 8613 Section 3.2.1 derives keys with an HMAC-based HKDF, which "
                            "SHAKE256 has not; RFC 9528 Section 3.6)");
    if (amp)
        cli_log(LOG_INFO, "amplification limit: an address not yet verified is sent at most %ld "
                          "times the bytes received from it (--amplification-factor); under "
                          "pressure every message_1 of an unverified address gets 4.01 + Echo "
                          "first (%s)",
                amp_factor, pressure_rate ? "--pressure-rate" : "off: --pressure-rate 0");
    else
        cli_log(LOG_WARNING, "--amplification-factor 0: no amplification limit; anyone can make "
                             "this responder send large answers to a spoofed address");

    if (daemon && !use_syslog)
        cli_log(LOG_WARNING, "--daemon without --syslog: once detached, log lines go nowhere "
                             "(add --syslog to keep them)");
    if (daemon && cli_daemonize()) {
        cli_log(LOG_ERR, "cannot detach: %s", strerror(errno));
        exit_code = CLI_EXIT_INTERNAL;
        goto free_t;
    }
    {
        char why[2 * PATH_MAX + 200];
        if (pidfile && cli_pidfile_write(pidfile, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto free_t;
        }
        char ports[MAX_LISTEN * 8] = "";
        for (size_t i = 0, n = 0; i < n_listen; i++)
            n += (size_t)snprintf(ports + n, sizeof ports - n, "%u\n",
                                  edhoc_transport_server_port(t, i));
        if (ready_file && cli_file_publish("--ready-file", ready_file, ports, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto free_t;
        }
    }

    /* Loading and pruning were synchronous; from here on the state is
     * written in batches (group commit: docs/DESIGN.md says what must be
     * durable before which packet). A worker's handle sends its writes to
     * the writer process without waiting. */
    /* Test only: EDHOC_TEST_STATE_BATCH_MS=MS holds a batch open up to MS
     * milliseconds (unless someone waits for it), so that a test can kill
     * the responder while the newest contexts are not on disk yet. */
    unsigned batch_ms = CLI_STATE_BATCH_MS;
    const char *test_batch = getenv("EDHOC_TEST_STATE_BATCH_MS");
    if (test_batch && sscanf(test_batch, "%u", &batch_ms) != 1)
        batch_ms = CLI_STATE_BATCH_MS;
    if (db && edhoc_state_group_commit(db, CLI_STATE_BATCH_ROWS, batch_ms))
        cli_log(LOG_WARNING, "state: no group commit, one commit per handshake");
    bool publish_stats = state_dir && edhoc_state_event_fd(db) >= 0;
    uint64_t stats_due_ms = 0, grouped_ms = cli_now_ns() / 1000000;
    if (publish_stats) {
        /* At once: a load started the moment the responder is ready finds
         * the figures to compare with. */
        struct cli_state_stats ss = {.pid = (long)getpid()};
        edhoc_state_get_writer_stats(db, &ss.w);
        cli_state_stats_publish(state_dir, &ss);
    }

    /* Notifications go out through the transport. */
    edhoc_server_set_sender(srv, send_notification, t);
    edhoc_transport_server_on_failure(t, edhoc_server_peer_failed, srv);

    while (!stop_signal) {
        edhoc_server_tick(srv, cli_now_ns() / 1000000);
        if (r->ilog)
            interop_log_tick(r->ilog, cli_now_ns() / 1000000);
        held_flush(acct);
        if (edhoc_transport_run(t, 100)) {
            held_flush(acct);
            cli_log(LOG_ERR, "socket error");
            break;
        }
        held_flush(acct);
        if (publish_stats && cli_now_ns() / 1000000 >= stats_due_ms) {
            uint64_t now = cli_now_ns() / 1000000;
            stats_due_ms = now + 1000;
            struct cli_state_stats ss = {.pid = (long)getpid(),
                                         .uptime_s = (double)(now - grouped_ms) / 1000};
            edhoc_state_get_writer_stats(db, &ss.w);
            cli_state_stats_publish(state_dir, &ss);
        }
        if (stats_signal) {
            stats_signal = 0;
            edhoc_server_get_stats(srv, &st);
            log_stats(&st, "SIGUSR1");
            log_amplification(amp, &st, "SIGUSR1");
        }
        if (reload_signal) {
            reload_signal = 0;
            if (load_identities(r) == 0) {
                edhoc_server_drop_pending(srv);
                cli_log(LOG_NOTICE, "SIGHUP: credentials and trust reloaded; contexts kept");
            } else {
                cli_log(LOG_ERR, "SIGHUP: reload failed, keeping the previous credentials");
            }
        }
    }
    /* The next start keeps the most recently used contexts. */
    edhoc_server_save_state(srv);
    if (db) {
        /* Everything queued reaches the disk before the exit. */
        int frc = edhoc_state_flush(db);
        if (frc)
            cli_log(LOG_ERR, "state: a batch of writes failed: %s", edhoc_state_strerror(frc));
        struct edhoc_state_writer_stats ws;
        if (edhoc_state_get_writer_stats(db, &ws) == 0) {
            cli_log(LOG_NOTICE, "state writer: %llu commits of %llu rows (largest %llu; closed "
                                "by size %llu, time %llu, a waiter %llu), %llu failed",
                    (unsigned long long)ws.commits, (unsigned long long)ws.rows,
                    (unsigned long long)ws.largest_batch, (unsigned long long)ws.closed_by_size,
                    (unsigned long long)ws.closed_by_time, (unsigned long long)ws.closed_by_wait,
                    (unsigned long long)ws.failed_commits);
            if (publish_stats) {
                struct cli_state_stats ss = {
                    .pid = (long)getpid(),
                    .uptime_s = (double)(cli_now_ns() / 1000000 - grouped_ms) / 1000,
                    .w = ws};
                cli_state_stats_publish(state_dir, &ss);
            }
        }
    }
    edhoc_server_get_stats(srv, &st);
    log_stats(&st, "stopping");
    if (r->ilog) {
        /* The interop log has a record for every handshake however it
         * ends, those cut short by this stop included. */
        char why[120];
        if (stop_signal)
            snprintf(why, sizeof why, "the responder stopped (signal %d) before message_3 came",
                     (int)stop_signal);
        else
            snprintf(why, sizeof why, "the responder stopped (socket error) before message_3 "
                                      "came");
        edhoc_server_record_shutdown(srv, why);
    }
    {
        struct edhoc_datagram_guard_stats gs;
        edhoc_datagram_guard_stats(&gs);
        char line[600];
        edhoc_datagram_guard_stats_format(&gs, line, sizeof line);
        cli_log(LOG_INFO, "%s (of %llu checked)", line, (unsigned long long)gs.checked);
    }
    cli_log(LOG_NOTICE,
            "stopping on signal %d: %llu handshakes ok, %llu failed, %zu contexts, %llu OSCORE "
            "requests",
            (int)stop_signal, (unsigned long long)st.handshakes_ok,
            (unsigned long long)st.handshakes_failed, st.contexts,
            (unsigned long long)st.oscore_requests);
    log_amplification(amp, &st, "stopping");
    exit_code = stop_signal ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
free_t:
free_srv:
    /* The server first: its observers hold sessions of the transport. */
    edhoc_server_free(srv);
    edhoc_transport_free(t);
    held_flush(acct);
    if (r->ilog)
        interop_log_set_server(r->ilog, NULL);
close_db:
    if (db)
        edhoc_state_close(db);
    if (pidfile && exit_code == CLI_EXIT_OK)
        unlink(pidfile);
out:
    edhoc_transport_set_datagram_hook2(NULL, NULL);
    edhoc_transport_set_presend_hook(NULL, NULL);
    edhoc_amp_free(amp);
    if (acct) {
        edhoc_capture_close(acct->cap);
        free(acct);
    }
    interop_log_close(r->ilog);
    idents_free(r);
    if (r->keys)
        edhoc_wipe(r->keys, r->n_creds * sizeof *r->keys);
    free(r->creds);
    free(r->keys);
    free(r->trust);
    free(r);
    return exit_code;
}
