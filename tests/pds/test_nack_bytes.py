"""uet.pds.packets.nack_bytes builds a NACK (B.10, NT = 0) from the fields' places, without the
schema's codec: the same bytes as the codec for every value, the same EncodeError for a value that
does not fit, and read_nack reads back what it was given."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from uet.errors import EncodeError
from uet.pds.packets import NACK_SIZE, nack_bytes, read_nack
from uet.wire.codec import codec
from uet.wire.enums import NACK_TYPE

M32 = 0xFFFFFFFF


@given(code=st.integers(0, 255), psn=st.integers(0, 2**40), spdcid=st.integers(0, 65535),
       dpdcid=st.integers(0, 65535), m=st.booleans(), retx=st.booleans(),
       payload=st.integers(0, 2**40))
def test_b10_nack_bytes_are_the_codecs_and_read_back(code, psn, spdcid, dpdcid, m, retx, payload):
    got = nack_bytes(code, psn, spdcid, dpdcid, m=m, retx=retx, payload=payload)
    assert got == codec("pds.nack").encode({
        "type": NACK_TYPE, "m": m, "retx": retx, "nt": False, "nack_code": code,
        "nack_psn": psn & M32, "spdcid": spdcid, "dpdcid": dpdcid, "payload": payload & M32})
    n = read_nack(got, NACK_SIZE)
    assert (n.m, n.retx, n.nt, n.nack_code, n.nack_psn, n.spdcid, n.dpdcid, n.payload) == (
        m, retx, 0, code, psn & M32, spdcid, dpdcid, payload & M32)


@pytest.mark.parametrize("bad", [dict(code=256), dict(code=-1), dict(spdcid=65536),
                                 dict(dpdcid=-1)])
def test_a_field_that_does_not_fit_is_the_codecs_error(bad):
    args = dict(code=0x12, psn=5, spdcid=1, dpdcid=2) | bad
    field = {"code": "nack_code"}.get(next(iter(bad)), next(iter(bad)))
    with pytest.raises(EncodeError, match=field):
        nack_bytes(args["code"], args["psn"], args["spdcid"], args["dpdcid"])
