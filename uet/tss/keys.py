"""Secure-domain key files, demo keys from a seed, and the per-process epoch store.

Owns everything TSS reads from or writes to disk. The key file format is the issue's: the
32-byte AES-256 key (docs/facts.md F: Cipher) as 64 hex digits, a trailing newline allowed.

Rules:

1. choice: a key file that group or others can read (``mode & 0o077``), that is missing, or that
   is not exactly 64 hex digits (plus an optional newline) is refused with a :class:`KeyFileError`
   whose message is one line naming the file. The mode is read from the opened descriptor, so the
   file checked is the file read.
2. choice (IV uniqueness across processes, F: Counter rules): each sender process takes a fresh
   16-bit epoch from an :class:`EpochStore`, a small state file beside the key file (default
   ``<keyfile>.epoch``) holding the last epoch handed out as 5 digits and a newline. ``take``
   locks it with ``fcntl.flock``, reads, increments, writes the new value over the old one in
   place (``pwrite`` at offset 0, never truncating first) and fsyncs before releasing the lock,
   so two processes started from one key file never get the same epoch, even concurrently, after
   a crash or after a write that failed: the file always holds the old value or the new one
   (both have the same width, and any prefix of the larger written over the smaller reads as at
   least the smaller), never less and never nothing. A new file is made complete in a temporary
   file and linked into place, so nobody ever sees it empty; an epoch file that exists but is
   empty is therefore refused (something else emptied it: the epochs used are unknown). Files in
   the older unpadded form are read, and rewritten in this one by the next ``take``. The TSC
   starts at 0 per epoch, so (source, epoch, TSC) - the IV in direct mode, the KDF context plus
   TSC in cluster and server modes - is never repeated under one key. After epoch 65535 the
   store refuses with a one-line error telling the user to rotate the key: it never wraps
   silently.
3. choice: the precondition of rule 2 is that every process that sends under one key from one
   source identity (address or SSI) takes its epoch from the same store. Two copies of a key file
   at different paths on one host have two stores: use one path (or pass the store's path). On
   one host the receiving end counts as a sender too (it sends ACKs from the same address).
4. choice: :func:`key_from_seed` gives deterministic keys for the simulator and demos only (SHA-256
   of a fixed label and the seed); it is not a secret.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import tempfile

from ..errors import UetError

KEY_LEN = 32  # F: Cipher (AES-256)
EPOCH_MAX = 0xFFFF  # B.15: 16-bit epoch
_HEX = re.compile(rb"[0-9a-fA-F]{64}")
_SEED_LABEL = b"uet tss demo key v1\x00"
_EPOCH_FORMAT = b"%05d\n"  # fixed width: an update overwrites the whole old value
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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
            try:
                fd = os.open(name, os.O_RDWR | _CLOEXEC)
            except FileNotFoundError:
                if _create(name):
                    return 0
                fd = os.open(name, os.O_RDWR | _CLOEXEC)  # another process made it first
        except OSError as exc:
            raise KeyFileError(f"{name}: cannot open the epoch file: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by close
            try:
                raw = os.pread(fd, 65, 0)
            except OSError as exc:
                raise KeyFileError(f"{name}: cannot read the epoch file: {exc.strerror}; "
                                   "the epochs this key has used are unknown") from None
            text = raw.strip()
            if not text:
                raise KeyFileError(f"{name}: the epoch file is empty, so the epochs this key has "
                                   "used are unknown; rotate the key (write a new key file) and "
                                   "delete this file")
            if len(raw) > 64 or not text.isdigit() or int(text) > EPOCH_MAX:
                raise KeyFileError(f"{name}: the epoch file is corrupt (expected one number 0.."
                                   f"{EPOCH_MAX}); delete it only together with rotating the key")
            epoch = int(text) + 1
            if epoch > EPOCH_MAX:
                raise KeyFileError(f"{name}: all {EPOCH_MAX + 1} epochs of this key are used; "
                                   "rotate the key (write a new key file) and delete this file")
            value = _EPOCH_FORMAT % epoch
            # over the old value, never truncating first: a failure leaves the old one (rule 2)
            if os.pwrite(fd, value, 0) != len(value):
                raise OSError(errno.EIO, "short write")
            if len(raw) > len(value):  # an older form with more bytes: cut the rest, after
                os.ftruncate(fd, len(value))
            os.fsync(fd)
            return epoch
        except OSError as exc:
            raise KeyFileError(f"{name}: cannot update the epoch file: {exc.strerror}") from None
        finally:
            os.close(fd)


def _create(name: str) -> bool:
    """Put an epoch file holding epoch 0 at ``name`` in one step (rule 2): written and fsynced
    in a temporary file, then linked into place. True when this call made it (epoch 0 is the
    caller's), False when the name already existed."""
    folder = os.path.dirname(name) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(name) + ".", suffix=".new",
                                   dir=folder)
    except OSError as exc:
        raise KeyFileError(f"{name}: cannot create the epoch file: {exc.strerror}") from None
    try:
        value = _EPOCH_FORMAT % 0
        if os.write(fd, value) != len(value):
            raise OSError(errno.EIO, "short write")
        os.fsync(fd)
        try:
            os.link(tmp, name)
        except FileExistsError:
            return False
        _fsync_folder(folder)
        return True
    except OSError as exc:
        raise KeyFileError(f"{name}: cannot create the epoch file: {exc.strerror}") from None
    finally:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass  # a stray temporary file is harmless: it is never read


def _fsync_folder(folder: str) -> None:
    """Make a new name in ``folder`` durable; a file system that cannot fsync a folder is left
    as it is (the name is there, only its durability across a power loss is not promised)."""
    try:
        fd = os.open(folder, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["EPOCH_MAX", "EpochStore", "KeyFileError", "default_epoch_path", "key_from_seed",
           "read_key_file", "write_key_file"]
