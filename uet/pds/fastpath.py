"""The PDS data path's fast twins: the reference is :mod:`uet.pds.endpoint`,
:mod:`uet.pds.target` and :mod:`uet.pds.initiator`; these functions do the same for the cases
that make up nearly every packet of a bulk transfer, in fewer steps, and nothing else. A case they
do not name goes the reference way before any state changed. tests/pds/test_fastpath.py drives
the same datagram sequences through both (``ENABLED = False`` turns the twins off) and requires
the same datagrams, events and state. They are also the contract of the C data path (issue 15):
:mod:`uet.native.rxlane` takes the RUD part of :func:`receive_request` (with the SES's twin,
:func:`uet.ses.fastpath.take`) in C, tested against these; :mod:`uet.native.txbuild` builds the
datagrams :func:`send_new` decides on.

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

:func:`send_new` - the new requests of an established initiator PDC (no SYN form, I1), as many
as the windows (I4) and congestion control allow: what :meth:`Initiator._send_new` and
:meth:`Initiator._transmit` do for them (I3, I5, I15, the entropy from the selector, the sent
packet recorded as :meth:`Recovery.on_sent` records it), in one loop that decides; the
datagrams of each run of one item's packets are then built in one call
(:func:`uet.native.txbuild.build_requests`, C with a Python twin).
"""

from __future__ import annotations

from typing import Any

from .. import native
from ..native.txbuild import build_requests
from ..wire.enums import ROD_REQ, RUD_REQ
from ..wire.trailer import TRAILER_LEN, UDP_HEADER_LEN, udp_seed
from .datagram import CE, DSCP_TRIMMED, ECT0, DatagramMeta
from .packets import REQUEST_SIZE, read_request_fields
from .recovery import SentPacket
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


def send_new(p: Any, now: float, out: list) -> None:
    """New requests of the established initiator ``p`` (see the module docstring)."""
    cfg, rec, queue, metas = p.cfg, p.rec, p.queue, p._metas
    packets, sent_q, header = rec.packets, rec.sent_q, p.header
    can_send, on_send, next_ev = p.cc.can_send, p.cc.on_send, p.sel.next
    trigger, mtu, per_packet = cfg.ack_gen_trigger, cfg.mtu, cfg.ack_per_packet
    src, dst, port = p.ep.address, p.peer, cfg.port
    room = p._room()
    clear = (p.base - 1) & M32
    # The datagrams are built after the loop, a run (consecutive packets of one item, so
    # consecutive PSNs) per call: (item, first packet, first PSN, AR flags, entropies, metas).
    runs: list = []
    run_of = None
    ars: list = []
    evs: list = []
    run_metas: list = []
    while queue and room > 0:
        it = queue[0]
        item = it.item
        k = it.next
        payload = item.payload_of(k)
        n = len(payload)
        inflight = rec.inflight
        if not can_send(inflight, n):
            break
        last = k + 1 == item.count
        it.next = k + 1
        it.unacked += 1
        if last:
            queue.popleft()
            it.queued_all = True
        psn = p.next_psn
        p.next_psn = (psn + 1) & M32
        room -= 1
        pk = SentPacket(psn, it, k, n, last)
        packets[psn] = pk
        it.psns.append(psn)
        inflight += n
        # I15: the request fills the window with fewer than ACK_GEN_TRIGGER bytes out
        fills = inflight < trigger and (room == 0 or not can_send(inflight, mtu))
        ev = next_ev(now)
        # Recovery.on_sent
        seq = rec.seq = rec.seq + 1
        pk.seq = seq
        pk.xmits = 1
        pk.sent = now
        pk.ev = ev
        rec.inflight = inflight
        sent_q.append((seq, pk))
        rec.last_tx = now
        if rec.last_progress == 0.0:
            rec.last_progress = now
        on_send(now, n, False)
        meta = metas.get(ev)
        if meta is None:
            meta = metas[ev] = DatagramMeta(src, dst, ev, port, ECT0, 0)
        if it is not run_of:
            run_of, ars, evs, run_metas = it, [], [], []
            runs.append((item, k, psn, ars, evs, run_metas))
        ars.append(fills or last or per_packet)  # I5 (AR on the last request), I15
        evs.append(ev)
        run_metas.append(meta)
    for item, first, psn, ar, entropy, run_metas in runs:
        # I3: each packet's CLEAR_PSN offset from ``clear`` (clamped as RequestHeader.pack does)
        out.extend(zip(build_requests(header=header, item=item, first=first, psn=psn,
                                      clear_psn=clear, ar=ar, entropy=entropy, src=src, dst=dst,
                                      port=port, udp_seed=udp_seed), run_metas))
