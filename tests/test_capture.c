/*
 * Captures, the files themselves: the writer's frames checked field by
 * field, the packet parser's verdict on each kind of bad frame, endpoint
 * parsing, truncated, corrupt and snaplen-cut files, and the mode and
 * link checks of opening one (0600, no symlinks, no FIFOs).
 */
#include "capture_test_common.h"

/* ---- Tests ---- */

static void test_frame_build_fields(void **state)
{
    (void)state;
    struct endpoint s, d;
    ep4(&s, "192.0.2.1", 40001);
    ep4(&d, "192.0.2.2", 5683);
    static const uint8_t payload[] = {0x40, 0x01, 0x12, 0x34, 0xff, 'h', 'i'};
    uint8_t f[128];
    long n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload, sizeof payload,
                                       f, sizeof f);
    /* 20 + 8 + 7 = 35. */
    assert_int_equal(n, 35);
    assert_int_equal(f[0], 0x45);
    assert_int_equal(f[2] << 8 | f[3], 35);
    assert_int_equal(f[9], 17);
    assert_int_equal(f[20] << 8 | f[21], 40001);
    assert_int_equal(f[22] << 8 | f[23], 5683);
    assert_int_equal(f[24] << 8 | f[25], 15);
    /* Both checksums verify: the one's-complement sum over the header
     * (with the checksum) is 0xffff. */
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(f[i] << 8 | f[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    assert_int_equal(sum, 0xffff);
    sum = 0;
    for (int i = 12; i < 20; i += 2) /* pseudo-header addresses */
        sum += (uint32_t)(f[i] << 8 | f[i + 1]);
    sum += 17 + 15;
    for (int i = 20; i < 35; i += 2)
        sum += (uint32_t)(f[i] << 8 | (i + 1 < 35 ? f[i + 1] : 0));
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    assert_int_equal(sum, 0xffff);

    struct edhoc_capture_packet p;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, f, (size_t)n, (size_t)n, &p),
                     0);
    assert_int_equal(p.ip_version, 4);
    assert_int_equal(p.ip_len, 35);
    assert_int_equal(p.udp_len, 15);
    assert_int_equal(p.payload_len, sizeof payload);
    assert_memory_equal(p.payload, payload, sizeof payload);
    assert_int_equal(p.src_port, 40001);

    /* An IPv4-mapped peer of a dual-stack socket is written as IPv4:
     * the same frame. */
    struct endpoint m6;
    ep6(&m6, "::ffff:192.0.2.2", 5683);
    uint8_t f2[128];
    assert_int_equal(edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(m6), payload,
                                               sizeof payload, f2, sizeof f2),
                     35);
    assert_memory_equal(f, f2, 35);

    /* Mixed families, oversize, unknown link type, a short buffer. */
    struct endpoint d6;
    ep6(&d6, "::1", 5683);
    assert_int_equal(
        edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d6), payload, 7, f, sizeof f),
        EDHOC_CAPTURE_ERR_ARG);
    assert_int_equal(edhoc_capture_frame_build(999, SA(s), SA(d), payload, 7, f, sizeof f),
                     EDHOC_CAPTURE_ERR_LINK);
    assert_int_equal(
        edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload, 7, f, 34),
        EDHOC_CAPTURE_ERR_TOO_LARGE);
    assert_int_equal(edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload,
                                               EDHOC_CAPTURE_MAX_PAYLOAD + 1, f, sizeof f),
                     EDHOC_CAPTURE_ERR_TOO_LARGE);
    char err[128];
    assert_null(
        edhoc_capture_open("/nonexistent-dir/x.pcap", EDHOC_CAPTURE_DLT_RAW, err, sizeof err));
    assert_true(strlen(err) > 0);
    assert_null(edhoc_capture_open("x.pcap", 999, err, sizeof err));
    assert_string_equal(err, "unsupported link type");
}

static void test_packet_parse_errors(void **state)
{
    (void)state;
    struct endpoint s, d, s6, d6;
    ep4(&s, "192.0.2.1", 1000);
    ep4(&d, "192.0.2.2", 5683);
    ep6(&s6, "2001:db8::1", 1000);
    ep6(&d6, "2001:db8::2", 5683);
    static const uint8_t payload[] = {0x50, 0x01, 0x00, 0x01};
    uint8_t f[256], g[256];
    struct edhoc_capture_packet p;
    long n =
        edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_EN10MB, SA(s), SA(d), payload, 4, f, sizeof f);
    assert_int_equal(n, 14 + 20 + 8 + 4);
    size_t len = (size_t)n;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, len, len, &p), 0);
    /* Ethernet padding to 60 bytes: the IP length decides. */
    memset(f + len, 0, 60 - len);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, 60, 60, &p), 0);
    assert_int_equal(p.payload_len, 4);
    assert_int_equal(p.frame_len, 60);
    /* A VLAN tag in front of the ethertype. */
    memcpy(g, f, 12);
    g[12] = 0x81;
    g[13] = 0x00;
    g[14] = 0x00;
    g[15] = 0x05;
    memcpy(g + 16, f + 12, len - 12);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len + 4, len + 4, &p),
                     0);
    assert_int_equal(p.payload_len, 4);
    /* ARP: not IP. */
    memcpy(g, f, len);
    g[12] = 0x08;
    g[13] = 0x06;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_NOT_IP);
    /* TCP: not UDP. */
    memcpy(g, f, len);
    g[14 + 9] = 6;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_NOT_UDP);
    /* More-fragments flag, and a non-zero offset. */
    memcpy(g, f, len);
    g[14 + 6] = 0x20;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_FRAGMENT);
    g[14 + 6] = 0x00;
    g[14 + 7] = 0x10;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_FRAGMENT);
    /* IHL 4, a Total Length beyond the frame, a UDP length beyond IP. */
    memcpy(g, f, len);
    g[14] = 0x44;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    memcpy(g, f, len);
    g[14 + 3] = 200;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    memcpy(g, f, len);
    g[14 + 20 + 5] = 13;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    g[14 + 20 + 5] = 7;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    /* Cut by the snap length: truncated, at every length. */
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, cut, len, &p),
                         EDHOC_CAPTURE_ERR_TRUNCATED);
    /* The same bytes claiming to be whole: malformed, never a crash. */
    for (size_t cut = 14; cut < len; cut++)
        assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, cut, cut, &p),
                         EDHOC_CAPTURE_ERR_MALFORMED);
    assert_int_equal(edhoc_capture_packet_parse(999, f, len, len, &p), EDHOC_CAPTURE_ERR_LINK);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, f, len, len - 1, &p),
                     EDHOC_CAPTURE_ERR_ARG);

    /* Raw IPv4 / IPv6 link types: the version must match. */
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload, 4, f, sizeof f);
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_IPV4, f, (size_t)n, (size_t)n, &p), 0);
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW_ALT, f, (size_t)n, (size_t)n, &p), 0);
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_IPV6, f, (size_t)n, (size_t)n, &p),
        EDHOC_CAPTURE_ERR_MALFORMED);
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s6), SA(d6), payload, 4, f, sizeof f);
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_IPV6, f, (size_t)n, (size_t)n, &p), 0);
    /* Raw IP with a version that is neither. */
    f[0] = 0x50;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, f, (size_t)n, (size_t)n, &p),
                     EDHOC_CAPTURE_ERR_NOT_IP);

    /* IPv6 with a Hop-by-Hop header (8 bytes) before UDP, and with a
     * Fragment header. */
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s6), SA(d6), payload, 4, f, sizeof f);
    assert_int_equal(n, 40 + 8 + 4);
    memcpy(g, f, 40);
    g[6] = 0;         /* Hop-by-Hop */
    g[5] = 8 + 8 + 4; /* payload length */
    g[40] = 17;       /* next: UDP */
    g[41] = 0;        /* 8 bytes */
    memset(g + 42, 0, 6);
    g[42] = 1; /* PadN */
    g[43] = 4;
    memcpy(g + 48, f + 40, 12);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 60, 60, &p), 0);
    assert_int_equal(p.ip_version, 6);
    assert_int_equal(p.ip_len, 60);
    assert_int_equal(p.payload_len, 4);
    g[40] = 44;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 60, 60, &p),
                     EDHOC_CAPTURE_ERR_FRAGMENT);
    g[40] = 6;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 60, 60, &p),
                     EDHOC_CAPTURE_ERR_NOT_UDP);
    /* A payload length of 0 (jumbogram) and a version mismatch. */
    memcpy(g, f, 52);
    g[4] = g[5] = 0;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 52, 52, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_LINUX_SLL, SA(s6), SA(d6), payload, 4, f,
                                  sizeof f);
    f[16] = 0x45; /* SLL says IPv6, the packet says 4 */
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_LINUX_SLL, f, (size_t)n, (size_t)n, &p),
        EDHOC_CAPTURE_ERR_MALFORMED);
    /* Loopback in the other byte order (a capture from a big-endian host)
     * and with Linux's AF_INET6 (10). */
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_NULL, SA(s6), SA(d6), payload, 4, f, sizeof f);
    uint8_t t = f[0];
    f[0] = f[3];
    f[3] = t;
    t = f[1];
    f[1] = f[2];
    f[2] = t;
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_NULL, f, (size_t)n, (size_t)n, &p), 0);
    f[0] = 0;
    f[1] = 0;
    f[2] = 0;
    f[3] = 10;
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_LOOP, f, (size_t)n, (size_t)n, &p), 0);
    f[3] = 99;
    assert_int_equal(
        edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_LOOP, f, (size_t)n, (size_t)n, &p),
        EDHOC_CAPTURE_ERR_NOT_IP);
}

static void test_endpoint_parse(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    assert_int_equal(edhoc_capture_endpoint_parse("192.0.2.1:5683", &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
    assert_int_equal(ntohs(s4->sin_port), 5683);
    assert_int_equal(ntohl(s4->sin_addr.s_addr), 0xc0000201);
    assert_int_equal(edhoc_capture_endpoint_parse("[2001:db8::1]:0", &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
    assert_int_equal(ntohs(s6->sin6_port), 0);
    assert_int_equal(s6->sin6_addr.s6_addr[15], 1);
    static const char *bad[] = {"",
                                "192.0.2.1",
                                "192.0.2.1:",
                                "192.0.2.1:65536",
                                "192.0.2.1:-1",
                                "192.0.2.1:+1",
                                "::1:5683",
                                "[::1]5683",
                                "[192.0.2.1]:5683",
                                "[::1:5683",
                                "host:5683",
                                "[::1]:x",
                                "1.2.3.4:5683x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        print_message("'%s'\n", bad[i]);
        assert_int_equal(edhoc_capture_endpoint_parse(bad[i], &ss), EDHOC_CAPTURE_ERR_ARG);
    }
    assert_int_equal(edhoc_capture_endpoint_parse(NULL, &ss), EDHOC_CAPTURE_ERR_ARG);
}

static void test_truncated_and_corrupt(void **state)
{
    (void)state;
    char path[512], bad[512];
    unsigned count;
    write_capture("whole.pcap", EDHOC_CAPTURE_DLT_EN10MB, path, sizeof path, &count);
    size_t len;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t buf[65536];
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_int_equal((long)len, file_size(path));

    /* Cut in the middle of the last packet: everything before is read,
     * then the reader reports the damage. */
    path_in_workdir("truncated.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    fwrite(buf, 1, len - 10, f);
    fclose(f);
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(bad, NULL, &a, NULL), EDHOC_CAPTURE_ERR_READ);
    assert_int_equal(a->packets, count - 1);
    free(a);
    char err[256];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(bad, err, sizeof err);
    assert_non_null(r);
    const uint8_t *fr;
    size_t cl, wl;
    int rc;
    while ((rc = edhoc_capture_reader_next(r, &fr, &cl, &wl, NULL)) == 1)
        ;
    assert_int_equal(rc, EDHOC_CAPTURE_ERR_READ);
    assert_non_null(strstr(edhoc_capture_reader_error(r), "truncated"));
    edhoc_capture_reader_close(r);

    /* A file cut inside its header, a foreign magic number, and a record
     * whose captured length is absurd. */
    path_in_workdir("short.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    fwrite(buf, 1, 10, f);
    fclose(f);
    assert_null(edhoc_capture_reader_open(bad, err, sizeof err));
    assert_true(strlen(err) > 0);
    path_in_workdir("magic.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    buf[0] ^= 0x55;
    fwrite(buf, 1, len, f);
    buf[0] ^= 0x55;
    fclose(f);
    assert_null(edhoc_capture_reader_open(bad, err, sizeof err));
    assert_non_null(strstr(err, "format"));
    path_in_workdir("record.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    uint8_t save[4];
    memcpy(save, buf + 24 + 8, 4);
    memset(buf + 24 + 8, 0x7f, 4); /* first record: incl_len */
    fwrite(buf, 1, len, f);
    memcpy(buf + 24 + 8, save, 4);
    fclose(f);
    assert_int_equal(analyse(bad, NULL, &a, NULL), EDHOC_CAPTURE_ERR_READ);
    assert_int_equal(a->packets, 0);
    free(a);
    assert_int_equal(analyse("/nonexistent.pcap", NULL, &a, NULL), EDHOC_CAPTURE_ERR_OPEN);
}

/* A frame cut by the snap length in the middle of a capture is reported
 * and skipped; the exchanges around it are still found. */
static void test_snaplen_cut_packet(void **state)
{
    (void)state;
    char path[512];
    path_in_workdir("snap.pcap", path, sizeof path);
    pcap_t *dead = pcap_open_dead(DLT_RAW, 65535);
    pcap_dumper_t *d = pcap_dump_open(dead, path);
    assert_non_null(d);
    struct endpoint cl, sv;
    ep4(&cl, "192.0.2.1", 40001);
    ep4(&sv, "192.0.2.2", 5683);
    uint8_t b[512], f[600];
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof h);
    const uint8_t *payloads[3] = {NULL, NULL, NULL};
    (void)payloads;
    size_t n = coap(COAP_TYPE_CON, COAP_CODE_POST, 1, 1, true, 65, NULL, -1, CBOR_TRUE, 1,
                    m1_single, m1_single_len, b);
    long k = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(cl), SA(sv), b, n, f, sizeof f);
    h.caplen = h.len = (bpf_u_int32)k;
    pcap_dump((u_char *)d, &h, f);
    /* A copy cut to 40 bytes (snap length). */
    h.caplen = 40;
    pcap_dump((u_char *)d, &h, f);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 1, 1, false, 64, NULL, -1, NULL, 0, m2, m2_len, b);
    k = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(sv), SA(cl), b, n, f, sizeof f);
    h.caplen = h.len = (bpf_u_int32)k;
    pcap_dump((u_char *)d, &h, f);
    pcap_dump_close(d);
    pcap_close(dead);
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, NULL, &a, NULL), 0);
    assert_int_equal(a->packets, 3);
    assert_int_equal(a->skipped, 1);
    assert_int_equal(a->n_issues, 1);
    assert_int_equal(a->issues[0].packet, 2);
    assert_non_null(strstr(a->issues[0].text, "truncated"));
    assert_int_equal(a->n_ex, 1);
    assert_int_equal(a->ex[0].n_msgs, 2);
    assert_int_equal(a->ex[0].msgs[0].edhoc, 37);
    assert_int_equal(a->ex[0].msgs[1].edhoc, 45);
    free(a);
}

/* Issue 23, item 9: a capture holds every datagram's bytes and addresses,
 * so it is 0600 like the interop log's pcaps and the state database
 * ("files holding secrets 0600 ... never through a symlink"), whatever the
 * umask and whatever mode a file already there had; a symbolic link
 * planted at the path is refused and the file it points to untouched, and
 * a FIFO is refused without waiting for a reader. */
static void test_open_mode_and_links(void **state)
{
    (void)state;
    char path[400], victim[400], link_path[400], fifo[400], err[256];
    path_in_workdir("mode.pcap", path, sizeof path);
    mode_t old = umask(022);
    unlink(path);
    struct edhoc_capture *c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!c)
        fail_msg("open %s: %s", path, err);
    edhoc_capture_close(c);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* An existing 0644 file is truncated and made 0600. */
    assert_int_equal(chmod(path, 0644), 0);
    c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    assert_non_null(c);
    edhoc_capture_close(c);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, 24); /* the pcap file header alone */

    path_in_workdir("victim.txt", victim, sizeof victim);
    path_in_workdir("planted.pcap", link_path, sizeof link_path);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("not a capture\n", f);
    fclose(f);
    unlink(link_path);
    assert_int_equal(symlink(victim, link_path), 0);
    assert_null(edhoc_capture_open(link_path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err));
    assert_string_equal(err, "a symbolic link: refused (give the path of a regular file)");
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_size, 14);

    path_in_workdir("fifo.pcap", fifo, sizeof fifo);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(edhoc_capture_open(fifo, EDHOC_CAPTURE_DLT_RAW, err, sizeof err));
    assert_string_equal(err, "not a regular file");
    umask(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_build_fields), cmocka_unit_test(test_packet_parse_errors),
        cmocka_unit_test(test_endpoint_parse),     cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_snaplen_cut_packet), cmocka_unit_test(test_open_mode_and_links),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
