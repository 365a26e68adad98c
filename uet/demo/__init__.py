"""``uet demo``: one live transfer through the loopback fabric, sender and receiver in one command
(docs/design-notes.md "Contracts", "Test beds" 2).

>>> from uet.demo import DemoConfig, run_demo   # doctest: +SKIP
>>> trio.run(run_demo, DemoConfig(bytes=1 << 20, loss=0, trim=0))["ok"]   # doctest: +SKIP
True

:mod:`uet.demo.command` is the command line (``register(subparsers)``, ``main(argv)``),
:mod:`uet.demo.run` the run itself, :mod:`uet.demo.options` the options shared with ``uet sim``.
"""

from typing import TYPE_CHECKING, Any

__all__ = ["DemoConfig", "run_demo"]

if TYPE_CHECKING:  # pragma: no cover
    from .run import DemoConfig, run_demo


def __getattr__(name: str) -> Any:
    # lazy, as uet.io: registering the command does not import trio, the core or the fabric
    if name in __all__:
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
