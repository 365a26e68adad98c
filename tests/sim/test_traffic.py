"""The flows of many-host ``uet sim`` runs (uet/sim/traffic.py): the patterns, the ``--traffic``
type, and htsim connection matrices read and written."""

from __future__ import annotations

import argparse
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uet.sim.traffic import (MAX_FLOWS, Flow, Matrix, TrafficError, make_flows, parse_traffic,
                             read_matrix, write_matrix)

# --- patterns -----------------------------------------------------------------------------------


def test_incast_sends_from_hosts_1_to_n_into_host_0():
    flows = make_flows(parse_traffic("incast:3"), hosts=4, flow_bytes=4096, seed=1)
    assert flows == [Flow(1, 0, 4096, 0.0, 0), Flow(2, 0, 4096, 0.0, 1), Flow(3, 0, 4096, 0.0, 2)]


def test_incast_needs_n_plus_1_hosts():
    with pytest.raises(TrafficError) as e:
        make_flows(("incast", 16), hosts=8, flow_bytes=1, seed=1)
    assert str(e.value) == "incast:16 needs 17 hosts; the topology has 8"


@pytest.mark.parametrize("hosts", [2, 3, 4, 5, 7, 16, 61, 200])
@pytest.mark.parametrize("seed", [0, 1, 2, 99, (1 << 63) - 1])
def test_permutation_is_a_derangement(hosts, seed):
    flows = make_flows(("permutation", None), hosts=hosts, flow_bytes=100, seed=seed)
    assert [f.src for f in flows] == list(range(hosts))
    assert sorted(f.dst for f in flows) == list(range(hosts))
    assert all(f.src != f.dst and f.bytes == 100 and f.start_s == 0.0 for f in flows)
    assert [f.flow_id for f in flows] == list(range(hosts))


def test_permutation_is_reproducible_from_its_seed():
    def dsts(seed: int) -> list[int]:
        return [f.dst for f in make_flows(("permutation", None), hosts=50, flow_bytes=1,
                                          seed=seed)]
    assert dsts(7) == dsts(7)
    assert dsts(7) != dsts(8)
    assert [f.dst for f in make_flows(("permutation", None), hosts=2, flow_bytes=1,
                                      seed=3)] == [1, 0]


@pytest.mark.parametrize("hosts", [2, 3, 10, 33])
def test_all_to_all_is_every_ordered_pair(hosts):
    flows = make_flows(parse_traffic("all-to-all"), hosts=hosts, flow_bytes=8, seed=1)
    assert len(flows) == hosts * (hosts - 1)
    assert {(f.src, f.dst) for f in flows} == {(s, d) for s in range(hosts)
                                               for d in range(hosts) if s != d}
    assert [f.flow_id for f in flows] == list(range(len(flows)))
    assert all(f.start_s == 0.0 and f.bytes == 8 for f in flows)


@pytest.mark.parametrize("kind", ["permutation", "all-to-all"])
def test_patterns_between_hosts_need_two(kind):
    with pytest.raises(TrafficError, match=f"{kind} needs at least 2 hosts; the topology has 1"):
        make_flows((kind, None), hosts=1, flow_bytes=1, seed=1)


def test_the_flow_count_is_bounded():
    assert 1024 * 1023 <= MAX_FLOWS  # all-to-all on 1024 hosts runs
    with pytest.raises(TrafficError, match="all-to-all on 1025 hosts is 1049600 flows"):
        make_flows(("all-to-all", None), hosts=1025, flow_bytes=1, seed=1)


@pytest.mark.parametrize("flow_bytes", [0, -1, 1 << 41])
def test_pattern_flow_sizes_are_checked(flow_bytes):
    with pytest.raises(TrafficError, match="flow size"):
        make_flows(("incast", 1), hosts=2, flow_bytes=flow_bytes, seed=1)


# --- --traffic ----------------------------------------------------------------------------------

def test_parse_traffic_takes_the_patterns_and_files(tmp_path):
    m = tmp_path / "flows.cm"
    m.write_text("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 1\n")
    assert parse_traffic("incast:8") == ("incast", 8)
    assert parse_traffic("permutation") == ("permutation", None)
    assert parse_traffic("all-to-all") == ("all-to-all", None)
    assert parse_traffic(str(m)) == ("matrix", str(m))


@pytest.mark.parametrize("spec", ["incast:0", "incast:x", "incast", "incast:-1", "incast:+3",
                                  "incast:99999999", "foo", "", "Permutation"])
def test_parse_traffic_refuses_with_an_example(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # "foo" is not a file here
    with pytest.raises(argparse.ArgumentTypeError, match=r"e\.g\. incast:8") as e:
        parse_traffic(spec)
    assert "\n" not in str(e.value)


def test_parse_traffic_refuses_a_directory(tmp_path):
    with pytest.raises(argparse.ArgumentTypeError, match="not a pattern or a file"):
        parse_traffic(str(tmp_path))


def test_parse_traffic_plugs_into_argparse(tmp_path):
    p = argparse.ArgumentParser()
    p.add_argument("--traffic", type=parse_traffic)
    assert p.parse_args(["--traffic", "incast:2"]).traffic == ("incast", 2)


# --- matrices -----------------------------------------------------------------------------------

MATRIX = """\
Nodes 4
Connections 3
1->0 id 1 start 0 size 65536

  2->0   id 2 start 1000000 size 100
3->2 id 7 start 2500000000 size 1
"""


def test_a_matrix_is_read_with_its_sizes_and_start_times(tmp_path):
    path = tmp_path / "flows.cm"
    path.write_text(MATRIX)
    assert read_matrix(str(path)) == Matrix(4, [Flow(1, 0, 65536, 0.0, 0),
                                                Flow(2, 0, 100, 1e-6, 1),
                                                Flow(3, 2, 1, 2.5e-3, 6)])
    flows = make_flows(("matrix", str(path)), hosts=8, flow_bytes=999, seed=1)
    assert [f.bytes for f in flows] == [65536, 100, 1]  # flow_bytes is the pattern's only


def test_a_matrix_takes_comments_crlf_and_fields_in_any_order(tmp_path):
    path = tmp_path / "flows.cm"
    path.write_bytes(b"# made by hand\r\nConnections 1\r\nNodes 2\r\n\t0->1  size 5 start 1.5e3 "
                     b"id 3 \r\n")
    assert read_matrix(str(path)) == Matrix(2, [Flow(0, 1, 5, 1.5e-9, 2)])


def test_a_matrix_needs_as_many_hosts_as_its_nodes(tmp_path):
    path = tmp_path / "flows.cm"
    path.write_text(MATRIX)
    with pytest.raises(TrafficError, match="is for Nodes 4; the topology has 3 hosts"):
        make_flows(("matrix", str(path)), hosts=3, flow_bytes=1, seed=1)


def test_an_empty_matrix_does_not_run(tmp_path):
    path = tmp_path / "flows.cm"
    path.write_text("Nodes 4\nConnections 0\n")
    assert read_matrix(str(path)) == Matrix(4, [])
    with pytest.raises(TrafficError, match="no flows"):
        make_flows(("matrix", str(path)), hosts=4, flow_bytes=1, seed=1)


BAD = [  # (file text, line of the error, what the message says)
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0\n", 3, "expected 'SRC->DST id I start T size B', "
                                                      "got '1->0 id 1 start 0'"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size 10 size 10\n", 3, "expected"),
    ("Nodes 4\nConnections 1\n1->0 id 1 begin 0 size 10\n", 3, "expected"),
    ("Nodes 4\nConnections 1\n1 -> 0 id 1 start 0 size 10\n", 3, "expected"),
    ("Nodes 4\nConnections 1\nfoo\n", 3, "got 'foo'"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size x\n", 3, "size x: a byte count"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size 0\n", 3, "size 0: a byte count from 1"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size -5\n", 3, "size -5"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start -1 size 5\n", 3, "start -1: a time in picoseconds"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start nan size 5\n", 3, "start nan"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 1e99 size 5\n", 3, "start 1e99"),
    ("Nodes 4\nConnections 1\n1->0 id 0 start 0 size 5\n", 3, "id 0: a flow id from 1"),
    ("Nodes 4\nConnections 1\n1->0 id 1.5 start 0 size 5\n", 3, "id 1.5"),
    ("Nodes 4\nConnections 1\n-1->0 id 1 start 0 size 5\n", 3, "nodes are numbered 0 to 3"),
    ("Nodes 4\nConnections 1\n1->4 id 1 start 0 size 5\n", 3, "1->4: nodes are numbered 0 to 3"),
    ("Nodes 4\nConnections 1\n2->2 id 1 start 0 size 5\n", 3, "2->2: a flow from a node to itself"),
    ("Nodes 4\nConnections 2\n1->0 id 1 start 0 size 5\n\n2->0 id 1 start 0 size 5\n", 5,
     "id 1 again (first on line 3)"),
    ("Nodes 4\nConnections 2\n1->0 id 1 start 0 size 5\n", 2, "Connections 2 but 1 flow line"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size 5\n2->0 id 2 start 0 size 5\n", 4,
     "more flows than Connections 1"),
    ("Connections 1\n1->0 id 1 start 0 size 5\n", 2, "a flow before the 'Nodes N' line"),
    ("Nodes 4\n1->0 id 1 start 0 size 5\n", 2, "a flow before the 'Connections N' line"),
    ("Nodes 4\n\n", 2, "ends without a 'Connections N' line"),
    ("", 1, "ends without a 'Nodes N' line"),
    ("Nodes x\nConnections 1\n", 1, "expected 'Nodes N' with N from 1"),
    ("Nodes 0\nConnections 0\n", 1, "expected 'Nodes N'"),
    ("Nodes 4 5\nConnections 0\n", 1, "expected 'Nodes N'"),
    ("Nodes 4\nConnections -1\n", 2, "expected 'Connections N' with N from 0"),
    ("Nodes 4\nNodes 4\nConnections 0\n", 2, "a second 'Nodes' line (the first is line 1)"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size 5\nNodes 4\n", 4, "after the first flow"),
    ("Nodes 4\nConnections 1\n1->0 id 1 trigger 2 size 5\n", 3, "htsim's 'trigger' is not"),
    ("Nodes 4\nConnections 1\nTriggers 1\n", 3, "htsim's 'Triggers' is not"),
    ("Nodes 4\nConnections 1\n1->0 id 1 start 0 size 5 prio 3\n", 3, "htsim's 'prio' is not"),
    ("Nodes 4\nConnections 1\n1->0 id ١ start 0 size 5\n", 3, "id ١"),  # Arabic-Indic digit
    ("Nodes 4\nConnections 1\n1->0 id 1_0 start 0 size 5\n", 3, "id 1_0"),
]


@pytest.mark.parametrize("text, line, says", BAD)
def test_a_bad_matrix_names_the_file_and_line(text, line, says, tmp_path):
    path = tmp_path / "flows.cm"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TrafficError) as e:
        read_matrix(str(path))
    msg = str(e.value)
    assert msg.startswith(f"{path} line {line}: ") and says in msg, msg
    assert "\n" not in msg


def test_a_matrix_that_is_not_text_names_its_line(tmp_path):
    path = tmp_path / "flows.cm"
    path.write_bytes(b"Nodes 4\nConnections 1\n1->0 id 1 start 0 size \xff\n")
    with pytest.raises(TrafficError, match=r"line 3: size \ufffd"):
        read_matrix(str(path))


def test_a_long_bad_line_is_cut_short(tmp_path):
    path = tmp_path / "flows.cm"
    for line, shown in [("x" * 5000, "got '" + "x" * 77 + "...'"),
                        ("1->0 id 1 start 0 size " + "9" * 5000, "size " + "9" * 21 + "...: "),
                        ("1->0 id 1 start 0 size \x1b[31m", "size '\\x1b[31m': ")]:
        path.write_text("Nodes 4\nConnections 1\n" + line + "\n")
        with pytest.raises(TrafficError) as e:
            read_matrix(str(path))
        assert len(str(e.value)) < len(str(path)) + 150 and shown in str(e.value), str(e.value)


@pytest.mark.parametrize("name", ["missing.cm", ""])
def test_an_unreadable_matrix_is_a_traffic_error(name, tmp_path):
    with pytest.raises(TrafficError, match="cannot read"):
        read_matrix(str(tmp_path / name) if name else name)
    with pytest.raises(TrafficError, match="cannot read"):
        read_matrix(str(tmp_path))  # a directory
    with pytest.raises(TrafficError, match="cannot read"):
        read_matrix("a\0b")


def test_a_huge_matrix_file_is_refused_unread(tmp_path, monkeypatch):
    from uet.sim import traffic
    monkeypatch.setattr(traffic, "MAX_MATRIX_FILE_BYTES", 64)
    path = tmp_path / "flows.cm"
    path.write_text("Nodes 4\nConnections 0\n" + "\n" * 64)
    with pytest.raises(TrafficError, match="more than"):
        read_matrix(str(path))


def test_a_matrix_round_trips(tmp_path):
    path = tmp_path / "flows.cm"
    path.write_text(MATRIX)
    m = read_matrix(str(path))
    out = tmp_path / "again.cm"
    write_matrix(str(out), m.nodes, m.flows)
    assert read_matrix(str(out)) == m
    assert out.read_text() == ("Nodes 4\nConnections 3\n1->0 id 1 start 0 size 65536\n"
                               "2->0 id 2 start 1000000 size 100\n"
                               "3->2 id 7 start 2500000000 size 1\n")


def test_a_pattern_exports_as_a_matrix(tmp_path):
    flows = make_flows(("permutation", None), hosts=6, flow_bytes=1 << 20, seed=5)
    buf = io.StringIO()
    write_matrix(buf, 6, flows)
    path = tmp_path / "perm.cm"
    path.write_text(buf.getvalue())
    assert make_flows(parse_traffic(str(path)), hosts=6, flow_bytes=1, seed=0) == flows


@pytest.mark.parametrize("flows, says", [
    ([Flow(0, 0, 1)], "to itself"),
    ([Flow(0, 4, 1)], "numbered 0 to 3"),
    ([Flow(0, 1, 0)], "bytes 0"),
    ([Flow(0, 1, 1, -1.0)], "start_s -1.0"),
    ([Flow(0, 1, 1, float("nan"))], "start_s nan"),
    ([Flow(0, 1, 1, 0.0, -1)], "flow_id -1"),
    ([Flow(0, 1, 1, 0.0, 3), Flow(1, 0, 1, 0.0, 3)], "flow_id 3 twice"),
])
def test_write_matrix_refuses_what_it_could_not_read_back(flows, says):
    buf = io.StringIO()
    with pytest.raises(TrafficError, match=says):
        write_matrix(buf, 4, flows)
    assert buf.getvalue() == ""  # nothing half written


# --- properties ---------------------------------------------------------------------------------

_WORDS = ["Nodes", "Connections", "id", "start", "size", "->", "0", "1", "3", "-1", "1e3", "x",
          "0->1", "1->0", "2->2", "#", "trigger", "\t", " ", "1.5", "99999999999999999999999"]
_LINES = st.lists(st.sampled_from(_WORDS), max_size=9).map(" ".join)
_TEXT = st.one_of(
    st.lists(st.one_of(_LINES, st.text(max_size=30)), max_size=8).map("\n".join),
    st.lists(_LINES, max_size=6).map(lambda ls: "Nodes 4\nConnections 2\n" + "\n".join(ls)),
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("matrix") / "flows.cm"


@settings(max_examples=150)
@given(text=_TEXT, raw=st.binary(max_size=40))
def test_any_text_is_a_matrix_or_a_traffic_error(scratch, text, raw):
    for data in (text.encode("utf-8", "surrogatepass"), raw):
        scratch.write_bytes(data)
        try:
            m = read_matrix(str(scratch))
        except TrafficError as e:
            assert "\n" not in str(e) and str(e).startswith(f"{scratch} line ")
        else:
            assert len(m.flows) <= MAX_FLOWS


@st.composite
def _matrices(draw):
    nodes = draw(st.integers(2, 50))
    node = st.integers(0, nodes - 1)
    n = draw(st.integers(0, 20))
    ids = draw(st.lists(st.integers(0, (1 << 32) - 2), min_size=n, max_size=n, unique=True))
    flows = []
    for fid in ids:
        src = draw(node)
        dst = draw(node.filter(lambda d, s=src: d != s))
        ps = draw(st.integers(0, 10 ** 15))  # whole picoseconds, up to 1000 s: exact in a float
        flows.append(Flow(src, dst, draw(st.integers(1, 1 << 40)), ps / 10 ** 12, fid))
    return Matrix(nodes, flows)


@settings(max_examples=100)
@given(m=_matrices())
def test_valid_flows_round_trip_through_a_matrix_file(scratch, m):
    write_matrix(str(scratch), m.nodes, m.flows)
    assert read_matrix(str(scratch)) == m


@settings(max_examples=50)
@given(m=_matrices(), order=st.permutations(["id", "start", "size"]), gap=st.sampled_from(
    [" ", "  ", "\t", " \t "]))
def test_a_matrix_in_htsims_looser_forms_reads_the_same(scratch, m, order, gap):
    """Fields in any order and other whitespace take the general way through read_matrix; the
    form write_matrix writes a faster one: both give the same flows."""
    lines = [f"{gap}Nodes{gap}{m.nodes}", f"Connections {len(m.flows)}{gap}", "# a comment", ""]
    for f in m.flows:
        value = {"id": f.flow_id + 1, "start": round(f.start_s * 10 ** 12), "size": f.bytes}
        lines.append(gap.join([f"{f.src}->{f.dst}"] + [f"{k}{gap}{value[k]}" for k in order]))
    scratch.write_text("\r\n".join(lines))
    assert read_matrix(str(scratch)) == m
