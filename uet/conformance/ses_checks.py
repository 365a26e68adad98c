"""The SES checks (profile "ses"): operations over a RUD PDC, judged by the SES response that
rides on the ACK of the request's PSN (C.3, D.7).

What a target offers is found out from its answers, never assumed:
  * a response with UNSUPPORTED_OP (D.8 0x06) or an AMO_UNSUPPORTED_* code, or a NACK
    UNEXP_EVENT ("unsupported feature", B.11), makes the check skip;
  * an ACK without an SES response makes the check skip too: responses that travel as separate
    packets from the target (C.3, data beyond MAX_ACK_DATA_SIZE) are not followed by this suite,
    which keeps every READ at 8 bytes so that its data fits on the ACK (MAX_ACK_DATA_SIZE 16, C.9);
  * operations on memory need a region the target exposes: ``--mkey KEY:LEN`` names its memory
    key and length (at least 16 bytes; offsets are relative, REL = 1, D.2). Without it the WRITE,
    READ, atomic and out-of-range checks skip. The bad-memory-key check needs no region: it uses a
    random key with the top bit set, which the target is taken not to have registered.
  * Atomic operand byte order is not in the facts: the atomic check accepts a target that is
    consistent in either order (uet's SES uses little-endian).
"""

from __future__ import annotations

from typing import Any

from ..wire.enums import NACK_BY_NAME
from ..wire.psn import M32
from .checks import Context, Established, Fail, Skip, registry
from .peer import Answer, send_ses

CHECKS, check = registry("ses")  # the checks in the order they run

N = NACK_BY_NAME
SEND, WRITE, READ, FETCHING_ATOMIC = 0x05, 0x01, 0x02, 0x04
AMO_SUM, UINT64 = 0x02, 0x07
UNSUPPORTED = ("UNSUPPORTED_OP", "AMO_UNSUPPORTED_OP", "AMO_UNSUPPORTED_DT", "AMO_UNSUPPORTED_SIZE")


class _Op:
    """One SES request on an established PDC and the answer to its PSN."""

    def __init__(self, ctx: Context, e: Established):
        self.ctx = ctx
        self.e = e
        self.psn = e.start
        self.mid = ctx.message_id()

    def __call__(self, what: str, ses: dict[str, Any], payload: bytes = b"",
                 ext: dict[str, Any] | None = None) -> Answer:
        e, ctx = self.e, self.ctx
        self.psn = (self.psn + 1) & M32
        self.mid = self.mid % 0xFFFF + 1
        ses = dict(ses, message_id=self.mid, rel=True)
        psn = self.psn
        e.peer.send(e.request(psn, ses=ses, ext=ext, payload=payload))
        a = e.peer.expect(lambda a: (a.is_ack and a.pds.get("ack_psn") == psn)
                          or (a.is_nack and a.pds.get("nack_psn") == psn), ctx.timeout)
        if a is None:
            raise Fail(f"sent {what} (PSN {psn}); no ACK or NACK within {ctx.timeout:g} s "
                       f"(saw {e.peer.recent()})")
        if a.is_nack:
            name = a.pds.get("nack_code_name")
            if name == "UNEXP_EVENT":
                raise Skip(f"sent {what}; NACK UNEXP_EVENT: not offered")
            raise Fail(f"sent {what} (PSN {psn}); got {a.brief()}; expected an ACK with an SES "
                       "response")
        if a.ses is None or "return_code_name" not in a.ses:
            raise Skip(f"sent {what}; its ACK carries no SES response (responses sent as separate "
                       "packets are not followed by this suite)")
        rc = str(a.ses["return_code_name"])
        if rc in UNSUPPORTED:
            raise Skip(f"sent {what}; response {rc}: not offered")
        return a


def _rc(a: Answer) -> str:
    return str(a.ses.get("return_code_name")) if a.ses else "none"


def want_rc(a: Answer, sent: str, code: str, why: str = "") -> None:
    """The SES response of ``a`` must carry return code ``code`` (D.8); else the check fails."""
    if _rc(a) != code:
        raise Fail(f"{sent}; response {_rc(a)}; expected {code}{why}")


NO_REGION = ("needs a memory region the target exposes; none named: expected of a target that "
             "has none, such as uet recv; for one that has, name it with --mkey KEY:LEN")


def _region(ctx: Context, need: int = 16) -> tuple[int, int]:
    if ctx.mkey is None:
        # not "give --mkey": a target with no region to expose (uet recv, a sink) would then fail
        raise Skip(NO_REGION)
    key, length = ctx.mkey
    if length < need:
        raise Skip(f"needs a region of at least {need} bytes (--mkey gave {length})")
    return key, length


@check("ses_send", "D.7", "must")
def ses_send(ctx: Context) -> str:
    """A single-packet SEND is answered with RESPONSE OK and the bytes placed."""
    op = _Op(ctx, ctx.establish())
    data = ctx.rng.randbytes(32)
    a = op("a 32-byte SEND", send_ses(opcode=SEND, length=len(data)), data)
    rc = _rc(a)
    if rc == "NO_MATCH":
        raise Skip("sent a 32-byte SEND; response NO_MATCH: the target has no receive posted")
    if rc != "OK":
        raise Fail(f"sent a 32-byte SEND; response {a.ses.get('opcode_name')} {rc}; expected OK "
                   "(D.7, D.8)")
    ml = a.ses.get("modified_length")
    if a.ses.get("opcode_name") == "RESPONSE" and ml not in (None, len(data)):
        raise Fail(f"sent a 32-byte SEND; RESPONSE OK with modified_length {ml}, expected 32")
    return f"sent a 32-byte SEND; response {a.ses.get('opcode_name')} OK"


@check("ses_bad_mkey", "D.8", "must")
def ses_bad_mkey(ctx: Context) -> str:
    """A WRITE to a memory key the target never registered gets BAD_MKEY."""
    op = _Op(ctx, ctx.establish())
    key = ctx.rng.getrandbits(63) | 1 << 63
    if ctx.mkey is not None and key == ctx.mkey[0]:
        key ^= 1
    a = op(f"an 8-byte WRITE to memory key 0x{key:016x}",
           send_ses(opcode=WRITE, length=8, memory_key=key), bytes(8))
    sent = f"sent a WRITE to the unregistered memory key 0x{key:016x}"
    want_rc(a, sent, "BAD_MKEY", " (D.8 0x1C)")
    return f"{sent}; response BAD_MKEY"


@check("ses_write_read", "D.1", "must")
def ses_write_read(ctx: Context) -> str:
    """A WRITE to the exposed region is answered OK and a READ returns the bytes written."""
    key, _ = _region(ctx)
    op = _Op(ctx, ctx.establish())
    data = ctx.rng.randbytes(8)
    a = op("an 8-byte WRITE", send_ses(opcode=WRITE, length=8, memory_key=key), data)
    want_rc(a, f"sent an 8-byte WRITE at offset 0 of key 0x{key:x}", "OK")
    b = op("an 8-byte READ", send_ses(opcode=READ, length=8, memory_key=key))
    want_rc(b, f"sent an 8-byte READ at offset 0 of key 0x{key:x}", "OK")
    ctx.standard_family(b, f"sent an 8-byte READ at offset 0 of key 0x{key:x}")
    if b.pds.get("next_hdr") not in (5, 6):
        raise Skip("the READ's ACK carries a response without data (D.7): the data travels "
                   "separately, which this suite does not follow")
    if b.payload[:8] != data:
        raise Fail(f"wrote {data.hex()} at offset 0 of key 0x{key:x}; the READ returned "
                   f"{b.payload[:8].hex() or 'no data'}")
    return f"wrote 8 bytes to key 0x{key:x} and read them back ({data.hex()})"


@check("ses_atomic", "D.6", "must")
def ses_atomic(ctx: Context) -> str:
    """A fetching atomic SUM returns the old value and adds to it."""
    key, _ = _region(ctx)
    op = _Op(ctx, ctx.establish())
    add = ctx.rng.randrange(1, 1 << 16)
    ext = {"atomic_opcode": AMO_SUM, "atomic_datatype": UINT64}
    what = "a FETCHING_ATOMIC SUM UINT64 at offset 8"
    vals = []
    for _ in range(2):
        # the operand little-endian (uet's SES); a big-endian target adds it byte-swapped
        a = op(what, send_ses(opcode=FETCHING_ATOMIC, length=8, memory_key=key, offset=8),
               add.to_bytes(8, "little"), ext)
        want_rc(a, f"sent {what}", "OK", " (D.6, D.8)")
        ctx.standard_family(a, f"sent {what}")
        if len(a.payload) < 8:
            raise Skip(f"sent {what}; the response carried {len(a.payload)} bytes of data, not the "
                       "old value (data sent separately is not followed)")
        vals.append(a.payload[:8])
    le = (int.from_bytes(vals[1], "little") - int.from_bytes(vals[0], "little")) % (1 << 64)
    be = (int.from_bytes(vals[1], "big") - int.from_bytes(vals[0], "big")) % (1 << 64)
    seen_be = int.from_bytes(add.to_bytes(8, "little"), "big")  # the operand read big-endian
    if le != add and be != seen_be:
        raise Fail(f"sent {what} twice adding {add}; the old values were {vals[0].hex()} then "
                   f"{vals[1].hex()}: the second is not the first plus {add}")
    return f"two fetching SUMs of {add}: the second returned the first's value plus {add}"


@check("ses_out_of_range", "D.8", "must")
def ses_out_of_range(ctx: Context) -> str:
    """A WRITE beyond the end of the exposed region gets AT_OUT_OF_RANGE."""
    key, length = _region(ctx, 1)
    op = _Op(ctx, ctx.establish())
    a = op(f"an 8-byte WRITE at offset {length}",
           send_ses(opcode=WRITE, length=8, memory_key=key, offset=length), bytes(8))
    want_rc(a, f"sent an 8-byte WRITE at offset {length} of the {length}-byte region 0x{key:x}",
            "AT_OUT_OF_RANGE", " (D.8 0x0C)")
    return f"sent an 8-byte WRITE at offset {length} of a {length}-byte region; AT_OUT_OF_RANGE"
