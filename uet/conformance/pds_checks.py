"""The PDS checks (profile "pds"): one function per rule, each named after what it tests and
tagged with its docs/facts.md row. Every check opens its own PDC (a fresh SPDCID, a random start
PSN, a fresh UDP source port) so that checks do not interfere.

How a rule is seen from outside (the choices this module makes)
  * Answers are told apart by the PSN they name (ACK_PSN = CACK_PSN + ack_psn_offset, B.7;
    nack_psn, B.10) on the check's own socket, never by the DPDCID they carry: only
    ``syn_establishment`` judges the DPDCID of an ACK, so a target that gets it wrong fails
    that check and no other.
  * "Delivered twice" (``duplicate_not_redelivered``, C.5) is seen through the SES response
    that rides on the ACK (C.3, D.7): the duplicate of an accepted PSN is sent with a different
    SES header (a WRITE to a memory key nobody registered instead of the original SEND). A
    target that delivers duplicates executes it and answers with that request's return code
    (BAD_MKEY, UNSUPPORTED_OP ...); one that does not answers with the stored ACK (the original
    response, C.5) or a default response (opcode 0, RC NULL, D.9). A target that puts no SES
    response on its ACKs makes this unobservable: the check is skipped.
  * "Nothing comes back" (a bad CRC, UUD) is judged over one full ``timeout``.
  * ACK coalescing by bytes (``ack_coalescing``) is a should: ACK_GEN_TRIGGER is a configuration
    parameter (C.9), not a fixed rule.
"""

from __future__ import annotations

from typing import Any, Callable

from ..wire.enums import CTL_ACK_REQ, CTL_CLOSE, DSCP_CONTROL, NACK_BY_NAME
from ..wire.psn import M32
from .checks import Context, Established, Fail, Skip, registry
from .peer import (TOS_CONTROL, TOS_TRIMMED, Answer, fresh_spdcid, request, rudi_request, send_ses,
                   uud_request)

CHECKS, check = registry("pds")  # the checks in the order they run

N = NACK_BY_NAME


def acked(psn: int) -> Callable[[Answer], bool]:
    return lambda a: a.is_ack and a.pds.get("ack_psn") == psn & M32


def answered(psn: int) -> Callable[[Answer], bool]:
    """An ACK whose ACK_PSN is ``psn`` or a NACK of ``psn``."""
    return lambda a: (a.is_ack and a.pds.get("ack_psn") == psn & M32) or (
        a.is_nack and a.pds.get("nack_psn") == psn & M32)


def nack_name(a: Answer) -> str:
    return str(a.pds.get("nack_code_name") or f"0x{a.pds.get('nack_code', 0):02X}")


def _got(a: Answer | None, peer: Any) -> str:
    return a.brief() if a else peer.recent()


def want_ack(a: Answer | None, peer: Any, sent: str, expected: str) -> Answer:
    """``a`` when it is an ACK; else the check fails saying what was sent, got and expected."""
    if a is None or not a.is_ack:
        raise Fail(f"{sent}; got {_got(a, peer)}; expected {expected}")
    return a


def want_nack(a: Answer | None, peer: Any, sent: str, names: tuple[str, ...], why: str) -> str:
    """The NACK code name of ``a`` when it is one of ``names`` (the first is the one the facts
    call for, ``why`` their row); else the check fails."""
    if a is None or not a.is_nack or nack_name(a) not in names:
        raise Fail(f"{sent}; got {_got(a, peer)}; expected NACK {names[0]} ({why})")
    return nack_name(a)


def nacked(ctx: Context, e: Established, body: bytes, psn: int, sent: str, code: str, why: str,
           *, tos: int | None = None) -> str:
    """The check of a rule "this packet is answered with NACK ``code``": ``body`` sent on the
    established PDC ``e``, the answer about ``psn`` read; the detail, or Fail."""
    e.peer.send(body) if tos is None else e.peer.send(body, tos)
    a = e.peer.expect(answered(psn), ctx.timeout)
    return f"{sent}; NACK {want_nack(a, e.peer, sent, (code,), why)}"


def want_cack(a: Answer | None, peer: Any, sent: str, cack: int, why: str) -> Answer:
    """``a`` when it is an ACK whose CACK_PSN is ``cack``; else the check fails saying what was
    sent, what came back and what ``why`` (the facts row) calls for."""
    if a is None or not a.is_ack:
        raise Fail(f"{sent}; got {_got(a, peer)}; expected an ACK with CACK {cack} ({why})")
    if a.pds.get("cack_psn") != cack:
        raise Fail(f"{sent}; the ACK had CACK {a.pds.get('cack_psn')}, expected {cack} ({why})")
    return a


def then_acked(ctx: Context, e: Established, body: bytes, psn: int, sent: str) -> None:
    """``body`` (``psn`` again, after it was refused) must now be ACKed with CACK ``psn``."""
    e.peer.send(body)
    want_cack(e.peer.expect(answered(psn), ctx.timeout), e.peer, sent, psn, "C.5")


def differs(a: Answer, wanted: list[tuple[str, Any, str]]) -> list[str]:
    """``FIELD value (expected why)`` for each (PDS field, wanted value, why) ``a`` does not hold,
    the field named as the facts spell it (DPDCID, CACK_PSN ...)."""
    return [f"{field.upper()} {a.pds.get(field)} (expected {why})"
            for field, value, why in wanted if a.pds.get(field) != value]


def _within(ctx: Context) -> str:
    return f"within {ctx.timeout:g} s"


# --- C.1 establishment ---------------------------------------------------------------------------

@check("syn_establishment", "C.1", "must")
def syn_establishment(ctx: Context) -> str:
    """A SYN request is ACKed naming our PDC: DPDCID = our SPDCID, CACK = start PSN."""
    p = ctx.peer()
    sp = fresh_spdcid()
    start = ctx.start_psn()
    p.send(request(start, spdcid=sp, start=start, payload=b"uet conformance: SYN"))
    # an answer about this SYN: of its PSN, or an ACK naming our PDC
    a = p.expect(lambda a: answered(start)(a) or (a.is_ack and a.pds.get("dpdcid") == sp),
                 ctx.timeout)
    sent = f"sent a SYN RUD request (PSN {start}, SPDCID {sp}, AR)"
    if a is None:
        raise Fail(f"{sent}; got {p.recent()} {_within(ctx)}; expected an ACK")
    if a.is_nack:
        raise Fail(f"{sent}; got {a.brief()}; expected an ACK (C.1)")
    bad = ([] if a.pds.get("spdcid") else ["SPDCID 0 (reserved, C.1)"]) + differs(a, [
        ("dpdcid", sp, f"our SPDCID {sp}"), ("cack_psn", start, f"the start PSN {start}"),
        ("ack_psn", start, str(start))])
    if bad:
        raise Fail(f"{sent}; the {a.type_name} had {', '.join(bad)}")
    return f"{sent}; {a.type_name} named our PDC (DPDCID {sp}), target PDCID {a.pds['spdcid']}, CACK {start}"


@check("answers_to_uet_port", "A.1", "must")
def answers_to_uet_port(ctx: Context) -> str:
    """An answer goes to the UET port, not to the request's source port, from the request's EV."""
    e = ctx.establish()  # its ACK is the answer judged (Skip: see syn_establishment)
    a = e.ack
    port, ev = ctx.target[1], e.peer.sport
    sent = f"sent a SYN RUD request from EV (UDP source port) {ev} to UET port {port}"
    if a.dport != port:
        raise Fail(f"{sent}; its {a.type_name} came to UDP port {a.dport}, the request's source "
                   f"port, not to the UET port {port}: every UET datagram, answers included, "
                   "goes to the UET port, and the reference provider drops any other (A.1, "
                   "H.1 #19)")
    if a.src[1] != ev:
        raise Fail(f"{sent}; its {a.type_name} came from UDP port {a.src[1]}: an answer carries "
                   f"the EV of the request it answers ({ev}) in its source port (A.1)")
    return f"{sent}; the {a.type_name} came to UET port {port} from source port {ev} (the EV)"


@check("dpdcid_learning", "C.1", "must")
def dpdcid_learning(ctx: Context) -> str:
    """After the SYN's ACK, a request naming the target's PDCID (no SYN) is accepted."""
    e, psn = ctx.fresh_pdc()
    e.peer.send(e.request(psn, payload=b"second"))
    sent = f"sent PSN {psn} without SYN naming DPDCID {e.tpdcid} (the ACK's SPDCID)"
    want_cack(e.peer.expect(answered(psn), ctx.timeout), e.peer, sent, psn,
              "C.1: DPDCID := ACK.SPDCID")
    return f"{sent}; ACK with CACK {psn}"


@check("answer_dscp", "A.2", "should")
def answer_dscp(ctx: Context) -> str:
    """ACKs go out with DSCP 46 (EF), as the reference provider sends them."""
    e = ctx.establish()
    dscp = e.ack.tos >> 2
    if dscp != DSCP_CONTROL:
        raise Fail(f"the ACK of a SYN came with DSCP {dscp} (TOS 0x{e.ack.tos:02x}); "
                   "expected 46 (EF, A.2: ACK/NACK/control)")
    return "the ACK of a SYN came with DSCP 46 (EF)"


# --- C.2 / C.4 CACK and SACK ---------------------------------------------------------------------

@check("cack_across_gap", "C.2", "must")
def cack_across_gap(ctx: Context) -> str:
    """CACK stops before a gap and moves over the run once the gap is filled."""
    e = ctx.establish()
    s = e.start
    e.peer.send(e.request(s + 2, payload=b"after the gap"))
    want_cack(e.peer.expect(answered(s + 2), ctx.timeout), e.peer,
              f"sent PSN {s + 2} leaving {s + 1} out", s, "C.2")
    e.peer.send(e.request(s + 1, payload=b"the gap"))
    want_cack(e.peer.expect(answered(s + 1), ctx.timeout), e.peer,
              f"filled the gap at PSN {s + 1}", s + 2, "C.2")
    return f"CACK stayed at {s} with PSN {s + 1} missing and moved to {s + 2} once it arrived"


def _sacked(a: Answer) -> set[int]:
    base = int(a.pds.get("sack_base_psn", 0))
    bm = int(a.pds.get("sack_bitmap", 0))
    return {(base + i) & M32 for i in range(64) if bm >> i & 1}


@check("sack_bitmap", "C.4", "must")
def sack_bitmap(ctx: Context) -> str:
    """The SACK bitmap of ACK_CC names exactly the PSNs received beyond CACK, across gaps."""
    e = ctx.establish()
    if e.ack.type_name == "ACK":
        raise Skip("the target answers with plain ACKs, which carry no SACK (C.3: ACK_CC/ACK_CCX)")
    s = e.start
    mpr = int(e.ack.pds.get("mpr") or 0)
    steps = [s + 2, s + 5]
    if mpr >= 1:          # MPR x 128 PSNs may be in flight (C.2): room to move the base by 64
        steps.append(s + 70)
    got: set[int] = {s}
    for psn in steps:
        e.peer.send(e.request(psn, payload=b"sack"))
        got.add(psn & M32)
        a = e.peer.expect(answered(psn), ctx.timeout)
        if a is None or a.is_nack:
            raise Fail(f"sent PSN {psn} (received so far: {sorted(got)}); got "
                       f"{a.brief() if a else e.peer.recent()}; expected an ACK_CC")
        if a.type_name == "ACK":
            raise Skip("the target answers with plain ACKs, which carry no SACK (C.3)")
        cack = int(a.pds.get("cack_psn", 0))
        beyond = {x for x in _sacked(a) if (x - cack) & M32 < 1 << 31 and x != cack}
        wrong = sorted(beyond - got)
        base = a.pds.get("sack_base_psn")
        if psn not in _sacked(a):
            raise Fail(f"sent PSN {psn} with a gap at {s + 1}; the ACK (CACK {cack}, SACK base "
                       f"{base}, bitmap 0x{int(a.pds.get('sack_bitmap', 0)):016x}) does not "
                       f"name {psn} as received (C.4: bit i = base + i)")
        if wrong:
            raise Fail(f"sent PSN {psn}; the ACK's SACK (base {base}) names PSNs never sent: {wrong}")
    return (f"sent {', '.join(map(str, steps))} after start {s} (gap at {s + 1}): each ACK_CC's "
            "bitmap named the newest PSN and no PSN that was not sent"
            + ("; the base moved past the first 64" if len(steps) == 3 else ""))


# --- C.3 ACK generation --------------------------------------------------------------------------

def _part(e: Established, psn: int, i: int, n: int, size: int, *, ar: bool,
          message_id: int) -> bytes:
    """Packet ``i`` of an ``n``-packet SEND of ``size``-byte parts: only the last completes the
    message, so the others draw no SES response (whose ACK would hide the rule under test)."""
    ses = send_ses(message_id=message_id, length=n * size, som=i == 0, eom=i == n - 1,
                   message_offset=i * size, payload_length=size)
    return e.request(psn, ar=ar, ses=ses, payload=bytes(size))


@check("ack_on_ar", "C.3", "must")
def ack_on_ar(ctx: Context) -> str:
    """A request with AR is ACKed (requests without AR before it may be coalesced)."""
    e = ctx.establish()
    s = e.start
    mid = ctx.message_id()
    for i in range(3):
        e.peer.send(_part(e, s + 1 + i, i, 8, 64, ar=False, message_id=mid))
    e.peer.send(_part(e, s + 4, 3, 8, 64, ar=True, message_id=mid))
    a = e.peer.expect(answered(s + 4), ctx.timeout)
    for i in range(4, 8):   # complete the message: the target's partial state goes
        e.peer.send(_part(e, s + 1 + i, i, 8, 64, ar=i == 7, message_id=mid))
    sent = (f"sent packets 1-3 of an 8-packet SEND (PSNs {s + 1}..{s + 3}) without AR, then "
            f"packet 4 (PSN {s + 4}) with AR")
    want_cack(a, e.peer, sent, s + 4, "C.3: an ACK with ACK_PSN = the AR request's")
    return f"{sent}; ACK with ACK_PSN = CACK = {s + 4}"


@check("ack_coalescing", "C.3", "should")
def ack_coalescing(ctx: Context) -> str:
    """Requests without AR still get an ACK once ACK_GEN_TRIGGER (16 KiB) has arrived."""
    e = ctx.establish()
    s = e.start
    size = ctx.mtu  # --mtu payload bytes per packet (A.1)
    n = 16384 // size + 1
    mid = ctx.message_id()
    for i in range(n):
        e.peer.send(_part(e, s + 1 + i, i, n + 3, size, ar=False, message_id=mid))
    a = e.peer.expect(lambda a: a.is_ack and int(a.pds.get("cack_psn", 0)) != s, ctx.timeout)
    for i in range(n, n + 3):   # complete the message: the target's partial state goes
        e.peer.send(_part(e, s + 1 + i, i, n + 3, size, ar=i == n + 2, message_id=mid))
    sent = (f"sent {n} packets of {size} bytes of a longer SEND without AR (PSNs "
            f"{s + 1}..{s + n}, no end of message)")
    if a is None:
        raise Fail(f"{sent}; no ACK {_within(ctx)} (C.3: ACK_GEN_TRIGGER 16384 bytes, C.9)")
    return f"{sent}; ACK with CACK {a.pds.get('cack_psn')}"


@check("ack_req_answered", "B.12", "must")
def ack_req_answered(ctx: Context) -> str:
    """CONTROL ACK_REQ for a received PSN is answered by an ACK of that PSN."""
    e = ctx.establish()
    e.peer.send(e.control(CTL_ACK_REQ, e.start), TOS_CONTROL)
    a = e.peer.expect(answered(e.start), ctx.timeout)
    sent = f"sent CONTROL ACK_REQ for the received PSN {e.start}"
    a = want_ack(a, e.peer, sent, "an ACK with that ACK_PSN (B.12, C.4)")
    return f"{sent}; ACK with ACK_PSN {e.start}"


@check("ack_req_unreceived", "B.11", "should")
def ack_req_unreceived(ctx: Context) -> str:
    """CONTROL ACK_REQ for a PSN never received gets NACK PKT_NOT_RCVD."""
    e = ctx.establish()
    psn = e.start + 3
    return nacked(ctx, e, e.control(CTL_ACK_REQ, psn), psn,
                  f"sent CONTROL ACK_REQ for PSN {psn}, never sent", "PKT_NOT_RCVD", "B.11 0x12",
                  tos=TOS_CONTROL)


# --- C.5 duplicates and the window ---------------------------------------------------------------

@check("duplicate_acked", "C.5", "must")
def duplicate_acked(ctx: Context) -> str:
    """A duplicate of an accepted PSN is answered with an ACK and does not move CACK."""
    e, psn = ctx.fresh_pdc()
    body = e.request(psn, payload=b"once")
    e.peer.send(body)
    if e.peer.expect(answered(psn), ctx.timeout) is None:
        raise Skip(f"not run: PSN {psn} was not answered (see dpdcid_learning)")
    e.peer.send(e.request(psn, payload=b"once", retx=True))
    sent = f"sent PSN {psn} again (RETX) after its ACK"
    want_cack(e.peer.expect(answered(psn), ctx.timeout), e.peer, sent, psn,
              "C.5: resend the stored ACK")
    return f"{sent}; ACK with ACK_PSN = CACK = {psn}"


def _rsp(a: Answer) -> tuple[str, str] | None:
    if a.ses is None or "return_code_name" not in a.ses:
        return None
    return str(a.ses.get("opcode_name")), str(a.ses.get("return_code_name"))


@check("duplicate_not_redelivered", "C.5", "must")
def duplicate_not_redelivered(ctx: Context) -> str:
    """A duplicate PSN is not delivered again (seen through the SES response on its ACK)."""
    e, psn = ctx.fresh_pdc()
    e.peer.send(e.request(psn, payload=b"original"))
    a = e.peer.expect(acked(psn), ctx.timeout)
    if a is None:
        raise Skip(f"not run: PSN {psn} was not ACKed (see dpdcid_learning)")
    first = _rsp(a)
    if first is None:
        raise Skip("not observable: the target's ACKs carry no SES response (C.3, D.7), so a "
                   "second delivery cannot be seen from outside")
    key = ctx.rng.getrandbits(64) | 1 << 63
    ses = send_ses(opcode=0x01, message_id=2, length=8, memory_key=key)
    e.peer.send(e.request(psn, retx=True, ses=ses, payload=bytes(8)))
    b = e.peer.expect(answered(psn), ctx.timeout)
    sent = (f"sent PSN {psn} (SEND, answered {first[0]} {first[1]}) again as a WRITE to an "
            f"unregistered key")
    if b is None:
        raise Fail(f"{sent}; no answer {_within(ctx)} (C.5)")
    again = _rsp(b)
    if b.is_ack and again not in (None, first, ("DEFAULT_RESPONSE", "NULL")):
        raise Fail(f"{sent}; its ACK carried {again[0]} {again[1]}: the duplicate was delivered "
                   "and executed (C.5: a duplicate gets the stored ACK)")
    return f"{sent}; answered {b.brief()}: not delivered again"


@check("psn_out_of_window", "C.5", "must")
def psn_out_of_window(ctx: Context) -> str:
    """A PSN far beyond the window gets NACK PSN_OOR_WINDOW and is not accepted."""
    e = ctx.establish()
    psn = e.start + 1_000_000
    return nacked(ctx, e, e.request(psn, payload=b"far"), psn,
                  f"sent PSN {psn}, 10^6 beyond CACK {e.start}", "PSN_OOR_WINDOW",
                  "B.11 0x0B, C.5")


@check("unknown_dpdcid", "C.5", "must")
def unknown_dpdcid(ctx: Context) -> str:
    """A request without SYN naming an unknown DPDCID gets NACK INV_DPDCID with SPDCID 0."""
    p = ctx.peer()
    sp = fresh_spdcid()
    psn = ctx.start_psn()
    a = None
    for _ in range(3):   # an id the target happens to use answers PDC_HDR_MISMATCH: try another
        dp = ctx.rng.randrange(0x8000, 0x10000)
        p.send(request(psn, spdcid=sp, dpdcid=dp, payload=b"who"))
        a = p.expect(answered(psn), ctx.timeout)
        if a is None or not (a.is_nack and a.pds.get("nack_code") == N["PDC_HDR_MISMATCH"]):
            break
        psn += 1
    sent = f"sent PSN {psn} without SYN naming DPDCID {dp}, never set up"
    want_nack(a, p, sent, ("INV_DPDCID",), "B.11 0x0E, C.5")
    bad = differs(a, [("spdcid", 0, "0: no valid PDC, RP-PR #125"),
                      ("dpdcid", sp, f"our SPDCID {sp}")])
    if bad:
        raise Fail(f"{sent}; NACK INV_DPDCID had {', '.join(bad)}")
    return f"{sent}; NACK INV_DPDCID, SPDCID 0"


@check("mode_mismatch", "C.5", "must")
def mode_mismatch(ctx: Context) -> str:
    """A ROD request on a RUD PDC gets NACK PDC_MODE_MISMATCH."""
    e, psn = ctx.fresh_pdc()
    return nacked(ctx, e, e.request(psn, rod=True, payload=b"rod"), psn,
                  f"sent a ROD request (PSN {psn}) on a RUD PDC", "PDC_MODE_MISMATCH",
                  "B.11 0x16, C.5")


# --- C.6 trimming, A.3 integrity -----------------------------------------------------------------

@check("trimmed_nack", "C.6", "must")
def trimmed_nack(ctx: Context) -> str:
    """A trimmed request (DSCP 11) gets NACK TRIMMED, and its retransmission is accepted."""
    e, psn = ctx.fresh_pdc()
    body = e.request(psn, payload=ctx.rng.randbytes(2000))
    full = e.peer.seal(body)
    e.peer.send_raw(full[:256], TOS_TRIMMED)   # C.6: the first 256 bytes, DSCP rewritten to 11
    a = e.peer.expect(answered(psn), ctx.timeout)
    sent = f"sent PSN {psn} trimmed to 256 bytes with DSCP 11"
    want_nack(a, e.peer, sent, ("TRIMMED", "TRIMMED_LASTHOP"), "B.11 0x01, C.6")
    then_acked(ctx, e, e.request(psn, retx=True, payload=ctx.rng.randbytes(2000)), psn,
               f"{sent} (NACK {nack_name(a)}), then the whole packet again")
    return f"{sent}; NACK {nack_name(a)}; the retransmission was ACKed (CACK {psn})"


@check("bad_crc_dropped", "A.3", "must")
def bad_crc_dropped(ctx: Context) -> str:
    """A request with a bad CRC-32C trailer is dropped: no answer, its PSN later accepted."""
    e, psn = ctx.fresh_pdc()
    pkt = bytearray(e.peer.seal(e.request(psn, payload=b"bad")))
    pkt[-1] ^= 0x5A
    e.peer.send_raw(bytes(pkt))
    got = [a for a in e.peer.collect(ctx.timeout) if answered(psn)(a)
           or (a.is_ack and a.pds.get("cack_psn") == psn)]
    sent = f"sent PSN {psn} with a wrong CRC-32C trailer"
    if got:
        raise Fail(f"{sent}; got {got[0].brief()}; expected no answer (A.3: dropped)")
    then_acked(ctx, e, e.request(psn, payload=b"good"), psn,
               f"{sent}: no answer; then the good packet")
    return f"{sent}: no answer in {ctx.timeout:g} s; the same PSN with a good trailer was ACKed"


# --- C.7 close -----------------------------------------------------------------------------------

def _close(ctx: Context) -> tuple[Established, int, Answer | None]:
    """A fresh PDC closed by CONTROL CLOSE (AR) on its next PSN: the PDC, that PSN and the
    answer about it (None when nothing came back in time)."""
    e, psn = ctx.fresh_pdc()
    e.peer.send(e.control(CTL_CLOSE, psn), TOS_CONTROL)
    return e, psn, e.peer.expect(answered(psn), ctx.timeout)


@check("close_acked", "C.7", "must")
def close_acked(ctx: Context) -> str:
    """CONTROL CLOSE on a new PSN is ACKed with ACK_PSN = the CLOSE PSN."""
    e, psn, a = _close(ctx)
    sent = f"sent CONTROL CLOSE (AR) on PSN {psn}"
    want_ack(a, e.peer, sent, "an ACK with ACK_PSN = the CLOSE PSN (C.7)")
    return f"{sent}; ACK with ACK_PSN {psn}"


@check("closing_nack", "C.7", "should")
def closing_nack(ctx: Context) -> str:
    """After CLOSE, a request beyond the CLOSE PSN gets NACK CLOSING (or INV_DPDCID)."""
    e, psn, a = _close(ctx)
    if a is None or not a.is_ack:
        raise Skip("not run: the CLOSE was not ACKed (see close_acked)")
    e.peer.send(e.request(psn + 1, payload=b"late"))
    a = e.peer.expect(answered(psn + 1), ctx.timeout)
    sent = f"closed the PDC at PSN {psn}, then sent PSN {psn + 1}"
    want_nack(a, e.peer, sent, ("CLOSING", "INV_DPDCID"), "B.11 0x10, C.7")
    return f"{sent}; NACK {nack_name(a)}"


# --- C.8 RUDI and UUD ----------------------------------------------------------------------------

@check("rudi_response", "C.8", "must")
def rudi_response(ctx: Context) -> str:
    """A RUDI request gets one RUDI response with its pkt_id, and so does its retransmission."""
    p = ctx.peer()
    pkt_id = ctx.rng.getrandbits(32)
    ses = send_ses(opcode=0x01, message_id=3, length=8, memory_key=ctx.rng.getrandbits(63))
    match = (lambda a: a.pds.get("pkt_id") == pkt_id and (
        a.type_name == "RUDI_RESP" or a.is_nack))
    sent = f"sent a RUDI request (pkt_id {pkt_id}, a WRITE)"
    for retx in (False, True):
        p.send(rudi_request(pkt_id, ses, bytes(8), retx=retx))
        a = p.expect(match, ctx.timeout)
        if a is None:
            if retx:
                raise Fail(f"{sent} and its retransmission; no response to the second "
                           f"{_within(ctx)} (C.8: one response per request)")
            if p.seen.answers:
                raise Fail(f"{sent}; got {p.recent()}; expected a RUDI_RESP with that "
                           "pkt_id (B.13, C.8)")
            raise Skip(f"{sent}; no answer {_within(ctx)} (the target does not seem to "
                       "offer RUDI)")
        if a.is_nack:
            if nack_name(a) == "UNEXP_EVENT":
                raise Skip(f"{sent}; NACK UNEXP_EVENT: RUDI not offered")
            if not a.pds.get("nt") or a.pds.get("spdcid") or a.pds.get("dpdcid"):
                raise Fail(f"{sent}; got {a.brief()} without NT = 1 and PDCIDs 0 (B.10, C.8)")
            return f"{sent}; NACK {nack_name(a)} with NT = 1 naming the pkt_id"
        if a.pds.get("next_hdr") not in (4, 5, 6):
            raise Fail(f"{sent}; the RUDI_RESP carries next_hdr {a.pds.get('next_hdr')}, not an "
                       "SES response (B.2, C.8)")
        ctx.standard_family(a, sent)
    extra = [a for a in p.collect(min(ctx.timeout, 0.2)) if a.pds.get("pkt_id") == pkt_id]
    if extra:
        raise Fail(f"{sent} twice; got more than one response per request (C.8)")
    return f"{sent} and its retransmission; one RUDI_RESP with that pkt_id each"


@check("uud_no_answer", "C.8", "must", needs_answer=False)
def uud_no_answer(ctx: Context) -> str:
    """A UUD datagram is never answered (no ACK, NACK or response)."""
    p = ctx.peer()
    p.send(uud_request(send_ses(opcode=0x07, message_id=4, length=16), bytes(16)))
    n = p.anything(ctx.timeout)
    if n:
        raise Fail(f"sent a UUD DATAGRAM_SEND; got {p.recent()}; expected nothing (C.8: "
                   "no ACK, no response)")
    return f"sent a UUD DATAGRAM_SEND; nothing came back in {ctx.timeout:g} s"
