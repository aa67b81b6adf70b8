/*
 * What every engine of src/tools/ shares: the clock the measurements
 * read and the status codes the engines return (the program turns them
 * into its exit codes and prints the engine's message).
 */
#ifndef EDHOC_TOOLS_H
#define EDHOC_TOOLS_H

#include <stdint.h>
#include <time.h>

enum tools_status {
    TOOLS_OK = 0,
    TOOLS_ERR_FAILURE = -1,  /* the run completed and nothing succeeded */
    TOOLS_ERR_USAGE = -2,    /* a setting the engine cannot take */
    TOOLS_ERR_INPUT = -3,    /* a file or directory it cannot use */
    TOOLS_ERR_INTERNAL = -10 /* out of memory, a step that must not fail */
};

/* Monotonic time in nanoseconds. */
static inline uint64_t tools_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
