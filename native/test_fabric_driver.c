/* native/fabric.c under AddressSanitizer and UBSan (tests/native/test_fabric_sanitizers.py): a
 * small seeded scenario (four hosts on two leaves and two spines, an incast that fills a queue:
 * ECN, trims, ECMP, a failed link), then malformed input (unknown hosts and ports, zero and
 * negative lengths, unknown flags, NaN times, NULL pointers, a full heap). Prints "ok" when every
 * check held. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fabric.h"
#include "rng.h"

static int failures;
#define CHECK(c)                                                        \
    do {                                                                \
        if (!(c)) {                                                     \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);         \
            failures++;                                                 \
        }                                                               \
    } while (0)

enum { HOSTS = 4, LEAVES = 2, SPINES = 2 };
/* ports: 0-3 leaf->host (host i under leaf i/2), 4-7 leaf l -> spine s (4 + 2l + s),
 * 8-11 spine s -> leaf l (8 + 2s + l), 12-15 the hosts' NICs */

static uet_fab *build(int64_t max_events, double fail_at) {
    uet_fab *f = uet_fab_new(HOSTS, LEAVES + SPINES, 16, 42, max_events);
    if (!f) return NULL;
    const double Bps = 12.5e9, d = 1e-6;
    const double inf = INFINITY;
    for (int i = 0; i < 4; i++)
        CHECK(uet_fab_port(f, i, Bps, d, 20000, 4000, 16000, 300, 1, inf, 0, 1, 1, i) == 0);
    for (int l = 0; l < 2; l++)
        for (int s = 0; s < 2; s++) {
            CHECK(uet_fab_port(f, 4 + 2 * l + s, Bps, d, 20000, 4000, 16000, 300, 1,
                               (l == 0 && s == 1) ? fail_at : inf, 0, 1, 0, 2 + s) == 0);
            CHECK(uet_fab_port(f, 8 + 2 * s + l, Bps * 0.5, d, 20000, 4000, 16000, 300, 1, inf, 1,
                               0, 0, l) == 0);
        }
    for (int i = 0; i < 4; i++) {  /* NET-S5, NET-S6: CSIG on the leaves' and spines' up/down ports */
        CHECK(uet_fab_port_csig(f, 4 + i, 2, 100.0, 0.5e-6, i, 8e-6) == 0);
        CHECK(uet_fab_port_csig(f, 8 + i, 1, 100.0, 0.5e-6, 10 + i, 8e-6) == 0);
        CHECK(uet_fab_port_csig(f, i, 3, 100.0, 0.5e-6, 20 + i, 8e-6) == 0);
    }
    for (int h = 0; h < 4; h++) {
        CHECK(uet_fab_port(f, 12 + h, Bps, d, (int64_t)1 << 62, (int64_t)1 << 62,
                           ((int64_t)1 << 62) + 1, 300, 0, inf, 0, 1, 0, h / 2) == 0);
        CHECK(uet_fab_nic(f, h, 12 + h) == 0);
    }
    for (int l = 0; l < 2; l++) {
        int32_t down[HOSTS] = {-1, -1, -1, -1};
        down[2 * l] = 2 * l;
        down[2 * l + 1] = 2 * l + 1;
        int32_t up[2] = {4 + 2 * l, 5 + 2 * l};
        CHECK(uet_fab_switch(f, l, 0x1234u * (l + 1), down, up, 2) == 0);
    }
    for (int s = 0; s < 2; s++) {
        int32_t down[HOSTS] = {8 + 2 * s, 8 + 2 * s, 9 + 2 * s, 9 + 2 * s};
        CHECK(uet_fab_switch(f, 2 + s, 0x9876u * (s + 1), down, NULL, 0) == 0);
    }
    return f;
}

static void scenario(void) {
    uet_fab *f = build(1 << 20, 5e-6);
    CHECK(f != NULL);
    if (!f) return;
    CHECK(uet_fab_log_on(f, 1) == 0);
    uet_rng r;
    uet_rng_seed(&r, 7);
    int64_t injected = 0, delivered = 0, dropped = 0;
    uet_fab_out out[64];
    uet_fab_log lg[128];
    int64_t ids[128];
    for (int round = 0; round < 40; round++) {
        for (int h = 1; h < HOSTS; h++) {  /* an incast on host 0 and some traffic back */
            uet_fab_pkt p[8];
            for (int i = 0; i < 8; i++) {
                uint64_t w = uet_rng_next(&r);
                p[i] = (uet_fab_pkt){++injected, 200 + (int32_t)(w % 4000),
                                     (w >> 20) % 5 == 0 ? (h + 1) % HOSTS : 0, (uint32_t)(w >> 32),
                                     (uint32_t)((w >> 12) & 3), (w >> 40) % 3 ? -1 : 0x4000};
            }
            CHECK(uet_fab_inject(f, uet_fab_now(f), h, p, 8) == 0);
        }
        CHECK(uet_fab_push_py(f, uet_fab_now(f) + 1e-6, round) == 0);
        for (;;) {
            int64_t n = uet_fab_run(f, 1.0, out, 64);
            CHECK(n >= 0);
            if (n <= 0) break;
            for (int64_t i = 0; i < n; i++)
                if (out[i].kind == UET_FAB_DELIVER) {
                    delivered++;
                    CHECK(out[i].node >= 0 && out[i].node < HOSTS);
                } else if (out[i].kind == UET_FAB_PY) {
                    n = -1;  /* the next round */
                    break;
                }
            if (n < 0) break;
        }
        int64_t k;
        while ((k = uet_fab_drain_dropped(f, ids, 128)) > 0) dropped += k;
        while (uet_fab_drain_log(f, lg, 128) > 0) {
        }
    }
    int64_t n;
    while ((n = uet_fab_run(f, 1.0, out, 64)) > 0)  /* the rest */
        for (int64_t i = 0; i < n; i++) delivered += out[i].kind == UET_FAB_DELIVER;
    int64_t k;
    while ((k = uet_fab_drain_dropped(f, ids, 128)) > 0) dropped += k;
    uet_fab_stats st;
    int64_t trims = 0, marks = 0, stamped = 0, dset = 0;
    for (int i = 0; i < 16; i++) {
        CHECK(uet_fab_port_stats(f, i, &st) == 0);
        trims += st.trimmed;
        marks += st.ce_marked;
        stamped += st.csig_stamped;
        dset += st.csig_d_set;
        CHECK(st.qbytes == 0);
    }
    CHECK(uet_fab_pending(f) == 0);
    CHECK(trims > 0 && marks > 0 && dropped > 0 && stamped > 0 && dset > 0);
    CHECK(delivered + dropped == injected);  /* every packet arrives or is reported dropped */
    uet_fab_free(f);
}

static void malformed(void) {
    CHECK(uet_fab_new(0, 1, 1, 0, 10) == NULL);
    CHECK(uet_fab_new(1, -1, 1, 0, 10) == NULL);
    CHECK(uet_fab_new(1, 1, 0, 0, 10) == NULL);
    CHECK(uet_fab_new(1, 1, 1, 0, 0) == NULL);
    uet_fab *f = build(4, INFINITY);
    CHECK(f != NULL);
    if (!f) return;
    uet_fab_pkt ok = {1, 100, 1, 0, 0, -1};
    uet_fab_pkt bad[] = {{2, 0, 1, 0, 0, -1},   {3, -7, 1, 0, 0, -1}, {4, 100, 9, 0, 0, -1},
                         {5, 100, -1, 0, 0, -1}, {6, 100, 1, 0, 64, -1}, {7, 100, 1, 0, 0, -2},
                         {8, 100, 1, 0, 0, 0x10000}};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(uet_fab_inject(f, 0.0, 0, &bad[i], 1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_inject(f, 0.0, 4, &ok, 1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_inject(f, 0.0, -1, &ok, 1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_inject(f, 0.0, 0, NULL, 1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_inject(NULL, 0.0, 0, &ok, 1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_push_py(f, NAN, 1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port(f, 16, 1.0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port(f, 0, 0.0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port(f, 0, 1.0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 4) == UET_FAB_BAD_ARG);
    int32_t down[HOSTS] = {0, 1, 99, -1};
    CHECK(uet_fab_switch(f, 0, 0, down, NULL, 0) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_switch(f, 9, 0, down, NULL, 0) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_nic(f, 0, 16) == UET_FAB_BAD_ARG);
    {  /* ports and switches used before they are described */
        uet_fab *g = uet_fab_new(2, 1, 3, 0, 100);
        int32_t dn[2] = {0, 1};
        CHECK(uet_fab_nic(g, 0, 2) == UET_FAB_BAD_ARG);
        CHECK(uet_fab_switch(g, 0, 0, dn, NULL, 0) == UET_FAB_BAD_ARG);
        CHECK(uet_fab_port(g, 2, 1e9, 0, 100, 0, 1, 10, 0, INFINITY, 0, 0, 0, 0) == 0);
        CHECK(uet_fab_nic(g, 0, 2) == 0);
        uet_fab_pkt pk = {1, 100, 1, 0, 0, -1};
        CHECK(uet_fab_inject(g, 0.0, 0, &pk, 1) == 0);  /* toward switch 0, never described */
        uet_fab_out o[2];
        CHECK(uet_fab_run(g, 1.0, o, 2) == UET_FAB_BAD_ARG);
        uet_fab_free(g);
    }
    CHECK(uet_fab_port_csig(f, 0, 4, 100.0, 1e-6, 0, 1e-6) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port_csig(f, 0, 0, 100.0, 1e-6, 0, 0.0) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port_csig(f, 16, 0, 100.0, 1e-6, 0, 1e-6) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port_stats(f, 16, NULL) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_port_busy(f, -1) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_run(f, 1.0, NULL, 4) == UET_FAB_BAD_ARG);
    CHECK(uet_fab_drain_log(f, NULL, 4) == UET_FAB_BAD_ARG);
    /* a full heap: four events at most; each packet sent takes two */
    CHECK(uet_fab_push_py(f, 0.0, 1) == 0);
    CHECK(uet_fab_push_py(f, 0.0, 2) == 0);
    CHECK(uet_fab_push_py(f, 0.0, 3) == 0);
    CHECK(uet_fab_inject(f, 0.0, 0, &ok, 1) == UET_FAB_FULL);  /* its arrival fit, not the rest */
    CHECK(uet_fab_pending(f) == 4);
    CHECK(uet_fab_push_py(f, 0.0, 5) == UET_FAB_FULL);
    uet_fab_out out[8];
    CHECK(uet_fab_run(f, 1.0, out, 8) == 1 && out[0].kind == UET_FAB_PY && out[0].id == 1);
    CHECK(uet_fab_push_py(f, -1.0, 6) == UET_FAB_BAD_ARG);  /* before now */
    uet_fab_free(f);
    uet_fab_free(NULL);
}

int main(void) {
    scenario();
    malformed();
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
