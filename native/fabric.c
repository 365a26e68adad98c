/* The many-host fabric's per-packet work in C: see fabric.h. Each function cites the rule of the
 * Python model it follows (uet/net/switch.py NET-S*, uet/net/ecn.py NET-N*, uet/net/ecmp.py
 * NET-M2, uet/sim/fabric.py's _transmit / _at_switch); the two engines make the same decisions in
 * the same order with the same floating-point operations, so a seeded run is the same run. */
#include "fabric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

enum { EV_SWITCH = 0, EV_HOST = 1, EV_FREE = 2, EV_PY = 3 };

typedef struct {
    double t;
    uint64_t seq;
    int64_t b;      /* packet slot, or the Python event's id */
    int32_t a;      /* switch, host or port */
    int32_t kind;
} event;

typedef struct {
    int64_t id;
    double enq;
    int32_t len, dst, csig;  /* csig: the tag's 16 bits, -1 untagged */
    uint32_t key, flags;
} packet;

typedef struct {    /* a FIFO of packet slots */
    int64_t *v;
    int64_t head, n, cap;
} fifo;

typedef struct {
    double Bps, delay, fail_at, q_area, q_since;
    int64_t cap, pcap, kmin, kmax, keep, qbytes, pbytes;
    int64_t tx_packets, tx_bytes, trimmed, dropped, ce_marked, max_qbytes;
    int32_t trimming, mark_in, victim_either, peer_is_host, peer, busy, set;
    fifo data, prio;
    /* NET-S5, NET-S6 (csig_t -1: off) */
    int32_t csig_t, csig_lm;
    double abw_full, delay_unit, interval, util, u_since, tx_end;
    int64_t csig_stamped, csig_replaced, csig_d_set;
} port;

typedef struct {
    uint32_t salt;
    int32_t nup, set;
    int32_t *down;  /* per host: the port toward it, or -1 */
    int32_t *up;
} sw;

typedef struct {
    void *v;
    int64_t n, cap, size;
} vec;

struct uet_fab {
    int32_t hosts, switches, ports;
    int32_t *nic;
    port *p;
    sw *s;
    uet_rng rng;
    event *heap;
    int64_t nheap, capheap, max_events;
    uint64_t seq;
    double now;
    packet *pool;
    int64_t npool, cappool, *freelist, nfree;
    vec dropped, log;
    int32_t logging;
};

static int vec_push(vec *v, const void *item) {
    if (v->n == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 256;
        void *nv = realloc(v->v, (size_t)(cap * v->size));
        if (!nv) return UET_FAB_NOMEM;
        v->v = nv;
        v->cap = cap;
    }
    memcpy((char *)v->v + v->n * v->size, item, (size_t)v->size);
    v->n++;
    return UET_FAB_OK;
}

static int64_t vec_drain(vec *v, void *out, int64_t max) {
    int64_t n = v->n < max ? v->n : max;
    if (n <= 0) return 0;
    memcpy(out, v->v, (size_t)(n * v->size));
    memmove(v->v, (char *)v->v + n * v->size, (size_t)((v->n - n) * v->size));
    v->n -= n;
    return n;
}

static int fifo_push(fifo *q, int64_t x) {
    if (q->n == q->cap) {
        int64_t cap = q->cap ? 2 * q->cap : 16;
        int64_t *nv = malloc((size_t)cap * sizeof *nv);
        if (!nv) return UET_FAB_NOMEM;
        for (int64_t i = 0; i < q->n; i++) nv[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = nv;
        q->cap = cap;
        q->head = 0;
    }
    q->v[(q->head + q->n) % q->cap] = x;
    q->n++;
    return UET_FAB_OK;
}

static int64_t fifo_pop(fifo *q) {
    int64_t x = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return x;
}

static int64_t *fifo_last(fifo *q) { return &q->v[(q->head + q->n - 1) % q->cap]; }

/* --- the heap: (t, seq) order, as heapq orders uet/sim/fabric.py's (time, seq, ...) tuples --- */
static int ev_lt(const event *x, const event *y) {
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int push(uet_fab *f, double t, int32_t kind, int32_t a, int64_t b) {
    if (f->nheap >= f->max_events) return UET_FAB_FULL;
    if (f->nheap == f->capheap) {
        int64_t cap = f->capheap ? 2 * f->capheap : 1024;
        event *nh = realloc(f->heap, (size_t)cap * sizeof *nh);
        if (!nh) return UET_FAB_NOMEM;
        f->heap = nh;
        f->capheap = cap;
    }
    event e = {t, ++f->seq, b, a, kind};
    int64_t i = f->nheap++;
    while (i > 0) {
        int64_t up = (i - 1) / 2;
        if (!ev_lt(&e, &f->heap[up])) break;
        f->heap[i] = f->heap[up];
        i = up;
    }
    f->heap[i] = e;
    return UET_FAB_OK;
}

static event pop(uet_fab *f) {
    event top = f->heap[0], last = f->heap[--f->nheap];
    int64_t i = 0, n = f->nheap;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ev_lt(&f->heap[c + 1], &f->heap[c])) c++;
        if (!ev_lt(&f->heap[c], &last)) break;
        f->heap[i] = f->heap[c];
        i = c;
    }
    if (n) f->heap[i] = last;
    return top;
}

/* --- packets --- */
static int64_t pkt_new(uet_fab *f) {
    if (f->nfree) return f->freelist[--f->nfree];
    if (f->npool == f->cappool) {
        int64_t cap = f->cappool ? 2 * f->cappool : 1024;
        packet *np = realloc(f->pool, (size_t)cap * sizeof *np);
        if (!np) return UET_FAB_NOMEM;
        f->pool = np;
        int64_t *nf = realloc(f->freelist, (size_t)cap * sizeof *nf);
        if (!nf) return UET_FAB_NOMEM;
        f->freelist = nf;
        f->cappool = cap;
    }
    return f->npool++;
}

static void pkt_free(uet_fab *f, int64_t slot) { f->freelist[f->nfree++] = slot; }

static uint32_t log_flags(const packet *k) {
    uint32_t fl = k->flags & (UET_FAB_F_TRIMMED | UET_FAB_F_CE);
    return k->csig < 0 ? fl : fl | UET_FAB_F_TAGGED | (uint32_t)k->csig << 16;
}

static int log_rec(uet_fab *f, double t, int32_t event, int32_t where, const packet *k) {
    if (!f->logging) return UET_FAB_OK;
    uet_fab_log r = {t, k->id, where, event, log_flags(k)};
    return vec_push(&f->log, &r);
}

/* A packet leaves the fabric: its id goes back to Python (which holds its frame); logged when the
 * Python model's driver sees it (a refused enqueue at a switch), not when Port.start drops it */
static int drop(uet_fab *f, double t, int32_t pi, int64_t slot, int logged) {
    int rc = logged ? log_rec(f, t, UET_FAB_LOG_DROP, pi, &f->pool[slot]) : UET_FAB_OK;
    if (rc == UET_FAB_OK) rc = vec_push(&f->dropped, &f->pool[slot].id);
    pkt_free(f, slot);
    return rc;
}

/* --- a port --- */
static void account(port *p, double now) {  /* Port._account */
    p->q_area += (double)p->qbytes * (now - p->q_since);
    p->q_since = now;
}

/* NET-N1 (ecn.ecn_mark with pmax 1): RED on an ECN-capable packet seeing `depth` bytes */
static void ecn_mark(uet_fab *f, port *p, packet *k, int64_t depth) {
    if ((k->flags & UET_FAB_F_ECT) && depth > p->kmin
        && (depth >= p->kmax
            || uet_rng_random(&f->rng) < 1.0 * (double)(depth - p->kmin) / (double)(p->kmax - p->kmin))) {
        k->flags |= UET_FAB_F_CE;
        p->ce_marked++;
    }
}

/* --- CSIG (uet/net/csig.py NET-G1 to NET-G3 with uet/cms/csig.py CMS-C2, CMS-C3) --- */
enum { ABW = 0, ABW_C = 1, DELAY = 2, NQD = 3, TOP = 31 };

/* NET-G1: the busy-fraction average brought up to now (utilisation()) */
static void measure(port *p, double now) {
    if (!(now > p->u_since)) return;
    double u = p->util, since = p->u_since, end = p->tx_end;
    end = end > since ? end : since;
    end = end < now ? end : now;
    if (end > since) u = 1.0 - (1.0 - u) * exp((since - end) / p->interval);
    if (now > end) u *= exp((end - now) / p->interval);
    p->util = u;
    p->u_since = now;
}

/* CMS-C2 Scale.bucket */
static int32_t bucket_of(double v) {
    if (!(v > 0)) return 0;
    return v >= TOP ? TOP : (int32_t)v;
}

/* NET-S5 Port.csig_bucket for a packet departing at now */
static int32_t csig_bucket(port *p, const packet *k, double now) {
    switch (p->csig_t) {
    case DELAY:
        return bucket_of((now - k->enq) / p->delay_unit);
    case NQD:
        return bucket_of((double)TOP * ((double)p->qbytes / (double)p->cap));
    default: {
        measure(p, now);
        double cap = p->Bps * 8e-9, abw = cap * (1.0 - p->util);
        if (p->csig_t == ABW) return bucket_of((double)TOP * abw / p->abw_full);
        return bucket_of(cap > 0 ? (double)TOP * abw / cap : 0.0);
    }
    }
}

/* NET-G2: CMS-C3 compare and replace (a tag with d set stays) */
static void stamp(port *p, packet *k, double now) {
    int32_t bits = k->csig, b = csig_bucket(p, k, now), out = bits;
    if (!(bits & 2)) {
        int32_t t = (bits >> 14) & 3, s = (bits >> 9) & 31;
        int worse = (t == ABW || t == ABW_C) ? b < s : b > s;
        if (worse) out = (bits & ~((31 << 9) | (127 << 2))) | ((b & 31) << 9) | ((p->csig_lm & 127) << 2);
    }
    p->csig_stamped++;
    if (out != bits) p->csig_replaced++;
    k->csig = out;
}

static int64_t frame_len(const port *p, const packet *k) {
    return (k->flags & UET_FAB_F_TRIMMED) ? p->keep : k->len;
}

/* NET-S1, NET-S2 (Port.enqueue): 1 queued, 0 dropped, < 0 an error */
static int enqueue(uet_fab *f, int32_t pi, int64_t slot, double now) {
    port *p = &f->p[pi];
    packet *k = &f->pool[slot];
    int64_t n = frame_len(p, k);
    if (k->flags & (UET_FAB_F_CONTROL | UET_FAB_F_TRIMMED)) {
        if (p->pbytes + n > p->pcap) {
            p->dropped++;
            return 0;
        }
        p->pbytes += n;
        return fifo_push(&p->prio, slot) < 0 ? UET_FAB_NOMEM : 1;
    }
    if (p->qbytes + n <= p->cap) {
        account(p, now);
        if (p->mark_in) ecn_mark(f, p, k, p->qbytes);  /* NET-N2 "enqueue" */
        k->enq = now;
        if (fifo_push(&p->data, slot) < 0) return UET_FAB_NOMEM;
        p->qbytes += n;
        if (p->qbytes > p->max_qbytes) p->max_qbytes = p->qbytes;
        return 1;
    }
    int64_t keep = p->keep;
    if (p->trimming && n > keep && p->pbytes + keep <= p->pcap) {  /* NET-N3 */
        if (p->data.n && p->victim_either && uet_rng_random(&f->rng) < 0.5) {  /* NET-N4 */
            int64_t *lastp = fifo_last(&p->data);
            packet *last = &f->pool[*lastp];
            int64_t m = last->len;
            if (m > keep && p->qbytes - m + n <= p->cap) {  /* E.6: trim the last queued */
                account(p, now);
                if (p->mark_in) ecn_mark(f, p, k, p->qbytes - m);
                k->enq = now;
                int64_t victim = *lastp;
                *lastp = slot;
                p->qbytes += n - m;
                if (p->qbytes > p->max_qbytes) p->max_qbytes = p->qbytes;
                slot = victim;
                k = last;
            }
        }
        k->flags |= UET_FAB_F_TRIMMED;
        p->trimmed++;
        if (k->csig >= 0 && p->csig_t >= 0) {  /* NET-S6, NET-G3: d set, counted when new */
            if (!(k->csig & 2)) p->csig_d_set++;
            k->csig |= 2;
        }
        p->pbytes += keep;
        return fifo_push(&p->prio, slot) < 0 ? UET_FAB_NOMEM : 1;
    }
    p->dropped++;
    return 0;
}

/* NET-S1, NET-S3, NET-S4 (Port.start) and uet/sim/fabric.py _transmit: the next packet onto the
 * link, its arrival at the peer `delay` after it is sent, the port free again when it is sent */
static int transmit(uet_fab *f, int32_t pi, double now) {
    port *p = &f->p[pi];
    for (;;) {
        int64_t slot, n, depth = -1;  /* depth: the data queue's, for ECN on dequeue */
        if (p->prio.n) {
            slot = fifo_pop(&p->prio);
            n = frame_len(p, &f->pool[slot]);
            p->pbytes -= n;
        } else if (p->data.n) {
            slot = fifo_pop(&p->data);
            n = f->pool[slot].len;
            account(p, now);
            depth = p->qbytes;
            p->qbytes -= n;
        } else {
            p->busy = 0;
            return UET_FAB_OK;
        }
        if (now >= p->fail_at) {  /* a failed port drops what it would send */
            p->dropped++;
            int rc = drop(f, now, pi, slot, 0);
            if (rc < 0) return rc;
            continue;
        }
        if (depth >= 0 && !p->mark_in)
            ecn_mark(f, p, &f->pool[slot], depth);  /* NET-N2 "dequeue" (E.6) */
        p->busy = 1;
        p->tx_packets++;
        p->tx_bytes += n;
        double done = now + (double)n / p->Bps;
        if (p->csig_t >= 0) {  /* NET-S5, NET-S6 */
            measure(p, now);
            p->tx_end = done;
            packet *k = &f->pool[slot];
            if (k->csig >= 0 && !(k->flags & UET_FAB_F_TRIMMED)) stamp(p, k, now);
        }
        int rc = log_rec(f, now, UET_FAB_LOG_TX, pi, &f->pool[slot]);
        if (rc == UET_FAB_OK)
            rc = push(f, done + p->delay, p->peer_is_host ? EV_HOST : EV_SWITCH, p->peer, slot);
        if (rc == UET_FAB_OK) rc = push(f, done, EV_FREE, pi, 0);
        return rc;
    }
}

/* uet/sim/fabric.py _at_switch: down toward the host, else ECMP over the up ports (NET-M2) */
static int at_switch(uet_fab *f, int32_t si, int64_t slot, double now) {
    sw *s = &f->s[si];
    packet *k = &f->pool[slot];
    if (!s->set) return UET_FAB_BAD_ARG;  /* a port leads to a switch never described */
    int32_t pi = s->down[k->dst];
    if (pi < 0) {
        if (s->nup == 0) return UET_FAB_BAD_ARG;  /* no route: a topology the builder refuses */
        uint32_t h = (k->key ^ s->salt) * 0x9E3779B1u;  /* HASH_MUL, modulo 2^32 */
        pi = s->up[(h >> 8) % (uint32_t)s->nup];
    }
    int rc = enqueue(f, pi, slot, now);
    if (rc < 0) return rc;
    if (rc == 0) return drop(f, now, pi, slot, 1);
    return f->p[pi].busy ? UET_FAB_OK : transmit(f, pi, now);
}

/* --- the API --- */
uet_fab *uet_fab_new(int32_t hosts, int32_t switches, int32_t ports, uint64_t seed,
                     int64_t max_events) {
    if (hosts <= 0 || switches < 0 || ports <= 0 || max_events <= 0) return NULL;
    uet_fab *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->hosts = hosts;
    f->switches = switches;
    f->ports = ports;
    f->max_events = max_events;
    f->nic = malloc((size_t)hosts * sizeof *f->nic);
    f->p = calloc((size_t)ports, sizeof *f->p);
    f->s = calloc(switches ? (size_t)switches : 1, sizeof *f->s);
    if (!f->nic || !f->p || !f->s) {
        uet_fab_free(f);
        return NULL;
    }
    for (int32_t i = 0; i < hosts; i++) f->nic[i] = -1;
    f->dropped.size = sizeof(int64_t);
    f->log.size = sizeof(uet_fab_log);
    uet_rng_seed(&f->rng, seed);  /* NET-R1 */
    return f;
}

void uet_fab_free(uet_fab *f) {
    if (!f) return;
    if (f->p)
        for (int32_t i = 0; i < f->ports; i++) {
            free(f->p[i].data.v);
            free(f->p[i].prio.v);
        }
    if (f->s)
        for (int32_t i = 0; i < f->switches; i++) {
            free(f->s[i].down);
            free(f->s[i].up);
        }
    free(f->nic);
    free(f->p);
    free(f->s);
    free(f->heap);
    free(f->pool);
    free(f->freelist);
    free(f->dropped.v);
    free(f->log.v);
    free(f);
}

int uet_fab_port(uet_fab *f, int32_t pi, double Bps, double delay, int64_t cap, int64_t kmin,
                 int64_t kmax, int64_t keep_frame, int32_t trimming, double fail_at,
                 int32_t mark_in, int32_t victim_either, int32_t peer_is_host, int32_t peer) {
    if (!f || pi < 0 || pi >= f->ports || !(Bps > 0) || !(delay >= 0) || cap < 0 || kmax <= kmin
        || keep_frame <= 0 || peer < 0 || peer >= (peer_is_host ? f->hosts : f->switches))
        return UET_FAB_BAD_ARG;
    port *p = &f->p[pi];
    p->Bps = Bps;
    p->delay = delay;
    p->cap = p->pcap = cap;  /* NET-S1: the priority queue as much again */
    p->kmin = kmin;
    p->kmax = kmax;
    p->keep = keep_frame;
    p->trimming = trimming != 0;
    p->fail_at = fail_at;
    p->mark_in = mark_in != 0;
    p->victim_either = victim_either != 0;
    p->peer_is_host = peer_is_host != 0;
    p->peer = peer;
    p->set = 1;
    p->csig_t = -1;
    return UET_FAB_OK;
}

int uet_fab_port_csig(uet_fab *f, int32_t pi, int32_t t, double abw_full_gbps,
                      double delay_unit_s, int32_t lm, double interval) {
    if (!f || pi < 0 || pi >= f->ports || !f->p[pi].set || t < -1 || t > NQD || lm < 0 || lm > 127
        || !(interval > 0) || !(abw_full_gbps > 0) || !(delay_unit_s > 0))
        return UET_FAB_BAD_ARG;
    port *p = &f->p[pi];
    p->csig_t = t;
    p->abw_full = abw_full_gbps;
    p->delay_unit = delay_unit_s;
    p->csig_lm = lm;
    p->interval = interval;
    return UET_FAB_OK;
}

int uet_fab_switch(uet_fab *f, int32_t si, uint32_t salt, const int32_t *down, const int32_t *up,
                   int32_t nup) {
    if (!f || si < 0 || si >= f->switches || nup < 0 || (nup && !up) || !down)
        return UET_FAB_BAD_ARG;
    /* every port it names is described already (uet_fab_port first) */
    for (int32_t i = 0; i < f->hosts; i++)
        if (down[i] < -1 || down[i] >= f->ports || (down[i] >= 0 && !f->p[down[i]].set))
            return UET_FAB_BAD_ARG;
    for (int32_t i = 0; i < nup; i++)
        if (up[i] < 0 || up[i] >= f->ports || !f->p[up[i]].set) return UET_FAB_BAD_ARG;
    sw *s = &f->s[si];
    free(s->down);
    free(s->up);
    s->down = malloc((size_t)f->hosts * sizeof *s->down);
    s->up = malloc((nup ? (size_t)nup : 1) * sizeof *s->up);
    if (!s->down || !s->up) return UET_FAB_NOMEM;
    memcpy(s->down, down, (size_t)f->hosts * sizeof *down);
    if (nup) memcpy(s->up, up, (size_t)nup * sizeof *up);
    s->nup = nup;
    s->salt = salt;
    s->set = 1;
    return UET_FAB_OK;
}

int uet_fab_nic(uet_fab *f, int32_t host, int32_t pi) {
    if (!f || host < 0 || host >= f->hosts || pi < 0 || pi >= f->ports || !f->p[pi].set)
        return UET_FAB_BAD_ARG;
    f->nic[host] = pi;
    return UET_FAB_OK;
}

int uet_fab_log_on(uet_fab *f, int32_t on) {
    if (!f) return UET_FAB_BAD_ARG;
    f->logging = on != 0;
    return UET_FAB_OK;
}

/* uet/sim/fabric.py _flush: every packet into the host's NIC, then the NIC starts if idle */
int uet_fab_inject(uet_fab *f, double now, int32_t host, const uet_fab_pkt *pkts, int32_t n) {
    if (!f || host < 0 || host >= f->hosts || f->nic[host] < 0 || n < 0 || (n && !pkts))
        return UET_FAB_BAD_ARG;
    for (int32_t i = 0; i < n; i++)  /* check all first: a refused batch changes nothing */
        if (pkts[i].len <= 0 || pkts[i].dst < 0 || pkts[i].dst >= f->hosts
            || (pkts[i].flags & ~(uint32_t)(UET_FAB_F_CONTROL | UET_FAB_F_ECT))
            || pkts[i].csig < -1 || pkts[i].csig > 0xFFFF)
            return UET_FAB_BAD_ARG;
    int32_t pi = f->nic[host];
    for (int32_t i = 0; i < n; i++) {
        int64_t slot = pkt_new(f);
        if (slot < 0) return (int)slot;
        packet *k = &f->pool[slot];
        k->id = pkts[i].id;
        k->len = pkts[i].len;
        k->dst = pkts[i].dst;
        k->key = pkts[i].key;
        k->flags = pkts[i].flags;
        k->csig = pkts[i].csig;
        k->enq = 0.0;
        int rc = enqueue(f, pi, slot, now);
        if (rc < 0) return rc;
        if (rc == 0) {
            rc = drop(f, now, pi, slot, 0);
            if (rc < 0) return rc;
        }
    }
    return f->p[pi].busy ? UET_FAB_OK : transmit(f, pi, now);
}

int uet_fab_push_py(uet_fab *f, double t, int64_t id) {
    if (!f || !(t >= f->now)) return UET_FAB_BAD_ARG;  /* also refuses NaN */
    return push(f, t, EV_PY, 0, id);
}

/* The events in order until a Python event is due (reported last) or packets reached hosts
 * (reported together while the next event is another delivery at the same time: whatever the
 * hosts do about them comes after in (t, seq) order, as in the Python model), or the next event
 * is after `limit`. Returns the records written, or an error. */
int64_t uet_fab_run(uet_fab *f, double limit, uet_fab_out *out, int64_t max) {
    if (!f || !out || max <= 0) return UET_FAB_BAD_ARG;
    int64_t n = 0;
    while (f->nheap && n < max) {
        const event *top = &f->heap[0];
        if (top->t > limit) break;
        if (n && !(top->kind == EV_HOST && top->t == out[n - 1].t)) break;
        event e = pop(f);
        f->now = e.t;
        int rc = UET_FAB_OK;
        switch (e.kind) {
        case EV_PY:
            out[n++] = (uet_fab_out){e.t, e.b, -1, UET_FAB_PY, 0, -1};
            return n;
        case EV_HOST: {
            packet *k = &f->pool[e.b];  /* logged by the driver as it hands it to the host */
            out[n++] = (uet_fab_out){e.t, k->id, e.a, UET_FAB_DELIVER,
                                     k->flags & (UET_FAB_F_TRIMMED | UET_FAB_F_CE), k->csig};
            pkt_free(f, e.b);
            break;
        }
        case EV_SWITCH:
            rc = at_switch(f, e.a, e.b, e.t);
            break;
        default:
            rc = transmit(f, e.a, e.t);
        }
        if (rc < 0) return rc;
    }
    return n;
}

int64_t uet_fab_drain_dropped(uet_fab *f, int64_t *out, int64_t max) {
    if (!f || (max > 0 && !out)) return UET_FAB_BAD_ARG;
    return vec_drain(&f->dropped, out, max);
}

int64_t uet_fab_drain_log(uet_fab *f, uet_fab_log *out, int64_t max) {
    if (!f || (max > 0 && !out)) return UET_FAB_BAD_ARG;
    return vec_drain(&f->log, out, max);
}

int64_t uet_fab_pending(const uet_fab *f) { return f ? f->nheap : UET_FAB_BAD_ARG; }

double uet_fab_now(const uet_fab *f) { return f ? f->now : 0.0; }

int uet_fab_port_stats(const uet_fab *f, int32_t pi, uet_fab_stats *o) {
    if (!f || !o || pi < 0 || pi >= f->ports) return UET_FAB_BAD_ARG;
    const port *p = &f->p[pi];
    *o = (uet_fab_stats){p->tx_packets, p->tx_bytes, p->trimmed, p->dropped, p->ce_marked,
                         p->max_qbytes, p->qbytes, p->q_area, p->q_since,
                         p->csig_stamped, p->csig_replaced, p->csig_d_set};
    return UET_FAB_OK;
}

int uet_fab_port_busy(const uet_fab *f, int32_t pi) {
    if (!f || pi < 0 || pi >= f->ports) return UET_FAB_BAD_ARG;
    return f->p[pi].busy;
}

void uet_fab_rng_fill(uint64_t seed, uint64_t *out, int64_t n) {
    uet_rng r;
    uet_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) out[i] = uet_rng_next(&r);
}
