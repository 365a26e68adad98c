"""uet.native: the per-packet hot path in C with a Python twin: CRC-32C, RoCEv2 ICRC, reassembly and
the PSN window here; batched sockets, the receive lane and the request builder in its submodules.

Two interchangeable backends with identical behaviour:

* ``"c"``      -- C sources in ``native/`` compiled by cffi at install time
                  (module ``uet.native._uet_native``);
* ``"python"`` -- the pure-Python twins in ``uet.native._twin``.

``BACKEND`` says which one is in use.  Setting ``UET_NATIVE=0`` in the
environment forces the twin.  If the C extension cannot be imported (no
compiler at install time, ...), the twin is used and a single
``RuntimeWarning`` says so.

Public API (see ``__init__.pyi`` for signatures and the docstrings of the
twin for details):

``crc32c(data, crc=0)``, ``crc32c_prefix(data, length, crc=0)``, ``crc32(data, crc=0)``, ``roce_icrc(ip_packet)``,
``Reassembly(length, chunk=CHUNK_BYTES)`` (storage allocated as bytes arrive, see
:mod:`uet.native.reassembly`), ``PsnWindow(start_psn, size=1024)``, ``NEW``,
``DUPLICATE``, ``OUT_OF_WINDOW``, ``psn_diff(a, b)``, ``psn_lt(a, b)``, ``randbytes(rng, n)``
(the seeded data of uet.payload).

Batched UDP receive and send (``recvmmsg`` / ``sendmmsg`` in C, the per-datagram loop as the
twin) live in :mod:`uet.native.sockbatch` (``BATCH_BACKEND``). The C data path of issue 15:
:mod:`uet.native.rxlane` (a middle packet of a SEND or TAGGED_SEND on an open RUD PDC, received
in one call, read in place from a ``recvmmsg`` area by the live engine, and where the PDC's ACK
is a plain ACK_CC the ACK it answers with, trailer included; its twin is the Python fast path of
uet.pds and uet.ses) and :mod:`uet.native.txbuild` (the datagrams of a run of new requests built
in one call; its twin the per-packet Python).
"""

from __future__ import annotations

import os as _os
import warnings as _warnings

from . import _twin

__all__ = ["BACKEND", "CHUNK_BYTES", *_twin.__all__]  # the backends' API is the twin's


def _native_disabled() -> bool:
    v = _os.environ.get("UET_NATIVE", "").strip().lower()
    return v in ("0", "false", "no", "off", "python")


BACKEND: str = "python"
_impl = _twin
if not _native_disabled():
    try:
        from . import _cbackend as _impl  # type: ignore[no-redef]

        BACKEND = "c"
    except Exception as _exc:  # ImportError, OSError, cffi errors
        _impl = _twin
        _warnings.warn(
            "uet.native: C extension unavailable (%s: %s); using the pure-Python "
            "twin, which is much slower" % (type(_exc).__name__, _exc),
            RuntimeWarning,
            stacklevel=2,
        )

crc32c = _impl.crc32c
crc32c_prefix = _impl.crc32c_prefix
crc32 = _impl.crc32
roce_icrc = _impl.roce_icrc
# The protocol's reassembly: lazily allocated chunks, each one engine of the backend in use
# (``_impl.Reassembly`` is one contiguous buffer; the differential tests compare those).
from .reassembly import CHUNK_BYTES, Reassembly  # noqa: E402
PsnWindow = _impl.PsnWindow
NEW = _twin.NEW
DUPLICATE = _twin.DUPLICATE
OUT_OF_WINDOW = _twin.OUT_OF_WINDOW
psn_diff = _impl.psn_diff
psn_lt = _impl.psn_lt
randbytes = _impl.randbytes
