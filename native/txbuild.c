/* Request datagrams of an established initiator PDC, one call per run of packets (issue 15 item 1).
 *
 * uet/pds/initiator.py Initiator._send_new decides the new requests of an established PDC; built
 * one at a time in Python (txbuild.py build_requests_py, as Initiator._request packs and seals
 * them) each datagram would be: the request header
 * (docs/facts.md B.5) packed from the PDC's constant fields and the per-packet ones, the SES header
 * (D.3) packed from the message's constants, a join with the payload, and the CRC-32C trailer
 * (A.3, big-endian) chained from the UDP context's seed.  Here a run of packets of one message
 * (consecutive packet indices and PSNs) is written back to back into the caller's buffer.
 *
 * No field position is written here: the caller passes where each field sits (from the schema, as
 * uet/pds/packets.py RequestHeader.SHIFTS and a uet/pds/upper.py RequestTemplate give them, the
 * latter made by uet/ses/packets.py Message.template) and fields are ORed
 * into the big-endian headers bit by bit position, as the Python integers are.  A field that would
 * land outside its header is an error (Python's to_bytes raises there), never a write outside it.
 *
 * Every call checks the whole run first (lengths, ranges, the output capacity) and writes nothing
 * when something is wrong, so a bad argument never becomes a partial or out-of-bounds write.
 *
 * Twin (the reference, the per-packet Python path): uet/native/txbuild.py build_requests_py;
 * tests/native/test_txbuild.py compares them, native/test_txbuild_driver.c runs this file under
 * AddressSanitizer and UBSan.
 */
#include <string.h>
#include "uet_native.h"
#include "txbuild.h"

/* Header lengths beyond this are not SES headers (D.3 is 44 bytes, D.5 and D.6 extensions a few
 * dozen); the bound keeps every size sum far from int64 overflow. */
#define MAX_HEADER 65535
/* A.3: the UDP length in the trailer context counts the 8-byte UDP header. */
#define UDP_HEADER_LEN 8
/* Field values above this could lose bits when shifted by up to 7 inside a 64-bit word. */
#define MAX_FIELD ((uint64_t)1 << 56)

static int bit_length(uint64_t v)
{
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

/* Whether v << shift fits in a size-byte header (a zero value always does, as in Python). */
static int fits(uint64_t v, int64_t shift, int64_t size)
{
    if (shift < 0)
        return 0;
    if (v == 0)
        return 1;
    return v < MAX_FIELD && shift + bit_length(v) <= 8 * size;
}

/* hdr (size bytes, big-endian) |= v << shift; the caller checked fits(v, shift, size). */
static void or_field(unsigned char *hdr, int64_t size, uint64_t v, int64_t shift)
{
    if (v == 0)
        return; /* a zero may sit at any shift (fits): nothing to index */
    int64_t byte = shift / 8;
    uint64_t w = v << (shift % 8);
    while (w) {
        hdr[size - 1 - byte] |= (unsigned char)w;
        w >>= 8;
        byte++;
    }
}

static int pds_layout_ok(const int32_t *pds_shift, uint32_t next_hdr)
{
    if (pds_shift == NULL)
        return 0;
    /* the widest values each field takes: a PSN, a 16-bit offset, the AR bit, next_hdr */
    return fits(0xFFFFFFFFu, pds_shift[UET_TXBUILD_SHIFT_PSN], UET_TXBUILD_REQUEST_SIZE)
        && fits(0xFFFFu, pds_shift[UET_TXBUILD_SHIFT_CLEAR], UET_TXBUILD_REQUEST_SIZE)
        && fits(1, pds_shift[UET_TXBUILD_SHIFT_AR], UET_TXBUILD_REQUEST_SIZE)
        && fits(next_hdr, pds_shift[UET_TXBUILD_SHIFT_NEXT_HDR], UET_TXBUILD_REQUEST_SIZE);
}

/* The request header of one packet (B.5): I3's CLEAR_PSN offset is signed and clamped to 16 bits
 * (what RequestHeader.pack does with clear_psn - psn read as a signed 32-bit value); RETX is 0. */
static void put_request_header(unsigned char *dst, const char *pds, const int32_t *pds_shift,
                               uint32_t next_hdr, uint32_t psn, uint32_t clear_psn, int ar)
{
    uint32_t d = clear_psn - psn;
    int64_t offset = d >= 0x80000000u ? (int64_t)d - 0x100000000LL : (int64_t)d;
    if (offset < -32768)
        offset = -32768;
    else if (offset > 32767)
        offset = 32767;
    memcpy(dst, pds, UET_TXBUILD_REQUEST_SIZE);
    or_field(dst, UET_TXBUILD_REQUEST_SIZE, psn, pds_shift[UET_TXBUILD_SHIFT_PSN]);
    or_field(dst, UET_TXBUILD_REQUEST_SIZE, (uint64_t)offset & 0xFFFFu,
             pds_shift[UET_TXBUILD_SHIFT_CLEAR]);
    or_field(dst, UET_TXBUILD_REQUEST_SIZE, next_hdr, pds_shift[UET_TXBUILD_SHIFT_NEXT_HDR]);
    if (ar)
        or_field(dst, UET_TXBUILD_REQUEST_SIZE, 1, pds_shift[UET_TXBUILD_SHIFT_AR]);
}

/* The A.3 trailer over the UET bytes [start, end), chained from the UDP context's seed. */
static void put_trailer(unsigned char *start, unsigned char *end, uint32_t seed)
{
    uint32_t crc = uet_crc32c(seed, start, (size_t)(end - start));
    end[0] = (unsigned char)(crc >> 24);
    end[1] = (unsigned char)(crc >> 16);
    end[2] = (unsigned char)(crc >> 8);
    end[3] = (unsigned char)crc;
}

int64_t uet_txbuild_message(char *out, int64_t out_cap, const char *pds, const int32_t *pds_shift,
                            uint32_t next_hdr, uint32_t psn0, uint32_t clear_psn, const char *ar,
                            const uint32_t *seeds, int32_t count, const uet_txbuild_message_t *msg,
                            const char *ses, const char *data, int64_t k0)
{
    if (count < 0 || out_cap < 0)
        return UET_TXBUILD_BAD_ARG;
    if (count == 0)
        return 0;
    if (out == NULL || pds == NULL || ar == NULL || seeds == NULL || msg == NULL || ses == NULL
        || !pds_layout_ok(pds_shift, next_hdr))
        return UET_TXBUILD_BAD_ARG;
    const int64_t som_len = msg->som_len, mid_len = msg->mid_len, ext_len = msg->ext_len;
    const int64_t len_shift = msg->len_shift, off_shift = msg->off_shift;
    const int64_t eom_shift = msg->eom_shift, data_len = msg->data_len, mtu = msg->mtu;
    if (som_len < 0 || som_len > MAX_HEADER || mid_len < 0 || mid_len > MAX_HEADER || ext_len < 0
        || ext_len > MAX_HEADER || som_len + mid_len + ext_len > msg->ses_len || data_len < 0
        || (uint64_t)data_len >= MAX_FIELD || (data == NULL && data_len > 0) || mtu < 1
        || (uint64_t)mtu >= MAX_FIELD || k0 < 0)
        return UET_TXBUILD_BAD_ARG;
    /* packets in the message: at least one, as Message.count */
    int64_t packets = data_len == 0 ? 1 : data_len / mtu + (data_len % mtu != 0);
    if (k0 > packets || count > packets - k0)
        return UET_TXBUILD_BAD_ARG;

    /* first pass: every field fits its header and the whole run fits the output */
    int64_t total = 0;
    for (int64_t k = k0; k < k0 + count; k++) {
        int64_t offset = k * mtu;
        int64_t n = data_len - offset < mtu ? data_len - offset : mtu;
        int64_t header = ext_len + (k == 0 ? som_len : mid_len);
        if (k > 0 && !(fits((uint64_t)n, len_shift, mid_len)
                       && fits((uint64_t)offset, off_shift, mid_len)
                       && (k + 1 != packets || fits(1, eom_shift, mid_len))))
            return UET_TXBUILD_BAD_ARG;
        total += UET_TXBUILD_REQUEST_SIZE + header + n + UET_TXBUILD_TRAILER_LEN;
    }
    if (total > out_cap)
        return UET_TXBUILD_NO_ROOM;

    const char *som = ses, *mid = ses + som_len, *ext = mid + mid_len;
    unsigned char *p = (unsigned char *)out;
    for (int32_t i = 0; i < count; i++) {
        int64_t k = k0 + i;
        int64_t offset = k * mtu;
        int64_t n = data_len - offset < mtu ? data_len - offset : mtu;
        unsigned char *start = p;
        put_request_header(p, pds, pds_shift, next_hdr, psn0 + (uint32_t)i, clear_psn, ar[i] != 0);
        p += UET_TXBUILD_REQUEST_SIZE;
        if (k == 0) {
            memcpy(p, som, (size_t)som_len);
            p += som_len;
        } else {
            memcpy(p, mid, (size_t)mid_len);
            or_field(p, mid_len, (uint64_t)n, len_shift);
            or_field(p, mid_len, (uint64_t)offset, off_shift);
            if (k + 1 == packets)
                or_field(p, mid_len, 1, eom_shift);
            p += mid_len;
        }
        memcpy(p, ext, (size_t)ext_len);
        p += ext_len;
        if (n > 0)
            memcpy(p, data + offset, (size_t)n);
        p += n;
        put_trailer(start, p, seeds[i]);
        p += UET_TXBUILD_TRAILER_LEN;
    }
    return total;
}

int64_t uet_txbuild(char *out, int64_t out_cap, const char *pds, const int32_t *pds_shift,
                    uint32_t next_hdr, uint32_t psn0, uint32_t clear_psn, const char *ar,
                    const uint32_t *seeds, int32_t count, const char *ses, int64_t ses_len,
                    const int64_t *ses_end, const char *payload, int64_t payload_len,
                    const int64_t *payload_end)
{
    if (count < 0 || out_cap < 0)
        return UET_TXBUILD_BAD_ARG;
    if (count == 0)
        return 0;
    if (out == NULL || pds == NULL || ar == NULL || seeds == NULL || ses_end == NULL
        || payload_end == NULL || ses_len < 0 || payload_len < 0 || (ses == NULL && ses_len > 0)
        || (payload == NULL && payload_len > 0) || !pds_layout_ok(pds_shift, next_hdr))
        return UET_TXBUILD_BAD_ARG;
    /* keeps the total below (ends bounded by these, headers and trailers at most 16 * 2^31) far
     * from int64 overflow */
    if (ses_len > INT64_MAX / 4 || payload_len > INT64_MAX / 4)
        return UET_TXBUILD_BAD_ARG;
    int64_t ses_at = 0, payload_at = 0;
    for (int32_t i = 0; i < count; i++) {
        if (ses_end[i] < ses_at || ses_end[i] > ses_len || payload_end[i] < payload_at
            || payload_end[i] > payload_len)
            return UET_TXBUILD_BAD_ARG;
        ses_at = ses_end[i];
        payload_at = payload_end[i];
    }
    int64_t total = ses_at + payload_at
        + (int64_t)count * (UET_TXBUILD_REQUEST_SIZE + UET_TXBUILD_TRAILER_LEN);
    if (total > out_cap)
        return UET_TXBUILD_NO_ROOM;

    unsigned char *p = (unsigned char *)out;
    ses_at = payload_at = 0;
    for (int32_t i = 0; i < count; i++) {
        unsigned char *start = p;
        put_request_header(p, pds, pds_shift, next_hdr, psn0 + (uint32_t)i, clear_psn, ar[i] != 0);
        p += UET_TXBUILD_REQUEST_SIZE;
        int64_t n = ses_end[i] - ses_at;
        if (n > 0)
            memcpy(p, ses + ses_at, (size_t)n);
        p += n;
        ses_at = ses_end[i];
        n = payload_end[i] - payload_at;
        if (n > 0)
            memcpy(p, payload + payload_at, (size_t)n);
        p += n;
        payload_at = payload_end[i];
        put_trailer(start, p, seeds[i]);
        p += UET_TXBUILD_TRAILER_LEN;
    }
    return total;
}

int32_t uet_txbuild_seeds(uint32_t *seeds, const char *addrs, int32_t alen, const uint16_t *sport,
                          uint16_t dport, const int64_t *sizes, int32_t count)
{
    if (count < 0 || (alen != 4 && alen != 16))
        return UET_TXBUILD_BAD_ARG;
    if (count > 0 && (seeds == NULL || addrs == NULL || sport == NULL || sizes == NULL))
        return UET_TXBUILD_BAD_ARG;
    for (int32_t i = 0; i < count; i++)
        if (sizes[i] < 0 || sizes[i] > 0xFFFF - UDP_HEADER_LEN)
            return UET_TXBUILD_BAD_ARG; /* the UDP length must fit its 16 bits */
    const uint8_t *a = (const uint8_t *)addrs;
    for (int32_t i = 0; i < count; i++)
        seeds[i] = uet_udp_seed(a, a + alen, (uint32_t)alen, sport[i], dport,
                                (uint32_t)(UDP_HEADER_LEN + sizes[i]));
    return 0;
}
