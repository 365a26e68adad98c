/* Sanitizer test driver for the C sources in native/.
 *
 * Built by tests/native/test_sanitizers.py with
 *   gcc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
 * and run; exits 0 and prints "ok" when every check passed.  Each buffer is
 * malloc'ed with its exact size so that AddressSanitizer reports any read or
 * write outside it.  Checks results against simple reference models written
 * here (bit-by-bit CRC, byte-array reassembly, boolean-array PSN window).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uet_native.h"

static int failures;
#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            if (++failures > 20)                                                       \
                exit(1);                                                               \
        }                                                                              \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

static uint8_t *rand_buf(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
    return p;
}

static uint32_t ref_crc(uint32_t poly, uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ poly : crc >> 1;
    }
    return ~crc;
}

static void test_crc(void)
{
    const uint8_t *check = (const uint8_t *)"123456789";
    CHECK(uet_crc32c(0, check, 9) == 0xE3069283u);
    CHECK(uet_crc32c_sw(0, check, 9) == 0xE3069283u);
    CHECK(uet_crc32c_hw(0, check, 9) == 0xE3069283u);
    CHECK(uet_crc32(0, check, 9) == 0xCBF43926u);
    CHECK(uet_crc32c(0, check, 0) == 0);
    CHECK(uet_crc32c(0, NULL, 0) == 0);
    static const size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 79, 80, 127, 128, 129, 767, 768, 769, 4096, 24575,
                                   24576, 24577, 4031, 4032, 4033, 70000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (int rep = 0; rep < 3; rep++) {
            size_t n = sizes[s];
            uint8_t *p = rand_buf(n);
            uint32_t seed = rep ? (uint32_t)rnd() : 0;
            uint32_t want = ref_crc(0x82F63B78u, seed, p, n);
            CHECK(uet_crc32c(seed, p, n) == want);
            CHECK(uet_crc32c_sw(seed, p, n) == want);
            CHECK(uet_crc32c_hw(seed, p, n) == want);
            uint32_t want32 = ref_crc(0xEDB88320u, seed, p, n);
            CHECK(uet_crc32(seed, p, n) == want32);
            CHECK(uet_crc32_sw(seed, p, n) == want32);
            /* chaining at a random split, odd alignments included */
            size_t k = rnd_below(n + 1);
            CHECK(uet_crc32c(uet_crc32c(seed, p, k), p + k, n - k) == want);
            CHECK(uet_crc32c_sw(uet_crc32c_sw(seed, p, k), p + k, n - k) == want);
            CHECK(uet_crc32(uet_crc32(seed, p, k), p + k, n - k) == want32);
            free(p);
        }
    }
}

static void test_icrc(void)
{
    /* every length 0..120 for IPv4 (all IHL values) and IPv6: never reads out
     * of bounds; too short -> -1; bad version -> -2; IHL < 5 -> -3 */
    for (int ver = 0; ver < 16; ver++) {
        for (int ihl = 0; ihl < 16; ihl++) {
            for (size_t n = 0; n <= 120; n++) {
                uint8_t *p = rand_buf(n);
                if (n)
                    p[0] = (uint8_t)(ver << 4 | ihl);
                int64_t rc = uet_roce_icrc(p, n);
                uint32_t out = (uint32_t)rc;
                if (rc >= 0)
                    rc = 0;
                if (n == 0)
                    CHECK(rc == -1);
                else if (ver == 4 && ihl < 5)
                    CHECK(rc == -3);
                else if (ver == 4)
                    CHECK(rc == ((n < (size_t)ihl * 4 + 20) ? -1 : 0));
                else if (ver == 6)
                    CHECK(rc == ((n < 60) ? -1 : 0));
                else
                    CHECK(rc == -2);
                if (rc == 0 && ver == 6) {
                    /* masked fields do not matter, others do */
                    p[1] ^= 0x5a;
                    p[7] ^= 0x33;
                    p[46] ^= 0x11;
                    p[52] ^= 0x80;
                    CHECK(uet_roce_icrc(p, n) == (int64_t)out);
                    p[8] ^= 1; /* source address is covered */
                    CHECK(uet_roce_icrc(p, n) >= 0 && uet_roce_icrc(p, n) != (int64_t)out);
                }
                free(p);
            }
        }
    }
}

static void test_reasm_one(int64_t length, int rounds, int64_t max_len)
{
    uint8_t *buf = malloc(length ? (size_t)length : 1);
    uint8_t *model = calloc(length ? (size_t)length : 1, 1);
    uint8_t *have = calloc(length ? (size_t)length : 1, 1);
    memset(buf, 0, length ? (size_t)length : 1);
    uet_reasm *r = uet_reasm_new(buf, length);
    CHECK(r != NULL);
    int64_t received = 0;
    for (int i = 0; i < rounds; i++) {
        int64_t off = (int64_t)rnd_below((uint64_t)length + 1);
        int64_t len = (int64_t)rnd_below((uint64_t)(length - off) + 1);
        if (len > max_len)
            len = (int64_t)rnd_below((uint64_t)max_len + 1);
        if (rnd_below(4) == 0 && len > 300)
            len = (int64_t)rnd_below(300);
        uint8_t *data = rand_buf((size_t)len);
        int64_t want = 0;
        for (int64_t j = 0; j < len; j++)
            if (!have[off + j]) {
                have[off + j] = 1;
                model[off + j] = data[j];
                want++;
            }
        received += want;
        CHECK(uet_reasm_place(r, off, data, len) == want);
        free(data);
        /* bad ranges never touch memory: data pointer is NULL on purpose */
        CHECK(uet_reasm_place(r, -1, NULL, 1) == -1);
        CHECK(uet_reasm_place(r, length, NULL, 1) == -1);
        CHECK(uet_reasm_place(r, off, NULL, length - off + 1) == -1);
        CHECK(uet_reasm_place(r, 0, NULL, -5) == -1);
        CHECK(uet_reasm_place(r, INT64_MAX, NULL, INT64_MAX) == -1);
        CHECK(uet_reasm_place(r, 1, NULL, INT64_MAX) == -1);
        CHECK(uet_reasm_has(r, -1, 0) == -1);
        CHECK(uet_reasm_has(r, length, 1) == -1);
        CHECK(uet_reasm_has(r, 2, INT64_MAX) == -1);
        int64_t qo = (int64_t)rnd_below((uint64_t)length + 1);
        int64_t ql = (int64_t)rnd_below((uint64_t)(length - qo) + 1);
        if (ql > max_len)
            ql = (int64_t)rnd_below((uint64_t)max_len + 1);
        int all = 1;
        for (int64_t j = 0; j < ql; j++)
            all &= have[qo + j];
        CHECK(uet_reasm_has(r, qo, ql) == all);
    }
    CHECK(uet_reasm_received(r) == received);
    CHECK(uet_reasm_length(r) == length);
    CHECK(memcmp(buf, model, (size_t)length) == 0);
    /* holes against the model */
    int64_t nh = uet_reasm_missing(r, NULL, 0);
    int64_t *holes = malloc(sizeof(int64_t) * 2 * (size_t)(nh ? nh : 1));
    CHECK(uet_reasm_missing(r, holes, nh) == nh);
    int64_t k = 0, j = 0;
    while (j < length) {
        if (have[j]) {
            j++;
            continue;
        }
        int64_t s = j;
        while (j < length && !have[j])
            j++;
        CHECK(k < nh && holes[2 * k] == s && holes[2 * k + 1] == j - s);
        k++;
    }
    CHECK(k == nh);
    if (nh > 1) /* a short output array is filled partly, count still total */
        CHECK(uet_reasm_missing(r, holes, 1) == nh);
    free(holes);
    uet_reasm_free(r);
    free(buf);
    free(model);
    free(have);
}

static void test_reasm(void)
{
    test_reasm_one(0, 5, INT64_MAX);
    test_reasm_one(1, 10, INT64_MAX);
    test_reasm_one(63, 50, INT64_MAX);
    test_reasm_one(64, 50, INT64_MAX);
    test_reasm_one(65, 50, INT64_MAX);
    test_reasm_one(1000, 200, INT64_MAX);
    test_reasm_one(10007, 300, INT64_MAX);
    test_reasm_one(65536, 60, INT64_MAX);
    /* large enough for the non-temporal copy path */
    test_reasm_one((9 << 20) + 77, 400, 20000);
    /* 4 KiB chunks, shuffled, to completion */
    int64_t n = 64, L = n * 4096 - 123;
    uint8_t *buf = malloc((size_t)L);
    uet_reasm *r = uet_reasm_new(buf, L);
    int64_t order[64];
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rnd_below((uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    uint8_t *src = rand_buf((size_t)L);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = order[i] * 4096, len = off + 4096 > L ? L - off : 4096;
        CHECK(uet_reasm_place(r, off, src + off, len) == len);
        CHECK(uet_reasm_place(r, off, src + off, len) == 0);
    }
    CHECK(uet_reasm_received(r) == L);
    CHECK(uet_reasm_missing(r, NULL, 0) == 0);
    CHECK(memcmp(buf, src, (size_t)L) == 0);
    uet_reasm_free(r);
    free(buf);
    free(src);
    CHECK(uet_reasm_new(NULL, -1) == NULL);
}

static void test_psn_one(uint32_t start, uint32_t size, int rounds)
{
    uet_psnwin *w = uet_psnwin_new(start, size);
    CHECK(w != NULL);
    /* model: received flags for offsets 0..span-1 from start */
    uint32_t span = size * 4 + 128, alloc = span + size + 64;
    uint8_t *got = calloc(alloc, 1);
    uint32_t cack = start - 1u, highest = cack;
    for (int i = 0; i < rounds; i++) {
        uint32_t off = (uint32_t)rnd_below(span);
        uint32_t psn = start + off;
        if (rnd_below(16) == 0)
            psn = (uint32_t)rnd(); /* anywhere */
        int32_t d = (int32_t)(psn - cack);
        int want;
        if (d <= 0)
            want = UET_PSN_DUPLICATE;
        else if ((uint32_t)d > size)
            want = UET_PSN_OUT_OF_WINDOW;
        else if (got[psn - start])
            want = UET_PSN_DUPLICATE;
        else
            want = UET_PSN_NEW;
        int rc = uet_psnwin_set(w, psn);
        CHECK(rc == want);
        if (want == UET_PSN_NEW) {
            got[psn - start] = 1;
            if ((int32_t)(psn - highest) > 0)
                highest = psn;
            while ((uint32_t)(cack + 1u - start) < alloc && got[cack + 1u - start])
                cack++;
        }
        CHECK(uet_psnwin_cack(w) == cack);
        CHECK(uet_psnwin_highest(w) == highest);
        uint32_t base = start + (uint32_t)rnd_below(span) - 64u;
        uint64_t sack = uet_psnwin_sack(w, base);
        for (unsigned b = 0; b < 64; b++) {
            uint32_t p = base + b;
            int32_t dd = (int32_t)(p - cack);
            int exp = dd <= 0 ? 1 : ((uint32_t)dd > size ? 0 : got[p - start]);
            CHECK((int)(sack >> b & 1) == exp);
            CHECK(uet_psnwin_test(w, p) == exp);
        }
    }
    free(got);
    uet_psnwin_free(w);
}

static void test_psn(void)
{
    CHECK(uet_psnwin_new(0, 0) == NULL);
    CHECK(uet_psnwin_new(0, UET_PSN_MAX_WINDOW + 1) == NULL);
    CHECK(uet_psn_diff(0, 0xFFFFFFFFu) == 1);
    CHECK(uet_psn_diff(0xFFFFFFFFu, 0) == -1);
    CHECK(uet_psn_diff(0x80000000u, 0) == INT32_MIN);
    CHECK(uet_psn_lt(0xFFFFFFF0u, 5) == 1);
    CHECK(uet_psn_lt(5, 0xFFFFFFF0u) == 0);
    test_psn_one(0, 1, 200);
    test_psn_one(0xFFFFFFF0u, 64, 3000);
    test_psn_one(0xFFFFFFF0u, 100, 3000);
    test_psn_one(0xFFFFFF00u, 1024, 6000);
    test_psn_one(12345, 7, 500);
    test_psn_one(0x7FFFFFF0u, 200, 2000);
}

int main(void)
{
    test_crc();
    test_icrc();
    test_reasm();
    test_psn();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
