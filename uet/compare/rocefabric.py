"""The RoCE fabric of ``uet compare``: the ``roce`` design (RC queue pairs with go-back-N, ECMP by
5-tuple, DCQCN on ECN, PFC) and the ``adaptive`` design (the same NICs with out-of-order placement,
switches that route each packet to the shortest up queue), in virtual time, on the topology
(uet.net.topology), flows and seed the UET design gets. Real frames on every link: RoCEv2 frames
from uet.roce.qp (the ICRC verified at the receiver). PFC frames (uet.roce.pfc.pause_frame, real
802.1Qbb MAC control frames from the pausing switch's MAC) are timed as 64-byte frames on the
reverse link and written to ``--pcap`` when they are sent, which ``uet decode`` shows as ``pfc``.

Rules (numbered, besides those of uet.roce.qp ROCE-Q1 to ROCE-Q9, uet.roce.dcqcn ROCE-D1 to ROCE-D4, uet.roce.pfc ROCE-P1 to ROCE-P6
and uet.compare.ports COMPARE-R1 to COMPARE-R6):

  COMPARE-F1  one QP pair per flow, started at the flow's start time; the sending NIC holds at most one
      data packet in its queue and picks the next among its QPs round-robin, each QP when its
      DCQCN pacing allows (ROCE-Q9); what is in the control class goes ahead (COMPARE-R1, COMPARE-F6).
  COMPARE-F2  the link rate, delay, buffer (one BDP of the longest unloaded RTT, as the UET design's:
      uet.sim.fabric) and degraded links are the UET design's. With PFC on, the data buffer of
      a switch port is unbounded (a shared buffer that the XOFF thresholds keep from filling, ROCE-P6).
  COMPARE-F3  PFC: every switch ingress counts what it holds (ROCE-P1) and pauses the port upstream of it -
      a switch port or a host's NIC - one link delay after its threshold crossing (P2-P4).
      A flow is "paused" when one of its data packets waits in a paused queue or its NIC is
      paused while it has data to send; that is counted per flow.
  COMPARE-F4  the run ends when every flow's message is acknowledged, at the time bound, or when no frame
      reached a host for ``stall_s`` while flows were open (a PFC deadlock or a flow that
      cannot finish): then the result says so, with the time it stopped.
  COMPARE-F5  the series: every ``bin_s``, the bytes that left the switches towards hosts (the same
      definition as the UET design's series) and each switch port's data queue.
  COMPARE-F6  classes: ``op`` ("write" or "send", uet.roce.qp ROCE-Q1) is every QP's operation. CNPs travel in
      their own high class (DSCP 48), never paused: NVIDIA's NICs send them on ``cnp_dscp`` 48 /
      ``cnp_802p_prio`` 6 by default (their DCQCN settings), so that a CNP is not stuck behind
      the congestion it reports.
      ACKs and NAKs (``ack_class``): "same" (the default) sends them in the QP's own class, the
      lossless one: a responder builds them from its QP's address vector, whose traffic class is
      the QP's (Linux rxe: prepare_ack_packet uses qp->pri_av; no NIC we know has a separate ACK
      class knob, only the CNP one), so they count against PFC (ROCE-P1) and can be paused (ROCE-P5);
      "high" puts them in the CNP's class, as a fabric that classifies them apart would.
"""

from __future__ import annotations

import heapq
import random
import time
from typing import Any, Callable

from ..net.ecmp import five_tuple_key, switch_salts
from ..net.topology import Topology, build, parse_topology
from ..payload import seeded_bytes
from ..roce.dcqcn import INF, DcqcnParams
from ..roce.pfc import PFC_FRAME_BYTES, PfcIngress, PfcParams, headroom_bytes, pause_frame
from ..roce.qp import (CNP_DSCP, DATA_DSCP, DATA_OPS, OP_ACK, OP_CNP, OPCODES, SYN_NAK_PSN,
                       Framer, QpReceiver, QpSender, parse, timeout_for)
from ..sim.fabric import host_address
from ..sim.frames import PcapWriter, set_ce
from ..sim.metrics import fct_summary
from ..sim.traffic import Flow
from .ports import CPort, Pkt, adaptive_port, ecmp_port

ACK_CLASSES = ("same", "high")  # COMPARE-F6


class _Host:
    __slots__ = ("idx", "addr", "framer", "nic", "senders", "by_qpn", "receivers", "rr", "sched",
                 "wake")

    def __init__(self, idx: int):
        self.idx = idx
        self.addr = host_address(idx)
        self.framer = Framer(self.addr)
        self.nic: CPort | None = None
        self.senders: list[tuple[int, QpSender]] = []   # (flow, QP)
        self.by_qpn: dict[int, tuple[int, QpSender]] = {}
        self.receivers: dict[int, QpReceiver] = {}
        self.rr = 0
        self.sched = INF   # the timer event scheduled for this host
        self.wake = INF    # the pacing wake-up scheduled


class _Switch:
    __slots__ = ("name", "down", "up", "salt", "ingress")

    def __init__(self, name: str, salt: int):
        self.name = name
        self.down: dict[int, CPort] = {}
        self.up: list[CPort] = []
        self.salt = salt
        self.ingress: list[PfcIngress] = []


class RoceFabric:
    """One run of the ``roce`` or ``adaptive`` design; :meth:`run` returns its result dict."""

    def __init__(self, *, topology: str, flows: list[Flow], design: str = "roce", pfc: bool = True,
                 seed: int = 1, rate_gbps: float = 100.0, link_delay_us: float = 1.0,
                 mtu: int = 4096, buffer_bytes: int, degrade: list[tuple[str, str, float]] = (),  # type: ignore[assignment]
                 time_limit_s: float = 0.05, bin_s: float = 5e-6, stall_s: float = 2e-3,
                 dcqcn: DcqcnParams | None = None, pfc_params: PfcParams | None = None,
                 ecn: tuple[int, int, float] = (10_000, 100_000, 0.01), ack_every: int = 8,
                 timeout_exp: int = 8, pcap: Any = None, op: str = "write",
                 ack_class: str = "same"):
        if design not in ("roce", "adaptive"):
            raise ValueError(f"design {design!r}: roce or adaptive")
        if op not in OPCODES or ack_class not in ACK_CLASSES:
            raise ValueError(f"op {op!r} (write, send), ack class {ack_class!r} (same, high)")
        self.op = op
        self.ack_dscp = DATA_DSCP if ack_class == "same" else CNP_DSCP  # COMPARE-F6
        self.acks_paused = 0
        self.design, self.pfc, self.seed = design, pfc, seed
        self.topo: Topology = build(*parse_topology(topology))
        self.flows = flows
        self.rate = rate_gbps * 1e9
        self.delay = link_delay_us * 1e-6
        self.mtu = mtu
        self.buffer = buffer_bytes
        self.limit, self.bin_s, self.stall_s = time_limit_s, bin_s, stall_s
        self.dcqcn = dcqcn or DcqcnParams()
        self.pfc_params = pfc_params or PfcParams()
        self.kmin, self.kmax, self.pmax = ecn  # COMPARE-R3, G.7's example set
        self.ack_every = ack_every
        self.timeout_s = timeout_for(timeout_exp)
        self.rng = random.Random(seed ^ 0x50CE)
        self.pcap = PcapWriter(pcap) if pcap is not None else None
        self.heap: list = []
        self.seq = 0
        self.now = 0.0
        self.hosts = [_Host(i) for i in range(self.topo.hosts)]
        self.addr_index = {h.addr: h.idx for h in self.hosts}
        self.ports: list[CPort] = []  # switch ports
        self._build(degrade)
        self.fct: list[float | None] = [None] * len(flows)
        self.flow_paused = [0] * len(flows)
        self.flow_uplinks: list[set[str]] = [set() for _ in flows]
        self.last_arrival = self.last_start = 0.0
        self.stalled = False
        self.open = len(flows)
        self.series_t: list[float] = []
        self.series_bytes: list[int] = []
        self.series_q: dict[str, list[int]] = {p.name: [] for p in self.ports}

    # --- building -------------------------------------------------------------------------------
    def _build(self, degrade: list[tuple[str, str, float]]) -> None:
        topo = self.topo
        frac = {}
        for a, b, f in degrade:
            frac[(a, b)] = frac[(b, a)] = f
        self.switches = {n: _Switch(n, s) for n, s in switch_salts(self.seed, topo.switches).items()}
        cap = self.buffer if not self.pfc else 1 << 40  # COMPARE-F2
        hr = headroom_bytes(self.rate, self.delay, self.mtu + 100)
        self.headroom = hr

        def node(name: str) -> Any:
            return self.hosts[int(name[1:])] if name[0] == "h" else self.switches[name]

        def port(a: str, b: str, *, nic: bool = False) -> CPort:
            peer = node(b)
            p = CPort(f"{a}->{b}", peer, rate_bps=self.rate * frac.get((a, b), 1.0),
                      delay=self.delay, buffer_bytes=1 << 40 if nic else cap, kmin=self.kmin,
                      kmax=self.kmax, pmax=self.pmax, rng=self.rng, to_host=b[0] == "h")
            if self.pfc and b[0] != "h":  # P1: the peer switch counts what this port sends it
                ing = PfcIngress(self.pfc_params)
                p.peer_ingress = ing
                peer.ingress.append(ing)
            if not nic:
                self.ports.append(p)
            return p

        for name, sw in self.switches.items():
            below: dict[str, CPort] = {}
            for h, nb in topo.down[name].items():
                if nb not in below:
                    below[nb] = port(name, nb)
                sw.down[h] = below[nb]
            sw.up = [port(name, nb) for nb in topo.up[name]]
        for h in self.hosts:
            h.nic = port(f"h{h.idx}", topo.attach[h.idx], nic=True)

    # --- events ---------------------------------------------------------------------------------
    def _push(self, t: float, action: Callable, a: Any, b: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, action, a, b))

    def _transmit(self, port: CPort, now: float) -> None:
        if port.busy:
            return
        host = self._nic_of.get(port)
        if host is not None:
            self._pull(host, now)
        r = port.start(now)
        if r is None:
            if port.data and port.gate.until > now and port.wake != port.gate.until:
                port.wake = port.gate.until  # ROCE-P5: wake when the pause runs out
                self._push(port.gate.until, self._port_wake, port)
            return
        pkt, done = r
        ing = pkt.ingress
        if ing is not None:  # P1: it leaves the switch that counted it
            pkt.ingress = None
            q = ing.remove(pkt.size, now)
            if q is not None:
                self._send_pause(ing, q, now)
        peer = port.peer
        self._push(done + port.delay, self._at_host if type(peer) is _Host else self._at_switch,
                   peer, (pkt, port))
        self._push(done, self._port_free, port)

    def _port_free(self, now: float, port: CPort, _: Any) -> None:
        """The link finished its packet (COMPARE-R4)."""
        port.busy = False
        self._transmit(port, now)

    def _port_wake(self, now: float, port: CPort, _: Any) -> None:
        """A pause ran out (ROCE-P5); the port may be busy again by then (an XON came first)."""
        if port.wake <= now:
            port.wake = INF
        self._transmit(port, now)

    def _at_switch(self, now: float, sw: _Switch, arg: tuple[Pkt, CPort]) -> None:
        pkt, came = arg
        if not pkt.control and came.peer_ingress is not None:  # P1, P2
            pkt.ingress = came.peer_ingress
            q = pkt.ingress.add(pkt.size, now)
            if q is not None:
                self._send_pause(pkt.ingress, q, now)
        out = sw.down.get(pkt.dst)
        if out is None:
            out = (adaptive_port(sw.up, now, self.rng) if self.design == "adaptive"
                   else ecmp_port(sw.up, pkt.key, sw.salt))
            if pkt.flow >= 0:  # data (an ACK in the data class has no flow of its own)
                self.flow_uplinks[pkt.flow].add(out.name)
        if not out.enqueue(pkt):
            if pkt.ingress is not None:
                q = pkt.ingress.remove(pkt.size, now)
                pkt.ingress = None
                if q is not None:
                    self._send_pause(came.peer_ingress, q, now)
            return
        if not pkt.control and out.gate.paused(now):
            self._mark_paused(pkt.flow)
        self._transmit(out, now)

    # --- PFC (COMPARE-F3) -------------------------------------------------------------------------------
    def _send_pause(self, ing: PfcIngress, quanta: int, now: float) -> None:
        port = self._upstream[id(ing)]
        if self.pcap is not None:
            self.pcap.write(now, pause_frame(ing.p.priority, quanta, self._ing_mac[id(ing)]))
        self._push(now + PFC_FRAME_BYTES / port.Bps + port.delay, self._pause_arrives, port,
                   quanta)
        if quanta:
            self._push(now + quanta * 512 / port.rate_bps / 2, self._refresh, ing)

    def _refresh(self, now: float, ing: PfcIngress, _: Any) -> None:
        port = self._upstream[id(ing)]
        q = ing.refresh(now, port.rate_bps)  # P4
        if q is not None:
            self._send_pause(ing, q, now)

    def _pause_arrives(self, now: float, port: CPort, quanta: int) -> None:
        port.gate.receive(quanta, now, port.rate_bps)
        if quanta:
            for pkt in port.data:
                self._mark_paused(pkt.flow)
            host = self._nic_of.get(port)
            if host is not None:
                for flow, qp in host.senders:
                    if qp.wants():
                        self._mark_paused(flow)
        else:
            self._transmit(port, now)

    def _mark_paused(self, flow: int) -> None:
        if flow >= 0:
            self.flow_paused[flow] += 1
        else:  # COMPARE-F6: an ACK or NAK in the lossless class waits in a paused queue
            self.acks_paused += 1

    # --- hosts ----------------------------------------------------------------------------------
    def _send_frame(self, host: _Host, frame: bytes, flow: int, now: float) -> None:
        dst = self.addr_index[_dst_of(frame)]
        control = frame[15] >> 2 != DATA_DSCP
        pkt = Pkt(frame, dst, five_tuple_key(frame), control, (frame[15] & 3) in (1, 2), flow)
        if self.pcap is not None:
            self.pcap.write(now, frame)
        host.nic.enqueue(pkt)  # type: ignore[union-attr]
        if flow < 0 and not control and host.nic.gate.paused(now):  # type: ignore[union-attr]
            self._mark_paused(flow)  # COMPARE-F6: an ACK queued behind a paused NIC

    def _pull(self, host: _Host, now: float) -> None:
        """COMPARE-F1: one data packet into the NIC, from the next QP that may send."""
        nic = host.nic
        if nic.data or nic.gate.paused(now):  # type: ignore[union-attr]
            return
        n = len(host.senders)
        soonest = INF
        for k in range(n):
            flow, qp = host.senders[(host.rr + k) % n]
            if not qp.wants():
                continue
            if now >= qp.next_time:
                host.rr = (host.rr + k + 1) % n
                self._send_frame(host, qp.next_frame(now), flow, now)
                self._arm(host, now)
                return
            soonest = min(soonest, qp.next_time)
        if soonest < host.wake:
            host.wake = soonest
            self._push(soonest, self._wake, host)

    def _wake(self, now: float, host: _Host, _: Any) -> None:
        if host.wake <= now:
            host.wake = INF
        self._transmit(host.nic, now)  # type: ignore[arg-type]

    def _arm(self, host: _Host, now: float) -> None:
        t = min((qp.next_timer() for _, qp in host.senders), default=INF)
        if t < host.sched:
            host.sched = t = max(t, now)
            self._push(t, self._timer, host)

    def _timer(self, now: float, host: _Host, _: Any) -> None:
        if now != host.sched:
            return
        host.sched = INF
        for _, qp in host.senders:
            if qp.next_timer() <= now:
                qp.on_timer(now)
        self._arm(host, now)
        self._transmit(host.nic, now)  # type: ignore[arg-type]

    def _at_host(self, now: float, host: _Host, arg: tuple[Pkt, CPort]) -> None:
        pkt = arg[0]
        frame = pkt.frame
        self.last_arrival = now
        if pkt.ce:
            frame = set_ce(frame)  # the ICRC masks the TOS byte (G.6): it still verifies
            if self.pcap is not None:
                self.pcap.write(now, frame)
        op, qpn, psn, _, syn = parse(frame)
        if op in DATA_OPS:
            rx = host.receivers.get(qpn)
            if rx is not None:
                for f in rx.on_data(frame, now):
                    self._send_frame(host, f, -1, now)
        else:
            entry = host.by_qpn.get(qpn)
            if entry is not None:
                flow, qp = entry
                if op == OP_CNP:
                    qp.on_cnp(now)
                elif op == OP_ACK:
                    if syn == SYN_NAK_PSN:
                        qp.on_nak(psn, now)
                    else:
                        qp.on_ack(psn, now)
                    if qp.done_at is not None and self.fct[flow] is None:
                        self.fct[flow] = now - self.flows[flow].start_s
                        self.open -= 1
                self._arm(host, now)
        self._transmit(host.nic, now)  # type: ignore[arg-type]

    def _start_flow(self, now: float, i: int, _: Any) -> None:
        f = self.flows[i]
        self.last_start = now
        src, dst = self.hosts[f.src], self.hosts[f.dst]
        qpn, peer_qpn = 0x100 + 2 * i, 0x101 + 2 * i
        sport = 49152 + self.rng.randrange(16384)  # ROCE-Q3: one source port per QP, seeded
        psn0 = self.rng.randrange(1 << 24)
        off = (i * 4099) % self._spread
        qp = QpSender(qpn=qpn, dest_qpn=peer_qpn, src=src.addr, dst=dst.addr, sport=sport,
                      payload=self._stream[off:off + f.bytes], mtu=self.mtu, psn0=psn0,
                      framer=src.framer, line_rate_bps=self.rate, timeout_s=self.timeout_s,
                      dcqcn=self.dcqcn, op=self.op)
        dst.receivers[peer_qpn] = QpReceiver(
            qpn=peer_qpn, peer_qpn=qpn, src=dst.addr, dst=src.addr, sport=sport, psn0=psn0,
            nbytes=f.bytes, mtu=self.mtu, framer=dst.framer, ooo=self.design == "adaptive",
            ack_every=self.ack_every, cnp_interval_s=self.dcqcn.cnp_interval_s,
            ack_dscp=self.ack_dscp, op=self.op)
        src.senders.append((i, qp))
        src.by_qpn[qpn] = (i, qp)
        self._transmit(src.nic, now)  # type: ignore[arg-type]

    def _sample(self, now: float, *_: Any) -> None:
        """COMPARE-F5, and COMPARE-F4's stall check."""
        self.series_t.append(now)
        self.series_bytes.append(sum(p.tx_bytes for p in self.ports if p.to_host))
        for p in self.ports:
            self.series_q[p.name].append(p.qbytes)
        if self.open > 0:
            self._push(now + self.bin_s, self._sample, None)
            # COMPARE-F4: nothing reached a host for stall_s since the last arrival or flow start
            if now - max(self.last_arrival, self.last_start) > self.stall_s:
                self.stalled = True

    # --- run ------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        wall0 = time.perf_counter()
        self._nic_of = {h.nic: h for h in self.hosts}
        self._upstream = {id(p.peer_ingress): p for p in self.ports + [h.nic for h in self.hosts]
                          if p.peer_ingress is not None}
        # the source MAC of a switch's PFC frames: locally administered, the switch's index
        self._ing_mac = {id(i): bytes((2, 0, 0, 0xFC, k >> 8 & 0xFF, k & 0xFF))
                         for k, sw in enumerate(self.switches.values()) for i in sw.ingress}
        self._spread = 1 << 16
        self._stream = seeded_bytes(self.seed ^ 0x5EED, max(f.bytes for f in self.flows)
                                    + self._spread)
        for i, f in enumerate(self.flows):
            self._push(f.start_s, self._start_flow, i)
        self._push(0.0, self._sample, None)
        status, heap, pop = "ok", self.heap, heapq.heappop
        while heap and self.open > 0:
            t, _, action, a, b = pop(heap)
            if t > self.limit:
                status = "time-limit"
                break
            if self.stalled:
                status = "stalled"
                break
            self.now = t
            action(t, a, b)
        else:
            if self.open > 0:
                status = "stalled"
        self._sample(self.now)
        return self._result(status, time.perf_counter() - wall0)

    def _result(self, status: str, wall: float) -> dict[str, Any]:
        senders = [qp for h in self.hosts for _, qp in h.senders]
        receivers = [rx for h in self.hosts for rx in h.receivers.values()]
        allports = self.ports + [h.nic for h in self.hosts]
        ingress = [i for sw in self.switches.values() for i in sw.ingress]
        # ROCE-P5 per switch: the PFC frames it sent and the time its own ports spent paused; the
        # hosts' NICs under "hosts"
        per_switch = {n: {"pause_frames": sum(i.frames for i in sw.ingress),
                          "xon_frames": sum(i.xon_frames for i in sw.ingress),
                          "paused_time_s": sum(p.gate.total(self.now) for p in self.ports
                                               if p.name.startswith(n + "->"))}
                      for n, sw in self.switches.items()}
        per_switch["hosts"] = {"pause_frames": 0, "xon_frames": 0,
                               "paused_time_s": sum(h.nic.gate.total(self.now)  # type: ignore[union-attr]
                                                    for h in self.hosts)}
        busiest = max(self.ports, key=lambda p: p.max_qbytes) if self.ports else None
        return {
            "design": self.design, "status": status, "stopped_at_s": self.now,
            "pfc": self.pfc,
            "fct": list(zip(self.flows, self.fct)),
            "drops": sum(p.dropped for p in allports),
            "trims": 0,
            "retx_bytes": sum(q.retx_bytes for q in senders),
            "pause_frames": sum(i.frames for i in ingress),
            "xon_frames": sum(i.xon_frames for i in ingress),
            "paused_time_s": sum(p.gate.total(self.now) for p in allports),
            "max_queue_bytes": busiest.max_qbytes if busiest else 0,
            "max_queue_port": busiest.name if busiest else None,
            "ecn_marked": sum(p.ce_marked for p in allports),
            "cnps": sum(r.gate.sent for r in receivers),
            "naks": sum(r.naks for r in receivers),
            "timeouts": sum(q.timeouts for q in senders),
            "bad_icrc": sum(r.bad_icrc for r in receivers),
            "bad_opcode": sum(r.bad_opcode for r in receivers),
            "op": self.op, "ack_class": "same" if self.ack_dscp == DATA_DSCP else "high",
            "acks_paused": self.acks_paused,
            "pfc_headroom_bytes": self.headroom,
            "max_ingress_bytes": max((i.max_bytes for i in ingress), default=0),
            "per_switch": per_switch,
            "flow_paused": list(self.flow_paused),
            "flow_uplinks": [sorted(s) for s in self.flow_uplinks],
            "series": {"t": self.series_t, "bytes": self.series_bytes, "queues": self.series_q},
            "sim_time_s": self.now, "wall_time_s": wall,
        }


def _dst_of(frame: bytes) -> str:
    d = frame[30:34]
    return f"{d[0]}.{d[1]}.{d[2]}.{d[3]}"


def fct_rows(result: dict[str, Any]) -> dict[str, Any]:
    """uet.sim.metrics' FCT summary of a result's flows (no ideal: the table does not use it)."""
    return fct_summary(result["fct"], ideal_fct_s=0.0)
