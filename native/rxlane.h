/* uet receive lane: the C fast twin of the readable reference (PdsEndpoint._receive, then
 * Target.on_request's W1, R2 and A1 in uet/pds/target.py, then SesEndpoint.admit and deliver)
 * for one case - one middle packet of a SEND or TAGGED_SEND, on an open RUD PDC or an open ROD
 * PDC whose next PSN to deliver it is with nothing buffered (W4), from an IPv4 or IPv6 peer, into
 * reassembly storage already in use, and its ACK where that is a plain ACK_CC of the NSCC state
 * (Target.send_ack) - and nothing else.  Whatever it does not take it leaves untouched (no state
 * changed) for the Python reference, saying whether it checked the trailer already.
 *
 * State ownership: the per-PDC and per-message fields the fast path reads and writes live in
 * uet_rx_pdc and uet_rx_msg, which the endpoint (uet_rx_ep) allocates and frees; the Python
 * objects (uet.pds.target.Target, uet.ses.common.RxMessage) read them through properties while
 * the lane is registered, and take a copy back when it is removed.  Header field positions come
 * from Python (the schema), never from constants here. */
#ifndef UET_RXLANE_H
#define UET_RXLANE_H

#include <stdint.h>
#include <stddef.h>
#include "uet_native.h"

/* A header field: bit offset from the first bit of the header (most significant first) and width
 * (1..32). */
typedef struct {
    uint16_t pos;
    uint8_t width;
    uint8_t is_signed;
} uet_field;

/* Where the fields are (uet/wire/uet_headers.py, B.5 and D.3), and the constants the path checks;
 * filled by uet/native/rxlane.py from the schema. */
typedef struct {
    uet_field type, next_hdr, retx, ar, syn, clear_psn_offset, psn, spdcid, dpdcid;
    uint32_t request_size;         /* 12: the plain RUD/ROD request header (B.5) */
    uint32_t rud_req, rod_req;     /* PDS types RUD_REQ and ROD_REQ */
    uet_field opcode, som, eom, ie, message_id, initiator, request_length, payload_length,
        message_offset;
    uint32_t std_size;             /* the SES standard header's bytes (D.3) */
    uint32_t nh_std;               /* next_hdr of the standard header */
    uint32_t send_opcode, tagged_send_opcode;
    uint8_t dscp_trimmed, ecn_ce;  /* A.2 */
    /* the ACK_CC fields an ACK of the lane sets (B.8; the rest come from the PDC's constant) */
    uet_field ack_psn_offset, cack_psn, ack_m, ack_retx, sack_psn_offset, sack_bitmap,
        rcvd_bytes, ooo_count;
    uint32_t ack_size;             /* the ACK_CC header's bytes (B.8) */
} uet_rx_layout;

/* The target side of one PDC (uet/pds/target.py), the fields its fast path uses. */
typedef struct uet_rx_pdc {
    struct uet_rx_pdc *next;       /* hash chain (the endpoint's) */
    uet_psnwin *win;               /* W1: the Target's PsnWindow (owned by Python) */
    uint8_t peer[16];              /* IPv4 (4 bytes) or IPv6 (16): peer_len */
    uint8_t peer_len;
    uint16_t pdcid, peer_pdcid;
    uint8_t open;                  /* takes packets: OPEN, no CLOSE seen (set by Python) */
    uint8_t rod;                   /* a ROD PDC (W4) */
    uint8_t rod_held;              /* W4: the ROD reorder buffer holds something (set by Python) */
    uint32_t next_deliver;         /* W4: the next PSN a ROD PDC delivers */
    uint8_t pending_ar_set;        /* A1: a PSN asked for an ACK earlier ... */
    uint8_t ack_per_packet;
    uint8_t late_set;
    uint32_t size;                 /* W1: window in PSNs */
    uint32_t ack_gen_trigger, ack_gen_min_pkt_add;  /* A1 */
    int64_t bytes_since_ack, rcvd_bytes, ooo_count; /* A1, A5 */
    uint32_t sack_base, late, clear_psn;             /* A3, W1 */
    uint32_t pending_ar;           /* ... A1: the newest such PSN (with pending_ar_set) */
    double last_rx;
    uint8_t ack_quick;             /* the lane may build this PDC's ACKs (set by Python: A2, A5) */
    uint8_t ack_on_ecn;            /* A1 */
    uint8_t ack_const[32];         /* the ACK_CC constant fields (type, PDC ids, MPR) */
} uet_rx_pdc;

/* The chunk engines of one message buffer (uet/native/reassembly.py): chunks[i] is the
 * reassembly engine of chunk i, NULL until a byte landed in it. */
typedef struct {
    int64_t length, chunk, nchunks, received;
    uet_reasm **chunks;
} uet_rx_chunks;

/* One message in reassembly at the SES target (uet/ses/target.py, K1). */
typedef struct uet_rx_msg {
    struct uet_rx_msg *next;
    uet_rx_chunks *asm_;           /* the Reassembly's chunk table (owned by Python) */
    uint8_t peer[16];              /* IPv4 or IPv6: peer_len bytes */
    uint8_t peer_len;
    uint32_t initiator;
    uint16_t message_id;
    uint8_t opcode;
    uint8_t live;                  /* 0 once failed (T8): the reference takes it */
    uint64_t length, got;
    double last;                   /* R3 */
} uet_rx_msg;

/* What a taken packet asks of Python: an ACK (A1) for it (status 2), or the ACK the lane built
 * (status 3: ``datagram``, ``len`` bytes with its trailer, to go back where the request came from). */
typedef struct {
    uint32_t psn, plen;
    uint16_t pdcid;
    uint8_t ar, retx, ce;
    uint32_t len;
    uint8_t datagram[64];
} uet_rx_ack;

typedef struct uet_rx_ep uet_rx_ep;

uet_rx_ep *uet_rx_ep_new(const uet_rx_layout *layout);
void uet_rx_ep_free(uet_rx_ep *ep);
/* counters since the last uet_rx_ep_counters call: retx_rx (R4), requests and
 * duplicate_packets (SES), taken, acks_tx; out must hold 5. */
void uet_rx_ep_counters(uet_rx_ep *ep, int64_t *out);

uet_rx_pdc *uet_rx_pdc_add(uet_rx_ep *ep, uint16_t pdcid);
void uet_rx_pdc_remove(uet_rx_ep *ep, uet_rx_pdc *pdc);
uet_rx_msg *uet_rx_msg_add(uet_rx_ep *ep, const char *peer, uint32_t peer_len,
                           uint32_t initiator, uint16_t message_id);
void uet_rx_msg_remove(uet_rx_ep *ep, uet_rx_msg *msg);

/* Not taken, nothing changed: 0 (the trailer not checked), 4 (the trailer checked and good), 5
 * (checked and bad: R2); taken: 1; 2: taken and an ACK is due (ack filled); 3: taken and its
 * ACK built (ack->datagram).  src and dst: alen (4 or 16) bytes each.
 * ses_now: the SES's clock; a taken packet's message is stamped max(ses_now, now). */
int uet_rx_take(uet_rx_ep *ep, const char *data, size_t n, const char *src,
                const char *dst, uint32_t alen, uint16_t sport, uint16_t dport, uint8_t dscp,
                uint8_t ecn, double now, double ses_now, uet_rx_ack *ack);

/* The lane over datagrams start..n-1 of a recvmmsg area (uet_recvmmsg4's buffer of n slots of
 * ``slot`` bytes and its records; dst is local4 where a record has none, dport the socket's):
 * takes them in order while it can and returns the index of the first it did not simply take -
 * *status as uet_rx_take says (0, 4, 5: not taken, the caller's; 2, 3: taken, its ACK due or
 * built) - or n. */
int32_t uet_rx_take_area(uet_rx_ep *ep, const char *buf, int32_t slot, const uet_rx4 *recs,
                         int32_t start, int32_t n, const char *local4, uint16_t dport, double now,
                         double ses_now, uet_rx_ack *ack, int32_t *status);

#endif
