/*
 * Block-wise transfer end to end, through the real binary, each test with
 * a responder of its own: an EDHOC handshake whose message_2 and
 * message_3 carry a two-certificate x5chain over 64-byte blocks (RFC 9528
 * over RFC 7959), and Wireshark's own dissector decrypting an OSCORE
 * transfer with inner blocks (RFC 8613 Section 4.1.3.4.1).
 */
#include "cli_blockwise_test_common.h"

/* ---- 3. EDHOC with a two-certificate x5chain over 64-byte blocks ------- */

static int keygen(const char *args)
{
    char *out;
    int rc = CLI_RUN(&out, "keygen %s", args);
    if (rc != 0)
        fprintf(stderr, "keygen %s: exit %d\n%s\n", args, rc, out);
    free(out);
    return rc;
}

/* The "hex" of trace item name in the initiator's --json --trace output
 * (malloc'd), or NULL. */
static char *trace_hex(const char *json, const char *name)
{
    char pat[80];
    char *compact = net_json_compact(json);
    snprintf(pat, sizeof pat, "{\"name\":\"%s\",\"hex\":\"", name);
    const char *p = strstr(compact, pat);
    const char *e = p ? strchr(p + strlen(pat), '"') : NULL;
    char *hex = e ? strndup(p + strlen(pat), (size_t)(e - p - strlen(pat))) : NULL;
    free(compact);
    return hex;
}

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; h[0] && h[1] && n < cap; h += 2) {
        unsigned v;
        if (sscanf(h, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

/* "edhoc_bytes" of message name in the initiator's JSON, or -1. */
static long message_bytes(const char *json, const char *name)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"name\": \"%s\",", name);
    const char *p = strstr(json, pat);
    return p ? json_num(p, "edhoc_bytes") : -1;
}

static void test_edhoc_x5chain_64(void **state)
{
    (void)state;
    /* A root CA, an intermediate CA it signs, and one P-256 leaf per side
     * signed by the intermediate: each credential file is leaf +
     * intermediate, so each ID_CRED x5chain carries two certificates.
     * (The built-in demo x5chain is a single certificate.) */
    char pki[300], a[1600];
    net_path(pki, sizeof pki, "pki");
    mkdir(pki, 0700);
    snprintf(a, sizeof a,
             "--type x509 --suite 2 --use sign --ca --subject bw-root --out-cred %s/root.pem "
             "--out-key %s/root.key --force",
             pki, pki);
    assert_int_equal(keygen(a), 0);
    snprintf(a, sizeof a,
             "--type x509 --suite 2 --use sign --ca --subject bw-inter --ca-cert %s/root.pem "
             "--ca-key %s/root.key --out-cred %s/inter.pem --out-key %s/inter.key --force",
             pki, pki, pki, pki);
    assert_int_equal(keygen(a), 0);
    for (int i = 0; i < 2; i++) {
        const char *w = i ? "r" : "i";
        snprintf(a, sizeof a,
                 "--type x509 --suite 2 --use dh --subject bw-%s --ca-cert %s/inter.pem "
                 "--ca-key %s/inter.key --out-cred %s/%s.pem --out-key %s/%s.key --force",
                 w, pki, pki, pki, w, pki, w);
        assert_int_equal(keygen(a), 0);
    }
    static struct net_proc r;
    snprintf(a, sizeof a,
             "--listen 127.0.0.1:0 --state-dir none --cred %s/r.pem --key %s/r.key "
             "--trust %s/root.pem --id-cred x5chain --block-size 64",
             pki, pki, pki);
    assert_int_equal(net_responder_start(&r, "x5chain", a), 0);

    struct report rep = {0};
    char pcap[300];
    net_path(pcap, sizeof pcap, "x5chain.pcap");
    for (int method = 0; method <= 3; method += 3) {
        unlink(pcap);
        char *out;
        /* Method 3 authenticates with the static DH keys of the leaves,
         * method 0 signs with them (P-256 serves both). */
        int rc = net_cli_run(&out, RUN_TIMEOUT_S, true,
                             "initiator coap://127.0.0.1:%u --method %d --suites 2 --cred %s/i.pem "
                             "--key %s/i.key --trust %s/root.pem --id-cred x5chain "
                             "--block-size 64 --request \"POST /echo x5chain\" --json --trace "
                             "--pcap %s " CLI_TIMEOUT_OPT,
                             r.port, method, pki, pki, pki, pcap);
        if (rc != 0 || !strstr(out, "\"outcome\": \"ok\"")) {
            report_add(&rep, "method %d: initiator exit %d:\n%.2000s", method, rc, out);
            free(out);
            continue;
        }
        if (!strstr(out, "\"id_cred_i\": \"x5chain\"") ||
            !strstr(out, "\"id_cred_r\": \"x5chain\""))
            report_add(&rep, "method %d: ID_CRED_I/ID_CRED_R not x5chain", method);
        /* RFC 9360 Section 2: x5chain "If multiple certificates are
         * conveyed, a CBOR array of byte strings is used": ID_CRED_R =
         * {33: [cert, cert]} (a1 18 21 82) right after C_R in PLAINTEXT_2,
         * ID_CRED_I at the start of PLAINTEXT_3 (RFC 9528 Sections 5.3.2,
         * 5.4.2). */
        char *pt2 = trace_hex(out, "PLAINTEXT_2"), *pt3 = trace_hex(out, "PLAINTEXT_3");
        char *m3hex = trace_hex(out, "message_3");
        if (!pt2 || !pt3 || !m3hex)
            report_add(&rep, "method %d: PLAINTEXT_2, PLAINTEXT_3 or message_3 not in the trace",
                       method);
        else {
            char head[17];
            snprintf(head, sizeof head, "%s", pt2);
            if (!strstr(head, "a1182182"))
                report_add(&rep, "method %d: ID_CRED_R is not a two-certificate x5chain: %.40s",
                           method, pt2);
            if (strncmp(pt3, "a1182182", 8))
                report_add(&rep, "method %d: ID_CRED_I is not a two-certificate x5chain: %.40s",
                           method, pt3);
        }
        if (!strstr(out, "\"payload_text\": \"x5chain\""))
            report_add(&rep, "method %d: the OSCORE request after the handshake was not echoed",
                       method);

        /* The datagrams: message_2 came in Block2 blocks of 64 bytes,
         * message_3 went in Block1 blocks of 64 bytes (RFC 9528 Appendix
         * A.2 carries EDHOC messages as CoAP payloads, so RFC 7959 applies
         * to them like to any body). */
        long m2 = message_bytes(out, "message_2"), m3 = message_bytes(out, "message_3");
        struct capture c;
        capture_read(pcap, r.port, &c);
        const struct dgram **b1 = calloc(c.n + 1, sizeof *b1), **b2 = calloc(c.n + 1, sizeof *b2);
        size_t n1 = 0, n2 = 0;
        for (size_t k = 0; k < c.n; k++) {
            if (c.d[k].duplicate)
                continue;
            if (c.d[k].to_server && c.d[k].b1.present)
                b1[n1++] = &c.d[k];
            if (!c.d[k].to_server && c.d[k].b2.present)
                b2[n2++] = &c.d[k];
        }
        /* message_2 (a response body) reassembled from its Block2 blocks. */
        uint8_t *m2body = malloc((size_t)(m2 > 0 ? m2 : 1));
        size_t off = 0;
        for (size_t k = 0; k < n2 && m2 > 0; k++) {
            size_t l = b2[k]->payload_len;
            if (off + l > (size_t)m2)
                break;
            memcpy(m2body + off, b2[k]->payload, l);
            off += l;
        }
        char what[80];
        snprintf(what, sizeof what, "method %d message_2 (%ld bytes)", method, m2);
        if (m2 <= 64 * 2)
            report_add(&rep, "%s: not several 64-byte blocks long", what);
        else if (n2 < 2)
            report_add(&rep, "%s: in %zu Block2 datagrams", what, n2);
        else
            check_blocks(&rep, what, b2, n2, m2body, (size_t)m2, 64);
        if (off != (size_t)m2)
            report_add(&rep, "%s: the Block2 blocks hold %zu bytes", what, off);
        /* And what they hold is message_2: it ends with CIPHERTEXT_2 =
         * PLAINTEXT_2 XOR KEYSTREAM_2 (RFC 9528 Section 5.3.2), computed
         * here from the trace. */
        char *ks2 = trace_hex(out, "KEYSTREAM_2");
        size_t ctlen = pt2 ? strlen(pt2) / 2 : 0;
        uint8_t *ct = malloc(ctlen + 1), *ks = malloc(ctlen + 1);
        if (!ks2 || !pt2 || strlen(ks2) != strlen(pt2) || ctlen + 2 > off ||
            unhex(pt2, ct, ctlen) != ctlen || unhex(ks2, ks, ctlen) != ctlen) {
            report_add(&rep, "%s: no PLAINTEXT_2 / KEYSTREAM_2 of its size in the trace", what);
        } else {
            for (size_t k = 0; k < ctlen; k++)
                ct[k] ^= ks[k];
            if (memcmp(m2body + off - ctlen, ct, ctlen))
                report_add(&rep, "%s: its Block2 blocks do not end with CIPHERTEXT_2", what);
        }
        free(ct);
        free(ks);
        free(ks2);
        free(m2body);
        /* message_3 (a request body: C_R, then message_3, Appendix A.2)
         * reassembled from its Block1 blocks ends with message_3 as the
         * trace shows it. */
        size_t m3len = m3hex ? strlen(m3hex) / 2 : 0;
        uint8_t *m3want = malloc(m3len + 1);
        unhex(m3hex ? m3hex : "", m3want, m3len);
        size_t total = 0;
        for (size_t k = 0; k < n1; k++)
            total += b1[k]->payload_len;
        uint8_t *m3body = malloc(total + 1);
        off = 0;
        for (size_t k = 0; k < n1; k++) {
            memcpy(m3body + off, b1[k]->payload, b1[k]->payload_len);
            off += b1[k]->payload_len;
        }
        snprintf(what, sizeof what, "method %d message_3 (%ld bytes)", method, m3);
        if (m3 <= 64 * 2 || (size_t)m3 != m3len)
            report_add(&rep, "%s: not several 64-byte blocks long (trace %zu bytes)", what, m3len);
        else if (n1 < 2)
            report_add(&rep, "%s: in %zu Block1 datagrams", what, n1);
        else if (total < m3len || total > m3len + 5 ||
                 memcmp(m3body + total - m3len, m3want, m3len))
            report_add(&rep, "%s: the %zu bytes of its Block1 blocks do not end with message_3",
                       what, total);
        else
            check_blocks(&rep, what, b1, n1, m3body, total, 64);
        print_message("method %d: message_2 %ld bytes in %zu Block2 datagrams, message_3 %ld "
                      "bytes in %zu Block1 datagrams\n",
                      method, m2, n2, m3, n1);
        free(m3body);
        free(m3want);
        free(b1);
        free(b2);
        capture_free(&c);
        free(pt2);
        free(pt3);
        free(m3hex);
        free(out);
    }
    net_proc_stop(&r, SIGTERM, 5000);
    report_check(&rep, "EDHOC x5chain over 64-byte blocks");
}

/* ---- 4. Wireshark decrypts the inner blocks ---------------------------- */

static const char *tshark_skip;

/* Split a tab-separated tshark line into at most max fields (in place). */
static size_t split_tabs(char *line, char **f, size_t max)
{
    size_t n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++) {
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    for (size_t i = n; i < max; i++)
        f[i] = "";
    return n;
}

/* The index-th comma-separated number of list (or -1). */
static long nth(const char *list, size_t index)
{
    const char *p = list;
    for (size_t i = 0; i < index && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return p && *p ? strtol(p, NULL, 10) : -1;
}

/* The inner Block1 or Block2 (which = 1 or 2) of a decrypted message from
 * tshark's oscore.opt.* fields (names "#2: Block2", numbers in the order
 * of the Block options). */
static bool inner_block(char *const *f, int which, struct blk *b)
{
    const char *names = f[5];
    size_t idx = 0;
    for (const char *p = names; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        bool is1 = memmem(p, l, "Block1", 6) != NULL, is2 = memmem(p, l, "Block2", 6) != NULL;
        if ((which == 1 && is1) || (which == 2 && is2)) {
            b->present = true;
            b->num = (unsigned)nth(f[6], idx);
            b->m = (unsigned)nth(f[7], idx);
            b->szx = (unsigned)nth(f[8], idx);
            return true;
        }
        if (is1 || is2)
            idx++;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* Run argv (bounded by timeout(1)), stdout and stderr into *out. Returns
 * the exit status or -1. */
static int run_argv(char *const argv[], unsigned timeout_s, char **out)
{
    char log[300], secs[16];
    net_path(log, sizeof log, "argv.out");
    unlink(log);
    snprintf(secs, sizeof secs, "%u", timeout_s);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        char *args[40] = {"timeout", "-k", "2", secs};
        size_t n = 4;
        for (size_t i = 0; argv[i] && n < 39; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        execvp("timeout", args);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
    *out = net_read_file(log);
    if (!*out)
        *out = strdup("");
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* tshark on pcap (CoAP on port) with one OSCORE context row; fields:
 * frame, udp.dstport, coap.code, outer option names, oscore.tag, inner
 * option names, inner block NUM / M / SZX, expert messages. */
static int run_tshark(char **out, const char *pcap, uint16_t port, const char *row)
{
    char decode_as[64], uat[512];
    snprintf(decode_as, sizeof decode_as, "udp.port==%u,coap", port);
    snprintf(uat, sizeof uat, "uat:oscore_contexts:%s", row);
    char *argv[] = {"tshark", "-n",
                    "-r",     (char *)pcap,
                    "-d",     decode_as,
                    "-o",     uat,
                    "-T",     "fields",
                    "-E",     "separator=/t",
                    "-E",     "occurrence=a",
                    "-e",     "frame.number",
                    "-e",     "udp.dstport",
                    "-e",     "coap.code",
                    "-e",     "coap.opt.name",
                    "-e",     "oscore.tag",
                    "-e",     "oscore.opt.name",
                    "-e",     "oscore.opt.block_number",
                    "-e",     "oscore.opt.block_mflag",
                    "-e",     "oscore.opt.block_size",
                    "-e",     "_ws.expert.message",
                    NULL};
    return run_argv(argv, 60, out);
}

/* Dissect pcap with row; report what is wrong with the OSCORE transfer:
 * each datagram an OSCORE message that tshark decrypts and verifies, no
 * outer Block option, the inner Block1 blocks (requests) and Block2
 * blocks (responses) numbered 0.. at SZX of bs with M set on all but the
 * last, want1/want2 of them. Returns how many datagrams decrypted. */
static size_t tshark_check(struct report *r, const char *what, const char *pcap, uint16_t port,
                           const char *row, unsigned bs, size_t want1, size_t want2)
{
    char *out;
    int rc = run_tshark(&out, pcap, port, row);
    if (rc != 0) {
        report_add(r, "%s: tshark exit %d:\n%.1000s", what, rc, out);
        free(out);
        return 0;
    }
    size_t decrypted = 0, n1 = 0, n2 = 0, frames = 0;
    size_t unprotected = 0, outer = 0, undecrypted = 0; /* the first 3 of each are listed */
    bool last1 = false, last2 = false;
    for (char *line = out; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        char *f[10];
        if (!strncmp(line, "Running as user", 15) || split_tabs(line, f, 10) < 5)
            goto next;
        long dport = strtol(f[1], NULL, 10), code = strtol(f[2], NULL, 10);
        if (code == 0)
            goto next; /* an empty ACK */
        frames++;
        bool request = dport == port;
        /* RFC 8613 Section 4.1.3.4.1: the Block options are Class E, so
         * no outer Block option; Sections 8.1/8.3: every message of the
         * exchange is protected; the dissector verified the tag
         * (oscore.tag is shown only then) and raised no expert item such
         * as "Authentication tag check failed". */
        if ((strstr(f[3], "Block1") || strstr(f[3], "Block2")) && outer++ < 3)
            report_add(r, "%s: frame %s carries outer Block options (%s)", what, f[0], f[3]);
        if (!strstr(f[3], "OSCORE")) {
            if (unprotected++ < 3)
                report_add(r, "%s: frame %s (code %ld.%02ld) is not an OSCORE message", what, f[0],
                           code >> 5, code & 31);
            goto next;
        }
        net_tshark_drop_traceroute(f[9]);
        if (strlen(f[4]) != 16 || f[9][0]) {
            if (undecrypted++ < 3)
                report_add(r, "%s: frame %s not decrypted by tshark: tag '%s', expert '%s'", what,
                           f[0], f[4], f[9]);
            goto next;
        }
        decrypted++;
        struct blk b = {0};
        if (request && inner_block(f, 1, &b)) {
            bool last = b.m == 0;
            if (b.num != n1 || b.szx != (unsigned)szx_of(bs) || last1)
                report_add(r,
                           "%s: frame %s inner Block1 NUM %u M %u SZX %u, expected NUM %zu "
                           "SZX %d",
                           what, f[0], b.num, b.m, b.szx, n1, szx_of(bs));
            last1 = last;
            n1++;
        }
        memset(&b, 0, sizeof b);
        if (!request && inner_block(f, 2, &b)) {
            bool last = b.m == 0;
            if (b.num != n2 || b.szx != (unsigned)szx_of(bs) || last2)
                report_add(r,
                           "%s: frame %s inner Block2 NUM %u M %u SZX %u, expected NUM %zu "
                           "SZX %d",
                           what, f[0], b.num, b.m, b.szx, n2, szx_of(bs));
            last2 = last;
            n2++;
        }
    next:
        line = eol ? eol + 1 : NULL;
    }
    if (n1 != want1 || (want1 && !last1))
        report_add(r, "%s: %zu decrypted inner Block1 blocks (last M=0: %s), expected %zu", what,
                   n1, last1 ? "yes" : "no", want1);
    if (n2 != want2 || (want2 && !last2))
        report_add(r, "%s: %zu decrypted inner Block2 blocks (last M=0: %s), expected %zu", what,
                   n2, last2 ? "yes" : "no", want2);
    if (!frames)
        report_add(r, "%s: tshark shows no CoAP datagram", what);
    if (unprotected + outer + undecrypted)
        report_add(r,
                   "%s: of %zu datagrams, %zu not OSCORE, %zu with outer Block options, %zu "
                   "OSCORE ones not decrypted and verified by tshark",
                   what, frames, unprotected, outer, undecrypted);
    free(out);
    return decrypted;
}

/* One OSCORE transfer at --block-size 256 against a responder with
 * --block-size 256, captured by `coap --pcap`, then dissected by tshark
 * with the right context (everything decrypts, inner blocks as expected)
 * and with one bit of the master secret flipped (nothing decrypts: the
 * check can fail). */
static void tshark_transfer(bool post)
{
    if (tshark_skip) {
        print_message("skipped: %s\n", tshark_skip);
        skip();
    }
    char client_conf[300], server_conf[300], args[1024], pcap[300];
    const char *name = post ? "wspost" : "wsget";
    context_pair(name, "c7", "07", WS_SECRET, client_conf, server_conf, sizeof client_conf);
    static struct net_proc r;
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s/%s.state --block-size 256",
             server_conf, net_dir, name);
    assert_int_equal(net_responder_start(&r, name, args), 0);
    net_path(pcap, sizeof pcap, post ? "ws-post.pcap" : "ws-get.pcap");
    struct report rep = {0};
    struct xfer x;
    size_t n = 3000;
    transfer(&x, post, r.port, n, 256, client_conf, pcap, NULL);
    uint8_t *want = post ? make_body(n) : make_pattern(n);
    if (x.rc != 0 || !x.body || x.body_len != n || memcmp(x.body, want, n))
        report_add(&rep, "the transfer itself failed: exit %d:\n%.600s", x.rc, x.out);
    free(want);
    xfer_free(&x);
    net_proc_stop(&r, SIGTERM, 5000);

    char what[80];
    snprintf(what, sizeof what, "OSCORE %s of %zu bytes, 256-byte blocks",
             post ? "POST /echo" : "GET /bytes", n);
    size_t blocks = ceil_div(n, 256);
    size_t ok =
        tshark_check(&rep, what, pcap, r.port, WS_ROW(WS_SECRET), 256, post ? blocks : 0, blocks);
    print_message("%s: %zu datagrams decrypted by tshark\n", what, ok);

    /* Control: the last bit of the master secret flipped: tshark decrypts
     * nothing and says why, so the assertions above can fail. */
    char *out;
    run_tshark(&out, pcap, r.port, WS_ROW("0f1e2d3c4b5a69788796a5b4c3d2e1f1"));
    bool refused = strstr(out, "Authentication tag check failed") != NULL;
    size_t good = 0;
    for (char *line = out; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        char *f[10];
        if (strncmp(line, "Running as user", 15) && split_tabs(line, f, 10) >= 5 && strlen(f[4]))
            good++;
        line = eol ? eol + 1 : NULL;
    }
    if (good)
        report_add(&rep, "control: %zu datagrams verified with a wrong master secret", good);
    if (!refused)
        report_add(&rep, "control: no \"Authentication tag check failed\" with a wrong secret");
    free(out);
    report_check(&rep, what);
}

/* Inner Block2 only (GET /bytes?n=3000). */
static void test_tshark_inner_block2(void **state)
{
    (void)state;
    tshark_transfer(false);
}

/* Inner Block1 and Block2 (POST /echo of 3000 bytes), each OSCORE message
 * in one datagram: a client that also cut them in outer Block1 blocks sent
 * pieces tshark could not verify alone. */
static void test_tshark_inner_block1_and_block2(void **state)
{
    (void)state;
    tshark_transfer(true);
}

/* Each test here starts the responder it needs: no shared ones to start
 * or check, only the request bodies to write. */
static int bodies_setup(void **state)
{
    (void)state;
    if (net_make_dir("blockwise-edhoc"))
        return -1;
    return write_bodies();
}

int main(void)
{
    if (system("command -v tshark >/dev/null 2>&1"))
        tshark_skip = "tshark not installed";
    uint64_t t0 = net_now_ms();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edhoc_x5chain_64),
        cmocka_unit_test(test_tshark_inner_block2),
        cmocka_unit_test(test_tshark_inner_block1_and_block2),
    };
    int failed =
        cmocka_run_group_tests_name("cli_blockwise_edhoc", tests, bodies_setup, net_group_teardown);
    fprintf(stderr, "cli_blockwise_edhoc: %llu ms\n", (unsigned long long)(net_now_ms() - t0));
    return failed;
}
