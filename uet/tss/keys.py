"""Secure-domain key files, demo keys from a seed, and the per-process epoch store.

Owns everything TSS reads from or writes to disk. The key file format is the issue's: the
32-byte AES-256 key (uet-facts.md F: Cipher) as 64 hex digits, a trailing newline allowed.

Rules:

1. choice: a key file that group or others can read (``mode & 0o077``), that is missing, or that
   is not exactly 64 hex digits (plus an optional newline) is refused with a :class:`KeyFileError`
   whose message is one line naming the file. The mode is read from the opened descriptor, so the
   file checked is the file read.
2. choice (IV uniqueness across processes, F: Counter rules): each sender process takes a fresh
   16-bit epoch from an :class:`EpochStore`, a small state file beside the key file (default
   ``<keyfile>.epoch``) holding the last epoch handed out. ``take`` locks it with ``fcntl.flock``,
   reads, increments, writes and fsyncs before releasing the lock, so two processes started from
   one key file never get the same epoch, even concurrently or after a crash. The TSC starts at 0
   per epoch, so (source, epoch, TSC) - the IV in direct mode, the KDF context plus TSC in cluster
   and server modes - is never repeated under one key. After epoch 65535 the store refuses with a
   one-line error telling the user to rotate the key: it never wraps silently.
3. choice: the precondition of rule 2 is that every process that sends under one key from one
   source identity (address or SSI) takes its epoch from the same store. Two copies of a key file
   at different paths on one host have two stores: use one path (or pass the store's path). On
   one host the receiving end counts as a sender too (it sends ACKs from the same address).
4. choice: :func:`key_from_seed` gives deterministic keys for the simulator and demos only (SHA-256
   of a fixed label and the seed); it is not a secret.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re

from ..errors import UetError

KEY_LEN = 32  # F: Cipher (AES-256)
EPOCH_MAX = 0xFFFF  # B.15: 16-bit epoch
_HEX = re.compile(rb"[0-9a-fA-F]{64}")
_SEED_LABEL = b"uet tss demo key v1\x00"


class KeyFileError(UetError):
    """A key or epoch file that cannot be used; ``str(exc)`` is one line naming the file."""


def read_key_file(path: str | os.PathLike) -> bytes:
    """The 32-byte key in ``path`` (rule 1)."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise KeyFileError(f"{name}: key file not found") from None
    except OSError as exc:
        raise KeyFileError(f"{name}: cannot open key file: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if mode & 0o077:
            raise KeyFileError(f"{name}: key file is readable by group or others (mode "
                               f"{mode & 0o777:04o}); run: chmod 600 {name}")
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(200)
    except OSError as exc:
        raise KeyFileError(f"{name}: cannot read key file: {exc.strerror}") from None
    finally:
        os.close(fd)
    body = raw[:-1] if raw.endswith(b"\n") else raw
    if not _HEX.fullmatch(body):
        raise KeyFileError(f"{name}: a key file must hold exactly 64 hex digits (a 32-byte key)"
                           " and at most a trailing newline")
    return bytes.fromhex(body.decode("ascii"))


def write_key_file(path: str | os.PathLike, key: bytes) -> None:
    """Write ``key`` as 64 hex digits and a newline, mode 0600 (also when the file existed)."""
    if len(key) != KEY_LEN:
        raise ValueError(f"a TSS key is {KEY_LEN} bytes, got {len(key)}")
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        try:
            os.fchmod(fd, 0o600)  # O_CREAT's mode is ignored for an existing file
            os.write(fd, key.hex().encode("ascii") + b"\n")
        finally:
            os.close(fd)
    except OSError as exc:
        raise KeyFileError(f"{name}: cannot write key file: {exc.strerror}") from None


def key_from_seed(seed: int) -> bytes:
    """A deterministic 32-byte demo key (rule 4)."""
    return hashlib.sha256(_SEED_LABEL + str(int(seed)).encode("ascii")).digest()


def default_epoch_path(key_path: str | os.PathLike) -> str:
    """Where the epoch store of a key file lives by default (rule 2)."""
    return os.fspath(key_path) + ".epoch"


class EpochStore:
    """Hands out each epoch at most once across processes (rule 2)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def take(self) -> int:
        """The next epoch (0 first), persisted before it is returned."""
        name = self.path
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise KeyFileError(f"{name}: cannot open the epoch file: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by close
            raw = b""
            while chunk := os.read(fd, 64):
                raw += chunk
                if len(raw) > 64:
                    break
            text = raw.strip()
            if not text:
                epoch = 0
            elif text.isdigit() and int(text) <= EPOCH_MAX:
                epoch = int(text) + 1
            else:
                raise KeyFileError(f"{name}: the epoch file is corrupt (expected one number 0.."
                                   f"{EPOCH_MAX}); delete it only together with rotating the key")
            if epoch > EPOCH_MAX:
                raise KeyFileError(f"{name}: all {EPOCH_MAX + 1} epochs of this key are used; "
                                   "rotate the key (write a new key file) and delete this file")
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, b"%d\n" % epoch)
            os.fsync(fd)
            return epoch
        except OSError as exc:
            raise KeyFileError(f"{name}: cannot update the epoch file: {exc.strerror}") from None
        finally:
            os.close(fd)


__all__ = ["EPOCH_MAX", "EpochStore", "KeyFileError", "default_epoch_path", "key_from_seed",
           "read_key_file", "write_key_file"]
