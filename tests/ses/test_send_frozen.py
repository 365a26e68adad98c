"""uet.ses.initiator.frozen (issue 29 item 3): a SEND of a read-only view of ``bytes`` keeps the
view (the simulators' flows are windows of one seeded stream, not a copy each); anything its
owner could change is copied when the SEND is made."""

from __future__ import annotations

from uet.ses import SesConfig, SesEndpoint


def _message(ep: SesEndpoint):
    (item,) = ep.items_to_send()
    return item


def test_a_view_of_bytes_is_sent_from_where_it_is():
    stream = bytes(range(256)) * 256
    ep = SesEndpoint(SesConfig())
    ep.send("b", memoryview(stream)[100:50_100])
    m = _message(ep)
    assert m.data.obj is stream and m.length == 50_000  # no copy
    assert bytes(m.payload(1)) == stream[100 + 4096:100 + 8192]


def test_a_buffer_its_owner_can_change_is_copied():
    buf = bytearray(b"x" * 20_000)
    ep = SesEndpoint(SesConfig())
    ep.send("b", buf)
    ep.send("b", memoryview(buf))
    first, second = ep.items_to_send()
    buf[:] = b"y" * 20_000
    assert bytes(first.payload(0)) == bytes(second.payload(0)) == b"x" * 4096
