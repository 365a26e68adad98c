"""Priority flow control (IEEE 802.1Qbb, "PFC"), the lossless safety net of a RoCEv2 fabric, as pure
code: a switch ingress that counts the bytes it holds per priority and says when to pause and
resume its upstream neighbour, the pause state of that neighbour's egress, and the pause frame
itself. The driver (uet.compare.rocefabric) moves the frames and the time.

Sources: [Q] IEEE 802.1Qbb-2011 (per-priority PAUSE: MAC control frame, EtherType 0x8808, opcode
0x0101, a class-enable vector and eight 16-bit pause times in quanta of 512 bit times; a time of
0 resumes at once, "XON"). [HR] the headroom a lossless priority needs above its XOFF point:
what is still arriving after the pause is sent, i.e. the round trip of the cable plus a maximum
frame at each end plus the peer's response time (the 802.1Qbb annex calculation as switch
vendors document it; response time here: one 512-bit-time quantum budget of 3840 bits, a choice).
[DC] the DCQCN paper (Zhu et al. 2015, section 2) on PFC pauses spreading to innocent flows.

Rules (numbered; tests name them):

  ROCE-P1  ingress accounting: a data frame of the lossless priority that enters a switch port is
      counted against that ingress port until it leaves the switch (it is dequeued at its
      egress). Control traffic (other priorities) is not counted.
  ROCE-P2  XOFF: when the count rises above ``xoff_bytes`` and the upstream is not already paused,
      the switch sends a PFC frame with ``quanta`` for the priority to the upstream port.
  ROCE-P3  XON: when the count falls to ``xon_bytes`` or below while the upstream is paused, the switch
      sends a PFC frame with time 0 (resume).
  ROCE-P4  refresh: while the count stays above ``xon_bytes``, the XOFF is sent again when half of
      its pause time has passed, so the upstream never resumes on expiry alone ([Q]: a pause
      lasts its quanta x 512 bit times at the link rate).
  ROCE-P5  the paused egress sends no frame of the priority until the pause expires or an XON
      arrives; other priorities (CNPs, and ACKs when they have a class of their own) are not
      paused. It counts the time it was paused.
  ROCE-P6  headroom: ``xoff_bytes + headroom_bytes`` must fit the ingress's share of the buffer, so a
      paused upstream's frames in flight are never dropped; :func:`headroom_bytes` computes
      [HR]'s figure for a link.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import wire

PFC_ETHERTYPE = 0x8808      # [Q] MAC control
ETH_LEN, PFC_LEN = wire.codec("eth").min_size, wire.codec("pfc").min_size  # 14, 20
PFC_OPCODE = 0x0101         # [Q] priority-based flow control
PFC_DST_MAC = bytes.fromhex("0180c2000001")  # [Q] the reserved MAC control multicast address
QUANTUM_BITS = 512          # [Q] one pause quantum is 512 bit times
MAX_QUANTA = 0xFFFF
RESPONSE_BITS = 3840        # [HR] the peer's response budget (choice, see the docstring)
PFC_FRAME_BYTES = 64        # a minimum Ethernet frame (60 bytes + FCS)


def pause_frame(priority: int, quanta: int, src_mac: bytes = bytes.fromhex("020000000003")) -> bytes:
    """[Q] a PFC frame pausing ``priority`` for ``quanta`` (0: resume), padded to 60 bytes (the
    FCS is not part of a capture); built from the schema's ``eth`` and ``pfc`` declarations."""
    if not 0 <= priority <= 7 or not 0 <= quanta <= MAX_QUANTA:
        raise ValueError("priority 0-7, quanta 0-65535")
    times = {f"pause_quanta_{n}": quanta if n == priority else 0 for n in range(8)}
    frame = (wire.encode("eth", {"dst": int.from_bytes(PFC_DST_MAC, "big"),
                                 "src": int.from_bytes(src_mac, "big"), "ethertype": PFC_ETHERTYPE})
             + wire.encode("pfc", {"opcode": PFC_OPCODE, "class_enable": 1 << priority, **times}))
    return frame + bytes(60 - len(frame))


def parse_pause(frame: bytes) -> tuple[int, int] | None:
    """(class-enable vector, the quanta of the lowest enabled priority) of a PFC frame, else None."""
    if len(frame) < ETH_LEN + PFC_LEN:
        return None
    eth = wire.decode("eth", frame)
    pfc = wire.decode("pfc", frame, ETH_LEN)
    if eth["ethertype"] != PFC_ETHERTYPE or pfc["opcode"] != PFC_OPCODE:
        return None
    vec = pfc["class_enable"]
    for p in range(8):
        if vec >> p & 1:
            return vec, pfc[f"pause_quanta_{p}"]
    return vec, 0


def pause_seconds(quanta: int, rate_bps: float) -> float:
    """[Q] how long ``quanta`` pause a link of ``rate_bps``."""
    return quanta * QUANTUM_BITS / rate_bps


def headroom_bytes(rate_bps: float, delay_s: float, max_frame: int) -> int:
    """ROCE-P6, [HR]: bytes that may still arrive after XOFF: the cable round trip at the rate, a
    maximum frame being sent at each end, the PFC frame, and the response time."""
    return int(2 * delay_s * rate_bps / 8 + 2 * max_frame + PFC_FRAME_BYTES + RESPONSE_BITS / 8)


@dataclass(frozen=True)
class PfcParams:
    """The thresholds of one lossless priority at a switch ingress (ROCE-P2, ROCE-P3)."""

    xoff_bytes: int = 64 * 1024   # choice: about half a BDP of the default 100 Gb/s leaf-spine
    xon_bytes: int = 48 * 1024    # choice: xoff minus four 4 KiB frames, so a pause lasts a while
    quanta: int = MAX_QUANTA      # [Q] the longest pause; ROCE-P4 refreshes it
    priority: int = 3             # the RoCE lossless class commonly configured (choice)

    def __post_init__(self) -> None:
        if not 0 <= self.xon_bytes < self.xoff_bytes:
            raise ValueError("PFC thresholds: 0 <= xon < xoff")
        if not 1 <= self.quanta <= MAX_QUANTA:
            raise ValueError("PFC quanta 1..65535")


class PfcIngress:
    """ROCE-P1 to ROCE-P4 for one switch ingress port. :meth:`add` and :meth:`remove` return the pause time in
    quanta to send upstream now (``quanta`` for XOFF, 0 for XON) or None."""

    __slots__ = ("p", "bytes", "xoff", "since", "frames", "xon_frames", "max_bytes")

    def __init__(self, params: PfcParams):
        self.p = params
        self.bytes = 0
        self.xoff = False      # the upstream was told to pause (and not yet to resume)
        self.since = 0.0       # when the last XOFF went out (ROCE-P4)
        self.frames = 0        # XOFF frames sent, refreshes included
        self.xon_frames = 0
        self.max_bytes = 0

    def add(self, n: int, now: float) -> int | None:
        self.bytes += n
        if self.bytes > self.max_bytes:
            self.max_bytes = self.bytes
        if not self.xoff and self.bytes > self.p.xoff_bytes:  # ROCE-P2
            self.xoff = True
            self.since = now
            self.frames += 1
            return self.p.quanta
        return None

    def remove(self, n: int, now: float) -> int | None:
        self.bytes -= n
        if self.xoff and self.bytes <= self.p.xon_bytes:  # ROCE-P3
            self.xoff = False
            self.xon_frames += 1
            return 0
        return None

    def refresh(self, now: float, rate_bps: float) -> int | None:
        """ROCE-P4: the XOFF again if half its pause time has passed and the count is still high."""
        if self.xoff and now - self.since >= pause_seconds(self.p.quanta, rate_bps) / 2:
            self.since = now
            self.frames += 1
            return self.p.quanta
        return None


class PauseGate:
    """ROCE-P5: the pause state of one egress port's lossless priority, and the time it spent paused."""

    __slots__ = ("until", "paused_s", "_from", "pauses")

    def __init__(self) -> None:
        self.until = 0.0
        self.paused_s = 0.0
        self._from: float | None = None  # when the current pause began
        self.pauses = 0                   # PFC frames with a nonzero time received

    def receive(self, quanta: int, now: float, rate_bps: float) -> None:
        """A PFC frame for the priority arrived at ``now``."""
        self._close(now)
        if quanta == 0:
            self.until = now
            return
        self.pauses += 1
        self.until = now + pause_seconds(quanta, rate_bps)
        self._from = now

    def paused(self, now: float) -> bool:
        if now < self.until:
            return True
        self._close(now)
        return False

    def _close(self, now: float) -> None:
        if self._from is not None:
            self.paused_s += min(now, self.until) - self._from
            self._from = None

    def total(self, now: float) -> float:
        """Paused time up to ``now``, the current pause included."""
        cur = min(now, self.until) - self._from if self._from is not None else 0.0
        return self.paused_s + max(cur, 0.0)
