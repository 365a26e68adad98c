/* MT19937 as CPython's Modules/_randommodule.c runs it (genrand_uint32, Matsumoto and
 * Nishimura's reference), continuing from a random.Random's state; see mtbytes.h. */
#include "mtbytes.h"

#define MT_M 397
#define MT_MATRIX_A 0x9908b0dfU
#define MT_UPPER 0x80000000U
#define MT_LOWER 0x7fffffffU

/* The next 624 words of the state, all at once. */
static void mt_twist(uint32_t *mt) {
    static const uint32_t mag01[2] = {0x0U, MT_MATRIX_A};
    uint32_t y;
    int k;
    for (k = 0; k < UET_MT_WORDS - MT_M; k++) {
        y = (mt[k] & MT_UPPER) | (mt[k + 1] & MT_LOWER);
        mt[k] = mt[k + MT_M] ^ (y >> 1) ^ mag01[y & 1U];
    }
    for (; k < UET_MT_WORDS - 1; k++) {
        y = (mt[k] & MT_UPPER) | (mt[k + 1] & MT_LOWER);
        mt[k] = mt[k + (MT_M - UET_MT_WORDS)] ^ (y >> 1) ^ mag01[y & 1U];
    }
    y = (mt[UET_MT_WORDS - 1] & MT_UPPER) | (mt[0] & MT_LOWER);
    mt[UET_MT_WORDS - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1U];
}

static inline uint32_t mt_temper(uint32_t y) {
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

static inline void put_le32(unsigned char *p, uint32_t w) {
    p[0] = (unsigned char)w;
    p[1] = (unsigned char)(w >> 8);
    p[2] = (unsigned char)(w >> 16);
    p[3] = (unsigned char)(w >> 24);
}

/* The next word, as genrand_uint32 gives it. */
static uint32_t mt_next(uint32_t *state) {
    if (state[UET_MT_WORDS] >= UET_MT_WORDS) {
        mt_twist(state);
        state[UET_MT_WORDS] = 0;
    }
    return mt_temper(state[state[UET_MT_WORDS]++]);
}

int uet_mt_bytes(uint32_t *state, char *out, size_t n) {
    unsigned char *p = (unsigned char *)out;
    size_t words = n / 4, i;
    unsigned rest = (unsigned)(n % 4);
    if (state[UET_MT_WORDS] > UET_MT_WORDS) return UET_MT_BAD_STATE;
    /* whole words a run of the state at a time: the same words as mt_next one by one, in a loop
     * the compiler can vectorize (this is what uet sim spends making its data) */
    for (i = 0; i < words;) {
        uint32_t at = state[UET_MT_WORDS], run;
        if (at >= UET_MT_WORDS) {
            mt_twist(state);
            at = state[UET_MT_WORDS] = 0;
        }
        run = UET_MT_WORDS - at;
        if (run > words - i) run = (uint32_t)(words - i);
        for (uint32_t j = 0; j < run; j++, p += 4) put_le32(p, mt_temper(state[at + j]));
        state[UET_MT_WORDS] = at + run;
        i += run;
    }
    if (rest) { /* getrandbits keeps the most significant bits of a partial last word */
        uint32_t w = mt_next(state) >> (32 - 8 * rest);
        for (unsigned b = 0; b < rest; b++) p[b] = (unsigned char)(w >> (8 * b));
    }
    return 0;
}
