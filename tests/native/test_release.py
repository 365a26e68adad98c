"""Issue 25 item 1: reassembly storage is released in an explicit order, never left to the garbage
collector. ``Reassembly.release`` (uet/native/reassembly.py) drops the C chunk table's engines,
then each engine frees its C state and ends its buffer export, then the views go: afterwards the
mapping has no export at all (it could be unmapped), even while the engine objects are still
referenced. An engine that ends up in a reference cycle anyway ends its export in its finalizer:
left to the collector, the memoryview exported to C fails to clear ("BufferError: memoryview has
1 exported buffer") and the interpreter crashes when it is freed (SIGSEGV)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import uet.native
from uet.native import _twin, rxlane
from uet.native import reassembly as R
from uet.native.reassembly import BufferPool, Reassembly

CHUNK = 4096
IS_C = uet.native.BACKEND == "c"


@pytest.fixture
def pool(monkeypatch):
    """A pool of the test's own: its mappings may be closed without harming anyone else."""
    p = BufferPool(max_bytes=1 << 22, chunk=CHUNK)
    monkeypatch.setattr(R, "POOL", p)
    return p


def _partial(impl) -> Reassembly:
    r = Reassembly(40_000, chunk=CHUNK, engine=impl.Reassembly)
    for offset in (0, 9000, 16_500, 37_000):  # four chunks of ten, holes between
        r.place(offset, b"\x07" * 1000)
    r.lane_table()  # with the C engine: the table the receive lane places through
    return r


def test_release_ends_every_export_of_the_mapping_in_order(impl, pool):
    r = _partial(impl)
    engines = list(r._chunks.values())
    table = r._table
    assert len(engines) == 4 and r.allocated == 3 * CHUNK + 3136 and r.received == 4000
    r.release()
    [mapping] = pool._maps
    mapping.close()  # BufferError while any view or C export of it remained
    assert r.received == 0 and r.allocated == 0 and not r._chunks
    if r._engine is getattr(uet.native._impl, "Reassembly", None) and rxlane.AVAILABLE:
        assert table.nchunks == 0 and table.chunks == rxlane._ffi.NULL  # C reaches none
    for e in engines:  # still referenced here, and empty: length 0, no buffer
        assert (e.length, e.received, len(e.buffer)) == (0, 0, 0)
    r.release()  # idempotent
    assert r.received == 0


def test_a_released_message_is_empty_and_can_be_placed_again(impl, pool):
    r = _partial(impl)
    r.release()
    assert r.missing() == [(0, 40_000)] and not r.complete
    assert r.place(100, b"ab") == 2 and r.received == 2
    out = bytes(r.take())
    assert out == bytes(100) + b"ab" + bytes(40_000 - 102)


@pytest.mark.skipif(not IS_C, reason="compares the C engine with its twin")
@pytest.mark.parametrize("length", [0, 1, 5000])
def test_a_released_engine_is_the_same_empty_message_in_both_backends(length):
    seen = []
    for engine in (uet.native._impl.Reassembly, _twin.Reassembly):
        buf = bytearray(length)
        e = engine(length, memoryview(buf))
        e.place(0, b"z" * min(3, length))
        e.release()
        e.release()
        buf.extend(b"x")  # no longer pinned: nothing refers to it
        with pytest.raises(ValueError):
            e.place(0, b"q")
        seen.append((e.length, e.received, e.complete, e.missing(), e.has(0, 0),
                     bytes(e.buffer)))
    assert seen[0] == seen[1] == (0, 0, True, [], True, b"")


def test_an_engine_left_in_a_reference_cycle_is_collected_without_a_crash():
    """The garbage collector clears the objects of a cycle in its own order: here the slice of
    the mapping that an engine exports to C comes before the engine (held by a cycle made
    later). Without the finalizer it fails to clear and the interpreter crashes (-11)."""
    code = textwrap.dedent("""
        import gc
        gc.disable()  # the order of creation is the order the collector clears in
        from uet.native.reassembly import Reassembly
        class Later:
            pass
        r = Reassembly(1 << 20, chunk=4096)
        r.place(0, b"x" * 100)
        later = Later()
        later.me, later.engine = later, r._chunks[0]
        del r, later
        gc.collect()
        print("collected")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, "collected\n", "")
