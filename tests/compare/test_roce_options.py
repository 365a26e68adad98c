"""The RoCE designs' options of ``uet compare`` (uet.compare.rocefabric COMPARE-F6): SEND as well as WRITE
(uet.roce.qp ROCE-Q1), and the class of ACKs and NAKs - in the QP's lossless class PFC can pause them,
in the CNPs' high class it never does."""

from __future__ import annotations

import json

import pytest

from uet.capture.frame import decode_frame
from uet.capture.pcap import read_frames
from uet.compare import scenarios
from uet.compare.command import main
from uet.compare.rocefabric import RoceFabric
from uet.compare.run import Options, compare
from uet.roce.qp import CNP_DSCP, DATA_DSCP, Framer, QpReceiver

SMALL = 256 << 10


def roce(name, **opts):
    sc = scenarios.make(name, flow_bytes=SMALL)
    rows, _ = compare(sc, Options(designs=("roce",), **opts))
    return sc, rows["roce"]


def test_an_ack_in_the_qp_class_goes_to_the_data_queue_and_waits_out_a_pause():
    for ack_class, queue in (("same", "data"), ("high", "prio")):
        fab = RoceFabric(topology="leafspine:2,2,1", flows=[], buffer_bytes=1 << 20,
                         ack_class=ack_class)
        host = fab.hosts[1]
        rx = QpReceiver(qpn=2, peer_qpn=1, src=host.addr, dst=fab.hosts[0].addr, sport=50000,
                        psn0=0, nbytes=100, mtu=4096, framer=Framer(host.addr),
                        ack_dscp=fab.ack_dscp)
        ack = rx._ack(0x1F, 0)
        assert ack[15] >> 2 == (DATA_DSCP if ack_class == "same" else CNP_DSCP)
        assert decode_frame(1, ack, 1).obj["roce"]["aeth"]["syndrome"] == 0x1F
        host.nic.gate.receive(0xFFFF, 0.0, host.nic.rate_bps)   # the ToR paused this NIC (ROCE-P5)
        fab._send_frame(host, ack, -1, 0.0)
        assert len(getattr(host.nic, queue)) == 1
        started = host.nic.start(1e-6)
        if ack_class == "same":
            assert started is None and fab.acks_paused == 1   # paused with the data
        else:
            assert started is not None and started[0].frame == ack and fab.acks_paused == 0


@pytest.mark.parametrize("name", ["elephants", "degraded-link"])
def test_under_same_acks_are_paused_and_under_high_never(name):
    sc, same = roce(name, ack_class="same")
    _, high = roce(name, ack_class="high")
    for r in (same, high):
        assert r["status"] == "ok" and r["completed"] == len(sc.flows) and r["drops"] == 0
        assert r["pause_frames"] > 0
    assert same["acks_paused"] > 0 and high["acks_paused"] == 0


def test_send_runs_every_scenario_small_and_completes():
    for name in ("elephants", "incast", "pfc-victim"):
        sc, r = roce(name, roce_op="send")
        assert r["status"] == "ok" and r["completed"] == len(sc.flows)
        assert r["bad_opcode"] == 0 and r["bad_icrc"] == 0


def test_roce_op_send_on_the_command_line_and_in_the_capture(capsys, tmp_path):
    base = tmp_path / "s.pcap"
    code = main(["incast", "--json", "--designs", "roce,adaptive", "--bytes", "64k",
                 "--roce-op", "send", "--roce-ack-class", "high", "--pcap", str(base),
                 "--time-limit", "1"])
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert code == 0 and obj["roce_op"] == "send" and obj["roce_ack_class"] == "high"
    assert "--roce-op send --roce-ack-class high" in obj["replay"]
    for d in ("roce", "adaptive"):
        objs = [decode_frame(lt, raw, n).obj
                for n, (lt, raw, _) in enumerate(read_frames(str(tmp_path / f"s.{d}.pcap")), 1)]
        ops = {o["roce"]["bth"]["opcode"] for o in objs if "roce" in o}
        assert {0x00, 0x01, 0x02, 0x11} <= ops and not ops & {0x06, 0x07, 0x08, 0x0A}, d
        assert all(o["roce"]["icrc"]["ok"] for o in objs if "roce" in o)
        assert all(not o["problems"] for o in objs)


@pytest.mark.parametrize("argv", [["--roce-op", "read"], ["--roce-ack-class", "low"]])
def test_bad_choices_are_exit_2(argv, capsys):
    assert main(["incast"] + argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("uet compare: ")
