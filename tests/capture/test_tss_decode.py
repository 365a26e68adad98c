"""Captures of protected transfers (issue 18 item 3; facts B.15, F): ``uet sim --tss --pcap``
writes the key beside the capture, ``uet decode --sd-key`` decodes what is inside every TSS frame,
without the key the header shows and the payload is reported encrypted, a wrong key says so, and
the Scapy layer decrypts the same frames."""

from __future__ import annotations

import json
import os
import stat

import pytest

from uet.cli import main
from uet.tss import read_key_file, write_key_file


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("tss")
    path = str(d / "run.pcap")
    assert main(["sim", "--bytes", "64k", "--tss", "--trim", "0.05", "--pcap", path,
                 "--seed", "3", "--json"]) == 0
    return path


def _frames(capsys, *args: str) -> list[dict]:
    capsys.readouterr()
    assert main(["decode", "--json", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_o3_the_key_is_written_beside_the_capture_readable_by_its_owner_only(capture):
    mode = stat.S_IMODE(os.stat(capture + ".key").st_mode)
    assert mode == 0o600
    assert len(read_key_file(capture + ".key")) == 32


def test_f_decode_with_the_key_shows_every_header_inside(capture, capsys):
    frames = [f for f in _frames(capsys, "--sd-key", capture + ".key", capture) if "uet" in f]
    assert frames
    assert all("tss" in f["uet"] for f in frames)
    whole = [f for f in frames if f["uet"]["tss"]["decrypted"]]
    assert whole and all("pds" in f["uet"] for f in whole)
    names = {f["uet"]["pds"]["type_name"] for f in whole}
    assert {"RUD_REQ", "ACK_CC"} <= names
    assert any("ses" in f["uet"] for f in whole)


def test_f_decode_without_the_key_shows_the_header_only(capture, capsys):
    frames = [f for f in _frames(capsys, capture) if "uet" in f]
    assert frames and all("pds" not in f["uet"] for f in frames)
    assert all("decrypted" not in f["uet"]["tss"] for f in frames)  # as before TSS was opened
    assert all(f["uet"]["tss"]["sdi"] == 1 for f in frames)
    capsys.readouterr()
    assert main(["decode", capture]) == 0
    assert "(encrypted: uet decode --sd-key FILE decrypts it)" in capsys.readouterr().out


def test_f_decode_with_a_wrong_key_says_it_does_not_open(capture, capsys, tmp_path):
    wrong = str(tmp_path / "wrong.key")
    write_key_file(wrong, bytes(32))
    frames = [f for f in _frames(capsys, "--sd-key", wrong, capture) if "uet" in f]
    # a trimmed frame cannot be authenticated by any key (K2): what it "decrypts" to is marked so
    frames = [f for f in frames if f["ip"]["dscp"] != 11]
    assert frames and all("pds" not in f["uet"] for f in frames)
    assert all(any("no key given opens" in p for p in f["problems"]) for f in frames)


def test_decode_refuses_a_key_file_others_may_read(capture, capsys, tmp_path):
    loose = str(tmp_path / "loose.key")
    write_key_file(loose, bytes(32))
    os.chmod(loose, 0o644)
    capsys.readouterr()
    assert main(["decode", "--sd-key", loose, capture]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and loose in err[0]


def test_f_scapy_layer_decrypts_with_the_key(capture):
    from scapy.utils import rdpcap

    from uet.scapy import UET_TSS

    key = read_key_file(capture + ".key")
    pkts = [p for p in rdpcap(capture) if UET_TSS in p and len(p[UET_TSS]) > 200]
    assert pkts
    inner = pkts[0][UET_TSS].decrypt(key)
    assert inner is not None and inner.type in (2, 3)  # a RUD/ROD request (B.5)
    assert pkts[0][UET_TSS].decrypt(bytes(32)) is None


def test_k2_a_trimmed_frame_decodes_with_the_key_marked_unauthenticated(capture, capsys):
    frames = [f for f in _frames(capsys, "--sd-key", capture + ".key", capture) if "uet" in f]
    trimmed = [f for f in frames if f["ip"]["dscp"] == 11]
    assert trimmed, "the run was asked to trim 5% of its data packets"
    for f in trimmed:
        assert f["uet"]["tss"]["decrypted"] is True
        assert f["uet"]["tss"]["authenticated"] is False
        assert f["uet"]["pds"]["type_name"] == "RUD_REQ"
        assert any("without being authenticated" in p for p in f["problems"])
    assert all(f["uet"]["tss"]["authenticated"] is True for f in frames if f["ip"]["dscp"] != 11)


@pytest.mark.parametrize("width", [16, 32])
def test_h1_18_the_kdf_length_width_is_chosen_on_both_ends(tmp_path, capsys, width):
    """``--tss-kdf-l`` (F, H.1 #18): a cluster-mode run made with one width decodes with the
    same width only (16, the 1.0 reference provider's, is the default)."""
    path = str(tmp_path / "cluster.pcap")
    extra = [] if width == 16 else ["--tss-kdf-l", "32"]
    assert main(["sim", "--bytes", "8k", "--tss", "--tss-mode", "cluster", "--pcap", path,
                 "--seed", "5", "--json", *extra]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] is True
    key = ["--sd-key", path + ".key", "--tss-mode", "cluster"]
    for decode_width, opens in ((width, True), (48 - width, False)):
        frames = [f for f in _frames(capsys, *key, "--tss-kdf-l", str(decode_width), path)
                  if "uet" in f]
        assert frames and all(f["uet"]["tss"]["decrypted"] is opens for f in frames), decode_width
    if width == 16:  # the default needs no option
        assert all(f["uet"]["tss"]["decrypted"] for f in _frames(capsys, *key, path) if "uet" in f)


@pytest.mark.parametrize("cmd", [["sim"], ["decode", "x.pcap"], ["analyze", "x.pcap"]])
def test_h1_18_a_kdf_length_other_than_16_or_32_is_one_line_and_exit_2(cmd, capsys):
    assert main([*cmd, "--tss-kdf-l", "24"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--tss-kdf-l" in err[0] and "24" in err[0]
