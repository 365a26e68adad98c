"""Helpers for the Wireshark tests (imported by the test modules of this folder): run tshark with the generated dissector, read its PDML, and
compare it field by field with ``uet decode --json``."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from uet.wire import net_headers as NH
from uet.wire import roce_headers as R
from uet.wire import uet_headers as U
from uet.wire.codec import codec
from uet.wire.schema import Options
from uet.wireshark import lua as L
from uet.wireshark.tshark import Tshark, probe, tshark_command

from tests.interop_paths import INTEROP, needs_interop  # noqa: F401 (for the test modules)

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
TSHARK = shutil.which("tshark")
NEEDS_TSHARK = pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH "
                                  "(Debian: apt-get install tshark); the Wireshark tests need it")


def load_make_captures():
    """tools/make_captures.py as a module."""
    spec = importlib.util.spec_from_file_location("make_captures", ROOT / "tools" / "make_captures.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules.setdefault("make_captures", mod)
    spec.loader.exec_module(mod)
    return mod


def uet_decode_json(pcap: Path, *args: str) -> list[dict]:
    """``uet decode --json FILE [args]``, run in-process through the CLI entry point."""
    from uet import cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["decode", "--json", str(pcap), *args])
    assert rc == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


# --- tshark and PDML -------------------------------------------------------------------------


@dataclass
class Packet:
    number: int
    fields: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # abbr -> attrs, in order
    experts: list[tuple[str, str]] = field(default_factory=list)  # (expert abbr, message)
    protos: list[str] = field(default_factory=list)


@dataclass
class TsharkRun:
    packets: list[Packet]
    stderr: str
    returncode: int
    pdml: str


@functools.lru_cache(maxsize=None)
def tshark_env() -> Tshark:
    """The tshark on PATH as :func:`uet.wireshark.tshark.probe` finds it: version, Lua, whether it
    runs user scripts as root, whether it has a built-in ``uet`` (then the plugin is ``uetref``)."""
    return probe(TSHARK)


def plugin_name() -> str:
    """``uet``, or ``uetref`` in a tshark with a built-in ``uet`` dissector."""
    return tshark_env().name


@contextlib.contextmanager
def _readable_by(run_as: tuple[int, int] | None, paths: Sequence[Path | str]) -> Iterator[list[str]]:
    """The paths as they are, or (when tshark runs as another user) copies in a world-readable
    temporary folder: pytest's folders are private to root."""
    if run_as is None:
        yield [str(p) for p in paths]
        return
    with tempfile.TemporaryDirectory(prefix="uet-tshark-") as tmp:
        Path(tmp).chmod(0o755)
        out = []
        for i, p in enumerate(paths):
            dst = Path(tmp) / f"{i}-{Path(p).name}"
            shutil.copyfile(p, dst)
            dst.chmod(0o644)
            out.append(str(dst))
        yield out


def tshark_proc(pcap: Path | str, scripts: Sequence[Path | str], prefs: Sequence[str] = (),
                output: str | None = "pdml", extra: Sequence[str] = (),
                run_as: tuple[int, int] | None | str = "auto") -> subprocess.CompletedProcess:
    """tshark over ``pcap`` with ``scripts`` loaded, on whatever Wireshark is installed: as an
    unprivileged user when this build ignores ``-X lua_script`` for root (``run_as="auto"``), and
    skipped (with what to do) when that is impossible."""
    env = tshark_env()
    why = env.usable
    if why:
        pytest.skip(why)
    who = env.run_as if run_as == "auto" else run_as
    with _readable_by(who, [pcap, *scripts]) as paths:  # type: ignore[arg-type]
        cmd = tshark_command(paths[0], paths[1:], output=output, tshark=env.exe, prefs=prefs,
                             run_as=who)  # type: ignore[arg-type]
        return subprocess.run(cmd + list(extra), capture_output=True, text=True, timeout=300)


def run_tshark(pcap: Path | str, scripts: list[Path | str], prefs: tuple[str, ...] = (),
               own: tuple[str, ...] | None = None,
               run_as: tuple[int, int] | None | str = "auto") -> TsharkRun:
    own = own if own is not None else (plugin_name(), "uetroce")
    proc = tshark_proc(pcap, scripts, prefs, run_as=run_as)
    return TsharkRun(parse_pdml(proc.stdout, own), proc.stderr, proc.returncode, proc.stdout)


def stderr_problems(stderr: str) -> list[str]:
    """stderr lines other than the root warning."""
    return [ln for ln in stderr.splitlines()
            if ln.strip() and "Running as user" not in ln and "This could be dangerous" not in ln]


def parse_pdml(text: str, own: tuple[str, ...]) -> list[Packet]:
    root = ET.fromstring(text) if text.strip() else ET.Element("pdml")
    out = []
    for i, pkt in enumerate(root.iter("packet"), 1):
        p = Packet(i)
        for proto in pkt.iter("proto"):
            p.protos.append(proto.get("name", ""))
        for proto in pkt.findall("proto"):
            if proto.get("name") not in own:
                continue
            for el in proto.iter("field"):
                n = el.get("name", "")
                if n == "_ws.expert":
                    names = [c.get("name", "") for c in el.findall("field")]
                    msg = next((c.get("show", "") for c in el.findall("field")
                                if c.get("name") == "_ws.expert.message"), "")
                    tag = next((x for x in names if ".expert." in x), "")
                    p.experts.append((tag, msg))
                    continue
                if n.startswith("_ws.") or not n:
                    continue
                p.fields.setdefault(n, []).append(dict(el.attrib))
        out.append(p)
    return out


# --- expected fields from the JSON -----------------------------------------------------------

_ENUM_NAME = re.compile(r": (.*) \((?:0x)?[0-9A-Fa-f]+\)$")


@dataclass
class Expect:
    abbr: str
    value: Any
    kind: str  # "bool" "int" "bytes" "enum-name" "str"
    where: str


def _header_expect(h, fields: dict, pn: str, rn: str, opts: Options, where: str,
                   cn: str = "uetcsig") -> list[Expect]:
    out: list[Expect] = []
    ints = {k: int(v) for k, v in fields.items() if isinstance(v, (int, bool))}
    var = codec(h).variant_for_fields(ints, opts)
    used = set()
    for p in var.placed:
        if p.field.reserved or p.name not in fields:
            continue
        fd = L.plan().field_for(h.key, p)
        abbr = f"{L.field_prefix(fd.proto, pn, rn, cn)}.{fd.suffix}"
        v = fields[p.name]
        used.add(p.name)
        if p.field.flag:
            out.append(Expect(abbr, bool(v), "bool", where))
        elif fd.spec.ctor == "bytes":
            out.append(Expect(abbr, v, "bytes", where))
        else:
            out.append(Expect(abbr, v, "int", where))
        if p.field.enum is not None:
            used.add(p.name + "_name")
            out.append(Expect(abbr, fields.get(p.name + "_name"), "enum-name", where))
    for d in h.derived:
        if d.name in fields:
            used.add(d.name)
            pref = pn if L.proto_of(h) == "uet" else rn
            out.append(Expect(f"{pref}.{L.json_path(h)}.{d.name}", fields[d.name], "int", where))
    if h.key == "roce.aeth" and "syndrome_name" in fields:
        used.add("syndrome_name")
        out.append(Expect(f"{rn}.aeth.syndrome_name", fields["syndrome_name"], "str", where))
    left = set(fields) - used - {"atomic", "cswap", "rendezvous"}
    assert not left, f"{where}: JSON keys {sorted(left)} of {h.key} not mapped to Wireshark fields"
    return out


def expected_fields(obj: dict, pn: str = "uet", rn: str = "uetroce",
                    opts: Options | None = None, cn: str = "uetcsig") -> list[Expect]:
    opts = opts or Options()
    out: list[Expect] = []
    if "csig" in obj:
        out += _header_expect(NH.CSIG, obj["csig"], pn, rn, opts, "csig", cn)
    if "uet" in obj:
        u = obj["uet"]
        if "entropy" in u:
            out += _header_expect(U.ENTROPY, u["entropy"], pn, rn, opts, "entropy")
        if "tss" in u:
            out += _header_expect(U.TSS, u["tss"], pn, rn, opts, "tss")
        pds = u.get("pds")
        if pds is not None:
            h = U.PDS_BY_TYPE.get(pds.get("type"))
            if h is None:
                out.append(Expect(f"{pn}.pds.type", pds["type"], "int", "pds"))
            else:
                out += _header_expect(h, pds, pn, rn, opts, "pds")
        ses = u.get("ses")
        if ses is not None:
            sh = U.SES_BY_NEXT_HDR[pds["next_hdr"]]
            out += _header_expect(sh, ses, pn, rn, opts, "ses")
            for ext in (U.SES_ATOMIC, U.SES_CSWAP, U.SES_RENDEZVOUS):
                if ext.short in ses:
                    out += _header_expect(ext, ses[ext.short], pn, rn, opts, f"ses.{ext.short}")
        if "payload_len" in u:
            out.append(Expect(f"{pn}.payload_len", u["payload_len"], "int", "uet"))
        crc = u.get("crc") or {}
        if crc.get("value") is not None:
            out.append(Expect(f"{pn}.crc.value", crc["value"], "int", "crc"))
        if crc.get("ok") is not None:
            out.append(Expect(f"{pn}.crc.ok", crc["ok"], "bool", "crc"))
    if "roce" in obj:
        r = obj["roce"]
        by_short = {h.short: h for h in R.ROCE_HEADERS}
        for k, v in r.items():
            if k in by_short:
                out += _header_expect(by_short[k], v, pn, rn, opts, k)
        if "payload_len" in r:
            out.append(Expect(f"{rn}.payload_len", r["payload_len"], "int", "roce"))
        icrc = r.get("icrc") or {}
        if icrc.get("value") is not None:
            out.append(Expect(f"{rn}.icrc.value", icrc["value"], "int", "icrc"))
        if icrc.get("ok") is not None:
            out.append(Expect(f"{rn}.icrc.ok", icrc["ok"], "bool", "icrc"))
    return out


def _shown(e: Expect, attrs: dict[str, str]) -> Any:
    show = attrs.get("show", "")
    if e.kind == "bool":
        return show in ("1", "True", "true")
    if e.kind == "int":
        return int(show, 0)
    if e.kind == "bytes":
        return int(show.replace(":", "") or "0", 16)
    if e.kind == "enum-name":
        m = _ENUM_NAME.search(attrs.get("showname", ""))
        name = m.group(1) if m else None
        return None if name == "Unknown" else name
    return show


#: transport-level problems (the ones the dissector reports); ip/udp/link problems are Wireshark's
_TRANSPORT_PROBLEM = re.compile(r"^(pds|ses|tss|entropy|crc|icrc|roce|csig)\b")


def compare(obj: dict, pkt: Packet, pn: str = "uet", rn: str = "uetroce",
            opts: Options | None = None, cn: str = "uetcsig") -> list[str]:
    """Differences between one ``uet decode --json`` object and the dissector's view of the frame
    (the CSIG tag's fields too when ``cn`` is among the protocols ``pkt`` was read with)."""
    bad: list[str] = []
    exp = expected_fields(obj, pn, rn, opts, cn)
    want: dict[str, list[Expect]] = {}
    for e in exp:
        want.setdefault(e.abbr, []).append(e)
    for abbr, es in want.items():
        got = pkt.fields.get(abbr)
        if not got:
            bad.append(f"{abbr}: missing (JSON {es[0].where} has {es[0].value!r})")
            continue
        values = [e for e in es if e.kind != "enum-name"]
        names = [e for e in es if e.kind == "enum-name"]
        if len(got) != len(values):
            bad.append(f"{abbr}: shown {len(got)} times, JSON has it {len(values)} times")
            continue
        for e, attrs in zip(values, got):
            shown = _shown(e, attrs)
            if shown != e.value:
                bad.append(f"{abbr}: tshark {shown!r} != JSON {e.value!r} ({attrs.get('showname')})")
        for e, attrs in zip(names, got):
            shown = _shown(e, attrs)
            if shown != e.value:
                bad.append(f"{abbr}: tshark name {shown!r} != JSON {e.value!r}")
    # the other way round: every schema field tshark shows is in the JSON
    known = header_abbreviations(pn, rn, cn)
    for abbr in pkt.fields:
        if abbr in known and abbr not in want:
            bad.append(f"{abbr}: shown by tshark ({pkt.fields[abbr][0].get('showname')}), not in the JSON")
    # problems == expert infos (same texts)
    probs = sorted(p for p in obj.get("problems", []) if _TRANSPORT_PROBLEM.match(p))
    experts = sorted(msg for tag, msg in pkt.experts
                     if tag and not tag.endswith(".trimmed") and not tag.endswith(".builtin"))
    if probs != experts:
        bad.append(f"problems {probs} != expert infos {experts}")
    return bad


def header_abbreviations(pn: str = "uet", rn: str = "uetroce", cn: str = "uetcsig") -> set[str]:
    out = set()
    for fd in L.plan().fields:
        out.add(f"{L.field_prefix(fd.proto, pn, rn, cn)}.{fd.suffix}")
    for h in L.UET_HEADERS + L.ROCE_HEADERS:
        for d in h.derived:
            out.add(f"{pn if L.proto_of(h) == 'uet' else rn}.{L.json_path(h)}.{d.name}")
    out |= {f"{pn}.payload_len", f"{pn}.crc.value", f"{pn}.crc.ok", f"{rn}.payload_len",
            f"{rn}.icrc.value", f"{rn}.icrc.ok", f"{rn}.aeth.syndrome_name"}
    return out


@pytest.fixture(scope="session")
def lua_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lua") / "uet.lua"
    path.write_text(L.generate_lua(), encoding="utf-8")
    return path
