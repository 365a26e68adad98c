"""The hooks of congestion control (uet.cms.base) and of the entropy selectors
(uet.multipath.base) take keyword arguments only, named and ordered one way in both (issue 28
item 4, as aioquic's congestion/base.py): ``now``, ``ev``, ``size``, then what the event says.
Every class shipped is checked, so an algorithm added with positional hooks fails here."""

from __future__ import annotations

import inspect

import pytest

import uet.cms.fixed  # noqa: F401  (the classes register as subclasses on import)
import uet.cms.nscc  # noqa: F401
import uet.cms.rccc  # noqa: F401
import uet.multipath  # noqa: F401
from uet.cms import FixedWindow
from uet.cms.base import CongestionControl
from uet.multipath import RoundRobinSpray
from uet.multipath.base import EntropySelector

ORDER = ("now", "ev", "size", "retx", "inflight", "ack", "code", "ce", "rtt", "bits")
CC_HOOKS = {"on_send": ("now", "size", "retx"), "on_ack": ("now", "size", "inflight", "ack"),
            "on_ce": ("now", "size"), "on_nack": ("now", "size", "code"),
            "on_loss": ("now", "size"), "on_timeout": ("now",), "on_rtt_sample": ("now", "rtt"),
            "on_signal": ("now", "ev", "bits"), "on_credit": ("now", "size")}
SEL_HOOKS = {"on_delivered": ("now", "ev"), "on_ack": ("now", "ev", "ce"),
             "on_nack": ("now", "ev", "code"), "on_loss": ("now", "ev"),
             "on_timeout": ("now",), "on_signal": ("now", "ev", "bits")}


def _classes(base: type) -> list[type]:
    out, todo = [base], [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("uet.") and sub not in out:
                out.append(sub)
                todo.append(sub)
    return out


CASES = ([(c, h, p) for c in _classes(CongestionControl) for h, p in CC_HOOKS.items()]
         + [(c, h, p) for c in _classes(EntropySelector) for h, p in SEL_HOOKS.items()])


def test_every_shipped_class_is_checked():
    names = {c.__name__ for c, _, _ in CASES}
    assert {"FixedWindow", "Nscc", "Rccc", "RoundRobinSpray", "RandomSpray", "SingleEntropy",
            "Reps", "ObliviousSpray", "CsigSelector"} <= names


@pytest.mark.parametrize("cls, hook, params", CASES,
                         ids=[f"{c.__name__}.{h}" for c, h, _ in CASES])
def test_hooks_are_keyword_only_in_one_order(cls, hook, params):
    sig = inspect.signature(getattr(cls, hook))
    got = [p for p in sig.parameters.values() if p.name != "self"]
    assert [p.name for p in got] == list(params)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in got)
    assert [p.name for p in got] == sorted((p.name for p in got), key=ORDER.index)


def test_a_positional_call_is_refused():
    with pytest.raises(TypeError):
        FixedWindow().on_send(0.0, 4096, False)  # type: ignore[misc]
    with pytest.raises(TypeError):
        RoundRobinSpray([1, 2]).on_ack(1, False, 0.0)  # type: ignore[misc]
