/* RoCEv2 invariant CRC (docs/facts.md G.6, as Linux rxe computes it).
 *
 * ICRC = zlib CRC-32 of (8 x 0xFF || masked IP header || UDP header with
 * checksum masked || BTH with byte 4 masked || rest of the packet).  Only the
 * headers are copied (into a small stack buffer) and masked; the payload is
 * read in place.
 *
 * CRC-32 itself: on x86-64 with PCLMULQDQ, bulk data is folded 64 bytes at a
 * time with carry-less multiplies (Gopal et al., "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ", Intel 2009); the final 16-byte
 * remainder and any tail go through the portable slicing-by-8 tables, which
 * are also the whole story elsewhere.
 * Twins: uet/native/_twin.py roce_icrc and crc32 (zlib.crc32).
 */
#include <string.h>
#include "uet_native.h"

#define POLY 0xEDB88320u
#define UDP_LEN 8
#define BTH_LEN 12

static uint32_t crc32_table[8][256];
static int crc32_ready;
static int crc32_use_clmul;

static void crc32_init(void)
{
    if (crc32_ready)
        return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        crc32_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc32_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc32_table[0][c & 0xff] ^ (c >> 8);
            crc32_table[k][n] = c;
        }
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc32_use_clmul = __builtin_cpu_supports("pclmul") ? 1 : 0;
#endif
    __atomic_store_n(&crc32_ready, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void crc32_ctor(void) { crc32_init(); }

/* Raw register in, raw register out (no pre/post inversion). */
static uint32_t crc32_raw(uint32_t c32, const uint8_t *buf, size_t len)
{
    uint64_t c = c32;
    while (len && ((uintptr_t)buf & 7) != 0) {
        c = crc32_table[0][(c ^ *buf++) & 0xff] ^ (c >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, buf, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        w ^= c;
        c = crc32_table[7][w & 0xff] ^ crc32_table[6][(w >> 8) & 0xff] ^
            crc32_table[5][(w >> 16) & 0xff] ^ crc32_table[4][(w >> 24) & 0xff] ^
            crc32_table[3][(w >> 32) & 0xff] ^ crc32_table[2][(w >> 40) & 0xff] ^
            crc32_table[1][(w >> 48) & 0xff] ^ crc32_table[0][w >> 56];
        buf += 8;
        len -= 8;
    }
    while (len--)
        c = crc32_table[0][(c ^ *buf++) & 0xff] ^ (c >> 8);
    return (uint32_t)c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define UET_CLMUL 1
#include <immintrin.h>

/* Fold constants for the reflected IEEE polynomial: x^(512+64) and x^512
 * mod P (four-lane fold over 64 bytes), x^(128+64) and x^128 mod P (one
 * lane over 16 bytes), bit-reflected and shifted as in the paper. */
#define K1 0x154442bd4ull
#define K2 0x1c6e41596ull
#define K3 0x1751997d0ull
#define K4 0x0ccaa009eull

__attribute__((target("pclmul"))) static inline __m128i fold16(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* Raw register in and out; len >= 64 and a multiple of 16. */
__attribute__((target("pclmul"))) static uint32_t crc32_clmul(uint32_t c, const uint8_t *buf,
                                                              size_t len)
{
    __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(buf + 0));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(buf + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(buf + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(const void *)(buf + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
    buf += 64;
    len -= 64;
    const __m128i k12 = _mm_set_epi64x((long long)K2, (long long)K1);
    while (len >= 64) {
        x1 = fold16(x1, k12, _mm_loadu_si128((const __m128i *)(const void *)(buf + 0)));
        x2 = fold16(x2, k12, _mm_loadu_si128((const __m128i *)(const void *)(buf + 16)));
        x3 = fold16(x3, k12, _mm_loadu_si128((const __m128i *)(const void *)(buf + 32)));
        x4 = fold16(x4, k12, _mm_loadu_si128((const __m128i *)(const void *)(buf + 48)));
        buf += 64;
        len -= 64;
    }
    const __m128i k34 = _mm_set_epi64x((long long)K4, (long long)K3);
    x1 = fold16(x1, k34, x2);
    x1 = fold16(x1, k34, x3);
    x1 = fold16(x1, k34, x4);
    while (len >= 16) {
        x1 = fold16(x1, k34, _mm_loadu_si128((const __m128i *)(const void *)buf));
        buf += 16;
        len -= 16;
    }
    /* x1 now has the CRC remainder of everything so far: finish it as a
     * 16-byte message from a zero register. */
    uint8_t tail[16];
    _mm_storeu_si128((__m128i *)(void *)tail, x1);
    return crc32_raw(0, tail, 16);
}
#endif

/* Raw register in and out, fastest path available. */
static uint32_t crc32_any(uint32_t c, const uint8_t *buf, size_t len)
{
#ifdef UET_CLMUL
    if (crc32_use_clmul && len >= 64) {
        size_t bulk = len & ~(size_t)15;
        c = crc32_clmul(c, buf, bulk);
        buf += bulk;
        len -= bulk;
    }
#endif
    return crc32_raw(c, buf, len);
}

uint32_t uet_crc32(uint32_t crc, const void *buf, size_t len)
{
    if (!crc32_ready)
        crc32_init();
    return crc32_any(crc ^ 0xffffffffu, buf, len) ^ 0xffffffffu;
}

uint32_t uet_crc32_sw(uint32_t crc, const void *buf, size_t len)
{
    if (!crc32_ready)
        crc32_init();
    return crc32_raw(crc ^ 0xffffffffu, buf, len) ^ 0xffffffffu;
}

/* Raw register after 8 bytes of 0xFF from ~0: the rxe seed 0xDEBB20E3. */
#define LRH_SEED_RAW 0xDEBB20E3u

int64_t uet_roce_icrc(const void *vpkt, size_t len)
{
    const uint8_t *pkt = vpkt;
    uint8_t hdr[60 + UDP_LEN + BTH_LEN];
    size_t udp, hlen;

    if (!crc32_ready)
        crc32_init();
    if (len < 1)
        return -1;
    switch (pkt[0] >> 4) {
    case 4:
        udp = (size_t)(pkt[0] & 0x0f) * 4;
        if (udp < 20)
            return -3;
        hlen = udp + UDP_LEN + BTH_LEN;
        if (len < hlen)
            return -1;
        memcpy(hdr, pkt, hlen);
        hdr[1] = 0xff;  /* TOS */
        hdr[8] = 0xff;  /* TTL */
        hdr[10] = 0xff; /* header checksum */
        hdr[11] = 0xff;
        break;
    case 6:
        udp = 40;
        hlen = udp + UDP_LEN + BTH_LEN;
        if (len < hlen)
            return -1;
        memcpy(hdr, pkt, hlen);
        hdr[0] |= 0x0f; /* traffic class + flow label */
        hdr[1] = 0xff;
        hdr[2] = 0xff;
        hdr[3] = 0xff;
        hdr[7] = 0xff; /* hop limit */
        break;
    default:
        return -2;
    }
    hdr[udp + 6] = 0xff; /* UDP checksum */
    hdr[udp + 7] = 0xff;
    hdr[udp + UDP_LEN + 4] = 0xff; /* BTH FECN/BECN/resv6 */
    uint32_t c = crc32_raw(LRH_SEED_RAW, hdr, hlen);
    c = crc32_any(c, pkt + hlen, len - hlen);
    return (int64_t)(c ^ 0xffffffffu);
}
