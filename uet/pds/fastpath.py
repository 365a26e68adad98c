"""The PDS receive path's fast twin: the reference is :mod:`uet.pds.endpoint` and
:mod:`uet.pds.target`; :func:`receive_request` does the same for the case that makes up nearly
every packet a bulk transfer delivers, in fewer steps, and nothing else. A case it does not name
goes the reference way before any state changed. tests/pds/test_fastpath.py drives the same
datagram sequences through both (``ENABLED = False`` turns the twin off) and requires the same
datagrams, events and state. It is also the contract of the C data path (issue 15):
:mod:`uet.native.rxlane` takes the RUD part of :func:`receive_request` (with the SES's twin,
:func:`uet.ses.fastpath.take`) in C, tested against these. The send side has no Python twin:
:meth:`uet.pds.initiator.Initiator._send_new` decides and :mod:`uet.native.txbuild` builds.

:func:`receive_request` - a request on an established PDC, taken when all of these hold:

* not trimmed (R1), at least a header and a trailer long, type RUD_REQ or ROD_REQ (the 12-byte
  header, B.5: the CC forms go the reference way), no SYN;
* its DPDCID names an open target PDC (past half-open, no CLOSE seen, C2) whose peer address,
  SPDCID and mode are the packet's (T4-T6);
* its PSN is new and inside the window (W1); for ROD it is the next to deliver and nothing is
  buffered (W4: delivered at once, as RUD is);
* the CRC-32C trailer verifies (R2), and the upper layer takes it in one step (its own twin,
  :meth:`uet.pds.upper.Upper.take`: admitted, no response).

It then does what the reference does with such a request: :meth:`Target.record` (W1), the next
PSN to deliver (ROD), and :meth:`Target.acknowledge` (A1).
"""

from __future__ import annotations

from typing import Any

from .. import native
from ..wire.enums import ROD_REQ, RUD_REQ
from ..wire.trailer import TRAILER_LEN, UDP_HEADER_LEN, udp_seed
from .datagram import CE, DSCP_TRIMMED, DatagramMeta
from .packets import REQUEST_SIZE, read_request_fields
from .target import OPEN

ENABLED = True

M32 = 0xFFFFFFFF
_crc_prefix = native.crc32c_prefix
_INT = int.from_bytes


def receive_request(ep: Any, data: bytes, meta: DatagramMeta, now: float) -> bool:
    """Take ``data`` if it is the request described above; True if taken."""
    n = len(data)
    end = n - TRAILER_LEN
    if end < REQUEST_SIZE or meta.dscp == DSCP_TRIMMED:
        return False
    ptype = data[0] >> 3
    if ptype != RUD_REQ and ptype != ROD_REQ:
        return False
    next_hdr, retx, ar, syn, clear_offset, psn, spdcid, dpdcid = read_request_fields(data)
    if syn:
        return False
    t = ep._tgts.get(dpdcid)
    if (t is None or t.state != OPEN or t.peer != meta.src or t.peer_pdcid != spdcid
            or t.rod != (ptype == ROD_REQ)):
        return False
    win = t.win
    d = (psn - win.cack) & M32
    if not 0 < d <= t.size or win.test(psn):
        return False
    if t.rod and (psn != t.next_deliver or t.rod_buf):
        return False
    seed = udp_seed(meta.src, meta.dst, meta.sport, meta.dport, UDP_HEADER_LEN + n)
    if _crc_prefix(data, end, seed) != _INT(data[end:], "big"):
        return False
    if not ep.take(t.peer, next_hdr, memoryview(data)[REQUEST_SIZE:end], now):
        return False
    plen = end - REQUEST_SIZE
    if retx:
        ep.stats_counter["retx_rx"] += 1  # R4 of uet/pds/endpoint.py
    t.last_rx = now
    t.record(psn, d, plen, clear_offset)
    if t.rod:
        t.next_deliver = (psn + 1) & M32  # W4: it was the next, and nothing waits behind it
    cfg = t.cfg
    add = plen if plen > cfg.ack_gen_min_pkt_add else cfg.ack_gen_min_pkt_add
    ce = meta.ecn == CE
    if (ar or ce or cfg.ack_per_packet or t.pending_ar is not None or t.late_responses
            or t.bytes_since_ack + add >= cfg.ack_gen_trigger):
        t.acknowledge(meta, psn, plen, None, ar=ar, syn=0, retx=retx, ce=ce, now=now)
    else:
        t.bytes_since_ack += add  # A1: nothing asks for an ACK yet
    return True

