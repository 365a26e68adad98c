"""The conformance suite: ``uet conformance HOST:PORT`` tests another UET-over-UDP implementation.

An independent peer drives the target with crafted packets and checks its answers against
docs/facts.md, one check per rule, each named after what it tests and tagged with its facts row,
its level (must, should) and its profile (pds, ses).

Independence: the suite never uses the project's protocol core (``uet.pds``, ``uet.ses``,
``uet.host``, ``uet.io``) to make or judge packets. It builds them from the header declarations
(:mod:`uet.wire`), seals them with the CRC-32C trailer of A.3, sends them from plain blocking
UDP sockets and reads the answers with a bound on time and on count; it assumes nothing about
the target's timers beyond the facts (a rule that nothing comes back is judged over one full
``--timeout``).

Modules
  * :mod:`.peer` - sockets, packet building, bounded reads, answer decoding;
  * :mod:`.ledger` - what was sent and answered per PSN: an ACK and a NACK of one PSN (C.5);
  * :mod:`.checks` - the check, result and context types and the runner;
  * :mod:`.pds_checks` - PDS rules (B, C): establishment, CACK/SACK, ACK generation,
    duplicates, window, unknown PDC, mode mismatch, trimming, CRC, ACK_REQ, close, RUDI, UUD;
  * :mod:`.ses_checks` - SES operations (D) where the target offers them;
  * :mod:`.report` - text, JSON and JUnit reports;
  * :mod:`.command` - the ``uet conformance`` subcommand.
"""

from __future__ import annotations

from .checks import Check, Context, Result, Run, run_checks

__all__ = ["Check", "Context", "Result", "Run", "run_checks", "all_checks"]


def all_checks() -> list[Check]:
    """Every check of the suite, in the order they run."""
    from .pds_checks import CHECKS as pds
    from .ses_checks import CHECKS as ses

    return pds + ses
