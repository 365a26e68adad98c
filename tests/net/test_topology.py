"""Many-host topologies (uet/net/topology.py): the ``--topology`` specs, the fat tree and the
leaf-spine as data, and up-down routing (ECMP over the up ports, facts E.5)."""

from __future__ import annotations

import itertools

import pytest

from uet.net.topology import (MAX_HOSTS, Topology, TopologyError, build, fat_tree, leaf_spine,
                              parse_topology)

# --- parse_topology ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec,parsed", [
    ("paths:4", ("paths", (4,))),
    ("paths:1", ("paths", (1,))),
    ("leafspine:16,8,4", ("leafspine", (16, 8, 4))),
    ("leafspine:17,1,1", ("leafspine", (17, 1, 1))),
    ("fattree:2", ("fattree", (2,))),
    ("fattree:8", ("fattree", (8,))),
    ("fattree:64", ("fattree", (64,))),              # 65536 hosts: exactly MAX_HOSTS
    ("leafspine:65536,1,1", ("leafspine", (65536, 1, 1))),
])
def test_parse_good_specs(spec, parsed):
    assert parse_topology(spec) == parsed


@pytest.mark.parametrize("spec,message", [
    ("fattree:3", "'fattree:3': K is an even number of switch ports, at least 2, e.g. fattree:8"),
    ("fattree:0", "'fattree:0': expected 1 positive number(s), e.g. fattree:8"),
    ("leafspine:0,1,1", "'leafspine:0,1,1': expected 3 positive number(s), e.g. leafspine:16,8,4"),
    ("leafspine:16,8", "'leafspine:16,8': expected 3 positive number(s), e.g. leafspine:16,8,4"),
    ("fattree:4,4", "'fattree:4,4': expected 1 positive number(s), e.g. fattree:8"),
    ("paths:0", "'paths:0': expected 1 positive number(s), e.g. paths:4"),
    ("foo:1", "'foo:1': a topology is paths:N, leafspine:HOSTS_PER_TOR,TORS,SPINES or fattree:K"),
    ("", "'': a topology is paths:N, leafspine:HOSTS_PER_TOR,TORS,SPINES or fattree:K"),
    ("fattree:x", "'fattree:x': expected fattree numbers, e.g. fattree:8"),
    ("fattree:", "'fattree:': expected fattree numbers, e.g. fattree:8"),
    ("fattree", "'fattree': expected fattree numbers, e.g. fattree:8"),
    ("leafspine:4,a,1", "'leafspine:4,a,1': expected leafspine numbers, e.g. leafspine:16,8,4"),
    ("fattree:66", f"'fattree:66': 71874 hosts; at most {MAX_HOSTS}"),
    ("leafspine:65537,1,1", f"'leafspine:65537,1,1': 65537 hosts; at most {MAX_HOSTS}"),
])
def test_parse_bad_specs_say_why_in_one_line(spec, message):
    with pytest.raises(TopologyError) as e:
        parse_topology(spec)
    assert str(e.value) == message
    assert "\n" not in str(e.value)
    assert isinstance(e.value, ValueError)


def test_paths_is_not_a_switched_topology():
    with pytest.raises(TopologyError, match="^paths is not a switched topology$"):
        build("paths", (4,))


def test_build_dispatches():
    assert build("fattree", (4,)).kind == "fattree"
    assert build("leafspine", (2, 3, 1)).kind == "leafspine"


# --- helpers: walking the routes -----------------------------------------------------------------


def walk(t: Topology, src: int, dst: int) -> list[str]:
    """E.5 up-down: from the attach switch climb by up[0] until dst is below, then follow down."""
    path = [f"h{src}", t.attach[src]]
    sw = t.attach[src]
    while dst not in t.down[sw]:
        sw = t.up[sw][0]
        path.append(sw)
    while path[-1] != f"h{dst}":
        path.append(t.down[path[-1]][dst])
    return path


def up_down_paths(t: Topology, src: int, dst: int) -> int:
    """How many distinct up-down routes (any up port, as ECMP may pick) lead from src to dst;
    each is checked to end at dst over links that exist."""
    def count(sw: str) -> int:
        if dst in t.down[sw]:
            node = sw
            while node != f"h{dst}":
                nxt = t.down[node][dst]
                assert t.has_link(node, nxt)
                node = nxt
            return 1
        assert t.up[sw], f"{sw} has neither h{dst} below nor an up port"
        total = 0
        for u in t.up[sw]:
            assert t.has_link(sw, u)
            total += count(u)
        return total
    return count(t.attach[src])


# --- fat tree ------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_counts(k):
    t = fat_tree(k)
    half = k // 2
    assert t.kind == "fattree"
    assert t.hosts == k ** 3 // 4 == {4: 16, 8: 128}[k]
    assert t.switches == ([f"e{i}" for i in range(k * half)] + [f"a{i}" for i in range(k * half)]
                          + [f"c{i}" for i in range(half * half)])
    assert len(t.switches) == {4: 8 + 8 + 4, 8: 32 + 32 + 16}[k]
    # host links, edge-aggregation, aggregation-core: K^3/4 each
    assert len(t.links) == 3 * k ** 3 // 4 == {4: 48, 8: 384}[k]
    assert len(set(t.links)) == len(t.links)
    assert not any((b, a) in set(t.links) for a, b in t.links)
    assert t.diameter == 6


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_every_switch_has_k_ports(k):
    t = fat_tree(k)
    for sw in t.switches:
        below = set(t.down[sw].values())
        above = set(t.up[sw])
        assert not below & above
        assert len(below) + len(above) == k, sw
        assert t.neighbours(sw) == sorted(below | above, key=lambda n: (n[0], int(n[1:])))
        # each port is a link, and the links of a switch are exactly its ports
        assert all(t.has_link(sw, n) for n in below | above)
        assert sum(sw in link for link in t.links) == k
    for sw in t.switches:
        expected_up = {"e": k // 2, "a": k // 2, "c": 0}[sw[0]]
        assert len(t.up[sw]) == expected_up


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_attachment_and_aggregation_to_core_wiring(k):
    t = fat_tree(k)
    half = k // 2
    assert t.attach == [f"e{i // half}" for i in range(t.hosts)]
    for h in range(t.hosts):
        assert t.neighbours(f"h{h}") == [f"e{h // half}"]
        assert t.has_link(f"h{h}", f"e{h // half}") and t.has_link(f"e{h // half}", f"h{h}")
    # aggregation switch j of a pod links to cores j*K/2 .. j*K/2 + K/2 - 1
    for a in range(k * half):
        j = a % half
        assert t.up[f"a{a}"] == [f"c{j * half + i}" for i in range(half)]
    # a core reaches every host, one aggregation switch per pod (K ports)
    assert all(set(t.down[c]) == set(range(t.hosts)) for c in t.switches if c[0] == "c")


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_up_down_routes_reach_every_host_and_hops_agrees(k):
    t = fat_tree(k)
    half = k // 2
    per_edge, per_pod = half, half * half
    seen = {2: 0, 4: 0, 6: 0}
    for s, d in itertools.permutations(range(t.hosts), 2):
        path = walk(t, s, d)
        assert path[0] == f"h{s}" and path[-1] == f"h{d}"
        assert all(t.has_link(a, b) for a, b in zip(path, path[1:]))
        links = len(path) - 1
        assert t.hops(s, d) == links
        if s // per_edge == d // per_edge:
            assert links == 2
        elif s // per_pod == d // per_pod:
            assert links == 4
        else:
            assert links == 6
        seen[links] += 1
    n = t.hosts
    assert seen == {2: n * (per_edge - 1), 4: n * (per_pod - per_edge), 6: n * (n - per_pod)}
    assert max(seen) == t.diameter
    assert t.hops(5, 5) == 0


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_ecmp_has_every_up_down_route(k):
    """E.5: any up port may be taken; from another pod there are (K/2)^2 routes, within a pod
    K/2, under one edge switch 1."""
    t = fat_tree(k)
    half = k // 2
    assert up_down_paths(t, 0, 1) == 1
    assert up_down_paths(t, 0, half) == half          # same pod, next edge switch
    assert up_down_paths(t, 0, t.hosts - 1) == half * half
    assert up_down_paths(t, t.hosts - 1, 0) == half * half


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_diameter_is_the_longest_route(k):
    t = fat_tree(k)
    assert t.diameter == max(t.hops(s, d) for s, d in itertools.permutations(range(t.hosts), 2))


# --- leaf-spine ----------------------------------------------------------------------------------


def test_leaf_spine_one_tor_is_one_switch_and_the_host_links():
    t = leaf_spine(17, 1, 1)
    assert t.kind == "leafspine" and t.hosts == 17
    assert t.switches == ["t0"]
    assert t.links == [(f"h{h}", "t0") for h in range(17)]
    assert len(t.links) == 17
    assert t.up["t0"] == []
    assert t.neighbours("t0") == [f"h{h}" for h in range(17)]
    assert t.diameter == 2
    assert {t.hops(s, d) for s, d in itertools.permutations(range(17), 2)} == {2}
    assert walk(t, 3, 16) == ["h3", "t0", "h16"]
    assert not t.has_link("t0", "s0")


def test_leaf_spine_4_4_2():
    t = leaf_spine(4, 4, 2)
    assert t.hosts == 16
    assert t.switches == ["t0", "t1", "t2", "t3", "s0", "s1"]
    assert len(t.links) == 16 + 4 * 2
    assert t.attach == [f"t{h // 4}" for h in range(16)]
    assert t.diameter == 4
    for s, d in itertools.permutations(range(16), 2):
        expect = 2 if s // 4 == d // 4 else 4
        assert t.hops(s, d) == expect == len(walk(t, s, d)) - 1
    assert walk(t, 0, 5) == ["h0", "t0", "s0", "t1", "h5"]
    assert up_down_paths(t, 0, 5) == 2 and up_down_paths(t, 0, 1) == 1
    for sw in ("t0", "t1", "t2", "t3"):
        assert len(t.neighbours(sw)) == 4 + 2
    assert t.down["s1"] == {h: f"t{h // 4}" for h in range(16)}


def test_has_link_either_order():
    t = leaf_spine(4, 4, 2)
    for a, b in [("t0", "s1"), ("s1", "t0"), ("h0", "t0"), ("t0", "h0"), ("t3", "h15"),
                 ("h15", "t3")]:
        assert t.has_link(a, b), (a, b)
    for a, b in [("t0", "t1"), ("s0", "s1"), ("h0", "t1"), ("h0", "h1"), ("t0", "s2"),
                 ("h16", "t3"), ("t0", "t0")]:
        assert not t.has_link(a, b), (a, b)
    f = fat_tree(4)
    assert f.has_link("a0", "c0") and f.has_link("c0", "a0")
    assert not f.has_link("a0", "c2") and not f.has_link("e0", "c0")


def test_neighbours():
    t = leaf_spine(4, 4, 2)
    assert t.neighbours("h5") == ["t1"]
    assert t.neighbours("t1") == ["h4", "h5", "h6", "h7", "s0", "s1"]
    assert t.neighbours("s0") == ["t0", "t1", "t2", "t3"]
    f = fat_tree(4)
    assert f.neighbours("e0") == ["a0", "a1", "h0", "h1"]
    assert f.neighbours("a1") == ["c2", "c3", "e0", "e1"]
    assert f.neighbours("c0") == ["a0", "a2", "a4", "a6"]
    # numeric, not text, order
    assert fat_tree(8).neighbours("c0") == ["a0", "a4", "a8", "a12", "a16", "a20", "a24", "a28"]
