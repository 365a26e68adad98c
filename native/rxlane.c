/* uet receive lane: see rxlane.h.  The readable reference of every step is the Python named
 * beside it (uet/pds/endpoint.py _receive, uet/pds/target.py on_request, record and acknowledge,
 * uet/ses/target.py for the SES packet); the differential tests in tests/native/test_rxlane.py
 * and tests/pds/test_fastpath.py hold them equal. */
#include <stdlib.h>
#include <string.h>

#include "rxlane.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/socket.h>
#endif
#ifndef MSG_TRUNC
#define MSG_TRUNC 0x20
#endif

#define PDC_BUCKETS 256u
#define MSG_BUCKETS 1024u
#define TRAILER_LEN 4u      /* A.3 */
#define UDP_HEADER_LEN 8u

struct uet_rx_ep {
    uet_rx_layout L;
    uet_rx_pdc *pdcs[PDC_BUCKETS];
    uet_rx_msg *msgs[MSG_BUCKETS];
    int64_t retx_rx, requests, duplicate_packets, taken, acks_tx;
};

/* A field of at most 32 bits at bit ``f.pos`` of ``p`` (big-endian, most significant bit first);
 * the caller has checked that the header is long enough. */
static int64_t field(const uint8_t *p, uet_field f)
{
    uint32_t first = f.pos >> 3, last = (uint32_t)(f.pos + f.width - 1) >> 3;
    uint64_t v = 0;
    for (uint32_t i = first; i <= last; i++)
        v = (v << 8) | p[i];
    uint32_t drop = (last + 1) * 8 - (f.pos + f.width);
    v = (v >> drop) & ((f.width == 64 ? 0 : (1ull << f.width)) - 1);
    if (f.is_signed && (v >> (f.width - 1)))
        return (int64_t)v - (int64_t)(1ull << f.width);
    return (int64_t)v;
}

/* Writes the low ``f.width`` bits of v (up to 64) at bit ``f.pos`` of p, most significant first. */
static void put_field(uint8_t *p, uet_field f, uint64_t v)
{
    for (int i = 0; i < f.width; i++) {
        uint32_t bit = (uint32_t)f.pos + f.width - 1 - (uint32_t)i;
        uint8_t mask = (uint8_t)(0x80u >> (bit & 7));
        if ((v >> i) & 1)
            p[bit >> 3] |= mask;
        else
            p[bit >> 3] &= (uint8_t)~mask;
    }
}

/* AckEncoder.pack's clamp of an offset to the signed 16-bit field (B.7) */
static uint64_t offset16(int32_t d)
{
    if (d < -32768)
        d = -32768;
    if (d > 32767)
        d = 32767;
    return (uint64_t)(uint16_t)(int16_t)d;
}

static uint32_t pdc_hash(uint16_t pdcid) { return pdcid & (PDC_BUCKETS - 1); }

static uint32_t msg_hash(const uint8_t *peer, uint32_t peer_len, uint32_t initiator,
                         uint16_t mid)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < peer_len; i++)
        h = (h ^ peer[i]) * 16777619u;
    h = (h ^ initiator) * 16777619u;
    h = (h ^ mid) * 16777619u;
    return h & (MSG_BUCKETS - 1);
}

uet_rx_ep *uet_rx_ep_new(const uet_rx_layout *layout)
{
    uet_rx_ep *ep = calloc(1, sizeof *ep);
    if (ep)
        ep->L = *layout;
    return ep;
}

void uet_rx_ep_free(uet_rx_ep *ep)
{
    if (!ep)
        return;
    for (uint32_t b = 0; b < PDC_BUCKETS; b++)
        for (uet_rx_pdc *p = ep->pdcs[b], *nx; p; p = nx) {
            nx = p->next;
            free(p);
        }
    for (uint32_t b = 0; b < MSG_BUCKETS; b++)
        for (uet_rx_msg *m = ep->msgs[b], *nx; m; m = nx) {
            nx = m->next;
            free(m);
        }
    free(ep);
}

void uet_rx_ep_counters(uet_rx_ep *ep, int64_t *out)
{
    out[0] = ep->retx_rx;
    out[1] = ep->requests;
    out[2] = ep->duplicate_packets;
    out[3] = ep->taken;
    out[4] = ep->acks_tx;
    ep->retx_rx = ep->requests = ep->duplicate_packets = ep->taken = ep->acks_tx = 0;
}

uet_rx_pdc *uet_rx_pdc_add(uet_rx_ep *ep, uint16_t pdcid)
{
    uet_rx_pdc *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pdcid = pdcid;
    uint32_t b = pdc_hash(pdcid);
    p->next = ep->pdcs[b];
    ep->pdcs[b] = p;
    return p;
}

void uet_rx_pdc_remove(uet_rx_ep *ep, uet_rx_pdc *pdc)
{
    for (uet_rx_pdc **pp = &ep->pdcs[pdc_hash(pdc->pdcid)]; *pp; pp = &(*pp)->next)
        if (*pp == pdc) {
            *pp = pdc->next;
            free(pdc);
            return;
        }
}

uet_rx_msg *uet_rx_msg_add(uet_rx_ep *ep, const char *peer_bytes, uint32_t peer_len,
                           uint32_t initiator, uint16_t message_id)
{
    const uint8_t *peer = (const uint8_t *)peer_bytes;
    if (peer_len != 4 && peer_len != 16)
        return NULL;
    uet_rx_msg *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    memcpy(m->peer, peer, peer_len);
    m->peer_len = (uint8_t)peer_len;
    m->initiator = initiator;
    m->message_id = message_id;
    uint32_t b = msg_hash(peer, peer_len, initiator, message_id);
    m->next = ep->msgs[b];
    ep->msgs[b] = m;
    return m;
}

void uet_rx_msg_remove(uet_rx_ep *ep, uet_rx_msg *msg)
{
    for (uet_rx_msg **pp = &ep->msgs[msg_hash(msg->peer, msg->peer_len, msg->initiator,
                                              msg->message_id)]; *pp;
         pp = &(*pp)->next)
        if (*pp == msg) {
            *pp = msg->next;
            free(msg);
            return;
        }
}

static uet_rx_pdc *find_pdc(const uet_rx_ep *ep, uint16_t pdcid)
{
    for (uet_rx_pdc *p = ep->pdcs[pdc_hash(pdcid)]; p; p = p->next)
        if (p->pdcid == pdcid)
            return p;
    return NULL;
}

static uet_rx_msg *find_msg(const uet_rx_ep *ep, const uint8_t *peer, uint32_t alen,
                            uint32_t initiator, uint16_t mid)
{
    for (uet_rx_msg *m = ep->msgs[msg_hash(peer, alen, initiator, mid)]; m; m = m->next)
        if (m->message_id == mid && m->initiator == initiator && m->peer_len == alen
            && !memcmp(m->peer, peer, alen))
            return m;
    return NULL;
}

/* Target.send_ack (A2-A4) of uet/pds/target.py for a PDC whose ACKs the lane may build (its
 * ``ack_quick``: an ACK_CC with cc_type 0, no receiver penalty, no credit, no CSIG reflection,
 * no stored response): the SACK base tracker (A3), the ACK_CC bytes, the trailer of the answer's
 * context (A4: from the request's destination to its source, the ports as the request had them). */
static void build_ack(uet_rx_ep *ep, uet_rx_pdc *p, uint32_t psn, int retx, int ce,
                      const uint8_t *src, const uint8_t *dst, uint32_t alen, uint16_t sport,
                      uint16_t dport, uet_rx_ack *ack)
{
    const uet_rx_layout *L = &ep->L;
    uint32_t cack = uet_psnwin_cack(p->win);
    uint32_t sb = p->sack_base;
    if (uet_psn_diff(cack, sb) > 0)
        sb = cack;
    uint32_t hi = uet_psnwin_highest(p->win);
    while (uet_psn_diff(hi, sb) > 63)
        sb += 64;
    p->sack_base = sb;
    if (p->late_set) {
        uint32_t late = p->late;
        p->late_set = 0;
        p->late = 0;
        if (uet_psn_diff(late, cack) > 0)
            sb = late; /* A3: report a PSN that arrived below the tracker base */
    }
    p->bytes_since_ack = 0;
    if (p->pending_ar_set && uet_psn_diff(cack, p->pending_ar) >= 0)
        p->pending_ar_set = 0; /* A1: CACK covers the PSN that asked */
    uint8_t *out = ack->datagram;
    uint32_t size = L->ack_size;
    memcpy(out, p->ack_const, size);
    put_field(out, L->ack_psn_offset, offset16(uet_psn_diff(psn, cack)));
    put_field(out, L->cack_psn, cack);
    if (ce)
        put_field(out, L->ack_m, 1);
    if (retx)
        put_field(out, L->ack_retx, 1);
    put_field(out, L->sack_psn_offset, offset16(uet_psn_diff(sb, cack)));
    put_field(out, L->sack_bitmap, uet_psnwin_sack(p->win, sb));
    put_field(out, L->rcvd_bytes, (uint64_t)p->rcvd_bytes & 0xFFFFFF);
    put_field(out, L->ooo_count, (uint64_t)p->ooo_count & 0xFFFF);
    /* A4, A.1: the answer swaps the addresses and keeps the ports (to the UET port, from the EV) */
    uint32_t crc = uet_crc32c(uet_udp_seed(dst, src, alen, sport, dport,
                                       UDP_HEADER_LEN + size + TRAILER_LEN), out, size);
    out[size] = (uint8_t)(crc >> 24);
    out[size + 1] = (uint8_t)(crc >> 16);
    out[size + 2] = (uint8_t)(crc >> 8);
    out[size + 3] = (uint8_t)crc;
    ack->len = size + TRAILER_LEN;
    ep->acks_tx++;
}

/* The SES target's part (uet/ses/target.py: admission, placement, R3) for the one case it takes:
 * the standard header (D.3) of a middle packet (no SOM, EOM or IE) of a SEND or TAGGED_SEND whose
 * message (K1) is in reassembly, not failed (T8), with that opcode and request length, the
 * payload the packet's and inside the message (T5), not completing it, landing in a reassembly
 * chunk already in use (a new chunk is charged to the peer's budget, R1 and R2: the
 * reference's).  Returns -1 (not taken, nothing changed) or the new bytes placed; a repeat is
 * counted as a duplicate.  ``ses`` is the SES part of the request. */
static int64_t ses_take(uet_rx_ep *ep, const uint8_t *peer, uint32_t alen, uint32_t next_hdr,
                        const uint8_t *ses, size_t ses_len, double stamp, uet_rx_msg **taken)
{
    const uet_rx_layout *L = &ep->L;
    if (next_hdr != L->nh_std || ses_len < L->std_size)
        return -1;
    int64_t n = (int64_t)(ses_len - L->std_size);
    uint32_t opcode = (uint32_t)field(ses, L->opcode);
    int64_t length = field(ses, L->request_length);
    int64_t offset = field(ses, L->message_offset);
    if (field(ses, L->som) || field(ses, L->eom) || field(ses, L->ie)
        || field(ses, L->payload_length) != n || offset + n > length
        || (opcode != L->send_opcode && opcode != L->tagged_send_opcode))
        return -1;
    uet_rx_msg *m = find_msg(ep, peer, alen, (uint32_t)field(ses, L->initiator),
                             (uint16_t)field(ses, L->message_id));
    if (!m || !m->live || !m->asm_ || m->opcode != opcode || (int64_t)m->length != length
        || (int64_t)m->got + n >= length)
        return -1;
    /* Reassembly.place_allocated: inside one chunk already in use */
    uet_rx_chunks *c = m->asm_;
    if (n <= 0 || c->chunk <= 0)
        return -1;
    int64_t index = offset / c->chunk, base = index * c->chunk;
    if (offset + n > base + c->chunk || offset + n > c->length || index >= c->nchunks
        || c->chunks[index] == NULL)
        return -1;
    int64_t added = uet_reasm_place(c->chunks[index], offset - base, ses + L->std_size, n);
    if (added < 0)
        return -1; /* cannot happen after the checks above; the reference decides */
    c->received += added;
    ep->requests++;
    m->last = stamp;
    if (added)
        m->got += (uint64_t)added;
    else
        ep->duplicate_packets++;
    *taken = m;
    return added;
}

int uet_rx_take(uet_rx_ep *ep, const char *datagram, size_t n, const char *src_bytes,
                const char *dst_bytes, uint32_t alen, uint16_t sport, uint16_t dport, uint8_t dscp,
                uint8_t ecn, double now, double ses_now, uet_rx_ack *ack)
{
    const uint8_t *data = (const uint8_t *)datagram, *src = (const uint8_t *)src_bytes;
    const uint8_t *dst = (const uint8_t *)dst_bytes;
    const uet_rx_layout *L = &ep->L;
    if ((alen != 4 && alen != 16) || n < L->request_size + TRAILER_LEN
        || n > 0xFFFF - UDP_HEADER_LEN || dscp == L->dscp_trimmed)
        return 0; /* R1: trimmed packets are the reference's */
    size_t end = n - TRAILER_LEN;
    uint32_t type = (uint32_t)field(data, L->type);
    if ((type != L->rud_req && type != L->rod_req) || field(data, L->syn))
        return 0;
    uint32_t psn = (uint32_t)field(data, L->psn);
    uet_rx_pdc *p = find_pdc(ep, (uint16_t)field(data, L->dpdcid));
    if (!p || !p->open || p->peer_len != alen || memcmp(p->peer, src, alen)
        || p->peer_pdcid != (uint16_t)field(data, L->spdcid) || p->rod != (type == L->rod_req))
        return 0; /* T4-T6 */
    uint32_t cack = uet_psnwin_cack(p->win);
    uint32_t d = psn - cack;
    if (d == 0 || d > p->size || uet_psnwin_test(p->win, psn))
        return 0; /* W1: new and inside the window */
    if (p->rod && (psn != p->next_deliver || p->rod_held))
        return 0; /* W4: ROD delivers at once only the next PSN, with nothing buffered */
    uint32_t seed = uet_udp_seed(src, dst, alen, sport, dport, (uint32_t)(UDP_HEADER_LEN + n));
    uint32_t want = ((uint32_t)data[end] << 24) | ((uint32_t)data[end + 1] << 16)
                    | ((uint32_t)data[end + 2] << 8) | data[end + 3];
    if (uet_crc32c(seed, data, end) != want)
        return 5; /* R2: the reference counts it, without checking it again */
    uet_rx_msg *m = NULL;
    double stamp = now > ses_now ? now : ses_now;
    if (ses_take(ep, src, alen, (uint32_t)field(data, L->next_hdr), data + L->request_size,
                 end - L->request_size, stamp, &m) < 0)
        return 4; /* the trailer is good: the reference need not check it again */
    uint32_t plen = (uint32_t)(end - L->request_size);
    int retx = (int)field(data, L->retx), ar = (int)field(data, L->ar);
    if (retx)
        ep->retx_rx++; /* R4 */
    ep->taken++;
    p->last_rx = now;
    /* Target.record (W1) */
    uet_psnwin_set(p->win, psn);
    p->rcvd_bytes += plen;
    if (d != 1) {
        p->ooo_count++;
        if (uet_psn_diff(psn, p->sack_base) < 0
            && (!p->late_set || uet_psn_diff(psn, p->late) < 0)) {
            p->late = psn;
            p->late_set = 1;
        }
    }
    int64_t clear = field(data, L->clear_psn_offset);
    if (clear)
        p->clear_psn = (uint32_t)(psn + (uint32_t)clear);
    if (p->rod)
        p->next_deliver = psn + 1; /* W4: it was the next, and nothing waits behind it */
    /* A1 */
    uint32_t add = plen > p->ack_gen_min_pkt_add ? plen : p->ack_gen_min_pkt_add;
    int ce = ecn == L->ecn_ce;
    if (ar || ce || p->ack_per_packet || p->pending_ar_set
        || p->bytes_since_ack + add >= p->ack_gen_trigger) {
        /* Target.acknowledge, where the lane may build the ACK */
        if (p->ack_quick && L->ack_size >= 16 && L->ack_size <= sizeof p->ack_const
            && L->ack_size + TRAILER_LEN <= sizeof ack->datagram) {
            uint32_t cack = uet_psnwin_cack(p->win);
            if (ar || (ce && p->ack_on_ecn) || p->ack_per_packet
                || p->bytes_since_ack + add >= p->ack_gen_trigger
                || (p->pending_ar_set && uet_psn_diff(cack, p->pending_ar) >= 0)) {
                build_ack(ep, p, psn, retx, ce, src, dst, alen, sport, dport, ack);
                if (ar && uet_psn_diff(psn, cack) > 0) {
                    p->pending_ar = psn; /* A1: an ACK is due again once CACK covers it */
                    p->pending_ar_set = 1;
                }
                return 3;
            }
            /* CE without ACK_ON_ECN, or an AR still pending: nothing asks for an ACK yet */
            p->bytes_since_ack += add;
            return 1;
        }
        ack->psn = psn;
        ack->plen = plen;
        ack->pdcid = p->pdcid;
        ack->ar = (uint8_t)ar;
        ack->retx = (uint8_t)retx;
        ack->ce = (uint8_t)ce;
        return 2;
    }
    p->bytes_since_ack += add;
    return 1;
}

int32_t uet_rx_take_area(uet_rx_ep *ep, const char *buf, int32_t slot, const uet_rx4 *recs,
                         int32_t start, int32_t n, const char *local4, uint16_t dport, double now,
                         double ses_now, uet_rx_ack *ack, int32_t *status)
{
    *status = 0;
    if (start < 0 || slot <= 0 || n > UET_MMSG_MAX)
        return start < 0 ? 0 : start;
    for (int32_t i = start; i < n; i++) {
        const uet_rx4 *r = &recs[i];
        if ((r->flags & MSG_TRUNC) || r->len < 0 || r->len > slot)
            return i; /* the engine counts it (rx_truncated) */
        int got = uet_rx_take(ep, buf + (size_t)i * (size_t)slot, (size_t)r->len,
                              (const char *)r->src, r->has_dst ? (const char *)r->dst : local4,
                              4, r->sport, dport, (uint8_t)(r->tos >> 2), (uint8_t)(r->tos & 3), now,
                              ses_now, ack);
        if (got != 1) {
            *status = got;
            return i;
        }
    }
    return n;
}
