"""The one summary builder of a transfer run (docs/design-notes.md "Contracts": ``uet sim --json``): the keys
every run reports, whatever carried it - the two-host fabric (``--topology paths:N``), the
switched ones (``leafspine``, ``fattree``) or the live loopback fabric of ``uet demo``.

:data:`CONTRACT_KEYS` are docs/design-notes.md's list: ``ok``, ``bytes``, ``sim_time_s``, ``wall_time_s``,
``goodput_gbps``, ``packets_sent``, ``retransmissions``, ``spurious_retransmissions``,
``trimmed``, ``dropped``, ``ecn_marked``, ``nacks``, ``paths_used``, ``seed``, and ``op``,
``mode``, ``sent``, ``delivered``, ``target_retransmissions``. :func:`transfer_summary` takes
each as a keyword (no default: a driver that forgets one fails at once) and returns them in that
order; the driver then adds what only it has (per-flow times, per-path tables). Pure: no clock."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

CONTRACT_KEYS = ("ok", "bytes", "sim_time_s", "wall_time_s", "goodput_gbps", "packets_sent",
                 "retransmissions", "spurious_retransmissions", "trimmed", "dropped", "ecn_marked",
                 "nacks", "paths_used", "seed", "op", "mode", "sent", "delivered",
                 "target_retransmissions")


def goodput_gbps(nbytes: int, seconds: float) -> float:
    """Payload bits per second over ``seconds`` (0 when no time passed), in Gb/s."""
    return nbytes * 8 / seconds / 1e9 if seconds > 0 else 0.0


def merge_nacks(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """NACKs sent by code name, summed over hosts, by name (the ``nacks`` key)."""
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


def transfer_summary(*, ok: bool, bytes: int, sim_time_s: float | None, wall_time_s: float,
                     goodput_gbps: float, packets_sent: int, retransmissions: int,
                     spurious_retransmissions: int | None, trimmed: int, dropped: int,
                     ecn_marked: int, nacks: dict[str, int], paths_used: int, seed: int, op: str,
                     mode: str, sent: int, delivered: int, target_retransmissions: int,
                     **extra: Any) -> dict[str, Any]:
    """The contract keys in :data:`CONTRACT_KEYS` order, then ``extra`` in the caller's order.
    ``sim_time_s`` is None on a live run (no virtual time); ``spurious_retransmissions`` None
    where it cannot be read off the frames (TSS)."""
    s: dict[str, Any] = {
        "ok": ok, "bytes": bytes, "sim_time_s": sim_time_s, "wall_time_s": wall_time_s,
        "goodput_gbps": goodput_gbps, "packets_sent": packets_sent,
        "retransmissions": retransmissions, "spurious_retransmissions": spurious_retransmissions,
        "trimmed": trimmed, "dropped": dropped, "ecn_marked": ecn_marked, "nacks": nacks,
        "paths_used": paths_used, "seed": seed, "op": op, "mode": mode, "sent": sent,
        "delivered": delivered, "target_retransmissions": target_retransmissions}
    s.update(extra)
    return s
