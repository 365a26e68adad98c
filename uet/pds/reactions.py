"""What a sender does about each NACK code (facts B.11, the reaction column of the reference
provider), in one table with a column per mode: RUD/ROD (a PDC) and RUDI (no PDC, one request).

Reactions:

* ``RESEND_NOW``   resend the packet at once (it was trimmed, or the receiver asks for it);
* ``RESEND_LATER`` resend after NACK_RETX_TIME (C.9): the receiver could not take it right now;
* ``BACKOFF``      resend after NACK_RETX_TIME x 2^k: the receiver is short of a resource it frees
  by reaping, which takes far longer than one NACK_RETX_TIME (issue 11: the sender's retries must
  outlast the receiver's reaping);
* ``CLOSE``        the PDC closes in error (RUDI: the request fails; with no PDC, the request is what
  ends);
* ``REBASE``       shift every PSN to the new start PSN in the payload and resend (C.1);
* ``IGNORE``       no state change; the retransmission timer covers it.

Where the columns differ, the entry says why.
"""

from __future__ import annotations

from typing import NamedTuple

from ..wire.enums import NACK_BY_NAME

RESEND_NOW, RESEND_LATER, BACKOFF, CLOSE, REBASE, IGNORE = (
    "resend_now", "resend_later", "backoff", "close", "rebase", "ignore")


class Reaction(NamedTuple):
    pdc: str
    rudi: str
    why: str = ""


_R = Reaction
TABLE: dict[int, Reaction] = {NACK_BY_NAME[name]: r for name, r in {
    "TRIMMED": _R(RESEND_NOW, RESEND_NOW),
    "TRIMMED_LASTHOP": _R(RESEND_NOW, RESEND_NOW),
    "TRIMMED_ACK": _R(RESEND_NOW, RESEND_NOW),
    "NO_PDC_AVAIL": _R(BACKOFF, BACKOFF),
    "NO_CCC_AVAIL": _R(BACKOFF, BACKOFF),
    "NO_BITMAP": _R(BACKOFF, BACKOFF),
    "NO_PKT_BUFFER": _R(BACKOFF, BACKOFF),
    "NO_GTD_DEL_AVAIL": _R(BACKOFF, BACKOFF),
    "NO_SES_MSG_AVAIL": _R(BACKOFF, BACKOFF),
    "NO_RESOURCE": _R(BACKOFF, BACKOFF),
    "PSN_OOR_WINDOW": _R(RESEND_LATER, RESEND_LATER, "RUDI has no PSN window; taken as transient"),
    "ROD_OOO": _R(RESEND_NOW, RESEND_NOW, "RUDI has no order; taken as a request to resend"),
    "INV_DPDCID": _R(CLOSE, CLOSE),
    "PDC_HDR_MISMATCH": _R(CLOSE, CLOSE),
    "CLOSING": _R(CLOSE, CLOSE),
    "CLOSING_IN_ERR": _R(CLOSE, CLOSE),
    "PKT_NOT_RCVD": _R(RESEND_NOW, RESEND_NOW),
    "GTD_RESP_UNAVAIL": _R(CLOSE, CLOSE),
    "ACK_WITH_DATA": _R(RESEND_NOW, RESEND_NOW),
    "INVALID_SYN": _R(CLOSE, CLOSE),
    "PDC_MODE_MISMATCH": _R(CLOSE, CLOSE),
    "NEW_START_PSN": _R(REBASE, CLOSE, "RUDI has no PSNs to re-base: the request fails"),
    "RCVD_SES_PROCG": _R(IGNORE, IGNORE),
    "UNEXP_EVENT": _R(CLOSE, CLOSE),
    "RCVR_INFER_LOSS": _R(RESEND_NOW, RESEND_NOW),
    "EXP_NACK_NORMAL": _R(RESEND_NOW, RESEND_NOW),
    "EXP_NACK_ERR": _R(RESEND_NOW, RESEND_NOW),
    "EXP_NACK_FATAL": _R(CLOSE, CLOSE),
}.items()}

#: codes the table does not name (reserved 0x1B-0xFC, 0x00, 0x0C): no state change, as IGNORE
UNKNOWN = Reaction(IGNORE, IGNORE, "reserved code: the retransmission timer covers it")


def reaction(code: int) -> Reaction:
    return TABLE.get(code, UNKNOWN)


#: C.7: what a target answers to a CLOSE for a PDC it already freed (PDS-I14 of uet/pds/initiator.py)
CLOSED_PDC_CODES = frozenset({NACK_BY_NAME["INV_DPDCID"], NACK_BY_NAME["CLOSING"]})
