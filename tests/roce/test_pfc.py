"""PFC (uet.roce.pfc ROCE-P1 to ROCE-P6): thresholds, pause and resume, the frame, the headroom."""

from __future__ import annotations

import pytest

from uet.roce.pfc import (MAX_QUANTA, PauseGate, PfcIngress, PfcParams, headroom_bytes,
                          parse_pause, pause_frame, pause_seconds)


def test_p2_p3_pauses_above_xoff_and_resumes_at_xon():
    ing = PfcIngress(PfcParams(xoff_bytes=10_000, xon_bytes=6_000))
    assert ing.add(4_000, 0.0) is None
    assert ing.add(6_000, 0.0) is None          # 10,000: not above xoff yet
    assert ing.add(1, 0.0) == MAX_QUANTA        # above: XOFF
    assert ing.add(5_000, 0.0) is None          # already paused: no second frame
    assert ing.remove(8_000, 1e-6) is None      # 7,001 > xon
    assert ing.remove(1_001, 2e-6) == 0         # 6,000 <= xon: XON
    assert ing.remove(1_000, 3e-6) is None
    assert (ing.frames, ing.xon_frames, ing.max_bytes) == (1, 1, 15_001)


def test_p4_refresh_after_half_the_pause_time():
    ing = PfcIngress(PfcParams(xoff_bytes=100, xon_bytes=50, quanta=1000))
    rate = 100e9
    assert ing.add(200, 0.0) == 1000
    half = pause_seconds(1000, rate) / 2
    assert half == pytest.approx(1000 * 512 / 100e9 / 2)
    assert ing.refresh(half * 0.99, rate) is None
    assert ing.refresh(half, rate) == 1000
    assert ing.frames == 2
    ing.remove(200, half)
    assert ing.refresh(10.0, rate) is None


def test_p5_gate_pauses_for_the_quanta_and_xon_resumes():
    g = PauseGate()
    rate = 100e9
    g.receive(MAX_QUANTA, 1e-6, rate)
    until = 1e-6 + MAX_QUANTA * 512 / rate
    assert g.paused(2e-6) and g.until == pytest.approx(until)
    g.receive(0, 11e-6, rate)                       # XON
    assert not g.paused(11e-6)
    assert g.paused_s == pytest.approx(10e-6)
    g.receive(100, 20e-6, rate)                     # expires by itself
    assert not g.paused(1.0)
    assert g.paused_s == pytest.approx(10e-6 + 100 * 512 / rate)
    assert g.pauses == 2


def test_pause_frame_layout():
    f = pause_frame(3, 0x1234)
    assert len(f) == 60
    assert f[:6] == bytes.fromhex("0180c2000001")
    assert f[12:14] == b"\x88\x08" and f[14:16] == b"\x01\x01"
    assert f[16:18] == b"\x00\x08"                  # class-enable vector: priority 3
    assert f[18 + 2 * 3:20 + 2 * 3] == b"\x12\x34"
    assert parse_pause(f) == (8, 0x1234)
    assert parse_pause(b"\x00" * 60) is None
    with pytest.raises(ValueError):
        pause_frame(8, 1)


def test_p6_headroom_by_hand():
    # 2 x 1 us x 12.5 GB/s = 25,000; 2 x 4196; 64; 3840 bits = 480
    assert headroom_bytes(100e9, 1e-6, 4196) == 25_000 + 8_392 + 64 + 480


def test_thresholds_are_checked():
    with pytest.raises(ValueError):
        PfcParams(xoff_bytes=10, xon_bytes=10)
