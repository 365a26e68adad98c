"""Hand-built datagrams (through the schema codecs) and decoded replies for driving the PDS core."""

from __future__ import annotations

from typing import Any

from uet import wire
from uet.pds import DatagramMeta, Endpoint, PdsConfig, seal
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
           dport: int = EV) -> tuple[bytes, DatagramMeta]:
    """An ACK_CC from the target (B) to the initiator (A) PDC ``ep_pdcid``."""
    f = {"type": 8, "m": m, "req": req, "ack_psn_offset": (ack_psn - cack) if ack_psn is not None else 0,
         "cack_psn": cack, "spdcid": spdcid, "dpdcid": ep_pdcid, "cc_type": 0, "mpr": mpr,
         "sack_psn_offset": (sack_base - cack) if sack_base is not None else 0, "sack_bitmap": bitmap}
    meta = DatagramMeta(B, A, PORT, dport, 0, 46)
    return seal((wire.encode("pds.ack_cc", f),), meta), meta


def nack_to(ep_pdcid: int, psn: int, code: int, *, spdcid: int = 99, payload: int = 0,
            dport: int = EV) -> tuple[bytes, DatagramMeta]:
    f = {"type": 10, "nack_code": code, "nack_psn": psn, "spdcid": spdcid, "dpdcid": ep_pdcid,
         "payload": payload}
    meta = DatagramMeta(B, A, PORT, dport, 0, 46)
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


def out(ep: Endpoint, now: float = 0.0) -> list[tuple[dict[str, Any], DatagramMeta]]:
    return [(decode(d, m), m) for d, m in ep.datagrams_to_send(now)]


def events(ep: Endpoint) -> list:
    evs = []
    while (e := ep.next_event()) is not None:
        evs.append(e)
    return evs


def target(**cfg: Any) -> Endpoint:
    return Endpoint(B, PdsConfig(**cfg), seed=1)


def initiator(**cfg: Any) -> Endpoint:
    return Endpoint(A, PdsConfig(**cfg), seed=2)


def established_target(**cfg: Any) -> tuple[Endpoint, int]:
    """A target with one RUD PDC created by a SYN request for PSN S; returns (endpoint, its PDCID)."""
    rod = cfg.pop("rod", False)
    ep = target(**cfg)
    ep.receive_datagram(*request(S, syn=True, ar=True, rod=rod), 0.0)
    (ack, _), = out(ep)
    events(ep)
    return ep, ack["pds"]["spdcid"]
