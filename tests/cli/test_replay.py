"""The CLI built from its parser (issue 28, item 5): the options ``uet sim``, ``uet demo``, ``uet
fabric``, ``uet send`` and ``uet recv`` share are declared once (uet.cliopts), and a replay line
is generated from the parser and the parsed namespace (uet.cliargs.replay_words): parsed again,
it gives the same namespace, whatever the option values (hypothesis)."""

from __future__ import annotations

import argparse
import shlex

import pytest
from hypothesis import given, settings, strategies as st

from uet import cli, cliargs
from uet.demo import command as demo_command
from uet.demo.options import resolve
from uet.sim import command as sim_command


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _actions(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in p._actions for o in a.option_strings}


# (option, the commands that have it): one type, one help text, one set of choices in all of them
SHARED = [
    ("--rtt", ("sim", "demo", "fabric")),  # CLIOPTS-C1 of uet.cliopts: fabric's type, which takes 0
    ("--paths", ("sim", "demo", "fabric")),
    ("--rate", ("sim", "fabric")),
    ("--loss", ("sim", "fabric")),
    ("--reorder", ("sim", "demo", "fabric")),
    ("--dup", ("sim", "demo", "fabric")),
    ("--corrupt", ("sim", "demo", "fabric")),
    ("--fail-path", ("sim", "demo", "fabric")),
    ("--degrade-path", ("demo", "fabric")),
    ("--messages", ("sim", "demo")),
    ("--window", ("sim", "demo", "send")),
    ("--ses-header", ("sim", "demo", "send")),
    ("--spray", ("demo", "send", "recv")),
    ("--cc-rate", ("send", "recv")),
    ("--cc-rtt", ("send", "recv")),
    ("--cc", ("demo", "send", "recv", "sim")),
    ("--csig", ("sim", "demo", "fabric", "send", "recv")),
    ("--tss-mode", ("sim", "demo", "send", "recv")),
    ("--progress", ("demo", "send")),
]


@pytest.mark.parametrize("option,commands", SHARED, ids=[o for o, _ in SHARED])
def test_a_shared_option_is_declared_once(option, commands):
    subs = _subparsers()
    acts = [_actions(subs[c])[option] for c in commands]
    first = acts[0]
    for c, a in zip(commands, acts):
        assert (a.type, a.choices, a.nargs, type(a)) == (first.type, first.choices, first.nargs,
                                                         type(first)), c
        if option not in ("--cc", "--csig", "--spray"):  # these name what they do per command
            assert a.help == first.help, c


def test_rtt_takes_what_both_took_and_the_simulator_still_refuses_0(capsys):
    """C1: ``--rtt 0`` is a fabric without added delay (uet fabric, uet demo); the simulator
    refuses it after parsing, exit 2 as before."""
    subs = _subparsers()
    for c in ("sim", "demo", "fabric"):
        assert _actions(subs[c])["--rtt"].type("0") == 0.0
    assert sim_command.main(["--rtt", "0"]) == 2
    assert "argument --rtt: 0: the simulator needs a positive" in capsys.readouterr().err


# --- every option and default kept ---------------------------------------------------------------

# every option of the transfer commands and its default, as at 1338ee7 (before uet.cliopts)
KEPT = {
    "sim": (
        '--ack-every-packet --buffer --bytes --cc --corrupt --csig --degrade-link --dup '
        '--ecn-point --ecn-ramp --entropies --epoch-file --fabric-engine --fail-link --fail-path '
        '--json '
        '--link-delay --loss --messages --mode --mtu --no-progress --no-trim --op --paths --pcap '
        '--progress --rate '
        '--reorder --reps-recycle --rtt --sd-key --sdi --seed --ses-header --spray --topology '
        '--trace --traffic --trim --trim-bytes --trim-victim '
        '--tss --tss-aad --tss-kdf-l --tss-mode --window',
        {'ack_every_packet': False, 'buffer': None, 'bytes': 4194304, 'cc': None,
         'corrupt': 0.0, 'csig': None, 'degrade_link': [], 'dup': 0.0, 'ecn_point': 'dequeue',
         'ecn_ramp': None,
         'entropies': 64, 'epoch_file': None, 'fabric_engine': None, 'fail_link': [],
         'fail_path': [], 'json': False, 'link_delay': None, 'loss': 0.0, 'messages': 1, 'mode': 'rud',
         'mtu': 4096, 'no_trim': False, 'op': 'send', 'paths': None, 'pcap': None,
         'progress': None, 'rate': 100.0, 'reorder': 0.0, 'reps_recycle': 'acked', 'rtt': 10.0,
         'sd_key': None, 'sdi': 1, 'seed': 1,
         'ses_header': 'auto', 'spray': None, 'topology': None, 'trace': False,
         'traffic': None, 'trim': 0.0, 'trim_bytes': 256, 'trim_victim': 'either', 'tss': False,
         'tss_aad': 'addresses', 'tss_kdf_l': 16, 'tss_mode': 'direct', 'window': None}),
    "demo": (
        '--bytes --capture --cc --corrupt --csig --degrade-path --dup --encap --entropies '
        '--epoch-file --fail-path --host --ip-proto --json --loss --messages --mode --mtu '
        '--no-fabric --no-progress --paths --pcap --progress --quiet --rate --reorder --rtt '
        '--sd-key --sdi --seed --ses-header --spray --timeout --trim --tss --tss-aad '
        '--tss-kdf-l --tss-mode --window -q',
        {'bytes': 16777216, 'capture': None, 'cc': 'fixed', 'corrupt': 0.0, 'csig': None,
         'degrade_path': [], 'dup': 0.0, 'encap': 'udp', 'entropies': None,
         'epoch_file': None, 'fabric': True, 'fail_path': [], 'host': '127.0.0.1',
         'ip_proto': 253, 'json': False, 'loss': None, 'messages': 1, 'mode': 'rud',
         'mtu': None, 'paths': 4, 'progress': None, 'quiet': False, 'rate': None,
         'reorder': 0.0, 'rtt': 10.0, 'sd_key': None, 'sdi': 1, 'seed': 1,
         'ses_header': 'auto', 'spray': 'rr', 'timeout': 60.0, 'trim': None, 'tss': False,
         'tss_aad': 'addresses', 'tss_kdf_l': 16, 'tss_mode': 'direct', 'window': None}),
    "fabric": (
        '--back --corrupt --csig --csig-interval --degrade-path --dup --duration --ecmp --encap '
        '--fail-path --interval --ip-proto --json --kmax --kmin --listen --loss --mtu '
        '--no-overflow-trim --paths --pcap --preserve-entropy --queue --rate --reorder '
        '--reorder-delay --rtt --seed --skew --to --topology --trim',
        {'back': None, 'corrupt': 0.0, 'csig': None, 'csig_interval': 1000.0,
         'degrade_path': [], 'dup': 0.0, 'duration': 0.0, 'ecmp': 'hash', 'encap': 'udp',
         'fail_path': [], 'interval': 1.0, 'ip_proto': 253, 'json': False, 'kmax': None,
         'kmin': None, 'listen': None, 'loss': 0.0, 'mtu': None, 'no_overflow_trim': False,
         'paths': 4, 'pcap': None, 'preserve_entropy': False, 'queue': 1048576,
         'rate': 100.0, 'reorder': 0.0, 'reorder_delay': None, 'rtt': 10.0, 'seed': 1,
         'skew': 0.0, 'to': None, 'topology': None, 'trim': 0.0}),
    "send": (
        '--bytes --cc --cc-rate --cc-rtt --csig --encap --epoch-file --ip-proto --job --json '
        '--local --message-size --mode --mtu --no-progress --paths --progress --sd-key --sdi '
        '--seed --ses-header --spray --timeout --to --tss-aad --tss-kdf-l --tss-mode --uet-port '
        '--window',
        {'bytes': None, 'cc': 'fixed', 'cc_rate': 10.0, 'cc_rtt': 1000.0, 'csig': None,
         'encap': 'udp', 'epoch_file': None, 'ip_proto': 253, 'job': 0, 'json': False,
         'local': None, 'message_size': 67108864, 'mode': 'rud', 'mtu': None, 'paths': 8,
         'progress': None, 'sd_key': None, 'sdi': 1, 'seed': 1, 'ses_header': 'auto',
         'spray': 'rr', 'timeout': None, 'to': None, 'tss_aad': 'addresses', 'tss_kdf_l': 16,
         'tss_mode': 'direct', 'uet_port': None, 'window': None}),
    "recv": (
        '--bind --cc --cc-rate --cc-rtt --count --csig --encap --epoch-file --ip-proto --json '
        '--linger --max-pdcs --mtu --out --paths --quiet --sd-key --sdi --seed --spray '
        '--tss-aad --tss-kdf-l --tss-mode -q',
        {'bind': ('0.0.0.0', 4793), 'cc': 'fixed', 'cc_rate': 10.0, 'cc_rtt': 1000.0,
         'count': 0, 'csig': None, 'encap': 'udp', 'epoch_file': None, 'ip_proto': 253,
         'json': False, 'linger': 1.0, 'max_pdcs': 1024, 'mtu': None, 'out': None,
         'paths': 1, 'quiet': False, 'sd_key': None, 'sdi': 1, 'seed': None, 'spray': 'rr',
         'tss_aad': 'addresses', 'tss_kdf_l': 16, 'tss_mode': 'direct'}),
}


@pytest.mark.parametrize("command", sorted(KEPT))
def test_every_option_and_default_is_kept(command):
    """The shared declarations changed where options are declared, not what the commands take:
    the same option strings, and a bare command line parses to the same defaults."""
    options, defaults = KEPT[command]
    p = _subparsers()[command]
    assert " ".join(sorted(o for a in p._actions for o in a.option_strings
                           if o not in ("-h", "--help"))) == options
    assert {a.dest: a.default for a in p._actions
            if a.option_strings and a.dest != "help"} == defaults


# --- replay lines ---------------------------------------------------------------------------------

def _num(lo: float, hi: float) -> st.SearchStrategy[str]:
    return st.floats(min_value=lo, max_value=hi, allow_nan=False).map(repr)


def _time() -> st.SearchStrategy[str]:  # µs, also with a unit (cliargs.micros)
    return st.one_of(_num(0.0, 1e9), _num(0.0, 1e3).map(lambda t: t + "ms"))


FRACTION = _num(0.0, 1.0)

COMMON = {  # option -> its words' strategy (None: a flag); sim and demo alike
    "--bytes": st.one_of(st.integers(1, 4 << 30).map(str), st.integers(1, 4096).map(lambda k: f"{k}k")),
    "--messages": st.integers(1, 1 << 20).map(str),
    "--mode": st.sampled_from(["rud", "rod"]),
    "--window": st.integers(1, 1 << 40).map(str),
    "--ses-header": st.sampled_from(["auto", "standard"]),
    "--paths": st.integers(1, 256).map(str),
    "--rate": _num(1e-6, 1e5),
    "--rtt": _time(),
    "--loss": FRACTION, "--trim": FRACTION, "--reorder": FRACTION, "--dup": FRACTION,
    "--corrupt": FRACTION,
    "--fail-path": st.tuples(st.integers(0, 255), _time()).map(lambda v: f"{v[0]}@{v[1]}"),
    "--spray": st.sampled_from(["rr", "random", "single", "reps", "oblivious"]),
    "--cc": st.sampled_from(["fixed", "nscc", "rccc"]),
    "--csig": st.sampled_from(["abw", "abw/c", "delay", "nqd"]),
    "--tss": None,
    "--sd-key": st.sampled_from(["k.key", "dir with space/k"]),
    "--sdi": st.integers(0, (1 << 24) - 1).map(str),
    "--tss-mode": st.sampled_from(["direct", "cluster", "server"]),
    "--tss-aad": st.sampled_from(["addresses", "header", "entropy"]),
    "--tss-kdf-l": st.sampled_from(["16", "32"]),
    "--epoch-file": st.just("e.epoch"),
    "--seed": st.integers(0, (1 << 63) - 1).map(str),
    "--json": None,
}
SIM = dict(COMMON, **{
    "--mtu": st.integers(1, 16383).map(str),
    "--mode": st.sampled_from(["rud", "rod", "rudi", "uud"]),
    "--op": st.sampled_from(["send", "tsend", "write", "read", "atomic"]),
    "--entropies": st.integers(1, 16384).map(str),
    "--topology": st.sampled_from(["paths:3", "leafspine:2,2,1", "fattree:4"]),
    "--traffic": st.sampled_from(["incast:3", "permutation", "all-to-all"]),
    "--ack-every-packet": None, "--no-trim": None, "--trace": None,
    "--link-delay": _time(),
    "--buffer": st.integers(1, 1 << 30).map(str),
    "--ecn-ramp": st.tuples(_num(0.0, 0.5), _num(0.5000001, 1.0)).map(",".join),
    "--trim-bytes": st.integers(1, 9000).map(str),
    "--degrade-link": st.tuples(_num(1e-6, 1.0)).map(lambda v: f"a0-c1:{v[0]}"),
    "--fail-link": _time().map(lambda t: f"e0-a1@{t}"),
    "--pcap": st.just("run.pcap"),
})
DEMO = dict(COMMON, **{
    "--mtu": st.integers(256, 16383).map(str),
    "--entropies": st.integers(1, 256).map(str),
    "--degrade-path": st.tuples(st.integers(0, 255), _num(1e-6, 1.0)).map(lambda v: f"{v[0]}:{v[1]}"),
    "--no-fabric": None,
    "--encap": st.sampled_from(["udp", "ip"]),
    "--ip-proto": st.integers(1, 255).map(str),
    "--capture": st.just("x.pcap"),
    "--host": st.sampled_from(["127.0.0.1", "127.0.0.9", "::1"]),
    "--timeout": _num(1e-3, 1e6),
    "--progress": None, "--no-progress": None, "--quiet": None,
})
REPEATABLE = {"--fail-path", "--degrade-path", "--degrade-link", "--fail-link"}


@st.composite
def command_lines(draw: st.DrawFn, options: dict) -> list[str]:
    words: list[str] = []
    for name in draw(st.lists(st.sampled_from(sorted(options)), max_size=12)):
        values = options[name]
        if values is None:
            words.append(name)
        else:
            for _ in range(draw(st.integers(1, 3)) if name in REPEATABLE else 1):
                words += [name, draw(values)]
    return words


def _same(a: argparse.Namespace, b: argparse.Namespace, leave_out: tuple[str, ...]) -> None:
    va = {k: v for k, v in vars(a).items() if k not in leave_out}
    vb = {k: v for k, v in vars(b).items() if k not in leave_out}
    assert va == vb


def _parser(add) -> argparse.ArgumentParser:
    p = cliargs.Parser(prog="test")
    add(p)
    return p


@settings(max_examples=300, deadline=None)
@given(command_lines(SIM))
def test_sim_replay_line_parses_to_the_same_namespace(words):
    p = _parser(sim_command.add_arguments)
    args = p.parse_args(words)
    try:
        sim_command.check_topology(args)  # resolves --paths, as run_command does first
    except cliargs.UsageError:
        pass
    line = shlex.split(sim_command.replay_command(args))
    assert line[:2] == ["uet", "sim"] and line[line.index("--seed") + 1] == str(args.seed)
    _same(p.parse_args(line[2:]), args, sim_command.REPLAY_LEAVES_OUT)


@settings(max_examples=300, deadline=None)
@given(command_lines(DEMO))
def test_demo_replay_line_parses_to_the_same_namespace(words):
    p = _parser(demo_command.add_arguments)
    args = p.parse_args(words)
    try:
        resolve(args)  # --loss, --trim and --rate as the run resolves them
    except ValueError:
        pass
    line = shlex.split(demo_command.replay_command(args))
    assert line[:2] == ["uet", "demo"] and line[line.index("--seed") + 1] == str(args.seed)
    _same(p.parse_args(line[2:]), args, demo_command.REPLAY_LEAVES_OUT)


def test_replay_line_has_the_changed_options_in_parser_order():
    p = _parser(sim_command.add_arguments)
    args = p.parse_args(["--seed", "3", "--fail-path", "1@250ms", "--loss", "0.5", "--json",
                         "--window", "64k", "--bytes", "4MiB", "--rate", "40"])
    sim_command.check_topology(args)
    assert sim_command.replay_command(args) == (
        "uet sim --window 65536 --paths 4 --rate 40 --loss 0.5 --fail-path 1@250000 --seed 3")


def test_demo_replay_names_what_the_run_resolved():
    p = _parser(demo_command.add_arguments)
    args = p.parse_args(["--no-fabric", "--tss", "--progress", "--quiet"])
    resolve(args)
    args.mtu = 8192  # as run_command resolves it from the route
    assert demo_command.replay_command(args) == (
        "uet demo --mtu 8192 --rate 0.25 --loss 0 --trim 0 --tss --seed 1 --no-fabric")
