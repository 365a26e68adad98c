"""Hand-built datagrams (through the schema codecs) and decoded replies for driving the PDS core;
a recording upper layer for the PDS alone, and whole hosts (uet.host) for the PDS with the SES."""

from __future__ import annotations

from typing import Any

import dataclasses

from uet import wire
from uet.host import Host
from uet.pds import DatagramMeta, Endpoint, PdsConfig, seal
from uet.pds.upper import Accepting
from uet.ses import SesConfig
from uet.ses.packets import cut
from uet.wire.build import uet_bytes
from uet.wire.packet import decode_uet
from uet.wire.trailer import CrcContext
import socket

A, B = "10.0.0.1", "10.0.0.2"
EV = 50000
PORT = 4793
SPDCID = 7
S = 100000  # a start PSN


def meta_in(ecn: int = 2, dscp: int = 0, sport: int = EV) -> DatagramMeta:
    return DatagramMeta(A, B, sport, PORT, ecn, dscp)


def request(psn: int, *, syn: bool = False, start: int = S, dpdcid: int = 0, spdcid: int = SPDCID,
            ar: bool = False, retx: bool = False, rod: bool = False, payload: bytes = b"x" * 64,
            message_id: int = 1, offset: int = 0, total: int | None = None, clear: int = 0,
            ecn: int = 2, dscp: int = 0, sport: int = EV) -> tuple[bytes, DatagramMeta]:
    """One RUD/ROD request with a standard SES SEND header, sealed with the CRC trailer."""
    pds: dict[str, Any] = {"type": 3 if rod else 2, "next_hdr": 3, "retx": retx, "ar": ar, "syn": syn,
                           "clear_psn_offset": clear, "psn": psn, "spdcid": spdcid}
    if syn:
        pds["psn_offset"] = (psn - start) & 0xFFF
    else:
        pds["dpdcid"] = dpdcid
    total = len(payload) if total is None else total
    ses: dict[str, Any] = {"opcode": 5, "message_id": message_id, "request_length": total,
                           "som": offset == 0, "eom": offset + len(payload) >= total}
    if offset:
        ses["payload_length"] = len(payload)
        ses["message_offset"] = offset
    m = meta_in(ecn, dscp, sport)
    return seal((uet_bytes(pds, ses, None, payload),), m), m


def control(ctl: int, psn: int, *, syn: bool = False, start: int = S, dpdcid: int = 0,
            spdcid: int = SPDCID, ar: bool = True, payload: int = 0, rod: bool = False):
    f = {"type": 11, "ctl_type": ctl, "isrod": rod, "ar": ar, "syn": syn, "psn": psn, "spdcid": spdcid,
         "payload": payload}
    if syn:
        f["psn_offset"] = (psn - start) & 0xFFF
    else:
        f["dpdcid"] = dpdcid
    m = meta_in(0, 46)
    return seal((wire.encode("pds.control", f),), m), m


def ack_to(ep_pdcid: int, cack: int, *, spdcid: int = 99, ack_psn: int | None = None, mpr: int = 8,
           sack_base: int | None = None, bitmap: int = 0, m: bool = False, req: int = 0,
           ev: int = EV) -> tuple[bytes, DatagramMeta]:
    """An ACK_CC from the target (B) to the initiator (A) PDC ``ep_pdcid``: from the EV ``ev`` it
    answers to the UET port (A.1)."""
    f = {"type": 8, "m": m, "req": req, "ack_psn_offset": (ack_psn - cack) if ack_psn is not None else 0,
         "cack_psn": cack, "spdcid": spdcid, "dpdcid": ep_pdcid, "cc_type": 0, "mpr": mpr,
         "sack_psn_offset": (sack_base - cack) if sack_base is not None else 0, "sack_bitmap": bitmap}
    meta = DatagramMeta(B, A, ev, PORT, 0, 46)
    return seal((wire.encode("pds.ack_cc", f),), meta), meta


def nack_to(ep_pdcid: int, psn: int, code: int, *, spdcid: int = 99, payload: int = 0,
            ev: int = EV) -> tuple[bytes, DatagramMeta]:
    f = {"type": 10, "nack_code": code, "nack_psn": psn, "spdcid": spdcid, "dpdcid": ep_pdcid,
         "payload": payload}
    meta = DatagramMeta(B, A, ev, PORT, 0, 46)
    return seal((wire.encode("pds.nack", f),), meta), meta


def decode(data: bytes, meta: DatagramMeta) -> dict[str, Any]:
    """Whole-packet decode (uet.wire.packet) with the CRC verified against ``meta``."""
    udp = wire.encode("udp", {"sport": meta.sport, "dport": meta.dport, "length": 8 + len(data),
                              "checksum": 0})
    ctx = CrcContext(socket.inet_aton(meta.src), socket.inet_aton(meta.dst), udp)
    d = decode_uet(data, ctx, trailer="crc")
    assert d.error is None, d.error
    assert d.layer["crc"]["ok"], "CRC trailer does not verify"
    return d.layer


class Recorder(Accepting):
    """A recording upper layer (uet/pds/upper.py): what the PDS handed up and told it (no C lane
    fields, as :class:`Accepting`: every request through admit and deliver)."""

    def __init__(self, admit_code: int = 0):
        self.admit_code = admit_code
        self.delivered: list[tuple[str, int, int, bytes]] = []  # (peer, PSN, next_hdr, SES bytes)
        self.completed: list[Any] = []  # tokens acknowledged (CACK)
        self.responses: list[tuple[Any, int, bytes]] = []
        self.failures: list[tuple[Any, str]] = []
        self.waiting: set[Any] = set()  # tokens whose response is still awaited (PDS-X5)
        self.respond: dict[int, tuple[int, bytes]] = {}  # PSN -> the response to return
        self.pressure_value = 0.0  # what pressure() says (PDS-A5 of uet/pds/target.py)

    def admit(self, peer: str, next_hdr: int, data: memoryview) -> int:
        return self.admit_code

    def deliver(self, peer: str, ref: int, next_hdr: int, data: memoryview, now: float):
        self.delivered.append((peer, ref, next_hdr, bytes(data)))
        return self.respond.get(ref)

    def pressure(self, peer: str) -> float:
        return self.pressure_value

    def acked(self, token: Any, now: float) -> None:
        self.completed.append(token)

    def response(self, token: Any, next_hdr: int, data: memoryview, peer: str, now: float) -> None:
        self.responses.append((token, next_hdr, bytes(data)))
        self.waiting.discard(token)

    def pending(self, token: Any) -> bool:
        return token in self.waiting

    def failed(self, token: Any, reason: str) -> None:
        self.failures.append((token, reason))

    @property
    def psns(self) -> list[int]:
        return [psn for _, psn, _, _ in self.delivered]


def send(ep: Endpoint, dst: str, data: bytes, *, mode: str = "rud", message_id: int | None = None,
         mtu: int | None = None) -> int:
    """Submit ``data`` as one SES SEND (cut by uet.ses.packets, as the SES would) to a PDS
    endpoint; returns its token (the message id)."""
    global _next_mid
    if message_id is None:
        _next_mid = _next_mid % 0xFFFF + 1
        message_id = _next_mid
    common = {"opcode": 5, "job_id": 0, "pid_on_fep": 0, "resource_index": 0, "initiator": 0,
              "rel": True}
    item = cut(dst, message_id, data, mtu=mtu or min(4096, ep.config.mtu), small_header=True,
               common=common, key={}, small_ok=True)
    ep.submit(dst, item, mode=mode)
    return message_id


_next_mid = 0


def out(ep: Any, now: float = 0.0) -> list[tuple[dict[str, Any], DatagramMeta]]:
    return [(decode(d, m), m) for d, m in ep.datagrams_to_send(now)]


def events(ep: Any) -> list:
    evs = []
    while (e := ep.next_event()) is not None:
        evs.append(e)
    return evs


def target(**cfg: Any) -> Endpoint:
    """A PDS endpoint at B whose upper layer records (``ep.upper``: a :class:`Recorder`)."""
    return Endpoint(B, PdsConfig(**cfg), seed=1, upper=Recorder())


def initiator(**cfg: Any) -> Endpoint:
    """A PDS endpoint at A whose upper layer records; :func:`send` submits messages to it."""
    return Endpoint(A, PdsConfig(**cfg), seed=2, upper=Recorder())


def _split(cfg: dict[str, Any]) -> tuple[PdsConfig, SesConfig]:
    ses_names = {f.name for f in dataclasses.fields(SesConfig)} - {"mtu", "seed"}
    ses = {k: cfg.pop(k) for k in list(cfg) if k in ses_names}
    pds = PdsConfig(**cfg)
    return pds, SesConfig(mtu=min(4096, pds.mtu), auto_receive=True, **ses)


def host_target(**cfg: Any) -> Host:
    """A whole host at B (PDS and SES, every SEND given a receive); ``cfg`` names PdsConfig and
    SesConfig fields."""
    pds, ses = _split(cfg)
    return Host(B, pds=pds, ses=ses, seed=1)


def host_initiator(**cfg: Any) -> Host:
    pds, ses = _split(cfg)
    return Host(A, pds=pds, ses=ses, seed=2)


def established_target(*, host: bool = False, **cfg: Any) -> tuple[Any, int]:
    """A target (``host``: a whole :class:`Host`, else a recording PDS endpoint) with one RUD PDC
    created by a SYN request for PSN S; returns (endpoint, its PDCID)."""
    rod = cfg.pop("rod", False)
    ep = host_target(**cfg) if host else target(**cfg)
    ep.receive_datagram(*request(S, syn=True, ar=True, rod=rod), 0.0)
    (ack, _), = out(ep)
    events(ep)
    return ep, ack["pds"]["spdcid"]


def fire_timers(now: float, *hosts: Any) -> float | None:
    """The earliest timer of ``hosts``, fired on all of them at that time (never before
    ``now``); None when none has a timer."""
    t = min((x for x in (h.get_timer() for h in hosts) if x is not None), default=None)
    if t is None:
        return None
    now = max(now, t)
    for h in hosts:
        h.handle_timer(now)
    return now
