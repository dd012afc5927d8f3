/*
 * sha256.h -- SHA-256 (FIPS 180-4), incremental and one-shot, plus lowercase hex.
 * Used for revision anchors (digest of the raw prefix), content ids and nonces.
 */
#ifndef LC_SHA256_H
#define LC_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t len;      /* bytes hashed so far */
    uint8_t buf[64];
    size_t buf_len;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
void sha256(const void *data, size_t len, uint8_t out[32]);
/* 64 hex characters + NUL into hex[65]. */
void sha256_hex(const void *data, size_t len, char hex[65]);
void sha256_to_hex(const uint8_t digest[32], char hex[65]);
/* The CPU's SHA extensions are used where present; on = 0 turns them off for the whole
 * process and on = 1 back on (tests compare both paths, a benchmark can time each).
 * Returns 1 when this CPU has them. */
int sha256_set_accel(int on);

#endif
