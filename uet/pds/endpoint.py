"""The sans-IO PDS core: one :class:`Endpoint` per host, owning initiator and target PDCs.

The endpoint never touches a socket or a clock (design.md principle 2): datagrams (the UET bytes
of the UDP payload, CRC-32C trailer included) come in through :meth:`Endpoint.receive_datagram`
with a :class:`DatagramMeta` and ``now``; datagrams to send come out of
:meth:`Endpoint.datagrams_to_send`; :meth:`Endpoint.get_timer` / :meth:`Endpoint.handle_timer`
drive retransmission; :meth:`Endpoint.next_event` hands events to the layer above.

RULES (each names its uet-facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================

Receive, before anything else
  R1  design.md Defaults, C.6: DSCP 11 means trimmed, whatever the CRC says -> NACK TRIMMED (0x01)
      for the packet's PSN (spdcid = our PDC if known, else 0). TRIMMED_LASTHOP is never sent.
  R2  A.3 / design.md Defaults: the CRC-32C trailer (addresses, UDP header with checksum 0, UET
      bytes) must verify; a bad one is dropped and counted (``stats['bad_crc']``).
  R3  principle 6: nothing raises out of the core; undecodable input is a counted drop
      (``stats['malformed']``); an unsupported PDS type (TSS, RUDI, UUD here) likewise.

PDC identity and establishment (target)
  T1  C.1: PDCID 0 is reserved; PDCIDs come from one 16-bit space per endpoint (initiator and
      target PDCs alike), never reusing one that is live or still in its close MSL.
  T2  C.1: a SYN request with no PDC for (source, destination, SPDCID): allocate a PDC,
      DPDCID := packet SPDCID, START_PSN := PSN - psn_offset, CACK := START_PSN - 1; the mode
      (RUD/ROD) is the request type's.
  T3  bounded state: with ``max_pdcs`` PDCs live, a new SYN first frees the target PDCs idle for
      ``target_idle_reap`` (choice, like C.1's New_PDC_Time); if none is, it gets NACK NO_PDC_AVAIL
      (0x04) with SPDCID 0 and allocates nothing; PDCs in use are unaffected. One peer address
      holds at most ``max_pdcs_per_peer`` target PDCs (beyond: its own idle ones are reaped first,
      else NO_PDC_AVAIL), so one flooding address cannot take the table. Reaping frees half-open
      PDCs (never named without SYN) before established ones, scans at most once per reaping time
      while nothing can have become idle, and the refusing NACKs are rate-limited per peer
      (``refusal_nack_rate``): a SYN flood at a full table stays cheap. The first PDCID is
      seeded-random (``first_pdcid`` fixes it), so two endpoints sharing an address do not collide
      in the target's (source, destination, SPDCID) key.
  T4  C.5: a request without SYN whose DPDCID names no target PDC -> NACK INV_DPDCID (0x0E),
      SPDCID 0 (RP-PR #125). A SYN that names an existing PDC with another start PSN, or a SYN
      beyond the window -> NACK INVALID_SYN (0x15).
  T5  C.5: SPDCID (or source address) not the PDC's peer -> NACK PDC_HDR_MISMATCH (0x0F).
  T6  C.5 / C.8: RUD request on a ROD PDC or the reverse -> NACK PDC_MODE_MISMATCH (0x16).
  T7  choice (issue 11): a target PDC that holds a partial message and heard nothing for
      ``target_idle_timeout`` is freed in error (PdcClosed), with the message and its storage: a
      live initiator is never silent that long (its RTO is at most ``rto_max``), and one that
      comes back gets INV_DPDCID, so the loss is reported, never silent.

PSN window (target), C.2 / C.5
  W1  PSN in (CACK, CACK + MPR*128] and not yet received: accept (after the message layer admits
      it), record it, advance CACK over the contiguous run.
  W2  C.5: PSN already received in the current window, or at most one window behind CACK ->
      answer with an ACK of the current state whose ACK_PSN is that PSN (the "stored ACK": ours
      is regenerated, which carries the same or newer CACK/SACK). Not delivered again.
  W3  C.5: PSN beyond the window (or more than one window behind) -> NACK PSN_OOR_WINDOW (0x0B)
      (INVALID_SYN 0x15 when SYN is set), payload = CACK + 1.
  W4  C.8: ROD delivers in PSN order: an early PSN is buffered (RP behaviour, ``rod_buffer``) and
      released when CACK passes it; with ``rod_buffer=False`` it gets NACK ROD_OOO (0x0D). RUD
      delivers each request as it arrives.
  W5  message layer admission (seam to SES): a resource shortage is a NACK (NO_SES_MSG_AVAIL 0x09,
      NO_PKT_BUFFER 0x07) and the PSN stays unreceived; a semantic error is accepted and answered
      at once by an ACK carrying a SES response (next_hdr 4) with the return code (C.3, D.7/D.8).
      Resources (uet.ses.budget): partial messages, at most ``max_rx_messages`` in all and
      ``max_rx_messages_per_peer`` per peer address (NO_SES_MSG_AVAIL beyond); reassembly storage
      is allocated in chunks as bytes arrive and charged then (never for the request_length a
      header claims), at most ``rx_buffer_limit`` in all and ``rx_buffer_per_peer`` per peer
      (NO_PKT_BUFFER beyond).

ACK generation (target), C.3 / C.4
  A1  C.3: ACK when the request has AR or SYN, when CE-marked and ACK_ON_ECN, when the byte count
      since the last ACK reaches ACK_GEN_TRIGGER (16384; each request adds
      max(payload, ACK_GEN_MIN_PKT_ADD=1024)), in per-packet mode, or when CACK passes a PSN that
      asked for an ACK earlier (the newest AR PSN is now covered).
  A2  design.md Defaults: ACK_CC with cc_type 0 (NSCC state: rcvd_bytes, ooo_count) by default;
      M = the acked packet was CE; RETX = it was a retransmission; MPR = ``mpr`` (units of 128,
      H.1 #14). ACK_PSN offset = triggering PSN - CACK.
  A3  C.4: SACK base tracker: starts at CACK, is pulled up to CACK when CACK passes it, and jumps by
      64 while the highest received PSN is beyond base + 63. Bit i = PSN base + i received.
      Choice: a PSN that arrives below the tracker base (late, reordered) would never be reported,
      so the next ACK uses it as its base once; the tracker itself is unchanged.
  A4  A.1 / design.md: ACKs and NACKs go to the request's source address and port (its entropy)
      from the UET port, DSCP 46, Not-ECT.

Initiator
  I1  C.1: first packets carry SYN + psn_offset (12 bits: at most ``syn_psn_range`` = 4096 PSNs
      beyond START_PSN before the first ACK); START_PSN random (seeded) in [2^16, 2^31).
  I2  C.1: the first valid ACK establishes the PDC: DPDCID := ACK.SPDCID; SYN stops.
  I3  C.2: every request carries CLEAR_PSN = send base - 1 (all PSNs up to it acknowledged),
      clamped to the signed 16-bit offset.
  I4  C.2: never send a PSN beyond min(base + tx_range, CACK + peer MPR*128).
  I5  C.3: AR on the EOM packet of each message, on every retransmission, on everything in
      per-packet mode.
  I6  C.2: CACK_PSN acknowledges every PSN up to it; a message completes (SendComplete) when all
      its PSNs are CACKed. C.4: SACK bits mark PSNs as arrived, not completed.
  I7  choice (RACK-like, needed for sprayed traffic): a PSN not SACKed while a packet sent after it
      was is lost once it is older than the recent maximum RTT (paths differ in queueing, so the
      latest RTT alone would call every slower path lossy) + a reorder window (``reorder_window``
      x min RTT, grown when a retransmission turns out spurious: ACKed sooner than 3/4 min RTT
      after it went out). That is the SACK-driven fast retransmit of holes. "Recent maximum" is a
      windowed maximum: the largest RTT delivered in the current window of 4 srtt or in the one
      before it (a window ends only by time, never by a smaller sample, so the RTT of a path whose
      queue keeps growing - spraying over unevenly hashed paths - is not forgotten while its
      packets are still in flight; before, a lossless 64 MiB run over 8 paths resent ~300 of them).
  I8  C.5: RTO (initial ``rto_initial`` 1 ms; choice: srtt + 4 rttvar, floor ``rto_min``, once
      sampled) with exponential backoff; on expiry, packets older than the RTO are resent; when
      only SACKed-but-not-CACKed packets remain, an ACK_REQ control (ctl 1) for the lowest of them
      is sent instead (C.4). The k-th timeout in a row also sends CONTROL PROBE (B.12, payload
      the base PSN) on 2^k EVs not tried since the last progress (choice: ECMP hashes requests
      and answers separately, so a sender whose paths failed must find EVs that work both ways;
      the answer, an ACK with P = 1, comes back on the probe's EV and makes it known, H3 of
      uet.multipath); an answer that shows the base PSN still missing while its last copy went
      on an EV not known to work resends it at once. After a timeout the next one is at least
      one (backed-off) RTO
      later, however spread out in time the packets still in flight were sent. More than
      ``max_rto_retx`` consecutive timeouts without progress close the PDC in error and fail
      its messages.
  I9  C.9 TAIL_LOSS_TIME: tail-loss probe: with packets outstanding and nothing heard for the
      probe time (choice: 2 srtt, min ``tlp_min``), send ACK_REQ for the newest outstanding PSN;
      the target answers an ACK (with SACK) or NACK PKT_NOT_RCVD. At most ``max_tail_loss_retx``
      probes in a row.
  I10 B.11 reaction column: retransmit at once on TRIMMED, TRIMMED_LASTHOP, TRIMMED_ACK, ROD_OOO,
      PKT_NOT_RCVD, ACK_WITH_DATA, RCVR_INFER_LOSS, EXP_NACK_NORMAL/ERR; retransmit after
      NACK_RETX_TIME on PSN_OOR_WINDOW, and on the resource codes (NO_PDC_AVAIL ... NO_RESOURCE)
      after NACK_RETX_TIME x 2^k (k = that packet's resource NACKs so far), at most
      ``resource_backoff_max`` each and ``max_resource_retx`` times (about 12 s in all: longer
      than the target's reaping, T3 and T7); no RTO runs while such waits are all that is out;
      close the PDC in error on INV_DPDCID, PDC_HDR_MISMATCH, CLOSING, CLOSING_IN_ERR,
      GTD_RESP_UNAVAIL, INVALID_SYN, PDC_MODE_MISMATCH, UNEXP_EVENT, EXP_NACK_FATAL; re-base every
      PSN and resend on NEW_START_PSN (only before establishment); ignore RCVD_SES_PROCG (RTO).
      More than ``max_nack_retx`` NACK-driven resends of one PSN close the PDC in error.
  I11 C.5: a NACK or ACK naming a PSN outside [send base, next PSN - 1] changes nothing (counted).
  I12 B.4: ACK REQ = 1 -> send CLEAR (ctl 2, payload = CLEAR_PSN); REQ = 2 or CLOSE_REQ -> close.
  I13 C.1 / A.1: ACKs, NACKs and control packets for an initiator PDC count only when they come
      from the PDC's peer address (never by source port: a peer may answer from any entropy
      port); others are dropped and counted (``foreign_ack``, ``foreign_nack``,
      ``foreign_control``), so the first ACK establishes the PDC only from there. Within one
      address anyone can still forge: TSS (B.15, F) is the answer to that.
  I14 C.7: a NACK INV_DPDCID or CLOSING naming our CLOSE PSN means the target freed the PDC and
      its MSL ended before the CLOSE (or its retransmission) arrived; every message was
      acknowledged before the CLOSE left (C1), so the PDC closes normally, not in error.
  I15 C.3: a request that fills the send window while fewer than ACK_GEN_TRIGGER bytes are in
      flight carries AR: with a window below the target's ACK trigger (the C.3 default is
      assumed: ``ack_gen_trigger``) nothing else would make the target ACK before a timer.

Close, C.7
  C1  the initiator closes only when every message is acknowledged: CONTROL CLOSE (ctl 4) with AR
      on a new PSN; the PDC is freed when an ACK covers that PSN.
  C2  the target records the CLOSE PSN, ACKs it and frees the PDC once CACK reaches it; for one
      MSL (``close_msl``) it keeps answering: a repeated CLOSE or old PSN is ACKed again, a PSN
      beyond the CLOSE PSN gets NACK CLOSING (0x10).

SES sublayer (issue 5; attach_ses; without one everything above is as it was)
  X1  C.8 / D.2: each SesPacket the SES queues (operations; read data and DEFERRABLE_RTR from the
      target side) is sent as one request on the RUD/ROD PDC to its ``peer`` address (``mode`` of
      attach_ses; key job 0, TC 0), its SES header, extension and payload verbatim (SesOut); the
      SES cuts messages at its mtu, which must not exceed the PDS mtu. No SendComplete /
      MessageFailed events for them: the SES reports operations (OperationComplete/Failed).
  X2  W5 with an SES attached: every request with next_hdr 1-6 goes to ``ses_layer.
      receive_bytes(nh, bytes after the PDS header, peer=source address, request_ref=PSN)``
      (RUD: on arrival; ROD: in PSN order, W4); the SEND reassembly of MessageLayer is not used.
      Admission asks the SES first (``ses_layer.admit``, R2 of uet/ses/endpoint.py): a new
      partial message beyond its per-peer or total limits gets NACK NO_SES_MSG_AVAIL, payload
      beyond its byte budget NO_PKT_BUFFER, and the PSN stays unreceived; the SES's idle partial
      messages are dropped by ``ses_layer.expire`` on the endpoint's sweep (R3). A full
      unexpected list is the SES's return code (NO_MATCH, D.8). The hot path never
      applies (no message is ever in MessageLayer's reassembly): every request goes the general
      way.
  X3  C.3 / D.7: the response the SES returns for a PSN is kept (next_hdr 4, 5 or 6 + bytes;
      the last 2 x window of them, choice) and rides on every ACK whose ACK_PSN is that PSN: the
      first, a W2 duplicate's, an ACK_REQ's (C.4). A response made when ROD releases a buffered
      PSN goes at once on an ACK of that PSN.
  X4  C.3: an ACK with next_hdr 4-6 on the initiator: the bytes after the ACK header go to
      ``ses_layer.receive_bytes`` with message_id = the SES message id of the request at ACK_PSN
      (I1 of uet/ses/endpoint.py); next_hdr 5 requests (read data) arrive through X2. One whose
      ACK_PSN names no SES request still waiting (X5) is a repeat: dropped and counted
      (``stale_ses_response``), so a late copy never completes a newer operation that reuses
      the message id. An ACK of a plain send_message request keeps W5's handling.
  X5  choice (a cumulative ACK can cover a PSN whose own ACK, carrying the response, was lost):
      when the requests of an operation are all CACKed and the SES still waits for its response
      (``SesEndpoint.pending``), the initiator sends ACK_REQ (ctl 1) for each of its PSNs after
      2 RTO, then 4, 8, and 16 RTO apart; the target answers with the stored response (X3).
      After 4 x ``max_rto_retx`` tries (each ACK_REQ and its answer take an entropy, so a failed
      path can eat several in a row) the operation fails (transport_failed). Close (C1) waits
      for these.
  X6  C.5 / C.7: a PDC closed in error fails the SES operations of its requests
      (``ses_layer.transport_failed``, RC UNDELIVERABLE).

Hot paths (design.md "Performance"; the rules above are unchanged by them)
  The common cases - a request for an established PDC carrying a SEND standard header for a
  message already in reassembly (receive_datagram -> _accept), the ACK_CC that answers it, and
  the sender's first transmission of each PSN (_fill_new) - run as flat code: header fields are
  read with one struct unpack and written with one struct pack, both compiled from the schema's
  layouts (uet.wire.fast: chain_reader, chain_packer), ACKs are one per-PDC constant ORed with
  the fields that change. A request that is anything else, or fails any check of the hot path,
  goes the general way (whole-header decode, the code that implements each rule in full) before
  any state has changed, so both ways give the same datagrams and events (tests/pds/
  test_fast_paths.py runs transfers both ways). Also: CRC seeds (addresses and UDP header, A.3)
  are cached per 5-tuple and length, metadata objects per entropy value and reply direction
  (they are shared: read-only); congestion-control and entropy hooks that a class leaves as the
  base's no-op are not called; SACK bits already known SACKED are skipped with a bitmask;
  get_timer() keeps its value until initiator state or a tomb changes; per-packet counters are
  plain ints folded into ``stats`` when it is read.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from typing import Any, Iterable

from .. import native
from ..cms.base import CongestionControl
from ..cms.fixed import FixedWindow
from ..multipath.base import EntropySelector
from ..wire.enums import NACK_CODE
from ..wire.trailer import TRAILER_LEN as TRAILER
from ..wire.trailer import udp_seed as crc_seed
from . import events as ev
from .config import PdsConfig
from .datagram import CE, DSCP_CONTROL, DSCP_TRIMMED, ECT0, NOT_ECT, DatagramMeta, seal, trailer_ok  # noqa: F401
from ..wire.fast import chain_packer, chain_reader, fast
from .messages import _STD_MID, SEND, SES_STD_SIZE, MessageLayer, OutMessage, SesOut

M32 = 0xFFFFFFFF
H32 = 0x80000000  # pdiff(a, b) == ((a - b + H32) & M32) - H32, inlined on the hot paths
INF = float("inf")

# PDS types (B.1)
RUD_REQ, ROD_REQ, ACK, ACK_CC, ACK_CCX, NACK, CONTROL, NACK_CCX, RUD_CC_REQ, ROD_CC_REQ = (
    2, 3, 7, 8, 9, 10, 11, 12, 13, 14)
REQ_TYPES = frozenset((RUD_REQ, ROD_REQ, RUD_CC_REQ, ROD_CC_REQ))
ROD_TYPES = frozenset((ROD_REQ, ROD_CC_REQ))
# control types (B.12)
CTL_NOOP, CTL_ACK_REQ, CTL_CLEAR, CTL_CLEAR_REQ, CTL_CLOSE, CTL_CLOSE_REQ, CTL_PROBE = range(7)

# NACK codes (B.11)
N = {name: code for code, name in NACK_CODE.table.items()}
NACK_RETX_NOW = frozenset(N[k] for k in (
    "TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK", "ROD_OOO", "PKT_NOT_RCVD", "ACK_WITH_DATA",
    "RCVR_INFER_LOSS", "EXP_NACK_NORMAL", "EXP_NACK_ERR"))
NACK_RESOURCE = frozenset(N[k] for k in (
    "NO_PDC_AVAIL", "NO_CCC_AVAIL", "NO_BITMAP", "NO_PKT_BUFFER", "NO_GTD_DEL_AVAIL",
    "NO_SES_MSG_AVAIL", "NO_RESOURCE"))
NACK_RETX_LATER = NACK_RESOURCE | {N["PSN_OOR_WINDOW"]}
NACK_CLOSE = frozenset(N[k] for k in (
    "INV_DPDCID", "PDC_HDR_MISMATCH", "CLOSING", "CLOSING_IN_ERR", "GTD_RESP_UNAVAIL",
    "INVALID_SYN", "PDC_MODE_MISMATCH", "UNEXP_EVENT", "EXP_NACK_FATAL"))
# C2 / C.7: what a target answers to a CLOSE for a PDC it already freed (I14)
NACK_CLOSED = frozenset(N[k] for k in ("INV_DPDCID", "CLOSING"))


def nack_name(code: int) -> str:
    return NACK_CODE.table.get(code, f"0x{code:02X}")


def pdiff(a: int, b: int) -> int:
    """Signed 32-bit serial difference a - b (C.2)."""
    d = (a - b) & M32
    return d - 0x100000000 if d & 0x80000000 else d


def _clamp16(x: int) -> int:
    return -32768 if x < -32768 else (32767 if x > 32767 else x)


_REQ = fast("pds.rud_rod_req")
_REQ_CC = fast("pds.rud_rod_cc_req")
_ACK = fast("pds.ack")
_ACK_CC = fast("pds.ack_cc")
_ACK_CCX = fast("pds.ack_ccx")
_NACK = fast("pds.nack")
_NACK_CCX = fast("pds.nack_ccx")
_CTL = fast("pds.control")
_RSP = fast("ses.rsp")
_REQ_L = (_REQ.layout(syn=0), _REQ.layout(syn=1))
_ACKCC_L = _ACK_CC.layout(p=0, cc_type=0)
_ACK_L = _ACK.layout(p=0)
_ACKCC_VAR = _ACKCC_L.variant
_ACKCC_P_VAR = _ACK_CC.layout(p=1, cc_type=0).variant
_ACK_VAR = _ACK_L.variant
_ACK_P_VAR = _ACK.layout(p=1).variant
_INT_FROM = int.from_bytes
_crc32c = native.crc32c
_crc32c_prefix = native.crc32c_prefix

# --- compiled readers, packers and field positions (all from the schema's layouts) -------------
# A request without SYN and the SES standard header that follows it: the fields the target
# needs, in one struct unpack (the SOM = 0 variant's positions; the fields used when SOM = 1 sit
# at the same place, checked in uet.pds.messages)
_REQ_SIZE = _REQ_L[0].size
_read_req_std = chain_reader(
    (_REQ_L[0], ("next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid", "dpdcid")),
    (_STD_MID, ("opcode", "som", "message_id", "payload_length", "message_offset",
                "request_length")))
_REQ_STD = _REQ_L[0].size + SES_STD_SIZE
_HOT_MIN = _REQ_STD  # the least UET bytes (trailer excluded) a request needs for the hot path
# New requests after a message's first packet: PDS + SES standard headers in one struct.pack
# from per-message constants (without and with SYN)
_PACK_MID = (
    chain_packer((_REQ_L[0], ("ar", "clear_psn_offset", "psn")),
                 (_STD_MID, ("eom", "payload_length", "message_offset"))),
    chain_packer((_REQ_L[1], ("ar", "clear_psn_offset", "psn", "psn_offset")),
                 (_STD_MID, ("eom", "payload_length", "message_offset"))))
# An ACK_CC: p and cc_type select the variant, but the fields read here sit at the same place in
# every variant (checked below); ack_psn_offset is only used when p = 0.
_ACKCC_FIELDS = ("next_hdr", "m", "p", "req", "ack_psn_offset", "cack_psn", "spdcid", "dpdcid",
                 "mpr", "sack_psn_offset", "sack_bitmap")
_read_ackcc = _ACKCC_L.reader(*_ACKCC_FIELDS)
_ACKCC_SIZE = max(v.size for v in _ACK_CC.codec.variants.values())
assert all(_ACKCC_SIZE == v.size for v in _ACK_CC.codec.variants.values())
for _lay in (_ACK_CC.layout(p=1, cc_type=0), _ACK_CC.layout(p=0, cc_type=1),
             _ACK_CC.layout(p=0, cc_type=2)):
    assert all(_lay.position(n) == _ACKCC_L.position(n) for n in _ACKCC_FIELDS if n != "ack_psn_offset")
for _lay in (_REQ_L[1],):
    assert all(_lay.position(n) == _REQ_L[0].position(n)
               for n in ("next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid"))
_SH = _REQ_L[0].shift
_RQ_PSN, _RQ_CLR, _RQ_AR, _RQ_RETX, _RQ_NH = (_SH["psn"], _SH["clear_psn_offset"], _SH["ar"],
                                              _SH["retx"], _SH["next_hdr"])
_RQ_PSNOFF = _REQ_L[1].shift["psn_offset"]
_SH = _ACKCC_L.shift
_AK_M, _AK_RETX, _AK_OFF, _AK_CACK, _AK_SOFF, _AK_BM, _AK_RB, _AK_OOO = (
    _SH["m"], _SH["retx"], _SH["ack_psn_offset"], _SH["cack_psn"], _SH["sack_psn_offset"],
    _SH["sack_bitmap"], _SH["rcvd_bytes"], _SH["ooo_count"])
_SH = _ACK_L.shift
_PA_M, _PA_RETX, _PA_OFF, _PA_CACK = _SH["m"], _SH["retx"], _SH["ack_psn_offset"], _SH["cack_psn"]
del _SH, _lay

def _overrides(obj: Any, base: type, name: str) -> bool:
    """Whether ``obj`` replaces the base class's no-op hook ``name`` (in its class or itself)."""
    return (getattr(type(obj), name, None) is not getattr(base, name)
            or name in getattr(obj, "__dict__", ()))


# ------------------------------------------------------------------------------------------------
# initiator
# ------------------------------------------------------------------------------------------------

INFLIGHT, SACKED, LOST, ACKED = 0, 1, 2, 3  # ACKED: CACKed and removed from ``recs``


class _Rec:
    """One PSN the initiator sent and has not seen CACKed."""

    __slots__ = ("psn", "msg", "off", "ln", "eom", "ctl", "payload", "sent", "xmits", "seq",
                 "state", "nacks", "waits", "ev")

    def __init__(self, psn: int, msg: OutMessage | None, off: int, ln: int, eom: bool,
                 ctl: int = -1, payload: int = 0, seq: int = 0, sent: float = 0.0,
                 xmits: int = 0, ev: int = 0):
        self.psn = psn
        self.msg = msg
        self.off = off
        self.ln = ln
        self.eom = eom
        self.ctl = ctl
        self.payload = payload
        self.sent = sent
        self.xmits = xmits
        self.seq = seq
        self.state = INFLIGHT
        self.nacks = 0
        self.waits = 0  # resource NACKs (I10)
        self.ev = ev


class Initiator:
    role = "initiator"

    def __init__(self, ep: "Endpoint", pdcid: int, peer: str, mode: str, key: tuple):
        cfg = ep.config
        self.ep = ep
        self.cfg = cfg
        self.pdcid = pdcid
        self.peer = peer
        self.mode = mode
        self.key = key
        self.ptype = ROD_REQ if mode == "rod" else RUD_REQ
        self.peer_pdcid = 0
        self.established = False
        self.start_psn = ep.rng.randrange(cfg.start_psn_lo, cfg.start_psn_hi) & M32
        self.next_psn = self.start_psn
        self.base = self.start_psn
        self.peer_range = cfg.rx_window  # C.9 DEFAULT_MPR until the first ACK_CC says otherwise
        self.recs: dict[int, _Rec] = {}
        self.sent_q: deque = deque()  # (seq, record) per transmission; stale once either changed
        self.retx_q: deque = deque()
        self.delayed: list[tuple[float, int]] = []
        self.ctl_q: deque = deque()
        self.queue: deque = deque()
        self.msgs: dict[int, OutMessage] = {}
        # X5: SES operations whose requests are all CACKed but whose response has not arrived:
        # SES message id -> [PSNs, deadline, tries]; and PSN -> SES message id for those PSNs
        self.ses_wait: dict[int, list] = {}
        self.ses_psn: dict[int, int] = {}
        self.next_mid = 1
        self.inflight = 0
        self.cc = cfg.cc_factory(cfg)
        self.sel = cfg.entropy_factory(cfg, ep.rng)
        self.srtt = 0.0
        self.rttvar = 0.0
        self.min_rtt = INF
        self.rack_seq = 0
        self.rack_rtt = 0.0
        self.rtt_hi = 0.0  # largest RTT delivered in the current window (I7) ...
        self.rtt_hi_t = 0.0  # ... which started then and lasts 4 srtt ...
        self.rtt_prev = 0.0  # ... and the largest of the window before it
        self.reo_steps = 1
        self.seq = 0
        self.last_tx = 0.0
        self.last_progress = 0.0
        self.rto_count = 0
        self.rto_not_before = 0.0
        self.backoff = 1
        self.tlp_count = 0
        self.tlp_pending = False
        self.rack_at = INF
        self.close_wanted = False
        self.close_psn: int | None = None
        self.closed = False
        self.last_sack = (-1, 0)
        # bit k set <=> the record of PSN base + k is SACKED (shifted as the base advances), so
        # that a SACK bitmap's already-known bits cost nothing
        self.sackmask = 0
        self.src = ep.address
        self.port = cfg.port
        self._req_const = (0, 0)
        self._set_req_const()
        # hooks the classes actually implement (the base ones are no-ops)
        cc, sel = self.cc, self.sel
        self._cc_on_send = _overrides(cc, CongestionControl, "on_send")
        self._cc_on_ack = _overrides(cc, CongestionControl, "on_ack")
        self._cc_on_ce = _overrides(cc, CongestionControl, "on_ce")
        self._cc_on_rtt = _overrides(cc, CongestionControl, "on_rtt_sample")
        self._fixed_window = isinstance(cc, FixedWindow) and not _overrides(cc, FixedWindow,
                                                                            "can_send")
        self._metas: dict[int, DatagramMeta] = {}  # entropy -> metadata of data packets
        self._seeds: dict[int, int] = {}  # (entropy << 32 | UDP length) -> CRC seed

    # --- header templates -----------------------------------------------------------------
    def _set_req_const(self) -> None:
        nh = 3
        l0, l1 = _REQ_L
        c0 = l0.const({"type": self.ptype, "next_hdr": nh, "syn": 0, "spdcid": self.pdcid,
                       "dpdcid": self.peer_pdcid})
        c1 = l1.const({"type": self.ptype, "next_hdr": nh, "syn": 1, "spdcid": self.pdcid})
        self._req_const = (c0, c1)

    # --- API ------------------------------------------------------------------------------
    def add_message(self, msg: OutMessage) -> None:
        msg.message_id = self.next_mid
        self.next_mid = (self.next_mid + 1) & 0xFFFF or 1
        msg.prepare(self.cfg)
        self.msgs[msg.handle] = msg
        self.queue.append(msg)

    def busy(self) -> bool:
        return bool(self.queue or self.recs or self.ctl_q or self.ses_wait)

    # --- timers ---------------------------------------------------------------------------
    def _rto(self) -> float:
        cfg = self.cfg
        if cfg.rto_adaptive and self.srtt > 0:
            r = self.srtt + 4 * self.rttvar
            if r < cfg.rto_min:
                r = cfg.rto_min
        else:
            r = cfg.rto_initial
        r *= self.backoff
        return r if r < cfg.rto_max else cfg.rto_max

    def _pto(self) -> float:
        cfg = self.cfg
        if cfg.tail_loss_time is not None:
            return cfg.tail_loss_time
        if self.srtt > 0:
            return max(cfg.tlp_min, 2 * self.srtt)
        return cfg.rto_initial

    def _oldest_inflight(self) -> _Rec | None:
        """The in-flight record sent longest ago (stale ``sent_q`` entries are dropped)."""
        q = self.sent_q
        while q:
            seq, r = q[0]
            if r.seq != seq or r.state != INFLIGHT:
                q.popleft()
                continue
            return r
        return None

    def deadline(self) -> float:
        t = self.delayed[0][0] if self.delayed else INF
        if self.ses_wait:
            for w in self.ses_wait.values():
                if w[1] < t:
                    t = w[1]
        if self.recs:
            if self.rack_at < t:
                t = self.rack_at
            q = self.sent_q
            while q:  # _oldest_inflight(), inlined
                seq, r = q[0]
                if r.seq != seq or r.state != INFLIGHT:
                    q.popleft()
                    continue
                break
            else:
                r = None
            if r is not None or not (self.delayed or self.retx_q):  # I10: a wait, not a loss
                at = (r.sent if r is not None else self.last_progress) + self._rto()
                if at < self.rto_not_before:
                    at = self.rto_not_before
                if at < t:
                    t = at
            if not self.tlp_pending and r is not None and self.tlp_count < self.cfg.max_tail_loss_retx:
                at = max(self.last_tx, self.last_progress) + self._pto()  # I9: restarted on progress
                if at < t:
                    t = at
        return t

    def on_timer(self, now: float) -> None:
        if self.delayed and self.delayed[0][0] <= now:
            keep = []
            for at, psn in self.delayed:
                if at <= now:
                    r = self.recs.get(psn)
                    if r is not None and r.state == LOST:
                        self.retx_q.append(psn)
                else:
                    keep.append((at, psn))
            self.delayed = keep
        if self.ses_wait:
            self._ses_timer(now)
        if not self.recs:
            return
        if self.rack_at <= now:
            self.rack_at = INF
            self._detect_loss(now)
        r = self._oldest_inflight()
        rto = self._rto()
        if (r is not None or not (self.delayed or self.retx_q)) and (
                r.sent if r is not None else self.last_progress) + rto <= now and (
                self.rto_not_before <= now):
            self._on_rto(now, rto)
        elif (r is not None and not self.tlp_pending and self.tlp_count < self.cfg.max_tail_loss_retx
              and max(self.last_tx, self.last_progress) + self._pto() <= now):
            self._on_tlp(now)

    def _ses_timer(self, now: float) -> None:
        """X5: ask again (ACK_REQ, C.4) for the ACKs of an operation's PSNs when its SES
        response has not come; after ``max_rto_retx`` tries the operation fails."""
        sl = self.ep.ses_layer
        for mid, w in list(self.ses_wait.items()):
            if sl is None or not sl.pending(mid):
                self._ses_settle(mid)
                continue
            if w[1] > now:
                continue
            if w[2] >= 4 * self.cfg.max_rto_retx:
                self._ses_settle(mid)
                sl.transport_failed(mid, "no SES response")
                continue
            w[2] += 1
            w[1] = now + 2 * self._rto() * (1 << min(w[2], 3))
            for psn in w[0]:
                self.ctl_q.append((CTL_ACK_REQ, psn, 0, True))

    def _ses_settle(self, mid: int) -> None:
        w = self.ses_wait.pop(mid, None)
        if w is not None:
            for psn in w[0]:
                self.ses_psn.pop(psn, None)

    def _on_rto(self, now: float, rto: float) -> None:
        ep = self.ep
        ep.stats["rto"] += 1
        self.rto_count += 1
        if self.rto_count > self.cfg.max_rto_retx:
            ep._fail_initiator(self, "retransmission limit (RTO)")
            return
        marked = 0
        recs = self.recs
        for seq, r in list(self.sent_q):
            if r.seq != seq or r.state != INFLIGHT:
                continue
            if r.sent + rto <= now:
                self._mark_lost(r, now)
                marked += 1
            else:
                break
        if not marked:
            # C.4: only SACKed-but-not-CACKed packets left: ask for an ACK instead of resending.
            low = None
            for psn in (self.base,):
                r = recs.get(psn)
                if r is not None and r.state == SACKED:
                    low = r
            if low is None:
                for r in recs.values():
                    if r.state == SACKED and (low is None or pdiff(r.psn, low.psn) < 0):
                        low = r
            if low is not None:
                self.ctl_q.append((CTL_ACK_REQ, low.psn, 0, True))
        # I8 / H3 of uet.multipath: probe 2^k EVs not tried since the last progress (CONTROL
        # PROBE, B.12, answered by an ACK with P = 1 on the probe's EV), so that a sender whose
        # paths failed finds the ones that still work both ways before its retry limit
        for _ in range(min(1 << self.rto_count, len(self.sel.values))):
            self.ctl_q.append((CTL_PROBE, self.base, self.base, True))
        self.last_progress = now
        self.backoff = min(self.backoff * 2, 1 << 10)
        # I8: the next timeout counts only one (backed-off) RTO from this one, however the
        # packets still in flight were spread out in time
        self.rto_not_before = now + self._rto()
        self.cc.on_timeout(now)
        self.sel.on_timeout(now)

    def _on_tlp(self, now: float) -> None:
        # I9: ACK_REQ for the newest outstanding PSN
        newest = None
        for seq, r in reversed(self.sent_q):
            if r.seq == seq and r.state == INFLIGHT:
                newest = r
                break
        self.tlp_pending = True
        self.tlp_count += 1
        if newest is not None:
            self.ep.stats["tlp"] += 1
            self.ctl_q.append((CTL_ACK_REQ, newest.psn, 0, False))

    # --- loss bookkeeping -----------------------------------------------------------------
    def _mark_lost(self, r: _Rec, now: float) -> None:
        if r.state == INFLIGHT:
            self.inflight -= r.ln
        r.state = LOST
        self.retx_q.append(r.psn)
        self.cc.on_loss(now, r.ln)
        self.sel.on_loss(r.ev, now)

    def _reo_wnd(self) -> float:
        m = self.min_rtt if self.min_rtt < INF else self.cfg.rto_initial
        w = self.cfg.reorder_window * self.reo_steps
        return m * min(w, self.cfg.reorder_window_max)

    def _detect_loss(self, now: float) -> None:
        q = self.sent_q
        thr = max(self.rtt_hi, self.rtt_prev, self.rack_rtt) + self._reo_wnd()
        rseq = self.rack_seq
        while q:
            seq, r = q[0]
            if r.seq != seq or r.state != INFLIGHT:
                q.popleft()
                continue
            if seq >= rseq:
                break
            dl = r.sent + thr
            if dl > now:
                self.rack_at = dl
                return
            q.popleft()
            self._mark_lost(r, now)
        self.rack_at = INF

    def _delivered(self, r: _Rec, now: float) -> None:
        """RACK state update for a PSN newly known to have arrived (CACK or SACK)."""
        rtt = now - r.sent
        if r.xmits > 1:
            if self.min_rtt < INF and rtt < 0.75 * self.min_rtt:
                # spurious: the original arrived; widen the reorder window (I7)
                self.ep.stats["spurious_detected"] += 1
                if self.cfg.reorder_window * self.reo_steps < self.cfg.reorder_window_max:
                    self.reo_steps += 1
                return
        if now - self.rtt_hi_t > 4 * self.srtt:
            self.rtt_prev = self.rtt_hi
            self.rtt_hi = rtt
            self.rtt_hi_t = now
        elif rtt > self.rtt_hi:
            self.rtt_hi = rtt
        if r.seq > self.rack_seq:
            self.rack_seq = r.seq
            self.rack_rtt = rtt

    def _rtt_sample(self, rtt: float, now: float) -> None:
        if rtt <= 0:
            return
        if rtt < self.min_rtt:
            self.min_rtt = rtt
        if self.srtt == 0:
            self.srtt = rtt
            self.rttvar = rtt / 2
        else:
            self.rttvar += 0.25 * (abs(self.srtt - rtt) - self.rttvar)
            self.srtt += 0.125 * (rtt - self.srtt)
        if self._cc_on_rtt:
            self.cc.on_rtt_sample(now, rtt)

    # --- sending --------------------------------------------------------------------------
    def fill(self, now: float, out: list) -> None:
        ep = self.ep
        while self.ctl_q:
            ctl, psn, payload, retx = self.ctl_q.popleft()
            out.append(self._control(ctl, psn, payload, retx, True))
            if ctl == CTL_ACK_REQ:
                ep.stats["ack_req_tx"] += 1
        cc = self.cc
        recs = self.recs
        rq = self.retx_q
        while rq:
            r = recs.get(rq[0])
            if r is None or r.state != LOST:
                rq.popleft()
                continue
            if not cc.can_send(self.inflight, r.ln):
                return
            rq.popleft()
            out.append(self._transmit(r, now, True))
        queue = self.queue
        if queue:
            self._fill_new(now, out)
        if (self.close_wanted and self.close_psn is None and not self.recs and not self.queue
                and not self.ses_wait):
            psn = self.next_psn
            self.next_psn = (psn + 1) & M32
            r = _Rec(psn, None, 0, 0, True, CTL_CLOSE)
            recs[psn] = r
            self.close_psn = psn
            out.append(self._transmit(r, now, False))

    def _fill_new(self, now: float, out: list) -> None:
        """New requests while the windows allow (I4, C.1, C.2): :meth:`_transmit` inlined for the
        first transmission of each PSN (the hot path of a bulk transfer)."""
        cfg = self.cfg
        queue = self.queue
        psn = self.next_psn
        base = self.base
        established = self.established
        start = self.start_psn
        # the PSNs the windows allow, counted once: each packet moves every distance by one
        room = cfg.tx_range - (((psn - base + H32) & M32) - H32)
        k = self.peer_range - (((psn - base + 1 + H32) & M32) - H32) + 1
        if k < room:
            room = k
        if not established:
            k = cfg.syn_psn_range - (((psn - start + H32) & M32) - H32)
            if k < room:
                room = k
        if room <= 0:
            return
        cc = self.cc
        can_send = cc.can_send
        on_send = cc.on_send if self._cc_on_send else None
        # FixedWindow's can_send, inlined (nothing in this loop can change its window)
        cwnd = cc.window_bytes if self._fixed_window and on_send is None else None
        recs = self.recs
        mtu = cfg.mtu
        sel_next = self.sel.next
        sq_append = self.sent_q.append
        append = out.append
        seeds = self._seeds
        metas = self._metas
        src, peer, port = self.src, self.peer, self.port
        const = self._req_const[0 if established else 1]
        pack_mid = _PACK_MID[0 if established else 1].pack
        ar_all = cfg.ack_per_packet
        trigger = cfg.ack_gen_trigger
        inflight = self.inflight
        seq = self.seq
        first = psn
        clr = ((base - 1 - psn + H32) & M32) - H32 + 1  # I3: CLEAR_PSN offset, before the -1 below
        while queue and room:
            msg = queue[0]
            off = msg.next_off
            ln = msg.length - off
            eom = ln <= mtu
            if not eom:
                ln = mtu
            if cwnd is not None:
                if inflight and inflight + ln > cwnd:
                    break
            elif not can_send(inflight, ln):
                break
            msg.next_off = off + ln
            msg.unacked += 1
            if eom:
                queue.popleft()
                msg.all_queued = True
            # _transmit(r, now, False), inlined
            seq += 1
            ev_ = sel_next(now)
            r = recs[psn] = _Rec(psn, msg, off, ln, eom, -1, 0, seq, now, 1, ev_)
            sq_append((seq, r))
            inflight += ln
            if on_send is not None:
                on_send(now, ln, False)
            ar = eom or ar_all
            if not ar and inflight < trigger and (  # I15: this packet fills the window
                    room == 1 or (inflight + mtu > cwnd if cwnd is not None
                                  else not can_send(inflight, mtu))):
                ar = True
            clr -= 1  # base - 1 - psn: -1 or less, so only the lower clamp can apply (I3)
            c = clr if clr > -32768 else -32768
            if off and msg.nh == 3:
                kk = msg.pk
                if kk is None or kk[0] != const:
                    kk = msg.pk = (const, _PACK_MID[0 if established else 1].consts(
                        const, msg.ses_mid_const()))
                hl = _REQ_STD
                if established:
                    head = pack_mid(kk[1], ar, c, psn, eom, ln, off)
                else:
                    head = pack_mid(kk[1], ar, c, psn, (psn - start) & 0xFFF, eom, ln, off)
            else:
                v = const | (psn << _RQ_PSN) | ((c & 0xFFFF) << _RQ_CLR)
                if not established:
                    v |= ((psn - start) & 0xFFF) << _RQ_PSNOFF
                if ar:
                    v |= 1 << _RQ_AR
                ssize = msg.ses_size
                if msg.nh != 3:
                    v ^= (3 ^ msg.nh) << _RQ_NH
                hl = _REQ_SIZE + ssize
                head = ((v << (ssize * 8)) | msg.ses_int(off, ln, eom)).to_bytes(hl, "big")
            k = (ev_ << 32) | (hl + ln + 12)
            crc = seeds.get(k)
            if crc is None:
                crc = seeds[k] = crc_seed(src, peer, ev_, port, hl + ln + 12)
            meta = metas.get(ev_)
            if meta is None:
                meta = metas[ev_] = DatagramMeta(src, peer, ev_, port, ECT0, 0)
            if ln:
                pkt = b"".join((head, msg.view[off:off + ln]))
            else:
                pkt = head
            append((pkt + _crc32c(pkt, crc).to_bytes(4, "big"), meta))
            psn = (psn + 1) & M32
            room -= 1
        if psn != first:
            self.next_psn = psn
            self.inflight = inflight
            self.seq = seq
            self.last_tx = now
            if self.last_progress == 0.0:
                self.last_progress = now

    def _transmit(self, r: _Rec, now: float, retx: bool) -> tuple:
        self.seq = seq = self.seq + 1
        r.seq = seq
        r.xmits += 1
        r.sent = now
        r.state = INFLIGHT
        ln = r.ln
        self.inflight += ln
        psn = r.psn
        self.sent_q.append((seq, r))
        self.last_tx = now
        if self.last_progress == 0.0:
            self.last_progress = now
        # H3 of uet.multipath: resends and control packets on an EV known to work
        ev_ = self.sel.next_retransmit(now) if retx or r.ctl >= 0 else self.sel.next(now)
        r.ev = ev_
        if retx:
            self.ep.stats["retransmissions"] += 1
        if self._cc_on_send:
            self.cc.on_send(now, ln, retx)
        if r.ctl >= 0:
            return self._control(r.ctl, psn, r.payload, retx, True, ev_)
        if self.established:
            v = self._req_const[0] | (psn << _RQ_PSN)
        else:
            v = (self._req_const[1] | (psn << _RQ_PSN)
                 | (((psn - self.start_psn) & 0xFFF) << _RQ_PSNOFF))
        c = ((self.base - 1 - psn + H32) & M32) - H32  # I3, clamped to 16 bits
        v |= ((-32768 if c < -32768 else (c if c < 32767 else 32767)) & 0xFFFF) << _RQ_CLR
        if r.eom or retx or self.cfg.ack_per_packet:
            v |= 1 << _RQ_AR
        if retx:
            v |= 1 << _RQ_RETX
        msg = r.msg
        ssize = msg.ses_size
        if msg.nh != 3:
            v ^= (3 ^ msg.nh) << _RQ_NH
        hl = _REQ_SIZE + ssize
        head = ((v << (ssize * 8)) | msg.ses_int(r.off, ln, r.eom)).to_bytes(hl, "big")
        payload = msg.view[r.off:r.off + ln]
        k = (ev_ << 32) | (hl + ln + 12)
        crc = self._seeds.get(k)
        if crc is None:
            crc = self._seeds[k] = crc_seed(self.src, self.peer, ev_, self.port, hl + ln + 12)
        meta = self._metas.get(ev_)
        if meta is None:
            meta = self._metas[ev_] = DatagramMeta(self.src, self.peer, ev_, self.port, ECT0, 0)
        crc = _crc32c(payload, _crc32c(head, crc)) if ln else _crc32c(head, crc)
        return (b"".join((head, payload, crc.to_bytes(4, "big"))), meta)

    def _control(self, ctl: int, psn: int, payload: int, retx: bool, ar: bool,
                 ev_: int | None = None) -> tuple:
        syn = not self.established
        f = {"type": CONTROL, "ctl_type": ctl, "isrod": self.mode == "rod", "retx": retx, "ar": ar,
             "syn": syn, "psn": psn, "spdcid": self.pdcid, "payload": payload & M32}
        if syn:
            f["psn_offset"] = (psn - self.start_psn) & 0xFFF
        else:
            f["dpdcid"] = self.peer_pdcid
        if ev_ is None:  # H3 of uet.multipath: a probe explores, others need their answer
            sel = self.sel
            ev_ = sel.next_probe(self.last_tx) if ctl == CTL_PROBE else sel.next_retransmit(
                self.last_tx)
        meta = DatagramMeta(self.src, self.peer, ev_, self.port, NOT_ECT, DSCP_CONTROL)
        return (seal((_CTL.encode(f),), meta), meta)

    # --- receiving ------------------------------------------------------------------------
    def on_ack(self, cack: int, ack_off: int | None, spdcid: int, mpr: int | None, nh: int,
               bm: int, soff: int, m: int, req: int, hdr: Any, data: bytes, off: int,
               meta: DatagramMeta, now: float) -> None:
        """One ACK (B.7-B.9) for this PDC, as the header fields the sender uses: ``ack_off`` is
        None for a probe ACK (P = 1), ``mpr`` None for a plain ACK. ``hdr`` is the decoded header
        or a (codec, bytes, end) triple that decodes it, for a congestion control that reads it;
        ``data[off:]`` is what follows the header (a SES response when ``nh`` is 4)."""
        ep = self.ep
        if meta.src != self.peer:  # I13
            ep.stats["foreign_ack"] += 1
            return
        # I11: a CACK beyond what was sent, or far behind the base, is bogus
        if ((((cack - self.next_psn + H32) & M32) - H32) >= 0
                or (((cack - self.base + 1 + H32) & M32) - H32) < -self.cfg.tx_range - 65536):
            ep.stats["bad_ack"] += 1
            return
        if not self.established:
            # I2 / C.1
            self.established = True
            self.peer_pdcid = spdcid
            self._set_req_const()
            ep._events.append(ev.PdcEstablished(self.pdcid, self.peer_pdcid, self.peer,
                                                "initiator", self.mode))
        elif spdcid != self.peer_pdcid:
            ep.stats["bad_ack"] += 1
            return
        recs = self.recs
        progress = False
        acked_bytes = 0
        ack_rec = None
        if ack_off is not None:
            ack_rec = recs.get((cack + ack_off) & M32)
            if ack_rec is not None and ack_rec.xmits == 1 and ack_rec.state != LOST and ack_rec.ctl < 0:
                self._rtt_sample(now - ack_rec.sent, now)
        if mpr is not None:
            self.peer_range = (mpr if mpr > 1 else 1) * 128
        sl = ep.ses_layer
        if nh and sl is not None and (ack_rec is None or isinstance(ack_rec.msg, SesOut)):
            # X4: an SES response on the ACK goes to the SES sublayer, attributed by the PSN
            if ack_rec is not None:
                mid = ack_rec.msg.ses_mid
            elif ack_off is not None:
                mid = self.ses_psn.get((cack + ack_off) & M32)
            else:
                mid = None
            if mid is None:
                ep.stats["stale_ses_response"] += 1  # its operation already had its response
            else:
                sl.receive_bytes(nh, data[off:], peer=self.peer, message_id=mid)
                if mid in self.ses_wait and not sl.pending(mid):
                    self._ses_settle(mid)
        # SES response carried by the ACK (W5): fail the message it names
        elif nh == 4:
            try:
                rsp, _ = _RSP.decode(data, off)
                rc = rsp["return_code"]
                if rc not in (0, 1):
                    msg = ack_rec.msg if ack_rec is not None else None
                    if msg is None:
                        msg = next((m for m in self.msgs.values()
                                    if m.message_id == rsp["message_id"]), None)
                    if msg is not None and not msg.failed:
                        msg.failed = True
                        ep._events.append(ev.MessageFailed(msg.handle, self.pdcid, msg.message_id,
                                                           f"SES return code 0x{rc:02X}"))
            except Exception:
                ep.stats["malformed"] += 1
        # CACK (I6) and SACK (C.4), with the RACK update of _delivered inlined (the RACK state
        # and the in-flight count live in locals until the end of the two loops)
        base = self.base
        min_rtt = self.min_rtt
        spurious = 0.75 * min_rtt if min_rtt < INF else -1.0
        srtt4 = 4 * self.srtt
        inflight = self.inflight
        rtt_hi, rtt_hi_t = self.rtt_hi, self.rtt_hi_t
        rack_seq, rack_rtt = self.rack_seq, self.rack_rtt
        delivered = self.sel.on_delivered  # path health (uet.multipath H1-H3)
        if (((cack - base + H32) & M32) - H32) >= 0:
            while True:
                r = recs.pop(base, None)
                if r is not None:
                    st = r.state
                    r.state = ACKED
                    if st != SACKED:
                        if st == INFLIGHT:
                            inflight -= r.ln
                        acked_bytes += r.ln
                        delivered(r.ev, now)
                        rtt = now - r.sent
                        if r.xmits > 1 and rtt < spurious:
                            self._delivered(r, now)  # the spurious case (I7)
                        else:
                            if now - rtt_hi_t > srtt4:
                                self.rtt_prev = rtt_hi
                                rtt_hi = rtt
                                rtt_hi_t = now
                            elif rtt > rtt_hi:
                                rtt_hi = rtt
                            if r.seq > rack_seq:
                                rack_seq = r.seq
                                rack_rtt = rtt
                    msg = r.msg
                    if msg is not None:
                        msg.unacked -= 1
                        if msg.unacked == 0 and msg.all_queued:
                            ep._message_done(self, msg, r.psn, now)
                    elif r.ctl == CTL_CLOSE:
                        self.inflight = inflight
                        self.rtt_hi, self.rtt_hi_t = rtt_hi, rtt_hi_t
                        self.rack_seq, self.rack_rtt = rack_seq, rack_rtt
                        ep._closed_initiator(self)
                        return
                if base == cack:
                    break
                base = (base + 1) & M32
            if self.sackmask:
                self.sackmask >>= (cack + 1 - self.base) & M32
            self.base = base = (cack + 1) & M32
            progress = True
        # SACK: the bits of PSNs in [base, next PSN) not yet known SACKED (the others name no
        # record or a SACKED one: nothing to do for them)
        if bm:
            sbase = (cack + soff) & M32
            lb, lbm = self.last_sack
            if lb == sbase:
                new = bm & ~lbm
            else:
                new = bm
            self.last_sack = (sbase, bm)
            span = (self.next_psn - base) & M32
            d0 = (((base - sbase + H32) & M32) - H32)
            if d0 > 0:
                new >>= d0  # drop the bits below the base; bit k is now PSN base + k
            elif -d0 < span:
                new <<= -d0
            else:
                new = 0
            sackmask = self.sackmask
            new &= ((1 << span) - 1) & ~sackmask
            while new:
                low = new & -new
                new ^= low
                r = recs.get((base + low.bit_length() - 1) & M32)
                if r is not None and r.state != SACKED:
                    if r.state == INFLIGHT:
                        inflight -= r.ln
                    r.state = SACKED
                    sackmask |= low
                    acked_bytes += r.ln
                    delivered(r.ev, now)
                    rtt = now - r.sent
                    if r.xmits > 1 and rtt < spurious:
                        self._delivered(r, now)  # the spurious case (I7)
                    else:
                        if now - rtt_hi_t > srtt4:
                            self.rtt_prev = rtt_hi
                            rtt_hi = rtt
                            rtt_hi_t = now
                        elif rtt > rtt_hi:
                            rtt_hi = rtt
                        if r.seq > rack_seq:
                            rack_seq = r.seq
                            rack_rtt = rtt
                    progress = True
            self.sackmask = sackmask
        self.inflight = inflight
        self.rtt_hi, self.rtt_hi_t = rtt_hi, rtt_hi_t
        self.rack_seq, self.rack_rtt = rack_seq, rack_rtt
        if progress:
            self.rto_count = 0
            self.rto_not_before = 0.0
            self.backoff = 1
            self.tlp_count = 0
            self.tlp_pending = False
            self.last_progress = now
        if m and self._cc_on_ce:
            self.cc.on_ce(now, acked_bytes)
        if self._cc_on_ack:
            if type(hdr) is tuple:
                hdr = hdr[0].decode(hdr[1][:hdr[2]])[0]
            self.cc.on_ack(now, acked_bytes, self.inflight, hdr)
        self.sel.on_ack(meta.dport, bool(m), now)
        if ack_off is None and not progress:
            # I8: a probe's answer shows the base PSN still missing: if its last copy went on an
            # EV not known to work, resend it now (H3 picks the EV this answer just proved)
            r = recs.get(self.base)
            if r is not None and r.state == INFLIGHT and not self.sel.known(r.ev):
                self._mark_lost(r, now)
        if self.rack_seq:
            self._detect_loss(now)
        if req == 1:
            self.ctl_q.append((CTL_CLEAR, 0, (self.base - 1) & M32, False))
        elif req == 2:
            self.close_wanted = True

    def on_nack(self, f: dict, meta: DatagramMeta, now: float) -> None:
        ep = self.ep
        if meta.src != self.peer:  # I13
            ep.stats["foreign_nack"] += 1
            return
        code = f["nack_code"]
        psn = f["nack_psn"]
        # I11
        if pdiff(psn, self.base) < 0 or pdiff(psn, self.next_psn) >= 0:
            ep.stats["stale_nack"] += 1
            return
        r = self.recs.get(psn)
        if r is None:
            ep.stats["stale_nack"] += 1
            return
        if self.established and f["spdcid"] not in (0, self.peer_pdcid):
            ep.stats["bad_nack"] += 1
            return
        if r.ctl == CTL_CLOSE and code in NACK_CLOSED:
            # C2: the target freed the PDC and its MSL ended before our CLOSE (or its repeat)
            # got through; every message was acknowledged before the CLOSE went out, so the PDC
            # is closed, not failed
            ep.stats["close_nacked"] += 1
            ep._closed_initiator(self)
            return
        self.cc.on_nack(now, code, r.ln)
        self.sel.on_nack(meta.dport, code, now)
        if code in NACK_RETX_NOW or code in NACK_RETX_LATER:
            if r.state == SACKED:
                return  # a NACK for a copy of something that already arrived
            if r.state == LOST:
                return  # its resend is already due: one resend per loss, however many NACKs
            cfg = self.cfg
            if code in NACK_RESOURCE:
                # I10: the target is short of a resource it frees by reaping (T3, T7): back off
                # exponentially, long enough in all to outlast its reaping times
                r.waits += 1
                if r.waits > cfg.max_resource_retx:
                    ep._fail_initiator(self, f"NACK {nack_name(code)} retry limit")
                    return
                delay = min(cfg.nack_retx_time * (1 << min(r.waits - 1, 40)),
                            max(cfg.resource_backoff_max, cfg.nack_retx_time))
            else:
                r.nacks += 1
                if r.nacks > cfg.max_nack_retx:
                    ep._fail_initiator(self, f"NACK {nack_name(code)} retry limit")
                    return
                delay = cfg.nack_retx_time
            if r.state == INFLIGHT:
                self.inflight -= r.ln
            r.state = LOST
            if code in NACK_RETX_NOW:
                self.retx_q.append(psn)
            else:
                self.delayed.append((now + delay, psn))
                self.delayed.sort()
        elif code in NACK_CLOSE:
            ep._fail_initiator(self, f"NACK {nack_name(code)}")
        elif code == N["NEW_START_PSN"]:
            if not self.established:
                self._rebase(f["payload"] & M32, now)
        # RCVD_SES_PROCG and unknown codes: no state change; the RTO covers it

    def _rebase(self, new_start: int, now: float) -> None:
        """NEW_START_PSN (C.1, B.11): shift every PSN by the delta and resend everything."""
        delta = (new_start - self.start_psn) & M32
        old = sorted(self.recs.values(), key=lambda r: pdiff(r.psn, self.start_psn))
        self.start_psn = new_start
        self.base = (self.base + delta) & M32
        self.next_psn = (self.next_psn + delta) & M32
        self.recs = {}
        self.sackmask = 0
        self.sent_q.clear()
        self.retx_q.clear()
        self.delayed = []
        self.inflight = 0
        for r in old:
            r.psn = (r.psn + delta) & M32
            r.state = LOST
            self.recs[r.psn] = r
            self.retx_q.append(r.psn)
        if self.close_psn is not None:
            self.close_psn = (self.close_psn + delta) & M32

    def on_control(self, f: dict, meta: DatagramMeta, now: float) -> None:
        if meta.src != self.peer:  # I13
            self.ep.stats["foreign_control"] += 1
            return
        ctl = f["ctl_type"]
        if ctl == CTL_CLEAR_REQ:
            self.ctl_q.append((CTL_CLEAR, 0, (self.base - 1) & M32, False))
        elif ctl == CTL_CLOSE_REQ:
            self.close_wanted = True
        else:
            self.ep.stats["unsupported"] += 1


# ------------------------------------------------------------------------------------------------
# target
# ------------------------------------------------------------------------------------------------

class Target:
    role = "target"

    def __init__(self, ep: "Endpoint", pdcid: int, peer: str, local: str, peer_pdcid: int,
                 rod: bool, start_psn: int, key: tuple):
        self.ep = ep
        self.pdcid = pdcid
        self.peer = peer
        self.local = local
        self.peer_pdcid = peer_pdcid
        self.rod = rod
        self.mode = "rod" if rod else "rud"
        self.start_psn = start_psn
        self.key = key
        self.win = native.PsnWindow(start_psn, ep.config.rx_window)
        self.cack = self.win.cack  # mirror of win.cack, refreshed after every win.set
        self.size = ep.config.rx_window
        self.bytes_since_ack = 0
        self.pending_ar: int | None = None
        self.sack_base = self.win.cack
        self.late: int | None = None
        self.rcvd_bytes = 0
        self.ooo_count = 0
        self.rod_buf: dict[int, Any] = {}
        self.next_deliver = start_psn
        self.rx_msgs: dict[int, Any] = {}
        self.ses_rsps: dict[int, tuple[int, bytes]] = {}  # X3: PSN -> (next_hdr, SES response)
        self.ses_late: list[int] = []  # X3: PSNs whose response was made since the last ACK
        self.clear_psn = (start_psn - 1) & M32
        self.close_psn: int | None = None
        self.last_rx = 0.0
        self.open = False  # T3: a packet without SYN named us (the initiator learned our PDCID)
        # the constant part of this PDC's ACKs (A2): type, PDC ids, MPR, cc_type 0
        # (None when the configuration does not fit the fields: the general encoder says so)
        cfg = ep.config
        try:
            if cfg.ack_type == "ack":
                self.ack_const = _ACK_VAR.encode_int({"type": ACK, "spdcid": pdcid,
                                                      "dpdcid": peer_pdcid})
            else:
                self.ack_const = _ACKCC_VAR.encode_int({"type": ACK_CC, "spdcid": pdcid,
                                                        "dpdcid": peer_pdcid, "mpr": cfg.mpr})
        except ValueError:
            self.ack_const = None

    def set_psn(self, psn: int) -> None:
        self.win.set(psn)
        self.cack = self.win.cack


class _Tomb:
    __slots__ = ("peer", "peer_pdcid", "close_psn", "expire", "role")

    def __init__(self, peer: str, peer_pdcid: int, close_psn: int | None, expire: float, role: str):
        self.peer = peer
        self.peer_pdcid = peer_pdcid
        self.close_psn = close_psn
        self.expire = expire
        self.role = role


# ------------------------------------------------------------------------------------------------
# endpoint
# ------------------------------------------------------------------------------------------------

class Endpoint:
    """One host's PDS: its PDCs, PDCID allocator and PDC limit, in the aioquic style."""

    def __init__(self, address: str, config: PdsConfig | None = None, *, seed: int | None = None):
        self.address = address
        self.config = config or PdsConfig()
        self.rng = random.Random(self.config.seed if seed is None else seed)
        self._stats: Counter = Counter()
        self._n_rx = 0  # per-packet counters, folded into ``stats`` when it is read
        self._n_acks = 0
        self.nacks_sent: Counter = Counter()
        self.nacks_rcvd: Counter = Counter()
        self.last_error: BaseException | None = None
        self._pdcs: dict[int, Initiator | Target] = {}
        self._inits: dict[int, Initiator] = {}  # the initiator PDCs of _pdcs
        self._tgts: dict[int, Target] = {}  # the target PDCs of _pdcs
        self._init_by_key: dict[tuple, Initiator] = {}
        self._tgt_by_key: dict[tuple, Target] = {}
        self._tombs: dict[int, _Tomb] = {}
        self._peer_targets: Counter = Counter()  # target PDCs per peer address (T3)
        self._reap_after: dict[str | None, float] = {}  # T3: no idle target before then
        self._nack_tokens: dict[str, tuple[float, float]] = {}  # T3: per peer (tokens, time)
        self._sweep_at = INF  # T7: next idle sweep of targets holding partial messages
        first = self.config.first_pdcid
        # a generator of its own, so that the start PSNs drawn from self.rng stay as they were
        self._next_pdcid = (first if first is not None
                            else random.Random(f"pdcid:{self.config.seed if seed is None else seed}")
                            .randrange(1, 0x10000))
        self._out: list = []
        self._events: deque = deque()
        self._handles = 0
        self._now = 0.0
        self._reply_meta: dict[tuple, DatagramMeta] = {}
        # get_timer's value, valid while _timer_dirty is False: everything that can move a
        # deadline (initiator state, tombs) sets it; a target accepting a request does not
        self._timer: float | None = None
        self._timer_dirty = True
        self.ses = MessageLayer(self)
        #: the SES sublayer (a uet.ses.SesEndpoint) when attached with attach_ses (X1-X6)
        self.ses_layer: Any = None
        self.ses_mode = "rud"

    # --- public API -----------------------------------------------------------------------
    @property
    def stats(self) -> Counter:
        """Counters of what happened (``rx_datagrams``, ``bad_crc``, ``retransmissions``, ...)."""
        s = self._stats
        if self._n_rx:
            s["rx_datagrams"] += self._n_rx
            self._n_rx = 0
        if self._n_acks:
            s["acks_tx"] += self._n_acks
            self._n_acks = 0
        return s

    @stats.setter
    def stats(self, value: Counter) -> None:
        self._n_rx = self._n_acks = 0
        self._stats = value

    def send_message(self, dst: str, data: bytes, *, mode: str = "rud", job_id: int = 0,
                     pid_on_fep: int = 0, resource_index: int = 0, tc: int = 0) -> int:
        """Queue one message (SES SEND) to ``dst``; returns a handle named by the SendComplete or
        MessageFailed event. The PDC (C.1 key: mode, job, source, destination, TC) is created on
        first use. Raises RuntimeError when the PDC limit is reached."""
        if mode not in ("rud", "rod"):
            raise ValueError("mode must be 'rud' or 'rod'")
        pdc = self._initiator_for(dst, mode, job_id, tc)
        self._handles += 1
        msg = OutMessage(self._handles, bytes(data) if not isinstance(data, bytes) else data,
                         job_id, pid_on_fep, resource_index)
        pdc.add_message(msg)
        return msg.handle

    def _initiator_for(self, dst: str, mode: str, job_id: int, tc: int) -> "Initiator":
        self._timer_dirty = True
        key = (mode, job_id, self.address, dst, tc)
        pdc = self._init_by_key.get(key)
        if pdc is None:
            pdcid = self._alloc_pdcid()
            if pdcid is None:
                raise RuntimeError("PDC limit reached")
            pdc = Initiator(self, pdcid, dst, mode, key)
            self._pdcs[pdcid] = pdc
            self._inits[pdcid] = pdc
            self._init_by_key[key] = pdc
        return pdc

    def attach_ses(self, ses: Any, *, mode: str = "rud") -> None:
        """Attach an SES sublayer (uet.ses.SesEndpoint): from now on every request with an SES
        header is handed to it (X2), and the packets it queues (operations, read data) are sent
        over ``mode`` PDCs to their ``peer`` address (X1). Its SesConfig.mtu must not exceed
        this endpoint's mtu."""
        if mode not in ("rud", "rod"):
            raise ValueError("mode must be 'rud' or 'rod'")
        if ses.config.mtu > self.config.mtu:
            raise ValueError("the SES mtu must not exceed the PDS mtu "
                             "(one SES packet, one request)")
        self.ses_layer = ses
        self.ses_mode = mode

    def _pump_ses(self) -> None:
        """X1: the SES sublayer's queued packets become PDS requests, one packet each."""
        for pkt in self.ses_layer.packets_to_send():
            try:
                pdc = self._initiator_for(str(pkt.peer), self.ses_mode, 0, 0)
            except RuntimeError:
                if pkt.next_hdr in (1, 2, 3):
                    self.ses_layer.transport_failed(pkt.message_id, "PDC limit reached")
                continue
            self._handles += 1
            pdc.add_message(SesOut(self._handles, pkt))

    def close(self, dst: str | None = None, *, pdcid: int | None = None) -> None:
        """Close initiator PDCs (to ``dst``, or the one ``pdcid``) once everything is acknowledged
        (C.7); a PdcClosed event follows."""
        self._timer_dirty = True
        for p in list(self._pdcs.values()):
            if isinstance(p, Initiator) and (pdcid is None or p.pdcid == pdcid) and (
                    dst is None or p.peer == dst):
                p.close_wanted = True

    def request_close(self, pdcid: int) -> None:
        """Target side: ask the initiator to close (CONTROL CLOSE_REQ, C.7)."""
        t = self._pdcs.get(pdcid)
        if isinstance(t, Target):
            f = {"type": CONTROL, "ctl_type": CTL_CLOSE_REQ, "isrod": t.rod, "psn": 0,
                 "spdcid": t.pdcid, "dpdcid": t.peer_pdcid}
            meta = DatagramMeta(t.local, t.peer, self.config.port, self.config.port, NOT_ECT,
                                DSCP_CONTROL)
            self._out.append((seal((_CTL.encode(f),), meta), meta))

    def pdcs(self) -> list:
        return list(self._pdcs.values())

    def next_event(self) -> ev.Event | None:
        return self._events.popleft() if self._events else None

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, DatagramMeta]]:
        """The datagrams to put on the wire now. The metadata objects may be shared between
        datagrams (one per entropy value or reply direction): treat them as read-only."""
        self._now = now
        if self.ses_layer is not None:
            self._pump_ses()
        out = self._out
        self._out = []
        if self._inits:
            self._timer_dirty = True
            for p in tuple(self._inits.values()):
                if not p.closed:
                    p.fill(now, out)
        if out:
            self._stats["tx_datagrams"] += len(out)
        return out

    def get_timer(self) -> float | None:
        """The earliest deadline of the endpoint's timers (None: none). The value is kept
        until something that can move a deadline happens (an initiator or a PDC close is
        touched), so calling this after every datagram costs next to nothing on a target."""
        if not self._timer_dirty:
            return self._timer
        t = INF
        for p in self._inits.values():
            d = p.deadline()
            if d < t:
                t = d
        if self._tombs:
            first = next(iter(self._tombs.values()))
            if first.expire < t:
                t = first.expire
        if self._sweep_at < t:
            t = self._sweep_at
        self._timer = r = None if t == INF else t
        self._timer_dirty = False
        return r

    def handle_timer(self, now: float) -> None:
        self._now = now
        self._timer_dirty = True
        try:
            for p in tuple(self._inits.values()):
                if not p.closed and p.deadline() <= now:
                    p.on_timer(now)
            self._purge_tombs(now)
            if self._sweep_at <= now:
                self._sweep_idle(now)
        except Exception as exc:  # pragma: no cover - a bug, counted, never raised to the caller
            self.stats["internal_error"] += 1
            self.last_error = exc

    # --- receive --------------------------------------------------------------------------
    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        self._now = now
        self._n_rx += 1
        try:
            if type(data) is not bytes:
                data = bytes(data)
            n = len(data)
            if n < _ACKCC_SIZE + TRAILER or meta.dscp == DSCP_TRIMMED:
                self._timer_dirty = True
                self._receive(data, meta, now)  # R1, runts: the general way
                return
            # R2: the trailer (the CRC of everything before it, seeded with the 5-tuple context)
            end = n - TRAILER
            seed = crc_seed(meta.src, meta.dst, meta.sport, meta.dport, 8 + n)
            if _crc32c_prefix(data, end, seed) != _INT_FROM(data[end:], "big"):
                self._stats["bad_crc"] += 1
                return
            ptype = data[0] >> 3
            if (ptype == RUD_REQ or ptype == ROD_REQ) and end >= _HOT_MIN:
                # Hot path: no SYN, a SEND standard header, a new PSN inside the window of an
                # established PDC (T4-T6, W1-W4), a message already in reassembly (W5), then A1.
                # Anything else, or any check that fails, goes the general way before state
                # changes (_on_request: the same result).
                (nh, retx, ar, syn, clr, psn, spdcid, dpdcid, op, som, mid, pl, mo,
                 rl) = _read_req_std(data)
                t = self._tgts.get(dpdcid)
                if (t is not None and not syn and nh == 3 and op == SEND
                        and t.peer_pdcid == spdcid and t.peer == meta.src
                        and t.rod == (ptype == ROD_REQ) and t.close_psn is None):
                    cack = t.cack
                    d = ((psn - cack + H32) & M32) - H32
                    rest = end - _REQ_STD
                    if som:
                        mo = 0
                        pl = rest
                    rx = t.rx_msgs.get(mid)
                    cfg = self.config
                    if (0 < d <= t.size and pl == rest and rx is not None and rx.length == rl
                            and mo + pl <= rl and rl <= cfg.max_message_bytes
                            and (d == 1 or not ((t.rod and not cfg.rod_buffer)
                                                or t.win.test(psn)))
                            and (not rest or self.ses.reserve(rx, mo, rest))):
                        self._accept(t, data, end, psn, d, retx, ar, clr, rx, mo, rest, meta,
                                     now, cfg)
                        return  # (nothing here can move a timer)
                self._timer_dirty = True
                self._on_request(data, end, ptype, meta, now)
            elif ptype == ACK_CC:
                self._timer_dirty = True
                nh, m, p, req, aoff, cack, spdcid, dpdcid, mpr, soff, bm = _read_ackcc(data)
                ini = self._inits.get(dpdcid)
                if ini is None:
                    self._stats["stale_ack"] += 1
                    return
                ini.on_ack(cack, None if p else aoff, spdcid, mpr, nh, bm, soff, m, req,
                           (_ACK_CC, data, end), data[:end] if nh else b"", _ACKCC_SIZE,
                           meta, now)
            else:
                self._timer_dirty = True
                self._dispatch(data, end, ptype, meta, now)
        except (ValueError, IndexError, KeyError, OverflowError):
            self._stats["malformed"] += 1
        except Exception as exc:  # principle 6: never escape; counted so tests can see it
            self._stats["internal_error"] += 1
            self.last_error = exc

    def _accept(self, t: Target, data: bytes, end: int, psn: int, d: int, retx: int, ar: int,
                clr: int, rx: Any, mo: int, rest: int, meta: DatagramMeta, now: float,
                cfg: PdsConfig) -> None:
        """W1 (a new PSN, admitted by the message layer), W4 and A1 for the hot path of
        :meth:`receive_datagram`: what :meth:`_target_request` does for such a request."""
        t.last_rx = now
        t.open = True
        win = t.win
        win.set(psn)
        plen = end - _REQ_SIZE
        t.rcvd_bytes += plen
        if d == 1:
            t.cack = cack = win.cack  # (a PSN beyond CACK + 1 cannot move CACK)
        else:
            cack = t.cack
            t.ooo_count += 1
            late = t.late
            if (((psn - t.sack_base + H32) & M32) - H32 < 0
                    and (late is None or ((psn - late + H32) & M32) - H32 < 0)):
                t.late = psn
        if clr:
            t.clear_psn = (psn + clr) & M32
        # delivery (W4)
        if t.rod:
            self._rod_deliver(t, psn, (rx, mo, data[_REQ_STD:end], None), now)
        else:
            if cfg.packet_events:
                self._events.append(ev.DataReceived(t.pdcid, psn, rx.mid, mo, rest))
            if rest:
                rx.got += rx.asm.place(mo, data[_REQ_STD:end])
            if rx.got == rx.length:
                self.ses.complete(t, rx)
        # A1
        add = cfg.ack_gen_min_pkt_add
        t.bytes_since_ack = b = t.bytes_since_ack + (plen if plen > add else add)
        ce = meta.ecn == CE
        if ar or b >= cfg.ack_gen_trigger or (ce and cfg.ack_on_ecn) or cfg.ack_per_packet:
            self._send_ack(t, meta, psn, retx, ce)
            if ar and ((psn - cack + H32) & M32) - H32 > 0:
                t.pending_ar = psn
        elif t.pending_ar is not None and ((cack - t.pending_ar + H32) & M32) - H32 >= 0:
            self._send_ack(t, meta, psn, retx, ce)
        elif ar:
            t.pending_ar = psn

    def _rod_deliver(self, t: Target, psn: int, item: Any, now: float) -> None:
        """W4, ROD: deliver ``item`` (None: nothing to hand up) in PSN order."""
        if psn == t.next_deliver:
            t.next_deliver = (psn + 1) & M32
            ses = self.ses
            if item is not None:
                ses.deliver(t, item, psn, now)
            buf = t.rod_buf
            if buf:
                nd = t.next_deliver
                while nd in buf:
                    it = buf.pop(nd)
                    if it is not None:
                        ses.deliver(t, it, nd, now)
                    nd = (nd + 1) & M32
                t.next_deliver = nd
        else:
            t.rod_buf[psn] = item

    def _receive(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        if type(data) is not bytes:
            data = bytes(data)
        n = len(data)
        if meta.dscp == DSCP_TRIMMED:  # R1
            self._on_trimmed(data, meta)
            return
        if n < 4 + TRAILER:
            self.stats["bad_crc" if n >= TRAILER else "malformed"] += 1
            return
        # R2: the trailer (the CRC of everything before it, seeded with the 5-tuple context)
        end = n - TRAILER
        seed = crc_seed(meta.src, meta.dst, meta.sport, meta.dport, 8 + n)
        if _crc32c_prefix(data, end, seed) != _INT_FROM(data[end:], "big"):
            self.stats["bad_crc"] += 1
            return
        self._dispatch(data, end, data[0] >> 3, meta, now)

    def _dispatch(self, data: bytes, end: int, ptype: int, meta: DatagramMeta, now: float) -> None:
        """By PDS type, after R1 and R2 (the general way for every type)."""
        if ptype in REQ_TYPES:
            self._on_request(data, end, ptype, meta, now)
        elif ptype == ACK_CC:
            if end < _ACKCC_SIZE:
                _ACK_CC.decode(data[:end])  # raises TruncatedError: counted as malformed
            nh, m, p, req, aoff, cack, spdcid, dpdcid, mpr, soff, bm = _read_ackcc(data)
            ini = self._inits.get(dpdcid)
            if ini is None:
                self.stats["stale_ack"] += 1
                return
            ini.on_ack(cack, None if p else aoff, spdcid, mpr, nh, bm, soff, m, req,
                       (_ACK_CC, data, end), data[:end] if nh else b"", _ACKCC_SIZE, meta,
                       now)
        elif ptype == ACK or ptype == ACK_CCX:
            codec = _ACK if ptype == ACK else _ACK_CCX
            f, size = codec.decode(data[:end])
            ini = self._inits.get(f["dpdcid"])
            if ini is None:
                self.stats["stale_ack"] += 1
                return
            ini.on_ack(f["cack_psn"], None if f["p"] else f["ack_psn_offset"], f["spdcid"],
                       f.get("mpr"), f["next_hdr"], f.get("sack_bitmap", 0),
                       f.get("sack_psn_offset", 0), f["m"], f["req"], f, data[:end], size, meta,
                       now)
        elif ptype == NACK or ptype == NACK_CCX:
            f, _ = (_NACK if ptype == NACK else _NACK_CCX).decode(data[:end])
            if f["nt"]:
                self.stats["unsupported"] += 1
                return
            self.nacks_rcvd[nack_name(f["nack_code"])] += 1
            p = self._pdcs.get(f["dpdcid"])
            if p is None or p.role != "initiator":
                self.stats["stale_nack"] += 1
                return
            p.on_nack(f, meta, now)
        elif ptype == CONTROL:
            self._on_control(data, end, meta, now)
        else:
            self.stats["unsupported"] += 1

    # --- target side ----------------------------------------------------------------------
    def _lookup_target(self, f: dict, ptype_rod: bool, meta: DatagramMeta, data: bytes,
                       end: int, is_req: bool) -> Target | None:
        """T1-T6: find (or, on SYN, create) the target PDC; sends the NACK when there is none."""
        spdcid = f["spdcid"]
        psn = f["psn"]
        if f["syn"]:
            key = (meta.src, meta.dst, spdcid)
            t = self._tgt_by_key.get(key)
            start = (psn - f["psn_offset"]) & M32
            if t is None:
                if not is_req:
                    return None
                if spdcid == 0:
                    self._send_nack(meta, N["PDC_HDR_MISMATCH"], psn, 0, spdcid, f)
                    return None
                pdcid = None
                if (self._peer_targets[meta.src] < self.config.max_pdcs_per_peer
                        or self._reap_idle_targets(self._now, meta.src)):
                    pdcid = self._alloc_pdcid()
                if pdcid is None:  # T3
                    if self._nack_allowed(meta.src):
                        self._send_nack(meta, N["NO_PDC_AVAIL"], psn, 0, spdcid, f)
                    return None
                t = Target(self, pdcid, meta.src, meta.dst, spdcid, ptype_rod, start, key)
                self._pdcs[pdcid] = t
                self._tgts[pdcid] = t
                self._tgt_by_key[key] = t
                self._peer_targets[meta.src] += 1
                self._events.append(ev.PdcEstablished(pdcid, spdcid, meta.src, "target", t.mode))
            elif start != t.start_psn:  # T4
                self._send_nack(meta, N["INVALID_SYN"], psn, t.pdcid, spdcid, f)
                return None
        else:
            dp = f["dpdcid"]
            t = self._pdcs.get(dp)
            if t is None or t.role != "target":
                tomb = self._tombs.get(dp)
                if tomb is not None and tomb.role == "target" and tomb.peer == meta.src:
                    self._answer_tomb(dp, tomb, f, meta)
                    return None
                self._send_nack(meta, N["INV_DPDCID"], psn, 0, spdcid, f)  # T4
                return None
            if t.peer_pdcid != spdcid or t.peer != meta.src:  # T5
                self._send_nack(meta, N["PDC_HDR_MISMATCH"], psn, t.pdcid, spdcid, f)
                return None
            t.open = True
        if t.rod != ptype_rod:  # T6
            self._send_nack(meta, N["PDC_MODE_MISMATCH"], psn, t.pdcid, spdcid, f)
            return None
        return t

    def _on_request(self, data: bytes, end: int, ptype: int, meta: DatagramMeta, now: float) -> None:
        codec = _REQ if ptype <= ROD_REQ else _REQ_CC
        var = codec.variant(data)
        hsize = var.size
        if hsize > end:
            self.stats["malformed"] += 1
            return
        f = var.decode_int(_INT_FROM(data[:hsize], "big"))
        t = self._lookup_target(f, ptype in ROD_TYPES, meta, data, end, True)
        if t is None:
            return
        self._target_request(t, f, data, hsize, end, meta, now)

    def _target_request(self, t: Target, f: dict, data: bytes, hoff: int, end: int,
                        meta: DatagramMeta, now: float) -> None:
        psn = f["psn"]
        win = t.win
        cack = win.cack
        d = pdiff(psn, cack)
        t.last_rx = now
        ce = meta.ecn == CE
        if d <= 0 or (d <= t.size and win.test(psn)):
            if d <= -t.size:  # W3
                self._send_nack(meta, N["PSN_OOR_WINDOW"], psn, t.pdcid, t.peer_pdcid, f,
                                payload=(cack + 1) & M32)
                return
            self.stats["dup_rx"] += 1  # W2
            self._send_ack(t, meta, psn, f["retx"], ce)
            return
        if d > t.size:  # W3
            code = N["INVALID_SYN"] if f["syn"] else N["PSN_OOR_WINDOW"]
            self._send_nack(meta, code, psn, t.pdcid, t.peer_pdcid, f, payload=(cack + 1) & M32)
            return
        if t.close_psn is not None and pdiff(psn, t.close_psn) > 0:  # C2
            self._send_nack(meta, N["CLOSING"], psn, t.pdcid, t.peer_pdcid, f)
            return
        if t.rod and d != 1 and not self.config.rod_buffer:  # W4
            self._send_nack(meta, N["ROD_OOO"], psn, t.pdcid, t.peer_pdcid, f)
            return
        # W5: message-layer admission
        code, item = self.ses.admit(t, data, hoff, end, f["next_hdr"])
        if code > 0:
            self._send_nack(meta, code, psn, t.pdcid, t.peer_pdcid, f)
            return
        t.set_psn(psn)
        plen = end - hoff
        t.rcvd_bytes += plen
        if d != 1:
            t.ooo_count += 1
            if pdiff(psn, t.sack_base) < 0 and (t.late is None or pdiff(psn, t.late) < 0):
                t.late = psn
        c = f["clear_psn_offset"]
        if c:
            t.clear_psn = (psn + c) & M32
        # delivery (W4)
        if t.rod:
            self._rod_deliver(t, psn, item if code == 0 else None, now)
        elif code == 0:
            self.ses.deliver(t, item, psn, now)
        # A1
        cfg = self.config
        add = plen if plen > cfg.ack_gen_min_pkt_add else cfg.ack_gen_min_pkt_add
        t.bytes_since_ack += add
        ar = f["ar"]
        newcack = t.cack
        rsp = item if code < 0 else None
        if t.ses_late:
            # X3: responses made now for PSNs other than this one (ROD released them from the
            # reorder buffer) go at once, each on an ACK of its own PSN
            late, t.ses_late = t.ses_late, []
            for lp in late:
                if lp != psn:
                    self._send_ack(t, meta, lp, False, False)
        if (ar or f["syn"] or rsp is not None or (ce and cfg.ack_on_ecn)
                or t.bytes_since_ack >= cfg.ack_gen_trigger or cfg.ack_per_packet):
            self._send_ack(t, meta, psn, f["retx"], ce, rsp)
            if ar and pdiff(psn, newcack) > 0:
                t.pending_ar = psn
        elif t.pending_ar is not None and pdiff(newcack, t.pending_ar) >= 0:
            self._send_ack(t, meta, psn, f["retx"], ce)
        elif ar:
            t.pending_ar = psn
        if t.close_psn is not None and newcack == t.close_psn:
            self._close_target(t, now)

    def _reply_to(self, meta: DatagramMeta) -> DatagramMeta:
        """A4: the metadata of an ACK/NACK answering a datagram that came with ``meta``."""
        k = (meta.src, meta.dst, meta.sport, meta.dport)
        r = self._reply_meta.get(k)
        if r is None:
            r = DatagramMeta(meta.dst, meta.src, meta.dport, meta.sport, NOT_ECT, DSCP_CONTROL)
            if len(self._reply_meta) >= 1 << 16:
                self._reply_meta.clear()
            self._reply_meta[k] = r
        return r

    def _send_ack(self, t: Target, meta: DatagramMeta, psn: int, retx: bool, ce: bool,
                  rsp: Any = None, probe: int | None = None) -> None:
        cfg = self.config
        win = t.win
        cack = t.cack
        sb = t.sack_base  # A3
        if pdiff(cack, sb) > 0:
            sb = cack
        hi = win.highest
        while (((hi - sb + H32) & M32) - H32) > 63:
            sb = (sb + 64) & M32
        t.sack_base = sb
        late = t.late
        if late is not None:
            t.late = None
            if pdiff(late, cack) > 0:
                sb = late  # report a PSN that arrived below the tracker base (A3)
        t.bytes_since_ack = 0
        if t.pending_ar is not None and pdiff(cack, t.pending_ar) >= 0:
            t.pending_ar = None
        aoff = ((psn - cack + H32) & M32) - H32
        aoff = -32768 if aoff < -32768 else (aoff if aoff < 32767 else 32767)
        plain = cfg.ack_type == "ack"
        soff = ((sb - cack + H32) & M32) - H32
        rmeta = self._reply_to(meta)
        sr = t.ses_rsps.get(psn) if t.ses_rsps else None  # X3
        if (rsp is None and sr is None and probe is None and t.ack_const is not None
                and (plain or -32768 <= soff <= 32767)):
            # the common ACK: per-PDC constant | the fields of this one
            if plain:
                v = (t.ack_const | (1 << _PA_M if ce else 0) | (1 << _PA_RETX if retx else 0)
                     | ((aoff & 0xFFFF) << _PA_OFF) | (cack << _PA_CACK))
                body = v.to_bytes(_ACK_VAR.size, "big")
            else:
                v = (t.ack_const | (1 << _AK_M if ce else 0) | (1 << _AK_RETX if retx else 0)
                     | ((aoff & 0xFFFF) << _AK_OFF) | (cack << _AK_CACK)
                     | ((soff & 0xFFFF) << _AK_SOFF) | (win.sack_word(sb) << _AK_BM)
                     | ((t.rcvd_bytes & 0xFFFFFF) << _AK_RB) | ((t.ooo_count & 0xFFFF) << _AK_OOO))
                body = v.to_bytes(_ACKCC_VAR.size, "big")
            self._out.append((seal((body,), rmeta), rmeta))
            self._n_acks += 1
            return
        f: dict[str, Any] = {"m": ce, "retx": retx, "cack_psn": cack, "spdcid": t.pdcid,
                             "dpdcid": t.peer_pdcid}
        if probe is not None:
            f["p"] = 1
            f["probe_opaque"] = probe
        else:
            f["ack_psn_offset"] = aoff
        if rsp is not None:
            f["next_hdr"] = 4
        elif sr is not None:
            f["next_hdr"] = sr[0]
        if plain:
            f["type"] = ACK
            var = _ACK_P_VAR if probe is not None else _ACK_VAR
        else:
            f["type"] = ACK_CC
            f["mpr"] = cfg.mpr
            f["sack_psn_offset"] = soff
            f["sack_bitmap"] = win.sack_word(sb)
            f["rcvd_bytes"] = t.rcvd_bytes & 0xFFFFFF
            f["ooo_count"] = t.ooo_count & 0xFFFF
            var = _ACKCC_P_VAR if probe is not None else _ACKCC_VAR
        parts = [var.encode_int(f).to_bytes(var.size, "big")]
        if rsp is not None:
            rc, mid = rsp
            parts.append(_RSP.encode({"opcode": 1, "return_code": rc, "message_id": mid}))
        elif sr is not None:
            parts.append(sr[1])
        self._out.append((seal(parts, rmeta), rmeta))
        self._n_acks += 1

    def _send_nack(self, meta: DatagramMeta, code: int, psn: int, spdcid: int, dpdcid: int,
                   f: dict | None = None, payload: int = 0) -> None:
        nf = {"type": NACK, "m": meta.ecn == CE, "retx": bool(f and f.get("retx")), "nt": False,
              "nack_code": code, "nack_psn": psn & M32, "spdcid": spdcid, "dpdcid": dpdcid,
              "payload": payload}
        rmeta = self._reply_to(meta)
        self._out.append((seal((_NACK.encode(nf),), rmeta), rmeta))
        self.nacks_sent[nack_name(code)] += 1

    def _on_trimmed(self, data: bytes, meta: DatagramMeta) -> None:
        """R1: NACK TRIMMED for the PSN of a trimmed request."""
        self.stats["trimmed_rx"] += 1
        if len(data) < 12 or (data[0] >> 3) not in REQ_TYPES:
            self.stats["malformed"] += 1
            return
        f, _ = _REQ.decode(data, 0)
        spdcid = 0
        if f["syn"]:
            t = self._tgt_by_key.get((meta.src, meta.dst, f["spdcid"]))
        else:
            t = self._pdcs.get(f["dpdcid"])
            if t is not None and (t.role != "target" or t.peer_pdcid != f["spdcid"]):
                t = None
        if t is not None:
            spdcid = t.pdcid
        self._send_nack(meta, N["TRIMMED"], f["psn"], spdcid, f["spdcid"], f)

    def _on_control(self, data: bytes, end: int, meta: DatagramMeta, now: float) -> None:
        f, _ = _CTL.decode(data[:end])
        ctl = f["ctl_type"]
        if ctl in (CTL_CLEAR_REQ, CTL_CLOSE_REQ):
            p = self._pdcs.get(f["dpdcid"]) if not f["syn"] else None
            if p is None or p.role != "initiator" or (p.established and f["spdcid"] != p.peer_pdcid):
                self.stats["stale_control"] += 1
                return
            p.on_control(f, meta, now)
            return
        if ctl not in (CTL_ACK_REQ, CTL_CLEAR, CTL_CLOSE, CTL_PROBE, CTL_NOOP):
            self.stats["unsupported"] += 1
            return
        psn = f["psn"]
        if ctl == CTL_ACK_REQ and f["syn"] and (meta.src, meta.dst, f["spdcid"]) not in self._tgt_by_key:
            self._send_nack(meta, N["PKT_NOT_RCVD"], psn, 0, f["spdcid"], f)
            return
        t = self._lookup_target(f, bool(f["isrod"]), meta, data, end, False)
        if t is None:
            return
        t.last_rx = now
        if ctl == CTL_ACK_REQ:
            if t.win.test(psn):
                self._send_ack(t, meta, psn, f["retx"], False)
            else:
                self._send_nack(meta, N["PKT_NOT_RCVD"], psn, t.pdcid, t.peer_pdcid, f)
        elif ctl == CTL_PROBE:
            self._send_ack(t, meta, psn, f["retx"], False, probe=f["probe_opaque"])
        elif ctl == CTL_CLEAR:
            t.clear_psn = f["payload"] & M32
        elif ctl == CTL_CLOSE:
            win = t.win
            d = pdiff(psn, win.cack)
            if d > t.size:
                self._send_nack(meta, N["PSN_OOR_WINDOW"], psn, t.pdcid, t.peer_pdcid, f)
                return
            if d > 0:
                t.set_psn(psn)
                t.close_psn = psn
                if t.rod and t.next_deliver == psn:
                    t.next_deliver = (psn + 1) & M32
                elif t.rod:
                    t.rod_buf[psn] = None
            self._send_ack(t, meta, psn, f["retx"], False)
            if t.close_psn is not None and win.cack == t.close_psn:
                self._close_target(t, now)

    def _answer_tomb(self, pdcid: int, tomb: _Tomb, f: dict, meta: DatagramMeta) -> None:
        """C2: after close, ACK what the PDC had, NACK CLOSING beyond the CLOSE PSN."""
        psn = f["psn"]
        if tomb.close_psn is not None and pdiff(psn, tomb.close_psn) > 0:
            self._send_nack(meta, N["CLOSING"], psn, pdcid, tomb.peer_pdcid, f)
            return
        cack = tomb.close_psn if tomb.close_psn is not None else psn
        af = {"type": ACK_CC if self.config.ack_type != "ack" else ACK, "retx": bool(f.get("retx")),
              "ack_psn_offset": _clamp16(pdiff(psn, cack)), "cack_psn": cack, "spdcid": pdcid,
              "dpdcid": tomb.peer_pdcid, "mpr": self.config.mpr}
        rmeta = self._reply_to(meta)
        codec = _ACK_CC if af["type"] == ACK_CC else _ACK
        self._out.append((seal((codec.encode(af),), rmeta), rmeta))

    # --- PDC lifecycle --------------------------------------------------------------------
    def _alloc_pdcid(self) -> int | None:
        if len(self._pdcs) >= self.config.max_pdcs and not self._reap_idle_targets(self._now):
            return None
        self._purge_tombs(self._now)
        for _ in range(65536):
            c = self._next_pdcid
            self._next_pdcid = c + 1 if c < 0xFFFF else 1
            if c not in self._pdcs and c not in self._tombs:
                return c
        return None

    def _reap_idle_targets(self, now: float, peer: str | None = None) -> bool:
        """T3 under pressure: free target PDCs (of ``peer``, or any) that heard nothing for
        ``target_idle_reap`` s (a SYN flood must not lock new initiators out for good). True if
        any was freed."""
        if now < self._reap_after.get(peer, -INF):
            return False  # nothing can have become idle since the last scan found nobody
        wait = self.config.target_idle_reap
        limit = now - wait
        idle, half_open = [], []
        first = INF  # the earliest any of the others can be reaped
        for t in self._tgts.values():
            if peer is None or t.peer == peer:
                if t.last_rx <= limit:
                    (idle if t.open else half_open).append(t)
                elif t.last_rx + wait < first:
                    first = t.last_rx + wait
        if half_open:  # half-open PDCs first: an established one may only be starved, not gone
            idle = half_open
        if not idle:
            # a flood of SYNs at a full table costs one scan per reaping time, not one per SYN
            if len(self._reap_after) >= 4096:
                self._reap_after.clear()
            self._reap_after[peer] = first
            return False
        for t in idle:
            self._drop_target(t, "idle, reaped at the PDC limit")
        self._stats["pdcs_reaped"] += len(idle)
        return bool(idle)

    def _drop_target(self, t: Target, reason: str) -> None:
        """Free a target PDC in error (its partial messages and their storage with it)."""
        self._forget_target(t)
        self._events.append(ev.PdcClosed(t.pdcid, t.peer, "target", True, reason))

    def _forget_target(self, t: Target) -> None:
        self._pdcs.pop(t.pdcid, None)
        self._tgts.pop(t.pdcid, None)
        self._tgt_by_key.pop(t.key, None)
        n = self._peer_targets[t.peer] - 1
        if n > 0:
            self._peer_targets[t.peer] = n
        else:
            self._peer_targets.pop(t.peer, None)
        self.ses.release(t)

    def _nack_allowed(self, peer: str) -> bool:
        """T3: the NACKs that refuse SYNs (NO_PDC_AVAIL) are limited per peer address to
        ``refusal_nack_rate`` a second (a token bucket of one second's worth), like ICMP rate
        limits: a SYN flood then costs us our answers only up to that rate. A refused initiator
        hears within 1/rate s, or resends on its RTO."""
        rate = self.config.refusal_nack_rate
        if rate <= 0:
            return True
        now = self._now
        tokens, last = self._nack_tokens.get(peer, (rate, now))
        tokens = min(rate, tokens + (now - last) * rate)
        if len(self._nack_tokens) >= 4096 and peer not in self._nack_tokens:
            self._nack_tokens.clear()
        if tokens < 1:
            self._nack_tokens[peer] = (tokens, now)
            self._stats["refusal_nacks_suppressed"] += 1
            return False
        self._nack_tokens[peer] = (tokens - 1, now)
        return True

    def arm_sweep(self, delay: float) -> None:
        """T7 / X2: a partial message exists; make sure an idle sweep runs within ``delay``."""
        at = self._now + delay
        if at < self._sweep_at:
            self._sweep_at = at
            self._timer_dirty = True

    def _sweep_idle(self, now: float) -> None:
        """T7: free target PDCs that hold a partial message and heard nothing for
        ``target_idle_timeout`` (their initiator is gone, or never meant to finish)."""
        timeout = self.config.target_idle_timeout
        nxt = INF
        for t in list(self._tgts.values()):
            if not t.rx_msgs:
                continue
            due = t.last_rx + timeout
            if due <= now:
                self._drop_target(t, "partial message idle")
                self._stats["partial_messages_expired"] += 1
            elif due < nxt:
                nxt = due
        sl = self.ses_layer
        if sl is not None:  # X2: the SES's own partial messages (R3 of uet/ses/endpoint.py)
            sl.expire(now)
            if sl.in_reassembly:
                nxt = min(nxt, now + sl.config.partial_timeout / 2)
        self._sweep_at = nxt
        self._timer_dirty = True

    def _tomb(self, pdcid: int, tomb: _Tomb) -> None:
        self._timer_dirty = True
        self._tombs[pdcid] = tomb
        while len(self._tombs) > self.config.max_pdcs:
            del self._tombs[next(iter(self._tombs))]

    def _purge_tombs(self, now: float) -> None:
        tombs = self._tombs
        while tombs:
            k = next(iter(tombs))
            if tombs[k].expire > now:
                break
            del tombs[k]
            self._timer_dirty = True

    def _close_target(self, t: Target, now: float) -> None:
        self._forget_target(t)
        self._tomb(t.pdcid, _Tomb(t.peer, t.peer_pdcid, t.close_psn, now + self.config.close_msl,
                                  "target"))
        self._events.append(ev.PdcClosed(t.pdcid, t.peer, "target", False, "closed by initiator"))

    def _closed_initiator(self, p: Initiator) -> None:
        self._remove_initiator(p)
        self._events.append(ev.PdcClosed(p.pdcid, p.peer, "initiator", False, "closed"))

    def _remove_initiator(self, p: Initiator) -> None:
        p.closed = True
        self._pdcs.pop(p.pdcid, None)
        if self._inits.get(p.pdcid) is p:
            del self._inits[p.pdcid]
        if self._init_by_key.get(p.key) is p:
            del self._init_by_key[p.key]
        self._tomb(p.pdcid, _Tomb(p.peer, p.peer_pdcid, None, self._now + self.config.close_msl,
                                  "initiator"))

    def _fail_initiator(self, p: Initiator, reason: str) -> None:
        if p.closed:
            return
        self._remove_initiator(p)
        sl = self.ses_layer
        for m in p.msgs.values():
            if not m.done and not m.failed:
                m.failed = True
                if isinstance(m, SesOut):  # X6
                    if m.is_req and sl is not None:
                        sl.transport_failed(m.ses_mid, reason)
                    continue
                self._events.append(ev.MessageFailed(m.handle, p.pdcid, m.message_id, reason))
        p.msgs.clear()
        for mid in list(p.ses_wait):
            p._ses_settle(mid)
            if sl is not None:
                sl.transport_failed(mid, reason)
        for r in p.recs.values():
            r.state = ACKED
        p.recs.clear()
        p.queue.clear()
        self._events.append(ev.PdcClosed(p.pdcid, p.peer, "initiator", True, reason))

    def _message_done(self, p: Initiator, msg: OutMessage, psn: int = 0, now: float = 0.0) -> None:
        msg.done = True
        p.msgs.pop(msg.handle, None)
        if isinstance(msg, SesOut):
            # X5: the request is CACKed; if its operation still waits for a response, remember
            # the PSN so that the response can be asked for again
            sl = self.ses_layer
            if msg.is_req and sl is not None and sl.pending(msg.ses_mid):
                w = p.ses_wait.get(msg.ses_mid)
                if w is None:
                    w = p.ses_wait[msg.ses_mid] = [[], now + 2 * p._rto(), 0]
                w[0].append(psn)
                p.ses_psn[psn] = msg.ses_mid
            return
        if not msg.failed:
            self._events.append(ev.SendComplete(msg.handle, p.pdcid, msg.message_id, msg.length))
