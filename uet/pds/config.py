"""PDS configuration: :class:`PdsConfig`, every default naming its docs/facts.md row or saying it
is the project's choice, and the congestion control and entropy selector it builds by default
(the fixed window, :func:`uet.multipath.make_selector`). The per-datagram metadata the core
exchanges with its caller is :mod:`uet.pds.datagram`'s."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from .. import UET_UDP_PORT
from ..cms import CongestionControl, FixedWindow
from ..multipath import EntropySelector, make_selector
from ..multipath.reps import REPS_RECYCLE

def _default_cc(cfg: "PdsConfig") -> CongestionControl:
    return FixedWindow(cfg.window_bytes, cfg.mtu)


def _default_entropy(cfg: "PdsConfig", rng: random.Random) -> EntropySelector:
    return make_selector(cfg.spray, cfg.entropy_values, rng, reps_recycle=cfg.reps_recycle)


@dataclass
class PdsConfig:
    port: int = UET_UDP_PORT                  # A.1 / C.9 UDP_DEST_PORT
    mtu: int = 4096                           # payload bytes per request (docs/design-notes.md "Defaults")
    max_pdcs: int = 1024                      # PDC limit (initiator + target); then NO_PDC_AVAIL
    mpr: int = 8                              # C.2 / C.9 DEFAULT_MPR 8, units of 128 PSNs (H.1 #14)
    tx_range: int = 1024                      # C.2 local send range in PSNs
    ack_type: str = "ack_cc"                  # docs/design-notes.md: ACK_CC (NSCC state) by default; or "ack"
    ack_per_packet: bool = False              # C.9 ENB_ACK_PER_PKT
    ack_gen_trigger: int = 16384              # C.3 ACK_GEN_TRIGGER
    ack_gen_min_pkt_add: int = 1024           # C.3 ACK_GEN_MIN_PKT_ADD
    ack_on_ecn: bool = True                   # C.3 / C.9 ACK_ON_ECN
    rto_initial: float = 1e-3                 # C.9 RTO_INIT_TIMER 1 ms
    rto_adaptive: bool = True                 # project choice: srtt + 4 rttvar once sampled ...
    rto_min: float = 200e-6                   # ... but never below this (facts give no floor)
    rto_max: float = 0.5
    # PDS-I8 choice: once the peer has answered, the backoff's cap and the timeouts in a row before the
    # PDC is given up (None: rto_max, max_rto_retx); a live endpoint's span tens of seconds of
    # silence, so that a slow peer is not taken for gone
    rto_max_established: float | None = None
    max_rto_retx_established: int | None = None
    max_rto_retx: int = 5                     # C.5 / C.9 MAX_RTO_RETX_CNT (consecutive timeouts)
    nack_retx_time: float = 1e-3              # C.9 NACK_RETX_TIME: delay for resource NACKs
    max_nack_retx: int = 5                    # C.9 MAX_NACK_RETX_CNT per packet
    max_trim_retx: int = 1000                 # PDS-I10 choice: trim-driven resends per packet
    tail_loss_time: float | None = None       # C.9 TAIL_LOSS_TIME; None = 2 srtt (min tlp_min)
    tlp_min: float = 20e-6
    max_tail_loss_retx: int = 5               # C.9 MAX_TAIL_LOSS_RETX
    reorder_window: float = 0.25              # RACK-style reorder window, in units of min RTT ...
    reorder_window_max: float = 2.0           # ... grown on each detected spurious retransmission
    syn_psn_range: int = 4096                 # C.1: 12-bit psn_offset
    start_psn_lo: int = 1 << 16               # C.1: start PSN from [2^16, 2^31) like RP-PDS
    start_psn_hi: int = 1 << 31
    rod_buffer: bool = True                   # C.8 / H.2: ROD target buffers (RP); False: ROD_OOO
    close_msl: float = 10e-3                  # C.7: answer for one MSL after close
    target_idle_reap: float = 1.0             # choice (C.1 New_PDC_Time-like): at the PDC limit, a
                                              # new SYN first frees half-open target PDCs idle
                                              # this long (s) ...
    target_idle_reap_open: float = 30.0       # ... and established ones idle this long (choice:
                                              # a flood must not take a PDC quiet for a while)
    max_pdcs_per_peer: int = 256              # PDS-T3: PDCs one peer address may hold (NO_PDC_AVAIL)
    refusal_nack_rate: float = 1000.0         # PDS-T3: NO_PDC_AVAIL NACKs per second per peer (0: all)
    first_pdcid: int | None = None            # C.1: None = a seeded random start, so that two
                                              # endpoints on one address do not collide
    max_resource_retx: int = 21               # PDS-I10: resends after resource NACKs (NO_PDC_AVAIL ...),
    resource_backoff_max: float = 1.0         # each nack_retx_time x 2^k, at most this (s): ~12 s
                                              # in all, longer than the target's reaping times
    credit_scheduler_factory: Callable[["PdsConfig"], Any] | None = None  # PDS-Q5 to PDS-Q8 of
                                              # uet.pds.credit: RCCC's receiver side (E.2)
    csig: int | None = None                   # E.4: the CSIG signal type to reflect (uet.cms.csig
                                              # PDS-C1, C4; None: off, the project's extension)
    window_bytes: int = 1 << 20               # FixedWindow size
    spray: str = "rr"                         # rr | random | single | reps | oblivious
    entropy_values: int = 64
    reps_recycle: str = REPS_RECYCLE          # REPS MULTIPATH-R1 (E.6): "acked", the EV of every packet
                                              # an ACK without CE acknowledges; "echoed": htsim's
    cc_factory: Callable[["PdsConfig"], CongestionControl] = _default_cc
    entropy_factory: Callable[["PdsConfig", random.Random], EntropySelector] = _default_entropy
    seed: int = 0

    @property
    def rx_window(self) -> int:
        return max(1, self.mpr) * 128
