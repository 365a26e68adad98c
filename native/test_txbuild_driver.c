/* Sanitizer driver for native/txbuild.c (tests/native/test_txbuild.py builds it with
 * -fsanitize=address,undefined and expects "ok" on stdout).
 *
 * Every buffer handed to the code under test is a heap block of exactly the length the call is
 * told, so AddressSanitizer reports any read or write past it.  The expected bytes come from an
 * independent builder here that sets fields one bit at a time (the code under test ORs them a
 * byte at a time) and a CRC from the portable path, so the driver checks results too, not only
 * memory safety: random runs (field positions, lengths, PSNs, offsets), outputs of exactly the
 * needed capacity and one byte short (nothing written then), truncated inputs (lengths that do
 * not cover what the run needs) and bad arguments, each of which must be an error code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uet_native.h"
#include "txbuild.h"

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CANARY 0xA5

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t below(int64_t n)
{
    return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0;
}

/* A heap block of exactly n bytes (one when n is 0, never read then). */
static char *block(int64_t n)
{
    char *p = malloc(n > 0 ? (size_t)n : 1);
    CHECK(p != NULL);
    return p;
}

static char *random_block(int64_t n)
{
    char *p = block(n);
    for (int64_t i = 0; i < n; i++)
        p[i] = (char)rnd();
    return p;
}

/* The reference's field setter: bit by bit; 0 when a set bit would fall outside the header. */
static int ref_or(unsigned char *hdr, int64_t size, uint64_t v, int64_t shift)
{
    if (shift < 0)
        return 0;
    for (int b = 0; b < 64; b++) {
        if (!((v >> b) & 1))
            continue;
        int64_t pos = shift + b;
        if (pos >= 8 * size)
            return 0;
        if (hdr != NULL)
            hdr[size - 1 - pos / 8] |= (unsigned char)(1u << (pos % 8));
    }
    return 1;
}

typedef struct {
    char pds[UET_TXBUILD_REQUEST_SIZE];
    int32_t pds_shift[UET_TXBUILD_SHIFTS];
    uint32_t next_hdr, psn0, clear_psn;
    int32_t count;
    char *ar;
    uint32_t *seeds;
} run;

static int ref_layout_ok(const run *r)
{
    /* the widest value of each field, as the code under test checks the layout */
    return ref_or(NULL, UET_TXBUILD_REQUEST_SIZE, 0xFFFFFFFFu, r->pds_shift[UET_TXBUILD_SHIFT_PSN])
        && ref_or(NULL, UET_TXBUILD_REQUEST_SIZE, 0xFFFFu, r->pds_shift[UET_TXBUILD_SHIFT_CLEAR])
        && ref_or(NULL, UET_TXBUILD_REQUEST_SIZE, 1, r->pds_shift[UET_TXBUILD_SHIFT_AR])
        && ref_or(NULL, UET_TXBUILD_REQUEST_SIZE, r->next_hdr,
                  r->pds_shift[UET_TXBUILD_SHIFT_NEXT_HDR]);
}

/* Appends packet i's datagram (its SES header and payload given) at dst; returns its length. */
static int64_t ref_datagram(unsigned char *dst, const run *r, int32_t i, const unsigned char *ses,
                            int64_t ses_len, const unsigned char *payload, int64_t n)
{
    uint32_t psn = r->psn0 + (uint32_t)i;
    int64_t offset = (int64_t)(uint32_t)(r->clear_psn - psn);
    if (offset >= 0x80000000LL)
        offset -= 0x100000000LL;
    offset = offset < -32768 ? -32768 : (offset > 32767 ? 32767 : offset);
    memcpy(dst, r->pds, UET_TXBUILD_REQUEST_SIZE);
    ref_or(dst, UET_TXBUILD_REQUEST_SIZE, psn, r->pds_shift[UET_TXBUILD_SHIFT_PSN]);
    ref_or(dst, UET_TXBUILD_REQUEST_SIZE, (uint64_t)(offset & 0xFFFF),
           r->pds_shift[UET_TXBUILD_SHIFT_CLEAR]);
    ref_or(dst, UET_TXBUILD_REQUEST_SIZE, r->ar[i] ? 1 : 0, r->pds_shift[UET_TXBUILD_SHIFT_AR]);
    ref_or(dst, UET_TXBUILD_REQUEST_SIZE, r->next_hdr, r->pds_shift[UET_TXBUILD_SHIFT_NEXT_HDR]);
    int64_t at = UET_TXBUILD_REQUEST_SIZE;
    if (ses_len > 0)
        memcpy(dst + at, ses, (size_t)ses_len);
    at += ses_len;
    if (n > 0)
        memcpy(dst + at, payload, (size_t)n);
    at += n;
    uint32_t crc = uet_crc32c_sw(r->seeds[i], dst, (size_t)at);
    dst[at] = (unsigned char)(crc >> 24);
    dst[at + 1] = (unsigned char)(crc >> 16);
    dst[at + 2] = (unsigned char)(crc >> 8);
    dst[at + 3] = (unsigned char)crc;
    return at + UET_TXBUILD_TRAILER_LEN;
}

static void random_run(run *r, int32_t count)
{
    for (int i = 0; i < UET_TXBUILD_REQUEST_SIZE; i++)
        r->pds[i] = (char)rnd();
    /* mostly positions that fit, sometimes ones that do not */
    int wide = below(8) == 0;
    r->pds_shift[UET_TXBUILD_SHIFT_PSN] = (int32_t)below(wide ? 100 : 65);
    r->pds_shift[UET_TXBUILD_SHIFT_CLEAR] = (int32_t)below(wide ? 100 : 81);
    r->pds_shift[UET_TXBUILD_SHIFT_AR] = (int32_t)below(wide ? 100 : 96);
    r->pds_shift[UET_TXBUILD_SHIFT_NEXT_HDR] = (int32_t)below(wide ? 100 : 92);
    r->next_hdr = below(8) == 0 ? (uint32_t)rnd() : (uint32_t)below(16);
    /* PSNs near the wrap and CLEAR_PSN offsets beyond the 16-bit range */
    r->psn0 = below(2) ? (uint32_t)(0u - (uint32_t)below(8)) : (uint32_t)rnd();
    r->clear_psn = r->psn0 + (uint32_t)(below(140000) - 70000);
    r->count = count;
    r->ar = random_block(count);
    r->seeds = (uint32_t *)block((int64_t)count * 4);
    for (int32_t i = 0; i < count; i++)
        r->seeds[i] = (uint32_t)rnd();
}

static void free_run(run *r)
{
    free(r->ar);
    free(r->seeds);
}

/* A call with out_cap one byte short must write nothing and say so. */
static void check_short(int64_t total, int64_t (*call)(char *, int64_t, void *), void *ctx)
{
    if (total == 0)
        return;
    char *out = block(total - 1);
    memset(out, CANARY, (size_t)(total - 1));
    CHECK(call(out, total - 1, ctx) == UET_TXBUILD_NO_ROOM);
    for (int64_t j = 0; j < total - 1; j++)
        CHECK((unsigned char)out[j] == CANARY);
    free(out);
}

typedef struct {
    const run *r;
    uet_txbuild_message_t m;
    const char *ses;
    const char *data;
    int64_t k0;
} message_args;

static int64_t call_message(char *out, int64_t cap, void *ctx)
{
    const message_args *a = ctx;
    const run *r = a->r;
    return uet_txbuild_message(out, cap, r->pds, r->pds_shift, r->next_hdr, r->psn0,
                               r->clear_psn, r->ar, r->seeds, r->count, &a->m, a->ses, a->data,
                               a->k0);
}

typedef struct {
    const run *r;
    const char *ses;
    int64_t ses_len;
    const int64_t *ses_end;
    const char *payload;
    int64_t payload_len;
    const int64_t *payload_end;
} generic_args;

static int64_t call_generic(char *out, int64_t cap, void *ctx)
{
    const generic_args *a = ctx;
    const run *r = a->r;
    return uet_txbuild(out, cap, r->pds, r->pds_shift, r->next_hdr, r->psn0, r->clear_psn, r->ar,
                       r->seeds, r->count, a->ses, a->ses_len, a->ses_end, a->payload,
                       a->payload_len, a->payload_end);
}

/* One random message run through both functions, against the reference. */
static void message_case(void)
{
    int64_t mtu = 1 + below(300), data_len = below(8) == 0 ? 0 : below(3000);
    int64_t packets = data_len == 0 ? 1 : (data_len + mtu - 1) / mtu;
    int64_t k0 = below(packets);
    int32_t count = (int32_t)(below(3) == 0 ? packets - k0 : below(packets - k0 + 1));
    message_args a;
    run r;
    random_run(&r, count);
    a.r = &r;
    uet_txbuild_message_t *m = &a.m;
    m->som_len = (int32_t)below(60);
    m->mid_len = (int32_t)below(48);
    m->ext_len = (int32_t)below(30);
    m->ses_len = (int64_t)m->som_len + m->mid_len + m->ext_len;
    char *ses = random_block(m->ses_len);
    a.ses = ses;
    int32_t bits = 8 * m->mid_len + 8;
    m->len_shift = (int32_t)below(bits);
    m->off_shift = (int32_t)below(bits);
    m->eom_shift = (int32_t)below(bits);
    char *data = random_block(data_len);
    a.data = data;
    m->data_len = data_len;
    m->mtu = mtu;
    a.k0 = k0;

    /* the reference: the SES headers packet by packet, or the knowledge that one cannot be */
    int ok = ref_layout_ok(&r);
    int64_t total = 0, ses_total = 0;
    int64_t *ses_end = (int64_t *)block((int64_t)(count ? count : 1) * 8);
    int64_t *payload_end = (int64_t *)block((int64_t)(count ? count : 1) * 8);
    unsigned char *heads = (unsigned char *)block((int64_t)count * (m->ses_len + 1));
    for (int32_t i = 0; i < count; i++) {
        int64_t k = k0 + i, offset = k * mtu;
        int64_t n = data_len - offset < mtu ? data_len - offset : mtu;
        unsigned char *h = heads + ses_total;
        int64_t hl;
        if (k == 0) {
            memcpy(h, ses, (size_t)m->som_len);
            hl = m->som_len;
        } else {
            memcpy(h, ses + m->som_len, (size_t)m->mid_len);
            ok = ok && ref_or(h, m->mid_len, (uint64_t)n, m->len_shift)
                && ref_or(h, m->mid_len, (uint64_t)offset, m->off_shift)
                && (k + 1 != packets || ref_or(h, m->mid_len, 1, m->eom_shift));
            hl = m->mid_len;
        }
        memcpy(h + hl, ses + m->som_len + m->mid_len, (size_t)m->ext_len);
        ses_total += hl + m->ext_len;
        ses_end[i] = ses_total;
        payload_end[i] = offset + n - k0 * mtu;
        total += UET_TXBUILD_REQUEST_SIZE + hl + m->ext_len + n + UET_TXBUILD_TRAILER_LEN;
    }
    if (count == 0)
        ok = 1;
    unsigned char *want = (unsigned char *)block(total);
    if (ok) {
        int64_t at = 0, prev_ses = 0, prev_payload = 0;
        for (int32_t i = 0; i < count; i++) {
            at += ref_datagram(want + at, &r, i, heads + prev_ses, ses_end[i] - prev_ses,
                               (const unsigned char *)data + k0 * mtu + prev_payload,
                               payload_end[i] - prev_payload);
            prev_ses = ses_end[i];
            prev_payload = payload_end[i];
        }
        CHECK(at == total);
    }

    /* exact capacity */
    char *out = block(total);
    int64_t rc = call_message(out, total, &a);
    if (ok) {
        CHECK(rc == total);
        CHECK(total == 0 || memcmp(out, want, (size_t)total) == 0);
        check_short(total, call_message, &a);
    } else {
        CHECK(rc == UET_TXBUILD_BAD_ARG);
    }

    /* the generic form with the reference's SES headers and the run's payload as one block */
    if (ok) {
        int64_t payload_len = count ? payload_end[count - 1] : 0;
        char *payload = block(payload_len);
        if (payload_len > 0)
            memcpy(payload, data + k0 * mtu, (size_t)payload_len);
        char *ses_copy = block(ses_total);
        if (ses_total > 0)
            memcpy(ses_copy, heads, (size_t)ses_total);
        generic_args g = {&r, ses_copy, ses_total, ses_end, payload, payload_len, payload_end};
        memset(out, 0, (size_t)total);
        CHECK(call_generic(out, total, &g) == total);
        CHECK(total == 0 || memcmp(out, want, (size_t)total) == 0);
        check_short(total, call_generic, &g);
        /* truncated inputs: the lengths no longer cover the ends */
        if (ses_total > 0) {
            g.ses_len = ses_total - 1;
            CHECK(call_generic(out, total, &g) == UET_TXBUILD_BAD_ARG);
            g.ses_len = ses_total;
        }
        if (payload_len > 0) {
            g.payload_len = payload_len - 1;
            CHECK(call_generic(out, total, &g) == UET_TXBUILD_BAD_ARG);
        }
        free(payload);
        free(ses_copy);
    }

    /* truncated inputs of the message form: a template or data shorter than claimed */
    if (ok && count > 0) {
        message_args t = a;
        t.m.ses_len = m->ses_len - 1;
        if (t.m.ses_len >= 0)
            CHECK(call_message(out, total, &t) == UET_TXBUILD_BAD_ARG);
        t = a;
        /* fewer bytes of data: the run may now end past the message's last packet */
        t.m.data_len = below(data_len + 1);
        int64_t fewer = t.m.data_len == 0 ? 1 : (t.m.data_len + mtu - 1) / mtu;
        rc = call_message(out, total, &t);
        if (k0 + count > fewer)
            CHECK(rc == UET_TXBUILD_BAD_ARG);
        else
            CHECK(rc <= total);  /* a shorter run: written inside the same capacity, or an error */
    }
    free(out);
    free(want);
    free(heads);
    free(ses_end);
    free(payload_end);
    free(ses);
    free(data);
    free_run(&r);
}

static void bad_arguments(void)
{
    run r;
    random_run(&r, 3);
    r.pds_shift[UET_TXBUILD_SHIFT_PSN] = 32;
    r.pds_shift[UET_TXBUILD_SHIFT_CLEAR] = 64;
    r.pds_shift[UET_TXBUILD_SHIFT_AR] = 83;
    r.pds_shift[UET_TXBUILD_SHIFT_NEXT_HDR] = 87;
    r.next_hdr = 3;
    char *ses = random_block(30), *data = random_block(100), *out = block(1000);
    message_args a = {&r, {30, 10, 12, 8, 0, 20, 90, 100, 40}, ses, data, 0};
    CHECK(call_message(out, 1000, &a) > 0);
    message_args t = a;
    t.m.mtu = 0;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.k0 = 1;  /* 3 packets from packet 1 of 3 */
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.k0 = -1;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.m.data_len = -1;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.m.som_len = -1;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.ses = NULL;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.data = NULL;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.m.ses_len = 29;  /* the template shorter than its three parts */
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    CHECK(uet_txbuild_message(out, 1000, r.pds, r.pds_shift, r.next_hdr, r.psn0, r.clear_psn, r.ar,
                              r.seeds, r.count, NULL, ses, data, 0) == UET_TXBUILD_BAD_ARG);
    t = a;
    t.m.len_shift = -1;
    CHECK(call_message(out, 1000, &t) == UET_TXBUILD_BAD_ARG);
    CHECK(call_message(out, -1, &a) == UET_TXBUILD_BAD_ARG);
    CHECK(call_message(NULL, 1000, &a) == UET_TXBUILD_BAD_ARG);
    r.count = -1;
    CHECK(call_message(out, 1000, &a) == UET_TXBUILD_BAD_ARG);
    r.count = 0;
    CHECK(call_message(NULL, 0, &a) == 0);
    r.count = 3;
    r.next_hdr = 1u << 10;  /* past the 96 bits of the request header */
    CHECK(call_message(out, 1000, &a) == UET_TXBUILD_BAD_ARG);
    r.next_hdr = 3;
    r.pds_shift[UET_TXBUILD_SHIFT_PSN] = 65;
    CHECK(call_message(out, 1000, &a) == UET_TXBUILD_BAD_ARG);
    r.pds_shift[UET_TXBUILD_SHIFT_PSN] = 32;

    int64_t ses_end[3] = {10, 20, 30}, payload_end[3] = {40, 80, 100};
    generic_args g = {&r, ses, 30, ses_end, data, 100, payload_end};
    CHECK(call_generic(out, 1000, &g) == 30 + 100 + 3 * 16);
    ses_end[1] = 5;  /* decreasing */
    CHECK(call_generic(out, 1000, &g) == UET_TXBUILD_BAD_ARG);
    ses_end[1] = 20;
    payload_end[2] = 101;  /* past the payload */
    CHECK(call_generic(out, 1000, &g) == UET_TXBUILD_BAD_ARG);
    payload_end[2] = 100;
    g.ses_end = NULL;
    CHECK(call_generic(out, 1000, &g) == UET_TXBUILD_BAD_ARG);
    g.ses_end = ses_end;
    g.payload = NULL;
    CHECK(call_generic(out, 1000, &g) == UET_TXBUILD_BAD_ARG);
    g.payload = data;
    g.payload_len = -5;
    CHECK(call_generic(out, 1000, &g) == UET_TXBUILD_BAD_ARG);
    free(ses);
    free(data);
    free(out);
    free_run(&r);
}

int main(void)
{
    for (int i = 0; i < 3000; i++)
        message_case();
    bad_arguments();
    puts("ok");
    return 0;
}
