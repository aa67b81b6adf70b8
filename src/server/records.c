/*
 * Per-handshake records for the interop log: one edhoc_server_handshake
 * per incoming handshake whatever ended it, and the first OSCORE request
 * on each new context (docs/DESIGN.md, "Interop from both ends").
 */
#include "server_internal.h"

/* The label of the first entry of an ID_CRED map. */
static const char *id_cred_type_name(const uint8_t *m, size_t len)
{
    if (!m || len < 2 || (m[0] & 0xe0) != 0xa0)
        return "other";
    unsigned key;
    if (m[1] < 0x18)
        key = m[1];
    else if (m[1] == 0x18 && len > 2)
        key = m[2];
    else
        return "other";
    switch (key) {
    case 4: return "kid";
    case 13: return "kcwt";
    case 14: return "kccs";
    case 32: return "x5bag";
    case 33: return "x5chain";
    case 34: return "x5t";
    default: return "other";
    }
}

void srv_hs_init(struct edhoc_server *srv, struct edhoc_server_handshake *r, uint64_t id,
                 const char *peer, int framing)
{
    memset(r, 0, sizeof *r);
    r->id = id;
    r->peer = peer;
    r->method = -1;
    r->suite = -1;
    r->framing = (enum edhoc_coap_framing)framing;
    r->message_4 = srv->cfg.message_4;
    r->step = "";
    r->error_text = "";
    r->err_code = -1;
    r->peer_diagnostic = "";
    r->causes = "";
    r->diagnosis = "";
}

void srv_hs_from_pending(struct edhoc_server *srv, const struct pending *h,
                         struct edhoc_server_handshake *r)
{
    srv_hs_init(srv, r, h->hs_id, h->peer, h->framing);
    r->method = edhoc_session_method(&h->s);
    for (size_t i = 0; i < h->n_suites_i; i++)
        r->suites_i[i] = h->suites_i[i];
    r->n_suites_i = h->n_suites_i;
    r->suite = h->n_suites_i ? h->suites_i[h->n_suites_i - 1] : -1;
    size_t c_i_len = 0;
    const uint8_t *c_i = edhoc_session_peer_conn_id(&h->s, &c_i_len);
    if (c_i)
        memcpy(r->c_i, c_i, c_i_len);
    r->c_i_len = c_i ? c_i_len : 0;
    memcpy(r->c_r, h->c_r, h->c_r_len);
    r->c_r_len = h->c_r_len;
    r->id_cred_r_type =
        h->cfg ? (h->cfg->id_cred ? id_cred_type_name(h->cfg->id_cred, h->cfg->id_cred_len) : "kid")
               : NULL;
    r->bytes[1] = h->m1_bytes;
    r->bytes[2] = h->m2_bytes;
    r->duration_ms = srv_mono_ms() - h->t0_ms;
}

/* What message_3's credential lookup saw, into the record. */
void srv_hs_add_message_3(struct edhoc_server *srv, const struct pending *h,
                          struct edhoc_server_handshake *r)
{
    if (srv->m3_h != h || !srv->m3_id_cred_len)
        return;
    r->id_cred_i = srv->m3_id_cred;
    r->id_cred_i_len = srv->m3_id_cred_len;
    r->id_cred_i_sent = srv->m3_id_cred_sent;
    r->id_cred_i_sent_len = srv->m3_id_cred_sent_len;
    r->id_cred_i_type = id_cred_type_name(srv->m3_id_cred, srv->m3_id_cred_len);
    if (srv->m3_cred && srv->m3_cred->cred) {
        r->cred_i = srv->m3_cred->cred;
        r->cred_i_len = srv->m3_cred->cred_len;
    }
}

/* The error message we are sending, into the record. */
void srv_hs_sent_error(struct edhoc_server_handshake *r, const uint8_t *msg, size_t len)
{
    struct edhoc_error_info info;
    r->error_bytes = len;
    if (edhoc_error_message_parse(msg, len, &info))
        return;
    r->err_code = (int)info.code;
    for (size_t i = 0; i < info.n_suites && i < EDHOC_MAX_SUITES; i++)
        r->suites_r[i] = info.suites[i];
    r->n_suites_r = info.n_suites;
}

static size_t list_ints(const int *v, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? ", " : "", v[i]);
    return o;
}

/* The most likely causes of a failure, for someone comparing our trace
 * with the device's log. */
static void hs_causes(const struct edhoc_server_handshake *r, char *buf, size_t cap)
{
    char tmp[200];
    buf[0] = '\0';
    switch (r->outcome) {
    case EDHOC_SERVER_OK: return;
    case EDHOC_SERVER_EXPIRED:
    case EDHOC_SERVER_EVICTED:
        snprintf(buf, cap,
                 "the initiator sent no message_3: it could not process our message_2 (check "
                 "its log: C_R encoding, ID_CRED_R by %s / CRED_R not in its trust, MAC_2 or "
                 "Signature_or_MAC_2 verification, EAD_2, suite parameters) or it stopped",
                 r->id_cred_r_type ? r->id_cred_r_type : "?");
        return;
    case EDHOC_SERVER_PEER_ERROR:
        if (r->err_code == 3)
            snprintf(buf, cap,
                     "the initiator does not know our credential (ID_CRED_R by %s): add it to the "
                     "device's trust, or name it another way (--id-cred)",
                     r->id_cred_r_type ? r->id_cred_r_type : "?");
        else if (r->err_code == 1 &&
                 (strstr(r->peer_diagnostic, "MAC") || strstr(r->peer_diagnostic, "ignature") ||
                  strstr(r->peer_diagnostic, "verif")))
            snprintf(buf, cap,
                     "the initiator could not verify message_2: check our CRED_R as the device "
                     "stores it (the exact bytes hashed into context_2 / TH_3), ID_CRED_R (kid as "
                     "integer vs byte string), C_R encoding, EAD_2");
        else if (r->err_code == 2)
            snprintf(buf, cap, "the initiator refused the selected suite");
        else
            snprintf(buf, cap, "the initiator refused message_2%s%s",
                     r->peer_diagnostic[0] ? ": " : "", r->peer_diagnostic);
        return;
    case EDHOC_SERVER_FAILED:
        snprintf(buf, cap, "our side failed (%s): see the daemon's log", r->error_text);
        return;
    case EDHOC_SERVER_SHUTDOWN:
        snprintf(buf, cap,
                 "none on the initiator's side: the responder stopped while waiting "
                 "for its message_3");
        return;
    case EDHOC_SERVER_VERIFY:
        if (r->error == EDHOC_ERR_SIGNATURE)
            snprintf(buf, cap,
                     "the initiator's signature over TH_3, CRED_I, EAD_3 differs: check the "
                     "CRED_I bytes it signs (credential encoding; ours are in the trace), "
                     "ID_CRED_I (kid as integer vs byte string), EAD_3, and that its signing key "
                     "matches its credential");
        else if (r->error == EDHOC_ERR_MAC)
            snprintf(buf, cap,
                     "check the initiator's TH_3 inputs: CRED_I encoding (the exact bytes it "
                     "hashes; ours are in the trace), ID_CRED_I (kid as integer vs byte string), "
                     "EAD_3; and its static DH key (G_IY) against its credential");
        else
            snprintf(buf, cap,
                     "message_3 did not decrypt: the initiator's K_3 / IV_3 differ - check its "
                     "TH_3 = H(TH_2, PLAINTEXT_2, CRED_R) (our CRED_R as the device stores it, C_R "
                     "encoding in PLAINTEXT_2), PRK_3e2m (methods 1 and 3: the static DH with our "
                     "credential) and the suite parameters");
        return;
    case EDHOC_SERVER_REFUSED: break;
    }
    switch (r->error) {
    case EDHOC_ERR_WRONG_SUITE:
        list_ints(r->suites_r, r->n_suites_r, tmp, sizeof tmp);
        snprintf(buf, cap,
                 "suite %d is not served here, or a suite the initiator prefers is (RFC 9528 "
                 "6.3): we answered SUITES_R = [%s]; the initiator should retry with one of "
                 "them (--suites)",
                 r->suite, tmp);
        return;
    case EDHOC_ERR_UNKNOWN_CREDENTIAL:
        srv_hex(r->id_cred_i, r->id_cred_i_len < 48 ? r->id_cred_i_len : 48, tmp, sizeof tmp);
        snprintf(buf, cap,
                 "we could not resolve ID_CRED_I %s (%s): add the device's credential with "
                 "--trust, or check how it names it (kid as integer vs byte string, x5t hash "
                 "algorithm, kccs encoding)",
                 tmp, r->id_cred_i_type ? r->id_cred_i_type : "?");
        return;
    case EDHOC_ERR_CREDENTIAL:
        snprintf(buf, cap,
                 "the device's credential was found but cannot be used (%s): certificate chain "
                 "and validity, key type for method %d and suite %d",
                 r->error_text, r->method, r->suite);
        return;
    case EDHOC_ERR_METHOD:
        snprintf(buf, cap,
                 "method %d is not accepted here (--method) or we have no credential "
                 "for it",
                 r->method);
        return;
    case EDHOC_ERR_SUITES_ENCODING:
        snprintf(buf, cap,
                 "SUITES_I holding one suite must be an int, not an array "
                 "(RFC 9528 5.2.2)");
        return;
    case EDHOC_ERR_CONN_ID_ENCODING:
        snprintf(buf, cap,
                 "C_I encoding: a one-byte identifier that has an int form must be "
                 "sent as that int (RFC 9528 3.3.2)");
        return;
    case EDHOC_ERR_EPHEMERAL_LENGTH:
    case EDHOC_ERR_INVALID_POINT:
        snprintf(buf, cap,
                 "G_X does not fit suite %d: wrong suite parameters (curve, "
                 "x-coordinate only)",
                 r->suite);
        return;
    case EDHOC_ERR_NOT_DETERMINISTIC:
    case EDHOC_ERR_TRAILING:
    case EDHOC_ERR_MALFORMED:
        snprintf(buf, cap,
                 "the %s is not deterministic CBOR as RFC 9528 3.1 and 5 require: check "
                 "the device's encoder (int vs byte string forms, lengths, trailing "
                 "bytes)",
                 r->step[0] ? r->step : "message");
        return;
    case EDHOC_ERR_ID_CRED_ENCODING:
        snprintf(buf, cap,
                 "ID_CRED_I not in compact form: a lone kid must be sent as the kid "
                 "itself (RFC 9528 3.5.3.2)");
        return;
    case EDHOC_ERR_MAC_LENGTH:
        snprintf(buf, cap,
                 "Signature_or_MAC_3 has the wrong length for method %d and suite %d: "
                 "wrong method or suite parameters",
                 r->method, r->suite);
        return;
    case EDHOC_ERR_EAD_CRITICAL:
    case EDHOC_ERR_EAD_REJECTED:
        snprintf(buf, cap,
                 "missing or extra EAD: the initiator sent a critical EAD item we do "
                 "not accept (--ead-accept)");
        return;
    default: break;
    }
    if (strstr(r->error_text, "unknown C_R"))
        snprintf(buf, cap,
                 "the C_R prefix names no handshake in progress: check how the initiator encodes "
                 "C_R (a one-byte C_R with an int form is sent as that int, RFC 9528 3.3.2), or "
                 "the handshake expired first (--handshake-timeout)");
    else if (strstr(r->error_text, "message_4 required"))
        snprintf(buf, cap,
                 "we send message_4 (--message-4), which the RFC 9668 combined request "
                 "cannot carry");
    else
        snprintf(buf, cap, "compare the trace with the device's log line by line");
}

void srv_hs_emit(struct edhoc_server *srv, struct edhoc_server_handshake *r)
{
    if (!srv->cfg.record)
        return;
    char causes[600];
    if (!r->causes[0]) {
        hs_causes(r, causes, sizeof causes);
        r->causes = causes;
    }
    srv->cfg.record(srv->cfg.record_user, r);
}

/* A handshake in progress ends without message_3 or by an outside event. */
void srv_hs_end_pending(struct edhoc_server *srv, const struct pending *h,
                        enum edhoc_server_outcome outcome, const char *step, const char *text)
{
    if (!srv->cfg.record)
        return;
    struct edhoc_server_handshake r;
    srv_hs_from_pending(srv, h, &r);
    r.outcome = outcome;
    r.step = step;
    r.error_text = text;
    srv_hs_emit(srv, &r);
}

void srv_first_request_add(struct edhoc_server *srv, uint64_t hs_id, const struct ctx_key *key,
                           const char *peer)
{
    if (!srv->cfg.oscore)
        return;
    for (size_t i = 0; i < FIRST_REQUESTS; i++) {
        struct first_request *f = &srv->first[i];
        if (f->used && srv_key_equal(&f->key, key))
            f->used = false;
    }
    struct first_request *f = &srv->first[srv->first_next++ % FIRST_REQUESTS];
    f->used = true;
    f->hs_id = hs_id;
    f->key = *key;
    snprintf(f->peer, sizeof f->peer, "%s", peer);
}

/* The awaiting entry of a context (key) or else of a peer (key NULL). */
struct first_request *srv_first_request_find(struct edhoc_server *srv, const struct ctx_key *key,
                                             const char *peer)
{
    if (!srv->cfg.oscore)
        return NULL;
    for (size_t i = 0; i < FIRST_REQUESTS; i++) {
        struct first_request *f = &srv->first[i];
        if (!f->used)
            continue;
        if (key ? srv_key_equal(&f->key, key) : !strcmp(f->peer, peer))
            return f;
    }
    return NULL;
}

void srv_first_request_report(struct edhoc_server *srv, struct first_request *f, int err,
                              const char *text)
{
    struct edhoc_server_oscore_first r = {
        .handshake = f->hs_id,
        .peer = f->peer,
        .error = err,
        .text = text ? text : "",
    };
    srv->cfg.oscore(srv->cfg.record_user, &r);
    f->used = false;
}

uint64_t edhoc_server_current_handshake(const struct edhoc_server *srv, const char **peer)
{
    if (peer)
        *peer = srv->hs_current ? srv->hs_peer : NULL;
    return srv->hs_current;
}
