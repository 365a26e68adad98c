"""The congestion-control interface, which the fixed window (:mod:`uet.cms.fixed`), NSCC (E.1,
:mod:`uet.cms.nscc`) and RCCC (E.2, :mod:`uet.cms.rccc`) implement; :mod:`uet.cms.choice` builds
the one a command names (``--cc``).

The PDS calls the ``on_*`` hooks as it learns things and asks :meth:`can_send` before it puts a
new or retransmitted request on the wire. Every hook takes keyword arguments only, named the same
in every hook and in the entropy selectors' (:mod:`uet.multipath.base`): ``now`` (seconds, the
caller's clock; an algorithm never reads a clock itself), ``ev`` (an entropy value), ``size``
(bytes), then what the event says (``retx``, ``inflight``, ``ack``, ``code``, ``rtt``, ``bits``):

  on_send(now, size, retx)            on_nack(now, size, code)     on_rtt_sample(now, rtt)
  on_ack(now, size, inflight, ack)    on_loss(now, size)           on_signal(now, ev, bits)
  on_ce(now, size)                    on_timeout(now)              on_credit(now, size)

``ack`` is the ACK as the PDS read it
(:class:`uet.pds.packets.Ack`: its flags, CACK, SACK and MPR by name); the NSCC state of ACK_CC
(``service_time``, ``rcv_cwnd_pend``, ``rcvd_bytes``, docs/facts.md B.8, E.1) joins it when an
algorithm reads it. A CSIG tag the receiver reflected (ACK_CCX ccx_type 14, E.4) reaches
:meth:`on_signal` before that ACK's other hooks. The PDS calls every hook of whatever class it is
given (no class is treated apart): tests/pds/test_interfaces.py records the calls. A class with ``wants_credit`` set is
receiver-credit paced (RCCC, E.2, :mod:`uet.cms.rccc`): the PDS states its :meth:`credit_target` in
the CC request form (B.6) or CONTROL CREDIT_REQ (B.12) and hands it the grants of ACK_CC cc_type 1
(B.8) and CONTROL CREDIT (B.12) through :meth:`on_credit`; for the others both are no-ops.
"""

from __future__ import annotations

from typing import Any


class CongestionControl:
    """Base class: a window in bytes (and, derived, in packets). Subclasses override the hooks."""

    mtu: int = 4096
    wants_credit: bool = False  # E.2: True -> the PDS states credit_target and passes grants on

    @property
    def cwnd_bytes(self) -> int:
        raise NotImplementedError

    @property
    def cwnd_packets(self) -> int:
        return max(1, self.cwnd_bytes // max(1, self.mtu))

    def can_send(self, inflight_bytes: int, nbytes: int) -> bool:
        """Whether ``nbytes`` more may go out with ``inflight_bytes`` already in flight. At least
        one packet may always be in flight."""
        return inflight_bytes == 0 or inflight_bytes + nbytes <= self.cwnd_bytes

    # --- hooks: keyword-only, in one order (now, the EV, the bytes, what the event says), as the
    # selectors' (uet.multipath.base) and aioquic's congestion/base.py ------------------------

    def on_send(self, *, now: float, size: int, retx: bool) -> None:
        """``size`` bytes of a request went out (``retx``: a retransmission)."""

    def on_ack(self, *, now: float, size: int, inflight: int, ack: Any = None) -> None:
        """``size`` bytes newly acknowledged (CACK advanced or SACKed) by one ACK, ``inflight``
        bytes still out after it."""

    def on_ce(self, *, now: float, size: int) -> None:
        """The ACK said the acknowledged packet arrived CE-marked (ACK flag M, A.2)."""

    def on_nack(self, *, now: float, size: int, code: int) -> None:
        """A NACK (B.11) ``code`` for a packet of ``size`` bytes; TRIMMED is NSCC's strong
        signal (C.6)."""

    def on_loss(self, *, now: float, size: int) -> None:
        """The sender inferred the loss of a packet of ``size`` bytes (SACK / reorder timer)."""

    def on_timeout(self, *, now: float) -> None:
        """The retransmission timer expired."""

    def on_rtt_sample(self, *, now: float, rtt: float) -> None:
        """One RTT sample (Karn: never from a retransmitted packet)."""

    def on_signal(self, *, now: float, ev: int, bits: int) -> None:
        """A CSIG tag reflected for entropy ``ev`` (its 16 tag bits), uet.cms.csig CMS-C4."""

    def credit_target(self, backlog_bytes: int) -> int:
        """RCCC (E.2, B.6): the demand in bytes to state with ``backlog_bytes`` waiting; 0 here."""
        return 0

    def on_credit(self, *, now: float, size: int) -> None:
        """RCCC (E.2, B.8 cc_type 1, B.12 CREDIT): the receiver granted ``size`` bytes; ignored
        here."""
