"""Issue 25 item 6: the rule that an ACK and a NACK of one PSN from one PDC contradict each other
(facts C.5), on answers made from the header declarations, without sockets; and the runner
failing a check that saw a contradiction whatever it concluded."""

from __future__ import annotations

from uet.conformance.checks import Check, Context, Fail, Skip, run_one
from uet.conformance.ledger import Ledger, verdict
from uet.conformance.peer import Answer, control, request
from uet.wire.build import uet_bytes
from uet.wire.packet import decode_uet

S, T = 0x1234, 0x0777   # our PDCID, the target's


def answer(pds: dict) -> Answer:
    d = decode_uet(uet_bytes({"spdcid": T, "dpdcid": S, **pds}), None, trailer="none")
    return Answer(d.layer["pds"], None, b"", 46 << 2, ("127.0.0.1", 4793), b"")


def ack(psn: int, cack: int | None = None, **kw) -> Answer:
    cack = psn if cack is None else cack
    return answer({"type": 8, "cack_psn": cack, "ack_psn_offset": psn - cack, **kw})


def nack(psn: int, code: int = 0x0A, **kw) -> Answer:
    return answer({"type": 10, "nack_code": code, "nack_psn": psn, **kw})


def ledger(*events) -> Ledger:
    """Sends (an int: a request of that PSN) and answers, in order."""
    led = Ledger()
    for e in events:
        if isinstance(e, int):
            led.on_send(request(e, spdcid=S, dpdcid=T))
        else:
            led.on_answer(e)
    return led


def test_a_nack_after_an_ack_of_the_psn_is_a_contradiction():
    led = ledger(100, ack(100), nack(100))
    text = verdict([led])
    assert text == ("contradictory answers about PSN 100 from PDC 1911 -> 4660: ACK_CC ack_psn=100 "
                    "cack=100 dpdcid=4660, then NACK NO_RESOURCE psn=100; a PSN already received "
                    "is answered with its stored ACK, never a NACK (C.5)")


def test_cack_covers_the_psns_sent_below_it():
    # PSN 101 was sent and CACK 102 says it was received: its NACK contradicts
    assert list(ledger(101, 102, ack(102), nack(101)).clashes) == [((T, S), 101)]
    # PSN 90 was never sent by this peer: the target's view of it is not judged by CACK
    assert ledger(101, 102, ack(102), nack(90)).clashes == {}


def test_a_nack_then_an_ack_needs_a_retransmission_between():
    # C.6: NACK TRIMMED, the retransmission, its ACK: no contradiction
    assert ledger(100, nack(100, 0x01), 100, ack(100, retx=True)).clashes == {}
    # one transmission, NACKed and then ACKed
    text = verdict([ledger(100, nack(100), ack(100))])
    assert text is not None and "then ACK_CC ack_psn=100 cack=100 dpdcid=4660 with no " \
        "retransmission between" in text
    # an ACK_REQ asks about its PSN again (C.2): its answer may differ from the first
    led = Ledger()
    led.on_send(request(100, spdcid=S, dpdcid=T))
    led.on_answer(nack(100, 0x12))
    led.on_send(control(2, 100, spdcid=S, dpdcid=T))
    led.on_answer(ack(100))
    assert led.clashes == {}


def test_one_contradiction_per_psn_other_pdcs_and_rudi_apart():
    led = ledger(100, 101, ack(100), nack(100), ack(101), nack(100), nack(101))
    assert list(led.clashes) == [((T, S), 100), ((T, S), 101)]
    assert verdict([led]).endswith("(C.5) (1 more PSN(s) were ACKed and NACKed)")
    # a NACK from no PDC (SPDCID 0, C.5 INV_DPDCID) or a RUDI NACK (NT, a packet id) is not one
    other = ledger(100, ack(100), nack(100, 0x0E, spdcid=0), nack(100, nt=True, spdcid=0, dpdcid=0))
    assert other.clashes == {}


def test_the_runner_fails_a_check_that_saw_a_contradiction():
    """A check that passes, skips or fails on its own: with a contradiction on its peer, it fails
    with the contradiction first and what it concluded after."""
    def make(outcome):
        def run(ctx: Context) -> str:
            p = ctx.peer()
            p.ledger.on_send(request(100, spdcid=S, dpdcid=T))
            p.ledger.on_answer(ack(100))
            p.ledger.on_answer(nack(100))
            if outcome == "pass":
                return "it looked fine"
            raise (Fail if outcome == "fail" else Skip)(f"it said {outcome}")
        return run

    ctx = Context(("127.0.0.1", 9), timeout=0.01)
    for outcome, said in (("pass", "otherwise passed: it looked fine"),
                          ("fail", "also failed: it said fail"),
                          ("skip", "otherwise skipped: it said skip")):
        r, _ = run_one(Check("c", "C.1", "must", "pds", make(outcome)), ctx)
        assert r.result == "fail"
        assert r.detail.startswith("contradictory answers about PSN 100 ")
        assert r.detail.endswith(f"(C.5) ({said})")
