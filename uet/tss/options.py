"""The TSS options of the commands that run a protected transfer (``uet send``, ``uet recv``,
``uet demo``, ``uet sim``) and the :class:`SecurityConfig` they make: one place for the flags,
their help and their one-line errors.

  TSS-O1  ``--sd-key FILE`` alone turns TSS on (issue 18): the file holds the 32-byte secure-domain
      key as 64 hex digits, and is refused when group or others may read it (uet.tss.keys).
  TSS-O2  ``--sdi N`` (default 1) names the secure domain (24 bits, B.15); ``--tss-mode`` picks
      direct, cluster or server (F; default direct: the key as it is, no derivation).
  TSS-O3  every process that sends takes a fresh epoch from ``--epoch-file`` (default: the key
      file's name with ``.epoch`` added), so no IV repeats across runs with one key
      (uet.tss.keys.EpochStore); a command that makes its own key (``--tss`` without
      ``--sd-key``: the simulator, the demo) gives the epoch itself.
  TSS-O4  ``--tss-aad`` (default ``addresses``): what the AAD holds in UDP mode, where the facts give
      no rule (H.2); see uet.tss.layer.
  TSS-O5  ``--tss-kdf-l 16|32`` (default 16): the width of the KDF's output-length field in cluster
      and server modes, where the reference provider's trees disagree (H.1 #18; uet.tss.kdf
      rule 2); 16 interoperates with its 1.0 code.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from .. import cliargs
from .domain import MODES, SecureDomain, SecurityConfig
from .kdf import LENGTH_BITS_CHOICES, LENGTH_BITS_DEFAULT
from .keys import EpochStore, KeyFileError, key_from_seed, read_key_file, write_key_file

AAD_CHOICES = ("addresses", "header", "entropy")


def sdi(text: str) -> int:
    """A secure domain index: 0 .. 2^24 - 1 (B.15)."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= v < 1 << 24:
        raise argparse.ArgumentTypeError(f"{v} is not a secure domain index (0 .. {(1 << 24) - 1})")
    return v


def add_tss_arguments(p: argparse.ArgumentParser, *, own_key: bool = False) -> None:
    """TSS-O1 to TSS-O4 on ``p``; ``own_key``: the command also takes ``--tss`` (a key made from its seed)."""
    g = p.add_argument_group("transport security (TSS, facts B.15 and F)")
    if own_key:
        g.add_argument("--tss", action="store_true",
                       help="protect the whole transfer with TSS; without --sd-key the key is made "
                            "from the seed and written beside the capture as CAPTURE.key")
    g.add_argument("--sd-key", metavar="FILE",
                   help="secure-domain key file (64 hex digits, readable by its owner only); "
                        "turns TSS on")
    g.add_argument("--sdi", type=sdi, default=1, metavar="N",
                   help="secure domain index, 24 bits (default 1)")
    g.add_argument("--tss-mode", choices=MODES, default="direct",
                   help="direct (the key as it is), cluster (a key per sender, epoch and 256 "
                        "packets, label U1) or server (label U2, keyed by the client); default "
                        "direct")
    g.add_argument("--epoch-file", metavar="FILE",
                   help="where this sender's epochs are counted so that no IV repeats across "
                        "runs (default: the key file's name + .epoch)")
    g.add_argument("--tss-aad", choices=AAD_CHOICES, default="addresses",
                   help="what the AAD holds over UDP, where the facts give no rule: addresses (IP "
                        "source and destination, then the security header; survives a relay "
                        "that rewrites ports), header (the security header only), entropy "
                        "(addresses, the 4-byte entropy header from the source port, then the "
                        "security header); default addresses")
    add_kdf_width_argument(g)


def add_kdf_width_argument(g: Any) -> None:
    """TSS-O5 on a parser or argument group (also used by the commands that read captures)."""
    g.add_argument("--tss-kdf-l", type=int, choices=LENGTH_BITS_CHOICES,
                   default=LENGTH_BITS_DEFAULT, metavar="{16,32}", dest="tss_kdf_l",
                   help="bits of the KDF's output-length field [L] in cluster and server modes: 16 "
                        "as the UEC reference provider's 1.0 code (default), or 32 as its older "
                        "in-kernel KDF (facts F, H.1 #18); direct mode is unaffected")


def tss_wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "sd_key", None) or getattr(args, "tss", False))


def security_from_args(args: argparse.Namespace, *, role: str = "client",
                       key: bytes | None = None, epoch: int | None = None) -> SecurityConfig | None:
    """The :class:`SecurityConfig` the options ask for (None when TSS is off). ``key`` and
    ``epoch`` come from the command when it made its own key (TSS-O3); otherwise the key is read
    from ``--sd-key`` and the epoch taken from the epoch file. Raises
    :class:`uet.cliargs.UsageError` with one line for a key or epoch file that cannot be used."""
    if not tss_wanted(args):
        return None
    if key is None:
        path = args.sd_key
        if not path:
            raise cliargs.UsageError("--tss needs --sd-key FILE here")
        try:
            key = read_key_file(path)
            if epoch is None:
                epoch = EpochStore(args.epoch_file or os.fspath(path) + ".epoch").take()
        except KeyFileError as exc:
            raise cliargs.UsageError(str(exc), hint=False) from None
    domain = SecureDomain(sdi=args.sdi, key=key, mode=args.tss_mode, role=role)
    return SecurityConfig(domains=(domain,), send_sdi=args.sdi, epoch=epoch or 0,
                          aad=args.tss_aad,
                          kdf_length_bits=getattr(args, "tss_kdf_l", LENGTH_BITS_DEFAULT))


def summary(config: SecurityConfig | None) -> dict[str, Any] | None:
    """What a JSON summary says of the protection in use (never the key)."""
    if config is None:
        return None
    d = config.domains[0]
    return {"sdi": config.send_sdi, "mode": d.mode, "epoch": config.epoch, "aad": config.aad,
            "kdf_l": config.kdf_length_bits}


def own_security(args: argparse.Namespace, *, seed: int, capture: str | None,
                 role: str = "client") -> SecurityConfig | None:
    """TSS-O3 for a command that may make its own key (``uet sim --tss``, ``uet demo --tss``): the
    ``--sd-key`` file when given (with an epoch from its epoch file), else a key made from
    ``seed`` with the epoch taken from the seed too (the same run again is the same packets),
    written beside ``capture`` as ``CAPTURE.key`` so that the capture decodes with it."""
    if not tss_wanted(args):
        return None
    if getattr(args, "sd_key", None):
        return security_from_args(args, role=role)
    key = key_from_seed(seed)
    if capture and capture != "-":
        try:
            write_key_file(capture + ".key", key)
        except (KeyFileError, OSError) as exc:
            raise cliargs.UsageError(f"cannot write {capture}.key: {exc}", hint=False) from None
    return security_from_args(args, role=role, key=key, epoch=seed & 0xFFFF)


def with_role(config: SecurityConfig, role: str) -> SecurityConfig:
    """The same domains for the other end of a server-mode pair (F: keyed by the client)."""
    return dataclasses.replace(config, domains=tuple(
        dataclasses.replace(d, role=role) for d in config.domains))


def own_security_pair(args: argparse.Namespace, *, seed: int, capture: str | None
                      ) -> tuple[SecurityConfig | None, SecurityConfig | None]:
    """(sender's, receiver's) :func:`own_security` for two endpoints of one process that share
    an address (``uet demo``): the receiver takes an epoch of its own (the next from the epoch
    file, or the sender's plus one for a key made from the seed), since in direct mode the IV is
    (source address, epoch, TSC) and the two would otherwise repeat each other's IVs."""
    client = own_security(args, seed=seed, capture=capture)
    if client is None:
        return None, None
    if getattr(args, "sd_key", None):
        server = security_from_args(args, role="server")
    else:
        server = dataclasses.replace(with_role(client, "server"), epoch=(client.epoch + 1) & 0xFFFF)
    return client, server
