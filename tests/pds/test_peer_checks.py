"""Issue 11 items 1, 4 and 10 at the sans-IO core: answers are taken only from the PDC's peer
address (PDS-I13), a window below the ACK trigger asks for ACKs (PDS-I15), and a CLOSE the target answers
with INV_DPDCID after every message completed is a closed PDC, not a failure (PDS-I14)."""

from __future__ import annotations

from uet import wire
from uet.pds import DatagramMeta, PdcClosed, PdcEstablished, seal
from uet.sim.simulator import SimConfig, Simulator
from uet.wire.enums import NACK_CODE

from .helpers import B, EV, PORT, ack_to, events, initiator, nack_to, out, send

NC = {name: code for code, name in NACK_CODE.table.items()}
FORGER = "10.0.0.66"


def _from(data_meta: tuple[bytes, DatagramMeta], src: str) -> tuple[bytes, DatagramMeta]:
    """The same answer sent from ``src`` instead of the target, its trailer sealed for ``src``
    (a forger computes a valid CRC: it covers addresses, so a copied one would not verify)."""
    data, meta = data_meta
    m = DatagramMeta(src, meta.dst, meta.sport, meta.dport, meta.ecn, meta.dscp)
    return seal((data[:-4],), m), m


def _started(nbytes: int = 10000):
    """An initiator (its upper layer records: ``ep.upper``) with one message of ``nbytes`` sent;
    returns (endpoint, its PDCID, first PSN, last PSN, the message's token)."""
    ep = initiator()
    h = send(ep, B, bytes(nbytes))
    pkts = out(ep)
    first, last = pkts[0][0]["pds"], pkts[-1][0]["pds"]
    return ep, first["spdcid"], first["psn"], last["psn"], h


def test_i13_forged_ack_from_another_address_completes_nothing():
    ep, pdcid, first, last, h = _started()
    ep.receive_datagram(*_from(ack_to(pdcid, last, ack_psn=last), FORGER), 1e-5)
    assert not [e for e in events(ep) if isinstance(e, PdcEstablished)]
    assert ep.upper.completed == []
    assert ep.stats["foreign_ack"] == 1
    # the real target's ACK still establishes and completes
    ep.receive_datagram(*ack_to(pdcid, last, ack_psn=last), 2e-5)
    assert [type(e) for e in events(ep)] == [PdcEstablished]
    assert ep.upper.completed == [h] and ep.upper.failures == []


def test_i13_forged_nack_inv_dpdcid_from_another_address_does_not_kill_the_pdc():
    ep, pdcid, first, last, h = _started()
    ep.receive_datagram(*ack_to(pdcid, first, ack_psn=first), 1e-5)  # established
    events(ep)
    ep.receive_datagram(*_from(nack_to(pdcid, first + 1, NC["INV_DPDCID"], spdcid=0), FORGER), 2e-5)
    assert not [e for e in events(ep) if isinstance(e, PdcClosed)]
    assert ep.upper.failures == []
    assert ep.stats["foreign_nack"] == 1 and len(ep.pdcs()) == 1
    # the same NACK from the target itself is the spec's C.5 answer: the PDC closes in error
    ep.receive_datagram(*nack_to(pdcid, first + 1, NC["INV_DPDCID"], spdcid=0), 3e-5)
    assert any(isinstance(e, PdcClosed) and e.error for e in events(ep))
    assert [t for t, _ in ep.upper.failures] == [h]


def test_i13_forged_close_req_from_another_address_is_ignored():
    ep, pdcid, first, last, _ = _started(100)
    ep.receive_datagram(*ack_to(pdcid, first, ack_psn=first), 1e-5)
    events(ep)
    f = {"type": 11, "ctl_type": 5, "psn": 0, "spdcid": 99, "dpdcid": pdcid}
    meta = DatagramMeta(FORGER, "10.0.0.1", PORT, EV, 0, 46)
    ep.receive_datagram(seal((wire.encode("pds.control", f),), meta), meta, 2e-5)
    send(ep, B, b"more")
    assert [p[0]["pds"]["type_name"] for p in out(ep, 3e-5)] == ["RUD_REQ"]  # no CLOSE
    assert ep.stats["foreign_control"] == 1


def test_i15_window_below_ack_trigger_sets_ar_when_full():
    ep = initiator(window_bytes=4096)
    send(ep, B, bytes(3 * 4096))
    (p,) = out(ep)  # one packet fills the window; without AR the target would wait for 16 KiB
    assert p[0]["pds"]["ar"] and not p[0]["ses"]["eom"]


def test_i15_window_above_ack_trigger_keeps_coalescing():
    ep = initiator(window_bytes=64 << 10)
    send(ep, B, bytes(32 * 4096))
    ars = [p[0]["pds"]["ar"] for p in out(ep)]
    assert len(ars) == 16 and not any(ars)


def test_i15_small_windows_finish_without_timers():
    """1 MiB with a 4 KiB window: about one round trip per window, no RTO, no tail-loss probe."""
    for window in (4096, 8192):
        r = Simulator(SimConfig(bytes=1 << 20, window_bytes=window, seed=1)).run()
        assert r["ok"] and r["rto"] == 0 and r["tlp"] == 0 and r["retransmissions"] == 0, r


def test_i14_close_answered_inv_dpdcid_after_all_messages_is_a_clean_close():
    """The CLOSE (or its retransmission) meets a target whose MSL ended: NACK INV_DPDCID."""
    ep, pdcid, first, last, h = _started(100)
    ep.receive_datagram(*ack_to(pdcid, first, ack_psn=first), 1e-5)
    assert ep.upper.completed == [h]  # every message completed before the CLOSE
    ep.close()
    (c, _), = out(ep, 2e-5)
    assert c["pds"]["ctl_type_name"] == "CLOSE"
    events(ep)
    ep.receive_datagram(*nack_to(pdcid, c["pds"]["psn"], NC["INV_DPDCID"], spdcid=0), 3e-5)
    closed = [e for e in events(ep) if isinstance(e, PdcClosed)]
    assert len(closed) == 1 and not closed[0].error and ep.pdcs() == []
    assert ep.upper.failures == []


def test_i14_issue_replay_line_ends_ok():
    """Issue 11 item 10's replay line (its CLOSE was once answered INV_DPDCID and failed)."""
    cfg = SimConfig(bytes=4097, messages=3, fail=[(0, 0.0), (1, 20.0), (2, 40.0)], seed=1)
    r = Simulator(cfg).run()
    assert r["ok"], r["failures"]


def test_i14_close_nack_before_completion_still_fails():
    ep, pdcid, first, last, h = _started(100)
    ep.receive_datagram(*nack_to(pdcid, first, NC["INV_DPDCID"], spdcid=0), 1e-5)
    assert any(isinstance(e, PdcClosed) and e.error for e in events(ep))
    assert [t for t, _ in ep.upper.failures] == [h] and ep.upper.completed == []


from hypothesis import given, settings, strategies as st  # noqa: E402

_answers = st.one_of(
    st.builds(lambda cack, off, bm, req, m: ("pds.ack_cc", {
        "type": 8, "cack_psn": cack, "ack_psn_offset": off, "sack_bitmap": bm, "req": req,
        "m": m, "spdcid": 99, "cc_type": 0, "mpr": 8}),
        st.integers(0, 0xFFFFFFFF), st.integers(-32768, 32767), st.integers(0, (1 << 64) - 1),
        st.integers(0, 2), st.booleans()),
    st.builds(lambda code, psn, sp: ("pds.nack", {"type": 10, "nack_code": code, "nack_psn": psn,
                                                   "spdcid": sp}),
              st.integers(0, 255), st.integers(0, 0xFFFFFFFF), st.sampled_from([0, 99])),
    st.builds(lambda ctl, psn: ("pds.control", {"type": 11, "ctl_type": ctl, "psn": psn,
                                                "spdcid": 99}),
              st.integers(0, 9), st.integers(0, 0xFFFFFFFF)))


@settings(max_examples=200, deadline=None)
@given(st.lists(_answers, min_size=1, max_size=8), st.booleans())
def test_i13_no_forged_answer_from_another_address_changes_an_initiator(answers, established):
    """Whatever a forger at another address sends with the PDC's ids (valid CRC, any fields),
    the initiator's state, events and output stay as if nothing had arrived."""
    ep, pdcid, first, last, _ = _started()
    if established:
        ep.receive_datagram(*ack_to(pdcid, first, ack_psn=first), 1e-5)
    events(ep)
    up = ep.upper
    heard = (list(up.completed), list(up.responses), list(up.failures))
    (ini,) = ep.pdcs()

    def state():
        return (ini.state, ini.base, ini.next_psn, ini.established, ini.peer_pdcid,
                ini.peer_range, ini.close_wanted, ini.rec.inflight, ini.sackmask,
                list(ini.ctl_q), sorted((p.psn, p.state) for p in ini.packets.values()))

    before = state()
    for name, f in answers:
        f["dpdcid"] = pdcid
        meta = DatagramMeta(FORGER, "10.0.0.1", PORT, EV, 0, 46)
        ep.receive_datagram(seal((wire.encode(name, f),), meta), meta, 2e-5)
    assert state() == before and events(ep) == []
    assert (up.completed, up.responses, up.failures) == heard  # the layer above heard nothing
    # nothing goes to the real peer; a control packet meant for a target PDC may be answered
    # to the forger (C.5: NACK INV_DPDCID, we hold no target PDC with that id)
    assert all(m.dst == FORGER for _, m in ep.datagrams_to_send(2e-5))
    assert ep.stats["internal_errors"] == 0, (ep.last_error, ep.last_error_datagram)
