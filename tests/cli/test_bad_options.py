"""Bad command lines (issue 11, item 9): every ``uet`` subcommand refuses a hostile option value
with exit status 2 and one readable line (plus a ``try 'uet X --help'`` hint), never a traceback,
and before it starts any work.

Each line runs in this process through :func:`uet.cli.main`, with the two ways a command starts
working (``trio.run`` for the live commands, the simulator for ``uet sim``) replaced by a stub
that fails the test: a value that slipped through must not get to run (or hang) here.
"""

from __future__ import annotations

import shlex

import pytest

from uet import cli

# (command line, what the message must name: the option, or the path of an output file)
BAD = [
    # uet sim
    ("uet sim --rtt nan", "--rtt"),
    ("uet sim --cc cubic", "--cc"),
    ("uet sim --topology leafspine:2,2,2 --csig bogus", "--csig"),
    ("uet sim --csig abw", "--csig"),
    ("uet sim --rtt inf", "--rtt"),
    ("uet sim --rtt -1", "--rtt"),
    ("uet sim --rtt 0", "--rtt"),
    ("uet sim --rtt 1e400", "--rtt"),
    ("uet sim --rate inf", "--rate"),
    ("uet sim --rate nan", "--rate"),
    ("uet sim --rate 0", "--rate"),
    ("uet sim --rate -1", "--rate"),
    ("uet sim --rate 1e300", "--rate"),
    ("uet sim --seed 99999999999999999999999", "--seed"),
    ("uet sim --seed 9223372036854775808", "--seed"),
    ("uet sim --seed -1", "--seed"),
    ("uet sim --seed abc", "--seed"),
    ("uet sim --window -5", "--window"),
    ("uet sim --window 0", "--window"),
    ("uet sim --window nan", "--window"),
    ("uet sim --window infk", "--window"),
    ("uet sim --window 1e400k", "--window"),
    ("uet sim --mtu 65536", "--mtu"),
    ("uet sim --mtu 16384", "--mtu"),
    ("uet sim --mtu 0", "--mtu"),
    ("uet sim --mtu -1", "--mtu"),
    ("uet sim --pcap /nonexistent/x.pcap", "/nonexistent/x.pcap"),
    ("uet sim --pcap /", "/"),
    ("uet sim --pcap ''", "cannot write ''"),
    ("uet sim --messages 100000000 --bytes 1", "--messages"),
    ("uet sim --messages 5 --bytes 4", "--messages"),
    ("uet sim --messages 0", "--messages"),
    ("uet sim --bytes -5", "--bytes"),
    ("uet sim --bytes 2t", "--bytes"),
    ("uet sim --bytes 5g", "--bytes"),
    ("uet sim --bytes nan", "--bytes"),
    ("uet sim --bytes infm", "--bytes"),
    ("uet sim --paths 0", "--paths"),
    ("uet sim --paths 100000", "--paths"),
    ("uet sim --paths 4 --fail-path 99@50", "--fail-path"),
    ("uet sim --paths 4 --fail-path 4@0", "--fail-path"),
    ("uet sim --fail-path 1@nan", "--fail-path"),
    ("uet sim --fail-path -1@5", "--fail-path"),
    ("uet sim --fail-path 1@-5", "--fail-path"),
    ("uet sim --fail-path 1@inf", "--fail-path"),
    ("uet sim --fail-path x", "--fail-path"),
    ("uet sim --loss nan", "--loss"),
    ("uet sim --loss 2", "--loss"),
    ("uet sim --trim -0.1", "--trim"),
    ("uet sim --reorder inf", "--reorder"),
    ("uet sim --dup 1.5", "--dup"),
    ("uet sim --corrupt nan", "--corrupt"),
    ("uet sim --entropies 0", "--entropies"),
    ("uet sim --entropies 100000", "--entropies"),
    ("uet sim --mode uud --op write", "--op"),
    ("uet sim --mode bogus", "--mode"),
    ("uet sim --bogus", "--bogus"),
    # uet send
    ("uet send --bytes -5", "--bytes"),
    ("uet send --paths 0", "--paths"),
    ("uet send --timeout -1", "--timeout"),
    ("uet send --local 127.0.0.300", "--local"),
    ("uet send --job -1", "--job"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --paths 100000", "--paths"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --timeout 0", "--timeout"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --timeout nan", "--timeout"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --timeout inf", "--timeout"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --local ::1", "--local"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --job 16777216", "--job"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --message-size 0", "--message-size"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --message-size 2g", "--message-size"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --window 0", "--window"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --window -1", "--window"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --seed -1", "--seed"),
    ("uet send --to 127.0.0.1:0 --bytes 1k", "--to"),
    ("uet send --to 127.0.0.1:70000 --bytes 1k", "--to"),
    ("uet send --to 127.0.0.300 --bytes 1k", "--to"),
    ("uet send --to 127.0.0.1:9 /nonexistent/file", "/nonexistent/file"),
    ("uet send --to 127.0.0.1:9 /", "/"),
    ("uet send --to 127.0.0.1:9", "FILE or --bytes"),
    ("uet send --to 127.0.0.1:9 --bytes 1k --mode bogus", "--mode"),
    # uet recv
    ("uet recv --bind 127.0.0.1:70000", "--bind"),
    ("uet recv --bind 127.0.0.1:-1", "--bind"),
    ("uet recv --bind 127.0.0.300:0", "--bind"),
    ("uet recv --bind 127.0.0.1:0 --out /nonexistent/x", "/nonexistent/x"),
    ("uet recv --bind 127.0.0.1:0 --out /", "/"),
    ("uet recv --bind 127.0.0.1:0 --out ''", "cannot write ''"),
    ("uet recv --bind 127.0.0.1:0 --out - --json", "--out"),
    ("uet recv --bind 127.0.0.1:0 --count -1", "--count"),
    ("uet recv --bind 127.0.0.1:0 --paths 0", "--paths"),
    ("uet recv --bind 127.0.0.1:0 --paths 100000", "--paths"),
    ("uet recv --bind 127.0.0.1:0 --max-pdcs 0", "--max-pdcs"),
    ("uet recv --bind 127.0.0.1:0 --max-pdcs 100000", "--max-pdcs"),
    ("uet recv --bind 127.0.0.1:0 --linger -1", "--linger"),
    ("uet recv --bind 127.0.0.1:0 --linger nan", "--linger"),
    ("uet recv --bind 127.0.0.1:0 --seed -1", "--seed"),
    ("uet recv --bind 127.0.0.1:0 --seed 99999999999999999999999", "--seed"),
    # uet fabric
    ("uet fabric --to 127.0.0.1:9 --duration -1", "--duration"),
    ("uet fabric --to 127.0.0.1:9 --duration nan", "--duration"),
    ("uet fabric --to 127.0.0.1:9 --duration inf", "--duration"),
    ("uet fabric --to 127.0.0.1:9 --paths 4 --fail-path 99@50", "--fail-path"),
    ("uet fabric --to 127.0.0.1:9 --paths 0", "--paths"),
    ("uet fabric --to 127.0.0.1:9 --rate 0", "--rate"),
    ("uet fabric --to 127.0.0.1:9 --rate nan", "--rate"),
    ("uet fabric --to 127.0.0.1:9 --rtt -1", "--rtt"),
    ("uet fabric --to 127.0.0.1:9 --rtt inf", "--rtt"),
    ("uet fabric --to 127.0.0.1:9 --loss 2", "--loss"),
    ("uet fabric --to 127.0.0.1:9 --seed -1", "--seed"),
    ("uet fabric --to 127.0.0.1:9 --seed 99999999999999999999999", "--seed"),
    ("uet fabric --to 127.0.0.1:9 --reorder-delay -1", "--reorder-delay"),
    ("uet fabric --to 127.0.0.1:9 --reorder-delay nan", "--reorder-delay"),
    ("uet fabric --to 127.0.0.1:9 --skew inf", "--skew"),
    ("uet fabric --to 127.0.0.1:9 --queue 0", "--queue"),
    ("uet fabric --to 127.0.0.1:9 --queue -1", "--queue"),
    ("uet fabric --to 127.0.0.1:9 --kmin -1", "--kmin"),
    ("uet fabric --to 127.0.0.1:9 --kmin 1m", "--kmax"),
    ("uet fabric --to 127.0.0.1:9 --kmax 1k", "--kmax"),
    ("uet fabric --to 127.0.0.1:9 --back 127.0.0.300", "--back"),
    ("uet fabric --to [::1]:9 --back 127.0.0.1", "--back"),
    ("uet fabric --to 127.0.0.1:9 --pcap /nonexistent/x.pcap", "/nonexistent/x.pcap"),
    ("uet fabric --to 127.0.0.1:9 --pcap ''", "cannot write ''"),
    ("uet fabric --to 127.0.0.1:9 --interval -1", "--interval"),
    ("uet fabric --to 127.0.0.1:9 --interval nan", "--interval"),
    ("uet fabric --to 127.0.0.1:0", "--to"),
    ("uet fabric --to 127.0.0.1:9 --listen 127.0.0.1:70000", "--listen"),
    ("uet fabric --to 127.0.0.1:9 --ecmp bogus", "--ecmp"),
    ("uet fabric", "--to"),
    # uet demo
    ("uet demo --capture /nonexistent/x.pcap", "/nonexistent/x.pcap"),
    ("uet demo --capture ''", "cannot write ''"),
    ("uet demo --paths 4 --fail-path 99@50", "--fail-path"),
    ("uet demo --rtt nan", "--rtt"),
    ("uet demo --rtt -1", "--rtt"),
    ("uet demo --rate inf", "--rate"),
    ("uet demo --seed 99999999999999999999999", "--seed"),
    ("uet demo --window -5", "--window"),
    ("uet demo --mtu 65536", "--mtu"),
    ("uet demo --mtu 16384", "--mtu"),
    ("uet demo --messages 100000000 --bytes 1", "--messages"),
    ("uet demo --messages 3 --bytes 2", "--messages"),
    ("uet demo --bytes -5", "--bytes"),
    ("uet demo --bytes 5g", "--bytes"),
    ("uet demo --timeout -1", "--timeout"),
    ("uet demo --timeout nan", "--timeout"),
    ("uet demo --timeout 0", "--timeout"),
    ("uet demo --host 127.0.0.300", "--host"),
    ("uet demo --entropies 0", "--entropies"),
    ("uet demo --entropies 100000", "--entropies"),
    ("uet demo --paths 0", "--paths"),
    ("uet demo --loss nan", "--loss"),
    ("uet demo --no-fabric --loss 0.1", "--loss"),
    # uet wireshark
    ("uet wireshark -o /nonexistent/x.lua", "/nonexistent/x.lua"),
    ("uet wireshark -o /", "/"),
    ("uet wireshark -o ''", "cannot write ''"),
    ("uet wireshark --port 70000", "--port"),
    ("uet wireshark --port 0", "--port"),
    ("uet wireshark --port -1", "--port"),
    ("uet wireshark --name 'A B'", "--name"),
    ("uet wireshark --name ''", "--name"),
    # uet decode (its options; reading the file is _cmd_decode's)
    ("uet decode /dev/null --port 70000", "--port"),
    ("uet decode /dev/null --port 0", "--port"),
    ("uet decode /dev/null --rsv-pdc-bit 81", "--rsv-pdc-bit"),
    ("uet decode /dev/null --trailer bogus", "--trailer"),
    ("uet decode /dev/null --csig-ethertype zz", "--csig-ethertype"),
    ("uet decode /dev/null --csig-ethertype 0x0800", "--csig-ethertype"),
    ("uet decode /dev/null --csig-ethertype 0x10000", "--csig-ethertype"),
    ("uet decode", "file"),
    # uet sweep (issue 30)
    ("uet sweep tools/bench_cc.toml --out /tmp/x --run-timeout 0", "--run-timeout"),
    ("uet sweep tools/bench_cc.toml --out /tmp/x --run-timeout nan", "--run-timeout"),
    ("uet sweep tools/bench_cc.toml --out /tmp/x --workers 0", "--workers"),
    ("uet sweep tools/bench_cc.toml", "--out"),
    ("uet sweep /nonexistent/s.toml --out /tmp/x", "/nonexistent/s.toml"),
    ("uet sweep tools/bench_cc.toml --out /dev/null", "--out"),
    ("uet sweep tools/bench_cc.toml --out /tmp/x --workers 2 --scheduler tcp://h:1", "--workers"),
    ("uet bogus", "bogus"),
]


class Ran(Exception):
    """Raised by the stubs: the command got as far as starting its work."""


@pytest.fixture
def no_runs(monkeypatch):
    import trio

    import uet.sim.command

    def ran(*a: object, **kw: object) -> None:
        raise Ran()

    monkeypatch.setattr(trio, "run", ran)
    monkeypatch.setattr(uet.sim.command, "Simulator", ran)


def run_uet(line: str, capsys) -> tuple[int | str, str, str]:
    argv = shlex.split(line)[1:]
    try:
        rc: int | str = cli.main(argv)
    except SystemExit as exc:  # main returns the status; SystemExit is a failure here too
        rc = f"SystemExit({exc.code})"
    except Ran:
        rc = "started running"
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("line,needle", BAD, ids=[line for line, _ in BAD])
def test_bad_option_is_one_line_and_status_2(line, needle, capsys, no_runs):
    rc, out, err = run_uet(line, capsys)
    lines = err.splitlines()
    assert rc == 2, (rc, err)
    assert "Traceback" not in err
    assert 1 <= len(lines) <= 2, err
    sub = line.split()[1]
    prog = "uet" if sub == "bogus" else f"uet {sub}"
    assert lines[0].startswith(f"{prog}: "), lines[0]
    assert needle in lines[0], lines[0]
    if len(lines) == 2:
        assert lines[1] == f"try '{prog} --help'"
    assert out == ""


def test_error_line_and_hint_exactly(capsys, no_runs):
    rc, _, err = run_uet("uet sim --rtt nan", capsys)
    assert rc == 2
    assert err == ("uet sim: error: argument --rtt: nan: a finite time in microseconds, 0 or "
                   "more, e.g. 10\ntry 'uet sim --help'\n")
    # CLIOPTS-C1 of uet.cliopts: --rtt parses as uet fabric's (0 or more); the simulator refuses 0 after
    rc, _, err = run_uet("uet sim --rtt 0", capsys)
    assert rc == 2
    assert err == ("uet sim: error: argument --rtt: 0: the simulator needs a positive round-trip "
                   "time in microseconds, e.g. 10\ntry 'uet sim --help'\n")
    rc, _, err = run_uet("uet sim --pcap /nonexistent/x.pcap", capsys)
    assert rc == 2
    assert err == "uet sim: cannot write /nonexistent/x.pcap: No such file or directory\n"


def test_a_refused_output_file_is_not_created(tmp_path, capsys, no_runs):
    out = tmp_path / "run.pcap"
    rc, _, err = run_uet(f"uet sim --pcap {out} --paths 2 --fail-path 2@0", capsys)
    assert rc == 2 and "--fail-path" in err
    assert not out.exists()


# the bounds themselves are accepted (parsing and the checks after it, nothing runs)
GOOD = [
    "uet sim --mtu 16383 --mtu 1",
    "uet sim --seed 0 --seed 9223372036854775807",
    "uet sim --paths 4 --fail-path 3@0 --fail-path 0@250ms",
    "uet sim --bytes 0 --messages 1",
    "uet sim --bytes 5 --messages 5",
    "uet sim --op atomic --messages 100 --bytes 8",
    "uet sim --rtt 250ms --rate 0.001 --window 1 --loss 0 --trim 1",
    "uet sim --bytes 4g --entropies 16384 --paths 256",
    "uet demo --rtt 0 --entropies 256 --host ::1",
    "uet fabric --to 127.0.0.1:65535 --listen 127.0.0.1:0 --duration 0 --interval 0 --rtt 0",
    "uet fabric --to 127.0.0.1:9 --kmin 1m --kmax 2m --queue 1",
    "uet send --to 127.0.0.1:1 --bytes 1t --job 16777215 --message-size 1g --timeout 0.001",
    "uet recv --bind 127.0.0.1:0 --count 0 --max-pdcs 65535 --linger 0 --seed 0",
    "uet wireshark --port 65535 --name uet_2",
    "uet decode /dev/null --port 1 --port 65535",
]


@pytest.mark.parametrize("line", GOOD)
def test_bounds_are_accepted(line):
    from uet import cliargs

    args = cli.build_parser().parse_args(shlex.split(line)[1:])
    if args.command in ("sim", "demo"):
        cliargs.check_transfer(args)
    if args.command == "fabric":
        cliargs.check_fail_paths(args)


def test_largest_mtu_runs(capsys):
    """The largest payload a 14-bit SES payload_length carries moves a multi-packet message."""
    import json

    assert cli.main(["sim", "--mtu", "16383", "--bytes", "64k", "--json", "--seed", "3"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["ok"] is True and s["bytes"] == 65536 and s["data_packets"] >= 5
