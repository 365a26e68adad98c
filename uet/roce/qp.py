"""A RoCEv2 reliable-connection queue pair (facts G.1-G.6), as pure code: the requester sends
one message - an RDMA WRITE or a SEND - as real frames (Ethernet/IPv4/UDP 4791/BTH[/RETH]/payload/
pad/ICRC) paced by DCQCN;
the responder answers with AETH ACKs, NAKs and CNPs, also real frames. No socket, no clock: the
driver hands frames and ``now`` in and takes frames and deadlines out.

Rules (numbered; tests name them):

  ROCE-Q1  a message of N bytes is ceil(N / mtu) packets: RDMA_WRITE_ONLY (0x0A) when one, otherwise
      WRITE_FIRST (0x06), MIDDLE (0x07) ..., LAST (0x08) (G.3); FIRST and ONLY carry a RETH with
      the message's DMA length (G.4); the last packet asks for an ACK (A bit). The PSN starts at
      ``psn0`` and counts packets modulo 2^24 (G.2). A SEND (``op="send"``) is the same packets
      with SEND_ONLY (0x04), SEND_FIRST (0x00), MIDDLE (0x01), LAST (0x02) and no RETH (G.4: the
      responder places a SEND into its posted receive buffer, so no address travels).
  ROCE-Q2  every frame carries the ICRC (G.6, via uet.native.roce_icrc, least-significant byte first);
      a frame whose ICRC does not verify is dropped by the responder and counted.
  ROCE-Q3  the UDP source port is fixed per QP (G.1: ECMP pins the QP to one path); the destination
      port is 4791. Data: DSCP ``dscp`` with ECT(0); CNP: DSCP ``cnp_dscp``; ACK and NAK: DSCP
      ``ack_dscp`` (by default ``cnp_dscp``; uet.compare.rocefabric COMPARE-F6 chooses); none of the three
      is ECN-capable.
  ROCE-Q4  responder, in order (go-back-N, ``ooo=False``): the packet with the expected PSN is placed
      and the expected PSN advances; one with a later PSN is dropped and answered with one NAK
      "PSN sequence error" (AETH syndrome 0x60, G.4) carrying the expected PSN - only one NAK
      until the expected packet arrives (as RC responders do); an earlier PSN (a duplicate) is
      answered with an ACK of the last in-order PSN when it asks for one.
  ROCE-Q5  responder, out-of-order placement (``ooo=True``, the adaptive-routing design): a later PSN
      is placed directly (its offset is known from its PSN) and remembered; the expected PSN
      advances over every placed packet; no NAK for reordering (and none for loss either: the
      model has no selective NAK, so a lost packet waits for ROCE-Q8's timeout).
  ROCE-Q6  ACKs (AETH syndrome 0x1F: ACK with unlimited credit) carry the last in-order PSN; one
      every ``ack_every`` in-order packets and for every packet with the A bit (coalescing).
      The AETH's MSN counts the messages completed on the QP (0, then 1 once the message is
      whole). A data packet whose opcode is not the one its position in the message calls for
      (a WRITE opcode on a SEND QP, a FIRST in the middle) is dropped and counted (``bad_opcode``):
      the model has one message per QP, so that is a sender bug, not traffic.
  ROCE-Q7  requester, go-back-N: an ACK for PSN p acknowledges every packet up to p; a NAK for PSN p
      acknowledges those before p and restarts sending at p (G.4, the spec's go-back-N);
      everything sent again counts as retransmitted bytes.
  ROCE-Q8  requester, timeout: with packets outstanding and no ACK progress for ``timeout_s`` (the
      IBTA local ACK timeout, 4.096 us x 2^exponent), sending restarts at the first
      unacknowledged packet.
  ROCE-Q9  CE on a data packet goes to the QP's CNP gate (uet.roce.dcqcn ROCE-D1); a CNP (BTH opcode 0x81,
      BECN set, DestQP the requester's QP, 16 reserved bytes: G.5) received by the requester goes
      to its DCQCN reaction point (ROCE-D2), which paces the data: a packet of F frame bytes leaves
      F x 8 / rate after the one before.
"""

from __future__ import annotations

from typing import Callable

from .. import native
from ..wire.build import udp_headers
from ..wire.enums import CE, ECT0
from ..wire.fast import fast
from .dcqcn import INF, CnpGate, DcqcnParams, DcqcnRp

ROCE_UDP_PORT = 4791            # G.1
OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A  # G.3
OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_ONLY = 0x00, 0x01, 0x02, 0x04      # G.3
#: ROCE-Q1: (FIRST, MIDDLE, LAST, ONLY) per operation
OPCODES: dict[str, tuple[int, int, int, int]] = {
    "write": (OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY),
    "send": (OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_ONLY),
}
DATA_OPS = frozenset(op for ops in OPCODES.values() for op in ops)
OP_ACK = 0x11                   # G.3 ACKNOWLEDGE
OP_CNP = 0x81                   # G.5
SYN_ACK = 0x1F                  # G.4: ACK, credit count 0x1F = unlimited
SYN_NAK_PSN = 0x60              # G.4: NAK, PSN sequence error
PSN_MOD = 1 << 24
HDRS = 14 + 20 + 8              # Ethernet, IPv4, UDP
BTH_LEN, RETH_LEN, AETH_LEN, ICRC_LEN = 12, 16, 4, 4
CNP_DSCP = 48                   # the CNP class of NVIDIA's NICs (cnp_dscp default 48), choice
DATA_DSCP = 26                  # uet.wire.build.roce_frame's default (a common RoCE class)
IB_TIMEOUT_UNIT = 4.096e-6      # IBTA local ACK timeout: 4.096 us x 2^exponent


def opcode_for(op: str, index: int, npkts: int) -> int:
    """ROCE-Q1: the opcode of packet ``index`` of a message of ``npkts`` packets."""
    first, middle, last, only = OPCODES[op]
    if npkts == 1:
        return only
    return first if index == 0 else last if index == npkts - 1 else middle


def timeout_for(exponent: int) -> float:
    """ROCE-Q8: the IBTA local ACK timeout for ``exponent`` (0-31)."""
    return IB_TIMEOUT_UNIT * (1 << exponent)


# The headers come from the schema's declarations (uet.wire.roce_headers), never packed by hand.
_BTH = fast("roce.bth").layout()
_BTH_CONST = _BTH.const({"p_key": 0xFFFF})  # P_Key 0xFFFF, TVer 0
_AETH = fast("roce.aeth").layout()
_RETH = fast("roce.reth").layout()
_read_bth = _BTH.reader("opcode", "dest_qp", "psn", "ack_req")
_read_syndrome = _AETH.reader("syndrome")


def bth(opcode: int, dest_qp: int, psn: int, *, ack_req: bool = False, becn: bool = False,
        pad: int = 0) -> bytes:
    """G.2: the 12 BTH bytes (P_Key 0xFFFF, TVer 0)."""
    put = _BTH.put
    return (_BTH_CONST | put("opcode", opcode) | put("pad_cnt", pad) | put("becn", becn)
            | put("dest_qp", dest_qp) | put("ack_req", ack_req)
            | put("psn", psn % PSN_MOD)).to_bytes(BTH_LEN, "big")


def aeth(syndrome: int, msn: int) -> bytes:
    """G.4: the 4 AETH bytes."""
    return (_AETH.put("syndrome", syndrome) | _AETH.put("msn", msn)).to_bytes(AETH_LEN, "big")


def reth(virtual_address: int, r_key: int, dma_length: int) -> bytes:
    """G.4: the 16 RETH bytes."""
    return _RETH.const({"virtual_address": virtual_address, "r_key": r_key,
                        "dma_length": dma_length}).to_bytes(RETH_LEN, "big")


class Framer:
    """ROCE-Q2, ROCE-Q3: frames of one host, headers cached per (peer, port, class, length)."""

    def __init__(self, src: str):
        self.src = src
        self._h: dict[tuple, bytes] = {}

    def frame(self, dst: str, sport: int, dscp: int, ecn: int, body: bytes) -> bytes:
        k = (dst, sport, dscp, ecn, len(body))
        h = self._h.get(k)
        if h is None:
            h = udp_headers(len(body) + ICRC_LEN, src=self.src, dst=dst, sport=sport,
                            dport=ROCE_UDP_PORT, dscp=dscp, ecn=ecn)
            if len(self._h) >= 4096:
                self._h.clear()
            self._h[k] = h
        ip = h[14:] + body
        return h[:14] + ip + native.roce_icrc(ip).to_bytes(4, "little")


def icrc_ok(frame: bytes) -> bool:
    """ROCE-Q2: the ICRC of an Ethernet frame built by :class:`Framer` verifies."""
    return native.roce_icrc(frame[14:-ICRC_LEN]) == int.from_bytes(frame[-ICRC_LEN:], "little")


def parse(frame: bytes) -> tuple[int, int, int, bool, int]:
    """(opcode, dest QP, PSN, A bit, AETH syndrome or -1) of a RoCEv2 frame from :class:`Framer`."""
    op, dest_qp, psn, ack_req = _read_bth(frame, HDRS)
    syn = _read_syndrome(frame, HDRS + BTH_LEN)[0] if op == OP_ACK else -1
    return op, dest_qp, psn, bool(ack_req), syn


class QpSender:
    """The requester side of one RC QP sending one message of ``payload``: an RDMA WRITE, or a
    SEND with ``op="send"`` (ROCE-Q1, ROCE-Q7 to ROCE-Q9)."""

    def __init__(self, *, qpn: int, dest_qpn: int, src: str, dst: str, sport: int, payload: bytes,
                 mtu: int, psn0: int, framer: Framer, line_rate_bps: float, timeout_s: float,
                 dcqcn: DcqcnParams | None = None, cc: bool = True, dscp: int = DATA_DSCP,
                 va: int = 0x10000, rkey: int = 0x1234, op: str = "write"):
        if mtu < 4 or mtu % 4:
            raise ValueError("the RoCE MTU is a positive multiple of 4")
        if op not in OPCODES:
            raise ValueError(f"op {op!r}: write or send")
        self.op = op
        self.qpn, self.dest_qpn, self.src, self.dst, self.sport = qpn, dest_qpn, src, dst, sport
        self.payload = payload
        self.mtu = mtu
        self.psn0 = psn0 % PSN_MOD
        self.framer = framer
        self.timeout_s = timeout_s
        self.dscp = dscp
        self.va, self.rkey = va, rkey
        self.npkts = max(1, -(-len(payload) // mtu))
        self.rp = DcqcnRp(line_rate_bps, dcqcn) if cc else None
        self.line = line_rate_bps
        self.snd_una = 0        # first unacknowledged packet (index from psn0)
        self.snd_nxt = 0        # next packet to send
        self.highest = 0        # packets ever sent (index past the highest)
        self.next_time = 0.0    # ROCE-Q9 pacing: the earliest the next packet may leave
        self.progress_at = 0.0  # ROCE-Q8: when snd_una last moved (or sending restarted)
        self.done_at: float | None = None
        self.sent_bytes = self.retx_bytes = self.retx_packets = 0
        self.naks = self.timeouts = self.acks = 0

    # --- sending ------------------------------------------------------------------------------
    def wants(self) -> bool:
        return self.done_at is None and self.snd_nxt < self.npkts

    def ready(self, now: float) -> bool:
        return self.wants() and now >= self.next_time

    def next_frame(self, now: float) -> bytes:
        """ROCE-Q1: the frame of packet ``snd_nxt``; advances it and the pacing clock (ROCE-Q9)."""
        i = self.snd_nxt
        n = self.npkts
        chunk = self.payload[i * self.mtu:(i + 1) * self.mtu]
        op = opcode_for(self.op, i, n)
        pad = -len(chunk) % 4
        head = bth(op, self.dest_qpn, self.psn0 + i, ack_req=i == n - 1, pad=pad)
        if op in (OP_WRITE_FIRST, OP_WRITE_ONLY):
            head += reth(self.va, self.rkey, len(self.payload))
        frame = self.framer.frame(self.dst, self.sport, self.dscp, ECT0,
                                  head + chunk + bytes(pad))
        if i < self.highest:
            self.retx_bytes += len(chunk)
            self.retx_packets += 1
        else:
            self.highest = i + 1
        if self.snd_una == self.snd_nxt:
            self.progress_at = now  # ROCE-Q8 counts from the first outstanding packet
        self.snd_nxt = i + 1
        self.sent_bytes += len(frame)
        rate = self.rp.rate if self.rp is not None else self.line
        self.next_time = max(now, self.next_time) + len(frame) * 8 / rate
        if self.rp is not None:
            self.rp.on_sent(len(frame), now)
        return frame

    # --- answers ------------------------------------------------------------------------------
    def _index(self, psn: int) -> int:
        return (psn - self.psn0) % PSN_MOD

    def on_ack(self, psn: int, now: float) -> None:
        """ROCE-Q7: everything up to ``psn`` is acknowledged."""
        i = self._index(psn)
        if i >= self.highest:  # an ACK for something never sent (or stale wrap): ignore
            return
        self.acks += 1
        if i + 1 > self.snd_una:
            self.snd_una = i + 1
            self.progress_at = now
            if self.snd_nxt < self.snd_una:
                self.snd_nxt = self.snd_una
        if self.snd_una >= self.npkts and self.done_at is None:
            self.done_at = now

    def on_nak(self, psn: int, now: float) -> None:
        """ROCE-Q7: go back to ``psn``."""
        i = self._index(psn)
        if i >= self.highest or i < self.snd_una:  # never sent, or already acknowledged: stale
            return
        self.naks += 1
        if i > self.snd_una:
            self.snd_una = i
        self.progress_at = now
        if i < self.snd_nxt:
            self.snd_nxt = i

    def on_cnp(self, now: float) -> None:
        if self.rp is not None:
            self.rp.on_cnp(now)

    def next_timer(self) -> float:
        """The earliest deadline: ROCE-Q8's timeout, DCQCN's timers."""
        t = self.progress_at + self.timeout_s if self.snd_una < self.snd_nxt and \
            self.done_at is None else INF
        return min(t, self.rp.next_timer()) if self.rp is not None else t

    def on_timer(self, now: float) -> None:
        if self.rp is not None:
            self.rp.on_timer(now)
        if self.done_at is None and self.snd_una < self.snd_nxt and \
                now >= self.progress_at + self.timeout_s:
            self.timeouts += 1  # ROCE-Q8
            self.snd_nxt = self.snd_una
            self.progress_at = now


class QpReceiver:
    """The responder side of one RC QP (ROCE-Q2, ROCE-Q4 to ROCE-Q6, ROCE-Q9's CNP). :meth:`on_data` returns the frames
    to send back (ACK, NAK, CNP)."""

    def __init__(self, *, qpn: int, peer_qpn: int, src: str, dst: str, sport: int, psn0: int,
                 nbytes: int, mtu: int, framer: Framer, ooo: bool = False, ack_every: int = 8,
                 cnp_interval_s: float = DcqcnParams.cnp_interval_s, cnp_dscp: int = CNP_DSCP,
                 ack_dscp: int | None = None,
                 on_place: Callable[[int, float], None] | None = None, op: str = "write"):
        if op not in OPCODES:
            raise ValueError(f"op {op!r}: write or send")
        self.op = op
        self.qpn, self.peer_qpn, self.src, self.dst, self.sport = qpn, peer_qpn, src, dst, sport
        self.psn0 = psn0 % PSN_MOD
        self.npkts = max(1, -(-nbytes // mtu))
        self.nbytes, self.mtu = nbytes, mtu
        self.framer = framer
        self.ooo = ooo
        self.ack_every = max(1, ack_every)
        self.gate = CnpGate(cnp_interval_s)
        self.cnp_dscp = cnp_dscp
        self.ack_dscp = cnp_dscp if ack_dscp is None else ack_dscp
        self.on_place = on_place
        self.epsn = 0                      # the expected packet (index from psn0)
        self.placed = bytearray(self.npkts) if ooo else None  # ROCE-Q5
        self.nak_sent = False
        self.since_ack = 0
        self.placed_bytes = 0
        self.bad_icrc = self.dropped_ooo = self.duplicates = self.bad_opcode = 0
        self.naks = self.acks_sent = 0
        self.complete_at: float | None = None

    def _ack(self, syndrome: int, idx: int) -> bytes:
        body = bth(OP_ACK, self.peer_qpn, self.psn0 + idx) + aeth(
            syndrome, 1 if self.complete_at is not None else 0)  # MSN: messages done
        return self.framer.frame(self.dst, self.sport, self.ack_dscp, 0, body)

    def cnp(self) -> bytes:
        """G.5: BTH 0x81 with BECN, DestQP = the requester's QP, PSN 0, 16 reserved bytes."""
        return self.framer.frame(self.dst, self.sport, self.cnp_dscp, 0,
                                 bth(OP_CNP, self.peer_qpn, 0, becn=True) + bytes(16))

    def _place(self, idx: int, now: float) -> None:
        n = min(self.mtu, self.nbytes - idx * self.mtu)
        self.placed_bytes += n
        if self.on_place is not None:
            self.on_place(n, now)

    def on_data(self, frame: bytes, now: float) -> list[bytes]:
        if not icrc_ok(frame):  # ROCE-Q2
            self.bad_icrc += 1
            return []
        out: list[bytes] = []
        if frame[15] & 3 == CE and self.gate.on_ce(now):  # ROCE-Q9 / ROCE-D1
            out.append(self.cnp())
        opcode, _, psn, ack_req, _ = parse(frame)
        idx = (psn - self.psn0) % PSN_MOD
        if idx >= self.npkts:
            self.duplicates += 1  # a PSN behind the window (modulo 2^24): a very old duplicate
            return out
        if opcode != opcode_for(self.op, idx, self.npkts):  # ROCE-Q6: not this message's packet
            self.bad_opcode += 1
            return out
        if idx == self.epsn:
            self._place(idx, now)
            self.epsn += 1
            self.nak_sent = False
            if self.placed is not None:
                self.placed[idx] = 1
                while self.epsn < self.npkts and self.placed[self.epsn]:  # ROCE-Q5
                    self.epsn += 1
            self.since_ack += 1
            if self.epsn >= self.npkts and self.complete_at is None:
                self.complete_at = now
            if ack_req or self.since_ack >= self.ack_every or self.complete_at is not None:
                self.since_ack = 0
                self.acks_sent += 1
                out.append(self._ack(SYN_ACK, self.epsn - 1))
        elif idx > self.epsn:
            if self.placed is not None:  # ROCE-Q5: place it where it goes
                if not self.placed[idx]:
                    self.placed[idx] = 1
                    self._place(idx, now)
                else:
                    self.duplicates += 1
            else:  # ROCE-Q4
                self.dropped_ooo += 1
                if not self.nak_sent:
                    self.nak_sent = True
                    self.naks += 1
                    out.append(self._ack(SYN_NAK_PSN, self.epsn))
        else:  # ROCE-Q4: a duplicate
            self.duplicates += 1
            if ack_req or self.complete_at is not None:
                self.acks_sent += 1
                out.append(self._ack(SYN_ACK, self.epsn - 1))
        return out
