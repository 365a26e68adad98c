"""The C fabric engine (``native/fabric.c``, issue 29 item 1): the many-host simulator's event
heap, links, switch ports and forwarding in C, behind a small Python object. The rules are those
of the Python model (uet/net/switch.py, uet/net/ecn.py, uet/net/ecmp.py, uet/net/rng.py), which
stays the reference; uet/sim/cfabric.py drives this from the simulator and tests/sim compares the
two engines event by event.

``AVAILABLE`` is True when the C extension is in use (``uet.native.BACKEND == "c"``); then
:class:`FabricEngine` holds one fabric. Packets are ids, lengths and flags; a call that the C
refuses (an index outside the fabric, a length that is not positive, a full event heap) raises
:class:`FabricEngineError` naming the call; a refused packet batch changes nothing, a full heap
leaves the fabric to be read, not run on.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import BACKEND

__all__ = ["AVAILABLE", "FabricEngine", "FabricEngineError", "rng_words", "F_CONTROL", "F_ECT",
           "F_TRIMMED", "F_CE", "F_TAGGED", "DELIVER", "PY", "LOG_TX", "LOG_DROP", "LOG_DELIVER"]

# the flags and kinds of native/fabric.h (tests/sim/test_fabric_engines.py checks them against C)
F_CONTROL, F_ECT, F_TRIMMED, F_CE, F_TAGGED = 1, 2, 4, 8, 16
DELIVER, PY = 0, 1
LOG_TX, LOG_DROP, LOG_DELIVER = 1, 2, 3
MAX_EVENTS = 1 << 28   # a runaway fabric stops with an error instead of eating the memory
OUT_RECORDS = 4096


class FabricEngineError(ValueError):
    """The C fabric engine refused a call (the message names it and why)."""


AVAILABLE = False
_ffi: Any = None
_lib: Any = None
if BACKEND == "c":
    try:
        from ._uet_native import ffi as _ffi, lib as _lib

        AVAILABLE = hasattr(_lib, "uet_fab_new")
    except ImportError:  # pragma: no cover - BACKEND says it is there
        AVAILABLE = False

_WHY = {-1: "an argument outside its range", -2: "the event heap or packet pool is full",
        -3: "out of memory"}


def _check(rc: int, call: str) -> int:
    if rc < 0:
        raise FabricEngineError(f"fabric engine: {call}: {_WHY.get(rc, f'error {rc}')}")
    return rc


def rng_words(seed: int, n: int) -> list[int]:
    """The first ``n`` words of the C generator (uet/net/rng.py NET-R1) seeded with ``seed``."""
    if not AVAILABLE:
        raise FabricEngineError("fabric engine: the C extension is not in use")
    if n < 0:
        raise FabricEngineError("fabric engine: rng_words: n is negative")
    buf = _ffi.new("uint64_t[]", max(n, 1))
    _lib.uet_fab_rng_fill(seed & 0xFFFFFFFFFFFFFFFF, buf, n)
    return list(buf[0:n])


class FabricEngine:
    """One fabric of ``hosts`` hosts, ``switches`` switches and ``ports`` ports (the hosts' NICs
    among them), its generator seeded with ``seed`` (NET-R1). Build it with :meth:`port`,
    :meth:`switch` and :meth:`nic`, then alternate :meth:`inject` / :meth:`push_py` and
    :meth:`run`. After :meth:`run` returns n, ``out[0:n]`` holds the records (``t``, ``kind``:
    DELIVER or PY, ``id``, ``node``: the host, ``flags``, ``csig``: the tag's bits or -1)."""

    def __init__(self, *, hosts: int, switches: int, ports: int, seed: int,
                 max_events: int = MAX_EVENTS):
        if not AVAILABLE:
            raise FabricEngineError("fabric engine: the C extension is not in use")
        for name, v, lo, hi in (("hosts", hosts, 1, 1 << 31), ("switches", switches, 0, 1 << 31),
                                 ("ports", ports, 1, 1 << 31), ("max_events", max_events, 1, 1 << 63)):
            if not lo <= v < hi:
                raise FabricEngineError(f"fabric engine: {name} is {v}, not in {lo}..{hi - 1}")
        self.hosts, self.switches, self.ports = hosts, switches, ports
        h = _lib.uet_fab_new(hosts, switches, ports, seed & 0xFFFFFFFFFFFFFFFF, max_events)
        if h == _ffi.NULL:
            raise FabricEngineError("fabric engine: cannot allocate the fabric")
        self._h = _ffi.gc(h, _lib.uet_fab_free)
        self.out = _ffi.new("uet_fab_out[]", OUT_RECORDS)
        self._pk = _ffi.new("uet_fab_pkt[]", 64)
        self._stats = _ffi.new("uet_fab_stats *")
        self._ids = _ffi.new("int64_t[]", 1024)
        self._logbuf = _ffi.new("uet_fab_log[]", 1024)

    def port(self, i: int, *, Bps: float, delay: float, cap: int, kmin: int, kmax: int,
             keep_frame: int, trimming: bool, fail_at: float, mark_in: bool,
             victim_either: bool, peer_is_host: bool, peer: int) -> None:
        """Port ``i`` as uet.net.switch.Port (NET-S1 to NET-S4) builds it; ``peer`` a host or a switch."""
        self._call("port", _lib.uet_fab_port, i, Bps, delay, cap, kmin, kmax, keep_frame,
                   int(trimming), fail_at, int(mark_in), int(victim_either), int(peer_is_host),
                   peer)

    def port_csig(self, i: int, *, t: int, abw_full_gbps: float, delay_unit_s: float, lm: int,
                  interval: float) -> None:
        """NET-S5, NET-S6: port ``i`` stamps CSIG tags of type ``t`` (-1: off) with this scale."""
        self._call("port_csig", _lib.uet_fab_port_csig, i, t, abw_full_gbps, delay_unit_s, lm,
                   interval)

    def switch(self, i: int, *, salt: int, down: Sequence[int], up: Sequence[int]) -> None:
        """Switch ``i``: ``down[h]`` its port toward host h (-1: none), ``up`` its ECMP ports."""
        if len(down) != self.hosts:
            raise FabricEngineError(f"fabric engine: switch: {len(down)} down entries for "
                                    f"{self.hosts} hosts")
        self._call("switch", _lib.uet_fab_switch, i, salt & 0xFFFFFFFF,
                   _ffi.new("int32_t[]", list(down)), _ffi.new("int32_t[]", list(up) or [0]),
                   len(up))

    def nic(self, host: int, port: int) -> None:
        self._call("nic", _lib.uet_fab_nic, host, port)

    def log_on(self, on: bool = True) -> None:
        _lib.uet_fab_log_on(self._h, int(on))

    def inject(self, now: float, host: int,
               pkts: Sequence[tuple[int, int, int, int, int, int]]) -> None:
        """Packets ``(id, frame length, destination host, 5-tuple key, flags, CSIG tag bits or
        -1)`` into ``host``'s NIC."""
        n = len(pkts)
        if n > len(self._pk):
            self._pk = _ffi.new("uet_fab_pkt[]", 2 * n)
        pk = self._pk
        try:
            for i, (pid, length, dst, key, flags, csig) in enumerate(pkts):
                p = pk[i]
                p.id, p.len, p.dst, p.key, p.flags, p.csig = pid, length, dst, key, flags, csig
        except (OverflowError, TypeError, ValueError) as exc:  # a field outside its C type
            raise FabricEngineError(f"fabric engine: inject: {exc}") from None
        self._call("inject", _lib.uet_fab_inject, now, host, pk, n)

    def push_py(self, t: float, ident: int) -> None:
        """A Python event ``ident`` due at ``t`` (not before the engine's now)."""
        self._call("push_py", _lib.uet_fab_push_py, t, ident)

    def run(self, limit: float) -> int:
        """Run up to the next Python event or deliveries (or ``limit``); the records written."""
        return _check(_lib.uet_fab_run(self._h, limit, self.out, OUT_RECORDS), "run")

    def dropped(self) -> list[int]:
        """The ids of the packets that left the fabric without arriving, since the last call."""
        got: list[int] = []
        while n := _check(_lib.uet_fab_drain_dropped(self._h, self._ids, len(self._ids)), "dropped"):
            got.extend(self._ids[0:n])
        return got

    def log(self) -> list[tuple[float, int, int, int, int]]:
        """The log since the last call: ``(t, event, port or host, packet id, flags)``."""
        got = []
        buf = self._logbuf
        while n := _check(_lib.uet_fab_drain_log(self._h, buf, len(buf)), "log"):
            got.extend((r.t, r.event, r.where, r.id, r.flags) for r in buf[0:n])
        return got

    @property
    def pending(self) -> int:
        return _lib.uet_fab_pending(self._h)

    @property
    def now(self) -> float:
        return _lib.uet_fab_now(self._h)

    def port_stats(self, i: int) -> dict[str, Any]:
        self._call("port_stats", _lib.uet_fab_port_stats, i, self._stats)
        s = self._stats
        return {k: getattr(s, k) for k in ("tx_packets", "tx_bytes", "trimmed", "dropped",
                                           "ce_marked", "max_qbytes", "qbytes", "q_area",
                                           "q_since", "csig_stamped", "csig_replaced",
                                           "csig_d_set")}

    def busy(self, i: int) -> bool:
        return bool(self._call("busy", _lib.uet_fab_port_busy, i))

    def _call(self, name: str, fn: Any, *args: Any) -> int:
        try:
            rc = fn(self._h, *args)
        except (OverflowError, TypeError) as exc:  # a number outside its C type
            raise FabricEngineError(f"fabric engine: {name}: {exc}") from None
        return _check(rc, name)
