/* The many-host fabric's per-packet work (issue 29 item 1): the event heap, the links, the switch
 * ports and the forwarding of uet/sim/fabric.py, whose Python model (uet/net/switch.py NET-S1 to
 * NET-S4, uet/net/ecn.py NET-N1 to NET-N4, uet/net/ecmp.py NET-M2, uet/net/rng.py NET-R1, NET-R2)
 * is the reference; the labels below are theirs. Packets here are ids, lengths and flags; the
 * frames stay in Python, which applies what a delivery reports (trimmed, CE) to the bytes.
 * Python binding: uet/native/fabric.py. */
#ifndef UET_FABRIC_H
#define UET_FABRIC_H

#include <stdint.h>

#define UET_FAB_OK 0
#define UET_FAB_BAD_ARG (-1)   /* an index, a length or a number outside its range */
#define UET_FAB_FULL (-2)      /* the event heap or the packet pool reached its limit */
#define UET_FAB_NOMEM (-3)

#define UET_FAB_DELIVER 0      /* an output record: a packet reached host `node` */
#define UET_FAB_PY 1           /* an output record: a Python event `id` is due */

#define UET_FAB_LOG_TX 1       /* a port put a packet on its link */
#define UET_FAB_LOG_DROP 2     /* a port refused a packet (NET-S2) */
#define UET_FAB_LOG_DELIVER 3  /* a packet reached a host (the driver logs it) */

#define UET_FAB_F_CONTROL 1    /* packet flags (input and output) */
#define UET_FAB_F_ECT 2
#define UET_FAB_F_TRIMMED 4
#define UET_FAB_F_CE 8
#define UET_FAB_F_TAGGED 16    /* log flags: the packet carries a CSIG tag, its 16 bits from bit 16 */

typedef struct uet_fab uet_fab;

typedef struct {          /* a packet a host hands its NIC */
    int64_t id;
    int32_t len;          /* frame bytes, > 0 */
    int32_t dst;          /* destination host */
    uint32_t key;         /* its 5-tuple hash (NET-M2) */
    uint32_t flags;       /* UET_FAB_F_CONTROL | UET_FAB_F_ECT */
    int32_t csig;         /* its CSIG tag's 16 bits (NET-S6), or -1: untagged */
} uet_fab_pkt;

typedef struct {          /* what uet_fab_run reports */
    double t;
    int64_t id;           /* the packet's id, or the Python event's */
    int32_t node;         /* the host (UET_FAB_DELIVER) */
    int32_t kind;
    uint32_t flags;       /* UET_FAB_F_TRIMMED | UET_FAB_F_CE */
    int32_t csig;         /* the tag's bits as the packet arrives, or -1 */
} uet_fab_out;

typedef struct {          /* a log record */
    double t;
    int64_t id;
    int32_t where;        /* the port (TX, DROP) or the host (DELIVER) */
    int32_t event;
    uint32_t flags;
} uet_fab_log;

typedef struct {          /* one port's counters (uet/net/switch.py PORT_COUNTERS and its queue) */
    int64_t tx_packets, tx_bytes, trimmed, dropped, ce_marked, max_qbytes, qbytes;
    double q_area, q_since;
    int64_t csig_stamped, csig_replaced, csig_d_set;  /* CSIG_COUNTERS (NET-S6) */
} uet_fab_stats;

uet_fab *uet_fab_new(int32_t hosts, int32_t switches, int32_t ports, uint64_t seed,
                     int64_t max_events);
void uet_fab_free(uet_fab *f);
int uet_fab_port(uet_fab *f, int32_t port, double Bps, double delay, int64_t cap, int64_t kmin,
                 int64_t kmax, int64_t keep_frame, int32_t trimming, double fail_at,
                 int32_t mark_in, int32_t victim_either, int32_t peer_is_host, int32_t peer);
/* NET-S5, NET-S6: the port stamps CSIG tags of type t (uet/cms/csig.py CMS-C1; -1: off) with the
 * fabric's scale (CMS-C2), its locator lm and the utilisation time constant interval */
int uet_fab_port_csig(uet_fab *f, int32_t port, int32_t t, double abw_full_gbps,
                      double delay_unit_s, int32_t lm, double interval);
int uet_fab_switch(uet_fab *f, int32_t sw, uint32_t salt, const int32_t *down, const int32_t *up,
                   int32_t nup);
int uet_fab_nic(uet_fab *f, int32_t host, int32_t port);
int uet_fab_log_on(uet_fab *f, int32_t on);
int uet_fab_inject(uet_fab *f, double now, int32_t host, const uet_fab_pkt *pkts, int32_t n);
int uet_fab_push_py(uet_fab *f, double t, int64_t id);
int64_t uet_fab_run(uet_fab *f, double limit, uet_fab_out *out, int64_t max);
int64_t uet_fab_drain_dropped(uet_fab *f, int64_t *out, int64_t max);
int64_t uet_fab_drain_log(uet_fab *f, uet_fab_log *out, int64_t max);
int64_t uet_fab_pending(const uet_fab *f);
double uet_fab_now(const uet_fab *f);
int uet_fab_port_stats(const uet_fab *f, int32_t port, uet_fab_stats *out);
int uet_fab_port_busy(const uet_fab *f, int32_t port);
/* NET-R1 (uet/net/rng.py): the first n words of the generator seeded with seed (for the twin test) */
void uet_fab_rng_fill(uint64_t seed, uint64_t *out, int64_t n);

#endif
