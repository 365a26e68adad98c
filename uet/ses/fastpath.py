"""The SES target's fast path (:meth:`SesEndpoint.take`): a twin of the reference
(:meth:`SesEndpoint.admit` and :meth:`SesEndpoint.deliver`, the rules of :mod:`uet.ses.target`)
for the one case that makes up nearly every packet of a long message - a middle packet of a SEND
or TAGGED_SEND already in reassembly - and for nothing else.

It takes a packet only when all of these hold, and changes nothing otherwise (the caller then
goes the reference way):

* standard header (next_hdr 3, D.3) without SOM, EOM or IE, opcode SEND or TAGGED_SEND;
* the message (K1: source, initiator id, message id) is in reassembly, has its buffer, has not
  failed (T8), is not deferred (M4), has the packet's opcode and request length;
* ``payload_length`` is the payload present and the payload ends inside the message (T5);
* the packet does not complete the message (completion, the response and delivery are the
  reference's), the target does not check job ids (T2), and its bytes land in storage already in
  use (a packet that needs a new reassembly chunk, charged to the peer's budget by R1 and R2,
  goes the reference way: one in 64 at the default 4096-byte MTU).

What it does is what the reference does for such a packet: the bytes placed, the message's idle
time restarted (R3), a repeat counted as a duplicate.
No response: the reference gives none before the last byte (M6). tests/ses/test_fastpath.py
feeds the same packet sequences through both and requires the same responses, events and state;
``ENABLED = False`` turns it off.
"""

from __future__ import annotations

from typing import Any

from .common import NH_STD, SEND, TAGGED_SEND
from .packets import STD_SIZE, read_std

ENABLED = True
_OPCODES = (SEND, TAGGED_SEND)


def take(ses: Any, peer: Any, next_hdr: int, data: Any, now: float) -> bool:
    """:meth:`SesEndpoint.take`: ``data`` (the SES bytes of one request) if it is the case
    above; True if taken."""
    if now > ses._now:
        ses._now = now
    n = len(data) - STD_SIZE
    if next_hdr != NH_STD or n < 0 or not ENABLED or ses.config.check_job:
        return False
    opcode, som, eom, ie, mid, initiator, length, plen, offset = read_std(data)
    if som or eom or ie or plen != n or offset + n > length or opcode not in _OPCODES:
        return False
    rx = ses._rx.get((peer, initiator, mid))
    if (rx is None or rx.asm is None or rx.failed or rx.deferred or rx.opcode != opcode
            or rx.length != length or rx.got + n >= length):
        return False
    new = rx.asm.place_allocated(offset, data[STD_SIZE:])
    if new is None:
        return False  # new storage to charge (R1, R2): the reference's
    ses.stats["requests"] += 1
    rx.last = ses._now
    if new:
        rx.got += new
    else:
        ses.stats["duplicate_packets"] += 1
    return True
