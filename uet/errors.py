"""The project's typed errors.

Every decoder raises only :class:`DecodeError` (or a subclass) on bad input, so that callers can
catch exactly one thing; encoders raise :class:`EncodeError` for values that do not fit a field.
"""

from __future__ import annotations


class UetError(Exception):
    """Base class of every error the package raises on purpose."""


class DecodeError(UetError, ValueError):
    """Bytes that cannot be decoded as the header or packet asked for."""

    def __init__(self, message: str, *, header: str | None = None, offset: int | None = None):
        self.header = header
        self.offset = offset
        prefix = f"{header}: " if header else ""
        super().__init__(prefix + message)


class TruncatedError(DecodeError):
    """The buffer ends before the header does."""

    def __init__(self, header: str, need: int, have: int, offset: int | None = None):
        self.need = need
        self.have = have
        super().__init__(f"truncated: needs {need} bytes, {have} left", header=header, offset=offset)


class EncodeError(UetError, ValueError):
    """A field value that does not fit its declared width, or an unknown field name."""
