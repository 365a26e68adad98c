/* The fabric's seeded generator, the C twin of uet/net/rng.py (NET-R1, NET-R2): xoshiro256**
 * whose four state words come from splitmix64 of the seed. Header-only: native/fabric.c and the
 * sanitizer driver include it. */
#ifndef UET_RNG_H
#define UET_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} uet_rng;

static inline uint64_t uet_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* NET-R1 */
static inline void uet_rng_seed(uet_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = uet_splitmix64(&seed);
}

static inline uint64_t uet_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* NET-R1: the next word */
static inline uint64_t uet_rng_next(uet_rng *r) {
    uint64_t *s = r->s;
    uint64_t out = uet_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = uet_rotl(s[3], 45);
    return out;
}

/* NET-R2: a double in [0, 1) from the top 53 bits */
static inline double uet_rng_random(uet_rng *r) {
    return (double)(uet_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
