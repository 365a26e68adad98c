"""One build and one parse per PDS packet type (facts B.5-B.12), from the schema's layouts
(:mod:`uet.wire.fast`): no field position is written here.

* requests (B.5, B.6): :class:`RequestHeader` holds a PDC's constant fields and packs a header per
  PSN; :func:`read_request` reads one;
* ACKs (B.7-B.9): :class:`AckEncoder` (plain ACK or ACK_CC, chosen by configuration, PDS-A2) and
  :func:`read_ack` for all three types;
* NACKs (B.10) and CONTROL packets (B.12): :func:`nack_bytes` / :func:`read_nack`,
  :func:`control_bytes` / :func:`read_control`.

A read returns a tuple of ints (flags as 0/1) and never a partial result: a datagram too short for
its header raises :class:`uet.errors.TruncatedError` (a decode error of the wire layer: PDS-R3).
"""

from __future__ import annotations

from typing import NamedTuple

from ..cms.csig import CSIG_CCX_TYPE
from ..errors import TruncatedError
from ..wire.enums import ACK_CC_TYPE, ACK_CCX_TYPE, ACK_TYPE, CC_REQUEST_TYPES, CONTROL_TYPE
from ..wire.enums import NACK_TYPE
from ..wire.fast import fast
from ..wire.psn import M32


_REQ = fast("pds.rud_rod_req")
_REQ0, _REQ1 = _REQ.layout(syn=0), _REQ.layout(syn=1)
REQUEST_SIZE = _REQ0.size
_CCREQ = fast("pds.rud_rod_cc_req").layout(syn=0)
CC_REQUEST_SIZE = _CCREQ.size
# B.6: the CC forms are the plain form plus ccc_id (byte 12) and credit_target (bytes 13-15)
assert _CCREQ.shift["ccc_id"] == 24 and _CCREQ.shift["credit_target"] == 0
_read_req = _REQ0.reader("next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid",
                         "dpdcid")
#: (next_hdr, retx, ar, syn, clear_psn_offset, psn, spdcid, dpdcid) of a request header without
#: SYN (with SYN the last is pdc_info and psn_offset: read_request tells them apart)
read_request_fields = _read_req
# The SYN form's psn_offset is the low bits of the word that otherwise holds the DPDCID (B.5).
_PSNOFF_SHIFT, _PSNOFF_MASK = _REQ1.shift["psn_offset"], _REQ1.mask["psn_offset"]
_DPDCID_SHIFT = _REQ0.shift["dpdcid"]
assert _PSNOFF_SHIFT >= _DPDCID_SHIFT and _REQ1.size == REQUEST_SIZE and all(
    _REQ1.position(n) == _REQ0.position(n)
    for n in ("next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid"))
PSN_OFFSET_MASK = _PSNOFF_MASK


class Request(NamedTuple):
    next_hdr: int
    retx: int
    ar: int
    syn: int
    clear_psn_offset: int
    psn: int
    spdcid: int
    dpdcid: int       # 0 when syn (bytes 10-11 are pdc_info + psn_offset then)
    psn_offset: int   # SYN form only
    size: int         # header bytes: 12, or 16 for the CC forms (B.6)
    credit_target: int = 0  # B.6: the CC forms' requested credit (E.2), in its wire units


def read_request(ptype: int, data: bytes, end: int) -> Request:
    """The fields of a RUD/ROD request header (B.5, B.6) that the target uses."""
    size = CC_REQUEST_SIZE if ptype in CC_REQUEST_TYPES else REQUEST_SIZE
    if end < size:
        raise TruncatedError("pds.rud_rod_req", size, end, 0)
    nh, retx, ar, syn, clr, psn, spdcid, word = _read_req(data)
    credit = int.from_bytes(data[13:16], "big") if size == CC_REQUEST_SIZE else 0  # B.6
    if syn:
        return Request(nh, retx, ar, 1, clr, psn, spdcid, 0,
                       (word >> (_PSNOFF_SHIFT - _DPDCID_SHIFT)) & _PSNOFF_MASK, size, credit)
    return Request(nh, retx, ar, 0, clr, psn, spdcid, word, 0, size, credit)


class RequestHeader:
    """A PDC's request headers (B.5): the constant fields (type, SPDCID, DPDCID or the SYN form)
    set once, the per-packet ones (PSN, CLEAR_PSN offset, AR, RETX, psn_offset, next_hdr) ORed
    in per packet."""

    __slots__ = ("_const", "_syn_const")
    _psn, _clr, _ar, _retx, _nh = (_REQ0.shift[n] for n in (
        "psn", "clear_psn_offset", "ar", "retx", "next_hdr"))

    # where pack ORs the per-packet fields of the established form, for a builder that writes
    # them itself (uet.native.txbuild): PSN, CLEAR_PSN offset, AR, next_hdr
    SHIFTS = (_psn, _clr, _ar, _nh)

    def __init__(self, ptype: int, spdcid: int, dpdcid: int = 0):
        self._const = _REQ0.const({"type": ptype, "spdcid": spdcid, "dpdcid": dpdcid, "syn": 0})
        self._syn_const = _REQ1.const({"type": ptype, "spdcid": spdcid, "syn": 1})

    @property
    def const(self) -> int:
        """The established form's constant fields (type, SPDCID, DPDCID) as an integer."""
        return self._const

    def pack(self, next_hdr: int, psn: int, clear_offset: int, *, ar: bool, retx: bool,
             psn_offset: int | None, credit_target: int | None = None) -> bytes:
        """The 12 header bytes; ``psn_offset`` None: established (DPDCID), else the SYN form.
        ``clear_offset`` is clamped to the signed 16-bit field (PDS-I3). ``credit_target`` (wire
        units, E.2) adds the 4 bytes of the CC form (B.6: ccc_id 0, then the 24-bit target);
        the PDC's type must then be RUD_CC_REQ or ROD_CC_REQ."""
        c = -32768 if clear_offset < -32768 else (32767 if clear_offset > 32767 else clear_offset)
        if psn_offset is None:
            v = self._const
        else:
            v = self._syn_const | ((psn_offset & _PSNOFF_MASK) << _PSNOFF_SHIFT)
        v |= ((psn & M32) << self._psn) | ((c & 0xFFFF) << self._clr) | (next_hdr << self._nh)
        if ar:
            v |= 1 << self._ar
        if retx:
            v |= 1 << self._retx
        if credit_target is not None:
            return ((v << 32) | (credit_target & 0xFFFFFF)).to_bytes(CC_REQUEST_SIZE, "big")
        return v.to_bytes(REQUEST_SIZE, "big")


# --- ACKs (B.7-B.9) ------------------------------------------------------------------------------

_ACK, _ACK_CC, _ACK_CCX = fast("pds.ack"), fast("pds.ack_cc"), fast("pds.ack_ccx")
_A = _ACK.layout(p=0)
_ACC = _ACK_CC.layout(p=0, cc_type=0)
_ACCX = _ACK_CCX.layout(p=0)
_ACK_BASE = ("next_hdr", "m", "retx", "p", "req", "ack_psn_offset", "cack_psn", "spdcid", "dpdcid")
_SACK = ("mpr", "sack_psn_offset", "sack_bitmap")
_read_plain = _A.reader(*_ACK_BASE)
_NSCC_STATE = ("cc_type", "service_time", "restore_cwnd", "rcv_cwnd_pend", "rcvd_bytes", "ooo_count")
_read_cc = _ACC.reader(*(_ACK_BASE + _SACK + _NSCC_STATE))
CC_TYPE_CREDIT = 1  # B.8
_CREDIT_SHIFT = _ACK_CC.layout(p=0, cc_type=CC_TYPE_CREDIT).shift["credit"]
assert _CREDIT_SHIFT == _ACC.shift["rcv_cwnd_pend"] and all(
    _ACK_CC.layout(p=0, cc_type=1).shift[n] == _ACC.shift[n] for n in ("cc_type", "ooo_count"))
_read_ccx = _ACCX.reader(*(_ACK_BASE + _SACK + ("ccx_type", "ack_ccx_state")))
# probe_opaque (P = 1) sits where ack_psn_offset does, and the SACK fields at the same place in
# every cc_type variant: one reader per type serves every variant
for _fast, _lay in ((_ACK, _A), (_ACK_CC, _ACC)):
    _p1 = _fast.layout(p=1) if _fast is _ACK else _fast.layout(p=1, cc_type=0)
    assert _p1.position("probe_opaque") == _lay.position("ack_psn_offset")
for _ct in (1, 2):
    assert all(_ACK_CC.layout(p=0, cc_type=_ct).position(n) == _ACC.position(n) for n in _SACK)
ACK_SIZES = {ACK_TYPE: _A.size, ACK_CC_TYPE: _ACC.size, ACK_CCX_TYPE: _ACCX.size}


class Ack(NamedTuple):
    next_hdr: int
    m: int
    retx: int
    p: int
    req: int
    ack_psn_offset: int    # probe_opaque when p = 1 (read as signed; only ACK_PSN uses it)
    cack_psn: int
    spdcid: int
    dpdcid: int
    mpr: int | None        # None for a plain ACK (no SACK and no MPR, C.3)
    sack_psn_offset: int
    sack_bitmap: int
    size: int
    # the NSCC state of an ACK_CC with cc_type 0 (B.8, E.3); cc_type None for a plain ACK or an
    # ACK_CCX (its state is opaque), and the state fields 0 unless cc_type is 0
    cc_type: int | None = None
    service_time: int = 0
    restore_cwnd: int = 0
    rcv_cwnd_pend: int = 0
    rcvd_bytes: int = 0
    ooo_count: int = 0
    # an ACK_CCX's type and state (B.9; ccx_type 14: a CSIG reflection, uet.cms.csig CMS-C4)
    ccx_type: int | None = None
    ccx_state: int = 0
    credit: int = 0    # cc_type 1 (RCCC, E.2): the credit granted, in its wire units (B.8)


def read_ack(ptype: int, data: bytes, end: int) -> Ack:
    size = ACK_SIZES[ptype]
    if end < size:
        raise TruncatedError(f"pds ack type {ptype}", size, end, 0)
    if ptype == ACK_TYPE:
        return Ack(*_read_plain(data), None, 0, 0, size)
    if ptype == ACK_CCX_TYPE:
        f = _read_ccx(data)
        return Ack(*f[:12], size, ccx_type=f[12], ccx_state=f[13])
    f = _read_cc(data)
    if f[12] == CC_TYPE_CREDIT:  # B.8: credit (24 bits) where NSCC has service_time, RC, pend
        credit = (f[13] << 8) | (f[14] << 7) | f[15]
        return Ack(*f[:12], size, f[12], ooo_count=f[17], credit=credit)
    if f[12]:  # reserved cc_type: no state this reader knows
        return Ack(*f[:12], size, f[12])
    return Ack(*f[:12], size, *f[12:])


class AckEncoder:
    """A target PDC's ACKs (PDS-A2): ACK_CC with the NSCC state (cc_type 0, docs/design-notes.md default) or a
    plain ACK; with a CSIG reflection (uet.cms.csig CMS-C4) an ACK_CCX instead. The constant fields
    (type, PDC ids, MPR) set once, the rest ORed in per ACK."""

    __slots__ = ("plain", "size", "_const", "_xconst", "_p", "_aoff", "_cack", "_m", "_retx",
                 "_req", "_nh", "_soff", "_bm", "_rb", "_ooo", "_pend", "_rc", "_cct")

    def __init__(self, ack_type: str, spdcid: int, dpdcid: int, mpr: int):
        self.plain = ack_type == "ack"
        lay = _A if self.plain else _ACC
        self.size = lay.size
        fields = {"type": ACK_TYPE if self.plain else ACK_CC_TYPE, "spdcid": spdcid,
                  "dpdcid": dpdcid}
        if not self.plain:
            fields["mpr"] = mpr
        self._const = lay.const(fields)
        self._xconst = _ACCX.const(dict(fields, type=ACK_CCX_TYPE, mpr=mpr,
                                        ccx_type=CSIG_CCX_TYPE))
        sh = lay.shift  # the fields' places, looked up once (an ACK goes out every few packets)
        self._p, self._aoff, self._cack, self._m, self._retx, self._req, self._nh = (
            sh[n] for n in ("p", "ack_psn_offset", "cack_psn", "m", "retx", "req", "next_hdr"))
        self._soff, self._bm, self._rb, self._ooo, self._pend, self._rc, self._cct = (
            (0, 0, 0, 0, 0, 0, 0) if self.plain else
            (sh[n] for n in ("sack_psn_offset", "sack_bitmap", "rcvd_bytes", "ooo_count",
                             "rcv_cwnd_pend", "restore_cwnd", "cc_type")))

    def const_bytes(self) -> bytes:
        """The constant fields alone, as bytes (what the C receive lane starts an ACK from)."""
        return self._const.to_bytes(self.size, "big")

    def pack(self, cack: int, ack_psn_offset: int, m: bool, retx: bool, next_hdr: int,
             sack_psn_offset: int, sack_bitmap: int, rcvd_bytes: int, ooo_count: int,
             probe: int | None = None, req: int = 0, rcv_cwnd_pend: int = 0,
             restore_cwnd: int = 0, ccx_state: int | None = None,
             credit: int | None = None) -> bytes:
        """One ACK: ``ack_psn_offset`` clamped to 16 signed bits; ``probe`` (an opaque value)
        makes it a probe answer (P = 1, B.7). The SACK fields and the NSCC state (ACK_CC,
        cc_type 0, B.8; service_time is always 0 here: PDS-A5 of uet/pds/target.py) are ignored by
        a plain ACK. ``ccx_state`` (a CSIG reflection, uet.cms.csig CMS-C4) makes it an ACK_CCX
        (B.9) of ccx_type 14 carrying that state instead of the NSCC state; ``credit`` (RCCC's
        grant in wire units, E.2) makes it cc_type 1 with that credit."""
        if probe is not None:  # probe_opaque sits where ack_psn_offset does (checked above)
            v = (1 << self._p) | ((probe & 0xFFFF) << self._aoff)
        else:
            o = -32768 if ack_psn_offset < -32768 else min(ack_psn_offset, 32767)
            v = (o & 0xFFFF) << self._aoff
        v |= (cack & M32) << self._cack
        if m:
            v |= 1 << self._m
        if retx:
            v |= 1 << self._retx
        if req:
            v |= req << self._req
        if next_hdr:
            v |= next_hdr << self._nh
        if self.plain:
            return (self._const | v).to_bytes(self.size, "big")
        so = -32768 if sack_psn_offset < -32768 else min(sack_psn_offset, 32767)
        v |= ((so & 0xFFFF) << self._soff) | (sack_bitmap << self._bm)
        if ccx_state is not None:  # B.9: the same fields, 64 bits further from the end
            return (self._xconst | (v << _CCX_EXTRA) | (ccx_state & _CCX_MASK)).to_bytes(
                _ACCX.size, "big")
        if credit is not None:  # B.8 cc_type 1: credit, reserved, ooo_count
            v |= (((CC_TYPE_CREDIT << self._cct) | ((credit & 0xFFFFFF) << _CREDIT_SHIFT)
                   | ((ooo_count & 0xFFFF) << self._ooo)))
            return (self._const | v).to_bytes(self.size, "big")
        v |= (((rcvd_bytes & 0xFFFFFF) << self._rb) | ((ooo_count & 0xFFFF) << self._ooo)
              | ((rcv_cwnd_pend & 0x7F) << self._pend) | ((restore_cwnd & 1) << self._rc))
        return (self._const | v).to_bytes(self.size, "big")


# ACK_CCX (B.9) is ACK_CC's first 24 bytes and 16 bytes of state where ACK_CC has 8: every field
# the two share sits 64 bits further from the end, and the state is the last 128 bits
_CCX_EXTRA = (_ACCX.size - _ACC.size) * 8
_CCX_MASK = (1 << 128) - 1
assert _ACCX.shift["ack_ccx_state"] == 0 and all(
    _ACCX.shift[n] == _ACC.shift[n] + _CCX_EXTRA
    for n in _ACK_BASE + _SACK + ("type",) if n in _ACC.shift)


def ack_bytes(ack_type: str, **fields: int) -> bytes:
    """An ACK from field values (for answers outside a PDC's encoder: PDS-C2's closed PDCs)."""
    codec = _ACK if ack_type == "ack" else _ACK_CC
    return codec.encode(dict(fields, type=ACK_TYPE if ack_type == "ack" else ACK_CC_TYPE))


# --- NACKs (B.10) and CONTROL (B.12) ---------------------------------------------------------------

_NACK = fast("pds.nack")
_NACK_NT0 = _NACK.layout(nt=0)
_read_nack = _NACK_NT0.reader("m", "retx", "nt", "nack_code", "nack_psn", "spdcid", "dpdcid",
                              "payload")
NACK_SIZE = _NACK_NT0.size


class Nack(NamedTuple):
    m: int
    retx: int
    nt: int
    nack_code: int
    nack_psn: int     # pkt_id when nt = 1 (same place, B.10)
    spdcid: int
    dpdcid: int
    payload: int


def read_nack(data: bytes, end: int) -> Nack:
    """A NACK or NACK_CCX (whose first 16 bytes are a NACK's)."""
    if end < NACK_SIZE:
        raise TruncatedError("pds.nack", NACK_SIZE, end, 0)
    return Nack(*_read_nack(data))


_NACK_CONST = _NACK_NT0.const({"type": NACK_TYPE})
_NACK_SHIFTS = tuple(_NACK_NT0.shift[n] for n in ("m", "retx", "nack_code", "nack_psn", "spdcid",
                                                   "dpdcid", "payload"))
_NACK_LIMITS = tuple(_NACK_NT0.mask[n] for n in ("nack_code", "spdcid", "dpdcid"))


def nack_bytes(code: int, psn: int, spdcid: int, dpdcid: int, *, m: bool = False,
               retx: bool = False, payload: int = 0) -> bytes:
    """A NACK (B.10, NT = 0): the constant type ORed with each field at its place (a NACK goes out
    for every trimmed packet: the schema's codec would check and pack field by field)."""
    lim_code, lim_spdcid, lim_dpdcid = _NACK_LIMITS
    if not (0 <= code <= lim_code and 0 <= spdcid <= lim_spdcid and 0 <= dpdcid <= lim_dpdcid):
        # the schema's codec says which field does not fit (EncodeError)
        _NACK.encode({"type": NACK_TYPE, "nack_code": code, "spdcid": spdcid, "dpdcid": dpdcid})
    s_m, s_retx, s_code, s_psn, s_spdcid, s_dpdcid, s_payload = _NACK_SHIFTS
    return (_NACK_CONST | bool(m) << s_m | bool(retx) << s_retx | code << s_code
            | (psn & M32) << s_psn | spdcid << s_spdcid | dpdcid << s_dpdcid
            | (payload & M32) << s_payload).to_bytes(NACK_SIZE, "big")


_CTL = fast("pds.control")
_CTL0, _CTL1 = _CTL.layout(syn=0), _CTL.layout(syn=1)
_read_ctl = _CTL0.reader("ctl_type", "isrod", "retx", "ar", "syn", "probe_opaque", "psn",
                         "spdcid", "dpdcid", "payload")
CONTROL_SIZE = _CTL0.size
assert _CTL1.position("psn_offset") == _REQ1.position("psn_offset")


class Control(NamedTuple):
    ctl_type: int
    isrod: int
    retx: int
    ar: int
    syn: int
    probe_opaque: int
    psn: int
    spdcid: int
    dpdcid: int       # 0 when syn
    psn_offset: int   # SYN form only
    payload: int


def read_control(data: bytes, end: int) -> Control:
    if end < CONTROL_SIZE:
        raise TruncatedError("pds.control", CONTROL_SIZE, end, 0)
    ctl, isrod, retx, ar, syn, opaque, psn, spdcid, word, payload = _read_ctl(data)
    if syn:
        return Control(ctl, isrod, retx, ar, 1, opaque, psn, spdcid, 0,
                       (word >> (_PSNOFF_SHIFT - _DPDCID_SHIFT)) & _PSNOFF_MASK, payload)
    return Control(ctl, isrod, retx, ar, 0, opaque, psn, spdcid, word, 0, payload)


def control_bytes(ctl: int, psn: int, spdcid: int, *, dpdcid: int = 0,
                  psn_offset: int | None = None, rod: bool = False, retx: bool = False,
                  ar: bool = True, payload: int = 0, probe_opaque: int = 0) -> bytes:
    """A CONTROL packet (B.12); ``psn_offset`` given: the SYN form (no DPDCID yet)."""
    f = {"type": CONTROL_TYPE, "ctl_type": ctl, "isrod": rod, "retx": retx, "ar": ar,
         "syn": psn_offset is not None, "psn": psn & M32, "spdcid": spdcid,
         "payload": payload & M32, "probe_opaque": probe_opaque & 0xFFFF}
    if psn_offset is not None:
        f["psn_offset"] = psn_offset & _PSNOFF_MASK
    else:
        f["dpdcid"] = dpdcid
    return _CTL.encode(f)
