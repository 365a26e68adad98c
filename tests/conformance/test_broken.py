"""Issue 16: deliberately broken targets, each the reference endpoint with one rule of its core
changed by a monkeypatch, are caught by the check named for the rule and by no other check
(the exact set of failing checks is asserted; the SES checks run too, with a region)."""

from __future__ import annotations

import json

import pytest

from uet.cli import main
from uet.pds import endpoint as pds_endpoint
from uet.native import rxlane
from uet.pds.packets import AckEncoder
from uet.pds.recovery import pdiff
from uet.pds.target import Target

from .targets import MKEY, MKEY_LEN, ThreadTarget, answer_to_source_port


def failing(capsys, target: ThreadTarget) -> tuple[int, set[str], dict]:
    code = main(["conformance", f"{target.addr[0]}:{target.addr[1]}", "--json",
                 "--mkey", f"{MKEY:#x}:{MKEY_LEN}", "--seed", "11",
                 "--timeout", "2"])   # generous: an exact set of failures is asserted
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    obj = json.loads(out)
    return code, {c["name"] for c in obj["checks"] if c["result"] == "fail"}, obj


def skip_sack(monkeypatch) -> None:
    """ACK_CC always carries an empty SACK bitmap."""
    orig = AckEncoder.pack

    def pack(self, cack, off, m, retx, nh, soff, bitmap, *a, **kw):
        return orig(self, cack, off, m, retx, nh, soff, 0, *a, **kw)

    monkeypatch.setattr(AckEncoder, "pack", pack)


def ack_bad_crc(monkeypatch) -> None:
    """The CRC-32C trailer of arriving PDS packets is not checked (R2 dropped)."""
    def trust(data, end, seed):
        return int.from_bytes(data[end:end + 4], "big")

    monkeypatch.setattr(pds_endpoint, "_crc_prefix", trust)
    monkeypatch.setattr(rxlane, "ENABLED", False)  # the C lane's R2 is its own: the reference's broken


def deliver_duplicates(monkeypatch) -> None:
    """A duplicate PSN is handed to the SES again (PDS-W2 broken); its new response is kept."""
    orig = Target.on_request

    def on_request(self, r, data, end, meta, now):
        d = pdiff(r.psn, self.win.cack)
        if r.next_hdr and -self.size < d <= self.size and (d <= 0 or self.win.test(r.psn)):
            self._deliver(r.psn, r.next_hdr, memoryview(data)[r.size:end], now)
        return orig(self, r, data, end, meta, now)

    monkeypatch.setattr(Target, "on_request", on_request)


def ignore_trims(monkeypatch) -> None:
    """Trimmed packets (DSCP 11) are dropped without a NACK (R1 broken)."""
    monkeypatch.setattr(pds_endpoint.Endpoint, "_on_trimmed", lambda self, data, meta: None)


def wrong_dpdcid(monkeypatch) -> None:
    """ACKs name another PDC than the initiator's (the DPDCID := SPDCID rule of C.1 broken)."""
    orig = Target.__init__

    def init(self, ep, pdcid, peer, local, peer_pdcid, rod, start_psn, key):
        orig(self, ep, pdcid, peer, local, peer_pdcid, rod, start_psn, key)
        self.acks = AckEncoder(self.cfg.ack_type, pdcid, peer_pdcid ^ 0x00F0, self.cfg.mpr)

    monkeypatch.setattr(Target, "__init__", init)


BREAKS = {
    "skip_sack": (skip_sack, {"sack_bitmap"}),
    "ack_bad_crc": (ack_bad_crc, {"bad_crc_dropped"}),
    "deliver_duplicates": (deliver_duplicates, {"duplicate_not_redelivered"}),
    "ignore_trims": (ignore_trims, {"trimmed_nack"}),
    "wrong_dpdcid": (wrong_dpdcid, {"syn_establishment"}),
    # A.1, H.1 #19: the answers read at the request's source port still let every other rule
    # be judged; only the port rule fails
    "answer_to_source_port": (answer_to_source_port, {"answers_to_uet_port"}),
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_break_is_caught_by_its_check_alone(name, monkeypatch, capsys):
    patch, expected = BREAKS[name]
    patch(monkeypatch)
    with ThreadTarget() as t:
        code, failed, obj = failing(capsys, t)
    assert failed == expected, {c["name"]: c["detail"] for c in obj["checks"]
                                if c["result"] == "fail"}
    assert code == 1                     # every break above is of a must
    assert obj["ok"] is False and obj["summary"]["must_failed"] == 1
    detail = next(c["detail"] for c in obj["checks"] if c["name"] in expected)
    assert detail and "internal error" not in detail
    if name == "answer_to_source_port":
        c = next(c for c in obj["checks"] if c["name"] == "answers_to_uet_port")
        assert c["level"] == "must" and c["facts"] == "A.1"
        assert "not to the UET port" in detail and "(A.1" in detail


def test_the_unbroken_in_process_target_fails_nothing(capsys):
    """The control for the breaks above: the same target and options, nothing patched."""
    with ThreadTarget() as t:
        code, failed, obj = failing(capsys, t)
    assert failed == set() and code == 0
    assert obj["summary"]["skip"] == 0
