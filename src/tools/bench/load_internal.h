/* What the files of the load engine share (not for the program). */
#ifndef EDHOC_TOOLS_LOAD_INTERNAL_H
#define EDHOC_TOOLS_LOAD_INTERNAL_H

#include "load.h"

/* The responder's CPU time, when it runs on this host (load_procfs.c). */
struct load_cpu {
    bool ok;
    double seconds;     /* user + system, of the process and its children */
    unsigned processes; /* the process and its children (responder --workers) */
};

void load_cpu_sample(struct load_cpu *c, long pid);
/* This process's CPU seconds (user + system): the generator's cost. */
double load_generator_cpu_seconds(void);

/* The peers' state machines (load_peer.c). */
void load_series_add(struct load_series *s, double v);
long load_request(uint8_t code, const char *path, int cf, const uint8_t *payload, size_t len,
                  uint8_t *out, size_t cap);
long load_coap_with_echo(const uint8_t *req, size_t len, const uint8_t *echo, size_t echo_len,
                         uint8_t *out, size_t cap);
const char *load_coap_code_text(uint8_t code, char buf[8]);
bool load_peer_service(struct load_run *r, size_t index);
void load_peer_start(struct load_run *r, size_t index);

/* The message_1 flood (load_flood.c). */
int load_flood_open(struct load_run *r, char *error, size_t cap);
void load_flood_send_due(struct load_flood *f, uint64_t now);
void load_flood_receive(struct load_run *r);

#endif
