"""The checks' frame: what a check is, what it returns, the context it runs in, and the runner.

What this module owns
  * :class:`Check` - one rule of docs/facts.md as a test: ``name``, ``facts`` (the row, e.g.
    "C.4"), ``level`` ("must" or "should"), ``profile`` ("pds" or "ses") and the function that
    drives the target. The function returns a one-sentence detail on a pass and raises
    :class:`Fail` or :class:`Skip` (with the sentence) otherwise.
  * :class:`Result` - the verdict of one check: pass, fail or skip, and ``detail`` (what was
    sent, what came back, what was expected).
  * :class:`Context` - what every check shares: the target, the per-wait ``timeout``, the local
    address, the optional memory region the target exposes (``mkey``), the inbox every answer
    arrives at (the UET port at the suite's own address, A.1), fresh peers (one EV socket,
    hence one entropy value, per check) that are closed when the check ends, and the PDC set-up
    most checks start from (:meth:`Context.establish`).
  * :func:`run_checks` - runs the selected checks in order; no check can raise out of it (an
    unexpected exception becomes a failed verdict naming it) or hang (every read is bounded by
    the timeout and by a datagram count, :mod:`uet.conformance.peer`).

Choices (the facts are silent)
  * Every answer that reaches a check's peers counts, not only the one it waited for: the runner
    reads for ``settle`` seconds more once the check ended, and a check whose peers saw an ACK and
    a NACK of one PSN from one PDC fails, naming the contradiction (:mod:`.ledger`, C.5).
  * A check whose prerequisite fails (no PDC could be set up because the target answers SYNs
    wrongly) is skipped, naming the prerequisite: the check named for the broken rule fails, and
    unrelated checks do not fail with it.
  * When the first check that needs an answer gets no UET answer at all (nothing, or only
    undecodable datagrams), the target is taken to be silent: the remaining checks that need an
    answer are skipped ("not run"), so that a dead target costs one timeout, not one per check.
    The run then fails (exit 1) whatever the levels: see :attr:`Run.target_answered`.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

from ..mtu import DatagramTooBig
from .ledger import verdict
from .peer import Answer, Flooded, Inbox, Peer, control, fresh_spdcid, request

# seconds read after a check ends, for answers that contradict the one it took: answers a target
# sends together arrive within it; longer would cost that much per check (uet recv: 25 checks)
SETTLE = 0.03
LEVELS = ("must", "should")
PROFILES = ("pds", "ses")
RESULTS = ("pass", "fail", "skip")


class Fail(Exception):
    """The check failed; the message is its detail."""


class Skip(Exception):
    """The check could not be run or does not apply; the message is its detail."""


@dataclass(frozen=True)
class Check:
    name: str
    facts: str
    level: str
    profile: str
    run: Callable[["Context"], str]
    needs_answer: bool = True   # False: the rule is that nothing comes back (bad CRC, UUD)

    @property
    def title(self) -> str:
        return (self.run.__doc__ or self.name).strip().splitlines()[0]


def registry(profile: str) -> tuple[list[Check], Callable[..., Callable]]:
    """(the checks of one profile in the order they are defined, the decorator that adds one):
    ``@check("name", "C.4", "must")`` above a check function puts the rule's name, facts row
    and level beside its code."""
    checks: list[Check] = []

    def check(name: str, facts: str, level: str, *, needs_answer: bool = True
              ) -> Callable[[Callable[["Context"], str]], Callable[["Context"], str]]:
        def add(fn: Callable[["Context"], str]) -> Callable[["Context"], str]:
            checks.append(Check(name, facts, level, profile, fn, needs_answer=needs_answer))
            return fn
        return add

    return checks, check


@dataclass
class Result:
    name: str
    facts: str
    level: str
    profile: str
    result: str
    detail: str
    seconds: float = 0.0

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "facts": self.facts, "level": self.level,
                "profile": self.profile, "result": self.result, "detail": self.detail}


@dataclass
class Established:
    """A PDC the suite opened with a SYN request (C.1)."""

    peer: Peer
    spdcid: int       # ours
    tpdcid: int       # the target's, learned from the ACK's SPDCID
    start: int        # the start PSN (acknowledged)
    ack: Answer       # the ACK of the SYN

    def request(self, psn: int, **fields: object) -> bytes:
        """A request of this PDC (not SYN: it names the target's PDCID, C.1); ``fields`` as
        :func:`uet.conformance.peer.request` takes them."""
        return request(psn, spdcid=self.spdcid, dpdcid=self.tpdcid, **fields)  # type: ignore[arg-type]

    def control(self, ctl: int, psn: int) -> bytes:
        """A CONTROL packet of this PDC (B.12)."""
        return control(ctl, psn, spdcid=self.spdcid, dpdcid=self.tpdcid)


@dataclass
class Context:
    target: tuple[str, int]
    timeout: float = 1.0
    local: str | None = None
    mkey: tuple[int, int] | None = None   # (memory key, region length) the target exposes
    max_datagrams: int = 512
    seed: int | None = None
    settle: float = SETTLE   # (at most ``timeout``) see settle_peers()
    mtu: int = 1024                       # payload bytes per packet of multi-packet messages (A.1)
    ses_header: str = "auto"              # "standard": next_hdr 6 is a failure (A.1)
    encap: str = "udp"                    # "ip": UET in IP protocol ip_proto (A.1 "Native IP")
    ip_proto: int = 253                   # A.1: RFC 3692 experimental, as the reference
    rng: random.Random = field(init=False)
    _peers: list[Peer] = field(default_factory=list, init=False)
    inbox: Inbox | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def peer(self) -> Peer:
        """A fresh socket (a fresh entropy value) for this check; closed when the check ends."""
        p = Peer(self.target, inbox=self.open(), max_datagrams=self.max_datagrams, mtu=self.mtu)
        self._peers.append(p)
        return p

    def settle_peers(self) -> str | None:
        """Read what reaches this check's peers for ``settle`` seconds (a fixed wait, not one
        from the last datagram: a chatty target cannot stretch it; only peers that were answered
        at all), then the contradictions among every answer they saw (:mod:`.ledger`), or None.
        Answers sent together with the one a check took arrive within this wait."""
        quiet = min(self.settle, self.timeout)
        for p in self._peers:
            if p.seen.answers and quiet > 0:
                try:
                    p.collect(quiet)
                except (Flooded, OSError):
                    pass  # the check's own reads judge a flood; what was read still counts
        return verdict([p.ledger for p in self._peers])

    def open(self) -> Inbox:
        """The one socket every answer comes to, at (``local``, or the first free loopback
        address, the UET port): A.1. Raises uet.ownaddr.LocalAddressError (an OSError, one line)
        when no such address can be bound."""
        if self.inbox is None:
            self.inbox = Inbox(self.target, local=self.local, encap=self.encap,
                               ip_proto=self.ip_proto)
        return self.inbox

    def close(self) -> None:
        self.close_peers()
        if self.inbox is not None:
            self.inbox.close()
            self.inbox = None

    def close_peers(self) -> None:
        for p in self._peers:
            p.close()
        self._peers.clear()

    def standard_family(self, a: Answer, sent: str) -> None:
        """With ``ses_header`` "standard" (A.1): the suite sent standard requests only, so an
        answer with the small response with data (next_hdr 6) fails: a peer such as the
        reference provider drops it."""
        if self.ses_header == "standard" and a.pds.get("next_hdr") == 6:
            raise Fail(f"{sent}; the answer carries a small response with data (next_hdr 6) to "
                       "a peer that sends standard headers only, which the reference provider "
                       "drops (A.1, --ses-header standard)")

    def start_psn(self) -> int:
        """A random start PSN in [2^16, 2^31) as the reference provider picks them (C.1)."""
        return self.rng.randrange(1 << 16, 1 << 30)

    def message_id(self) -> int:
        """A random SES message id (D.2): a multi-packet message is named by source address,
        initiator and message id, so checks must not reuse one another's."""
        return self.rng.randrange(1, 0x10000)

    def fresh_pdc(self) -> tuple[Established, int]:
        """A PDC opened by :meth:`establish` and the first PSN after its SYN, the one most checks
        send their packet under test on."""
        e = self.establish()
        return e, e.start + 1

    def establish(self, *, payload: bytes = b"uet conformance", rod: bool = False) -> Established:
        """Open a PDC: a SYN request (AR) at a random start PSN with a fresh SPDCID, and its ACK
        (C.1). Raises :class:`Skip` when no ACK comes: the prerequisite is the subject of
        ``syn_establishment``, not of the calling check."""
        p = self.peer()
        sp = fresh_spdcid()
        start = self.start_psn()
        p.send(request(start, spdcid=sp, start=start, payload=payload, rod=rod))
        a = p.expect(lambda a: a.is_ack and start in (a.pds.get("ack_psn"), a.pds.get("cack_psn"))
                     or a.is_nack and a.pds.get("nack_psn") == start, self.timeout)
        if a is None or not a.is_ack:
            got = a.brief() if a is not None else f"no ACK within {self.timeout:g} s"
            raise Skip(f"not run: the PDC could not be set up (SYN {'ROD' if rod else 'RUD'} "
                       f"request PSN {start}: {got}); see syn_establishment")
        return Established(p, sp, int(a.pds["spdcid"]), start, a)


@dataclass
class Run:
    """The verdicts of one run and whether the target answered at all."""

    target: str
    results: list[Result]
    target_answered: bool

    @property
    def summary(self) -> dict[str, int]:
        s = {"total": len(self.results), "pass": 0, "fail": 0, "skip": 0, "must_failed": 0,
             "should_failed": 0}
        for r in self.results:
            s[r.result] += 1
            if r.result == "fail":
                s[f"{r.level}_failed"] += 1
        return s

    @property
    def ok(self) -> bool:
        """Every must passed (or was skipped) and the target answered: exit status 0."""
        return self.target_answered and not any(
            r.result == "fail" and r.level == "must" for r in self.results)


def run_one(check: Check, ctx: Context) -> tuple[Result, bool]:
    """The verdict of one check, and whether any UET answer came back during it."""
    t0 = time.monotonic()
    try:
        detail, result = check.run(ctx), "pass"
    except Fail as exc:
        detail, result = str(exc), "fail"
    except Skip as exc:
        detail, result = str(exc), "skip"
    except Flooded as exc:
        detail, result = f"the target flooded the check: {exc}", "fail"
    except DatagramTooBig:
        raise  # A.1: --mtu does not fit the route; the command stops (exit 2)
    except OSError as exc:
        detail, result = f"socket error: {exc}", "fail"
    except Exception as exc:  # a bug of the suite must not hide the other verdicts
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = (f"internal error of the conformance suite: {type(exc).__name__}: {exc} "
                  f"({where.filename.rsplit('/', 1)[-1]}:{where.lineno})")
        result = "fail"
    finally:
        clash = ctx.settle_peers()
        answered = any(p.seen.answers for p in ctx._peers)
        ctx.close_peers()
    if clash is not None:   # a violation of its own, whatever the check concluded (C.5)
        also = {"pass": "otherwise passed", "fail": "also failed",
                "skip": "otherwise skipped"}[result]
        detail, result = f"{clash} ({also}: {detail})", "fail"
    return Result(check.name, check.facts, check.level, check.profile, result,
                  " ".join(detail.split()), time.monotonic() - t0), answered


def run_checks(checks: list[Check], ctx: Context,
               progress: Callable[[Result], None] | None = None) -> Run:
    """Run ``checks`` in order against ``ctx.target`` (see the module docstring). The inbox is
    opened first (an OSError, uet.ownaddr.LocalAddressError, when it cannot be) and closed at
    the end."""
    results: list[Result] = []
    answered: bool | None = None   # unknown until the first check that needs an answer ran
    ctx.open()
    try:
        for c in checks:
            if answered is False and c.needs_answer:
                r = Result(c.name, c.facts, c.level, c.profile, "skip",
                           "not run: the target never answered (no UET packet with a valid "
                           "CRC-32C trailer came back to the first check)")
            else:
                r, got = run_one(c, ctx)
                if c.needs_answer and answered is None:
                    answered = got
            results.append(r)
            if progress is not None:
                progress(r)
    finally:
        ctx.close()
    host, port = ctx.target
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return Run(target, results, answered is not False)
