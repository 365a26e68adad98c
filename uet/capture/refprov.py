"""The UEC reference provider's receive rules as a model: would it take each frame of a capture?

Owns a judgement of captured frames against what the reference provider (uet-ref-prov) accepts on
receive, written from docs/facts.md A.1 and A.3 (its C source is not on these machines, so the
facts are the judge). It reads frames with :func:`uet.capture.frame.decode_frame` and the raw
IP header fields that decoder keeps; nothing here parses a header. ``uet analyze --refprov``
prints the verdict; docs/interop.md says how to capture a run and check it.

Rules, each a :class:`Violation` with its id and facts row:

RP1  A.1 (Destination port of answers; H.1 #19): every UET datagram, answers included, goes to
     UDP destination port = the UET port (``uet_port``, default 4793). A UET frame on another
     port is one the reference drops before it parses anything (``uet_parse_pkt``).
RP2  A.1 (IP fragmentation): no IP fragments (IPv4 MF or a fragment offset; an IPv6 Fragment
     header), and DF set on every IPv4 datagram: the reference sets DF and never reassembles.
     A later fragment carries no ports, so every fragment in the capture counts, UET or not:
     capture where only UET runs (the test bed's veth does).
RP3  A.1 (SES headers RP parses): only NONE (0), REQUEST_STD (3), RESPONSE (4) and
     RESPONSE_W_DATA (5) after the PDS header; REQUEST_SMALL (1), REQUEST_MEDIUM (2) and the
     small response with data (6) are dropped although legal (D.4, D.7).
RP4  A.3 (Coverage, UDP): without TSS a 4-byte CRC-32C trailer ends every packet and verifies
     over the UDP header as sent; the reference sends UDP checksum 0, so a frame whose checksum
     is not 0, or whose trailer does not verify (with the checksum taken as 0), fails its check.
RP5  A.1 (UDP source port; Destination port of answers): an answer copies the EV of the request
     it answers into its UDP source port. An ACK answers the request whose PSN is its ``ack_psn``
     (B.7: the PSN that triggered it; a CONTROL packet's PSN counts as a request's), a NACK the one of its ``nack_psn`` (or, NT = 1, the RUDI
     request of its ``pkt_id``), a RUDI response the request of its ``pkt_id``; the request is
     found by the answer's addresses reversed and its DPDCID (the request's SPDCID). A request
     sent more than once may have used several EVs: any of them will do. An answer to a request
     the capture does not hold is counted as unpaired, not as a violation.
RP6  A.1 (IP fragmentation and payload size; the reference's ``UET_MAX_PAYLOAD``): with
     ``max_payload`` given, no request carries more payload than that (the reference's receive
     buffers are sized for it: every FEP of a fabric must use the same value).

A TSS frame hides its PDS and SES headers (B.15): RP1, RP2 and RP6's size still apply, the rest
only when ``uet analyze --sd-key`` opened it. Frames that are not UET (not on the UET port, not
protocol 253, not decodable as UET on another port) are not the model's business, except that a
UET frame sent to another port is found by trying the decoder on every UDP port (RP1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import UET_UDP_PORT
from ..wire.enums import (ACK_TYPES, CONTROL_TYPE, DSCP_TRIMMED, NACK_TYPES, REQUEST_TYPES,
                          RUDI_REQ, RUDI_RESP)
from .frame import IPV6_FRAGMENT, DecodeConfig, decode_frame
from .reassembly import Reassembler

#: A.1 "SES headers RP parses": NONE, REQUEST_STD, RESPONSE, RESPONSE_W_DATA
ACCEPTED_NEXT_HDR = frozenset({0, 3, 4, 5})
#: how many violations a report keeps in full (the rest are counted)
KEEP_VIOLATIONS = 50

RULE_FACTS = {"RP1": "A.1, H.1 #19", "RP2": "A.1", "RP3": "A.1, D.4, D.7", "RP4": "A.3",
              "RP5": "A.1, H.1 #19", "RP6": "A.1"}


@dataclass(frozen=True, slots=True)
class Violation:
    frame: int
    rule: str  # RP1 .. RP6
    text: str

    @property
    def facts(self) -> str:
        return RULE_FACTS[self.rule]

    def as_json(self) -> dict[str, Any]:
        return {"frame": self.frame, "rule": self.rule, "facts": self.facts, "text": self.text}


@dataclass
class RefProvReport:
    """What the model found: frames judged, violations per rule, answers paired."""

    uet_port: int
    max_payload: int | None
    frames: int = 0          # UET frames judged
    requests: int = 0
    answers: int = 0
    paired: int = 0          # answers whose request is in the capture (RP5 judged them)
    unpaired: int = 0
    by_rule: Counter = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)  # the first KEEP_VIOLATIONS

    @property
    def ok(self) -> bool:
        return not self.by_rule

    def add(self, v: Violation) -> None:
        self.by_rule[v.rule] += 1
        if len(self.violations) < KEEP_VIOLATIONS:
            self.violations.append(v)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "uet_port": self.uet_port, "max_payload": self.max_payload,
                "frames": self.frames, "requests": self.requests, "answers": self.answers,
                "answers_paired": self.paired, "answers_unpaired": self.unpaired,
                "violations_by_rule": dict(sorted(self.by_rule.items())),
                "violations": [v.as_json() for v in
                               sorted(self.violations, key=lambda v: (v.frame, v.rule))]}

    def text(self) -> str:
        head = (f"UEC reference provider receive rules (facts A.1, A.3; UET port "
                f"{self.uet_port}"
                + (f", payload at most {self.max_payload}" if self.max_payload else "") + "): "
                f"{self.frames} UET frames, {self.requests} requests, {self.answers} answers "
                f"({self.paired} paired with their request)")
        if self.ok:
            return head + "; every frame passes\n"
        lines = [head + "; " + ", ".join(f"{r} ({RULE_FACTS[r]}) x{n}"
                                         for r, n in sorted(self.by_rule.items()))]
        lines += [f"  frame {v.frame}: {v.rule} ({v.facts}) {v.text}"
                  for v in sorted(self.violations, key=lambda v: (v.frame, v.rule))]
        more = sum(self.by_rule.values()) - len(self.violations)
        if more > 0:
            lines.append(f"  and {more} more")
        return "\n".join(lines) + "\n"


class _Model:
    def __init__(self, *, uet_port: int, max_payload: int | None, open_tss: Any) -> None:
        self.report = RefProvReport(uet_port=uet_port, max_payload=max_payload)
        self.cfg = DecodeConfig(ports=(uet_port,), trailer="auto", open_tss=open_tss)
        # a datagram sent in fragments is judged whole in the frame that completes it; each
        # fragment is still RP2 (the reference never reassembles)
        self.reasm = Reassembler()
        # (requester address, target address, requester's PDCID or None for RUDI, PSN or
        # pkt_id) -> the EVs (UDP source ports) that request was sent with
        self.sent: dict[tuple[str, str, int | None, int], set[int]] = {}
        self.pending: list[tuple[int, tuple[str, str, int | None, int], int, str]] = []

    def frame(self, linktype: int, raw: bytes, number: int) -> None:
        res = decode_frame(linktype, raw, number, self.cfg, reasm=self.reasm)
        obj = res.obj
        udp = obj.get("udp")
        if "uet" not in obj and udp is not None and "error" not in obj:
            # UET sent to another port is found by its verifying trailer (RP1)
            res = decode_frame(linktype, raw, number,
                               DecodeConfig(ports=(udp["dport"],), trailer="crc",
                                            open_tss=self.cfg.open_tss), reasm=self.reasm)
            uet = res.obj.get("uet", {})
            if not (uet.get("crc") or {}).get("ok"):
                return  # not UET, as far as anyone can tell
            obj = res.obj
        if "uet" not in obj:
            self._fragment(res, number)
            return
        rep = self.report
        rep.frames += 1
        self._fragment(res, number)
        if udp is not None and udp["dport"] != rep.uet_port:
            rep.add(Violation(number, "RP1", f"sent to UDP port {udp['dport']}, not the UET port "
                                             f"{rep.uet_port}: the reference drops it"))
        uet = obj["uet"]
        pds = uet.get("pds")
        tss = "tss" in uet
        if not tss:
            crc = uet.get("crc") or {}
            if udp is not None and udp.get("checksum"):
                rep.add(Violation(number, "RP4", f"UDP checksum {udp['checksum']:#06x}: the "
                                                 "reference's trailer covers the UDP header as "
                                                 "sent, with checksum 0"))
            elif crc.get("ok") is not True and obj["ip"]["dscp"] != DSCP_TRIMMED:
                rep.add(Violation(number, "RP4", "no verifying CRC-32C trailer"))
        if pds is None:
            return
        ptype = pds.get("type")
        nh = pds.get("next_hdr")
        if nh is not None and nh not in ACCEPTED_NEXT_HDR:
            rep.add(Violation(number, "RP3", f"next_hdr {nh} ({pds.get('next_hdr_name')}): the "
                                             "reference parses only 0, 3, 4 and 5"))
        src, dst = obj["ip"]["src"], obj["ip"]["dst"]
        # the EV: UDP's source port, or native IP's entropy header (A.1: an answer copies it)
        sport = (udp["sport"] if udp is not None
                 else (uet.get("entropy") or {}).get("entropy"))
        if ptype in REQUEST_TYPES or ptype in (RUDI_REQ, CONTROL_TYPE):
            # a CONTROL packet takes a PSN and is ACKed like a request (C.5, B.12)
            rep.requests += 1
            if rep.max_payload is not None and uet.get("payload_len", 0) > rep.max_payload:
                rep.add(Violation(number, "RP6", f"{uet['payload_len']} bytes of payload, above "
                                                 f"the fabric's {rep.max_payload}"))
            key = ((src, dst, pds.get("spdcid"), pds["psn"]) if ptype != RUDI_REQ
                   else (src, dst, None, pds.get("pkt_id")))
            if sport is not None:
                self.sent.setdefault(key, set()).add(sport)
            return
        answered: int | None = None
        pdcid: int | None = pds.get("dpdcid")
        if ptype in ACK_TYPES:
            answered = pds.get("ack_psn")
        elif ptype in NACK_TYPES:
            if pds.get("nt"):
                answered, pdcid = pds.get("pkt_id"), None
            else:
                answered = pds.get("nack_psn")
        elif ptype == RUDI_RESP:
            answered, pdcid = pds.get("pkt_id"), None
        if answered is None or sport is None:
            return
        rep.answers += 1
        self.pending.append((number, (dst, src, pdcid, answered), sport, pds.get("type_name", "")))

    def _fragment(self, res: Any, number: int) -> None:
        ip = res.ip_fields or {}
        rep = self.report
        if res.obj.get("ip", {}).get("version") == 4 and ip:
            if ip.get("flags", 0) & 1 or ip.get("fragment_offset"):
                rep.add(Violation(number, "RP2", "an IP fragment: the reference never "
                                                 "reassembles"))
            elif not ip.get("flags", 0) & 2:
                rep.add(Violation(number, "RP2", "DF is not set"))
        elif ip.get("next_header") == IPV6_FRAGMENT or res.fragment:
            rep.add(Violation(number, "RP2", "an IPv6 fragment: the reference never reassembles"))

    def finish(self) -> RefProvReport:
        # answers are paired at the end: a capture on one side may show an answer before the
        # request it answers when two interfaces are merged
        rep = self.report
        for number, key, sport, name in self.pending:
            evs = self.sent.get(key)
            if evs is None:
                rep.unpaired += 1
                continue
            rep.paired += 1
            if sport not in evs:
                what = "PSN" if key[2] is not None else "pkt_id"
                rep.add(Violation(number, "RP5", f"{name} for {what} {key[3]} leaves from UDP "
                                                 f"port {sport}, not the request's EV "
                                                 f"{'/'.join(map(str, sorted(evs)))}"))
        self.pending.clear()
        return rep


def check_frames(frames: Iterable[tuple[int, bytes, int]], *, uet_port: int = UET_UDP_PORT,
                 max_payload: int | None = None, open_tss: Any = None) -> RefProvReport:
    """Judge ``(linktype, frame bytes, frame number)`` items against RP1-RP6."""
    model = _Model(uet_port=uet_port, max_payload=max_payload, open_tss=open_tss)
    for linktype, raw, number in frames:
        model.frame(linktype, raw, number)
    return model.finish()


def check_capture(path: str, *, uet_port: int = UET_UDP_PORT, max_payload: int | None = None,
                  open_tss: Any = None) -> RefProvReport:
    """:func:`check_frames` over a pcap or pcapng file (raises uet.capture.pcap.CaptureError
    when it cannot be read)."""
    from .pcap import read_frames

    def frames() -> Iterable[tuple[int, bytes, int]]:
        for n, (linktype, raw, _t) in enumerate(read_frames(path), 1):
            yield linktype, raw, n

    return check_frames(frames(), uet_port=uet_port, max_payload=max_payload, open_tss=open_tss)


__all__ = ["ACCEPTED_NEXT_HDR", "RULE_FACTS", "RefProvReport", "Violation", "check_capture",
           "check_frames"]
