/*
 * edhoc/dtls_compare.h - the bytes a DTLS 1.2 handshake of libcoap's
 * OpenSSL backend puts on the wire, for `edhoc-cli bytes --compare`.
 *
 * Two pieces, both loopback only and unprivileged:
 *
 *  - A counting UDP relay: a front socket the client talks to and a back
 *    socket connected to the server; every datagram crossing it is
 *    recorded (direction, length, what DTLS records it carries) and
 *    forwarded unchanged. The EDHOC side of the comparison runs its
 *    initiator through the same relay, so both protocols are counted the
 *    same way: UDP payload bytes of datagrams actually sent.
 *
 *  - One DTLS run: a libcoap server context (DTLS endpoint) and a client
 *    session to it through the relay, in this process and this thread,
 *    authenticated with X.509 certificates, raw public keys or a PSK, then
 *    one confirmable CoAP GET /time over the session.
 *
 * Errors are negative EDHOC_DTLS_ERR_* codes.
 */
#ifndef EDHOC_DTLS_COMPARE_H
#define EDHOC_DTLS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_DTLS_ERR_ARG         (-7101) /* NULL pointer or a parameter out of range */
#define EDHOC_DTLS_ERR_SOCKET      (-7102) /* a loopback socket could not be opened/bound */
#define EDHOC_DTLS_ERR_UNSUPPORTED (-7103) /* the libcoap build refuses this mode */
#define EDHOC_DTLS_ERR_SETUP       (-7104) /* libcoap refused the context/session setup */
#define EDHOC_DTLS_ERR_TIMEOUT     (-7105) /* no CoAP response within the time bound */
#define EDHOC_DTLS_ERR_HANDSHAKE   (-7106) /* the session failed (alert, closed) */
#define EDHOC_DTLS_ERR_CREDENTIAL  (-7107) /* the demo credentials could not be loaded */
#define EDHOC_DTLS_ERR_OVERFLOW    (-7108) /* more datagrams than the log holds */

/* Datagrams one run may record; a DTLS 1.2 handshake and one request need
 * about ten, retransmissions included. */
#define EDHOC_RELAY_MAX_DGRAMS 128
/* Room for the description of one datagram's DTLS records. */
#define EDHOC_RELAY_LABEL_MAX 160
/* Bytes of each datagram kept (an EDHOC message_2 with a certificate
 * chain fits; larger ones are counted by size only). */
#define EDHOC_RELAY_KEEP_MAX 2048

struct edhoc_relay_dgram {
    bool to_server; /* client -> server */
    size_t len;     /* UDP payload bytes */
    uint64_t t_ns;  /* monotonic time it was forwarded */
    /* DTLS view (filled by edhoc_dtls_describe(); empty for other traffic):
     * the records in order, e.g. "ClientHello", "Certificate(1 cert)",
     * "ChangeCipherSpec + Finished". */
    char label[EDHOC_RELAY_LABEL_MAX];
    bool app_data;         /* carries an application_data record */
    bool handshake;        /* carries a handshake or change_cipher_spec record */
    uint16_t cipher_suite; /* from a ServerHello, else 0 */
    /* The datagram itself when it fits (kept == len): the link models
     * compress a CoAP message's header from its bytes (SCHC). */
    size_t kept;
    uint8_t bytes[EDHOC_RELAY_KEEP_MAX];
};

struct edhoc_relay_log {
    struct edhoc_relay_dgram d[EDHOC_RELAY_MAX_DGRAMS];
    size_t n;
    bool overflow; /* datagrams were forwarded but not recorded */
};

struct edhoc_udp_relay;

/* Open a relay in front of 127.0.0.1:server_port: *front_port is the
 * loopback port clients send to. describe_dtls: fill each record's DTLS
 * label. The log is owned by the caller and must outlive the relay.
 * Returns 0, EDHOC_DTLS_ERR_ARG or EDHOC_DTLS_ERR_SOCKET. */
int edhoc_udp_relay_open(uint16_t server_port, bool describe_dtls, struct edhoc_relay_log *log,
                         struct edhoc_udp_relay **relay, uint16_t *front_port);
/* Forward and record whatever arrives within timeout_ms (0: only what is
 * already queued). Returns the number of datagrams forwarded, or
 * EDHOC_DTLS_ERR_ARG. */
int edhoc_udp_relay_pump(struct edhoc_udp_relay *relay, int timeout_ms);
/* Stop recording (later datagrams are still forwarded). */
void edhoc_udp_relay_stop_recording(struct edhoc_udp_relay *relay);
void edhoc_udp_relay_close(struct edhoc_udp_relay *relay);

/* Describe the DTLS records of one datagram into d (label, app_data,
 * handshake, cipher_suite). Never fails: malformed input is labelled
 * "malformed". */
void edhoc_dtls_describe(const uint8_t *dgram, size_t len, struct edhoc_relay_dgram *d);

/* Name of a TLS cipher suite id ("TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8"),
 * or NULL when unknown. */
const char *edhoc_dtls_cipher_suite_name(uint16_t id);

enum edhoc_dtls_mode {
    EDHOC_DTLS_MODE_X509 = 0, /* the 293-byte demo certificates + demo CA, mutual */
    EDHOC_DTLS_MODE_RPK,      /* raw public keys of the same P-256 keys */
    EDHOC_DTLS_MODE_PSK,      /* 16-byte key, identity EDHOC_DTLS_PSK_IDENTITY, no hint */
};

#define EDHOC_DTLS_PSK_IDENTITY "psk-id"

struct edhoc_dtls_result {
    /* Every datagram between client and server until the response to the
     * CoAP request arrived (the close_notify that follows is not counted). */
    struct edhoc_relay_log log;
    /* Index in log of the first datagram carrying application data (the
     * CoAP request): datagrams [0, handshake_dgrams) are the handshake. */
    size_t handshake_dgrams;
    uint16_t cipher_suite;   /* negotiated, from the ServerHello */
    uint8_t response_code;   /* CoAP code of the response (2.05 = 0x45) */
    size_t response_payload; /* its payload bytes */
    double handshake_ms, total_ms;
    char detail[200]; /* why a run failed or was not possible */
};

/* Run the handshake and the request. timeout_ms bounds the whole run.
 * Returns 0, EDHOC_DTLS_ERR_ARG, EDHOC_DTLS_ERR_UNSUPPORTED (e.g. RPK with
 * libcoap 4.3.1's OpenSSL backend), EDHOC_DTLS_ERR_CREDENTIAL,
 * EDHOC_DTLS_ERR_SOCKET, EDHOC_DTLS_ERR_SETUP, EDHOC_DTLS_ERR_HANDSHAKE,
 * EDHOC_DTLS_ERR_TIMEOUT or EDHOC_DTLS_ERR_OVERFLOW; on failure
 * res->detail says why and res->log holds what was seen. */
/* The certificates of the certificate and raw-public-key modes (PSK needs
 * none: creds may be NULL): each side's P-256 credential (a chain, the
 * end-entity certificate first) with its private key, and the CA both
 * trust. The caller brings them (the comparison uses the 293-byte demo
 * certificates of src/demo), so the transport layer holds no key. */
struct edhoc_dtls_creds {
    const struct edhoc_cred *server_cred, *client_cred, *ca;
    const struct edhoc_key *server_key, *client_key;
};

int edhoc_dtls_compare_run(enum edhoc_dtls_mode mode, unsigned timeout_ms,
                           const struct edhoc_dtls_creds *creds, struct edhoc_dtls_result *res);

/* "libcoap 4.3.1 (OpenSSL 3.0.x)" style description of the library in use. */
size_t edhoc_dtls_library_describe(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
