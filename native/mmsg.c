/* Batched UDP socket calls for IPv4: recvmmsg and sendmmsg (Linux), one kernel crossing per batch
 * instead of one per datagram (issue 15 item 2).
 *
 * Twins: uet/native/sockbatch.py recv_batch_py and send_batch_py (today's per-datagram recvmsg /
 * sendto / sendmsg loop), which are the reference; tests/native/test_sockbatch.py compares them on
 * real loopback sockets.
 *
 * Receive: every datagram lands in its own slot of ``slot`` bytes of the caller's buffer; its record
 * (uet_rx4) gives the bytes stored, msg_flags (MSG_TRUNC when the datagram was longer than the
 * slot), the source address and port, the TOS byte from the IP_TOS control message (IP_RECVTOS;
 * 0 when absent) and the destination address from IP_PKTINFO (wildcard-bound sockets; has_dst 0
 * when absent).  Control messages are parsed by uet_cmsg_parse4, which reads only inside the
 * control buffer whatever its bytes say (the sanitizer driver feeds it random ones).
 *
 * Send: datagram i is data[off[i] .. off[i] + len[i]) to dst[i]:port[i]; a TOS other than the
 * socket's default (``tos_default``) goes as an IP_TOS control message, and with ``src`` (a
 * wildcard-bound socket) every datagram names its source address with IP_PKTINFO, as sendmsg with
 * those control messages does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "uet_native.h"

#ifdef __linux__

#define CTRL_SIZE 64 /* room for IP_TOS (int) and IP_PKTINFO (struct in_pktinfo) */

int uet_cmsg_parse4(const void *control, size_t controllen, uint8_t *tos, uint8_t *dst)
{
    /* CMSG_FIRSTHDR / CMSG_NXTHDR trust cmsg_len; walk by hand with every bound checked. */
    const uint8_t *p = control;
    size_t pos = 0;
    int has_dst = 0;
    *tos = 0;
    if (!control)
        return 0;
    while (controllen - pos >= sizeof(struct cmsghdr)) {
        struct cmsghdr h;
        memcpy(&h, p + pos, sizeof h);
        if (h.cmsg_len < sizeof(struct cmsghdr) || h.cmsg_len > controllen - pos)
            break;
        const uint8_t *data = p + pos + CMSG_LEN(0);
        size_t dlen = h.cmsg_len >= CMSG_LEN(0) ? h.cmsg_len - CMSG_LEN(0) : 0;
        if (h.cmsg_level == IPPROTO_IP) {
            if (h.cmsg_type == IP_TOS && dlen >= 1) {
                *tos = data[0];
            } else if (h.cmsg_type == IP_PKTINFO && dlen >= 12) {
                memcpy(dst, data + 8, 4); /* ipi_addr: the header's destination address */
                has_dst = 1;
            }
        }
        size_t step = CMSG_ALIGN(h.cmsg_len);
        if (step == 0 || step > controllen - pos)
            break;
        pos += step;
    }
    return has_dst;
}

int uet_recvmmsg4(int fd, char *buf, int32_t slot, int32_t n, uet_rx4 *out)
{
    struct mmsghdr msgs[UET_MMSG_MAX];
    struct iovec iov[UET_MMSG_MAX];
    struct sockaddr_in names[UET_MMSG_MAX];
    union {
        struct cmsghdr align;
        uint8_t b[CTRL_SIZE];
    } ctrl[UET_MMSG_MAX];
    if (n <= 0 || slot < 0 || !buf || !out)
        return -EINVAL;
    if (n > UET_MMSG_MAX)
        n = UET_MMSG_MAX;
    memset(msgs, 0, sizeof(struct mmsghdr) * (size_t)n);
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = buf + (size_t)i * (size_t)slot;
        iov[i].iov_len = (size_t)slot;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &names[i];
        msgs[i].msg_hdr.msg_namelen = sizeof names[i];
        msgs[i].msg_hdr.msg_control = ctrl[i].b;
        msgs[i].msg_hdr.msg_controllen = CTRL_SIZE;
    }
    int got = recvmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT, NULL);
    if (got < 0)
        return -errno;
    for (int i = 0; i < got; i++) {
        uet_rx4 *r = &out[i];
        const struct msghdr *h = &msgs[i].msg_hdr;
        uint32_t len = msgs[i].msg_len;
        r->len = (int32_t)(len > (uint32_t)slot ? (uint32_t)slot : len);
        r->flags = (uint32_t)h->msg_flags;
        memset(r->src, 0, 4);
        r->sport = 0;
        if (h->msg_namelen >= sizeof(struct sockaddr_in) && names[i].sin_family == AF_INET) {
            memcpy(r->src, &names[i].sin_addr, 4);
            r->sport = ntohs(names[i].sin_port);
        }
        memset(r->dst, 0, 4);
        size_t clen = h->msg_controllen;
        if (clen > CTRL_SIZE)
            clen = CTRL_SIZE;
        r->has_dst = (uint8_t)uet_cmsg_parse4(ctrl[i].b, clen, &r->tos, r->dst);
    }
    return got;
}

int uet_sendmmsg4(int fd, const char *data, const uint32_t *off, const uint32_t *len,
                  const uint8_t *dst, const uint16_t *port, const uint8_t *tos, int32_t tos_default,
                  const uint8_t *src, int32_t n)
{
    struct mmsghdr msgs[UET_MMSG_MAX];
    struct iovec iov[UET_MMSG_MAX];
    struct sockaddr_in names[UET_MMSG_MAX];
    union {
        struct cmsghdr align;
        uint8_t b[CTRL_SIZE];
    } ctrl[UET_MMSG_MAX];
    if (n <= 0 || !data || !off || !len || !dst || !port || !tos)
        return -EINVAL;
    if (n > UET_MMSG_MAX)
        n = UET_MMSG_MAX;
    memset(msgs, 0, sizeof(struct mmsghdr) * (size_t)n);
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = (void *)(uintptr_t)(data + off[i]);
        iov[i].iov_len = len[i];
        memset(&names[i], 0, sizeof names[i]);
        names[i].sin_family = AF_INET;
        names[i].sin_port = htons(port[i]);
        memcpy(&names[i].sin_addr, dst + 4 * (size_t)i, 4);
        struct msghdr *h = &msgs[i].msg_hdr;
        h->msg_iov = &iov[i];
        h->msg_iovlen = 1;
        h->msg_name = &names[i];
        h->msg_namelen = sizeof names[i];
        size_t used = 0;
        memset(ctrl[i].b, 0, CTRL_SIZE);
        if (src || (int32_t)tos[i] != tos_default) {
            struct cmsghdr *c = (struct cmsghdr *)(void *)ctrl[i].b;
            int v = tos[i];
            c->cmsg_level = IPPROTO_IP;
            c->cmsg_type = IP_TOS;
            c->cmsg_len = CMSG_LEN(sizeof v);
            memcpy(CMSG_DATA(c), &v, sizeof v);
            used += CMSG_SPACE(sizeof v);
        }
        if (src) {
            struct cmsghdr *c = (struct cmsghdr *)(void *)(ctrl[i].b + used);
            struct in_pktinfo pi;
            memset(&pi, 0, sizeof pi);
            memcpy(&pi.ipi_spec_dst, src + 4 * (size_t)i, 4);
            c->cmsg_level = IPPROTO_IP;
            c->cmsg_type = IP_PKTINFO;
            c->cmsg_len = CMSG_LEN(sizeof pi);
            memcpy(CMSG_DATA(c), &pi, sizeof pi);
            used += CMSG_SPACE(sizeof pi);
        }
        if (used) {
            h->msg_control = ctrl[i].b;
            h->msg_controllen = used;
        }
    }
    int sent = sendmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT);
    if (sent < 0)
        return -errno;
    return sent;
}

int uet_mmsg_available(void) { return 1; }

#else /* not Linux: no recvmmsg/sendmmsg; the Python twin is used */

int uet_cmsg_parse4(const void *control, size_t controllen, uint8_t *tos, uint8_t *dst)
{
    (void)control; (void)controllen; (void)dst;
    *tos = 0;
    return 0;
}
int uet_recvmmsg4(int fd, char *buf, int32_t slot, int32_t n, uet_rx4 *out)
{
    (void)fd; (void)buf; (void)slot; (void)n; (void)out;
    return -38; /* ENOSYS */
}
int uet_sendmmsg4(int fd, const char *data, const uint32_t *off, const uint32_t *len,
                  const uint8_t *dst, const uint16_t *port, const uint8_t *tos, int32_t tos_default,
                  const uint8_t *src, int32_t n)
{
    (void)fd; (void)data; (void)off; (void)len; (void)dst; (void)port; (void)tos;
    (void)tos_default; (void)src; (void)n;
    return -38;
}
int uet_mmsg_available(void) { return 0; }
#endif
