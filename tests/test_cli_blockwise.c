/*
 * Block-wise transfer end to end, through the real binary, against the
 * responders this program shares between its tests: bodies of every size
 * that matters (0, 1, around one block, several blocks, many blocks,
 * exactly the largest allowed) in both directions, unprotected (outer
 * Block1/Block2, RFC 7959) and under OSCORE (inner Block1/Block2, RFC 8613
 * Section 4.1.3.4.1), at block sizes 16, 64, 256 and 1024; the limits
 * (4.13 from the responder, the client's own --max-body); OSCORE blocks
 * inner only; the initiator's --payload-file and --output.
 *
 * Every transfer's body is compared byte for byte with what was sent (the
 * --output file against the --payload-file, or against the /bytes?n=N
 * pattern: byte i is 'a' + i % 26). Unprotected transfers are also
 * captured (coap --pcap) and the datagrams read back here (pcap, raw IP,
 * UDP, CoAP options): the blocks on the wire must be numbered, sized and
 * flagged as RFC 7959 says, and put together they must be the body.
 */
#include "cli_blockwise_test_common.h"
static const unsigned bsizes[] = {16, 64, 256, 1024};

/* Responders shared by the tests: per block size one unprotected
 * (--allow-unprotected) and one serving a static OSCORE context of its
 * own (no --allow-unprotected, so an unprotected answer cannot pass for a
 * protected one), all with --max-body 65536; and one of each kind with
 * --max-body 4096. */
static struct net_proc plain_r[N_BS], osc_r[N_BS], plain_small, osc_small;
static char osc_client_conf[N_BS][300], small_client_conf[300];

/* The answer to request d (same Message ID, other direction), or NULL. */
static const struct dgram *answer_to(const struct capture *c, const struct dgram *d)
{
    for (size_t k = 0; k < c->n; k++) {
        if (!c->d[k].to_server && !c->d[k].duplicate && c->d[k].mid == d->mid)
            return &c->d[k];
    }
    return NULL;
}

/* The datagrams of one unprotected transfer, checked against RFC 7959:
 * POST /echo of body (n bytes) or GET /bytes?n=N (expect: the pattern),
 * the client cutting requests at cbs, the server responses at sbs. */
static void check_plain_wire(struct report *r, const char *what, const struct capture *c, bool post,
                             const uint8_t *body, const uint8_t *expect, size_t n, unsigned cbs,
                             unsigned sbs)
{
    const struct dgram **b1 = calloc(c->n + 1, sizeof *b1), **b2 = calloc(c->n + 1, sizeof *b2);
    size_t n1 = 0, n2 = 0, follow = 0;
    const struct dgram *first = NULL, *final = NULL;
    char w[200];
    for (size_t k = 0; k < c->n; k++) {
        const struct dgram *d = &c->d[k];
        if (d->duplicate || d->code == 0)
            continue;
        if (d->oscore)
            report_add(r, "%s: frame %u has an OSCORE option in an unprotected transfer", what,
                       d->frame);
        if (d->to_server) {
            if (!first)
                first = d;
            if (d->b1.present)
                b1[n1++] = d;
            /* RFC 7959 Section 2.4: the client asks for the further
             * blocks of a response with Block2 NUM 1, 2, ... in order. */
            if (d->b2.present && d->b2.num > 0) {
                follow++;
                if (d->b2.num != follow)
                    report_add(r, "%s: frame %u asks for Block2 NUM %u, expected %zu", what,
                               d->frame, d->b2.num, follow);
            }
        } else {
            if (d->b2.present)
                b2[n2++] = d;
            if (d->code >> 5 == 2 && d->code != 95)
                final = d;
        }
    }
    if (!first || !final) {
        report_add(r, "%s: no request or no final 2.xx response in the capture", what);
        goto out;
    }
    if (post && n > cbs) {
        snprintf(w, sizeof w, "%s request", what);
        check_blocks(r, w, b1, n1, body, n, cbs);
        /* RFC 7959 Section 4: Size1 "in a request carrying a Block1
         * Option, to indicate the current estimate the client has of the
         * total size of the resource representation": if sent, it is n. */
        if (n1 && b1[0]->size1 >= 0 && (size_t)b1[0]->size1 != n)
            report_add(r, "%s: Size1 %ld in the first Block1 request, body %zu", what, b1[0]->size1,
                       n);
        /* The responder handles the body atomically (it reassembles it
         * before /echo sees it), so each block but the last is answered
         * with 2.31 (Continue), which (RFC 7959 Section 2.9.1) "indicates
         * that the transfer of this block of the request body was
         * successful"; Section 2.3: the response's Block1 option names the
         * block it acknowledges. The last block gets the final response. */
        for (size_t k = 0; k < n1; k++) {
            const struct dgram *a = answer_to(c, b1[k]);
            bool last = k + 1 == n1;
            if (!a)
                report_add(r, "%s: no answer to Block1 block %zu (frame %u)", what, k,
                           b1[k]->frame);
            else if ((last && (a->code >> 5 != 2 || a->code == 95)) || (!last && a->code != 95))
                report_add(r, "%s: answer to Block1 block %zu is %u.%02u, expected %s", what, k,
                           a->code >> 5, a->code & 31, last ? "2.04" : "2.31 Continue");
            else if (!a->b1.present || a->b1.num != b1[k]->b1.num)
                report_add(r, "%s: answer to Block1 block %zu does not carry Block1 NUM %zu", what,
                           k, k);
        }
    } else if (n1) {
        report_add(r, "%s: %zu Block1 requests for a body of %zu bytes at block size %u", what, n1,
                   post ? n : 0, cbs);
    } else if (post && (first->payload_len != n || (n && memcmp(first->payload, body, n)))) {
        report_add(r, "%s: the single request carries %zu bytes, not the %zu of the body", what,
                   first->payload_len, n);
    }
    if (n > sbs) {
        snprintf(w, sizeof w, "%s response", what);
        check_blocks(r, w, b2, n2, expect, n, sbs);
        if (follow + 1 != n2)
            report_add(r, "%s: %zu Block2 follow-up requests for %zu blocks", what, follow, n2);
        /* RFC 7959 Section 4: Size2 in a response "indicates the current
         * estimate the server has of the total size": if sent, it is n. */
        if (n2 && b2[0]->size2 >= 0 && (size_t)b2[0]->size2 != n)
            report_add(r, "%s: Size2 %ld in the first Block2 response, body %zu", what,
                       b2[0]->size2, n);
        /* RFC 7959 Section 2.4: the blocks of one representation; an ETag
         * the server gives identifies it, so it cannot change midway. */
        for (size_t k = 1; k < n2; k++) {
            if (b2[k]->etag_len != b2[0]->etag_len ||
                memcmp(b2[k]->etag, b2[0]->etag, b2[0]->etag_len)) {
                report_add(r, "%s: the ETag changes between Block2 blocks 0 and %zu", what, k);
                break;
            }
        }
    } else if (n2) {
        report_add(r, "%s: %zu Block2 responses for a body of %zu bytes at block size %u", what, n2,
                   n, sbs);
    } else if (final->payload_len != n || (n && memcmp(final->payload, expect, n))) {
        report_add(r, "%s: the single response carries %zu bytes, not the %zu expected", what,
                   final->payload_len, n);
    }
out:
    free(b1);
    free(b2);
}

/* The expected number of OSCORE requests of one transfer: RFC 8613
 * Section 4.1.3.4.1, every block is its own OSCORE message, and Section
 * 7.2.1 / 8.1: each request is protected with the next sender sequence
 * number. POST: ceil(n/cbs) Block1 blocks (one request if the body fits),
 * then a request for each further Block2 block; GET: one request per
 * Block2 block. An Echo challenge (RFC 8613 Appendix B.1.2) adds one. */
static size_t expected_oscore_requests(bool post, size_t n, unsigned cbs, unsigned sbs)
{
    size_t req = post && n > cbs ? ceil_div(n, cbs) : 1;
    if (n > sbs)
        req += ceil_div(n, sbs) - 1;
    return req;
}

/* One transfer that must succeed, with every check; problems into r. */
static void transfer_ok(struct report *r, bool oscore, bool post, uint16_t port, size_t n,
                        unsigned cbs, unsigned sbs, const char *conf)
{
    char what[160], pcap[300];
    snprintf(what, sizeof what, "%s %s %zu bytes, client block %u, server block %u",
             oscore ? "OSCORE" : "unprotected", post ? "POST /echo" : "GET /bytes", n, cbs, sbs);
    net_path(pcap, sizeof pcap, "transfer.pcap");
    report_begin(r, what);
    struct xfer x;
    uint64_t t0 = net_now_ms();
    transfer(&x, post, port, n, cbs, oscore ? conf : NULL, oscore ? NULL : pcap, NULL);
    uint64_t ms = net_now_ms() - t0;
    if (ms > 1000)
        print_message("slow: %s took %llu ms\n", what, (unsigned long long)ms);
    uint8_t *want = post ? make_body(n) : make_pattern(n);
    const char *code = post ? "\"code\": \"2.04\"" : "\"code\": \"2.05\"";
    if (x.rc != 0 || !strstr(x.out, code)) {
        /* RFC 7959 Section 2.3/2.4: the whole body, block by block, ends
         * in the one final response of the request. */
        report_add(r, "%s: exit %d, expected 0 and %s:\n%.600s", what, x.rc, code, x.out);
        goto out;
    }
    /* The body as received: exactly what was sent (POST /echo returns the
     * request body) or the /bytes pattern, byte for byte. */
    if (!x.body)
        report_add(r, "%s: no --output file", what);
    else if (x.body_len != n || (n && memcmp(x.body, want, n))) {
        size_t k = 0;
        while (k < n && k < x.body_len && x.body[k] == want[k])
            k++;
        report_add(r, "%s: --output holds %zu bytes, first difference at byte %zu", what,
                   x.body_len, k);
    }
    if (json_num(x.out, "payload_bytes") != (long)n)
        report_add(r, "%s: \"payload_bytes\" %ld", what, json_num(x.out, "payload_bytes"));
    if (oscore) {
        /* RFC 8613 Section 8.4: the response to an OSCORE request is
         * verified; an unprotected one is not the answer. */
        if (!strstr(x.out, "\"oscore\": true"))
            report_add(r, "%s: the response was not OSCORE-protected:\n%.400s", what, x.out);
        long got = json_num(x.out, "oscore_requests_protected");
        size_t exp = expected_oscore_requests(post, n, cbs, sbs);
        if (strstr(x.out, "\"echo\": true"))
            exp++;
        if (got != (long)exp)
            report_add(r, "%s: %ld OSCORE requests protected, expected %zu (one per block)", what,
                       got, exp);
    } else {
        struct capture c;
        capture_read(pcap, port, &c);
        unsigned before = r->item_problems;
        check_plain_wire(r, what, &c, post, want, want, n, cbs, sbs);
        if (r->item_problems > before)
            capture_dump(r, &c, 24);
        capture_free(&c);
    }
out:
    report_end(r);
    free(want);
    xfer_free(&x);
}

/* ---- setup ------------------------------------------------------------- */

static int start(struct net_proc *p, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int start(struct net_proc *p, const char *name, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return net_responder_start(p, name, args);
}

static int group_setup(void **state)
{
    (void)state;
    if (net_make_dir("blockwise") || write_bodies())
        return -1;
    char server_conf[300], name[64], secret[40];
    for (size_t i = 0; i < N_BS; i++) {
        snprintf(name, sizeof name, "plain%u", bsizes[i]);
        if (start(&plain_r[i], name,
                  "--listen 127.0.0.1:0 --allow-unprotected --state-dir none --block-size %u "
                  "--max-body %d",
                  bsizes[i], BIG_MAX_BODY))
            return -1;
        snprintf(name, sizeof name, "osc%u", bsizes[i]);
        snprintf(secret, sizeof secret, "0102030405060708090a0b0c0d0e%04x", bsizes[i]);
        context_pair(name, "c1", "01", secret, osc_client_conf[i], server_conf, sizeof server_conf);
        if (start(&osc_r[i], name,
                  "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s/%s.state "
                  "--block-size %u --max-body %d",
                  server_conf, net_dir, name, bsizes[i], BIG_MAX_BODY))
            return -1;
    }
    if (start(&plain_small, "plainsmall",
              "--listen 127.0.0.1:0 --allow-unprotected --state-dir none --block-size 64 "
              "--max-body %d",
              SMALL_MAX_BODY))
        return -1;
    context_pair("oscsmall", "c2", "02", "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf", small_client_conf,
                 server_conf, sizeof server_conf);
    return start(&osc_small, "oscsmall",
                 "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s/oscsmall.state "
                 "--block-size 64 --max-body %d",
                 server_conf, net_dir, SMALL_MAX_BODY);
}

/* Before each test: the shared responders are still up. */
static int check_alive(void **state)
{
    (void)state;
    struct net_proc *all[] = {&plain_r[0], &plain_r[1], &plain_r[2], &plain_r[3],  &osc_r[0],
                              &osc_r[1],   &osc_r[2],   &osc_r[3],   &plain_small, &osc_small};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!all[i]->pid || kill(all[i]->pid, 0) != 0) {
            char *log = net_read_file(all[i]->log);
            fprintf(stderr, "a shared responder died; its log:\n%s\n", log ? log : "");
            free(log);
            return -1;
        }
    }
    return 0;
}

/* ---- 1. every size, both directions, every block size ------------------ */

/* The matrix of one mode: every size in both directions at every block
 * size (the client's and the responder's the same). */
static void matrix(bool oscore)
{
    struct report r = {0};
    uint64_t t0 = net_now_ms();
    size_t count = 0;
    for (size_t b = 0; b < N_BS; b++) {
        struct net_proc *p = oscore ? &osc_r[b] : &plain_r[b];
        for (size_t i = 0; i < N_SIZES; i++) {
            /* Under OSCORE, no transfer of more than 512 blocks each way
             * (20000 and 65536 bytes in 16-byte blocks, 65536 in 64-byte
             * ones): `coap` reserves its sequence numbers three at a time,
             * each reservation a durable write (temporary file, fsync,
             * rename), so 65536 bytes in 16-byte blocks (8192 requests)
             * take seconds, more on a busy disk. Every size still goes at
             * two block sizes at least, every block size with 3000 bytes
             * at least. */
            if (oscore && sizes[i] / bsizes[b] > 512)
                continue;
            count += 2;
            transfer_ok(&r, oscore, true, p->port, sizes[i], bsizes[b], bsizes[b],
                        osc_client_conf[b]);
            transfer_ok(&r, oscore, false, p->port, sizes[i], bsizes[b], bsizes[b],
                        osc_client_conf[b]);
        }
    }
    print_message("%s matrix: %zu transfers in %llu ms\n", oscore ? "OSCORE" : "unprotected", count,
                  (unsigned long long)(net_now_ms() - t0));
    report_check(&r, oscore ? "OSCORE matrix" : "unprotected matrix");
}

static void test_matrix_unprotected(void **state)
{
    (void)state;
    matrix(false);
}

static void test_matrix_oscore(void **state)
{
    (void)state;
    matrix(true);
}

/* The client and the responder with different block sizes: the client
 * cuts the request body at its size, the responder the response body at
 * its own (RFC 7959 Section 2.3: the size of a Block1 transfer is the
 * client's choice, the server "may" ask for smaller blocks; Section 2.4:
 * the server picks the Block2 size when the client did not ask for one).
 * Also the request body from standard input (--payload-file -). */
static void test_mixed_block_sizes(void **state)
{
    (void)state;
    struct report r = {0};
    static const struct {
        size_t n;
        unsigned cb, sb; /* indexes into bsizes */
    } cells[] = {{3000, 0, 3}, {3000, 3, 0}, {20000, 1, 2}, {1025, 2, 1}, {65536, 3, 1}};
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        unsigned cbs = bsizes[cells[i].cb], sbs = bsizes[cells[i].sb];
        transfer_ok(&r, false, true, plain_r[cells[i].sb].port, cells[i].n, cbs, sbs, NULL);
        transfer_ok(&r, true, true, osc_r[cells[i].sb].port, cells[i].n, cbs, sbs,
                    osc_client_conf[cells[i].sb]);
        transfer_ok(&r, true, false, osc_r[cells[i].sb].port, cells[i].n, cbs, sbs,
                    osc_client_conf[cells[i].sb]);
    }
    /* --payload-file -: the body read from standard input. */
    char in[300], outp[300];
    body_path(in, sizeof in, 20000);
    net_path(outp, sizeof outp, "stdin-echo.bin");
    for (int o = 0; o < 2; o++) {
        char *out;
        unlink(outp);
        int rc = CLI_RUN(&out,
                         "coap POST coap://127.0.0.1:%u/echo --payload-file - --output %s "
                         "--block-size 64 " CLI_TIMEOUT_OPT " %s%s < %s",
                         o ? osc_r[1].port : plain_r[1].port, outp, o ? "--oscore-context " : "",
                         o ? osc_client_conf[1] : "", in);
        size_t len;
        uint8_t *got = read_bin(outp, &len), *want = make_body(20000);
        if (rc != 0 || !got || len != 20000 || memcmp(got, want, 20000))
            report_add(&r, "%s POST /echo of 20000 bytes from stdin: exit %d, %zu bytes back:\n%s",
                       o ? "OSCORE" : "unprotected", rc, got ? len : 0, out);
        free(got);
        free(want);
        free(out);
    }
    report_check(&r, "mixed block sizes");
}

/* ---- 2. limits ---------------------------------------------------------- */

/* Whether a run that failed left a body behind: the --output file must be
 * absent or empty, or at least hold no part of what was being sent. */
static bool partial_body(const struct xfer *x, const uint8_t *body, size_t n)
{
    if (!x->body || x->body_len == 0)
        return false;
    size_t k = x->body_len < n ? x->body_len : n;
    return memcmp(x->body, body, k < 8 ? k : 8) == 0;
}

/* The responder's --max-body: a body of exactly the limit goes through, one
 * byte more gets 4.13, whatever the block size. */
static void server_limit(bool oscore)
{
    struct report r = {0};
    struct net_proc *p = oscore ? &osc_small : &plain_small;
    const char *conf = oscore ? small_client_conf : NULL;
    char pcap[300];
    net_path(pcap, sizeof pcap, "limit.pcap");

    /* Exactly --max-body: accepted both ways (the limit is inclusive:
     * "largest body reassembled or served", responder --help). */
    transfer_ok(&r, oscore, true, p->port, SMALL_MAX_BODY, 64, 64, conf);
    transfer_ok(&r, oscore, false, p->port, SMALL_MAX_BODY, 256, 64, conf);

    uint8_t *big = make_body(SMALL_MAX_BODY + 1);
    for (size_t b = 0; b < N_BS; b++) {
        struct xfer x;
        char what[120];
        snprintf(what, sizeof what, "%s POST of %d bytes at block size %u",
                 oscore ? "OSCORE" : "unprotected", SMALL_MAX_BODY + 1, bsizes[b]);
        transfer(&x, true, p->port, SMALL_MAX_BODY + 1, bsizes[b], conf, oscore ? NULL : pcap,
                 NULL);
        /* RFC 7959 Section 2.9.3: 4.13 (Request Entity Too Large) "can be
         * returned at any time during a Block1 transfer to indicate that
         * the server does not currently have the resources to store
         * blocks"; the client's exit code for a 4.xx is 1 (coap --help). */
        if (x.rc != 1 || !strstr(x.out, "\"code\": \"4.13\""))
            report_add(&r, "%s: exit %d, expected 1 with 4.13:\n%.600s", what, x.rc, x.out);
        /* ... and the client never presents a part of the body as the
         * answer. */
        if (partial_body(&x, big, SMALL_MAX_BODY + 1))
            report_add(&r, "%s: --output holds %zu bytes of the body", what, x.body_len);
        /* RFC 8613 Section 8.3: the server's application answer, 4.13 too,
         * is protected. */
        if (oscore && !strstr(x.out, "\"oscore\": true"))
            report_add(&r, "%s: the 4.13 was not OSCORE-protected", what);
        if (!oscore) {
            struct capture c;
            capture_read(pcap, p->port, &c);
            const struct dgram *e = NULL;
            bool after = false;
            for (size_t k = 0; k < c.n; k++) {
                if (!c.d[k].to_server && c.d[k].code == (4 << 5 | 13))
                    e = &c.d[k];
                else if (e && c.d[k].to_server && c.d[k].b1.present && !c.d[k].duplicate)
                    after = true;
            }
            /* RFC 7252 Section 5.9.2.9 (which RFC 7959 Section 2.9.3
             * refers to): the 4.13 "SHOULD include a Size1 Option ... to
             * indicate the maximum size of request entity the server is
             * able and willing to handle". */
            if (!e)
                report_add(&r, "%s: no 4.13 on the wire", what);
            else if (e->size1 != SMALL_MAX_BODY)
                report_add(&r, "%s: the 4.13 carries Size1 %ld, expected %d", what, e->size1,
                           SMALL_MAX_BODY);
            /* A 4.13 is the final response of the request: no further
             * Block1 block of that body follows it. */
            if (after)
                report_add(&r, "%s: Block1 blocks were sent after the 4.13", what);
            capture_free(&c);
        }
        xfer_free(&x);
    }
    free(big);

    /* GET /bytes?n=N above the responder's --max-body: "largest body ...
     * served ...; above it: 4.13" (responder --help); nothing of the
     * pattern is written as if it were the answer. */
    struct xfer x;
    uint8_t *pat = make_pattern(SMALL_MAX_BODY + 1);
    transfer(&x, false, p->port, SMALL_MAX_BODY + 1, 64, conf, NULL, NULL);
    if (x.rc != 1 || !strstr(x.out, "\"code\": \"4.13\""))
        report_add(&r, "GET /bytes?n=%d: exit %d, expected 1 with 4.13:\n%.600s",
                   SMALL_MAX_BODY + 1, x.rc, x.out);
    if (partial_body(&x, pat, SMALL_MAX_BODY + 1))
        report_add(&r, "GET /bytes?n=%d: --output holds %zu bytes of the pattern",
                   SMALL_MAX_BODY + 1, x.body_len);
    xfer_free(&x);
    free(pat);

    /* The same one byte above --max-body 65536 (the responders of the
     * matrix, which took exactly 65536 bytes): 4.13 both ways. The client
     * is allowed more (--max-body 1048576) so that only the responder
     * refuses. */
    struct net_proc *bigr = oscore ? &osc_r[3] : &plain_r[3];
    const char *bigconf = oscore ? osc_client_conf[3] : NULL;
    uint8_t *body = make_body(BIG_MAX_BODY + 1);
    pat = make_pattern(BIG_MAX_BODY + 1);
    for (int post = 0; post < 2; post++) {
        transfer(&x, post, bigr->port, BIG_MAX_BODY + 1, 1024, bigconf, NULL, "--max-body 1048576");
        if (x.rc != 1 || !strstr(x.out, "\"code\": \"4.13\"") ||
            partial_body(&x, post ? body : pat, BIG_MAX_BODY + 1))
            report_add(&r,
                       "%s of %d bytes to a responder with --max-body %d: exit %d, --output "
                       "%zu bytes (expected 1, 4.13, no body):\n%.600s",
                       post ? "POST /echo" : "GET /bytes", BIG_MAX_BODY + 1, BIG_MAX_BODY, x.rc,
                       x.body ? x.body_len : 0, x.out);
        xfer_free(&x);
    }
    free(body);
    free(pat);
    report_check(&r, oscore ? "OSCORE responder --max-body" : "unprotected responder --max-body");
}

static void test_server_max_body_unprotected(void **state)
{
    (void)state;
    server_limit(false);
}

static void test_server_max_body_oscore(void **state)
{
    (void)state;
    server_limit(true);
}

/* The client's own --max-body: a response body above it is refused (exit
 * status not 0, nothing of it in --output); exactly the limit is fine; a
 * request body above it is not even sent. The responder serves up to
 * 65536 bytes here, so only the client can refuse. */
static void client_limit(bool oscore)
{
    struct report r = {0};
    size_t b = 1; /* the responders with 64-byte blocks */
    struct net_proc *p = oscore ? &osc_r[b] : &plain_r[b];
    const char *conf = oscore ? osc_client_conf[b] : NULL;
    char lim[64];
    snprintf(lim, sizeof lim, "--max-body %d", SMALL_MAX_BODY);
    const char *mode = oscore ? "OSCORE" : "unprotected";

    struct xfer x;
    uint8_t *pat = make_pattern(20000);
    /* Exactly the client's limit: accepted. */
    transfer(&x, false, p->port, SMALL_MAX_BODY, 64, conf, NULL, lim);
    if (x.rc != 0 || x.body_len != SMALL_MAX_BODY || !x.body || memcmp(x.body, pat, x.body_len))
        report_add(&r, "%s GET /bytes?n=%d with %s: exit %d, %zu bytes:\n%.400s", mode,
                   SMALL_MAX_BODY, lim, x.rc, x.body_len, x.out);
    xfer_free(&x);

    /* Above it (a block above, and far above): refused. coap --help:
     * "--max-body N  largest request or response body"; a failed
     * transfer is not an answer ("Never a part of the body as if it were
     * the answer"), so neither exit 0 nor the body in --output. */
    static const size_t over[] = {SMALL_MAX_BODY + 1, 5000, 20000};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        for (size_t k = 0; k < 2; k++) {
            unsigned bs = k ? 1024 : 64;
            transfer(&x, false, p->port, over[i], bs, conf, NULL, lim);
            if (x.rc == 0 || partial_body(&x, pat, over[i]))
                report_add(&r,
                           "%s GET /bytes?n=%zu with %s, block size %u: exit %d, --output "
                           "%zu bytes (expected a non-zero exit and no body):\n%.400s",
                           mode, over[i], lim, bs, x.rc, x.body ? x.body_len : 0, x.out);
            xfer_free(&x);
        }
    }
    free(pat);

    /* A request body above the client's limit: refused before anything is
     * sent (exit 2, "larger than --max-body"). */
    char in[300], outp[300], *out;
    body_path(in, sizeof in, SMALL_MAX_BODY + 1);
    net_path(outp, sizeof outp, "not-sent.bin");
    unlink(outp);
    int rc = CLI_RUN(
        &out,
        "coap POST coap://127.0.0.1:%u/echo --payload-file %s --output %s %s " CLI_TIMEOUT_OPT
        " %s%s",
        p->port, in, outp, lim, conf ? "--oscore-context " : "", conf ? conf : "");
    if (rc != 2 || !strstr(out, "larger than --max-body") || access(outp, F_OK) == 0)
        report_add(&r, "%s POST of %d bytes with %s: exit %d (expected 2):\n%s", mode,
                   SMALL_MAX_BODY + 1, lim, rc, out);
    free(out);
    report_check(&r, oscore ? "OSCORE client --max-body" : "unprotected client --max-body");
}

static void test_client_max_body_oscore(void **state)
{
    (void)state;
    client_limit(true);
}

/* Without --oscore-context the transport gathers the Block2 body: it must
 * stop at coap's --max-body too (it used to take its own default of
 * 65536 bytes, so GET /bytes?n=5000 with --max-body 4096 exited 0). */
static void test_client_max_body_unprotected(void **state)
{
    (void)state;
    client_limit(false);
}

/* Under OSCORE the blocks are inner (RFC 8613 Section
 * 4.1.3.4.1: "The sending CoAP endpoint MAY fragment a CoAP message as
 * defined in [RFC7959] before the message is processed by OSCORE. In this
 * case, the Block options SHALL be processed by OSCORE as normal Inner
 * options"); Outer Block options are what "Proxies MAY" add (Section
 * 4.1.3.4.2), and the responder itself only cuts an OSCORE response on
 * the outside when it cannot fit one PDU (src/coap/transport.c). The
 * client must not cut an inner Block1 request again in outer blocks
 * although its ciphertext is larger than --block-size (it once did: twice
 * the datagrams, and 2.31 answers to the outer blocks unprotected). */
static void test_oscore_blocks_are_inner_only(void **state)
{
    (void)state;
    struct report r = {0};
    char pcap[300];
    net_path(pcap, sizeof pcap, "inner.pcap");
    for (size_t b = 0; b < N_BS; b++) {
        for (int post = 1; post >= 0; post--) {
            size_t n = 3000;
            char what[120];
            snprintf(what, sizeof what, "OSCORE %s %zu bytes at block size %u",
                     post ? "POST /echo" : "GET /bytes", n, bsizes[b]);
            struct xfer x;
            transfer(&x, post, osc_r[b].port, n, bsizes[b], osc_client_conf[b], pcap, NULL);
            if (x.rc != 0) {
                report_add(&r, "%s: exit %d:\n%.400s", what, x.rc, x.out);
                xfer_free(&x);
                continue;
            }
            struct capture c;
            capture_read(pcap, osc_r[b].port, &c);
            size_t requests = 0;
            unsigned outer = 0, plain = 0;
            for (size_t k = 0; k < c.n; k++) {
                const struct dgram *d = &c.d[k];
                if (d->code == 0)
                    continue; /* an empty ACK carries nothing to protect */
                if (d->to_server && !d->duplicate)
                    requests++;
                /* Every request and every response of the transfer is an
                 * OSCORE message (RFC 8613 Section 8.1, 8.3) ... */
                if (!d->oscore && plain++ < 3)
                    report_add(&r, "%s: frame %u (%u.%02u) is not an OSCORE message", what,
                               d->frame, d->code >> 5, d->code & 31);
                /* ... and no Block option is outside the ciphertext. */
                if ((d->b1.present || d->b2.present) && outer++ < 3)
                    report_add(&r, "%s: frame %u carries an outer Block%d option (NUM %u)", what,
                               d->frame, d->b1.present ? 1 : 2,
                               d->b1.present ? d->b1.num : d->b2.num);
            }
            /* One datagram per inner block: as many requests on the wire as
             * requests protected. */
            size_t exp = expected_oscore_requests(post, n, bsizes[b], bsizes[b]);
            if (requests != exp)
                report_add(&r, "%s: %zu request datagrams, expected %zu (one per inner block)",
                           what, requests, exp);
            capture_free(&c);
            xfer_free(&x);
        }
    }
    report_check(&r, "OSCORE block-wise on the wire");
}

/* initiator --request with a body from --payload-file and the answer's
 * body in --output: after a real handshake, under the EDHOC-derived
 * context, in inner blocks (RFC 8613 Section 4.1.3.4.1). */
static void test_initiator_payload_file_output(void **state)
{
    (void)state;
    char in[300], out_path[300];
    body_path(in, sizeof in, 20000);
    net_path(out_path, sizeof out_path, "initiator.out");
    unlink(out_path);
    char *out;
    int rc = net_cli_run(&out, 40, false,
                         "initiator coap://127.0.0.1:%u --request \"POST /echo\" --payload-file %s "
                         "--output %s --block-size 64 --timeout 20",
                         plain_r[0].port, in, out_path);
    if (rc != 0)
        fail_msg("initiator: %d\n%.2000s", rc, out);
    free(out);
    char *a = net_read_file(in), *b = net_read_file(out_path);
    assert_non_null(a);
    assert_non_null(b);
    struct stat sa, sb;
    assert_int_equal(stat(in, &sa), 0);
    assert_int_equal(stat(out_path, &sb), 0);
    assert_int_equal(sa.st_size, 20000);
    assert_int_equal(sb.st_size, 20000);
    assert_memory_equal(a, b, 20000); /* /echo returns the body it got */
    free(a);
    free(b);
}

int main(void)
{
    uint64_t t0 = net_now_ms();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_matrix_unprotected, check_alive),
        cmocka_unit_test_setup(test_matrix_oscore, check_alive),
        cmocka_unit_test_setup(test_mixed_block_sizes, check_alive),
        cmocka_unit_test_setup(test_server_max_body_unprotected, check_alive),
        cmocka_unit_test_setup(test_server_max_body_oscore, check_alive),
        cmocka_unit_test_setup(test_client_max_body_oscore, check_alive),
        cmocka_unit_test_setup(test_client_max_body_unprotected, check_alive),
        cmocka_unit_test_setup(test_oscore_blocks_are_inner_only, check_alive),
        cmocka_unit_test_setup(test_initiator_payload_file_output, check_alive),
    };
    int failed =
        cmocka_run_group_tests_name("cli_blockwise", tests, group_setup, net_group_teardown);
    fprintf(stderr, "cli_blockwise: %llu ms\n", (unsigned long long)(net_now_ms() - t0));
    return failed;
}
