/*
 * DTLS 1.2 handshake byte counts of libcoap's OpenSSL backend, measured
 * through a counting UDP relay on loopback (see edhoc/dtls_compare.h).
 *
 * Apart from transport.c this is the only file that includes libcoap: the
 * comparison needs libcoap's own DTLS stack, not the EDHOC transport.
 */
#include "edhoc/datagram_guard.h"
#include "edhoc/dtls_compare.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <coap3/coap.h>

#include "edhoc/cred.h"
#include "edhoc/crypto.h"

/* ---- Counting relay ---- */

struct edhoc_udp_relay {
    int front; /* bound on 127.0.0.1:front_port, talks to the client */
    int back;  /* connected to 127.0.0.1:server_port */
    struct sockaddr_in client;
    bool have_client;
    bool describe_dtls;
    bool recording;
    struct edhoc_relay_log *log;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int loopback_socket(uint16_t port, struct sockaddr_in *bound)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        close(fd);
        return -1;
    }
    if (bound)
        *bound = a;
    return fd;
}

int edhoc_udp_relay_open(uint16_t server_port, bool describe_dtls, struct edhoc_relay_log *log,
                         struct edhoc_udp_relay **relay, uint16_t *front_port)
{
    if (!log || !relay || !front_port || server_port == 0)
        return EDHOC_DTLS_ERR_ARG;
    struct edhoc_udp_relay *r = calloc(1, sizeof *r);
    if (!r)
        return EDHOC_DTLS_ERR_SOCKET;
    struct sockaddr_in fa;
    r->front = loopback_socket(0, &fa);
    r->back = loopback_socket(0, NULL);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(server_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (r->front < 0 || r->back < 0 || connect(r->back, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (r->front >= 0)
            close(r->front);
        if (r->back >= 0)
            close(r->back);
        free(r);
        return EDHOC_DTLS_ERR_SOCKET;
    }
    memset(log, 0, sizeof *log);
    r->log = log;
    r->describe_dtls = describe_dtls;
    r->recording = true;
    *front_port = ntohs(fa.sin_port);
    *relay = r;
    return 0;
}

static void relay_record(struct edhoc_udp_relay *r, bool to_server, const uint8_t *p, size_t len)
{
    if (!r->recording)
        return;
    if (r->log->n >= EDHOC_RELAY_MAX_DGRAMS) {
        r->log->overflow = true;
        return;
    }
    struct edhoc_relay_dgram *d = &r->log->d[r->log->n++];
    memset(d, 0, sizeof *d);
    d->to_server = to_server;
    d->len = len;
    d->t_ns = now_ns();
    d->kept = len <= sizeof d->bytes ? len : 0;
    memcpy(d->bytes, p, d->kept);
    if (r->describe_dtls)
        edhoc_dtls_describe(p, len, d);
}

int edhoc_udp_relay_pump(struct edhoc_udp_relay *r, int timeout_ms)
{
    if (!r || timeout_ms < 0)
        return EDHOC_DTLS_ERR_ARG;
    /* 64 KiB: the largest UDP payload, so nothing is ever truncated. */
    static _Thread_local uint8_t buf[65536];
    int forwarded = 0;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = r->front, .events = POLLIN},
                                {.fd = r->back, .events = POLLIN}};
        int n = poll(pfd, 2, forwarded ? 0 : timeout_ms);
        if (n <= 0)
            return forwarded;
        bool any = false;
        if (pfd[0].revents & POLLIN) {
            struct sockaddr_in from;
            socklen_t flen = sizeof from;
            ssize_t got = recvfrom(r->front, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);
            if (got >= 0) {
                /* The first sender is the client; a second one is ignored
                 * so that the log only holds the exchange under test. */
                if (!r->have_client) {
                    r->client = from;
                    r->have_client = true;
                }
                if (from.sin_port == r->client.sin_port &&
                    from.sin_addr.s_addr == r->client.sin_addr.s_addr) {
                    relay_record(r, true, buf, (size_t)got);
                    (void)send(r->back, buf, (size_t)got, 0);
                    forwarded++;
                    any = true;
                }
            }
        }
        if (pfd[1].revents & POLLIN) {
            ssize_t got = recv(r->back, buf, sizeof buf, 0);
            if (got >= 0 && r->have_client) {
                relay_record(r, false, buf, (size_t)got);
                (void)sendto(r->front, buf, (size_t)got, 0, (struct sockaddr *)&r->client,
                             sizeof r->client);
                forwarded++;
                any = true;
            }
        }
        if (!any && !(pfd[0].revents & POLLIN) && !(pfd[1].revents & POLLIN))
            return forwarded; /* only errors (e.g. ICMP unreachable) */
    }
}

void edhoc_udp_relay_stop_recording(struct edhoc_udp_relay *r)
{
    if (r)
        r->recording = false;
}

void edhoc_udp_relay_close(struct edhoc_udp_relay *r)
{
    if (!r)
        return;
    close(r->front);
    close(r->back);
    free(r);
}

/* ---- DTLS record view ---- */

static uint32_t be(const uint8_t *p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static const char *handshake_name(uint8_t t)
{
    switch (t) {
    case 0: return "HelloRequest";
    case 1: return "ClientHello";
    case 2: return "ServerHello";
    case 3: return "HelloVerifyRequest";
    case 4: return "NewSessionTicket";
    case 11: return "Certificate";
    case 12: return "ServerKeyExchange";
    case 13: return "CertificateRequest";
    case 14: return "ServerHelloDone";
    case 15: return "CertificateVerify";
    case 16: return "ClientKeyExchange";
    case 20: return "Finished";
    default: return NULL;
    }
}

static void label_add(struct edhoc_relay_dgram *d, const char *s)
{
    size_t used = strlen(d->label);
    snprintf(d->label + used, sizeof d->label - used, "%s%s", used ? " + " : "", s);
}

/* One plaintext handshake fragment: name it, count the certificates of a
 * Certificate message, take the cipher suite from a ServerHello. */
static void describe_handshake(const uint8_t *p, size_t len, struct edhoc_relay_dgram *d)
{
    while (len >= 12) {
        uint8_t type = p[0];
        uint32_t frag_off = be(p + 6, 3), frag_len = be(p + 9, 3), msg_len = be(p + 1, 3);
        if (frag_len > len - 12) {
            label_add(d, "malformed handshake");
            return;
        }
        const uint8_t *body = p + 12;
        char name[96]; /* "Certificate(N certs: a+b+... bytes)" with 40 chars of sizes */
        const char *n = handshake_name(type);
        if (n)
            snprintf(name, sizeof name, "%s", n);
        else
            snprintf(name, sizeof name, "handshake type %u", type);
        if (type == 11 && frag_off == 0 && frag_len == msg_len && frag_len >= 3) {
            /* The certificate sizes show what the peer chose to send
             * (OpenSSL adds the CA to the leaf when it can build a chain). */
            unsigned certs = 0;
            char sizes[40] = "";
            size_t off = 3, total = be(body, 3) + 3, used = 0;
            while (off + 3 <= total && off + 3 <= frag_len) {
                size_t cl = be(body + off, 3);
                if (used < sizeof sizes)
                    used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%zu",
                                             certs ? "+" : "", cl);
                off += 3 + cl;
                certs++;
            }
            snprintf(name, sizeof name, "Certificate(%u cert%s: %s bytes)", certs,
                     certs == 1 ? "" : "s", sizes);
        } else if (type == 2 && frag_off == 0 && frag_len >= 2 + 32 + 1) {
            size_t sid = body[34];
            if (35 + sid + 2 <= frag_len)
                d->cipher_suite = (uint16_t)be(body + 35 + sid, 2);
        }
        if (frag_off != 0 || frag_len != msg_len) {
            size_t used = strlen(name);
            snprintf(name + used, sizeof name - used, "[fragment %u+%u/%u]", frag_off, frag_len,
                     msg_len);
        }
        label_add(d, name);
        p += 12 + frag_len;
        len -= 12 + frag_len;
    }
    if (len)
        label_add(d, "malformed handshake");
}

void edhoc_dtls_describe(const uint8_t *p, size_t len, struct edhoc_relay_dgram *d)
{
    d->label[0] = 0;
    d->app_data = d->handshake = false;
    d->cipher_suite = 0;
    while (len > 0) {
        if (len < 13) {
            label_add(d, "malformed");
            return;
        }
        uint8_t type = p[0];
        unsigned epoch = be(p + 3, 2);
        size_t rl = be(p + 11, 2);
        if (rl > len - 13) {
            label_add(d, "malformed");
            return;
        }
        const uint8_t *frag = p + 13;
        switch (type) {
        case 20:
            label_add(d, "ChangeCipherSpec");
            d->handshake = true;
            break;
        case 21: label_add(d, epoch ? "Alert(encrypted)" : "Alert"); break;
        case 22:
            d->handshake = true;
            if (epoch == 0)
                describe_handshake(frag, rl, d);
            else
                /* The only encrypted handshake message of a full DTLS 1.2
                 * handshake is Finished. */
                label_add(d, "Finished(encrypted)");
            break;
        case 23:
            label_add(d, "ApplicationData");
            d->app_data = true;
            break;
        default: label_add(d, "unknown record"); break;
        }
        p += 13 + rl;
        len -= 13 + rl;
    }
}

const char *edhoc_dtls_cipher_suite_name(uint16_t id)
{
    switch (id) {
    case 0xC0AE: return "TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8";
    case 0xC0AC: return "TLS_ECDHE_ECDSA_WITH_AES_128_CCM";
    case 0xC02B: return "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
    case 0xC02C: return "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384";
    case 0xCCA9: return "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256";
    case 0xC0A8: return "TLS_PSK_WITH_AES_128_CCM_8";
    case 0xC0A4: return "TLS_PSK_WITH_AES_128_CCM";
    case 0x00A8: return "TLS_PSK_WITH_AES_128_GCM_SHA256";
    case 0x00A9: return "TLS_PSK_WITH_AES_256_GCM_SHA384";
    case 0xCCAB: return "TLS_PSK_WITH_CHACHA20_POLY1305_SHA256";
    case 0xCCAC: return "TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256";
    case 0xC037: return "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256";
    case 0x00AE: return "TLS_PSK_WITH_AES_128_CBC_SHA256";
    case 0xC0A9: return "TLS_PSK_WITH_AES_256_CCM_8";
    case 0xC0A5: return "TLS_PSK_WITH_AES_256_CCM";
    case 0xC0AF: return "TLS_ECDHE_ECDSA_WITH_AES_256_CCM_8";
    case 0xC0AD: return "TLS_ECDHE_ECDSA_WITH_AES_256_CCM";
    default: return NULL;
    }
}

size_t edhoc_dtls_library_describe(char *buf, size_t cap)
{
    /* coap_string_tls_version() of 4.3.1 decodes OpenSSL 3 version
     * numbers the 1.x way ("3.0.0v-dev"); OpenSSL 3 numbers are
     * 0xMNN00PP0: major, minor, patch. coap_package_version() already
     * reads "libcoap 4.3.1". */
    const coap_tls_version_t *v = coap_get_tls_library_version();
    int n;
    if (v && v->type == COAP_TLS_LIBRARY_OPENSSL && (v->version >> 28) >= 3)
        n = snprintf(buf, cap, "%s, OpenSSL backend, OpenSSL %u.%u.%u at run time",
                     coap_package_version(), (unsigned)(v->version >> 28),
                     (unsigned)(v->version >> 20) & 0xff, (unsigned)(v->version >> 4) & 0xff);
    else {
        char tls[128] = "";
        coap_string_tls_version(tls, sizeof tls);
        n = snprintf(buf, cap, "%s, %s", coap_package_version(), tls);
    }
    return n < 0 ? 0 : (size_t)n;
}

/* ---- One DTLS run ---- */

struct run_state {
    bool got_response;
    bool session_failed;
    uint8_t code;
    size_t payload_len;
    char time_text[32];
};

static coap_response_t on_response(coap_session_t *session, const coap_pdu_t *sent,
                                   const coap_pdu_t *received, const coap_mid_t mid)
{
    (void)sent;
    (void)mid;
    struct run_state *st = coap_session_get_app_data(session);
    if (!st)
        return COAP_RESPONSE_OK;
    size_t len = 0;
    const uint8_t *data = NULL;
    if (coap_get_data(received, &len, &data))
        st->payload_len = len;
    st->code = (uint8_t)coap_pdu_get_code(received);
    st->got_response = true;
    return COAP_RESPONSE_OK;
}

static int on_event(coap_session_t *session, const coap_event_t event)
{
    struct run_state *st = coap_session_get_app_data(session);
    if (st && (event == COAP_EVENT_DTLS_ERROR || event == COAP_EVENT_DTLS_CLOSED))
        st->session_failed = true;
    return 0;
}

/* GET /time: the same text the EDHOC responder returns, so that the
 * request/response pair is the same CoAP exchange under both protocols. */
static void on_time(coap_resource_t *resource, coap_session_t *session, const coap_pdu_t *request,
                    const coap_string_t *query, coap_pdu_t *response)
{
    (void)resource;
    (void)session;
    (void)request;
    (void)query;
    char text[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    uint8_t cf[4];
    coap_pdu_set_code(response, COAP_RESPONSE_CODE_CONTENT);
    coap_add_option(response, COAP_OPTION_CONTENT_FORMAT,
                    coap_encode_var_safe(cf, sizeof cf, COAP_MEDIATYPE_TEXT_PLAIN), cf);
    coap_add_data(response, strlen(text), (const uint8_t *)text);
}

/* RFC 5915 ECPrivateKey for a P-256 scalar (with the public key when it is
 * known), the DER form libcoap's ASN.1 key loader takes. */
static size_t p256_private_key_der(const struct edhoc_key *key, const struct edhoc_cred *cred,
                                   uint8_t *out, size_t cap)
{
    static const uint8_t oid_p256[] = {0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86,
                                       0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    bool with_pub = cred->pub_len == 65 && cred->pub[0] == 0x04;
    size_t body = 3 + 2 + 32 + sizeof oid_p256 + (with_pub ? 2 + 3 + 65 : 0);
    if (key->priv_len != 32 || body > 127 || cap < body + 2)
        return 0;
    size_t o = 0;
    out[o++] = 0x30;
    out[o++] = (uint8_t)body;
    out[o++] = 0x02, out[o++] = 0x01, out[o++] = 0x01;
    out[o++] = 0x04, out[o++] = 0x20;
    memcpy(out + o, key->priv, 32);
    o += 32;
    memcpy(out + o, oid_p256, sizeof oid_p256);
    o += sizeof oid_p256;
    if (with_pub) {
        out[o++] = 0xa1, out[o++] = 0x44;
        out[o++] = 0x03, out[o++] = 0x42, out[o++] = 0x00;
        memcpy(out + o, cred->pub, 65);
        o += 65;
    }
    return o;
}

struct pki_material {
    struct edhoc_cred cred;
    struct edhoc_key key;
    uint8_t key_der[160];
    size_t key_der_len;
};

static int load_pki(const struct edhoc_cred *cred, const struct edhoc_key *key,
                    struct pki_material *m)
{
    if (!cred || !key || cred->n_certs < 1)
        return EDHOC_DTLS_ERR_CREDENTIAL;
    m->cred = *cred;
    m->key = *key;
    m->key_der_len = p256_private_key_der(&m->key, &m->cred, m->key_der, sizeof m->key_der);
    return m->key_der_len ? 0 : EDHOC_DTLS_ERR_CREDENTIAL;
}

static void pki_setup(coap_dtls_pki_t *pki, const struct pki_material *m,
                      const struct edhoc_cred *ca, bool rpk)
{
    memset(pki, 0, sizeof *pki);
    pki->version = COAP_DTLS_PKI_SETUP_VERSION;
    pki->verify_peer_cert = 1;
    pki->check_common_ca = rpk ? 0 : 1;
    pki->allow_self_signed = 0;
    pki->cert_chain_validation = 1;
    pki->cert_chain_verify_depth = 2;
    pki->is_rpk_not_cert = rpk ? 1 : 0;
    /* libcoap 4.3.1 has no coap_dtls_rpk_is_supported(): its OpenSSL
     * backend refuses is_rpk_not_cert in coap_context_set_pki(), which is
     * how an unsupported RPK mode is recognised. */
    pki->pki_key.key_type = COAP_PKI_KEY_ASN1;
    pki->pki_key.key.asn1.ca_cert = rpk ? NULL : ca->certs[0];
    pki->pki_key.key.asn1.ca_cert_len = rpk ? 0 : ca->cert_lens[0];
    pki->pki_key.key.asn1.public_cert = m->cred.certs[0];
    pki->pki_key.key.asn1.public_cert_len = m->cred.cert_lens[0];
    pki->pki_key.key.asn1.private_key = m->key_der;
    pki->pki_key.key.asn1.private_key_len = m->key_der_len;
    pki->pki_key.key.asn1.private_key_type = COAP_ASN1_PKEY_EC;
}

/* A free loopback UDP port for the server endpoint (libcoap 4.3.1 has no
 * accessor for the port an endpoint bound to 0 got). */
static uint16_t free_loopback_port(void)
{
    struct sockaddr_in a;
    int fd = loopback_socket(0, &a);
    if (fd < 0)
        return 0;
    close(fd);
    return ntohs(a.sin_port);
}

static void fail(struct edhoc_dtls_result *res, const char *why)
{
    snprintf(res->detail, sizeof res->detail, "%s", why);
}

static int dtls_compare_run(enum edhoc_dtls_mode mode, const struct edhoc_dtls_creds *creds,
                            struct edhoc_dtls_result *res, uint64_t start, uint64_t deadline);

int edhoc_dtls_compare_run(enum edhoc_dtls_mode mode, unsigned timeout_ms,
                           const struct edhoc_dtls_creds *creds, struct edhoc_dtls_result *res)
{
    if (!res || timeout_ms == 0 || mode > EDHOC_DTLS_MODE_PSK ||
        (mode != EDHOC_DTLS_MODE_PSK && !creds))
        return EDHOC_DTLS_ERR_ARG;
    memset(res, 0, sizeof *res);
    uint64_t start = now_ns(), deadline = start + (uint64_t)timeout_ms * 1000000u;

    /* DTLS records are not CoAP: the datagram guard, which checks CoAP
     * for the EDHOC transport, stands aside for this in-process
     * comparison on loopback (both ends are ours). */
    bool guard_was_on = edhoc_datagram_guard_enabled();
    edhoc_datagram_guard_set_enabled(false);
    int rc = dtls_compare_run(mode, creds, res, start, deadline);
    edhoc_datagram_guard_set_enabled(guard_was_on);
    return rc;
}

static int dtls_compare_run(enum edhoc_dtls_mode mode, const struct edhoc_dtls_creds *creds,
                            struct edhoc_dtls_result *res, uint64_t start, uint64_t deadline)
{
    coap_startup();
    /* libcoap's own logging would interleave with the report. */
    coap_set_log_level(LOG_EMERG);
    coap_dtls_set_log_level(LOG_EMERG);
    if (!coap_dtls_is_supported()) {
        fail(res, "this libcoap build has no DTLS");
        return EDHOC_DTLS_ERR_UNSUPPORTED;
    }

    /* Big objects live on the heap: the run is called from a CLI thread
     * with an ordinary stack, and credentials hold several KiB each. */
    struct pki_material *srv_m = calloc(1, sizeof *srv_m), *cli_m = calloc(1, sizeof *cli_m);
    struct edhoc_cred *ca = calloc(1, sizeof *ca);
    struct run_state st = {0};
    coap_context_t *sctx = NULL, *cctx = NULL;
    coap_session_t *session = NULL;
    struct edhoc_udp_relay *relay = NULL;
    int rc = 0;
    static const uint8_t psk_key[16] = {0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x50, 0x53,
                                        0x4b, 0x2d, 0x31, 0x36, 0x62, 0x79, 0x74, 0x65};

    if (!srv_m || !cli_m || !ca) {
        fail(res, "out of memory");
        rc = EDHOC_DTLS_ERR_SETUP;
        goto out;
    }
    if (mode != EDHOC_DTLS_MODE_PSK) {
        if (load_pki(creds->server_cred, creds->server_key, srv_m) ||
            load_pki(creds->client_cred, creds->client_key, cli_m) || !creds->ca ||
            creds->ca->n_certs < 1) {
            fail(res, "no certificate chain, private key or CA for the DTLS run");
            rc = EDHOC_DTLS_ERR_CREDENTIAL;
            goto out;
        }
        *ca = *creds->ca;
    }

    sctx = coap_new_context(NULL);
    cctx = coap_new_context(NULL);
    if (!sctx || !cctx) {
        fail(res, "coap_new_context failed");
        rc = EDHOC_DTLS_ERR_SETUP;
        goto out;
    }

    if (mode == EDHOC_DTLS_MODE_PSK) {
        coap_dtls_spsk_t spsk;
        memset(&spsk, 0, sizeof spsk);
        spsk.version = COAP_DTLS_SPSK_SETUP_VERSION;
        spsk.psk_info.key.s = psk_key;
        spsk.psk_info.key.length = sizeof psk_key;
        if (!coap_context_set_psk2(sctx, &spsk)) {
            fail(res, "coap_context_set_psk2 refused the server PSK");
            rc = EDHOC_DTLS_ERR_SETUP;
            goto out;
        }
    } else {
        coap_dtls_pki_t pki;
        pki_setup(&pki, srv_m, ca, mode == EDHOC_DTLS_MODE_RPK);
        if (!coap_context_set_pki(sctx, &pki)) {
            if (mode == EDHOC_DTLS_MODE_RPK) {
                fail(res, "not supported by libcoap 4.3.1 with OpenSSL (raw public keys need "
                          "the GnuTLS or Mbed TLS backend there)");
                rc = EDHOC_DTLS_ERR_UNSUPPORTED;
            } else {
                fail(res, "coap_context_set_pki refused the server certificate");
                rc = EDHOC_DTLS_ERR_SETUP;
            }
            goto out;
        }
    }

    coap_resource_t *time_res = coap_resource_init(coap_make_str_const("time"), 0);
    if (!time_res) {
        fail(res, "coap_resource_init failed");
        rc = EDHOC_DTLS_ERR_SETUP;
        goto out;
    }
    coap_register_request_handler(time_res, COAP_REQUEST_GET, on_time);
    coap_add_resource(sctx, time_res);

    uint16_t server_port = 0;
    for (int attempt = 0; attempt < 8 && !server_port; attempt++) {
        uint16_t p = free_loopback_port();
        if (!p)
            continue;
        coap_address_t la;
        coap_address_init(&la);
        la.addr.sin.sin_family = AF_INET;
        la.addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        la.addr.sin.sin_port = htons(p);
        la.size = sizeof la.addr.sin;
        if (coap_new_endpoint(sctx, &la, COAP_PROTO_DTLS))
            server_port = p;
    }
    if (!server_port) {
        fail(res, "could not open a DTLS endpoint on 127.0.0.1");
        rc = EDHOC_DTLS_ERR_SOCKET;
        goto out;
    }

    uint16_t front = 0;
    rc = edhoc_udp_relay_open(server_port, true, &res->log, &relay, &front);
    if (rc) {
        fail(res, "could not open the counting relay on 127.0.0.1");
        goto out;
    }

    coap_address_t dst;
    coap_address_init(&dst);
    dst.addr.sin.sin_family = AF_INET;
    dst.addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.addr.sin.sin_port = htons(front);
    dst.size = sizeof dst.addr.sin;

    coap_register_response_handler(cctx, on_response);
    coap_register_event_handler(cctx, on_event);
    if (mode == EDHOC_DTLS_MODE_PSK) {
        coap_dtls_cpsk_t cpsk;
        memset(&cpsk, 0, sizeof cpsk);
        cpsk.version = COAP_DTLS_CPSK_SETUP_VERSION;
        cpsk.psk_info.identity.s = (const uint8_t *)EDHOC_DTLS_PSK_IDENTITY;
        cpsk.psk_info.identity.length = strlen(EDHOC_DTLS_PSK_IDENTITY);
        cpsk.psk_info.key.s = psk_key;
        cpsk.psk_info.key.length = sizeof psk_key;
        session = coap_new_client_session_psk2(cctx, NULL, &dst, COAP_PROTO_DTLS, &cpsk);
    } else {
        coap_dtls_pki_t pki;
        pki_setup(&pki, cli_m, ca, mode == EDHOC_DTLS_MODE_RPK);
        session = coap_new_client_session_pki(cctx, NULL, &dst, COAP_PROTO_DTLS, &pki);
    }
    if (!session) {
        if (mode == EDHOC_DTLS_MODE_RPK) {
            fail(res, "not supported by libcoap 4.3.1 with OpenSSL");
            rc = EDHOC_DTLS_ERR_UNSUPPORTED;
        } else {
            fail(res, "libcoap refused the client session");
            rc = EDHOC_DTLS_ERR_SETUP;
        }
        goto out;
    }
    coap_session_set_app_data(session, &st);

    coap_pdu_t *pdu = coap_new_pdu(COAP_MESSAGE_CON, COAP_REQUEST_CODE_GET, session);
    if (!pdu) {
        fail(res, "coap_new_pdu failed");
        rc = EDHOC_DTLS_ERR_SETUP;
        goto out;
    }
    uint8_t token[8];
    size_t token_len = 0;
    coap_session_new_token(session, &token_len, token);
    coap_add_token(pdu, token_len, token);
    coap_add_option(pdu, COAP_OPTION_URI_PATH, 4, (const uint8_t *)"time");
    /* libcoap queues the request until the handshake completes, then sends
     * it as the first application data. */
    if (coap_send(session, pdu) == COAP_INVALID_MID) {
        fail(res, "coap_send failed");
        rc = EDHOC_DTLS_ERR_SETUP;
        goto out;
    }

    uint64_t handshake_done = 0;
    while (!st.got_response && !st.session_failed) {
        if (now_ns() > deadline) {
            fail(res, "no response to GET /time within the time bound");
            rc = EDHOC_DTLS_ERR_TIMEOUT;
            break;
        }
        coap_io_process(cctx, COAP_IO_NO_WAIT);
        coap_io_process(sctx, COAP_IO_NO_WAIT);
        edhoc_udp_relay_pump(relay, 2);
        if (!handshake_done)
            for (size_t i = 0; i < res->log.n; i++)
                if (res->log.d[i].app_data) {
                    handshake_done = res->log.d[i].t_ns;
                    break;
                }
    }
    /* The response handler ran before the loop ended: nothing after it
     * (close_notify at release) belongs to the exchange. */
    edhoc_udp_relay_stop_recording(relay);
    if (!rc && st.session_failed && !st.got_response) {
        fail(res, "the DTLS session failed (alert or close)");
        rc = EDHOC_DTLS_ERR_HANDSHAKE;
    }
    if (!rc && res->log.overflow) {
        fail(res, "more datagrams than the log holds");
        rc = EDHOC_DTLS_ERR_OVERFLOW;
    }
    res->handshake_dgrams = res->log.n;
    for (size_t i = 0; i < res->log.n; i++) {
        if (res->log.d[i].cipher_suite)
            res->cipher_suite = res->log.d[i].cipher_suite;
        if (res->log.d[i].app_data && res->handshake_dgrams == res->log.n)
            res->handshake_dgrams = i;
    }
    res->response_code = st.code;
    res->response_payload = st.payload_len;
    if (handshake_done)
        res->handshake_ms = (double)(handshake_done - start) / 1e6;
    res->total_ms = (double)(now_ns() - start) / 1e6;

out:
    if (session) {
        coap_session_set_app_data(session, NULL);
        coap_session_release(session);
    }
    /* Let the close_notify out so that the server side is torn down
     * cleanly; it is no longer recorded. */
    if (relay && cctx && sctx)
        for (int i = 0; i < 3; i++) {
            coap_io_process(cctx, COAP_IO_NO_WAIT);
            coap_io_process(sctx, COAP_IO_NO_WAIT);
            edhoc_udp_relay_pump(relay, 0);
        }
    if (cctx)
        coap_free_context(cctx);
    if (sctx)
        coap_free_context(sctx);
    edhoc_udp_relay_close(relay);
    if (srv_m)
        edhoc_wipe(srv_m, sizeof *srv_m);
    if (cli_m)
        edhoc_wipe(cli_m, sizeof *cli_m);
    free(srv_m);
    free(cli_m);
    free(ca);
    coap_cleanup();
    return rc;
}
