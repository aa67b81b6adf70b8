/* The monotonic clock the client's deadlines are kept on (private to
 * src/client). */
#ifndef EDHOC_CLIENT_TIME_H
#define EDHOC_CLIENT_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t client_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Milliseconds left until deadline, 0 once it has passed. */
static inline int client_left_ms(uint64_t deadline)
{
    uint64_t now = client_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now) / 1000000);
}

#endif
