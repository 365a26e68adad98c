"""The batch entry points (``Host.receive_datagrams``, ``Endpoint.receive_datagrams``: what the
live engine hands a whole ``recvmmsg`` batch to) are the per-datagram ``receive_datagram`` in a
loop, nothing else: the same datagram sequences given one at a time and in batches give the same
datagrams, events and state - with the C receive lane and the send twin on and off (the reference
alone), with RUDI and UUD datagrams mixed
into the PDS's (H1 sends them elsewhere), damaged ones among them, and while the SES sweep (H4) is
armed and while it is not."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet.native import rxlane

from .test_lane_vs_reference import _drive as _drive_pair, _twins


def _drive(seed: int, mode: str, sizes: list[int], mtu: int, steps: int, batch: int,
           rudi: int) -> list:
    """test_lane_vs_reference's driver, each host taking what reaches it in runs of at most ``batch``
    (0: one by one), with ``rudi`` RUDI sends beside the PDC's messages."""
    return _drive_pair(seed, mode, sizes, mtu, steps, batch=batch, rudi=rudi)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["rud", "rod"]),
       sizes=st.lists(st.integers(0, 200_000), min_size=1, max_size=4),
       mtu=st.sampled_from([1024, 4096]), batch=st.sampled_from([1, 3, 16, 64]),
       rudi=st.integers(0, 3), twins=st.booleans())
def test_batches_and_single_datagrams_agree(seed, mode, sizes, mtu, batch, rudi, twins):
    with pytest.MonkeyPatch.context() as mp:
        _twins(mp, twins)
        one = _drive(seed, mode, sizes, mtu, 3000, 0, rudi)
        many = _drive(seed, mode, sizes, mtu, 3000, batch, rudi)
    assert many == one and one[-1] == len(sizes)


def test_the_batch_reaches_the_pds_in_runs(monkeypatch):
    """A test that could not fail if the runs never formed would prove little: count them."""
    from uet.pds.endpoint import Endpoint

    runs: list[int] = []
    real = Endpoint.receive_datagrams

    def count(self, items, now):
        runs.append(len(items))
        return real(self, items, now)

    monkeypatch.setattr(Endpoint, "receive_datagrams", count)
    log = _drive(1, "rud", [1 << 20], 4096, 3000, 64, 0)
    assert log[-1] == 1 and log[-2]["rx_datagrams"] >= 256 and sum(runs) >= 200 and max(runs) >= 8


@pytest.mark.parametrize("fast", [True, False])
def test_r4_requests_with_retx_are_counted_and_so_are_the_duplicates_among_them(fast, monkeypatch):
    """PDS-R4 of uet/pds/endpoint.py (what uet demo reports as retransmissions received and
    spurious): every request with RETX counts, through the C lane or not; those whose PSN the
    target had already (PDS-W2) count again as duplicates; a trimmed one with RETX counts once."""
    from uet.pds.datagram import DSCP_TRIMMED

    from .helpers import S, established_target, request

    monkeypatch.setattr(rxlane, "ENABLED", fast)
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, retx=True), 1e-6)  # lost once: needed
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, retx=True), 2e-6)  # spurious copy
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid), 3e-6)             # a first transmission
    ep.receive_datagram(*request(S + 3, dpdcid=pdcid, retx=True, dscp=DSCP_TRIMMED), 4e-6)
    assert (ep.stats["retx_rx"], ep.stats["retx_dup_rx"], ep.stats["dup_rx"]) == (3, 1, 1)
