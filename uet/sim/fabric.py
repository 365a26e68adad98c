"""The many-host simulated fabric (``uet sim --topology leafspine:... | fattree:...``): virtual
time, deterministic from a seed, every host a real :class:`uet.host.Host` exchanging real
Ethernet/IPv4/UDP frames through switches. No flow-level shortcut: each frame is queued, marked,
trimmed and forwarded hop by hop.

The pieces (each in its own module): the topology (:mod:`uet.net.topology`: nodes, links, up-down
routes), the ports (:mod:`uet.net.switch`: priority and data queues, store and forward), ECN and
trimming (:mod:`uet.net.ecn` NET-N1 to NET-N4: by default E.6's, on dequeue and either victim; ``ecn_point``
and ``trim_victim`` choose the others), ECMP (:mod:`uet.net.ecmp` NET-M2), the traffic
(:mod:`uet.sim.traffic`: incast, permutation, all-to-all, htsim matrices) and the flow metrics
(:mod:`uet.sim.metrics`). This module builds them and runs the events.

Defaults (issue 13, so that a bare command is the standard experiment): links of ``rate_gbps``
and ``link_delay_us`` (1 us) each way; a buffer of one BDP per switch port, where the BDP is
``rate`` x the longest unloaded RTT of the topology (:func:`unloaded_rtt`); ECN from 20% to 80%
of the buffer (E.6); trimming on, keeping ``trim_bytes`` (docs/design-notes.md: 256) of UDP payload; an ACK
every 16 KiB (C.3); NSCC (E.1) with REPS (E.5). A host's NIC is a port with an unbounded queue that
never marks or trims (a host does not trim its own packets).

ECMP (E.5): a switch with several up ports picks one by NET-M2 of :mod:`uet.net.ecmp` (a hash of the
frame's own 5-tuple, salted per switch), as every switch of every driver does.

CSIG (facts E.4; the tag and its rules CMS-C1 to CMS-C4 are uet.cms.csig's, the port's NET-S5 to NET-S6 switch.py's),
with ``csig`` set to a signal type's name (choices where the facts are silent):

  SIM-F1  every data request a host sends (DSCP not 46) carries a tag, starting at the neutral value
      (C3); ACKs, NACKs and control packets carry none: they report, they are not reported on
      (and CSIG steers the requests' paths, E.4, E.5). The tag is on the wire: its 4 bytes count
      in the queues and the link time.
  SIM-F2  every switch port stamps (NET-S6) with the fabric's one scale (CMS-C2: full scale ``csig_abw_gbps``,
      by default the link rate) and the switch's locator (its index in the topology mod 128); a
      host's NIC does not (E.4: the switches signal).
  SIM-F3  the receiving host gets the UDP payload as without CSIG and the tag's 16 bits beside it
      (``Host.receive_datagram(csig=)``); its PDS reflects them (CMS-C4) because the hosts are given
      ``PdsConfig.csig``; senders choose EVs with :func:`uet.multipath.csig_selector` around the
      ``spray`` policy (``csig_selector`` overrides its K-rule parameters). NSCC's CSIG variant
      (uet.cms.nscc CMS-V1 to CMS-V3) is on with ``nscc={"csig": True}``: not by default, so that a run
      with CSIG differs from one without only in the paths chosen. A pcap shows the tag as a
      real L2 tag (TPID ``csig_ethertype``): at send time with the neutral value, and again at
      arrival when a switch changed it.

Engines (uet.sim.cfabric SIM-E1, SIM-E2; ``fabric_engine``): the ports, links and forwarding run
either here on the uet.net objects ("python", the reference) or in C (``native/fabric.c``, "c",
the default when the C extension is built), both drawing from one uet.net.rng generator seeded
with the run's seed; a seeded run is the same run on either (tests/sim/test_fabric_engines.py
compares their event logs, :meth:`FabricSimulator.log_events`).

Events are ``(time, seq, action, a, b)`` in a heap; ``action(time, a, b)`` runs one. The run ends
when every flow is complete (its SEND's response came back) and was delivered intact (checked by
its digest, CRC-32C and CRC-32 of every byte: uet.native.digest), or at ``time_limit_s`` of
simulated time.

Memory (issue 29 item 3): the flows are views of one seeded stream as long as the longest flow
(the SES keeps a view of immutable bytes: uet.ses.initiator.frozen), and a receiver hashes a flow
as it lines up and keeps no copy (SES-M8), so a run holds the windows, not the flows.

Observers (``uet compare`` draws from them) use the public view only: :meth:`sample_every` puts a
periodic callback on the run's own heap, :meth:`port_view` and :attr:`open_flow_count` read the
switch ports and the flows without touching the event machinery.
"""

from __future__ import annotations

import heapq
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, NamedTuple

from ..cms import NsccParams
from ..cms.choice import pds_overrides
from ..cms.csig import CSIG_ETHERTYPE, TAG_LEN, TYPE_BY_NAME, TYPE_NAMES, Scale, neutral
from ..host import Host
from ..multipath import csig_selector, make_selector
from ..multipath.reps import REPS_RECYCLE
from ..net.ecn import ECN_POINT, TRIM_VICTIM
from ..net.ecmp import five_tuple_key, pick, switch_salts
from ..net.switch import CSIG_COUNTERS, CSIG_INTERVAL, Packet, Port
from ..net.rng import Rng
from ..net.topology import LinkError, Topology, build, parse_topology
from ..pds import DatagramMeta, PdsConfig
from ..pds import events as pev
from ..pds.datagram import DSCP_CONTROL, ECT0, ECT1
from ..pds.packets import REQUEST_SIZE
from ..ses import SesConfig
from ..ses import events as sev
from ..ses.packets import STD_SIZE
from ..native.digest import Digest
from ..payload import seeded_bytes
from ..wire.trailer import TRAILER_LEN
from .frames import HDRS, FrameCache, PcapWriter, insert_tag, set_ce, strip_tag, trim
from .metrics import fct_summary
from . import cfabric
from .progress import EVERY_EVENTS
from .summary import goodput_gbps, merge_nacks, transfer_summary
from .traffic import Flow, TrafficError, make_flows

INF = float("inf")
MAX_HELD_BYTES = 4 << 30  # as uet.cliargs.MAX_HELD_BYTES: the longest flow's bytes are held
ACK_FRAME = HDRS + 32 + TRAILER_LEN  # an ACK_CC (B.8) on the wire


@dataclass
class FabricSimConfig:
    topology: str = "leafspine:17,1,1"
    traffic: tuple[str, Any] = ("incast", 8)
    flow_bytes: int = 2 << 20
    mtu: int = 4096
    mode: str = "rud"
    rate_gbps: float = 100.0
    link_delay_us: float = 1.0               # one way, per link
    buffer_bytes: int | None = None          # per switch port; None: one BDP
    ecn_lo: float = 0.2                      # E.6: marking starts at 20% of the buffer ...
    ecn_hi: float = 0.8                      # ... and reaches 1 at 80%
    trimming: bool = True
    trim_bytes: int = 256                    # docs/design-notes.md "Defaults"
    ecn_point: str = ECN_POINT               # uet.net.ecn NET-N2: "dequeue" (E.6) | "enqueue"
    trim_victim: str = TRIM_VICTIM           # uet.net.ecn NET-N4: "either" (E.6) | "arriving"
    cc: str = "nscc"                         # nscc | fixed
    spray: str = "reps"                      # reps | oblivious | rr | random | single
    entropy_values: int = 64
    window_bytes: int | None = None          # --cc fixed: None = 1.5 BDP
    ack_per_packet: bool = False             # C.9 ENB_ACK_PER_PKT
    reps_recycle: str = REPS_RECYCLE         # REPS MULTIPATH-R1 (E.6): "acked" | "echoed" (htsim's)
    degrade: list[tuple[str, str, float]] = field(default_factory=list)  # (a, b, fraction of rate)
    fail: list[tuple[str, str, float]] = field(default_factory=list)     # (a, b, microseconds)
    seed: int = 1
    time_limit_s: float = 10.0
    nscc: dict[str, Any] = field(default_factory=dict)  # NsccParams overrides
    pds: dict[str, Any] = field(default_factory=dict)   # PdsConfig overrides
    csig: str | None = None                  # SIM-F1 to SIM-F3: a name of uet.cms.csig.TYPE_BY_NAME; None off
    csig_ethertype: int = CSIG_ETHERTYPE     # the tag's TPID in pcaps (E.4: not fixed)
    csig_interval_us: float = CSIG_INTERVAL * 1e6   # NET-S5: the ports' utilisation time constant
    csig_abw_gbps: float | None = None       # C2 full scale of ABW; None: rate_gbps (SIM-F2)
    csig_delay_unit_us: float | None = None  # CMS-C2 delay bucket; None: uet.cms.csig.Scale's
    csig_selector: dict[str, Any] = field(default_factory=dict)  # CsigSelector overrides (SIM-F3)
    ses_header: str = "auto"                 # SesConfig.ses_header ("standard": A.1)
    fabric_engine: str | None = None         # uet.sim.cfabric SIM-E2: "python" | "c"; None: c if built


def host_address(i: int) -> str:
    return f"10.{(i + 1) >> 16 & 0xFF}.{(i + 1) >> 8 & 0xFF}.{(i + 1) & 0xFF}"


def data_frame_bytes(mtu: int) -> int:
    """A full data packet on the wire: headers, standard SES header (D.3), payload, trailer."""
    return HDRS + REQUEST_SIZE + STD_SIZE + mtu + TRAILER_LEN


def wire_bytes(nbytes: int, mtu: int) -> int:
    """The frame bytes of a message of ``nbytes`` sent in packets of ``mtu`` payload bytes."""
    packets = max(1, -(-nbytes // mtu))
    return nbytes + packets * (HDRS + REQUEST_SIZE + STD_SIZE + TRAILER_LEN)


def unloaded_rtt(hops: int, cfg: FabricSimConfig) -> float:
    """Round trip over ``hops`` links each way, store and forward: a full data frame out, an ACK
    back, each serialised at every hop, plus the links' delays."""
    bps = cfg.rate_gbps * 1e9 / 8
    return hops * (2 * cfg.link_delay_us * 1e-6 + (data_frame_bytes(cfg.mtu) + ACK_FRAME) / bps)


class PortView(NamedTuple):
    """A switch port as an observer sees it at one instant (:meth:`FabricSimulator.port_view`)."""

    name: str          # "a->b"
    to_host: bool      # it delivers to a host
    qbytes: int        # data bytes queued now
    max_qbytes: int
    tx_bytes: int      # bytes it put on its link so far


class _HostNode:
    __slots__ = ("idx", "addr", "ep", "nic", "sched")

    def __init__(self, idx: int, ep: Host):
        self.idx = idx
        self.addr = ep.address
        self.ep = ep
        self.nic: Port | None = None
        self.sched = INF


class _Switch:
    __slots__ = ("name", "down", "up", "salt")

    def __init__(self, name: str, salt: int):
        self.name = name
        self.down: dict[int, Port] = {}
        self.up: list[Port] = []
        self.salt = salt


class FabricSimulator:
    def __init__(self, cfg: FabricSimConfig, *, pcap: Any = None,
                 progress: Callable[[dict], None] | None = None):
        """``progress(snapshot)``: called every ``EVERY_EVENTS`` events of the run and once at
        its end (``final`` True) with the virtual time and the flows complete (uet.sim.progress
        words it and keeps to the wall clock); ``uet sim`` sets the attribute."""
        self.cfg = cfg
        self.progress = progress
        kind, nums = parse_topology(cfg.topology)
        self.topo: Topology = build(kind, nums)
        self.flows: list[Flow] = make_flows(cfg.traffic, hosts=self.topo.hosts,
                                            flow_bytes=cfg.flow_bytes, seed=cfg.seed)
        if not self.flows:
            raise TrafficError("the traffic has no flows")
        self.rng = Rng(cfg.seed)  # uet.net.rng NET-R1: every draw of the switch ports, either engine
        self.csig = self._csig_type(cfg.csig)
        scale: dict[str, float] = {"abw_full_gbps": cfg.csig_abw_gbps or cfg.rate_gbps}  # SIM-F2
        if cfg.csig_delay_unit_us is not None:
            scale["delay_unit_s"] = cfg.csig_delay_unit_us * 1e-6
        self.csig_scale = Scale(**scale)
        self._neutral = neutral(self.csig) if self.csig is not None else None
        self.selectors: list[Any] = []  # SIM-F3: the CSIG selectors the hosts built, for the summary
        self.pcap: PcapWriter | None = None
        if pcap is not None:
            self.attach_pcap(pcap)
        held = max((f.bytes for f in self.flows), default=0)  # the one stream of run()
        if held > MAX_HELD_BYTES:
            raise TrafficError(f"a flow carries {held} bytes; a run holds the longest flow's "
                               f"bytes in memory, at most {MAX_HELD_BYTES} (4GiB)")
        self.base_rtt = unloaded_rtt(self.topo.diameter, cfg)
        bps = cfg.rate_gbps * 1e9
        self.bdp = int(bps / 8 * self.base_rtt)
        self.buffer = cfg.buffer_bytes or max(self.bdp, 2 * data_frame_bytes(cfg.mtu))
        self.heap: list = []
        self.seq = 0
        self.now = 0.0
        self.frames = FrameCache(self._facts)
        self.hosts: list[_HostNode] = []
        self.addr_index: dict[str, int] = {}
        for i in range(self.topo.hosts):
            addr = host_address(i)
            self.addr_index[addr] = i
            self.hosts.append(_HostNode(i, self._host(addr, i)))
        self.ports: list[Port] = []  # switch ports (the NICs are the hosts')
        self._build_ports()
        self.failures: list[str] = []
        self.data_keys: set[int] = set()  # the 5-tuples that carried data (paths_used)
        self.open_flows = len(self.flows)  # run() counts it down
        self.engine = cfabric.resolve(cfg.fabric_engine)
        self._pid = 0  # packet ids, for the event log and the C engine
        self.event_log: list[tuple] | None = None  # (t, event, port or host, packet id, flags)
        self._port_index = {id(p): i for i, p in enumerate(cfabric.all_ports(self))}
        self._engine: Any = cfabric.build(self) if self.engine == "c" else None
        self._pyev: dict[int, tuple] = {}  # C engine: the Python events by id
        self._inflight: dict[int, Packet] = {}  # C engine: the packets in the fabric by id
        self._ticks = 0  # sample_every's events in the heap
        self._tick = EVERY_EVENTS  # events left until the next progress snapshot
        self._ideal: float | None = None  # ideal_fct(), once progress asks for it

    def attach_pcap(self, fh: Any) -> None:
        """Capture every frame a host sends, at its send time, and every frame the switches
        changed (trimmed, CE-marked, its CSIG tag replaced: SIM-F3) again as it arrives."""
        self.pcap = PcapWriter(fh)

    @staticmethod
    def _csig_type(name: str | None) -> int | None:
        if name is None:
            return None
        t = TYPE_BY_NAME.get(name.lower())
        if t is None:
            raise ValueError(f"unknown CSIG signal {name!r} ({', '.join(TYPE_BY_NAME)})")
        return t

    # --- building ---------------------------------------------------------------------------
    def _pds_config(self) -> PdsConfig:
        cfg = self.cfg
        window = cfg.window_bytes or max(64 * 1024, int(1.5 * self.bdp))
        params = NsccParams(trimming=cfg.trimming, **cfg.nscc)
        if self.csig is not None and params.csig:
            params = replace(params, csig_scale=self.csig_scale)  # one scale per fabric (C2)
        pc = dict(mtu=cfg.mtu, spray=cfg.spray, entropy_values=cfg.entropy_values,
                  window_bytes=window, ack_per_packet=cfg.ack_per_packet,
                  reps_recycle=cfg.reps_recycle)
        pc.update(pds_overrides(cfg.cc, rate_gbps=cfg.rate_gbps, base_rtt=self.base_rtt,
                                window_bytes=window, trimming=cfg.trimming, nscc=params))
        if self.csig is not None:  # SIM-F3
            pc["csig"] = self.csig  # the PDS's side of C4
            pc["entropy_factory"] = self._csig_entropy
        pc.update(cfg.pds)
        return PdsConfig(**pc)

    def _csig_entropy(self, pc: PdsConfig, rng: random.Random) -> Any:
        """SIM-F3: the ``spray`` policy inside a CSIG selector (MULTIPATH-K1 to MULTIPATH-K5 of uet.multipath.csig)."""
        sel = csig_selector(make_selector(pc.spray, pc.entropy_values, rng,
                                          reps_recycle=pc.reps_recycle), t=self.csig,
                            scale=self.csig_scale, **self.cfg.csig_selector)
        self.selectors.append(sel)
        return sel

    def _host(self, addr: str, i: int) -> Host:
        seed = (self.cfg.seed * 1_000_003 + i) & ((1 << 63) - 1)
        # SES-M8: a flow arrives as its digest, checked against the sender's (_delivered)
        ses = SesConfig(mtu=self.cfg.mtu, seed=seed & 0xFFFFFFFF, auto_receive=True, rx_digest=True,
                        ses_header=self.cfg.ses_header)
        return Host(addr, pds=self._pds_config(), ses=ses, seed=seed)

    def _build_ports(self) -> None:
        cfg, topo = self.cfg, self.topo
        bps = cfg.rate_gbps * 1e9
        delay = cfg.link_delay_us * 1e-6
        degrade = {}
        for a, b, f in cfg.degrade:
            self._check_link(a, b, "--degrade-link")
            degrade[(a, b)] = degrade[(b, a)] = f
        fail = {}
        for a, b, t in cfg.fail:
            self._check_link(a, b, "--fail-link")
            fail[(a, b)] = fail[(b, a)] = t * 1e-6
        switches = {name: _Switch(name, s)
                    for name, s in switch_salts(cfg.seed, topo.switches).items()}
        self.switches = switches
        kmin, kmax = int(cfg.ecn_lo * self.buffer), max(int(cfg.ecn_hi * self.buffer),
                                                        int(cfg.ecn_lo * self.buffer) + 1)
        locator = {name: i % 128 for i, name in enumerate(topo.switches)}  # SIM-F2
        tagged = self.csig is not None

        def port(a: str, b: str, peer: Any, *, nic: bool = False) -> Port:
            p = Port(f"{a}->{b}", peer, rate_bps=bps * degrade.get((a, b), 1.0), delay=delay,
                     buffer_bytes=(1 << 62) if nic else self.buffer,
                     kmin_bytes=(1 << 62) if nic else kmin,
                     kmax_bytes=(1 << 62) + 1 if nic else kmax, trim_bytes=cfg.trim_bytes,
                     trimming=cfg.trimming and not nic, rng=self.rng,
                     fail_at=fail.get((a, b), INF), header_bytes=HDRS + TAG_LEN * tagged,
                     csig=None if nic else self.csig, csig_scale=self.csig_scale,
                     csig_lm=0 if nic else locator[a], csig_interval=cfg.csig_interval_us * 1e-6,
                     ecn_point=cfg.ecn_point, trim_victim=cfg.trim_victim)
            if not nic:
                self.ports.append(p)
            return p

        def node(name: str) -> Any:
            return self.hosts[int(name[1:])] if name[0] == "h" else switches[name]

        for name, sw in switches.items():
            for h, nb in topo.down[name].items():
                p = sw.down.get(h) if nb[0] != "h" else None
                sw.down[h] = p if p is not None and p.peer is node(nb) else None  # type: ignore
            # one port per neighbour below, shared by every host behind it
            below: dict[str, Port] = {}
            for h, nb in topo.down[name].items():
                if nb not in below:
                    below[nb] = port(name, nb, node(nb))
                sw.down[h] = below[nb]
            sw.up = [port(name, nb, node(nb)) for nb in topo.up[name]]
        for h in self.hosts:
            h.nic = port(f"h{h.idx}", topo.attach[h.idx], switches[topo.attach[h.idx]], nic=True)

    def _check_link(self, a: str, b: str, option: str) -> None:
        if not self.topo.has_link(a, b):
            raise LinkError(option, f"no link {a}-{b} in {self.cfg.topology} (hosts are h0..., "
                                    "switches as uet sim --help names them)")

    # --- the public view -----------------------------------------------------------------------
    def sample_every(self, interval_s: float, fn: Callable[[float, "FabricSimulator"], None]) -> None:
        """Call ``fn(now, self)`` from the current time on, every ``interval_s`` of virtual time,
        as an event of the run's heap (so it sees the queues at exact virtual times), until no
        flow is open; it never keeps a run alive on its own (a run with nothing else left to do
        still ends as stalled)."""
        if not interval_s > 0:
            raise ValueError("the sampling interval is positive")

        def tick(now: float, _a: Any, _b: Any) -> None:
            self._ticks -= 1
            fn(now, self)
            if self.open_flows > 0 and self._pending() > self._ticks:  # other samplers don't count
                self._ticks += 1
                self._push(now + interval_s, tick, None)

        self._ticks += 1
        self._push(self.now, tick, None)

    def port_view(self) -> list[PortView]:
        """Every switch port now (the hosts' NICs are not switch ports)."""
        if self._engine is not None:
            cfabric.sync_ports(self)
        return [PortView(p.name, type(p.peer) is _HostNode, p.qbytes, p.max_qbytes, p.tx_bytes)
                for p in self.ports]

    @property
    def open_flow_count(self) -> int:
        """Flows not yet complete (nor failed)."""
        return self.open_flows

    # --- events -------------------------------------------------------------------------------
    def _push(self, t: float, action: Callable, a: Any, b: Any = None) -> None:
        self.seq += 1
        if self._engine is None:
            heapq.heappush(self.heap, (t, self.seq, action, a, b))
        else:  # SIM-E1: the Python events share the C engine's heap
            self._pyev[self.seq] = (action, a, b)
            self._engine.push_py(t, self.seq)

    def _pending(self) -> int:
        return len(self.heap) if self._engine is None else self._engine.pending

    def log_events(self) -> None:
        """Keep a log of the fabric's events in :attr:`event_log` from now on (either engine, the
        same records: tests/sim/test_fabric_engines.py compares them): ``(t, event, where, packet
        id, flags)`` with event 1 a port sending (where: the port, numbered as
        :func:`uet.sim.cfabric.all_ports`), 2 a switch port refusing a packet, 3 a delivery
        (where: the host); flags 4 trimmed, 8 CE-marked, 16 tagged with the CSIG bits from bit
        16 on (uet.native.fabric)."""
        self.event_log = []
        if self._engine is not None:
            self._engine.log_on(True)

    def _transmit(self, port: Port, now: float) -> None:
        r = port.start(now)
        if r is None:
            return
        pkt, done = r
        peer = port.peer
        if self.event_log is not None:
            self.event_log.append((now, 1, self._port_index[id(port)], pkt.pid, _flags(pkt)))
        self._push(done + port.delay, self._at_host if type(peer) is _HostNode else self._at_switch,
                   peer, pkt)
        self._push(done, self._port_free, port)

    def _port_free(self, now: float, port: Port, _: Any) -> None:
        self._transmit(port, now)

    def _at_switch(self, now: float, sw: _Switch, pkt: Packet) -> None:
        port = sw.down.get(pkt.dst)
        if port is None:
            port = pick(sw.up, pkt.key, sw.salt)  # ECMP (uet.net.ecmp NET-M2)
        if port.enqueue(pkt, now):
            if not port.busy:
                self._transmit(port, now)
        elif self.event_log is not None:
            self.event_log.append((now, 2, self._port_index[id(port)], pkt.pid, _flags(pkt)))

    def _at_host(self, now: float, host: _HostNode, pkt: Packet) -> None:
        if self.event_log is not None:
            self.event_log.append((now, 3, host.idx, pkt.pid, _flags(pkt)))
        frame = pkt.frame
        bits = pkt.csig
        if bits is not None:
            frame = strip_tag(frame)[0]  # SIM-F3: the tag's bits travel in pkt.csig
        if pkt.trimmed:
            frame = trim(frame, self.cfg.trim_bytes)
        if pkt.ce:
            frame = set_ce(frame)
        if bits is None:
            if self.pcap is not None and (pkt.trimmed or pkt.ce):
                self.pcap.write(now, frame)
            host.ep.receive_datagram(frame[HDRS:], self.frames.meta(frame[:HDRS]), now)
        else:
            if self.pcap is not None and (pkt.trimmed or pkt.ce or bits != self._neutral):
                self.pcap.write(now, insert_tag(frame, bits, self.cfg.csig_ethertype))
            host.ep.receive_datagram(frame[HDRS:], self.frames.meta(frame[:HDRS]), now, csig=bits)
        self._events(host, now)
        self._flush(host, now)

    def _timer(self, now: float, host: _HostNode, _: Any) -> None:
        if now != host.sched:
            return
        host.sched = INF
        host.ep.handle_timer(now)
        self._events(host, now)
        self._flush(host, now)

    def _start_flow(self, now: float, i: int, _: Any) -> None:
        f = self.flows[i]
        src = self.hosts[f.src]
        handle = src.ep.send(self.hosts[f.dst].addr, self._payload(i), mode=self.cfg.mode)
        self._handles[(f.src, handle)] = i
        self._flush(src, now)

    def _flush(self, host: _HostNode, now: float) -> None:
        ep = host.ep
        out = ep.datagrams_to_send(now)
        if out:
            nic, pcap, engine = host.nic, self.pcap, self._engine
            frame_of, tag, data_keys = self.frames.frame, self._neutral, self.data_keys
            batch = []
            for data, meta in out:
                frame, (dst, key, control, ect) = frame_of(data, meta)
                if not control:
                    data_keys.add(key)
                self._pid += 1
                if tag is None or control:
                    pkt = Packet(frame, dst, key, control, ect, pid=self._pid)
                else:  # SIM-F1
                    frame = insert_tag(frame, tag, self.cfg.csig_ethertype)
                    pkt = Packet(frame, dst, key, control, ect, csig=tag, pid=self._pid)
                if pcap is not None:
                    pcap.write(now, frame)
                if engine is None:
                    nic.enqueue(pkt, now)
                else:
                    self._inflight[self._pid] = pkt
                    batch.append((self._pid, len(frame), dst, key, control | ect << 1,
                                  -1 if pkt.csig is None else pkt.csig))
            if engine is not None:
                engine.inject(now, host.idx, batch)
                if self.event_log is not None:  # the NIC's sends, in their place
                    self.event_log.extend(engine.log())
            elif not nic.busy:
                self._transmit(nic, now)
        t = ep.get_timer()
        if t is not None and t < host.sched:
            host.sched = t = max(t, now)
            self._push(t, self._timer, host)

    def _facts(self, meta: DatagramMeta, header: bytes) -> tuple:
        """What the switches need of a datagram of ``meta`` (uet.sim.frames.FrameCache keeps it
        per metadata object): the destination host, the 5-tuple hash, the class."""
        dst = self.addr_index.get(meta.dst)
        if dst is None:
            raise RuntimeError(f"a host sent to {meta.dst}, which is not in the fabric")
        return dst, five_tuple_key(header), meta.dscp == DSCP_CONTROL, meta.ecn in (ECT0, ECT1)

    def _events(self, host: _HostNode, now: float) -> None:
        ep = host.ep
        while (e := ep.next_event()) is not None:
            t = type(e)
            if t is sev.OperationComplete:
                i = self._handles.pop((host.idx, e.handle), None)
                if i is not None:
                    self.fct[i] = now - self.flows[i].start_s
                    self.open_flows -= 1
            elif t is sev.MessageReceived:
                self._delivered(host, e)
            elif t is sev.OperationFailed:
                self.failures.append(f"h{host.idx}: {e.op} {e.message_id} failed: {e.reason}")
                if self._handles.pop((host.idx, e.handle), None) is not None:
                    self.open_flows -= 1
                    self.failed_flows += 1
            elif t is pev.PdcClosed and e.error:
                self.failures.append(f"h{host.idx}: PDC {e.pdcid} closed in error: {e.reason}")
            elif t in (sev.MessageError, sev.RecvFailed):
                self.failures.append(f"h{host.idx}: {e!r:.200}")

    # --- the payload and its check ---------------------------------------------------------------
    def _offset(self, i: int) -> int:
        return (i * 4099) % self._spread

    def _payload(self, i: int) -> memoryview:
        """Flow ``i``'s bytes: a window of the run's seeded stream that starts at a per-flow
        offset, so that flows differ and one stream serves them all. A view, not a copy: the
        SES keeps a read-only view of immutable bytes as it is (uet.ses.initiator.frozen), so
        the senders hold the one stream and not a copy per flow."""
        off = self._offset(i)
        return self._view[off:off + self.flows[i].bytes]

    def _delivered(self, host: _HostNode, e: Any) -> None:
        """A flow arrived: its digest (SES-M8: the receiver kept no copy) must be one a flow from
        that peer to this host was sent with, made from the seeded stream (run)."""
        d = e.data if type(e.data) is Digest else Digest.of(e.data)
        src = self.addr_index.get(str(e.peer), -1)
        cands = self._want.get((src, host.idx, d))
        if not cands:
            self.failures.append(f"h{host.idx}: a message from {e.peer} that no flow sent "
                                 f"({d.length} bytes) or damaged")
            return
        cands.pop()
        self.delivered += 1

    # --- run ----------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        wall0 = time.perf_counter()
        biggest = max(f.bytes for f in self.flows)
        self._spread = 1 << 16
        self._stream = seeded_bytes(cfg.seed ^ 0x5EED, biggest + self._spread)
        self._view = memoryview(self._stream)
        self._want: dict[tuple, list[int]] = {}
        for i, f in enumerate(self.flows):
            self._want.setdefault((f.src, f.dst, Digest.of(self._payload(i))), []).append(i)
        self._handles: dict[tuple[int, int], int] = {}
        self.fct: list[float | None] = [None] * len(self.flows)
        self.open_flows = len(self.flows)
        self.delivered = 0
        self.failed_flows = 0
        for i, f in enumerate(self.flows):
            self._push(f.start_s, self._start_flow, i)
        if self._engine is not None:  # SIM-E1
            cfabric.run(self)
            cfabric.sync_ports(self)
        else:
            self._run_events()
        if self.delivered < len(self.flows) and not self.failures:
            self.failures.append(f"{self.delivered} of {len(self.flows)} flows delivered")
        if self.progress is not None:
            self.progress({**self._snapshot(), "final": True})
        return self._summary(time.perf_counter() - wall0)

    def event_done(self) -> bool:
        """After each event of either engine's loop: a progress snapshot every
        :data:`EVERY_EVENTS` events, and True once every flow is complete (delivered or failed),
        which ends the run."""
        if self.progress is not None:
            self._tick -= 1
            if not self._tick:
                self._tick = EVERY_EVENTS
                self.progress(self._snapshot())
        return self.open_flows <= 0 and self.delivered + self.failed_flows >= len(self.flows)

    def _run_events(self) -> None:
        """The Python engine's run loop: the heap's events in (time, seq) order."""
        heap, pop, limit = self.heap, heapq.heappop, self.cfg.time_limit_s
        while heap:
            t, _, action, a, b = pop(heap)
            if t > limit:
                self.failures.append(f"time limit {limit}s reached")
                break
            self.now = t
            action(t, a, b)
            if self.event_done():
                break
        else:
            if self.open_flows > 0:
                self.failures.append(f"stalled at {self.now:.6f}s with {self.open_flows} flow(s) "
                                     "not complete")

    def _snapshot(self) -> dict[str, Any]:
        if self._ideal is None:  # a yardstick for how far the run is (flows end late)
            self._ideal = self.ideal_fct()
        failed = self.failed_flows
        return {"sim_time_s": self.now, "flows": len(self.flows), "ideal_s": self._ideal,
                "flows_complete": len(self.flows) - self.open_flows - failed,
                "flows_failed": failed}

    def ideal_fct(self) -> float:
        """The wire bytes crossing the busiest link, over its rate, plus the largest unloaded
        RTT among the flows. Under perfect load balance the busiest link is a host's link or,
        in an oversubscribed topology, the up links out of a subtree taken together (up-down
        routing may spread what leaves a subtree over all of them: in a fat tree, what leaves
        a pod over every up link of its aggregation switches). Degraded links are not counted:
        the ideal is the healthy fabric's."""
        topo, cfg = self.topo, self.cfg
        below = {sw: frozenset(topo.down[sw]) for sw in topo.switches}
        uplinks: dict[frozenset, int] = {}
        for sw in topo.switches:
            uplinks[below[sw]] = uplinks.get(below[sw], 0) + len(topo.up[sw])
        load: dict[Any, int] = {}
        for f in self.flows:
            w = wire_bytes(f.bytes, cfg.mtu)
            for key in ((f.src, "out"), (f.dst, "in")):
                load[key] = load.get(key, 0) + w
            for a, b, way in ((f.src, f.dst, "up"), (f.dst, f.src, "down")):
                sw = topo.attach[a]
                while b not in below[sw]:  # the subtrees the flow leaves (enters) on the way
                    key = (below[sw], way)
                    load[key] = load.get(key, 0) + w
                    sw = topo.up[sw][0]
        busiest = max(v / (uplinks[k[0]] if k[1] in ("up", "down") else 1)
                      for k, v in load.items())
        hops = max(topo.hops(f.src, f.dst) for f in self.flows)
        return busiest / (cfg.rate_gbps * 1e9 / 8) + unloaded_rtt(hops, cfg)

    def _summary(self, wall: float) -> dict[str, Any]:
        """The contract keys (uet.sim.summary), then the many-host figures. ``paths_used``: the
        distinct 5-tuples (source, destination, EV) that carried data, each one path through the
        switches' ECMP; ``spurious_retransmissions``: requests the targets already had (their
        PDS's R4 counter, as ``uet demo`` reads it); ``target_retransmissions``: those of the hosts
        that are no flow's source; ``delivered``/``sent``: flows."""
        cfg = self.cfg
        stats = [h.ep.stats for h in self.hosts]
        nbytes = sum(f.bytes for f in self.flows)
        sources = {f.src for f in self.flows}
        summary = transfer_summary(
            ok=False, bytes=nbytes, sim_time_s=self.now, wall_time_s=round(wall, 6),
            goodput_gbps=goodput_gbps(nbytes, self.now),
            packets_sent=sum(h.nic.tx_packets for h in self.hosts),
            retransmissions=sum(s["retransmissions"] for s in stats),
            spurious_retransmissions=sum(s["retx_dup_rx"] for s in stats),
            trimmed=sum(p.trimmed for p in self.ports), dropped=sum(p.dropped for p in self.ports),
            ecn_marked=sum(p.ce_marked for p in self.ports),
            nacks=merge_nacks(h.ep.nacks_sent for h in self.hosts),
            paths_used=len(self.data_keys), seed=cfg.seed, op="send", mode=cfg.mode,
            sent=len(self.flows), delivered=self.delivered,
            target_retransmissions=sum(s["retransmissions"] for i, s in enumerate(stats)
                                       if i not in sources),
            topology=cfg.topology, hosts=self.topo.hosts, traffic=_traffic_name(cfg.traffic),
            cc=cfg.cc, spray=cfg.spray,
            csig=TYPE_NAMES[self.csig] if self.csig is not None else None)
        summary.update(fct_summary(list(zip(self.flows, self.fct)), ideal_fct_s=self.ideal_fct()))
        busiest = max(self.ports, key=lambda p: p.tx_bytes) if self.ports else None
        packets = sum(s["packets_tx"] for s in stats) if "packets_tx" in stats[0] else None
        summary.update({
            "rto": sum(s["rto"] for s in stats),
            "max_queue_bytes": busiest.max_qbytes if busiest else 0,
            "mean_queue_bytes": round(busiest.mean_queue(self.now), 1) if busiest else 0.0,
            "busiest_port": busiest.name if busiest else None,
            "buffer_bytes": self.buffer,
            "base_rtt_s": self.base_rtt,
            "internal_errors": sum(s["internal_errors"] for s in stats),
            "failures": self.failures[:5],
        })
        if packets is not None:
            summary["packets_tx"] = packets
        if self.csig is not None:
            for c in CSIG_COUNTERS:
                summary[c] = sum(getattr(p, c) for p in self.ports)
            for c in ("reasked", "kept_bad", "expired"):
                summary[f"csig_{c}"] = sum(sel.counters[c] for sel in self.selectors)
        summary["ok"] = (not self.failures and summary["completed"] == len(self.flows)
                         and self.delivered == len(self.flows) and not summary["internal_errors"])
        return summary


def _flags(pkt: Packet) -> int:
    """A packet's trimmed and CE bits and its CSIG tag as uet.native.fabric's log reports them."""
    tag = pkt.csig
    return pkt.trimmed << 2 | pkt.ce << 3 | (0 if tag is None else 16 | tag << 16)


def _traffic_name(spec: tuple[str, Any]) -> str:
    kind, arg = spec
    return f"{kind}:{arg}" if kind == "incast" else (str(arg) if kind == "matrix" else kind)


def run(cfg: FabricSimConfig, **kw: Any) -> dict[str, Any]:
    return FabricSimulator(cfg, **kw).run()
