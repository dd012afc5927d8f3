/*
 * sha256.c -- SHA-256 per FIPS 180-4 (see sha256.h). Self-contained so the engine has no
 * crypto-library dependency; owns no state beyond the caller's sha256_ctx and the switch
 * that turns the x86 SHA extensions off (sha256_set_accel).
 */
#include "sha256.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_HAVE_NI 1
#endif

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t sha256_rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const uint8_t p[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = sha256_rotr(w[i - 15], 7) ^ sha256_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = sha256_rotr(w[i - 2], 17) ^ sha256_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = sha256_rotr(e, 6) ^ sha256_rotr(e, 11) ^ sha256_rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + sha256_k[i] + w[i];
        uint32_t S0 = sha256_rotr(a, 2) ^ sha256_rotr(a, 13) ^ sha256_rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

#ifdef SHA256_HAVE_NI
/* The same compression with the CPU's SHA extensions (SHA-NI): a content id of every large
 * tool result is computed at import, and the portable rounds were a tenth of its
 * instructions. The state lives as ABEF/CDGH lane pairs, as sha256rnds2 wants it. */
__attribute__((target("sha,sse4.1,ssse3"))) static void sha256_blocks_ni(uint32_t h[8], const uint8_t *p,
                                                                            size_t n)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&h[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&h[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; n > 0; n--, p += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh, w[4];
        for (int g = 0; g < 16; g++) {
            __m128i *wg = &w[g & 3];
            if (g < 4) {
                *wg = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
            } else {
                /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four words at a time. */
                __m128i t = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
                *wg = _mm_sha256msg2_epu32(t, w[(g + 3) & 3]);
            }
            __m128i wk = _mm_add_epi32(*wg, _mm_loadu_si128((const __m128i *)&sha256_k[4 * g]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));
}
#endif

/* -1 until the first hash asks the CPU; 0 or 1 after (or as sha256_set_accel set it). */
static atomic_int sha256_accel = -1;

static int sha256_accel_on(void)
{
    int a = atomic_load_explicit(&sha256_accel, memory_order_relaxed);
    if (a < 0) {
#ifdef SHA256_HAVE_NI
        /* CPUID itself: gcc's and clang's __builtin_cpu_supports do not name the same
         * features. Leaf 1: SSSE3 (ECX bit 9), SSE4.1 (bit 19); leaf 7: SHA (EBX bit 29). */
        unsigned eax, ebx, ecx, edx;
        a = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx >> 9 & 1) && (ecx >> 19 & 1) &&
            __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx >> 29 & 1);
#else
        a = 0;
#endif
        atomic_store_explicit(&sha256_accel, a, memory_order_relaxed);
    }
    return a;
}

int sha256_set_accel(int on)
{
    atomic_store_explicit(&sha256_accel, -1, memory_order_relaxed);
    int have = sha256_accel_on();
    atomic_store_explicit(&sha256_accel, on && have, memory_order_relaxed);
    return have;
}

/* n whole blocks at p. */
static void sha256_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
#ifdef SHA256_HAVE_NI
    if (sha256_accel_on()) {
        sha256_blocks_ni(h, p, n);
        return;
    }
#endif
    for (; n > 0; n--, p += 64) sha256_block(h, p);
}

void sha256_init(sha256_ctx *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->len = 0;
    c->buf_len = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
    const uint8_t *p = data;
    c->len += len;
    if (c->buf_len > 0) {
        size_t take = 64 - c->buf_len;
        if (take > len) take = len;
        memcpy(c->buf + c->buf_len, p, take);
        c->buf_len += take;
        p += take;
        len -= take;
        if (c->buf_len < 64) return;
        sha256_blocks(c->h, c->buf, 1);
        c->buf_len = 0;
    }
    /* Whole blocks straight from the input, without copying them through buf. */
    sha256_blocks(c->h, p, len / 64);
    p += len / 64 * 64;
    len %= 64;
    if (len > 0) {
        memcpy(c->buf, p, len);
        c->buf_len = len;
    }
}

void sha256_final(sha256_ctx *c, uint8_t out[32])
{
    uint64_t bits = c->len * 8;
    uint8_t pad[72];
    size_t pad_len = (c->buf_len < 56 ? 56 : 120) - c->buf_len;
    memset(pad, 0, sizeof pad);
    pad[0] = 0x80;
    for (int i = 0; i < 8; i++) pad[pad_len + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    /* sha256_update counts these bytes too; the length was captured above. */
    sha256_update(c, pad, pad_len + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
    memset(c->buf, 0, sizeof c->buf);
}

void sha256(const void *data, size_t len, uint8_t out[32])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, out);
}

void sha256_to_hex(const uint8_t digest[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

void sha256_hex(const void *data, size_t len, char hex[65])
{
    uint8_t d[32];
    sha256(data, len, d);
    sha256_to_hex(d, hex);
}
