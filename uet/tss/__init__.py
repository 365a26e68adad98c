"""Transport security (TSS, docs/facts.md B.15 and F) as a sans-IO layer below the PDS.

This package owns the TSS security header on the wire, AES-256-GCM protection with the 16-byte
tag as the packet trailer, the SP 800-108 KDF of cluster and server modes, the sender's TSC and
epochs, the receive checks (replay window, epoch age, per-source authentication-failure limit),
trimmed-packet handling, key files and the epoch store, and stateless opening of captured frames.
It imports no trio, no sockets and nothing of the PDS; datagram metadata is duck-typed (``src``,
``dst``, ``sport``, ``dport``, ``dscp``, ``ecn``).

Modules: :mod:`.kdf` (KDF), :mod:`.cipher` (GCM, IV, prefix decryption), :mod:`.replay` (receive
state), :mod:`.keys` (files, epochs), :mod:`.domain` (configuration), :mod:`.layer` (the layer).
Each module's docstring lists its rules, the project's choices marked "choice".
"""

from .cipher import TAG_LEN, decrypt_prefix, make_iv, open_sealed, seal
from .domain import MODES, SecureDomain, SecurityConfig
from .kdf import KDF_OUTPUT_LEN, LABEL_CLUSTER, LABEL_SERVER, derive, kdf_context
from .keys import (EpochStore, KeyFileError, default_epoch_path, key_from_seed, read_key_file,
                   write_key_file)
from .layer import COUNTERS, TscExhaustedError, TssLayer, Unprotected, open_frame

__all__ = [
    "COUNTERS", "EpochStore", "KDF_OUTPUT_LEN", "KeyFileError", "LABEL_CLUSTER", "LABEL_SERVER",
    "MODES", "SecureDomain", "SecurityConfig", "TAG_LEN", "TscExhaustedError", "TssLayer",
    "Unprotected", "decrypt_prefix", "default_epoch_path", "derive", "kdf_context",
    "key_from_seed", "make_iv", "open_frame", "open_sealed", "read_key_file", "seal",
    "write_key_file",
]
