/* Sanitizer test driver for the C sources in native/.
 *
 * Built by tests/native/test_sanitizers.py with
 *   gcc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
 * and run; exits 0 and prints "ok" when every check passed.  Each buffer is
 * malloc'ed with its exact size so that AddressSanitizer reports any read or
 * write outside it.  Checks results against simple reference models written
 * here (bit-by-bit CRC, byte-array reassembly, boolean-array PSN window).
 * The batched socket calls (mmsg.c) run on real loopback UDP sockets with random sizes (slots
 * shorter than the datagram: truncation) and TOS values; their control-message parser gets random
 * and truncated control buffers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
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

/* ---- mmsg.c ---- */

static void test_cmsg_parse(void)
{
    uint8_t tos, dst[4];
    CHECK(uet_cmsg_parse4(NULL, 0, &tos, dst) == 0 && tos == 0);
    /* well-formed: IP_TOS then IP_PKTINFO, at every truncation of the buffer */
    size_t full = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct in_pktinfo));
    uint8_t *model = calloc(1, full);
    struct cmsghdr *c = (struct cmsghdr *)(void *)model;
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TOS;
    c->cmsg_len = CMSG_LEN(1);
    CMSG_DATA(c)[0] = 0xB9;
    c = (struct cmsghdr *)(void *)(model + CMSG_SPACE(sizeof(int)));
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
    struct in_pktinfo pi;
    memset(&pi, 0, sizeof pi);
    pi.ipi_addr.s_addr = htonl(0x7F000005);
    memcpy(CMSG_DATA(c), &pi, sizeof pi);
    for (size_t n = 0; n <= full; n++) {
        uint8_t *b = malloc(n ? n : 1);
        memcpy(b, model, n);
        memset(dst, 0, 4);
        int has = uet_cmsg_parse4(b, n, &tos, dst);
        CHECK(tos == (n >= CMSG_LEN(1) ? 0xB9 : 0));
        CHECK(has == (n >= CMSG_SPACE(sizeof(int)) + CMSG_LEN(sizeof(struct in_pktinfo))));
        if (has)
            CHECK(dst[0] == 127 && dst[3] == 5);
        free(b);
    }
    free(model);
    /* random bytes, random lengths: reads stay inside (ASan) */
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)rnd_below(200);
        uint8_t *b = rand_buf(n);
        if (n >= sizeof(struct cmsghdr) && rnd_below(2)) { /* plausible headers, random lengths */
            struct cmsghdr h;
            memcpy(&h, b, sizeof h);
            h.cmsg_len = (size_t)rnd_below(n + 40);
            h.cmsg_level = IPPROTO_IP;
            h.cmsg_type = rnd_below(2) ? IP_TOS : IP_PKTINFO;
            memcpy(b, &h, sizeof h);
        }
        (void)uet_cmsg_parse4(b, n, &tos, dst);
        free(b);
    }
}

static int udp4(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, big = 8 << 20;
    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_mmsg_round(int tx, int rx, uint16_t txport, uint16_t rxport, int32_t slot, int n,
                            int big)
{
    size_t total = 0;
    uint32_t *off = malloc(sizeof *off * (size_t)n), *len = malloc(sizeof *len * (size_t)n);
    uint16_t *port = malloc(sizeof *port * (size_t)n);
    uint8_t *tos = malloc((size_t)n), *dst = malloc(4 * (size_t)n), *src = malloc(4 * (size_t)n);
    for (int i = 0; i < n; i++) {
        len[i] = (uint32_t)(big ? rnd_below(65508) : rnd_below(3000));
        off[i] = (uint32_t)total;
        total += len[i];
        port[i] = rxport;
        tos[i] = (uint8_t)(rnd() & 0xFC); /* DSCP only: the kernel may touch ECN on loopback */
        uint32_t lo = htonl(INADDR_LOOPBACK);
        memcpy(dst + 4 * i, &lo, 4);
        memcpy(src + 4 * i, &lo, 4);
    }
    uint8_t *data = rand_buf(total);
    int sent = 0;
    while (sent < n) {
        int k = n - sent > UET_MMSG_MAX ? UET_MMSG_MAX : n - sent;
        /* the arrays from ``sent`` on, exactly sized copies so that ASan sees any overrun */
        uint32_t *o = malloc(sizeof *o * (size_t)k), *l = malloc(sizeof *l * (size_t)k);
        uint16_t *p = malloc(sizeof *p * (size_t)k);
        uint8_t *t = malloc((size_t)k), *d = malloc(4 * (size_t)k), *s = malloc(4 * (size_t)k);
        memcpy(o, off + sent, sizeof *o * (size_t)k);
        memcpy(l, len + sent, sizeof *l * (size_t)k);
        memcpy(p, port + sent, sizeof *p * (size_t)k);
        memcpy(t, tos + sent, (size_t)k);
        memcpy(d, dst + 4 * sent, 4 * (size_t)k);
        memcpy(s, src + 4 * sent, 4 * (size_t)k);
        int r = uet_sendmmsg4(tx, (const char *)data, o, l, d, p, t, 0, (sent & 1) ? s : NULL, k);
        free(o); free(l); free(p); free(t); free(d); free(s);
        CHECK(r > 0);
        if (r <= 0)
            break;
        sent += r;
    }
    int got = 0, tries = 0;
    while (got < sent && tries < 1000) {
        int k = sent - got > UET_MMSG_MAX ? UET_MMSG_MAX : sent - got;
        char *buf = malloc((size_t)k * (size_t)slot + 1);
        uet_rx4 *recs = malloc(sizeof *recs * (size_t)k);
        int r = uet_recvmmsg4(rx, buf, slot, k, recs);
        if (r == -EAGAIN) {
            tries++;
            usleep(1000);
        }
        for (int i = 0; i < r; i++) {
            int j = got + i;
            uint32_t want = len[j] < (uint32_t)slot ? len[j] : (uint32_t)slot;
            CHECK(recs[i].len == (int32_t)want);
            CHECK(((recs[i].flags & MSG_TRUNC) != 0) == (len[j] > (uint32_t)slot));
            CHECK(memcmp(buf + (size_t)i * (size_t)slot, data + off[j], want) == 0);
            CHECK(recs[i].sport == txport);
            CHECK(recs[i].tos == tos[j]);
            CHECK(recs[i].has_dst == 1 && recs[i].dst[0] == 127);
            CHECK(recs[i].src[0] == 127);
        }
        free(buf);
        free(recs);
        if (r > 0)
            got += r;
    }
    CHECK(got == sent);
    free(off); free(len); free(port); free(tos); free(dst); free(src); free(data);
}

static void test_mmsg(void)
{
    uint16_t txport, rxport;
    int tx = udp4(&txport), rx = udp4(&rxport);
    CHECK(tx >= 0 && rx >= 0);
    if (tx < 0 || rx < 0)
        return;
    CHECK(uet_mmsg_available() == 1);
    uet_rx4 rec;
    char one;
    CHECK(uet_recvmmsg4(rx, &one, 1, 1, &rec) == -EAGAIN); /* nothing there */
    CHECK(uet_recvmmsg4(rx, &one, 1, 0, &rec) == -EINVAL);
    CHECK(uet_recvmmsg4(-1, &one, 1, 1, &rec) == -EBADF);
    for (int round = 0; round < 30; round++) {
        int32_t slot = 1 + (int32_t)rnd_below(round % 3 == 0 ? 65536 : 3000);
        test_mmsg_round(tx, rx, txport, rxport, slot, 1 + (int)rnd_below(150), round % 3 == 0);
    }
    /* a datagram too long for UDP: the error of the first, after the ones before it went */
    uint32_t off[3] = {0, 0, 0}, len[3] = {10, 70000, 10};
    uint16_t port[3] = {rxport, rxport, rxport};
    uint8_t tos[3] = {0, 0, 0}, dst[12];
    for (int i = 0; i < 3; i++) {
        uint32_t lo = htonl(INADDR_LOOPBACK);
        memcpy(dst + 4 * i, &lo, 4);
    }
    char *data = calloc(1, 70000);
    CHECK(uet_sendmmsg4(tx, data, off, len, dst, port, tos, 0, NULL, 3) == 1);
    CHECK(uet_sendmmsg4(tx, data, off + 1, len + 1, dst + 4, port + 1, tos + 1, 0, NULL, 2) ==
          -EMSGSIZE);
    free(data);
    close(tx);
    close(rx);
}

int main(void)
{
    test_crc();
    test_icrc();
    test_reasm();
    test_psn();
    test_cmsg_parse();
    test_mmsg();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
