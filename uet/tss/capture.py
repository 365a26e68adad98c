"""Decrypting TSS frames of a capture with a secure-domain key (``uet decode --sd-key``, the Scapy
layer's ``decrypt``): the stateless side of uet.tss.layer (:func:`uet.tss.open_frame`), as
Wireshark decrypts TLS with a key log. No replay window and no counters: a capture is read, not
served.

  TSS-K1  F: a frame opens when its tag verifies under the key for the SDI it names; ``sdi=None``
      takes the key for whatever SDI a frame names (one key file, one domain, whatever its
      index). Server mode tries either end as the client (open_frame).
  TSS-K2  a frame that arrived trimmed (DSCP 11) has lost its tag: its surviving bytes are decrypted
      without authentication and marked so, as the receiver reads them to answer NACK TRIMMED.
"""

from __future__ import annotations

import os
import socket
from typing import Callable

from .domain import SecureDomain
from .kdf import LENGTH_BITS_DEFAULT
from .keys import read_key_file
from .layer import open_frame, parse_header

#: (UET bytes from the security header, IP source, IP destination, UDP source port, trimmed)
#: -> (plaintext after the security header, authenticated), or None when the key does not open it
Opener = Callable[[bytes, bytes, bytes, int, bool], "tuple[bytes, bool] | None"]


def _address(raw: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def opener_for_key(key: bytes, *, sdi: int | None = None, mode: str = "direct",
                   aad: str = "addresses", kdf_length_bits: int = LENGTH_BITS_DEFAULT) -> Opener:
    """An :data:`Opener` for one key (TSS-K1, TSS-K2)."""
    if sdi is not None:
        SecureDomain(sdi=sdi, key=key, mode=mode)  # a ValueError now, not per frame

    def open_tss(uet: bytes, src: bytes, dst: bytes, sport: int,
                 trimmed: bool = False) -> tuple[bytes, bool] | None:
        h = parse_header(uet)
        if h is None:
            return None
        index = h[4] if sdi is None else sdi  # B.15: the SDI the frame names
        _header, plain = open_frame(uet, src=_address(src), dst=_address(dst), sport=sport,
                                    domains=(SecureDomain(sdi=index, key=key, mode=mode),),
                                    aad=aad, trimmed=trimmed,
                                    kdf_length_bits=kdf_length_bits)
        return None if plain is None else (plain, not trimmed)

    return open_tss


def capture_opener(path: str | os.PathLike, *, sdi: int | None = None, mode: str = "direct",
                   aad: str = "addresses", kdf_length_bits: int = LENGTH_BITS_DEFAULT) -> Opener:
    """:func:`opener_for_key` with the key read from a key file (uet.tss.keys rules: refused
    with a one-line :class:`uet.tss.keys.KeyFileError` when others may read it)."""
    return opener_for_key(read_key_file(path), sdi=sdi, mode=mode, aad=aad,
                          kdf_length_bits=kdf_length_bits)
