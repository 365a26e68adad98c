"""The PDS send path's fast twin (the receive twin is gone, issue 28: what the C receive lane,
uet.native.rxlane, does not take goes the reference way): the reference is
:mod:`uet.pds.initiator`; :func:`send_new` does the same for the case that makes up nearly every
packet of a bulk transfer, in fewer steps, and nothing else. tests/pds/test_fastpath.py drives
the same datagram sequences with ``ENABLED`` on and off and requires the same datagrams, events
and state. :mod:`uet.native.txbuild` builds the datagrams :func:`send_new` decides on.

:func:`send_new` - the new requests of an established initiator PDC (no SYN form, I1), as many
as the windows (I4) and congestion control allow: what :meth:`Initiator._send_new` and
:meth:`Initiator._transmit` do for them (I3, I5, I15, the entropy from the selector, the sent
packet recorded as :meth:`Recovery.on_sent` records it), in one loop that decides; the
datagrams of each run of one item's packets are then built in one call
(:func:`uet.native.txbuild.build_requests`, C with a Python twin).
"""

from __future__ import annotations

from typing import Any

from ..native.txbuild import build_requests
from ..wire.trailer import udp_seed
from .datagram import ECT0, DatagramMeta
from .recovery import SentPacket

ENABLED = True

M32 = 0xFFFFFFFF


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
