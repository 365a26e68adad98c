"""One host of UET, sans-IO: the RUD/ROD PDS endpoint, the RUDI and UUD endpoints and the SES
above them, with one datagram interface (``receive_datagram``, ``datagrams_to_send``,
``get_timer``, ``handle_timer``, ``next_event``) that the simulator (virtual time) and the live
endpoint (sockets, trio) drive alike, and the SES operations, each over the delivery mode the
caller names.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
  HOST-H1  B.1 / B.10 / B.13 / B.14: an arriving datagram goes by its PDS type (the type sets of
      uet.wire.enums): RUDI request and response, and a NACK with NT = 1, to the RUDI endpoint;
      UUD to the UUD endpoint; requests, ACKs, NACKs (NT = 0) and CONTROL to the PDS endpoint;
      anything else (TSS, reserved types) is counted: ``unsupported``, or ``bad_crc`` when its
      trailer (A.3) does not verify (a damaged type byte is damage, not another type).
  HOST-H2  C.8: each operation goes over the mode its caller names: "rud" and "rod" as the requests of
      a PDC (the SES is the PDS's upper layer, uet/pds/upper.py); "rudi" as single-packet RUDI
      requests (a longer one fails the operation: RUDI answers each request alone); UUD carries
      DATAGRAM_SEND only. What the SES sends on its own (read data, DEFERRABLE_RTR, rendezvous
      pulls) goes over ``ses_mode`` (default "rud"; choice: the facts do not tie a response's
      PDC to the request's).
  HOST-H3  C.8 / SES-M2 of uet/ses/target.py: a RUDI target answers each request with the SES response
      (``inline_limit`` = mtu, P1); a request without one is counted (``rudi_no_response``).
  HOST-H4  SES-R3 of uet/ses/target.py: the SES's idle partial messages are dropped on the host's timer,
      every half ``partial_timeout`` while any is in reassembly.
  HOST-H5  A.3 / F: with ``security`` (a :class:`uet.tss.SecurityConfig`), TSS takes the place of the
      CRC-32C trailer on the wire. The endpoints below keep speaking the CRC form (their one
      trailer context, uet.wire.trailer); the host converts at its edge: every datagram it sends
      loses its trailer and is protected (security header, AES-256-GCM, tag); every datagram it
      receives must be TSS and authenticate (uet.tss.layer), and its plaintext goes to HOST-H1 with
      a trailer computed for its addressing. A datagram that is not TSS is dropped and counted
      (``tss_plain``): anyone can forge one. A trimmed TSS packet has lost its tag: by the
      layer's choice (``trimmed``), its surviving bytes are decrypted without being trusted and
      go on with DSCP 11, so the PDS answers NACK TRIMMED (R1) and delivers nothing from it.
  HOST-H6  choice (issue 25): a host stops with :meth:`Host.shutdown`, which its driver calls once it
      reads no more datagrams: the SES frees the storage of the messages it holds in an
      explicit order (each message's C lane, then its engines, then the views of its buffer;
      uet.ses.SesEndpoint.release), never left to the garbage collector, which cannot clear a
      memoryview still exported to C. Nothing is sent: closing PDCs is :meth:`Host.close` (C.7).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable

from .multipath import RoundRobinSpray
from .pds import DatagramMeta, Endpoint, PdsConfig, seal, trailer_ok
from .pds.rudi import RudiConfig, RudiEndpoint, RudiRequest, RudiRequestFailed, RudiResponse
from .pds.uud import UudEndpoint
from .ses import SesConfig, SesEndpoint
from .wire.enums import NACK_NT_FLAG, NACK_TYPES, PDC_TYPES, RUDI_TYPES, UUD_REQ

MODES = ("rud", "rod", "rudi", "uud")
INF = float("inf")


class Host:
    """A host at ``address``: see the module docstring."""

    def __init__(self, address: str, *, pds: PdsConfig | None = None,
                 ses: SesConfig | None = None, rudi: RudiConfig | None = None,
                 seed: int = 0, ses_mode: str = "rud", rudi_entropy: list[int] | None = None,
                 security: Any = None):
        if ses_mode not in ("rud", "rod"):
            raise ValueError("ses_mode must be 'rud' or 'rod'")
        self.address = address
        pc = pds or PdsConfig()
        self.ses = SesEndpoint(ses or SesConfig(mtu=min(4096, pc.mtu), seed=seed & 0xFFFFFFFF))
        if self.ses.config.mtu > pc.mtu:
            raise ValueError("the SES mtu must not exceed the PDS mtu (one SES packet, one request)")
        self.pds = Endpoint(address, pc, seed=seed, upper=self.ses)
        rc = rudi or RudiConfig(seed=seed & 0xFFFFFFFF, port=pc.port)
        self.rudi = RudiEndpoint(address, rc, selector=RoundRobinSpray(rudi_entropy)
                                 if rudi_entropy else None)
        self.uud = UudEndpoint(address, port=pc.port, mtu=self.ses.config.mtu + 64)
        self.ses_mode = ses_mode
        self.counts: Counter[str] = Counter()
        self._peer: dict[int, Any] = {}  # outstanding RUDI pkt_id -> the SES peer it went to
        self._now = 0.0
        self._sweep_at = INF
        self.tss: Any = None  # HOST-H5
        if security is not None:
            from .tss import TssLayer  # the cryptography import only for protected hosts

            self.tss = TssLayer(security)

    # --- the datagram interface -------------------------------------------------------------------
    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float, *,
                         csig: int | None = None, lane: int | None = None) -> None:
        """HOST-H1: to the endpoint of its PDS type. ``csig``: the CSIG tag the frame carried (E.4),
        for the PDS's reflection (RUDI and UUD have no ACK_CCX to reflect it in). ``lane``: the
        C lane's status for a datagram it already left (:meth:`receive_area`; PDS-R5 of
        uet/pds/endpoint.py: offered once)."""
        self._now = now
        if self.tss is not None:
            opened = self._unprotect(data, meta)
            if opened is None:
                return
            data, meta = opened
            lane = None  # (the lane never sees a protected datagram)
        t = data[0] >> 3 if data else -1
        if t in PDC_TYPES and not (t in NACK_TYPES and len(data) > 1 and data[1] & NACK_NT_FLAG):
            self.pds.receive_datagram(data, meta, now, csig=csig, lane=lane)
        elif t in RUDI_TYPES or t in NACK_TYPES:
            self.rudi.receive_datagram(data, meta, now)
            self._rudi_events(now)
        elif t == UUD_REQ:
            u = self.uud
            u.receive_datagram(data, meta, now)
            while (e := u.next_event()) is not None:
                self.ses.receive_bytes(e.next_hdr, e.ses, peer=e.meta.src, mode="uud", now=now)
        elif trailer_ok(data, meta):
            self.counts["unsupported"] += 1
        else:
            self.counts["bad_crc"] += 1  # a damaged type byte must not pass for another type
        if self._sweep_at == INF and self.ses.in_reassembly:
            self._arm_sweep(now)

    def receive_datagrams(self, items: list[tuple[bytes, DatagramMeta]], now: float) -> None:
        """:meth:`receive_datagram` for each ``(data, meta)`` of ``items``, in order, at ``now``
        (none with a CSIG tag): the same steps, fewer calls. While the sweep (HOST-H4) is armed the
        per-datagram check after HOST-H1 cannot change anything, so a run of PDC datagrams goes to
        the PDS in one :meth:`Endpoint.receive_datagrams`; anything else goes one by one."""
        one = self.receive_datagram
        if self.tss is not None:  # HOST-H5's datagrams go one by one
            for data, meta in items:
                one(data, meta, now)
            return
        self._now = now
        pds_one, pds_rx, ses = self.pds.receive_datagram, self.pds.receive_datagrams, self.ses
        n = len(items)
        i = 0
        while i < n:
            data, meta = items[i]
            t = data[0] >> 3 if data else -1
            if t not in PDC_TYPES or (t in NACK_TYPES and len(data) > 1 and data[1] & NACK_NT_FLAG):
                one(data, meta, now)  # HOST-H1: not the PDS's
                i += 1
            elif self._sweep_at == INF:
                pds_one(data, meta, now)
                if ses.in_reassembly:
                    self._arm_sweep(now)
                i += 1
            else:
                j = i + 1
                while j < n:
                    data = items[j][0]
                    t = data[0] >> 3 if data else -1
                    if t not in PDC_TYPES or (t in NACK_TYPES and len(data) > 1
                                              and data[1] & NACK_NT_FLAG):
                        break
                    j += 1
                pds_rx(items if i == 0 and j == n else items[i:j], now)
                i = j

    def receive_area(self, area: Any, n: int, local4: bytes, dport: int, now: float,
                     item: Callable[[int, bool], tuple[Any, DatagramMeta] | None]) -> None:
        """The ``n`` datagrams of a receive area (the live engine's ``recvmmsg``, read in place,
        uet.native.sockbatch.RxArea), in order: the C receive lane takes what it serves
        (:meth:`Endpoint.receive_area`), and ``item(i, with_data)`` makes each other one into
        ``(data, meta)`` (None: the engine dealt with it) for :meth:`receive_datagram`, with the
        lane's status (not offered to it again, its trailer verdict kept: PDS-R5 of
        uet/pds/endpoint.py) - the same steps as :meth:`receive_datagrams` over the same
        datagrams (HOST-H1 to HOST-H4). Only for a host without TSS (HOST-H5 opens every datagram first)."""
        pds = self.pds
        self._now = now
        i = 0
        while i < n:
            k, status = pds.receive_area(area, i, n, local4, dport, now)
            if k >= n:
                break
            if status == 2 or status == 3:  # taken; its ACK is due or built (PDS-A1)
                pds.acknowledge_lane(item(k, False)[1], status, now)  # type: ignore[index]
            else:
                it = item(k, True)
                if it is not None:
                    self.receive_datagram(it[0], it[1], now, lane=status)
            i = k + 1
        if self._sweep_at == INF and self.ses.in_reassembly:
            self._arm_sweep(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, DatagramMeta]]:
        self._now = now
        if self.ses.has_items:
            self.route(self.ses_mode, now)
        out = self.pds.datagrams_to_send(now)
        # RUDI and UUD are asked only once used, and when they hold something: most hosts never
        # use them (a plain attribute read, no call, on every host's per-send path)
        rudi, uud = self.rudi, self.uud
        if rudi.used and rudi.has_datagrams:
            out += rudi.datagrams_to_send(now)
        if uud.used and uud.has_datagrams:
            out += uud.datagrams_to_send(now)
        if self.tss is not None and out:  # HOST-H5: the tag replaces the trailer
            protect = self.tss.protect
            out = [(protect(data[:-4], meta), meta) for data, meta in out]
        return out

    def _unprotect(self, data: bytes, meta: DatagramMeta) -> tuple[bytes, DatagramMeta] | None:
        """HOST-H5 for one arriving datagram: its plaintext in the CRC form the endpoints read (with
        DSCP 11 kept for a trimmed one), or None when it was dropped (and counted)."""
        if not data or data[0] >> 3 != 1:
            self.counts["tss_plain"] += 1
            return None
        opened = self.tss.unprotect(data, meta)
        if opened is None:
            return None
        if opened.trimmed:  # no trailer to check: R1 answers it by its DSCP
            return opened.plaintext, meta
        return seal((opened.plaintext,), meta), meta

    def get_timer(self) -> float | None:
        t = self.pds.get_timer()
        if self.rudi.used and self.rudi.outstanding:  # only a RUDI in use has timers
            r = self.rudi.get_timer()
            if r is not None and (t is None or r < t):
                t = r
        if self._sweep_at < INF and (t is None or self._sweep_at < t):
            t = self._sweep_at
        return t

    def handle_timer(self, now: float) -> None:
        self._now = now
        self.pds.handle_timer(now)
        if self.rudi.used:  # a RUDI never used has no timer and no event
            self.rudi.handle_timer(now)
            self._rudi_events(now)
        if self._sweep_at <= now:  # HOST-H4
            self._sweep_at = INF
            self.ses.expire(now)
            self._arm_sweep(now)

    def next_event(self) -> Any:
        """The PDS's PDC events, then the SES's (operations complete, messages received ...)."""
        e = self.pds.next_event()
        return e if e is not None else self.ses.next_event()

    def _arm_sweep(self, now: float) -> None:
        if self._sweep_at == INF and self.ses.in_reassembly:
            self._sweep_at = now + self.ses.config.partial_timeout / 2

    # --- operations (HOST-H2) ----------------------------------------------------------------------------
    def op(self, mode: str, start: Callable[..., int], *args: Any, tc: int = 0,
           **kw: Any) -> int:
        """Start one SES operation (``start``, a SesEndpoint method, called with ``args`` and
        ``kw``) whose requests go over ``mode`` (and traffic class ``tc``); returns its handle."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.route(self.ses_mode, self._now)  # what the SES queued before goes its own way
        handle = start(*args, **kw)
        self.route(mode, self._now, tc=tc)
        return handle

    def send(self, dst: str, data: bytes, *, mode: str = "rud", job_id: int | None = None,
             pid_on_fep: int | None = None, resource_index: int | None = None,
             tc: int = 0) -> int:
        """SEND (D.1) of ``data`` to ``dst`` over ``mode``; it completes with its response.
        The D.2 ids default to the SES configuration's."""
        return self.op(mode, self.ses.send, dst, data, tc=tc, job_id=job_id,
                       pid_on_fep=pid_on_fep, resource_index=resource_index)

    def route(self, mode: str, now: float, *, tc: int = 0) -> None:
        """HOST-H2: hand what the SES queued to the endpoint of ``mode`` (RUD/ROD: the PDC of the
        item's job and ``tc``, C.1)."""
        for item in self.ses.items_to_send():
            peer = str(item.peer)
            if mode in ("rud", "rod"):
                try:
                    self.pds.submit(peer, item, mode=mode, job_id=item.job_id, tc=tc)
                except RuntimeError as exc:  # the PDC limit
                    if item.is_request:
                        self.ses.transport_failed(item.message_id, str(exc))
            elif mode == "rudi":
                if not item.is_request:
                    self.counts["rudi_stray_response"] += 1
                elif item.count != 1 or not (item.ses.get("som") and item.ses.get("eom")):
                    self.counts["rudi_multi_packet"] += 1
                    self.ses.transport_failed(item.message_id,
                                              "RUDI carries single-packet requests")
                else:
                    pid = self.rudi.send_request(peer, item.next_hdr, item.to_bytes(), now,
                                                 tag=item.message_id)
                    self._peer[pid] = item.peer
            else:
                for p in item.packets():
                    if not self.uud.send_datagram(peer, p.to_bytes(), next_hdr=p.next_hdr):
                        self.counts["uud_too_long"] += 1

    def _rudi_events(self, now: float) -> None:
        """HOST-H3: RUDI requests to the SES and its answers back; responses and failures up."""
        r, ses = self.rudi, self.ses
        while (e := r.next_event()) is not None:
            if isinstance(e, RudiRequest):
                rsp = ses.receive_bytes(e.next_hdr, e.ses, peer=e.meta.src, request_ref=e.pkt_id,
                                        mode="rudi", inline_limit=ses.config.mtu, now=now)
                if rsp is not None:
                    r.respond(e, rsp.next_hdr, rsp.to_bytes())
                else:
                    self.counts["rudi_no_response"] += 1
            elif isinstance(e, RudiResponse):
                ses.receive_bytes(e.next_hdr, e.ses, peer=self._peer.pop(e.pkt_id, None),
                                  message_id=e.tag, now=now)
            elif isinstance(e, RudiRequestFailed):
                self._peer.pop(e.pkt_id, None)
                ses.transport_failed(e.tag, e.reason)

    # --- what the drivers read ------------------------------------------------------------------------
    @property
    def stats(self) -> Counter:
        """The PDS's counters, with RUDI's retransmissions and every endpoint's bad CRCs and
        internal errors added, and the host's own."""
        s = Counter(self.pds.stats)
        rs = self.rudi.stats
        s["retransmissions"] += rs["rto_retransmissions"] + rs.get("nack_retransmissions", 0)
        s["bad_crc"] += rs["bad_crc"] + self.uud.stats["bad_crc"]
        s["internal_errors"] += (self.ses.stats["internal_errors"] + rs["internal_errors"]
                                 + self.uud.stats["internal_errors"])
        s.update(self.counts)
        if self.tss is not None:
            s.update(self.tss.stats)
        return s

    @property
    def nacks_sent(self) -> Counter:
        return self.pds.nacks_sent

    @property
    def nacks_rcvd(self) -> Counter:
        return self.pds.nacks_rcvd

    def pdcs(self) -> list:
        return self.pds.pdcs()

    def close(self, dst: str | None = None) -> None:
        self.pds.close(dst)

    def shutdown(self) -> None:
        """HOST-H6: the host stops; the messages in reassembly are dropped, their storage freed in
        order. Idempotent."""
        self.ses.release()
        self._sweep_at = INF  # HOST-H4: nothing left to sweep


def with_port(cfg: RudiConfig, port: int, entropy: list[int], seed: int) -> RudiConfig:
    """A RUDI configuration for a live host: its UET port, seed and entropy ports."""
    return dataclasses.replace(cfg, port=port, seed=seed & 0xFFFFFFFF, entropy_base=min(entropy),
                               entropy_values=len(entropy))
