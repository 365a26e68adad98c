"""Entropy selectors built from a plain description (uet.multipath.factory, issue 28): the PDS
calls a :class:`SelectorFactory` of uet.multipath, never a closure of the layer that opened the
sockets; what it builds is what the live endpoint and the simulator built before."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from uet.cms import csig
from uet.multipath import (SELECTOR_KINDS, CsigSelector, RandomSpray, Reps, RoundRobinSpray,
                           SelectorFactory, SelectorSpec, SingleEntropy, make_selector)
from uet.multipath.reps import ObliviousSpray

PORTS = (50011, 50013, 50017, 50019)


@dataclass
class Cfg:
    """The two PdsConfig fields the factory reads."""

    entropy_values: int = 64
    csig: int | None = None


def _picks(sel, n: int = 40) -> list[int]:
    return [sel.next(i * 1e-6) for i in range(n)]


@pytest.mark.parametrize("kind, cls", [("rr", RoundRobinSpray), ("random", RandomSpray),
                                       ("single", SingleEntropy), ("reps", Reps),
                                       ("oblivious", ObliviousSpray)])
def test_a_live_description_uses_exactly_the_sockets_ports(kind, cls):
    f = SelectorFactory(SelectorSpec(kind=kind, values=PORTS, rehash_on_timeout=False))
    sel = f(Cfg(), random.Random(1))
    assert type(sel) is cls and f.made == [sel]
    assert set(_picks(sel)) <= set(PORTS)
    if kind == "rr":
        assert _picks(sel, 8) == list(PORTS) * 2
    if kind == "single":  # only our sockets' ports can be sent from: no rehash on a timeout
        sel.on_timeout(now=0.0)
        assert _picks(sel, 3) == [PORTS[0]] * 3


@pytest.mark.parametrize("kind", SELECTOR_KINDS)
def test_without_values_it_is_the_simulators_seeded_choice(kind):
    """What PdsConfig's default entropy_factory (make_selector over entropy_values) picks."""
    f = SelectorFactory(SelectorSpec(kind=kind))
    got = _picks(f(Cfg(entropy_values=16), random.Random(7)))
    assert got == _picks(make_selector(kind, 16, random.Random(7)))


def test_csig_wraps_the_policy_with_the_knobs_and_the_alias():
    spec = SelectorSpec(kind="rr", values=PORTS, csig_scale=csig.Scale(),
                        csig_knobs={"max_age": 20e-3, "recent": 3e-3},
                        alias=lambda port: port - 1000)
    f = SelectorFactory(spec)
    plain = f(Cfg(), random.Random(1))
    sel = f(Cfg(csig=csig.ABW), random.Random(1))
    assert type(plain) is RoundRobinSpray and type(sel) is CsigSelector and f.made == [plain, sel]
    assert (sel.t, sel.max_age, sel.recent) == (csig.ABW, 20e-3, 3e-3)
    sel.on_signal(now=0.0, ev=PORTS[1] + 1000, bits=csig.pack(csig.ABW, 9))  # a relay's port
    assert set(sel.paths(0.0)) == {PORTS[1]}


def test_an_unknown_kind_is_refused_when_described():
    with pytest.raises(ValueError, match="unknown entropy selection 'bogus'"):
        SelectorSpec(kind="bogus")
