/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init/xorout ~0).
 *
 * Two paths, chosen once at run time:
 *  - x86-64 with SSE4.2: the crc32 instruction over three interleaved streams
 *    (the instruction has a latency of 3 and a throughput of 1 per cycle),
 *    the three partial CRCs combined by "shifting" through zero bytes with
 *    precomputed 4x256 tables (after Mark Adler's crc32c.c);
 *  - everywhere else: portable slicing-by-8.
 * Twin: uet/native/_twin.py crc32c.
 */
#include <string.h>
#include "uet_native.h"

#define POLY 0x82F63B78u

static uint32_t crc32c_table[8][256];

/* Shift tables: multiply a raw CRC register by x^(8*n) mod P for the
 * interleave block sizes (bytes per stream; multiples of 8).  MID is chosen
 * so that a 4 KiB buffer is one 3-stream pass plus 64 bytes. */
#define LONG_BLK 8192
#define MID_BLK 1344
#define SHORT_BLK 256
static uint32_t crc32c_long[4][256];
static uint32_t crc32c_mid[4][256];
static uint32_t crc32c_short[4][256];

static int crc32c_ready;
static int crc32c_use_hw;

static uint32_t gf2_matrix_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1)
            sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_matrix_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        square[n] = gf2_matrix_times(mat, mat[n]);
}

/* Operator (32x32 GF(2) matrix, as the images of the 32 unit vectors) that
 * appends len zero bytes to a raw CRC register, for any len >= 1, by binary
 * exponentiation of the one-byte operator. */
static void crc32c_zeros_op(uint32_t *op, size_t len)
{
    uint32_t cur[32], tmp[32];
    uint32_t row = 1;
    cur[0] = POLY; /* one zero bit */
    for (int n = 1; n < 32; n++) {
        cur[n] = row;
        row <<= 1;
    }
    for (int k = 0; k < 3; k++) { /* 2, 4, 8 bits */
        gf2_matrix_square(tmp, cur);
        memcpy(cur, tmp, sizeof cur);
    }
    for (int n = 0; n < 32; n++) /* identity */
        op[n] = (uint32_t)1 << n;
    while (len) {
        if (len & 1) {
            for (int n = 0; n < 32; n++)
                tmp[n] = gf2_matrix_times(cur, op[n]);
            memcpy(op, tmp, sizeof tmp);
        }
        len >>= 1;
        if (len) {
            gf2_matrix_square(tmp, cur);
            memcpy(cur, tmp, sizeof cur);
        }
    }
}

static void crc32c_zeros(uint32_t zeros[][256], size_t len)
{
    uint32_t op[32];
    crc32c_zeros_op(op, len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_matrix_times(op, n);
        zeros[1][n] = gf2_matrix_times(op, n << 8);
        zeros[2][n] = gf2_matrix_times(op, n << 16);
        zeros[3][n] = gf2_matrix_times(op, n << 24);
    }
}

static inline uint32_t crc32c_shift(uint32_t zeros[][256], uint32_t crc)
{
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
           zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define UET_X86_HW 1
#include <immintrin.h>
#endif

static void crc32c_init(void)
{
    if (crc32c_ready)
        return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        crc32c_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc32c_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc32c_table[0][c & 0xff] ^ (c >> 8);
            crc32c_table[k][n] = c;
        }
    }
    crc32c_zeros(crc32c_long, LONG_BLK);
    crc32c_zeros(crc32c_mid, MID_BLK);
    crc32c_zeros(crc32c_short, SHORT_BLK);
#ifdef UET_X86_HW
    __builtin_cpu_init();
    crc32c_use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
    __atomic_store_n(&crc32c_ready, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void crc32c_ctor(void) { crc32c_init(); }

static inline uint64_t load64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

uint32_t uet_crc32c_sw(uint32_t crc, const void *vbuf, size_t len)
{
    const uint8_t *buf = vbuf;
    if (!crc32c_ready)
        crc32c_init();
    uint64_t c = crc ^ 0xffffffffu;
    while (len && ((uintptr_t)buf & 7) != 0) {
        c = crc32c_table[0][(c ^ *buf++) & 0xff] ^ (c >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t w = load64le(buf) ^ c;
        c = crc32c_table[7][w & 0xff] ^ crc32c_table[6][(w >> 8) & 0xff] ^
            crc32c_table[5][(w >> 16) & 0xff] ^ crc32c_table[4][(w >> 24) & 0xff] ^
            crc32c_table[3][(w >> 32) & 0xff] ^ crc32c_table[2][(w >> 40) & 0xff] ^
            crc32c_table[1][(w >> 48) & 0xff] ^ crc32c_table[0][w >> 56];
        buf += 8;
        len -= 8;
    }
    while (len--)
        c = crc32c_table[0][(c ^ *buf++) & 0xff] ^ (c >> 8);
    return (uint32_t)c ^ 0xffffffffu;
}

#ifdef UET_X86_HW

/* One pass of three interleaved streams over 3 * blk bytes.  The registers
 * are kept as 64-bit values: casting each result to uint32_t puts a
 * zero-extending move in the dependency chain (4 cycles instead of 3). */
#define CRC3_STEP(blk, shift_tab)                                                  \
    do {                                                                           \
        uint64_t c1 = 0, c2 = 0;                                                   \
        const uint8_t *end = next + (blk);                                         \
        do {                                                                       \
            uint64_t a, b, d;                                                      \
            memcpy(&a, next, 8);                                                   \
            memcpy(&b, next + (blk), 8);                                           \
            memcpy(&d, next + 2 * (blk), 8);                                       \
            c0 = _mm_crc32_u64(c0, a);                                             \
            c1 = _mm_crc32_u64(c1, b);                                             \
            c2 = _mm_crc32_u64(c2, d);                                             \
            next += 8;                                                             \
        } while (next < end);                                                      \
        c0 = crc32c_shift(shift_tab, (uint32_t)c0) ^ c1;                           \
        c0 = crc32c_shift(shift_tab, (uint32_t)c0) ^ c2;                           \
        next += 2 * (blk);                                                         \
        len -= 3 * (blk);                                                          \
    } while (0)

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *next,
                                                            size_t len)
{
#if defined(__x86_64__)
    uint64_t c0 = crc ^ 0xffffffffu;
    while (len && ((uintptr_t)next & 7) != 0) {
        c0 = _mm_crc32_u8((uint32_t)c0, *next++);
        len--;
    }
    while (len >= LONG_BLK * 3)
        CRC3_STEP(LONG_BLK, crc32c_long);
    while (len >= MID_BLK * 3)
        CRC3_STEP(MID_BLK, crc32c_mid);
    while (len >= SHORT_BLK * 3)
        CRC3_STEP(SHORT_BLK, crc32c_short);
    while (len >= 8) {
        uint64_t a;
        memcpy(&a, next, 8);
        c0 = _mm_crc32_u64(c0, a);
        next += 8;
        len -= 8;
    }
    uint32_t c = (uint32_t)c0;
#else
    uint32_t c = crc ^ 0xffffffffu;
    while (len >= 4) {
        uint32_t a;
        memcpy(&a, next, 4);
        c = _mm_crc32_u32(c, a);
        next += 4;
        len -= 4;
    }
#endif
    while (len) {
        c = _mm_crc32_u8(c, *next++);
        len--;
    }
    return c ^ 0xffffffffu;
}
#endif

uint32_t uet_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    if (!crc32c_ready)
        crc32c_init();
#ifdef UET_X86_HW
    if (crc32c_use_hw)
        return crc32c_hw(crc, buf, len);
#endif
    return uet_crc32c_sw(crc, buf, len);
}

uint32_t uet_crc32c(uint32_t crc, const void *buf, size_t len)
{
#ifdef UET_X86_HW
    if (__builtin_expect(crc32c_use_hw, 1))
        return crc32c_hw(crc, buf, len);
#endif
    return uet_crc32c_sw(crc, buf, len);
}

/* The A.3 trailer context (uet_native.h; twin: uet/wire/trailer.py udp_seed), one definition for
 * the receive lane (rxlane.c: checks and the ACKs it builds) and the request builder (txbuild.c). */
uint32_t uet_udp_seed(const uint8_t *src, const uint8_t *dst, uint32_t alen, uint16_t sport,
                      uint16_t dport, uint32_t udp_len)
{
    uint8_t ctx[40];
    if (alen > 16)
        alen = 16; /* never more than an IPv6 address; callers pass 4 or 16 */
    memcpy(ctx, src, alen);
    memcpy(ctx + alen, dst, alen);
    uint8_t *u = ctx + 2 * alen;
    u[0] = (uint8_t)(sport >> 8);
    u[1] = (uint8_t)sport;
    u[2] = (uint8_t)(dport >> 8);
    u[3] = (uint8_t)dport;
    u[4] = (uint8_t)(udp_len >> 8);
    u[5] = (uint8_t)udp_len;
    u[6] = u[7] = 0;
    return uet_crc32c(0, ctx, 2 * alen + 8);
}

int uet_crc32c_has_hw(void)
{
    if (!crc32c_ready)
        crc32c_init();
    return crc32c_use_hw;
}
