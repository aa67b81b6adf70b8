/* Shared by the capture writer and reader: byte order and checksums. */
#ifndef EDHOC_CAPTURE_INTERNAL_H
#define EDHOC_CAPTURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define ETHERTYPE_IPV4  0x0800
#define ETHERTYPE_IPV6  0x86dd
#define IPPROTO_UDP_NUM 17
/* BSD loopback address families: AF_INET everywhere, AF_INET6 as the BSDs
 * number it (Linux's 10 is accepted when reading). */
#define LOOP_AF_INET      2
#define LOOP_AF_INET6_BSD 24

static inline uint16_t capture_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t capture_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void capture_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void capture_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* RFC 1071 one's-complement sum, continued from sum. */
uint32_t capture_csum_add(uint32_t sum, const uint8_t *p, size_t len);
uint16_t capture_csum_fold(uint32_t sum);

#endif
