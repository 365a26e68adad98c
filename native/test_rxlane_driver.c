/* Sanitizer driver for rxlane.c (tests/native/test_rxlane_sanitizers.py builds it with ASan and
 * UBSan): valid, mutated, truncated and random datagrams, with valid trailers and without, at an
 * endpoint with open PDC and message lanes (a RUD PDC from an IPv4 peer, a ROD PDC from an IPv6
 * peer); whatever they say, the lane must stay inside its buffers.  The field layout comes from argv (the schema's positions, uet.native.rxlane), in the
 * order of uet_rx_layout.  Prints "ok". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rxlane.h"

#define CHECK(c) do { if (!(c)) { printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void put(uint8_t *p, uet_field f, uint64_t v)
{
    for (int i = 0; i < f.width; i++) {
        int bit = f.pos + f.width - 1 - i;
        if ((v >> i) & 1)
            p[bit >> 3] |= (uint8_t)(0x80 >> (bit & 7));
        else
            p[bit >> 3] &= (uint8_t)~(0x80 >> (bit & 7));
    }
}

static const uint8_t SRC[4] = {10, 0, 0, 1}, DST[4] = {10, 0, 0, 2};
static const uint8_t SRC6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t DST6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

/* the trailer (A.3) of d[0..n-4) for the addresses of ``alen`` bytes, ports 5000 -> 4793 */
static void seal(uint8_t *d, size_t n, const uint8_t *src, const uint8_t *dst, uint32_t alen)
{
    uint8_t ctx[40];
    memcpy(ctx, src, alen);
    memcpy(ctx + alen, dst, alen);
    uint8_t *u = ctx + 2 * alen;
    uint32_t udp_len = (uint32_t)(n + 8);
    u[0] = 0x13, u[1] = 0x88, u[2] = 0x12, u[3] = 0xB9;
    u[4] = (uint8_t)(udp_len >> 8);
    u[5] = (uint8_t)udp_len;
    u[6] = u[7] = 0;
    uint32_t crc = uet_crc32c(uet_crc32c(0, ctx, 2 * alen + 8), d, n - 4);
    d[n - 4] = (uint8_t)(crc >> 24);
    d[n - 3] = (uint8_t)(crc >> 16);
    d[n - 2] = (uint8_t)(crc >> 8);
    d[n - 1] = (uint8_t)crc;
}

/* An open PDC lane (peer PDCID 9, a window of 256 PSNs from 1000) whose ACKs the lane builds:
 * its ACK builder is under the sanitizers too. */
static uet_rx_pdc *open_pdc(uet_rx_ep *ep, uint16_t pdcid, uet_psnwin *win, const uint8_t *peer,
                            uint8_t peer_len, uint8_t rod)
{
    uet_rx_pdc *p = uet_rx_pdc_add(ep, pdcid);
    if (!p)
        return NULL;
    p->win = win;
    memcpy(p->peer, peer, peer_len);
    p->peer_len = peer_len;
    p->peer_pdcid = 9;
    p->size = 256;
    p->open = 1;
    p->rod = rod;
    p->next_deliver = 1000;
    p->ack_gen_trigger = 16384;
    p->ack_gen_min_pkt_add = 1024;
    p->ack_quick = 1;
    memset(p->ack_const, rod ? 0x5A : 0xA5, sizeof p->ack_const);
    return p;
}

int main(int argc, char **argv)
{
    uet_rx_layout L;
    memset(&L, 0, sizeof L);
    uet_field *fields_pds[] = {&L.type, &L.next_hdr, &L.retx, &L.ar, &L.syn, &L.clear_psn_offset,
                               &L.psn, &L.spdcid, &L.dpdcid};
    uet_field *fields_ses[] = {&L.opcode, &L.som, &L.eom, &L.ie, &L.message_id, &L.initiator,
                               &L.request_length, &L.payload_length, &L.message_offset};
    uet_field *fields_ack[] = {&L.ack_psn_offset, &L.cack_psn, &L.ack_m, &L.ack_retx,
                               &L.sack_psn_offset, &L.sack_bitmap, &L.rcvd_bytes, &L.ooo_count};
    if (argc != 1 + 26 * 3 + 10) {
        printf("usage: 78 field numbers (pos width signed) then 10 constants\n");
        return 2;
    }
    int a = 1;
    for (int i = 0; i < 9; i++, a += 3)
        *fields_pds[i] = (uet_field){(uint16_t)atoi(argv[a]), (uint8_t)atoi(argv[a + 1]),
                                     (uint8_t)atoi(argv[a + 2])};
    for (int i = 0; i < 9; i++, a += 3)
        *fields_ses[i] = (uet_field){(uint16_t)atoi(argv[a]), (uint8_t)atoi(argv[a + 1]),
                                     (uint8_t)atoi(argv[a + 2])};
    for (int i = 0; i < 8; i++, a += 3)
        *fields_ack[i] = (uet_field){(uint16_t)atoi(argv[a]), (uint8_t)atoi(argv[a + 1]),
                                     (uint8_t)atoi(argv[a + 2])};
    L.request_size = (uint32_t)atoi(argv[a++]);
    L.rud_req = (uint32_t)atoi(argv[a++]);
    L.rod_req = (uint32_t)atoi(argv[a++]);
    L.std_size = (uint32_t)atoi(argv[a++]);
    L.nh_std = (uint32_t)atoi(argv[a++]);
    L.send_opcode = (uint32_t)atoi(argv[a++]);
    L.tagged_send_opcode = (uint32_t)atoi(argv[a++]);
    L.dscp_trimmed = (uint8_t)atoi(argv[a++]);
    L.ecn_ce = (uint8_t)atoi(argv[a++]);
    L.ack_size = (uint32_t)atoi(argv[a++]);

    uet_rx_ep *ep = uet_rx_ep_new(&L);
    CHECK(ep);
    uet_psnwin *win = uet_psnwin_new(1000, 256);
    CHECK(win);
    uet_rx_pdc *pdc = open_pdc(ep, 7, win, SRC, 4, 0);
    CHECK(pdc);
    uet_psnwin *win6 = uet_psnwin_new(1000, 256);
    CHECK(win6);
    uet_rx_pdc *rod = open_pdc(ep, 8, win6, SRC6, 16, 1); /* ROD, from the IPv6 peer */
    CHECK(rod);
    uet_rx_pdc *other = uet_rx_pdc_add(ep, 7 + 256); /* the same hash bucket */
    CHECK(other);
    uet_rx_pdc_remove(ep, other);

    /* a message of 3 chunks of 4096 bytes, the middle one not in use */
    const int64_t chunk = 4096, length = 3 * 4096 - 100;
    uint8_t *buf = malloc((size_t)length);
    CHECK(buf);
    uet_reasm *engines[3] = {uet_reasm_new(buf, chunk), NULL,
                             uet_reasm_new(buf + 2 * chunk, length - 2 * chunk)};
    CHECK(engines[0] && engines[2]);
    uet_rx_chunks table = {length, chunk, 3, 0, engines};
    uet_rx_msg *msg = uet_rx_msg_add(ep, (const char *)SRC, 4, 5, 42);
    CHECK(msg);
    msg->asm_ = &table;
    msg->opcode = (uint8_t)L.send_opcode;
    msg->length = (uint64_t)length;
    msg->live = 1;
    CHECK(uet_rx_msg_add(ep, (const char *)SRC, 5, 5, 42) == NULL); /* 4 or 16 bytes only */
    uet_rx_msg *msg6 = uet_rx_msg_add(ep, (const char *)SRC6, 16, 5, 42); /* the same ids */
    CHECK(msg6);
    msg6->asm_ = &table; /* (the IPv4 message's storage: the lane must keep both inside it) */
    msg6->opcode = (uint8_t)L.send_opcode;
    msg6->length = (uint64_t)length;
    msg6->live = 1;

    uet_rx_ack ack;
    int taken = 0, built = 0;
    uint8_t d[2048];
    int by_family[2] = {0, 0};
    for (int round = 0; round < 200000; round++) {
        int v6 = (int)(rnd() & 1);
        const uint8_t *src = v6 ? SRC6 : SRC, *dst = v6 ? DST6 : DST;
        uint32_t alen = v6 ? 16 : 4;
        uet_rx_pdc *on = v6 ? rod : pdc;
        size_t plen = rnd() % 1400;
        size_t n = L.request_size + L.std_size + plen + 4;
        memset(d, 0, n);
        put(d, L.type, (rnd() % 8) ? (v6 ? L.rod_req : L.rud_req) : (v6 ? L.rud_req : L.rod_req));
        put(d, L.next_hdr, L.nh_std);
        /* ROD takes only its next PSN: mostly that one */
        put(d, L.psn, v6 && (rnd() % 4) ? on->next_deliver : 1000 + rnd() % 300);
        put(d, L.spdcid, 9);
        put(d, L.dpdcid, v6 ? 8 : 7);
        put(d, L.clear_psn_offset, rnd() & 0xFFFF);
        put(d, L.ar, rnd() & 1);
        uint8_t *s = d + L.request_size;
        put(s, L.opcode, L.send_opcode);
        put(s, L.message_id, 42);
        put(s, L.initiator, 5);
        put(s, L.request_length, (uint64_t)length);
        put(s, L.payload_length, plen);
        put(s, L.message_offset, rnd() % (uint32_t)(length + 200));
        switch (rnd() % 6) {
        case 0: /* random bytes anywhere */
            for (size_t i = 0; i < n - 4; i++)
                d[i] = (uint8_t)rnd();
            break;
        case 1: /* a few flipped bits in the headers */
            for (int k = 0; k < 3; k++) {
                uint32_t bit = rnd() % (uint32_t)((L.request_size + L.std_size) * 8);
                d[bit >> 3] ^= (uint8_t)(0x80 >> (bit & 7));
            }
            break;
        case 2: /* truncated */
            n = rnd() % (n + 1);
            break;
        default:
            break;
        }
        if (n >= 4 && (rnd() % 8))
            seal(d, n, src, dst, alen);
        int r = uet_rx_take(ep, (const char *)d, n, (const char *)src, (const char *)dst, alen,
                            5000, 4793, (uint8_t)(rnd() % 64), (uint8_t)(rnd() % 4), 1.0, 0.5,
                            &ack);
        CHECK(r >= 0 && r <= 5);
        if (r == 3) {
            CHECK(ack.len == L.ack_size + 4);
            built++;
        }
        taken += r >= 1 && r <= 3;
        by_family[v6] += r >= 1 && r <= 3;
        if (round % 2 == 0) { /* half the time the reference builds them */
            pdc->ack_quick = (uint8_t)(!pdc->ack_quick);
            rod->ack_quick = pdc->ack_quick;
        }
        if (round % 997 == 0) { /* keep the windows moving */
            uet_psnwin_free(win);
            win = uet_psnwin_new(1000, 256);
            CHECK(win);
            pdc->win = win;
            uet_psnwin_free(win6);
            win6 = uet_psnwin_new(1000, 256);
            CHECK(win6);
            rod->win = win6;
            rod->next_deliver = 1000;
            msg->got = msg6->got = 0;
        }
    }
    CHECK(taken > 0 && built > 0 && by_family[0] > 0 && by_family[1] > 0);
    CHECK(uet_reasm_received(engines[0]) <= chunk && msg->got <= (uint64_t)length);
    int64_t counts[5];
    uet_rx_ep_counters(ep, counts);
    CHECK(counts[3] == taken && counts[4] == built);
    uet_rx_msg_remove(ep, msg);
    uet_rx_msg_remove(ep, msg6);
    uet_rx_ep_free(ep); /* frees the PDC lanes */
    uet_psnwin_free(win);
    uet_psnwin_free(win6);
    uet_reasm_free(engines[0]);
    uet_reasm_free(engines[2]);
    free(buf);
    printf("ok\n");
    return 0;
}
