"""Key files and the epoch store (uet/tss/keys.py rules 1-4)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from uet.tss.keys import (EpochStore, KeyFileError, default_epoch_path, key_from_seed,
                          read_key_file, write_key_file)

KEY = bytes(range(32))


def _write(path, text: bytes, mode: int) -> str:
    path.write_bytes(text)
    os.chmod(path, mode)
    return str(path)


def test_0600_accepted_with_and_without_newline(tmp_path):
    assert read_key_file(_write(tmp_path / "a.key", KEY.hex().encode() + b"\n", 0o600)) == KEY
    assert read_key_file(_write(tmp_path / "b.key", KEY.hex().upper().encode(), 0o400)) == KEY


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_readable_by_others_refused_in_one_line_naming_the_file(tmp_path, mode):
    p = _write(tmp_path / "k.key", KEY.hex().encode() + b"\n", mode)
    with pytest.raises(KeyFileError) as e:
        read_key_file(p)
    msg = str(e.value)
    assert p in msg and "\n" not in msg and "chmod 600" in msg


@pytest.mark.parametrize("text", [b"", b"zz" * 32, KEY.hex().encode()[:-2],
                                  KEY.hex().encode() + b"00", KEY.hex().encode() + b"\n\n",
                                  b" " + KEY.hex().encode(), KEY.hex().encode() + b"\r\n"])
def test_malformed_refused(tmp_path, text):
    p = _write(tmp_path / "k.key", text, 0o600)
    with pytest.raises(KeyFileError) as e:
        read_key_file(p)
    assert p in str(e.value) and "\n" not in str(e.value)


def test_missing_refused(tmp_path):
    with pytest.raises(KeyFileError, match="not found"):
        read_key_file(tmp_path / "nope.key")


def test_write_key_file_is_0600_and_round_trips(tmp_path):
    p = tmp_path / "w.key"
    p.write_text("old")
    os.chmod(p, 0o644)
    write_key_file(p, KEY)
    assert os.stat(p).st_mode & 0o777 == 0o600
    assert p.read_bytes() == KEY.hex().encode() + b"\n"
    assert read_key_file(p) == KEY
    with pytest.raises(ValueError):
        write_key_file(p, b"short")


def test_key_from_seed_is_deterministic():
    assert key_from_seed(1) == key_from_seed(1) != key_from_seed(2)
    assert len(key_from_seed(7)) == 32


def test_epoch_store_hands_out_each_epoch_once(tmp_path):
    path = default_epoch_path(tmp_path / "k.key")
    assert path.endswith("k.key.epoch")
    a, b = EpochStore(path).take(), EpochStore(path).take()
    assert (a, b) == (0, 1)
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_epoch_store_across_concurrent_processes(tmp_path):
    path = str(tmp_path / "k.key.epoch")
    code = ("import sys; from uet.tss.keys import EpochStore; s = EpochStore(sys.argv[1]); "
            "print(' '.join(str(s.take()) for _ in range(10)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE,
                              text=True) for _ in range(4)]
    got = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        got += [int(x) for x in out.split()]
    assert sorted(got) == list(range(40))


def test_epoch_store_refuses_to_wrap(tmp_path):
    path = tmp_path / "k.key.epoch"
    path.write_text("65534\n")
    assert EpochStore(path).take() == 65535
    with pytest.raises(KeyFileError) as e:
        EpochStore(path).take()
    assert "rotate the key" in str(e.value) and "\n" not in str(e.value)
    assert str(path) in str(e.value)


def test_epoch_store_corrupt_and_unwritable(tmp_path):
    path = tmp_path / "k.key.epoch"
    path.write_text("banana\n")
    with pytest.raises(KeyFileError, match="corrupt"):
        EpochStore(path).take()
    with pytest.raises(KeyFileError):
        EpochStore(tmp_path / "no-such-dir" / "x.epoch").take()
