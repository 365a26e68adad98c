"""The ``--sd-key`` options of the commands that read captures (``uet decode``, ``uet analyze``):
TSS frames (facts B.15, F) decrypted with the secure-domain key, as Wireshark decrypts TLS
with a key log. The crypto (uet.tss) is imported only when a key is given, so that reading a
capture in the clear pays nothing for it."""

from __future__ import annotations

import argparse
from typing import Any

from .. import cliargs


def _sdi(text: str) -> int:
    from ..tss.options import sdi

    return sdi(text)


def add_capture_key(p: argparse.ArgumentParser) -> None:
    """``--sd-key`` and its companions for the commands that read captures (F: TSS frames are
    decrypted with the secure-domain key, as Wireshark decrypts TLS with a key log)."""
    g = p.add_argument_group("encrypted frames (TSS, facts B.15 and F)")
    g.add_argument("--sd-key", metavar="FILE",
                   help="decrypt TSS frames with this secure-domain key file (64 hex digits, "
                        "owner-readable only); without it a TSS frame shows its header and its "
                        "payload stays encrypted")
    g.add_argument("--sdi", type=_sdi, default=None, metavar="N",
                   help="with --sd-key: the key's secure domain index (default: any SDI)")
    g.add_argument("--tss-mode", choices=("direct", "cluster", "server"), default="direct",
                   help="with --sd-key: how the key is used (F; default direct)")
    g.add_argument("--tss-aad", choices=("addresses", "header", "entropy"), default="addresses",
                   help="with --sd-key: the AAD rule the sender used over UDP (default "
                        "addresses; see uet send --help)")
    g.add_argument("--tss-kdf-l", type=int, choices=(16, 32), default=16, metavar="{16,32}",
                   dest="tss_kdf_l",
                   help="with --sd-key in cluster or server mode: bits of the KDF's length field, "
                        "16 as the UEC reference provider's 1.0 code (default) or 32 as its older "
                        "KDF (facts F, H.1 #18)")


def capture_key(args: argparse.Namespace) -> Any:
    """The TSS opener (uet.tss.capture) ``--sd-key`` asks for, or None; a key file that cannot
    be used is a :class:`uet.cliargs.UsageError` of one line."""
    if not args.sd_key:
        return None
    from ..tss.capture import capture_opener
    from ..tss.keys import KeyFileError

    try:
        return capture_opener(args.sd_key, sdi=args.sdi, mode=args.tss_mode, aad=args.tss_aad,
                              kdf_length_bits=args.tss_kdf_l)
    except (KeyFileError, ValueError) as exc:
        raise cliargs.UsageError(str(exc), hint=False) from None
