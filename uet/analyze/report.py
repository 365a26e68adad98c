"""The ``uet analyze`` report: one JSON object (``--json``) or readable text (issue 17 item 1).

JSON keys, top level (:data:`KEYS`; ``ladder`` only with ``--ladder``):

* ``file``; ``frames``: frames read; ``uet_frames``: frames found to be UET (intake);
* ``pdc_count``: how many PDCs; ``pdcs``: the list of them (the issue names both a count and a
  list ``pdcs``: the list keeps the name, the count is ``pdc_count``);
* ``retransmissions``, ``spurious_retransmissions``: over all PDCs (conversation's verdicts);
  ``retransmissions_after_intact_copy``: retransmissions with an earlier untrimmed transmission
  in the capture (spurious at a capture point where the receiver reads);
* ``trimmed``: UET frames with the trimmed DSCP 11 (C.6); ``ce_marked``: UET frames with ECN CE;
* ``nacks``: NACK code name (B.11) -> count, every NACK frame (RUDI ones too);
* ``violations``: how many, over all PDCs (each PDC lists its own);
* ``broken``: ``[{"frame", "reason"}]``, skipped, the first 100 listed (intake's BROKEN_KEEP);
  ``broken_count``: how many there were; ``other``: UET frames outside any PDC, by PDS type name
  (RUDI, UUD, TSS); ``stopped``: why reading ended early, or null; ``notes``.

Each PDC (:data:`PDC_KEYS`): ``index`` (1-based: what ``--ladder`` takes), ``initiator``,
``target``, ``initiator_pdcid``, ``target_pdcid`` and the frame it was learned from, ``mode``
(RUD/ROD), ``start_psn`` (from a SYN, else null), ``first_psn``, ``last_psn``, ``psns_seen``,
``psn_range``, ``coverage`` (seen / range), ``frames``, ``counts`` (requests, copies, acks, nacks,
control), ``messages`` (SES message ids, SOM and EOM counts of first transmissions),
``retransmissions`` (each: frame, psn, verdict needed|spurious, reason, earlier_frames, ack_frame,
intact_copy_frame), ``spurious_retransmissions``, ``nacks`` (frame, code, psn, answers = the frame
of the request it answers, retx), ``trims`` (frame, psn, copy_of, nack_frame), ``phantom_acks``
(frame, psns, why), ``ecn``, ``close`` (frame, psn, ack_frame), ``violations`` (frame, rule, kind,
text) and ``notes``.
"""

from __future__ import annotations

from typing import Any

from .conversation import Conversation, Pdc, pdiff
from .intake import Intake

KEYS = ("file", "frames", "uet_frames", "pdc_count", "retransmissions", "spurious_retransmissions",
        "retransmissions_after_intact_copy", "trimmed", "ce_marked", "nacks", "violations",
        "broken", "broken_count", "other", "stopped", "notes", "pdcs")
PDC_KEYS = ("index", "initiator", "target", "initiator_pdcid", "target_pdcid",
            "target_pdcid_frame", "mode", "start_psn", "first_psn", "last_psn", "psns_seen",
            "psn_range", "coverage", "frames", "counts", "messages", "retransmissions",
            "spurious_retransmissions", "nacks", "trims", "phantom_acks", "ecn", "close",
            "violations", "notes")
COUNT_KEYS = ("requests", "copies", "acks", "nacks", "control")
LIST_MAX = 12  # entries of one list in the text report (the JSON has them all)


def pdc_json(pdc: Pdc) -> dict[str, Any]:
    rng = pdiff(pdc.last_psn, pdc.first_psn) + 1 if pdc.first_psn is not None else 0
    before, after = pdc.outstanding
    return {
        "index": pdc.index, "initiator": pdc.initiator, "target": pdc.target,
        "initiator_pdcid": pdc.ipdcid, "target_pdcid": pdc.tpdcid,
        "target_pdcid_frame": pdc.tpdcid_frame, "mode": pdc.mode, "start_psn": pdc.start_psn,
        "first_psn": pdc.first_psn, "last_psn": pdc.last_psn, "psns_seen": len(pdc.psns),
        "psn_range": rng, "coverage": round(len(pdc.psns) / rng, 4) if rng else None,
        "frames": pdc.counts["frames"], "counts": {k: pdc.counts[k] for k in COUNT_KEYS},
        "messages": {"ids": sorted(pdc.msg_ids), "som": pdc.som, "eom": pdc.eom},
        "retransmissions": pdc.retx,
        "spurious_retransmissions": sum(r["verdict"] == "spurious" for r in pdc.retx),
        "nacks": pdc.nacks, "trims": pdc.trims, "phantom_acks": pdc.phantoms,
        "ecn": {"ce_marked": pdc.ce_frames.count, "first_ce_frame": pdc.ce_frames.first,
                "acks_with_m": pdc.m_frames.count, "first_m_frame": pdc.m_frames.first,
                "outstanding_before_m": before.value, "outstanding_after_m": after.value},
        "close": pdc.close, "violations": pdc.violations, "notes": pdc.notes,
    }


def to_json(intake: Intake, conv: Conversation) -> dict[str, Any]:
    pdcs = [pdc_json(p) for p in conv.pdcs]
    notes = [] if conv.uet_frames else [f"no UET found in {intake.frames} frame(s)"]
    notes += intake.notes  # frames not judged (intake's bounds)
    retx = [r for p in conv.pdcs for r in p.retx]
    return {
        "file": intake.name, "frames": intake.frames, "uet_frames": conv.uet_frames,
        "pdc_count": len(pdcs), "retransmissions": len(retx),
        "spurious_retransmissions": sum(r["verdict"] == "spurious" for r in retx),
        "retransmissions_after_intact_copy": sum(r["intact_copy_frame"] is not None for r in retx),
        "trimmed": conv.trimmed, "ce_marked": conv.ce_marked, "nacks": dict(sorted(conv.nacks.items())),
        "violations": sum(len(p["violations"]) for p in pdcs),
        "broken": [{"frame": b.frame, "reason": b.reason} for b in intake.broken],
        "broken_count": intake.broken_count,
        "other": dict(sorted(conv.other.items())), "stopped": intake.stopped, "notes": notes,
        "pdcs": pdcs,
    }


def _section(out: list[str], title: str, items: list[str]) -> None:
    out.append(f"  {title}")
    out.extend(f"    {s}" for s in items[:LIST_MAX])
    if len(items) > LIST_MAX:
        out.append(f"    ... and {len(items) - LIST_MAX} more (--json lists every one)")


def _pdc_text(d: dict[str, Any]) -> list[str]:
    tp = d["target_pdcid"]
    learned = f" (learned from frame {d['target_pdcid_frame']})" if tp is not None else ""
    out = [f"PDC {d['index']}: {d['initiator']} PDCID {d['initiator_pdcid']} -> {d['target']} "
           f"PDCID {tp if tp is not None else '?'}{learned}, {d['mode'] or 'mode unknown'}"]
    if d["first_psn"] is not None:
        start = f", start {d['start_psn']}" if d["start_psn"] is not None else ""
        out.append(f"  PSNs {d['first_psn']}..{d['last_psn']}: {d['psns_seen']} of {d['psn_range']}"
                   f" seen ({d['coverage'] * 100:.1f}%){start}")
    c = d["counts"]
    out.append(f"  frames {d['frames']}: {c['requests']} requests, {c['copies']} network copies, "
               f"{c['acks']} ACKs, {c['nacks']} NACKs, {c['control']} control")
    m = d["messages"]
    ids = ", ".join(map(str, m["ids"][:LIST_MAX])) + (" ..." if len(m["ids"]) > LIST_MAX else "")
    out.append(f"  messages: {len(m['ids'])} SES message id(s){' (' + ids + ')' if ids else ''}, "
               f"SOM {m['som']}, EOM {m['eom']}")
    cl = d["close"]
    if cl is not None:
        acked = f", ACKed in frame {cl['ack_frame']}" if cl["ack_frame"] else ", not ACKed"
        out.append(f"  CLOSE: PSN {cl['psn']} in frame {cl['frame']}{acked}")
    r = d["retransmissions"]
    _section(out, f"retransmissions: {len(r)} ({d['spurious_retransmissions']} spurious)",
             [f"frame {x['frame']}  PSN {x['psn']}  {x['verdict']}: {x['reason']}" for x in r])
    _section(out, f"trims: {len(d['trims'])}",
             [f"frame {t['frame']}  PSN {t['psn']}"
              + (f" (copy of frame {t['copy_of']})" if t["copy_of"] else "")
              + (f"  NACK in frame {t['nack_frame']}" if t["nack_frame"] else "  no NACK")
              for t in d["trims"]])
    _section(out, f"NACKs: {len(d['nacks'])}",
             [f"frame {n['frame']}  {n['code']}  PSN {n['psn']}  answers "
              + (f"frame {n['answers']}" if n["answers"] is not None else "no frame in the capture")
              for n in d["nacks"]])
    e = d["ecn"]
    line = f"  ECN: {e['ce_marked']} CE-marked request frame(s), {e['acks_with_m']} ACK(s) with M"
    if e["outstanding_before_m"] is not None and e["outstanding_after_m"] is not None:
        line += (f"; PSNs outstanding per new request: {e['outstanding_before_m']} before the "
                 f"first M (frame {e['first_m_frame']}), {e['outstanding_after_m']} after")
    out.append(line)
    _section(out, f"phantom ACKs: {len(d['phantom_acks'])}",
             [f"frame {x['frame']}  {len(x['psns'])} PSN(s), {x['why']}: "
              + ", ".join(map(str, x["psns"][:6])) + (" ..." if len(x["psns"]) > 6 else "")
              for x in d["phantom_acks"]])
    v = d["violations"]
    _section(out, f"violations: {len(v)}",
             [f"frame {x['frame']}  {x['rule']} {x['kind']}: {x['text']}" for x in v])
    if d["notes"]:
        _section(out, "notes:", d["notes"])
    return out


def to_text(report: dict[str, Any]) -> str:
    r = report
    out = [f"{r['file']}: {r['frames']} frame(s), {r['uet_frames']} UET, {r['pdc_count']} PDC(s)"]
    if r["stopped"]:
        out.append(f"reading stopped early: {r['stopped']}")
    out.extend(r["notes"])  # "no UET found in N frame(s)" when there was none
    nacks = ", ".join(f"{k} {v}" for k, v in r["nacks"].items()) or "none"
    out.append(f"totals: {r['retransmissions']} retransmission(s) ({r['spurious_retransmissions']} "
               f"spurious), {r['trimmed']} trimmed, {r['ce_marked']} CE-marked, NACKs: {nacks}, "
               f"{r['violations']} violation(s)")
    if r["other"]:
        out.append("outside PDCs: " + ", ".join(f"{k} {v}" for k, v in r["other"].items()))
    if r["broken_count"]:
        out.append(f"broken frames (skipped): {r['broken_count']}")
        out.extend(f"  frame {b['frame']}: {b['reason']}" for b in r["broken"][:LIST_MAX])
        if r["broken_count"] > LIST_MAX:
            listed = len(r["broken"])
            out.append(f"  ... and {r['broken_count'] - LIST_MAX} more (--json lists "
                       + ("every one)" if listed == r["broken_count"] else f"the first {listed})"))
    for d in r["pdcs"]:
        out.append("")
        out.extend(_pdc_text(d))
    return "\n".join(out) + "\n"
