"""Shared test settings: hypothesis profiles (CI runs the default profile, derandomized), and the
fixtures several packages use."""

import json
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=150,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=150)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def decode_json(tmp_path, capsys):
    """``decode_json(frames)``: Ethernet frames written to a pcap and read back by ``uet decode
    --json``, one object per frame."""
    from uet.cli import main
    from uet.sim.frames import PcapWriter

    def run(frames: list[bytes]) -> list[dict]:
        path = tmp_path / "frames.pcap"
        with open(path, "wb") as fh:
            w = PcapWriter(fh)
            for i, f in enumerate(frames):
                w.write(i * 1e-6, f)
            w.flush()
        capsys.readouterr()
        assert main(["decode", "--json", str(path)]) == 0
        return [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    return run
