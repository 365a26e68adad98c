"""One Python send path (issue 28 item 1): :meth:`Initiator._send_new` decides every new request
(PDS-I3 to PDS-I5, PDS-I15, the entropy, Recovery.on_sent) and, once the PDC is established, hands each run of
one item's packets to the request builder (uet.native.txbuild: C, or its Python twin). The
builder is a shortcut, not different behaviour: whole transfers under loss, trimming, reordering,
ROD, small windows (PDS-I15), per-packet ACKs (PDS-I5) and PSNs across the 2^32 wrap give the same
datagrams, byte for byte, with the C builder, its Python twin and the per-packet reference
(:meth:`Initiator._request`, what the SYN form and every resend use)."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet.native import txbuild
from uet.pds import initiator as initiator_mod
from uet.pds.initiator import Initiator
from uet.wire.psn import M32
from uet.sim import SimConfig, Simulator


def _per_packet(self: Initiator, p, ar: list[bool], evs: list[int], out: list) -> None:
    """The reference of Initiator._build: each request packed and sealed as _request does."""
    packets = self.rec.packets
    for i, ev_ in enumerate(evs):
        meta = self._meta(ev_)
        out.append((self._request(packets[(p.psn + i) & M32], meta, ar=ar[i], retx=False), meta))


def _frames(cfg: SimConfig) -> tuple[dict, bytes]:
    buf = io.BytesIO()
    r = Simulator(cfg, pcap=buf).run()
    r.pop("wall_time_s")
    return r, buf.getvalue()


def _three_ways(cfg: SimConfig) -> list[tuple[dict, bytes]]:
    """The run with the builder in use (C when built), its Python twin, and per packet."""
    runs = [_frames(cfg)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(initiator_mod, "build_requests", txbuild.build_requests_py)
        runs.append(_frames(cfg))
        mp.setattr(Initiator, "_build", _per_packet)
        runs.append(_frames(cfg))
    return runs


NEAR_WRAP = {"start_psn_lo": M32 - 300, "start_psn_hi": M32 - 299}

# (the first window goes in the SYN form, per packet: each run needs more than one window, or a
# small one, to reach the builder; test_established_runs_go_to_the_builder counts)
SCENARIOS = [
    SimConfig(bytes=4 << 20, paths=8, loss=0.02, seed=3, messages=3),
    SimConfig(bytes=4 << 20, mode="rod", reorder=0.1, dup=0.05, seed=4, pds=NEAR_WRAP),
    SimConfig(bytes=512 * 1024, trim=0.05, corrupt=0.02, ack_loss=0.1, seed=5, messages=2,
              window_bytes=65536),
    SimConfig(bytes=400 * 1024, mtu=1024, messages=37, loss=0.02, seed=6, window_bytes=32768),
    SimConfig(bytes=1 << 20, op="tsend", messages=4, loss=0.02, seed=7, window_bytes=65536),
    SimConfig(bytes=256 * 1024, window_bytes=8192, seed=8, pds={"ack_per_packet": True}),
]


@pytest.mark.parametrize("cfg", SCENARIOS, ids=range(len(SCENARIOS)))
def test_every_frame_is_the_per_packet_references(cfg):
    built, twin, reference = _three_ways(cfg)
    assert built[0]["ok"], built[0]["failures"]
    assert built == twin == reference


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["rud", "rod"]),
       size=st.integers(0, 200_000), messages=st.integers(1, 3),
       mtu=st.sampled_from([256, 1024, 4096]), loss=st.sampled_from([0.0, 0.03]),
       window=st.sampled_from([4096, 20_000, 65_536]), per_packet=st.booleans(),
       start=st.one_of(st.just(None), st.integers(M32 - 500, M32)))
def test_any_transfer_sends_the_same_bytes_all_three_ways(seed, mode, size, messages, mtu, loss,
                                                          window, per_packet, start):
    """Items of any size (one packet or many, the last one short), PSNs anywhere (across the
    wrap: PDS-I3's CLEAR_PSN offset), AR from the item's end (PDS-I5), the window (PDS-I15) or per packet."""
    pds: dict = {"ack_per_packet": per_packet}
    if start is not None:
        pds.update(start_psn_lo=start, start_psn_hi=start + 1)
    cfg = SimConfig(bytes=size, messages=messages, mtu=mtu, mode=mode, loss=loss, seed=seed,
                    window_bytes=window, pds=pds)
    built, twin, reference = _three_ways(cfg)
    assert built == twin == reference


def test_established_runs_go_to_the_builder(monkeypatch):
    """A test that could not fail if the builder never ran would prove nothing: after the first
    window (the SYN form, per packet) every new request of a bulk transfer goes through it."""
    built = []
    real = initiator_mod.build_requests

    def counting(**kw):
        got = real(**kw)
        built.append(len(got))
        return got

    monkeypatch.setattr(initiator_mod, "build_requests", counting)
    r = Simulator(SimConfig(bytes=4 << 20, seed=1)).run()
    assert r["ok"] and r["data_packets"] == 1024 and r["retransmissions"] == 0
    assert 800 < sum(built) < 1024 and max(built) > 1
