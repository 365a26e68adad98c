"""The UET layers: dispatcher, trailer handling, the generated classes and how they chain.

* :class:`UET` - the layer after UDP (or ``UET_Entropy``): dispatches on the PDS type to
  ``UET_TSS`` / ``UET_PDS_*`` (which subclass it) and handles the CRC-32C trailer / TSS ICV;
* :class:`UET_SES_AMO` - dispatches the SES atomic extension to ``UET_SES_ATOMIC`` / ``_CSWAP``;
* the generated classes ``UET_Entropy``, ``UET_TSS``, ``UET_PDS_*``, ``UET_SES_*`` (made with
  :func:`uet.scapy.base.make_layer`, module globals by class name) and :data:`PDS_LAYERS`,
  :data:`SES_LAYERS`;
* the bindings: UDP port (:func:`bind_uet_port`, :func:`configure`), IP protocol 253, and the
  PDS -> SES -> extension chain of :mod:`uet.wire.uet_headers`.
"""

from __future__ import annotations

import struct
from typing import Any

from scapy.config import conf
from scapy.error import warning
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import bind_bottom_up, bind_layers, bind_top_down, split_bottom_up, split_top_down

from .. import UET_IP_PROTO
from .. import native
from ..wire import uet_headers as U
from ..wire.schema import Header, Options
from .base import LAYERS, UETPacket, class_name, make_layer
from .config import TRAILER_MODES, _cfg, trailer_mode, uet_options


class UET(UETPacket):
    """The UET packet after UDP (port 4793) or the entropy header: dispatches on the 5-bit type
    (B.1) to ``UET_TSS`` or a ``UET_PDS_*`` class. Those subclass ``UET`` and carry the trailer."""

    name = "UET"
    fields_desc: list = []
    _trailer: tuple[str, int] | None = None  # (field name, length) of the subclass's trailer

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt:
            return PDS_LAYERS.get(_pkt[0] >> 3, conf.raw_layer)
        return cls

    # --- trailer ---------------------------------------------------------------------------

    def _uet_outermost(self) -> bool:
        return isinstance(self.underlayer, (UDP, UET_Entropy))

    def do_dissect(self, s):  # type: ignore[override]
        self._uet_trailer = False
        tail = b""
        if self._trailer is not None and self._uet_outermost():
            s, tail, self._uet_trailer = self._take_trailer(s)
        rest = super().do_dissect(s)
        if tail:
            if self.uet_truncated:
                self.raw_packet_cache = s + tail  # payload is empty: the trailer follows at once
                self.fields[self._trailer[0]] = self._uet_trailer  # type: ignore[index]
            else:
                self.raw_packet_cache = None  # rebuild from the fields; post_build appends the trailer
        elif self.uet_truncated and self._trailer is not None:
            self.fields[self._trailer[0]] = False
        return rest

    def _take_trailer(self, s: bytes) -> tuple[bytes, bytes, Any]:
        name, length = self._trailer  # type: ignore[misc]
        if length != 4:  # TSS: the ICV replaces the CRC (facts F), not subject to the CRC mode
            if len(s) >= length:
                return s[:-length], s[-length:], s[-length:]
            return s, b"", False
        mode = trailer_mode()
        if mode == "none" or len(s) < 4:
            return s, b"", False
        carried = int.from_bytes(s[-4:], "big")
        if mode == "crc":
            return s[:-4], s[-4:], carried
        computed = self._crc_over(s[:-4], len(s))
        if computed is not None and computed == carried:
            return s[:-4], s[-4:], carried
        return s, b"", False

    def _crc_seed_bytes(self, uet_len: int) -> bytes | None:
        """Addresses + UDP header (checksum 0) or entropy header, as uet.wire.trailer covers them;
        ``uet_len`` is the UET byte count including the trailer. None without an IP layer."""
        under = self.underlayer
        if isinstance(under, UDP):
            ulen = under.len if under.len is not None else 8 + uet_len
            mid = struct.pack("!HHHH", int(under.sport), int(under.dport), int(ulen) & 0xFFFF, 0)
        elif isinstance(under, UET_Entropy):
            mid = bytes(under.self_build())
        else:
            return None
        ip = under.underlayer
        while ip is not None and not isinstance(ip, (IP, IPv6)):
            ip = ip.underlayer
        if ip is None:
            return None
        addrs = b"".join(ip.get_field(n).i2m(ip, ip.getfieldval(n)) for n in ("src", "dst"))
        return addrs + mid

    def _crc_over(self, body: bytes, uet_len: int) -> int | None:
        seed = self._crc_seed_bytes(uet_len)
        if seed is None:
            return None
        return native.crc32c(body, native.crc32c(seed))

    def _trailer_on_build(self) -> bool:
        if self._trailer is None or not self._uet_outermost():
            return False
        val = self.getfieldval(self._trailer[0])
        if val is False:
            return False
        if self._trailer[1] != 4:
            return val is not None
        return trailer_mode() != "none"

    def post_build(self, p, pay):  # type: ignore[override]
        p += pay
        if not self._trailer_on_build():
            return p
        name, length = self._trailer  # type: ignore[misc]
        val = self.getfieldval(name)
        if length != 4:
            return p + bytes(val).ljust(length, b"\0")[:length]
        if val is None:
            val = self._crc_over(p, len(p) + 4)
            if val is None:
                warning("%s: no IP layer below, CRC-32C trailer set to 0", self.__class__.__name__)
                val = 0
        return p + (int(val) & 0xFFFFFFFF).to_bytes(4, "big")

    def crc_computed(self) -> int | None:
        """The CRC-32C trailer this packet should carry (None without IP/UDP below)."""
        if self._trailer is None or self._trailer[1] != 4:
            return None
        body = self._body_bytes()
        return self._crc_over(body, len(body) + 4)

    def crc_ok(self) -> bool | None:
        """Whether the carried CRC-32C trailer is right; None when no trailer was taken (or there
        is no IP layer to compute it with)."""
        if self._trailer is None or self._trailer[1] != 4:
            return None
        carried = self.getfieldval(self._trailer[0])
        if carried is False:
            return None
        computed = self.crc_computed()
        if computed is None:
            return None
        return carried is None or computed == int(carried)

    def _body_bytes(self) -> bytes:
        """This layer and its payload as on the wire, without the trailer."""
        full = bytes(self)
        if self._trailer_on_build():
            return full[:-self._trailer[1]]  # type: ignore[index]
        return full


class UET_SES_AMO(UETPacket):
    """Dispatcher for the SES atomic extension (D.6): ``UET_SES_CSWAP`` when the AMO opcode (first
    byte) is a compare-and-swap (``CSWAP_AMO_OPCODES``, and MSWAP with ``mswap_cswap_ext``),
    else ``UET_SES_ATOMIC``."""

    name = "UET SES AMO"
    fields_desc: list = []

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt:
            amo = _pkt[0]
            cswap = amo in U.CSWAP_AMO_OPCODES or (uet_options().mswap_cswap_ext
                                                   and amo == U.MSWAP_AMO_OPCODE)
            return UET_SES_CSWAP if cswap else UET_SES_ATOMIC
        return UET_SES_ATOMIC


# --- generation -------------------------------------------------------------------------------
# The PDS and SES classes are made in a loop and stored as module globals under their class names
# (UET_PDS_ACK, UET_SES_STD, ...), which the classes above and the bindings below refer to.

def _first_type(header: Header) -> int:
    return min(t for t, h in U.PDS_BY_TYPE.items() if h is header)


UET_Entropy = make_layer(U.ENTROPY)
UET_TSS = make_layer(U.TSS, UET, trailer=("icv", U.TSS_ICV_LEN), defaults={"type": 1})


def _tss_decrypt(self: Any, key: bytes, *, sdi: int | None = None, mode: str = "direct",
                 aad: str = "addresses") -> Any:
    """F: the packet this TSS header protects, decrypted with the 32-byte secure-domain ``key``
    (``mode`` and ``aad`` as the sender used them, uet.tss), as the ``UET_PDS_*`` layer it
    starts with (no trailer: the tag took its place); None when the key does not open it or the
    layer has no IP/UDP below it (the addresses and the source port are part of the IV and AAD)."""
    from ..tss.capture import opener_for_key

    udp = self.underlayer
    ip = udp.underlayer if isinstance(udp, UDP) else None
    while ip is not None and not isinstance(ip, (IP, IPv6)):
        ip = ip.underlayer
    if ip is None:
        return None
    addrs = [ip.get_field(n).i2m(ip, ip.getfieldval(n)) for n in ("src", "dst")]
    opened = opener_for_key(key, sdi=sdi, mode=mode, aad=aad)(
        bytes(self), addrs[0], addrs[1], int(udp.sport), False)
    if opened is None or not opened[0]:
        return None
    return PDS_LAYERS.get(opened[0][0] >> 3, conf.raw_layer)(opened[0])


UET_TSS.decrypt = _tss_decrypt

_pds_headers: list[Header] = []
for _h in U.PDS_BY_TYPE.values():
    if _h not in _pds_headers:
        _pds_headers.append(_h)
for _h in _pds_headers:
    globals()[class_name(_h)] = make_layer(_h, UET, trailer=("crc", U.CRC_TRAILER_LEN),
                                           defaults={"type": _first_type(_h)})

for _h in (U.SES_STD, U.SES_SMALL, U.SES_MEDIUM, U.SES_RSP, U.SES_RSP_DATA, U.SES_RSP_DATA_SMALL,
           U.SES_ATOMIC, U.SES_CSWAP, U.SES_RENDEZVOUS):
    globals()[class_name(_h)] = make_layer(_h)

#: PDS type (B.1) -> class; type 1 -> UET_TSS
PDS_LAYERS: dict[int, type] = {1: UET_TSS}
PDS_LAYERS.update({t: LAYERS[h.key] for t, h in U.PDS_BY_TYPE.items()})
#: next_hdr (B.2) -> SES class
SES_LAYERS: dict[int, type] = {nh: LAYERS[h.key] for nh, h in U.SES_BY_NEXT_HDR.items()}


# --- bindings ---------------------------------------------------------------------------------

_bound_ports: list[int] = []


def bind_uet_port(port: int, *, keep_old: bool = False) -> None:
    """Dissect UDP ``port`` (as destination or source) as UET, and make ``UDP()/UET_...()`` use it
    as destination. Without ``keep_old`` the previously bound port(s) are released."""
    port = int(port)
    if not keep_old:
        for old in _bound_ports:
            split_bottom_up(UDP, UET, dport=old)
            split_bottom_up(UDP, UET, sport=old)
        _bound_ports.clear()
        split_top_down(UDP, UET)
    if port not in _bound_ports:
        bind_bottom_up(UDP, UET, dport=port)
        bind_bottom_up(UDP, UET, sport=port)
        _bound_ports.append(port)
    bind_top_down(UDP, UET, dport=port)
    _cfg()["port"] = port


def configure(*, trailer: str | None = None, options: Options | None = None,
              port: int | None = None) -> None:
    """Set the trailer mode, the decoder options and/or the UET UDP port."""
    if trailer is not None:
        if trailer not in TRAILER_MODES:
            raise ValueError(f"trailer must be one of {TRAILER_MODES}")
        _cfg()["trailer"] = trailer
    if options is not None:
        _cfg()["options"] = options
    if port is not None:
        bind_uet_port(port)


bind_uet_port(_cfg()["port"])
bind_layers(IP, UET_Entropy, proto=UET_IP_PROTO)
bind_layers(IPv6, UET_Entropy, nh=UET_IP_PROTO)
bind_layers(UET_Entropy, UET)

# PDS -> SES by next_hdr (B.2); CONTROL's slot holds ctl_type (B.12): no SES.
for _h in _pds_headers:
    if _h is U.CONTROL:
        continue
    for _nh, _sh in U.SES_BY_NEXT_HDR.items():
        bind_layers(LAYERS[_h.key], LAYERS[_sh.key], next_hdr=_nh)

# SES request -> extension by opcode (D.5, D.6), as uet.wire.packet chains them.
_first_atomic = min(U.ATOMIC_OPCODES)
for _sh in (U.SES_STD, U.SES_SMALL, U.SES_MEDIUM):
    _lower = LAYERS[_sh.key]
    for _op in sorted(U.ATOMIC_OPCODES):
        bind_bottom_up(_lower, UET_SES_AMO, opcode=_op)
    bind_top_down(_lower, UET_SES_ATOMIC, opcode=_first_atomic)
    bind_top_down(_lower, UET_SES_CSWAP, opcode=_first_atomic)
for _op in sorted(U.RENDEZVOUS_OPCODES):
    bind_bottom_up(UET_SES_STD, UET_SES_RENDEZVOUS, opcode=_op)
bind_top_down(UET_SES_STD, UET_SES_RENDEZVOUS, opcode=min(U.RENDEZVOUS_OPCODES))

del _h, _sh, _nh, _op, _lower
