/*
 * Independent check of the OSCORE that edhoc-cli puts on the wire: a real
 * initiator/responder run on loopback is captured with dumpcap, and
 * Wireshark's own OSCORE dissector (tshark), given only the context that
 * `edhoc-cli initiator --export-secrets --json` printed, must decrypt the
 * OSCORE request and its response and verify both authentication tags.
 *
 * Wireshark's OSCORE table (uat:oscore_contexts) rows are
 *   "Sender ID","Recipient ID","Master Secret","Master Salt","ID Context","Algorithm"
 * (hex strings; the algorithm by its display name "AES-CCM-16-64-128 (CCM*)",
 * the only one the dissector implements). The dissector picks the row whose
 * Sender ID equals the request's kid and derives the request key from it,
 * so the row is written from the initiator's (client's) side: its Sender
 * ID and Recipient ID exactly as the initiator exported them. tshark shows
 * the field oscore.tag ("Decrypted Authentication Tag") only after the
 * CBC-MAC it computed equals the received tag; a mismatch shows the expert
 * item "Authentication tag check failed" instead. Control runs on the same
 * capture (a master secret with one bit flipped; the two IDs swapped) show
 * that these assertions do fail when the context is wrong.
 *
 * Needs root (capturing on lo), tshark and dumpcap; otherwise skipped (exit
 * 77 for meson). Short-lived children run under timeout(1); every child
 * dies with this process (PR_SET_PDEATHSIG), teardown stops any still
 * running, and dumpcap stops by itself after 60 s.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <sys/prctl.h>

#include "net_test_util.h"

static const char *skip_reason;

/* Wireshark only implements AES-CCM-16-64-128 with HKDF SHA-256. */
#define WS_ALG_NAME     "AES-CCM-16-64-128 (CCM*)"
#define REQUEST_PAYLOAD "hello-tshark"

struct oscore_export {
    char master_secret[130];
    char master_salt[130];
    char sender_id[40];
    char recipient_id[40];
    long aead_alg;
    long hkdf_alg;
};

/* Fork argv with stderr into log_path (or /dev/null) and stdout into
 * out_path (or the same log); the child dies with this process. With timeout_s it runs under `timeout -k 2
 * TIMEOUT_S` (for short-lived commands this process waits for); without,
 * it is exec'd directly so that its pid is the process to stop. */
static pid_t spawn_bounded(char *const argv[], unsigned timeout_s, const char *log_path,
                           const char *out_path)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    if (out_path) {
        fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            close(fd);
        }
    }
    if (!timeout_s) {
        execvp(argv[0], argv);
        _exit(127);
    }
    char secs[16];
    snprintf(secs, sizeof secs, "%u", timeout_s);
    char *args[64] = {"timeout", "-k", "2", secs};
    size_t n = 4;
    for (size_t i = 0; argv[i] && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    execvp("timeout", args);
    _exit(127);
}

/* Run argv to completion (bounded), stdout+stderr into *out (malloc'd).
 * Returns the exit status, or -1. */
static int run_bounded(char *const argv[], unsigned timeout_s, char **out)
{
    char log[300];
    net_path(log, sizeof log, "run.out");
    unlink(log);
    pid_t pid = spawn_bounded(argv, timeout_s, log, NULL);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
    *out = net_read_file(log);
    if (!*out)
        *out = strdup("");
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static void track(struct net_proc *p)
{
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (!net_procs[i]) {
            net_procs[i] = p;
            return;
        }
    }
}

/* Responder on 127.0.0.1 port 0; the port is read back from --ready-file. */
static void responder_start(struct net_proc *p)
{
    const char *cli = getenv("EDHOC_CLI");
    memset(p, 0, sizeof *p);
    net_path(p->log, sizeof p->log, "responder.log");
    net_path(p->ready, sizeof p->ready, "responder.ready");
    /* --demo: the built-in credentials, whose keys are published (the
     * responder refuses to serve them otherwise). */
    char *argv[] = {(char *)cli,    "responder", "--demo",      "--listen", "127.0.0.1:0",
                    "--ready-file", p->ready,    "--state-dir", "none",     NULL};
    p->pid = spawn_bounded(argv, 0, p->log, NULL);
    assert_true(p->pid > 0);
    track(p);
    uint64_t end = net_now_ms() + 10000;
    while (net_now_ms() < end && !p->port) {
        char *r = net_read_file(p->ready);
        unsigned port = 0;
        if (r && sscanf(r, "%u", &port) == 1 && port > 0 && port < 65536)
            p->port = (uint16_t)port;
        free(r);
        int st;
        if (!p->port && waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            char *log = net_read_file(p->log);
            fail_msg("responder exited early:\n%s", log ? log : "");
        }
        if (!p->port)
            net_sleep_ms(20);
    }
    assert_true(p->port != 0);
}

/* Whether the file at path contains marker (binary-safe). */
static bool file_contains(const char *path, const char *marker)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return memmem(buf, n, marker, strlen(marker)) != NULL;
}

/* Send datagrams carrying marker to probe_port until the capture file holds
 * one (at most 10 s). Packets on lo are captured in order, so once the
 * marker is in the file, so is everything sent before it; and dumpcap
 * writing to stdout ("-w -") flushes every packet. */
static void capture_sync(const char *pcap, uint16_t probe_port, const char *marker)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(probe_port);
    uint64_t end = net_now_ms() + 10000;
    bool seen = false;
    while (!seen && net_now_ms() < end) {
        (void)!sendto(fd, marker, strlen(marker), 0, (struct sockaddr *)&a, sizeof a);
        for (int i = 0; i < 10 && !(seen = file_contains(pcap, marker)); i++)
            net_sleep_ms(20);
    }
    close(fd);
    if (!seen)
        fail_msg("capture did not record the probe '%s' within 10 s", marker);
}

/* dumpcap on lo with FILTER into PCAP; returns once the capture records a
 * probe sent to probe_port (which FILTER must include). dumpcap stops by
 * itself after 60 s whatever happens here. */
static void capture_start(struct net_proc *p, const char *filter, const char *pcap,
                          uint16_t probe_port)
{
    memset(p, 0, sizeof *p);
    net_path(p->log, sizeof p->log, "dumpcap.log");
    char *argv[] = {"dumpcap", "-q",          "-i", "lo", "-f", (char *)filter,
                    "-a",      "duration:60", "-w", "-",  NULL};
    p->pid = spawn_bounded(argv, 0, p->log, pcap);
    assert_true(p->pid > 0);
    track(p);
    uint64_t end = net_now_ms() + 10000;
    for (;;) {
        char *log = net_read_file(p->log);
        bool ready = log && strstr(log, "File:");
        int st;
        if (!ready && waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            fail_msg("dumpcap exited early:\n%s", log ? log : "");
        }
        if (!ready && net_now_ms() >= end)
            fail_msg("dumpcap not capturing after 10 s:\n%s", log ? log : "");
        free(log);
        if (ready)
            break;
        net_sleep_ms(20);
    }
    char marker[64];
    snprintf(marker, sizeof marker, "edhoc-tshark-start-%d", (int)getpid());
    capture_sync(pcap, probe_port, marker);
}

/* The string value of "key": "..." after `from` in JSON text. */
static void json_hex(const char *from, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(from, pat);
    if (!p)
        fail_msg("no \"%s\" in the initiator's JSON", key);
    p += strlen(pat);
    size_t n = 0;
    while (p[n] && p[n] != '"') {
        if (!isxdigit((unsigned char)p[n]) || n + 1 >= cap)
            fail_msg("\"%s\" is not a short hex string", key);
        n++;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

static long json_long(const char *from, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(from, pat);
    if (!p)
        fail_msg("no \"%s\" in the initiator's JSON", key);
    return strtol(p + strlen(pat), NULL, 10);
}

static void parse_export(const char *json, struct oscore_export *ex)
{
    const char *o = strstr(json, "\"oscore\": {");
    if (!o)
        fail_msg("no oscore object in the initiator's output:\n%s", json);
    json_hex(o, "master_secret", ex->master_secret, sizeof ex->master_secret);
    json_hex(o, "master_salt", ex->master_salt, sizeof ex->master_salt);
    json_hex(o, "sender_id", ex->sender_id, sizeof ex->sender_id);
    json_hex(o, "recipient_id", ex->recipient_id, sizeof ex->recipient_id);
    ex->aead_alg = json_long(o, "aead_alg");
    ex->hkdf_alg = json_long(o, "hkdf_alg");
}

/* One OSCORE frame as tshark dissected it. */
struct ws_frame {
    char token[40];
    long outer_code;
    char kid[40];
    char tag[40];
    long inner_code;
    char expert[256];
    bool has_payload;
};

/* Copy tab-separated field i of line into out. */
static void field(const char *line, int i, char *out, size_t cap)
{
    const char *p = line;
    for (int k = 0; k < i && p; k++) {
        p = strchr(p, '\t');
        if (p)
            p++;
    }
    size_t n = 0;
    if (p) {
        while (p[n] && p[n] != '\t' && p[n] != '\n' && n + 1 < cap)
            n++;
        memcpy(out, p, n);
    }
    out[n] = '\0';
}

/* Dissect the OSCORE frames of pcap with one context row; returns how many
 * were parsed into frames[] (at most 4), the raw output in *raw. */
static int dissect(const char *pcap, uint16_t port, const char *row, struct ws_frame *frames,
                   char **raw)
{
    char decode_as[64], uat[1024];
    snprintf(decode_as, sizeof decode_as, "udp.port==%u,coap", port);
    snprintf(uat, sizeof uat, "uat:oscore_contexts:%s", row);
    char *argv[] = {"tshark", "-n",
                    "-r",     (char *)pcap,
                    "-d",     decode_as,
                    "-o",     uat,
                    "-Y",     "oscore",
                    "-T",     "fields",
                    "-E",     "separator=/t",
                    "-e",     "coap.token",
                    "-e",     "coap.code",
                    "-e",     "coap.opt.object_security_kid",
                    "-e",     "oscore.tag",
                    "-e",     "oscore.code",
                    "-e",     "_ws.expert.message",
                    "-e",     "text",
                    NULL};
    int rc = run_bounded(argv, 60, raw);
    if (rc != 0)
        fail_msg("tshark failed (%d):\n%s", rc, *raw);
    int n = 0;
    for (const char *line = *raw; *line && n < 4;) {
        const char *eol = strchr(line, '\n');
        if (strncmp(line, "Running as user", 15) != 0) {
            struct ws_frame *f = &frames[n++];
            char num[32], text[512];
            memset(f, 0, sizeof *f);
            field(line, 0, f->token, sizeof f->token);
            field(line, 1, num, sizeof num);
            f->outer_code = strtol(num, NULL, 10);
            field(line, 2, f->kid, sizeof f->kid);
            field(line, 3, f->tag, sizeof f->tag);
            field(line, 4, num, sizeof num);
            f->inner_code = num[0] ? strtol(num, NULL, 10) : -1;
            field(line, 5, f->expert, sizeof f->expert);
            net_tshark_drop_traceroute(f->expert);
            /* The text items of the inner payload are the last field. */
            size_t len = eol ? (size_t)(eol - line) : strlen(line);
            snprintf(text, sizeof text, "%.*s", (int)len, line);
            f->has_payload = strstr(text, REQUEST_PAYLOAD) != NULL;
        }
        if (!eol)
            break;
        line = eol + 1;
    }
    return n;
}

static void make_row(char *out, size_t cap, const char *sid, const char *rid, const char *secret,
                     const char *salt)
{
    snprintf(out, cap, "\"%s\",\"%s\",\"%s\",\"%s\",\"\",\"" WS_ALG_NAME "\"", sid, rid, secret,
             salt);
}

/* The whole check for one initiator run with METHOD and SUITES. */
static void check_run(const char *method, const char *suites)
{
    if (skip_reason) {
        print_message("skipped: %s\n", skip_reason);
        skip();
    }
    struct net_proc responder, capture;
    responder_start(&responder);

    /* Probes to a closed port inside the filter, before and after the run,
     * prove that the capture holds the whole run. */
    uint16_t probe_port = net_closed_port();
    assert_true(probe_port != 0);
    char filter[96], pcap[300];
    snprintf(filter, sizeof filter, "udp port %u or udp port %u", responder.port, probe_port);
    net_path(pcap, sizeof pcap, "run.pcapng");
    capture_start(&capture, filter, pcap, probe_port);

    const char *cli = getenv("EDHOC_CLI");
    char uri[64];
    snprintf(uri, sizeof uri, "coap://127.0.0.1:%u", responder.port);
    char *argv[] = {(char *)cli,
                    "initiator",
                    uri,
                    "--method",
                    (char *)method,
                    "--suites",
                    (char *)suites,
                    "--export-secrets",
                    "--json",
                    "--timeout",
                    "20",
                    "--request",
                    "POST /echo " REQUEST_PAYLOAD,
                    NULL};
    char *json = NULL;
    int rc = run_bounded(argv, 30, &json);
    char marker[64];
    snprintf(marker, sizeof marker, "edhoc-tshark-end-%d", (int)getpid());
    capture_sync(pcap, probe_port, marker);
    int cap_rc = net_proc_stop(&capture, SIGINT, 5000);
    if (rc != 0)
        fail_msg("initiator exited %d:\n%s", rc, json);
    assert_int_equal(cap_rc, 0);
    /* The echoed payload, printable: given as text beside its hex. */
    assert_non_null(strstr(json, "\"payload_text\": \"" REQUEST_PAYLOAD "\""));

    struct oscore_export ex;
    parse_export(json, &ex);
    free(json);
    assert_int_equal(ex.aead_alg, 10); /* AES-CCM-16-64-128 */
    /* libcoap's conf value for HKDF SHA-256 (COSE direct+HKDF-SHA-256),
     * which coap-client -E accepts. */
    assert_int_equal(ex.hkdf_alg, -10);
    print_message("context: sender_id %s recipient_id %s master_salt %s\n", ex.sender_id,
                  ex.recipient_id, ex.master_salt);

    char row[1024];
    struct ws_frame fr[4];
    char *raw = NULL;

    /* The context as exported, from the initiator's side. */
    make_row(row, sizeof row, ex.sender_id, ex.recipient_id, ex.master_secret, ex.master_salt);
    int n = dissect(pcap, responder.port, row, fr, &raw);
    print_message("tshark -o 'uat:oscore_contexts:%s':\n%s", row, raw);
    assert_int_equal(n, 2);
    /* The request: POST, its kid is the initiator's Sender ID. */
    assert_int_equal(fr[0].outer_code, 2);
    assert_string_equal(fr[0].kid, ex.sender_id);
    /* The response: 2.04 on the outside, paired by a non-empty token. */
    assert_int_equal(fr[1].outer_code, 68);
    assert_true(fr[0].token[0] != '\0');
    assert_string_equal(fr[0].token, fr[1].token);
    for (int i = 0; i < 2; i++) {
        if (strlen(fr[i].tag) != 16 || fr[i].expert[0])
            fail_msg("%s not verified by tshark: tag '%s', expert '%s'", i ? "response" : "request",
                     fr[i].tag, fr[i].expert);
        assert_true(fr[i].has_payload);
    }
    assert_int_equal(fr[0].inner_code, 2);  /* inner POST */
    assert_int_equal(fr[1].inner_code, 68); /* inner 2.04 Changed */
    free(raw);

    /* Control: one bit of the master secret flipped; both tags must fail. */
    char bad_secret[sizeof ex.master_secret];
    memcpy(bad_secret, ex.master_secret, sizeof bad_secret);
    size_t last = strlen(bad_secret) - 1;
    bad_secret[last] = "1032547698badcfe"[strtol((char[]){bad_secret[last], 0}, NULL, 16)];
    make_row(row, sizeof row, ex.sender_id, ex.recipient_id, bad_secret, ex.master_salt);
    n = dissect(pcap, responder.port, row, fr, &raw);
    assert_int_equal(n, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(fr[i].tag, "");
        assert_non_null(strstr(fr[i].expert, "Authentication tag check failed"));
        assert_false(fr[i].has_payload);
    }
    free(raw);

    /* Control: the responder's view (IDs swapped) is not what tshark wants:
     * no row has the request's kid as Sender ID. */
    make_row(row, sizeof row, ex.recipient_id, ex.sender_id, ex.master_secret, ex.master_salt);
    n = dissect(pcap, responder.port, row, fr, &raw);
    assert_int_equal(n, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(fr[i].tag, "");
        assert_non_null(strstr(fr[i].expert, "Security context not set"));
    }
    free(raw);

    assert_int_equal(net_proc_stop(&responder, SIGTERM, 5000), 0);
}

static void test_method3_suite2(void **state)
{
    (void)state;
    check_run("3", "2");
}

static void test_method0_suite0(void **state)
{
    (void)state;
    check_run("0", "0");
}

static int setup(void **state)
{
    (void)state;
    return net_make_dir("tshark");
}

static int teardown(void **state)
{
    (void)state;
    net_stop_all();
    net_remove_dir();
    return 0;
}

int main(void)
{
    if (geteuid() != 0)
        skip_reason = "not root: capturing on lo needs root";
    else if (system("command -v tshark >/dev/null 2>&1 && command -v dumpcap >/dev/null 2>&1"))
        skip_reason = "tshark or dumpcap not installed";
    else if (!getenv("EDHOC_CLI"))
        skip_reason = "EDHOC_CLI not set";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_method3_suite2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_method0_suite0, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* 77 makes meson report SKIP rather than a pass that checked nothing. */
    return failed ? failed : skip_reason ? 77 : 0;
}
