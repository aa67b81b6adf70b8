/*
 * One CoAP request of the coap command and what follows from it: the
 * request plain or under a static OSCORE context, the Echo retry (RFC
 * 9175, RFC 8613 Appendix B.1.2), the server-started RFC 8613 Appendix B.2
 * followed once, an observation and its deregistration (RFC 7641), and
 * --repeat. Results come back in structs and through the hooks; the
 * command prints them.
 */
#ifndef EDHOC_CLIENT_COAP_REQUEST_H
#define EDHOC_CLIENT_COAP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_coap.h"
#include "edhoc/oscore.h"

struct edhoc_transport;

/* The sequence numbers a run sent with (the first 64, and how many). */
struct client_seq_log {
    uint64_t first[64];
    size_t n, total;
};

/* RFC 8613 Appendix B.2 as the client, when the server starts it: the
 * server has no valid context (it lost its replay window or sequence
 * number, or does not know our ID Context), answers request #1 with a
 * protected 4.01 carrying R2 as 'kid context', and request #2 goes under
 * the ID Context R2 || R3. The configured context stays what the state
 * directory continues; the new one (fresh keys, sequence numbers from 0)
 * lives for this run only, so the next run starts from the file again. */
struct client_b2_follow {
    const struct oscore_config *cfg; /* the context file's inputs */
    struct oscore_context *active;   /* the context requests go under now */
    struct oscore_context *next;     /* room for the new one */
    struct oscore_b2_client st;
    bool started, completed;
    uint8_t id1[OSCORE_MAX_ID_CONTEXT];
    size_t id1_len;
    bool has_id1;
};

/* One response as it was received. */
struct client_coap_response {
    uint8_t code;
    bool oscore;         /* the request went under OSCORE */
    bool protected_resp; /* the response came protected */
    int content_format;  /* -1: none */
    long bytes;          /* the CoAP message as received */
    long piv;            /* its own Partial IV, -1: none */
    bool echo;           /* answered after an Echo challenge (RFC 8613 Appendix B.1.2) */
    long echo_piv;       /* that challenge's Partial IV, -1: none */
    long block1_blocks, block2_blocks; /* inner blocks under OSCORE, -1: not counted */
    bool output;                       /* the body goes to the command's output file */
};

struct client_coap_hooks {
    /* Each response as it arrives (payload, its body). Returns 0, or -1
     * when the command could not write it out (the run stops). */
    int (*response)(void *user, const struct client_coap_response *r, const uint8_t *payload,
                    size_t len);
    /* One line for standard error, without the program's prefix. */
    void (*notice)(void *user, const char *line);
    /* Where a long run is: "notifications" or "requests", done of total. */
    void (*progress)(void *user, const char *what, long done, long total);
    /* Nonzero once the run should stop (SIGINT/SIGTERM). */
    int (*interrupted)(void *user);
    void *user;
};

#define CLIENT_COAP_MAX_EXTRA 16

struct client_coap_params {
    uint8_t code; /* the method */
    const char *path, *query;
    int content_format; /* -1: none */
    const uint8_t *body;
    size_t body_len;
    long observe;        /* notifications wanted, 0: no observation */
    long repeat;         /* >1: the request this many times */
    unsigned block_size; /* 0: 1024 */
    size_t max_body;
    long timeout_ms;
    bool output;    /* the command writes bodies to a file */
    bool non;       /* a Non-confirmable request (RFC 7252 Section 4.3) */
    long accept;    /* Accept (RFC 7252 Section 5.10.4), -1: none */
    bool has_token; /* the request's token given (RFC 7252 Section 5.3.1) */
    uint8_t token[8];
    size_t token_len;
    struct client_coap_option extra[CLIENT_COAP_MAX_EXTRA];
    size_t n_extra;
    bool verbose, quiet;
};

struct client_coap_run {
    struct client_coap_params p;
    struct client_coap_hooks h;
    struct oscore_context *ctx; /* NULL: a plain request */
    struct client_b2_follow follow;
    struct client_seq_log seqs;
    /* Results. */
    const char *error; /* the JSON schema's word for why the run failed, or NULL */
    long deregistered; /* 1: no observation; 0 confirmed; -1 not confirmed */
    bool repeat_done;  /* the --repeat figures below are set */
    long repeat_sent, repeat_ok;
    double repeat_seconds;
    /* Private: the message buffers and the request as built. */
    size_t cap;
    uint8_t *req, *prot, *resp, *plain;
    long n_req, n_send;
    const uint8_t *send_msg;
    struct oscore_binding b;
};

/* Fill r for params and hooks (ctx may be NULL; follow's cfg and next set
 * by the caller when ctx is), allocate the buffers, build the request and,
 * for an observation under OSCORE, protect it. Returns 0 or an exit code
 * (the reason given to the notice hook). */
int client_coap_prepare(struct client_coap_run *r);
/* Send the request on t and run what follows. Returns the exit code. */
int client_coap_exchange(struct client_coap_run *r, struct edhoc_transport *t);
/* Free the buffers (wiped). */
void client_coap_release(struct client_coap_run *r);

#endif
