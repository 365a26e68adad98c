"""`uet decode --port` adds to the UET port (facts A.1), --port-only replaces it, and a capture
where nothing decodes ends with one line naming the ports it saw."""

from __future__ import annotations

import json

from uet.wire import build

from .test_decode_cli import UET, run, write_pcap


def _capture(tmp_path):
    """One UET frame on the UET port 4793, two on 49150 (a live run's port), one DNS frame."""
    frames = [build.udp_frame(UET, dport=4793), build.udp_frame(UET, dport=49150),
              build.udp_frame(UET, dport=49150), build.udp_frame(b"hello", dport=53, trailer=False)]
    return write_pcap(tmp_path / "f.pcap", frames)


def _uet(out):
    return ["uet" in json.loads(x) for x in out.splitlines()]


def test_port_adds_to_4793(tmp_path, capsys):
    path = _capture(tmp_path)
    rc, out, err = run(["decode", "--json", "--port", "49150", path], capsys)
    assert rc == 0 and _uet(out) == [True, True, True, False] and err == ""


def test_port_only_replaces_4793(tmp_path, capsys):
    path = _capture(tmp_path)
    rc, out, _ = run(["decode", "--json", "--port", "49150", "--port-only", path], capsys)
    assert rc == 0 and _uet(out) == [False, True, True, False]


def test_port_only_without_port_is_a_usage_error(tmp_path, capsys):
    rc, out, err = run(["decode", "--port-only", _capture(tmp_path)], capsys)
    assert rc == 2 and out == ""
    assert err.splitlines() == ["uet decode: error: --port-only needs --port PORT, the ports to read UET on",
                                "try 'uet decode --help'"]


def test_nothing_decoded_names_the_ports_seen(tmp_path, capsys):
    frames = [build.udp_frame(UET, dport=49150)] * 3 + [build.udp_frame(b"hello", dport=53, trailer=False)]
    path = write_pcap(tmp_path / "live.pcap", frames)
    for json_flag in ([], ["--json"]):  # the quick decoder and the reference tree alike
        rc, out, err = run(["decode", *json_flag, path], capsys)
        assert rc == 0 and out
        assert err == (f"uet decode: {path}: no frame decoded as UET or RoCEv2; UET is read on UDP "
                       "port 4793, the capture's UDP destination ports are 49150 (3 frames), "
                       "53 (1 frame): try --port 49150\n")
    rc, _, err = run(["decode", "--json", "--port", "49150", path], capsys)
    assert rc == 0 and err == ""


def test_no_hint_when_something_decoded(tmp_path, capsys):
    rc, _, err = run(["decode", _capture(tmp_path)], capsys)
    assert rc == 0 and err == ""
