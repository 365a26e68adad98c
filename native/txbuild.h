/* Request datagrams of an established initiator PDC, a run of packets per call (issue 15 item 1).
 * Twin (the reference): uet/native/txbuild.py build_requests_py. */
#ifndef UET_TXBUILD_H
#define UET_TXBUILD_H

#include <stddef.h>
#include <stdint.h>

/* docs/facts.md B.5: the RUD/ROD request header (no SYN, no CC form) is 12 bytes. */
#define UET_TXBUILD_REQUEST_SIZE 12
/* docs/facts.md A.3: the CRC-32C trailer, 4 bytes big-endian. */
#define UET_TXBUILD_TRAILER_LEN 4
/* Bit positions (from the least significant bit of the big-endian header) of the per-packet
 * fields, in this order in the caller's pds_shift array; they come from the schema. */
#define UET_TXBUILD_SHIFT_PSN 0
#define UET_TXBUILD_SHIFT_CLEAR 1
#define UET_TXBUILD_SHIFT_AR 2
#define UET_TXBUILD_SHIFT_NEXT_HDR 3
#define UET_TXBUILD_SHIFTS 4
/* Errors (nothing is written when one is returned). */
#define UET_TXBUILD_NO_ROOM (-1)  /* the datagrams do not fit in out_cap bytes */
#define UET_TXBUILD_BAD_ARG (-2)  /* inconsistent lengths, ranges or a field outside its header */

/* Datagram i (0 <= i < count) of a run, written back to back into out:
 *   the request header: pds (12 constant bytes) ORed with PSN psn0 + i (mod 2^32), the
 *   CLEAR_PSN offset clear_psn - PSN clamped to signed 16 bits, AR when ar[i] != 0, next_hdr;
 *   then its SES header, its payload and the CRC-32C trailer chained from seeds[i].
 * Both return the bytes written, or one of the errors above. */

/* A message cut at mtu bytes (uet/ses/packets.py Message): its constants, set once per message.
 * ses (ses_len bytes, at least the three parts) holds the SES header of packet 0 (som_len bytes),
 * the mid_len-byte big-endian constant of the other packets' SES header, then the extension
 * (ext_len bytes) that follows every packet's SES header. */
typedef struct {
    int64_t ses_len;
    int32_t som_len, mid_len, ext_len;
    int32_t len_shift, off_shift, eom_shift; /* payload_length, message_offset, EOM (D.3) */
    int64_t data_len, mtu;                   /* the message's bytes at data; payload per packet */
} uet_txbuild_message_t;

/* Packets k0 .. k0 + count - 1 of the message msg: the SES header of packet 0 is the SOM header,
 * of packet k > 0 the middle constant ORed with its payload length at len_shift, its message
 * offset k * mtu at off_shift and, on the last packet, the EOM bit at eom_shift; then the
 * extension. The payload of packet k is data[k * mtu, min((k + 1) * mtu, data_len)). */
int64_t uet_txbuild_message(char *out, int64_t out_cap, const char *pds, const int32_t *pds_shift,
                            uint32_t next_hdr, uint32_t psn0, uint32_t clear_psn, const char *ar,
                            const uint32_t *seeds, int32_t count, const uet_txbuild_message_t *msg,
                            const char *ses, const char *data, int64_t k0);

/* Any run whose SES headers and payloads the caller has: packet i's SES header is
 * ses[ses_end[i - 1], ses_end[i]) and its payload payload[payload_end[i - 1], payload_end[i])
 * (ses_end[-1] and payload_end[-1] taken as 0; the ends must not decrease nor pass ses_len,
 * payload_len). */
int64_t uet_txbuild(char *out, int64_t out_cap, const char *pds, const int32_t *pds_shift,
                    uint32_t next_hdr, uint32_t psn0, uint32_t clear_psn, const char *ar,
                    const uint32_t *seeds, int32_t count, const char *ses, int64_t ses_len,
                    const int64_t *ses_end, const char *payload, int64_t payload_len,
                    const int64_t *payload_end);

/* The trailer seeds of a run (A.3, uet_udp_seed): seeds[i] for a datagram of sizes[i] UET bytes
 * (trailer included) from entropy sport[i] to dport, between the addresses addrs (the source,
 * then the destination, alen bytes each: 4 or 16). Returns 0, or UET_TXBUILD_BAD_ARG (nothing
 * written). */
int32_t uet_txbuild_seeds(uint32_t *seeds, const char *addrs, int32_t alen, const uint16_t *sport,
                          uint16_t dport, const int64_t *sizes, int32_t count);

#endif
