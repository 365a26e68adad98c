/* uet native hot path: CRC-32C, RoCEv2 ICRC, message reassembly, PSN window.
 * Every function here has a pure-Python twin in uet/native/_twin.py. */
#ifndef UET_NATIVE_H
#define UET_NATIVE_H

#include <stddef.h>
#include <stdint.h>

/* ---- crc32c.c ---- */
/* CRC-32C (Castagnoli), chained: crc is a previous result (0 to start). */
uint32_t uet_crc32c(uint32_t crc, const void *buf, size_t len);
/* Portable slicing-by-8 path, always available. */
uint32_t uet_crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* Hardware path if the CPU has it, else the portable path. */
uint32_t uet_crc32c_hw(uint32_t crc, const void *buf, size_t len);
/* 1 if the CPU CRC-32C instruction is used by uet_crc32c. */
int uet_crc32c_has_hw(void);
/* The A.3 trailer context of a UDP datagram (twin: uet/wire/trailer.py udp_seed): the CRC-32C
 * register after the addresses (alen bytes each: 4 for IPv4, 16 for IPv6), then the UDP header
 * with checksum 0 and udp_len (header, UET bytes and trailer; its low 16 bits). */
uint32_t uet_udp_seed(const uint8_t *src, const uint8_t *dst, uint32_t alen, uint16_t sport,
                      uint16_t dport, uint32_t udp_len);

/* ---- icrc.c ---- */
/* zlib-compatible CRC-32 (IEEE), chained like zlib.crc32. */
uint32_t uet_crc32(uint32_t crc, const void *buf, size_t len);
/* Portable slicing-by-8 path of uet_crc32. */
uint32_t uet_crc32_sw(uint32_t crc, const void *buf, size_t len);
/* RoCEv2 ICRC of an IP packet (IPv4/IPv6 + UDP + BTH + payload + pad,
 * without the ICRC).  Returns the ICRC (0..2^32-1), or -1 if too short,
 * -2 for an unknown IP version, -3 for an IPv4 IHL below 5. */
int64_t uet_roce_icrc(const void *pkt, size_t len);

/* ---- reasm.c ---- */
typedef struct uet_reasm uet_reasm;
/* buf (length bytes) is owned by the caller and must outlive the object. */
uet_reasm *uet_reasm_new(void *buf, int64_t length);
void uet_reasm_free(uet_reasm *r);
/* New bytes stored (>= 0), or -1 if [offset, offset+len) is out of range. */
int64_t uet_reasm_place(uet_reasm *r, int64_t offset, const void *data, int64_t len);
/* 1 if every byte of the range arrived, 0 if not, -1 if out of range. */
int uet_reasm_has(const uet_reasm *r, int64_t offset, int64_t len);
int64_t uet_reasm_received(const uet_reasm *r);
int64_t uet_reasm_length(const uet_reasm *r);
/* Writes up to max_holes (offset, length) pairs to out (2*max_holes int64),
 * returns the total number of holes. */
int64_t uet_reasm_missing(const uet_reasm *r, int64_t *out, int64_t max_holes);

/* ---- PSN window (reasm.c) ---- */
#define UET_PSN_NEW 0
#define UET_PSN_DUPLICATE 1
#define UET_PSN_OUT_OF_WINDOW 2
#define UET_PSN_MAX_WINDOW (1u << 24)
typedef struct uet_psnwin uet_psnwin;
/* NULL if size is not in 1..UET_PSN_MAX_WINDOW or on allocation failure. */
uet_psnwin *uet_psnwin_new(uint32_t start_psn, uint32_t size);
void uet_psnwin_free(uet_psnwin *w);
int uet_psnwin_set(uet_psnwin *w, uint32_t psn);
int uet_psnwin_test(const uet_psnwin *w, uint32_t psn);
uint64_t uet_psnwin_sack(const uet_psnwin *w, uint32_t base_psn);
uint32_t uet_psnwin_cack(const uet_psnwin *w);
uint32_t uet_psnwin_highest(const uet_psnwin *w);
int32_t uet_psn_diff(uint32_t a, uint32_t b);
int uet_psn_lt(uint32_t a, uint32_t b);

/* ---- mmsg.c (Linux; elsewhere the calls return -ENOSYS and uet_mmsg_available() 0) ---- */
/* Batched UDP receive and send for IPv4 sockets.  Twins: uet/native/sockbatch.py. */
#define UET_MMSG_MAX 64 /* datagrams per call at most */
typedef struct {
    int32_t len;     /* bytes stored in the datagram's slot */
    uint32_t flags;  /* msg_flags: MSG_TRUNC when the datagram did not fit the slot */
    uint8_t src[4];  /* source address (network order) */
    uint8_t dst[4];  /* destination address from IP_PKTINFO (has_dst) */
    uint16_t sport;  /* source port (host order) */
    uint8_t tos;     /* TOS byte from IP_TOS (IP_RECVTOS), 0 when absent */
    uint8_t has_dst; /* 1 when IP_PKTINFO was present */
} uet_rx4;
/* Parse IP_TOS and IP_PKTINFO out of a control buffer, reading only inside it; returns has_dst. */
int uet_cmsg_parse4(const void *control, size_t controllen, uint8_t *tos, uint8_t *dst);
/* One non-blocking recvmmsg of up to n (<= UET_MMSG_MAX) datagrams into slots of ``slot`` bytes
 * of buf (n * slot bytes); returns the number received or -errno. */
int uet_recvmmsg4(int fd, char *buf, int32_t slot, int32_t n, uet_rx4 *out);
/* One non-blocking sendmmsg of up to n datagrams; returns the number sent or -errno (of the first). */
int uet_sendmmsg4(int fd, const char *data, const uint32_t *off, const uint32_t *len,
                  const uint8_t *dst, const uint16_t *port, const uint8_t *tos, int32_t tos_default,
                  const uint8_t *src, int32_t n);
int uet_mmsg_available(void);

#endif
