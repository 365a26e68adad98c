/* Receive hot path: message reassembly and the PSN receive window.
 *
 * Reassembly keeps one bit per message byte (bit set = byte arrived), so it
 * is exact for any offsets and lengths; the cost is length/8 bytes of
 * bitmap.  A placement walks the bitmap a 64-bit word (64 bytes) at a time,
 * copies only the runs of bytes that had not arrived and counts them with
 * popcount.  Every range is checked against the message length before any
 * memory is touched.
 *
 * The PSN window is a ring bitmap (power-of-two number of bits >= size, so
 * that PSN mod ring is consistent across the 2^32 wrap) holding the PSNs in
 * (cack, cack + size]; bits are cleared as cack passes them.
 *
 * Twins: uet/native/_twin.py Reassembly, PsnWindow, psn_diff, psn_lt.
 */
#include <stdlib.h>
#include <string.h>
#include "uet_native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#define UET_HAVE_NT 1
#endif

/* Messages at least this long do not fit in cache anyway: copy into them
 * with non-temporal stores (no read-for-ownership of the destination),
 * which halves the memory traffic of a placement. */
#define NT_MIN_MESSAGE ((int64_t)8 << 20)
#define NT_MIN_RUN 256

struct uet_reasm {
    uint8_t *buf;
    int64_t length;
    int64_t received;
    uint64_t *bits;
    size_t nwords;
    int nt;
};

static void copy_run(const uet_reasm *r, uint64_t dst_off, const uint8_t *src, size_t n)
{
    uint8_t *d = r->buf + dst_off;
#ifdef UET_HAVE_NT
    if (r->nt && n >= NT_MIN_RUN) {
        size_t head = (64 - ((uintptr_t)d & 63)) & 63;
        memcpy(d, src, head);
        d += head;
        src += head;
        n -= head;
        size_t bulk = n & ~(size_t)63;
        for (size_t i = 0; i < bulk; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48));
            _mm_stream_si128((__m128i *)(void *)(d + i), a);
            _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
            _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
            _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
        }
        d += bulk;
        src += bulk;
        n -= bulk;
    }
#endif
    memcpy(d, src, n);
}

/* Make non-temporal stores globally visible before returning. */
static inline void copy_done(const uet_reasm *r)
{
#ifdef UET_HAVE_NT
    if (r->nt)
        _mm_sfence();
#else
    (void)r;
#endif
}

uet_reasm *uet_reasm_new(void *buf, int64_t length)
{
    if (length < 0 || (uint64_t)length > (UINT64_MAX >> 4))
        return NULL;
    uet_reasm *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->nwords = (size_t)((length + 63) / 64);
    r->bits = calloc(r->nwords ? r->nwords : 1, sizeof(uint64_t));
    if (!r->bits) {
        free(r);
        return NULL;
    }
    /* Pre-touch the bitmap (one write per page) so that page faults happen
     * here rather than on the per-packet path. */
    for (size_t i = 0; i < r->nwords; i += 4096 / sizeof(uint64_t))
        ((volatile uint64_t *)r->bits)[i] = 0;
    r->buf = buf;
    r->length = length;
    r->nt = length >= NT_MIN_MESSAGE;
    return r;
}

void uet_reasm_free(uet_reasm *r)
{
    if (r) {
        free(r->bits);
        free(r);
    }
}

int64_t uet_reasm_received(const uet_reasm *r) { return r->received; }
int64_t uet_reasm_length(const uet_reasm *r) { return r->length; }

static inline int range_ok(const uet_reasm *r, int64_t offset, int64_t len)
{
    return offset >= 0 && len >= 0 && offset <= r->length && len <= r->length - offset;
}

/* Mask of bits [lo, hi) within one word, 0 <= lo < hi <= 64. */
static inline uint64_t bits_mask(unsigned lo, unsigned hi)
{
    uint64_t m = hi >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << hi) - 1);
    return m & (~(uint64_t)0 << lo);
}

int64_t uet_reasm_place(uet_reasm *r, int64_t offset, const void *vdata, int64_t len)
{
    const uint8_t *data = vdata;
    if (!range_ok(r, offset, len))
        return -1;
    if (len == 0 || r->received == r->length)
        return 0;
    const uint64_t lo = (uint64_t)offset, hi = lo + (uint64_t)len;
    uint64_t *bits = r->bits;
    int64_t added = 0;

    /* Fast paths: nothing of the range has arrived yet (the common case), or
     * all of it has (a duplicate). */
    {
        size_t w0 = (size_t)(lo >> 6), w1 = (size_t)((hi - 1) >> 6);
        uint64_t m0 = ~(uint64_t)0 << (lo & 63);
        uint64_t m1 = (hi & 63) ? (((uint64_t)1 << (hi & 63)) - 1) : ~(uint64_t)0;
        if (w0 == w1) {
            m0 &= m1;
            uint64_t have = bits[w0] & m0;
            if (have == 0) {
                bits[w0] |= m0;
                copy_run(r, lo, data, (size_t)len);
                copy_done(r);
                r->received += len;
                return len;
            }
            if (have == m0)
                return 0;
        } else {
            uint64_t any = (bits[w0] & m0) | (bits[w1] & m1);
            uint64_t all = (bits[w0] | ~m0) & (bits[w1] | ~m1);
            for (size_t i = w0 + 1; i < w1; i++) {
                any |= bits[i];
                all &= bits[i];
            }
            if (any == 0) {
                bits[w0] |= m0;
                for (size_t i = w0 + 1; i < w1; i++)
                    bits[i] = ~(uint64_t)0;
                bits[w1] |= m1;
                copy_run(r, lo, data, (size_t)len);
                copy_done(r);
                r->received += len;
                return len;
            }
            if (all == ~(uint64_t)0)
                return 0;
        }
    }

    uint64_t run = UINT64_MAX; /* start of the current run of new bytes */
    uint64_t pos = lo;

    while (pos < hi) {
        size_t wi = (size_t)(pos >> 6);
        unsigned b0 = (unsigned)(pos & 63);
        uint64_t wend = ((uint64_t)wi + 1) << 6;
        uint64_t seg_hi = wend < hi ? wend : hi;
        unsigned b1 = (unsigned)(seg_hi - ((uint64_t)wi << 6));
        uint64_t m = bits_mask(b0, b1);
        uint64_t have = bits[wi] & m;
        if (have == 0) {
            if (run == UINT64_MAX)
                run = pos;
        } else if (have == m) {
            if (run != UINT64_MAX) {
                copy_run(r, run, data + (run - lo), (size_t)(pos - run));
                run = UINT64_MAX;
            }
        } else {
            uint64_t base = (uint64_t)wi << 6;
            for (unsigned b = b0; b < b1; b++) {
                if (bits[wi] >> b & 1) {
                    if (run != UINT64_MAX) {
                        copy_run(r, run, data + (run - lo), (size_t)(base + b - run));
                        run = UINT64_MAX;
                    }
                } else if (run == UINT64_MAX) {
                    run = base + b;
                }
            }
        }
        added += __builtin_popcountll(m & ~have);
        bits[wi] |= m;
        pos = seg_hi;
    }
    if (run != UINT64_MAX)
        copy_run(r, run, data + (run - lo), (size_t)(hi - run));
    copy_done(r);
    r->received += added;
    return added;
}

int uet_reasm_has(const uet_reasm *r, int64_t offset, int64_t len)
{
    if (!range_ok(r, offset, len))
        return -1;
    if (r->received == r->length)
        return 1;
    uint64_t pos = (uint64_t)offset, hi = pos + (uint64_t)len;
    while (pos < hi) {
        size_t wi = (size_t)(pos >> 6);
        uint64_t wend = ((uint64_t)wi + 1) << 6;
        uint64_t seg_hi = wend < hi ? wend : hi;
        uint64_t m = bits_mask((unsigned)(pos & 63), (unsigned)(seg_hi - ((uint64_t)wi << 6)));
        if ((r->bits[wi] & m) != m)
            return 0;
        pos = seg_hi;
    }
    return 1;
}

int64_t uet_reasm_missing(const uet_reasm *r, int64_t *out, int64_t max_holes)
{
    int64_t n = 0;
    uint64_t len = (uint64_t)r->length;
    uint64_t pos = 0;
    if (r->received == r->length)
        return 0;
    while (pos < len) {
        /* find the next missing byte at or after pos */
        size_t wi = (size_t)(pos >> 6);
        uint64_t w = ~r->bits[wi] & (~(uint64_t)0 << (pos & 63));
        while (w == 0 && ++wi < r->nwords)
            w = ~r->bits[wi];
        if (w == 0)
            break;
        uint64_t start = ((uint64_t)wi << 6) + (unsigned)__builtin_ctzll(w);
        if (start >= len)
            break;
        /* find the next received byte after start */
        wi = (size_t)(start >> 6);
        w = r->bits[wi] & (~(uint64_t)0 << (start & 63));
        while (w == 0 && ++wi < r->nwords)
            w = r->bits[wi];
        uint64_t end = w ? ((uint64_t)wi << 6) + (unsigned)__builtin_ctzll(w) : len;
        if (end > len)
            end = len;
        if (n < max_holes && out) {
            out[2 * n] = (int64_t)start;
            out[2 * n + 1] = (int64_t)(end - start);
        }
        n++;
        pos = end;
    }
    return n;
}

/* ------------------------------------------------------------------ */

struct uet_psnwin {
    uint32_t cack;
    uint32_t highest;
    uint32_t size;
    uint32_t mask; /* ring bits - 1 */
    uint64_t *bits;
};

int32_t uet_psn_diff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }
int uet_psn_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

uet_psnwin *uet_psnwin_new(uint32_t start_psn, uint32_t size)
{
    if (size < 1 || size > UET_PSN_MAX_WINDOW)
        return NULL;
    uint32_t ring = 64;
    while (ring < size)
        ring <<= 1;
    uet_psnwin *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->bits = calloc(ring / 64, sizeof(uint64_t));
    if (!w->bits) {
        free(w);
        return NULL;
    }
    w->cack = start_psn - 1u;
    w->highest = w->cack;
    w->size = size;
    w->mask = ring - 1;
    return w;
}

void uet_psnwin_free(uet_psnwin *w)
{
    if (w) {
        free(w->bits);
        free(w);
    }
}

uint32_t uet_psnwin_cack(const uet_psnwin *w) { return w->cack; }
uint32_t uet_psnwin_highest(const uet_psnwin *w) { return w->highest; }

static inline int ring_get(const uet_psnwin *w, uint32_t psn)
{
    uint32_t i = psn & w->mask;
    return (int)(w->bits[i >> 6] >> (i & 63) & 1);
}

int uet_psnwin_set(uet_psnwin *w, uint32_t psn)
{
    int32_t d = (int32_t)(psn - w->cack);
    if (d <= 0)
        return UET_PSN_DUPLICATE;
    if ((uint32_t)d > w->size)
        return UET_PSN_OUT_OF_WINDOW;
    uint32_t i = psn & w->mask;
    uint64_t bit = (uint64_t)1 << (i & 63);
    if (w->bits[i >> 6] & bit)
        return UET_PSN_DUPLICATE;
    w->bits[i >> 6] |= bit;
    if ((int32_t)(psn - w->highest) > 0)
        w->highest = psn;
    /* advance cack over the run of set bits after it, a word at a time */
    for (;;) {
        uint32_t j = (w->cack + 1u) & w->mask;
        unsigned sh = j & 63;
        uint64_t word = w->bits[j >> 6] >> sh;
        unsigned avail = 64 - sh;
        unsigned run = ~word ? (unsigned)__builtin_ctzll(~word) : 64;
        if (run > avail)
            run = avail;
        if (run == 0)
            break;
        uint64_t clr = run >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << run) - 1);
        w->bits[j >> 6] &= ~(clr << sh);
        w->cack += run;
        if (run < avail)
            break;
    }
    return UET_PSN_NEW;
}

int uet_psnwin_test(const uet_psnwin *w, uint32_t psn)
{
    int32_t d = (int32_t)(psn - w->cack);
    if (d <= 0)
        return 1;
    if ((uint32_t)d > w->size)
        return 0;
    return ring_get(w, psn);
}

uint64_t uet_psnwin_sack(const uet_psnwin *w, uint32_t base_psn)
{
    uint64_t out = 0;
    for (unsigned i = 0; i < 64; i++)
        if (uet_psnwin_test(w, base_psn + i))
            out |= (uint64_t)1 << i;
    return out;
}
