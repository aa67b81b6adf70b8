/*
 * The key log of the responder (cfg.edhoc_keys, cfg.oscore_keys): the
 * secrets that open a capture of each handshake decrypted. Handshakes
 * interleave (message_1 of one between message_1 and message_3 of
 * another) and the configuration the credentials hand out is shared by
 * all of them, so each handshake gets a copy whose trace fills its own
 * log; the trace the configuration had keeps receiving every value.
 */
#include "server_internal.h"

const struct edhoc_config *srv_key_log_start(struct edhoc_server *srv, struct pending *h,
                                             const struct edhoc_config *cfg)
{
    h->klog = NULL;
    if (!srv->cfg.edhoc_keys)
        return cfg;
    struct srv_key_log *k = calloc(1, sizeof *k);
    if (!k) {
        srv_log(srv, EDHOC_LOG_WARNING,
                "handshake peer=%s: out of memory, its secrets are not in the key log", h->peer);
        return cfg;
    }
    k->cfg = *cfg;
    k->log.next = cfg->trace;
    k->log.next_ctx = cfg->trace_ctx;
    k->cfg.trace = edhoc_key_log_trace;
    k->cfg.trace_ctx = &k->log;
    h->klog = k;
    return &k->cfg;
}

void srv_key_log_completed(struct edhoc_server *srv, struct pending *h)
{
    if (!h->klog)
        return;
    if (edhoc_key_log_complete(&h->klog->log))
        srv->cfg.edhoc_keys(srv->cfg.keys_user, &h->klog->log);
    edhoc_key_log_wipe(&h->klog->log);
}

void srv_key_log_oscore(struct edhoc_server *srv, const struct edhoc_oscore_params *p)
{
    if (srv->cfg.oscore_keys)
        srv->cfg.oscore_keys(srv->cfg.keys_user, p);
}

void srv_key_log_free(struct pending *h)
{
    if (!h->klog)
        return;
    edhoc_wipe(h->klog, sizeof *h->klog);
    free(h->klog);
    h->klog = NULL;
}
