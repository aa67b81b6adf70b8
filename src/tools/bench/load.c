/*
 * load: the run - its phases, the --vs-plain windows, the epoll loop over
 * every peer's transport - and the settings it starts from.
 */
#include <math.h> /* NAN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "load_internal.h"

int load_parse_uri(struct load_run *r, const char *uri)
{
    if (strncmp(uri, "coap://", 7) != 0)
        return -1;
    snprintf(r->uri, sizeof r->uri, "%s", uri);
    const char *h = uri + 7, *end;
    if (*h == '[') {
        end = strchr(h, ']');
        if (!end)
            return -1;
        snprintf(r->host, sizeof r->host, "%.*s", (int)(end - h - 1), h + 1);
        end++;
    } else {
        end = h + strcspn(h, ":/");
        snprintf(r->host, sizeof r->host, "%.*s", (int)(end - h), h);
    }
    if (!r->host[0])
        return -1;
    r->port = 5683;
    if (*end == ':') {
        char *e;
        long port = strtol(end + 1, &e, 10);
        if (e == end + 1 || port < 1 || port > 65535 || (*e && *e != '/'))
            return -1;
        r->port = (uint16_t)port;
        end = e;
    } else if (*end && *end != '/') {
        return -1;
    }
    /* The path names the EDHOC resource, as for the initiator. */
    if (strchr(end, '?') || strlen(end) >= sizeof r->path)
        return -1;
    snprintf(r->path, sizeof r->path, "%s", *end ? end : EDHOC_COAP_WELL_KNOWN);
    return 0;
}

/* Each client has a socket and an event descriptor: make room for them. */
size_t load_raise_fd_limit(size_t want_peers)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return want_peers;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    size_t room = rl.rlim_cur > 64 ? (size_t)(rl.rlim_cur - 64) / 4 : 1;
    return want_peers < room ? want_peers : room;
}

static void load_progress(const struct load_run *r, double elapsed)
{
    if (!r->progress)
        return;
    char text[160];
    snprintf(text, sizeof text,
             "%5.1f s  %ld handshakes (%.1f/s)  %ld requests (%.1f/s)  %ld failures", elapsed,
             r->hs_ok, elapsed > 0 ? r->hs_ok / elapsed : 0.0, r->req_ok,
             elapsed > 0 ? r->req_ok / elapsed : 0.0, r->failures);
    r->progress(r->progress_ctx, text);
}

/* --vs-plain: what the window that ends now measured, added to its kind. */
struct load_window {
    uint64_t started;
    struct load_cpu cpu;
    double generator_cpu;
    long echo_challenges;
    long requests, handshakes, failures; /* counters when it started */
};

static void load_window_close(struct load_run *r, struct load_window *w, uint64_t now)
{
    int kind = r->plain ? 1 : 0;
    struct load_cpu cpu;
    load_cpu_sample(&cpu, r->responder_pid);
    r->mode_seconds[kind] += (double)(now - w->started) / 1e9;
    if (cpu.ok && w->cpu.ok)
        r->mode_cpu[kind] += cpu.seconds - w->cpu.seconds;
    else
        r->mode_cpu[kind] = NAN;
    double gen = load_generator_cpu_seconds();
    r->mode_generator_cpu[kind] += gen - w->generator_cpu;
    r->mode_echo[kind] += r->echo_challenges - w->echo_challenges;
    w->generator_cpu = gen;
    w->echo_challenges = r->echo_challenges;
    r->mode_requests[kind] += r->req_ok - w->requests;
    r->mode_handshakes[kind] += r->hs_ok - w->handshakes;
    r->mode_failures[kind] += r->failures - w->failures;
    w->started = now;
    w->cpu = cpu;
    w->requests = r->req_ok;
    w->handshakes = r->hs_ok;
    w->failures = r->failures;
}

/* One phase of the load: every peer loops until the duration or the
 * handshake budget is used up. Returns the seconds it took; the
 * responder's CPU seconds in that time (NAN when unknown). */
#define FLOOD_EVENT UINT64_MAX /* the epoll tag of the flood's socket */

static double load_phase(struct load_run *r, double *responder_cpu_s, double *generator_cpu_s)
{
    double gen_before = load_generator_cpu_seconds();
    /* One epoll set over every peer's transport: a peer is only run when
     * its socket or retransmission timer has work, so the generator spends
     * its CPU on the handshakes rather than on polling idle peers (that
     * polling once cost more than the responder under test). */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (size_t i = 0; ep >= 0 && i < r->n_peers; i++) {
        int fd = edhoc_transport_poll_fd(r->peers[i].t);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
        if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
            close(ep);
            ep = -1; /* fall back to running every peer in turn */
        }
    }
    if (ep >= 0 && r->flood.active) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = FLOOD_EVENT};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, r->flood.fd, &ev)) {
            close(ep);
            ep = -1;
        }
    }
    struct load_cpu cpu_before;
    load_cpu_sample(&cpu_before, r->responder_pid);
    uint64_t start = tools_now_ns(), last_sweep = start;
    /* --vs-plain: the duration of each kind, in alternating windows, so
     * that a change in what else runs on the host affects both alike. */
    uint64_t deadline = start + (uint64_t)(r->duration_s * (r->vs_plain ? 2 : 1) * 1e9);
    uint64_t window_ns = (uint64_t)(r->duration_s / 8 * 1e9);
    if (window_ns < 250000000u)
        window_ns = 250000000u;
    struct load_window w = {.started = start,
                            .cpu = cpu_before,
                            .generator_cpu = gen_before,
                            .echo_challenges = r->echo_challenges};
    uint64_t next_switch = start + window_ns;
    r->flood.started_ns = start;
    for (size_t i = 0; i < r->n_peers; i++)
        load_peer_start(r, i);
    for (;;) {
        /* SIGINT/SIGTERM: stop at once; the report covers what completed
         * (requests still in flight are neither). */
        if (r->interrupted && r->interrupted())
            break;
        uint64_t now = tools_now_ns();
        if (r->vs_plain && !r->stopping && now >= next_switch && now < deadline) {
            load_window_close(r, &w, now);
            r->plain = !r->plain;
            next_switch = now + window_ns;
        }
        if (!r->stopping && now >= deadline)
            r->stopping = true;
        if (!r->stopping)
            load_flood_send_due(&r->flood, now);
        bool busy = false, progress = false;
        for (size_t i = 0; i < r->n_peers; i++) {
            struct load_peer *p = &r->peers[i];
            if (p->state == PEER_IDLE || p->state == PEER_BACKOFF)
                load_peer_start(r, i);
            busy |= p->state != PEER_DONE && p->state != PEER_IDLE;
        }
        if (!busy)
            break;
        if (ep >= 0) {
            struct epoll_event evs[64];
            int n = epoll_wait(ep, evs, 64, 2);
            for (int k = 0; k < n; k++) {
                if (evs[k].data.u64 == FLOOD_EVENT)
                    load_flood_receive(r);
                else
                    progress |= load_peer_service(r, (size_t)evs[k].data.u64);
            }
            /* Timeouts and anything the events missed. */
            if (n <= 0 || now - last_sweep >= 50000000u) {
                for (size_t i = 0; i < r->n_peers; i++)
                    progress |= load_peer_service(r, i);
                last_sweep = now;
            }
        } else {
            for (size_t i = 0; i < r->n_peers; i++)
                progress |= load_peer_service(r, i);
            if (r->flood.active)
                load_flood_receive(r);
            if (!progress)
                usleep(50);
        }
        load_progress(r, (double)(tools_now_ns() - start) / 1e9);
    }
    uint64_t end = tools_now_ns();
    double elapsed = (double)(end - start) / 1e9;
    if (r->vs_plain)
        load_window_close(r, &w, end);
    struct load_cpu cpu_after;
    load_cpu_sample(&cpu_after, r->responder_pid);
    r->responder_processes = cpu_after.ok ? cpu_after.processes : 0;
    *responder_cpu_s = cpu_before.ok && cpu_after.ok ? cpu_after.seconds - cpu_before.seconds : NAN;
    *generator_cpu_s = load_generator_cpu_seconds() - gen_before;
    if (ep >= 0)
        close(ep);
    if (r->progress_end)
        r->progress_end(r->progress_ctx);
    return elapsed;
}

int load_open(struct load_run *r, char *error, size_t cap, size_t *failed_peer)
{
    if (r->flood.sources && load_flood_open(r, error, cap))
        return TOOLS_ERR_USAGE;
    r->peers = calloc(r->n_peers, sizeof *r->peers);
    if (!r->peers)
        return TOOLS_ERR_INTERNAL;
    struct edhoc_transport_config tcfg = {.max_retransmit = 2, .log_level = 0};
    for (size_t i = 0; i < r->n_peers; i++) {
        int rc = edhoc_transport_client_open(&r->peers[i].t, r->host, r->port, &tcfg);
        if (rc) {
            *failed_peer = i;
            return rc;
        }
    }
    return 0;
}

static bool stopped(const struct load_run *r)
{
    return r->interrupted && r->interrupted() != 0;
}

void load_measure(struct load_run *r, struct load_result *res, void (*after_first)(void *ctx),
                  void *ctx)
{
    struct load_phase_result *phases = res->phases;
    memset(res, 0, sizeof *res);
    res->n_phases = 1;
    double total_cpu = NAN, total_gen = NAN;
    double total_s = load_phase(r, &total_cpu, &total_gen);
    res->first_seconds = total_s;
    if (after_first)
        after_first(ctx);
    bool partial = stopped(r);
    /* --flood-sources: the peers' handshakes alone first, the same budget
     * again beside the flood: what the flood costs them, in one run. */
    if (!r->vs_plain) {
        phases[0].plain = r->plain;
        phases[0].seconds = total_s;
        phases[0].cpu_s = total_cpu;
        phases[0].generator_cpu_s = total_gen;
        phases[0].handshakes = r->hs_ok;
        phases[0].requests = r->req_ok;
        phases[0].failures = r->failures;
        phases[0].echo_challenges = r->echo_challenges;
        phases[0].plain_code = r->plain_code;
    }
    if (r->flood.sources && !partial) {
        res->unloaded_lat = r->hs_lat;
        memset(&r->hs_lat, 0, sizeof r->hs_lat);
        r->stopping = false;
        r->hs_started = 0;
        for (size_t i = 0; i < r->n_peers; i++)
            r->peers[i].state = PEER_IDLE;
        r->flood.active = true;
        double s1 = load_phase(r, &total_cpu, &total_gen);
        r->flood.active = false;
        /* Answers still on their way are counted, not left unread. */
        usleep(100000);
        load_flood_receive(r);
        partial = stopped(r);
        res->n_phases = 2;
        phases[1].seconds = s1;
        phases[1].cpu_s = total_cpu;
        phases[1].generator_cpu_s = total_gen;
        phases[1].handshakes = r->hs_ok - phases[0].handshakes;
        phases[1].requests = r->req_ok - phases[0].requests;
        phases[1].failures = r->failures - phases[0].failures;
        phases[1].echo_challenges = r->echo_challenges - phases[0].echo_challenges;
        phases[1].flood_sources = r->flood.sources;
    }
    if (r->vs_plain) {
        /* The OSCORE windows and the unprotected windows, each summed. */
        res->n_phases = 2;
        for (int k = 0; k < 2; k++) {
            phases[k].plain = k == 1;
            phases[k].seconds = r->mode_seconds[k];
            phases[k].cpu_s = r->mode_cpu[k];
            phases[k].handshakes = r->mode_handshakes[k];
            phases[k].requests = r->mode_requests[k];
            phases[k].failures = r->mode_failures[k];
            phases[k].generator_cpu_s = r->mode_generator_cpu[k];
            phases[k].echo_challenges = r->mode_echo[k];
            phases[k].plain_code = r->plain_code;
        }
    }
    res->partial = partial;
}

void load_free(struct load_run *r)
{
    if (r->peers) {
        for (size_t i = 0; i < r->n_peers; i++) {
            edhoc_session_wipe(&r->peers[i].s);
            oscore_context_wipe(&r->peers[i].osc);
            if (r->peers[i].t)
                edhoc_transport_free(r->peers[i].t);
        }
        free(r->peers);
        r->peers = NULL;
    }
    if (r->flood.fd >= 0)
        close(r->flood.fd);
    r->flood.fd = -1;
    free(r->hs_lat.v);
    free(r->req_lat.v);
    free(r->plain_lat.v);
    r->hs_lat.v = r->req_lat.v = r->plain_lat.v = NULL;
}
