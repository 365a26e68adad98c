"""CSIG-style congestion signalling (facts E.4): the compact tag, what its values mean, how a
switch updates it, and how a receiver reflects it. The one place that holds the project's choices
where the facts are silent (H.2: "exact bit layout of the CSIG compact and wide tags, their
EtherTypes, and the UET reflection header" were not found), so every user (switch model, live
relay, PDS, decoders) reads them from here.

The tag (compact form, E.4), an L2 tag between the Ethernet header and IP, like an 802.1Q tag:

    TPID (16 bits, EtherType ``CSIG_ETHERTYPE``, default 0x9900: the value one public switch
    test used, E.4) then 16 bits of tag, then the inner EtherType (0x0800 / 0x86DD):

    | t (2) | s (5) | lm (7) | d (1) | r (1) |     most significant bit first

  CMS-C1  ``t`` signal type: 0 ABW (available bandwidth, the path minimum), 1 ABW/C (available over
      capacity, minimum), 2 per-hop delay (maximum), 3 nQD (normalised queue depth, maximum;
      the extended profile). ``s`` is the signal as one of 32 buckets (E.4: compact tags use 32
      buckets), ``lm`` locates the hop that last replaced it, ``d`` (do-not-update) is set by a
      trimming switch (E.4, C.6), ``r`` is reserved (0; a tag with r set is counted and ignored).
  CMS-C2  Buckets (choice): ABW: s = floor(31 x ABW / full scale), full scale ``abw_full_gbps``
      (default 100 Gb/s); ABW/C and nQD: s = floor(31 x fraction); delay: s = floor(delay /
      ``delay_unit``), default 0.5 us (0 to 15.5 us: a one-BDP queue at 100 Gb/s is ~14 us).
  CMS-C3  A sender's tag starts at the neutral value (s = 31 for the minimum types, 0 for the maximum
      ones, lm 0, d 0); every switch egress compares its own bucket with ``s`` and replaces
      ``s`` and ``lm`` when its own is worse (E.4 "compare and replace"); a tag with d set is not
      changed.
  CMS-C4  Reflection (the project's extension; the spec's reflection header is not public, E.4):
      the receiver remembers the newest tag per (sender address, EV) and, when ``csig`` is on,
      answers with ACK_CCX (B.9) of ``ccx_type`` 14 (XDP2: 14-15 are for proprietary use) whose
      128-bit state holds four (EV: 16, tag: 16) entries: first the EV and tag of the request
      that triggered the ACK, then up to three other EVs whose tag changed since they were last
      reflected; unused entries are zero. It is never part of a conformance verdict.
  CMS-C5  Over UDP (the live relay, the userspace stand-in for the L2 tag): the same 4 bytes, TPID
      then the 16 bits, travel ahead of the UET bytes (:func:`ahead`, :func:`behind`); a UET
      datagram never starts with the TPID (its first byte holds a PDS type below 19, B.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

CSIG_ETHERTYPE = 0x9900      # E.4: the value one public switch test (FBOSS) used; an option
TAG_LEN = 4                  # TPID + 16 bits of tag (the inner EtherType follows, as in 802.1Q)
CSIG_CCX_TYPE = 14           # CMS-C4: B.9 ccx_type 14-15 are for proprietary extensions (XDP2)
REFLECT_ENTRIES = 4          # CMS-C4: 128 bits of ACK_CCX state, 32 bits per entry

ABW, ABW_C, DELAY, NQD = 0, 1, 2, 3            # CMS-C1 signal types
TYPE_NAMES = {ABW: "abw", ABW_C: "abw/c", DELAY: "delay", NQD: "nqd"}
TYPE_BY_NAME = {"abw": ABW, "abw/c": ABW_C, "abwc": ABW_C, "delay": DELAY, "nqd": NQD}
MINIMUM_TYPES = frozenset({ABW, ABW_C})        # E.4: the path minimum; the others the maximum
BUCKETS = 32                                   # E.4: compact tags use 32 buckets
TOP = BUCKETS - 1


@dataclass(frozen=True)
class Tag:
    """A decoded tag (CMS-C1)."""

    t: int
    s: int
    lm: int = 0
    d: int = 0
    r: int = 0

    def pack(self) -> int:
        return pack(self.t, self.s, self.lm, self.d, self.r)


def pack(t: int, s: int, lm: int = 0, d: int = 0, r: int = 0) -> int:
    """The 16 tag bits (CMS-C1)."""
    return ((t & 3) << 14) | ((s & 31) << 9) | ((lm & 127) << 2) | ((d & 1) << 1) | (r & 1)


def unpack(bits: int) -> Tag:
    return Tag((bits >> 14) & 3, (bits >> 9) & 31, (bits >> 2) & 127, (bits >> 1) & 1, bits & 1)


def tpid_bytes(ethertype: int = CSIG_ETHERTYPE) -> bytes:
    """The TPID as it stands on the wire (big-endian)."""
    return ethertype.to_bytes(2, "big")


def ahead(bits: int, data: bytes, tpid: bytes) -> bytes:
    """CMS-C5: ``data`` with the tag (``tpid``, then ``bits``) ahead of it."""
    return b"".join((tpid, bits.to_bytes(2, "big"), data))


def behind(data: bytes, tpid: bytes) -> tuple[int | None, bytes]:
    """CMS-C5: (the tag's 16 bits, the bytes after it) of ``data`` that starts with a whole tag;
    (None, ``data``) otherwise."""
    if len(data) >= TAG_LEN and data[:2] == tpid:
        return (data[2] << 8) | data[3], data[TAG_LEN:]
    return None, data


def neutral(t: int) -> int:
    """CMS-C3: the tag a sender puts on a packet: nothing measured yet."""
    return pack(t, TOP if t in MINIMUM_TYPES else 0)


def worse(t: int, a: int, b: int) -> bool:
    """Whether bucket ``a`` signals more congestion than ``b`` for type ``t`` (CMS-C3)."""
    return a < b if t in MINIMUM_TYPES else a > b


def stamp(bits: int, bucket: int, locator: int) -> int:
    """CMS-C3: compare and replace at one switch egress; a tag with d set stays as it is."""
    if bits & 2:
        return bits
    t, s = (bits >> 14) & 3, (bits >> 9) & 31
    if worse(t, bucket, s):
        return (bits & ~((31 << 9) | (127 << 2))) | ((bucket & 31) << 9) | ((locator & 127) << 2)
    return bits


def set_d(bits: int) -> int:
    """CMS-C3 / C.6: a trimming switch sets do-not-update."""
    return bits | 2


@dataclass(frozen=True)
class Scale:
    """CMS-C2: what a bucket means; one per fabric (every switch and every reader must agree)."""

    abw_full_gbps: float = 100.0
    delay_unit_s: float = 0.5e-6

    def bucket(self, t: int, *, abw_gbps: float = 0.0, capacity_gbps: float = 1.0,
               delay_s: float = 0.0, depth_fraction: float = 0.0) -> int:
        """The bucket of a measurement of type ``t``."""
        if t == ABW:
            v = TOP * abw_gbps / self.abw_full_gbps
        elif t == ABW_C:
            v = TOP * abw_gbps / capacity_gbps if capacity_gbps > 0 else 0.0
        elif t == DELAY:
            v = delay_s / self.delay_unit_s
        else:
            v = TOP * depth_fraction
        return 0 if not v > 0 else min(TOP, int(v))

    def value(self, t: int, s: int) -> float:
        """The lower edge of bucket ``s``: Gb/s (ABW), a fraction (ABW/C, nQD) or seconds."""
        if t == ABW:
            return s * self.abw_full_gbps / TOP
        if t == DELAY:
            return s * self.delay_unit_s
        return s / TOP


# --- CMS-C4: reflection in ACK_CCX ------------------------------------------------------------------

def reflect(entries: Iterable[tuple[int, int]]) -> int:
    """The 128-bit ACK_CCX state holding up to four (EV, tag) entries, first one first."""
    state = 0
    for k, (ev, bits) in enumerate(list(entries)[:REFLECT_ENTRIES]):
        state |= ((ev & 0xFFFF) << 16 | (bits & 0xFFFF)) << (32 * (REFLECT_ENTRIES - 1 - k))
    return state


def reflected(state: int) -> list[tuple[int, int]]:
    """The (EV, tag) entries of a reflection, unused (zero) entries left out."""
    out = []
    for k in range(REFLECT_ENTRIES):
        word = (state >> (32 * (REFLECT_ENTRIES - 1 - k))) & 0xFFFFFFFF
        if word:
            out.append((word >> 16, word & 0xFFFF))
    return out
