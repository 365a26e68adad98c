"""The PDC state tables (uet.pds.states): every transition the code makes is a row of its side's
table, a pair outside the table raises the typed IllegalTransition (never taken silently), and
random datagrams against a PDC never ask for an illegal one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet import wire
from uet.pds import DatagramMeta, seal
from uet.pds.pdc import PdcSide
from uet.pds.states import (INITIATOR_TABLE, TARGET_TABLE, IllegalTransition, InitiatorEvent,
                            InitiatorState, TargetEvent, TargetState)
from uet.wire.enums import CTL_ACK_REQ, CTL_CLEAR, CTL_CLOSE, CTL_CLOSE_REQ, CTL_PROBE, NACK_BY_NAME

from .helpers import (A, B, EV, PORT, S, ack_to, control, established_target, events, initiator,
                      nack_to,
                      request, send, target)

PDS = Path(__file__).resolve().parents[2] / "uet" / "pds"


@pytest.fixture
def taken(monkeypatch):
    """Every (role, state, event) a PDC side transitions on while the test runs."""
    seen: set[tuple[str, object, object]] = set()
    real = PdcSide.transition

    def spy(self, event):
        seen.add((self.role, self.state, event))
        real(self, event)

    monkeypatch.setattr(PdcSide, "transition", spy)
    return seen


def _shuttle(a, b, now: float, rounds: int = 200) -> float:
    """Carry datagrams both ways (and fire timers) until nothing moves."""
    for _ in range(rounds):
        moved = False
        for src, dst in ((a, b), (b, a)):
            for data, meta in src.datagrams_to_send(now):
                dst.receive_datagram(data, meta, now)
                moved = True
        if not moved:
            t = min((x for x in (a.get_timer(), b.get_timer()) if x is not None), default=None)
            if t is None or t > now + 10:
                return now
            now = max(now, t)
            a.handle_timer(now)
            b.handle_timer(now)
    return now


def _initiator_of(ep):
    (p,) = ep._inits.values()
    return p


# --- the table covers every transition the code makes -----------------------------------------
def test_a_send_and_close_take_only_table_rows(taken):
    a, b = initiator(), target()
    send(a, B, b"m" * 9000)
    now = _shuttle(a, b, 0.0)
    a.close(B)
    _shuttle(a, b, now)
    assert [e for e in events(a) if type(e).__name__ == "PdcClosed"]
    assert taken == {
        ("initiator", InitiatorState.SYN_SENT, InitiatorEvent.FIRST_ACK),
        ("initiator", InitiatorState.ESTABLISHED, InitiatorEvent.CLOSE_SENT),
        ("initiator", InitiatorState.CLOSING, InitiatorEvent.CLOSE_ACKED),
        ("target", TargetState.HALF_OPEN, TargetEvent.NAMED),
        ("target", TargetState.OPEN, TargetEvent.CLOSE_RCVD),
    }
    assert a.stats["internal_errors"] == b.stats["internal_errors"] == 0


def test_x6_a_close_nack_fails_the_pdc_through_the_table(taken):
    a = initiator()
    send(a, B, b"m" * 100)
    a.datagrams_to_send(0.0)
    p = _initiator_of(a)
    a.receive_datagram(*nack_to(p.pdcid, p.start_psn, NACK_BY_NAME["PDC_HDR_MISMATCH"], spdcid=0),
                       0.0)
    assert p.state is InitiatorState.CLOSED and a.upper.failures
    assert taken == {("initiator", InitiatorState.SYN_SENT, InitiatorEvent.FAILED)}


def test_c2_a_close_on_a_half_open_target_and_a_second_close(taken):
    ep, pdcid = established_target()
    (t,) = ep._tgts.values()
    ep.receive_datagram(*control(CTL_CLOSE, S + 2, syn=True), 0.0)
    ep.receive_datagram(*control(CTL_CLOSE, S + 3, dpdcid=pdcid), 0.0)
    assert ("target", TargetState.HALF_OPEN, TargetEvent.CLOSE_RCVD) in taken
    assert ("target", TargetState.CLOSING, TargetEvent.CLOSE_RCVD) in taken
    assert t.state is TargetState.CLOSING and ep.stats["internal_errors"] == 0


def _close_before_any_request() -> tuple:
    """An initiator PDC whose item is withdrawn before anything left (white box: no public path
    gets there, but the close rule PDS-C1 allows it): the CLOSE goes out with SYN, in SYN_SENT."""
    a = initiator()
    send(a, B, b"m")
    p = _initiator_of(a)
    p.queue.clear()
    p.items.clear()
    a.close(B)
    a.datagrams_to_send(0.0)
    assert p.state is InitiatorState.SYN_SENT and p.close_psn is not None
    return a, p


def test_c1_a_close_sent_before_the_first_ack_keeps_syn_then_its_ack_frees(taken):
    a, p = _close_before_any_request()
    a.receive_datagram(*ack_to(p.pdcid, p.close_psn, ack_psn=p.close_psn), 0.0)
    assert p.state is InitiatorState.CLOSED and a.stats["internal_errors"] == 0
    assert taken == {
        ("initiator", InitiatorState.SYN_SENT, InitiatorEvent.CLOSE_SENT),
        ("initiator", InitiatorState.SYN_SENT, InitiatorEvent.FIRST_ACK),
        ("initiator", InitiatorState.ESTABLISHED, InitiatorEvent.CLOSE_ACKED),
    }


def test_i14_a_nack_for_a_close_sent_in_syn_sent_frees(taken):
    a, p = _close_before_any_request()
    a.receive_datagram(*nack_to(p.pdcid, p.close_psn, NACK_BY_NAME["INV_DPDCID"], spdcid=0), 0.0)
    assert p.state is InitiatorState.CLOSED and not a.upper.failures
    assert ("initiator", InitiatorState.SYN_SENT, InitiatorEvent.CLOSE_ACKED) in taken


def test_x6_a_pdc_closing_fails_on_a_close_nack(taken):
    a, b = initiator(), target()
    send(a, B, b"m" * 100)
    now = _shuttle(a, b, 0.0)
    p = _initiator_of(a)
    a.close(B)
    a.datagrams_to_send(now)  # the CLOSE, never delivered
    assert p.state is InitiatorState.CLOSING
    a.receive_datagram(*nack_to(p.pdcid, p.close_psn, NACK_BY_NAME["PDC_HDR_MISMATCH"],
                                spdcid=p.peer_pdcid), now)
    assert p.state is InitiatorState.CLOSED
    assert ("initiator", InitiatorState.CLOSING, InitiatorEvent.FAILED) in taken


def test_every_row_of_the_tables_is_taken_by_a_scenario(taken):
    """The tables hold no row the code never takes: the scenarios above, run one after the
    other, and an established PDC failing at the RTO limit (PDS-X6) take every row."""
    rows_taken = set()
    for scenario in (test_a_send_and_close_take_only_table_rows,
                     test_x6_a_close_nack_fails_the_pdc_through_the_table,
                     test_c2_a_close_on_a_half_open_target_and_a_second_close,
                     test_c1_a_close_sent_before_the_first_ack_keeps_syn_then_its_ack_frees,
                     test_i14_a_nack_for_a_close_sent_in_syn_sent_frees,
                     test_x6_a_pdc_closing_fails_on_a_close_nack):
        taken.clear()  # the spy records into this set: each scenario sees only its own rows
        scenario(taken)
        rows_taken |= taken
    taken.clear()
    a, b = initiator(max_rto_retx=2), target()
    send(a, B, b"m" * 100)
    now = _shuttle(a, b, 0.0)
    send(a, B, b"n" * 100)
    a.datagrams_to_send(now)  # never delivered: the RTO limit fails the established PDC
    for _ in range(40):
        now = a.get_timer() or now + 1.0
        a.handle_timer(now)
        a.datagrams_to_send(now)
    assert ("initiator", InitiatorState.ESTABLISHED, InitiatorEvent.FAILED) in taken
    rows = ({("initiator", s, e) for s, e in INITIATOR_TABLE}
            | {("target", s, e) for s, e in TARGET_TABLE})
    assert rows - (rows_taken | taken) == set()


def test_every_transition_call_names_an_event_of_its_side():
    """Static: the only writes of a PDC state are PdcSide.transition's, and each call passes an
    event some row of the tables holds."""
    events_in_tables = {e for _, e in INITIATOR_TABLE} | {e for _, e in TARGET_TABLE}
    named = set()
    for path in PDS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and t.attr == "_state":
                        assert path.name == "pdc.py", f"{path.name}:{node.lineno} writes _state"
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "transition"):
                (arg,) = node.args
                if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
                    cls = {"InitiatorEvent": InitiatorEvent, "TargetEvent": TargetEvent}
                    named.add(cls[arg.value.id][arg.attr])
    # _remove_initiator passes its caller's event (CLOSE_ACKED or FAILED)
    assert named | {InitiatorEvent.CLOSE_ACKED, InitiatorEvent.FAILED} == events_in_tables


def test_every_row_cites_a_rule_and_a_fact():
    for (state, event), row in {**INITIATOR_TABLE, **TARGET_TABLE}.items():
        assert row.why and any(ch == "." for ch in row.why), (state, event)
        assert type(row.new) is type(state)


# --- an illegal transition raises the typed local error --------------------------------------
def test_an_illegal_transition_raises_and_changes_nothing():
    ep, pdcid = established_target()
    (t,) = ep._tgts.values()
    with pytest.raises(IllegalTransition, match="no transition from HALF_OPEN") as err:
        t.transition(InitiatorEvent.FIRST_ACK)   # an event of the other side
    assert err.value.role == "target" and t.state is TargetState.HALF_OPEN
    t.transition(TargetEvent.NAMED)
    with pytest.raises(IllegalTransition, match="from OPEN on NAMED"):
        t.transition(TargetEvent.NAMED)
    assert t.state is TargetState.OPEN


def test_a_state_assigned_directly_raises():
    a = initiator()
    send(a, B, b"m")
    p = _initiator_of(a)
    with pytest.raises(IllegalTransition, match="use transition"):
        p.state = InitiatorState.CLOSED
    assert p.state is InitiatorState.SYN_SENT
    p.transition(InitiatorEvent.FAILED)
    with pytest.raises(IllegalTransition, match="from CLOSED on FAILED"):
        p.transition(InitiatorEvent.FAILED)


def test_states_keep_their_former_string_values():
    assert InitiatorState.SYN_SENT == "syn_sent" and TargetState.HALF_OPEN == "half_open"
    assert f"{TargetState.OPEN}" == "open"


# --- random datagrams never make an illegal transition ---------------------------------------
CTLS = [CTL_ACK_REQ, CTL_CLEAR, CTL_CLOSE, CTL_PROBE, CTL_CLOSE_REQ]
to_target = st.lists(st.tuples(
    st.sampled_from(["req", "ctl"]), st.integers(-3, 12), st.booleans(), st.booleans(),
    st.sampled_from(CTLS)), max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(to_target)
def test_random_datagrams_at_a_target_take_only_table_rows(steps):
    ep, pdcid = established_target()
    for i, (kind, off, syn, good_pdcid, ctl) in enumerate(steps):
        dp = 0 if syn else (pdcid if good_pdcid else pdcid ^ 1)
        if kind == "req":
            ep.receive_datagram(*request(S + off, syn=syn, dpdcid=dp, ar=True), i * 1e-3)
        else:
            ep.receive_datagram(*control(ctl, S + off, syn=syn, dpdcid=dp), i * 1e-3)
        ep.datagrams_to_send(i * 1e-3)
    ep.handle_timer(len(steps) * 1e-3 + 100.0)
    assert ep.stats["internal_errors"] == 0, ep.last_error


to_initiator = st.lists(st.tuples(
    st.sampled_from(["ack", "nack", "ctl", "timer", "close"]), st.integers(-2, 10),
    st.sampled_from(sorted(NACK_BY_NAME.values())), st.sampled_from([0, 1, 2]), st.booleans()),
    max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(to_initiator)
def test_random_datagrams_at_an_initiator_take_only_table_rows(steps):
    a = initiator()
    send(a, B, b"m" * 12000)
    a.datagrams_to_send(0.0)
    p = _initiator_of(a)
    s0, now = p.start_psn, 0.0
    for kind, off, code, req, first in steps:
        now += 0.01
        if kind == "ack":
            a.receive_datagram(*ack_to(p.pdcid, s0 + off, ack_psn=s0 + off, req=req), now)
        elif kind == "nack":
            a.receive_datagram(*nack_to(p.pdcid, s0 + off, code, spdcid=0 if first else 99),
                               now)
        elif kind == "ctl":
            body = wire.encode("pds.control", {
                "type": 11, "ctl_type": CTL_CLOSE_REQ, "ar": False, "syn": False,
                "psn": (s0 + off) & 0xFFFFFFFF, "spdcid": 99, "dpdcid": p.pdcid, "payload": 0})
            meta = DatagramMeta(B, A, EV, PORT, 0, 46)
            a.receive_datagram(seal((body,), meta), meta, now)
        elif kind == "timer":
            now += 1.0
            a.handle_timer(now)
        else:
            a.close(B)
        a.datagrams_to_send(now)
    assert a.stats["internal_errors"] == 0, a.last_error
