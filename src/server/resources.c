/*
 * The resources behind OSCORE (/.well-known/core, /hello, /time, /bytes,
 * ...) and Observe (RFC 7641): the observers and their notifications.
 */
#include "server_internal.h"

bool srv_path_is(const struct coap_msg *m, const char *path)
{
    /* path "/a/b": compare with the Uri-Path options in order. */
    const char *s = path;
    size_t seen = 0;
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (o->number != COAP_OPT_URI_PATH)
            continue;
        if (*s != '/')
            return false;
        s++;
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n != o->len || memcmp(s, o->value, n))
            return false;
        s += n;
        seen++;
    }
    return *s == '\0' || (seen == 0 && !strcmp(path, "/"));
}

bool srv_protected_path(const struct coap_msg *m)
{
    return srv_path_is(m, "/.well-known/core") || srv_path_is(m, "/echo") ||
           srv_path_is(m, "/time") || srv_path_is(m, "/counter") || srv_path_is(m, "/bytes");
}

static const char link_format[] =
    "</.well-known/edhoc>;rt=\"core.edhoc\";ed-comb-req,</echo>;title=\"echo\","
    "</time>;title=\"time\",</counter>;obs;title=\"counter\","
    "</bytes>;title=\"n bytes: ?n=N\"";

/* The value of query parameter name=... of m (a Uri-Query option), or
 * NULL. */
static const struct coap_option *query_param(const struct coap_msg *m, const char *name,
                                             size_t *off)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (o->number == COAP_OPT_URI_QUERY && o->len > nl && !memcmp(o->value, name, nl) &&
            o->value[nl] == '=') {
            *off = nl + 1;
            return o;
        }
    }
    return NULL;
}

/* GET /bytes?n=N: N bytes of a pattern anyone can check (byte i is
 * 'a' + i mod 26), so large responses can be tried against any client. */
static void bytes_resource(struct edhoc_server *srv, const struct coap_msg *in,
                           struct plain_resp *r);

void srv_resource(struct edhoc_server *srv, const struct coap_msg *in, struct plain_resp *r)
{
    memset(r, 0, sizeof *r);
    r->cf = -1;
    if (srv_path_is(in, "/.well-known/core")) {
        if (in->code != COAP_CODE_GET) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        r->code = COAP_CODE_CONTENT;
        r->cf = CF_LINK_FORMAT;
        r->payload = (const uint8_t *)link_format;
        r->payload_len = strlen(link_format);
    } else if (srv_path_is(in, "/echo")) {
        if (in->code != COAP_CODE_POST && in->code != COAP_CODE(0, 3)) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        r->code = COAP_CODE_CHANGED;
        const struct coap_option *cf = edhoc_coap_msg_find_option(in, COAP_OPT_CONTENT_FORMAT);
        uint32_t v;
        if (cf && !edhoc_coap_option_uint(cf, &v))
            r->cf = (int)v;
        r->payload = in->payload;
        r->payload_len = in->payload_len;
    } else if (srv_path_is(in, "/time")) {
        if (in->code != COAP_CODE_GET) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(r->text, sizeof r->text, "%Y-%m-%dT%H:%M:%SZ", &tm);
        r->code = COAP_CODE_CONTENT;
        r->cf = CF_TEXT;
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
    } else if (srv_path_is(in, "/bytes")) {
        bytes_resource(srv, in, r);
    } else if (srv_path_is(in, "/counter")) {
        if (in->code != COAP_CODE_GET) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        snprintf(r->text, sizeof r->text, "%u", srv->counter);
        r->code = COAP_CODE_CONTENT;
        r->cf = CF_TEXT;
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
    } else {
        r->code = COAP_CODE(4, 4);
    }
}

static void bytes_resource(struct edhoc_server *srv, const struct coap_msg *in,
                           struct plain_resp *r)
{
    if (in->code != COAP_CODE_GET) {
        r->code = COAP_CODE(4, 5);
        return;
    }
    size_t off = 0;
    const struct coap_option *q = query_param(in, "n", &off);
    unsigned long n = 0;
    bool ok = q && q->len > off && q->len - off <= 9;
    for (size_t i = off; ok && q && i < q->len; i++) {
        ok = q->value[i] >= '0' && q->value[i] <= '9';
        n = n * 10 + (unsigned long)(q->value[i] - '0');
    }
    if (!ok) {
        r->code = COAP_CODE_BAD_REQUEST;
        snprintf(r->text, sizeof r->text, "expected ?n=N");
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
        return;
    }
    if (n > srv->cfg.max_body) {
        /* Above what this server serves (its --max-body). */
        r->code = COAP_CODE(4, 13);
        snprintf(r->text, sizeof r->text, "at most %zu bytes", srv->cfg.max_body);
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
        return;
    }
    if (!srv->bytes_body) {
        srv->bytes_body = malloc(srv->cfg.max_body ? srv->cfg.max_body : 1);
        if (!srv->bytes_body) {
            r->code = COAP_CODE(5, 0);
            return;
        }
        for (size_t i = 0; i < srv->cfg.max_body; i++)
            srv->bytes_body[i] = (uint8_t)('a' + i % 26);
    }
    r->code = COAP_CODE_CONTENT;
    r->cf = CF_TEXT;
    r->payload = n ? srv->bytes_body : NULL;
    r->payload_len = n;
}

/* The inner (plaintext) response to in. */
long srv_inner_response(const struct coap_msg *in, const struct plain_resp *r, uint8_t *out,
                        size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = in->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.mid = in->mid;
    m.token_len = in->token_len;
    memcpy(m.token, in->token, in->token_len);
    m.code = r->code;
    uint8_t ob[4], cfv[4];
    if (r->observe)
        edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, ob, edhoc_coap_uint_encode(r->seq, ob));
    if (r->cf >= 0)
        edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                  edhoc_coap_uint_encode((uint32_t)r->cf, cfv));
    m.payload = r->payload_len ? r->payload : NULL;
    m.payload_len = r->payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

struct observer *srv_observer_find(struct edhoc_server *srv, const struct ctx_key *key,
                                   const uint8_t *tok, size_t tok_len)
{
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        struct observer *o = &srv->observers[i];
        if (o->used && srv_key_equal(&o->key, key) && o->token_len == tok_len &&
            !memcmp(o->token, tok, tok_len))
            return o;
    }
    return NULL;
}

void srv_observer_drop(struct observer *o)
{
    if (!o->used)
        return;
    if (o->release)
        o->release(o->peer);
    memset(o, 0, sizeof *o);
}

void edhoc_server_peer_failed(void *user, struct edhoc_transport_peer *peer, const uint8_t *token,
                              size_t token_len)
{
    struct edhoc_server *srv = user;
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        struct observer *o = &srv->observers[i];
        if (o->used && o->peer == peer && o->token_len == token_len &&
            !memcmp(o->token, token, token_len)) {
            srv_log(srv, EDHOC_LOG_INFO, "observer gone: notifications stopped");
            srv_observer_drop(o);
        }
    }
}

/* ---- Notifications of the observed counter ---- */

void srv_notify_counter(struct edhoc_server *srv)
{
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        struct observer *o = &srv->observers[i];
        if (!o->used)
            continue;
        struct peer_ctx *ctx = srv_ctx_find(srv, &o->key);
        if (!ctx || !srv->cfg.send) {
            srv_observer_drop(o);
            continue;
        }
        struct coap_msg in;
        memset(&in, 0, sizeof in);
        in.type = COAP_TYPE_NON;
        in.token_len = o->token_len;
        memcpy(in.token, o->token, o->token_len);
        struct plain_resp r;
        memset(&r, 0, sizeof r);
        snprintf(r.text, sizeof r.text, "%u", srv->counter);
        r.code = COAP_CODE_CONTENT;
        r.cf = CF_TEXT;
        r.payload = (const uint8_t *)r.text;
        r.payload_len = strlen(r.text);
        r.observe = true;
        r.seq = ++o->seq & 0xffffff;
        long pn = srv_inner_response(&in, &r, srv->inner_resp, srv->inner_cap);
        long n = pn < 0 ? -1
                        : oscore_protect_response(&ctx->osc, &o->b, srv->inner_resp, (size_t)pn,
                                                  true, srv->inner, srv->inner_cap);
        if (n < 0 || srv->cfg.send(srv->cfg.send_user, o->peer, srv->inner, (size_t)n))
            srv_observer_drop(o);
    }
}
