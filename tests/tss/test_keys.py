"""Key files and the epoch store (uet/tss/keys.py rules 1-4)."""

from __future__ import annotations

import errno
import os
import signal
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


# --- keys rule 2 under fault injection (issue 25 item 2): an update that fails or is killed
# part-way must never let a later take() hand out an epoch again (F: Counter rules, the IV) ------

def _three(path) -> list[int]:
    got = [EpochStore(path).take() for _ in range(3)]
    assert got == [0, 1, 2]
    return got


@pytest.mark.parametrize("fault", ["enospc", "short"])
def test_epoch_store_failed_write_never_hands_out_an_epoch_twice(tmp_path, monkeypatch, fault):
    path = str(tmp_path / "k.key.epoch")
    handed = _three(path)
    real_write, real_pwrite = os.write, os.pwrite

    def failing(real):
        def write(fd, data, *offset):
            if fault == "enospc":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd, bytes(data)[:2], *offset)  # a short write: 2 bytes only
        return write

    with monkeypatch.context() as m:
        m.setattr(os, "write", failing(real_write))
        m.setattr(os, "pwrite", failing(real_pwrite))
        try:
            handed.append(EpochStore(path).take())
        except KeyFileError as exc:
            assert path in str(exc) and "\n" not in str(exc)
    nxt = EpochStore(path).take()
    assert nxt > max(handed), (handed, nxt)


_KILL_AT = """
import os, signal, sys
from uet.tss.keys import EpochStore
setattr(os, sys.argv[2], lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL))
print(EpochStore(sys.argv[1]).take(), flush=True)
"""


@pytest.mark.parametrize("call", ["ftruncate", "write", "pwrite", "fsync"])
def test_epoch_store_killed_at_any_step_never_hands_out_an_epoch_twice(tmp_path, call):
    """A process killed (SIGKILL) when it makes os.<call> inside take(): whatever it left on
    disk, the next take() gives an epoch above every one handed out before (or refuses)."""
    path = str(tmp_path / "k.key.epoch")
    handed = _three(path)
    p = subprocess.run([sys.executable, "-c", _KILL_AT, path, call], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode in (0, -signal.SIGKILL), p.stderr
    handed += [int(x) for x in p.stdout.split()]  # a take() that returned counts as handed out
    nxt = EpochStore(path).take()
    assert nxt > max(handed), (call, handed, nxt)


@pytest.mark.parametrize("text", [b"", b"\n", b"   "])
def test_epoch_store_refuses_an_epoch_file_that_exists_but_is_empty(tmp_path, text):
    path = tmp_path / "k.key.epoch"
    path.write_bytes(text)
    with pytest.raises(KeyFileError) as e:
        EpochStore(path).take()
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg and "empty" in msg
    assert path.read_bytes() == text  # refused: left as it was


def test_epoch_store_writes_a_fixed_width_value_and_reads_the_old_form(tmp_path):
    path = tmp_path / "k.key.epoch"
    assert EpochStore(path).take() == 0 and path.read_bytes() == b"00000\n"
    path.write_bytes(b"7\n")  # written by an earlier version
    assert EpochStore(path).take() == 8 and path.read_bytes() == b"00008\n"
    path.write_bytes(b"65534\n")
    assert EpochStore(path).take() == 65535 and path.read_bytes() == b"65535\n"


@pytest.mark.parametrize("call,made", [("write", False), ("fsync", False), ("link", False),
                                       ("unlink", True)])
def test_epoch_store_killed_while_creating_the_file_leaves_no_empty_one(tmp_path, call, made):
    """The first take() makes the file in one step (keys rule 2): killed before that step there
    is no file, after it the file holds epoch 0; never an empty file that would be refused."""
    path = str(tmp_path / "k.key.epoch")
    p = subprocess.run([sys.executable, "-c", _KILL_AT, path, call], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == -signal.SIGKILL and not p.stdout, p.stderr
    assert os.path.exists(path) is made
    if made:
        assert open(path, "rb").read() == b"00000\n"
    assert EpochStore(path).take() == (1 if made else 0)
