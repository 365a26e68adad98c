"""SES packets: one packet as header fields (:class:`SesPacket`), a message cut into packets
lazily (:class:`Message`), and the decoding of what follows a PDS header (:func:`decode_ses`).

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
  SES-S1  D.2/D.3: a message is cut into packets of at most ``mtu`` payload bytes; the first has SOM
      (its std header carries header_data, message_offset 0 implied), the last EOM; the others
      carry payload_length (14 bits) and message_offset (32 bits); every packet carries
      request_length (the whole message) and the same message_id.
  SES-S2  docs/design-notes.md Defaults / D.4: a message that fits one packet uses a smaller header when one
      serves: small (next_hdr 1) for SEND without header data; medium (next_hdr 2) for
      TAGGED_SEND, WRITE, ATOMIC and FETCHING_ATOMIC (match bits or memory key); length < 2^14.
      Standard otherwise, and always for READ (its data responses name read_request_message_id,
      D.7), the deferrable and rendezvous opcodes, DEFERRABLE_RTR and MSG_ERROR. B.14: a
      DATAGRAM_SEND uses the standard header ("normally 3").

A :class:`Message` gives each packet's header both ways: :meth:`Message.packet` as a
:class:`SesPacket` whose fields the schema codec encodes (the readable form), and
:meth:`Message.header` from per-message constants with one packed word per packet (the form the
PDS sends, 16,384 headers for a 64 MiB message); tests check that both give the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import DecodeError
from ..pds.upper import RequestTemplate
from ..wire import codec
from ..wire.fast import chain_reader, fast
from ..wire.uet_headers import ATOMIC_OPCODES, CSWAP_AMO_OPCODES, RENDEZVOUS_OPCODES
from .common import (M14, M32, M64, NH_MEDIUM, NH_SMALL, NH_STD, REQUEST_NH, SesError,
                     _HDR_KEY)


@dataclass(slots=True)
class SesPacket:
    """One SES packet: header dict (``next_hdr`` says which header), extension dict, payload.

    ``message_id`` is the initiator's id of the operation (also for small/medium headers that do
    not carry it) so that a transport can attribute responses (SES-I1); ``request_ref`` on a response
    is the transport id of the request it answers (the PSN whose ACK carries it, or the RUDI
    pkt_id). As an item for the PDS (uet/pds/upper.py) it is one request."""
    next_hdr: int
    ses: dict
    ext: dict | None = None
    payload: bytes = b""
    peer: Any = None
    message_id: int = 0
    request_ref: Any = None

    @property
    def opcode(self) -> int:
        return int(self.ses.get("opcode", 0))

    @property
    def is_request(self) -> bool:
        return self.next_hdr in REQUEST_NH

    def header_bytes(self) -> bytes:
        out = codec(_HDR_KEY[self.next_hdr]).encode(self.ses)
        if self.ext is not None:
            out += codec(ext_key(self.opcode, self.ext)).encode(self.ext)
        return out

    def to_bytes(self) -> bytes:
        """SES header + extension + payload: what follows the PDS header on the wire."""
        return self.header_bytes() + bytes(self.payload)

    # the PDS's view of it (uet.pds.upper.Outgoing): one request
    @property
    def token(self) -> int:
        return self.message_id

    @property
    def job_id(self) -> int:
        """D.2: the job it belongs to (part of its PDC's key, C.1)."""
        return int(self.ses.get("job_id", 0))

    count = 1

    def header(self, k: int) -> bytes:
        return self.header_bytes()

    def payload_of(self, k: int) -> bytes:
        return self.payload

    def size_of(self, k: int) -> int:
        return len(self.payload)

    def template(self) -> None:
        """One request: the builder asks :meth:`header` and :meth:`payload_of`."""
        return None

    def packets(self) -> list["SesPacket"]:
        return [self]


def ext_key(opcode: int, ext: Mapping[str, Any]) -> str:
    """The schema key of a request's extension header (D.5, D.6)."""
    if opcode in ATOMIC_OPCODES:
        return "ses.cswap" if int(ext.get("atomic_opcode", 0)) in CSWAP_AMO_OPCODES else "ses.atomic"
    return "ses.rendezvous"


def decode_ses(next_hdr: int, data: bytes | bytearray | memoryview
               ) -> tuple[dict, dict | None, memoryview]:
    """(SES header, extension or None, payload) from the bytes after the PDS header; the payload
    is a view of ``data``. Raises :class:`DecodeError` only (SES-E1 callers catch it)."""
    key = _HDR_KEY.get(next_hdr)
    if key is None:
        raise DecodeError(f"next_hdr {next_hdr} is not an SES header")
    f, n = fast(key).decode(data, 0)
    ext = None
    if next_hdr in REQUEST_NH:
        op = f["opcode"]
        if op in ATOMIC_OPCODES or (op in RENDEZVOUS_OPCODES and next_hdr == NH_STD):
            # the atomic extension is the cswap one when its first byte is a CSWAP AMO opcode
            if op in ATOMIC_OPCODES and n < len(data) and data[n] in CSWAP_AMO_OPCODES:
                ek = "ses.cswap"
            else:
                ek = "ses.atomic" if op in ATOMIC_OPCODES else "ses.rendezvous"
            ext, m = fast(ek).decode(data, n)
            n += m
    return f, ext, memoryview(data)[n:]


_STD = fast("ses.std")
STD_SIZE = _STD.layout(opcode=0, som=0).size
_COMMON = ("opcode", "som", "eom", "ie", "message_id", "initiator", "request_length")
_MIDDLE = _STD.layout(opcode=0, som=0)
# every variant of the standard header (by opcode, D.3) holds these at the same place, and the
# non-SOM ones the payload length and offset: one compiled reader serves them all
assert all(_STD.layout(opcode=op, som=som).position(n) == _MIDDLE.position(n)
           for op in range(64) for som in (0, 1) for n in _COMMON)
assert all(_STD.layout(opcode=op, som=0).position(n) == _MIDDLE.position(n)
           for op in range(64) for n in ("payload_length", "message_offset"))
read_std = chain_reader((_MIDDLE, _COMMON + ("payload_length", "message_offset")))
read_std.__doc__ = """(opcode, som, eom, ie, message_id, initiator, request_length,
payload_length, message_offset) of a standard header (D.3) of at least STD_SIZE bytes; the last
two mean something only without SOM (the SOM packet holds header data there)."""


class Message:
    """A request message of more than one packet (SES-S1), cut as the PDS asks for its packets.

    ``fields`` are the standard header's fields common to every packet (opcode, message_id,
    request_length, ids, keys ...), ``first`` what only the SOM packet adds (header data)."""

    next_hdr = NH_STD
    is_request = True

    def __init__(self, peer: Any, message_id: int, data: bytes | memoryview, mtu: int,
                 fields: dict, first: dict, ext: dict | None):
        self.peer = peer
        self.message_id = self.token = message_id
        self.data = memoryview(data)
        self.mtu = mtu
        self.length = len(data)
        self.count = max(1, -(-self.length // mtu))
        self.fields = fields
        self.first = first
        self.ext = ext
        self.ses = dict(fields, som=True, eom=self.count == 1, **first)  # the first packet's
        opcode = fields["opcode"]
        som = _STD.layout(opcode=opcode, som=1)
        mid = _STD.layout(opcode=opcode, som=0)
        self._som = som.const(self.ses).to_bytes(som.size, "big")
        self._mid = mid.const(dict(fields, som=False, eom=False))
        self._mid_size = mid.size
        self._len_shift = mid.shift["payload_length"]
        self._off_shift = mid.shift["message_offset"]
        self._eom = 1 << mid.shift["eom"]
        self._ext = codec(ext_key(opcode, ext)).encode(ext) if ext is not None else b""
        self._template: RequestTemplate | None = None  # made when the PDS first asks

    @property
    def opcode(self) -> int:
        return int(self.fields["opcode"])

    @property
    def job_id(self) -> int:
        return int(self.fields.get("job_id", 0))

    def payload(self, k: int) -> memoryview:
        return self.data[k * self.mtu:(k + 1) * self.mtu]

    payload_of = payload

    def size_of(self, k: int) -> int:
        """The length of :meth:`payload` ``k`` (every request but the last carries ``mtu``)."""
        return min(self.mtu, self.length - k * self.mtu)

    def header(self, k: int) -> bytes:
        """Packet ``k``'s header (and extension), packed from the message's constants."""
        if k == 0:
            return self._som + self._ext
        off = k * self.mtu
        n = min(self.mtu, self.length - off)
        v = self._mid | (n << self._len_shift) | (off << self._off_shift)
        if k + 1 == self.count:
            v |= self._eom
        return v.to_bytes(self._mid_size, "big") + self._ext

    def template(self) -> RequestTemplate | None:
        """What :meth:`header` and :meth:`payload` do, as constants (uet.pds.upper.Outgoing);
        None when the data is not plain bytes (a builder would have to copy it first)."""
        t = self._template
        if t is None:
            data = self.data
            if not (data.itemsize == 1 and data.c_contiguous):
                return None
            t = self._template = RequestTemplate(
                data=data, mtu=self.mtu, som=self._som, mid=self._mid, mid_size=self._mid_size,
                len_shift=self._len_shift, off_shift=self._off_shift,
                eom_shift=self._eom.bit_length() - 1, ext=self._ext)
        return t

    def packet(self, k: int) -> SesPacket:
        """Packet ``k`` as header fields (the readable form of :meth:`header`)."""
        off = k * self.mtu
        chunk = self.data[off:off + self.mtu]
        if k == 0:
            f = dict(self.ses)
        else:
            f = dict(self.fields, som=False, eom=k + 1 == self.count, payload_length=len(chunk),
                     message_offset=off)
        return SesPacket(NH_STD, f, self.ext, bytes(chunk), self.peer, self.message_id)

    def packets(self) -> list[SesPacket]:
        return [self.packet(k) for k in range(self.count)]


def cut(peer: Any, message_id: int, data: bytes, *, mtu: int, small_header: bool,
        common: dict, key: dict, header_data: int | None = None, ext: dict | None = None,
        small_ok: bool = False, medium_ok: bool = False) -> SesPacket | Message:
    """SES-S1, SES-S2: one request message as a single packet, or as a :class:`Message` to cut."""
    n = len(data)
    if n > M32:
        raise SesError("message longer than 2^32 - 1 bytes")
    mtu = max(1, mtu)
    opcode = common["opcode"]
    if small_header and n <= mtu and n <= M14 and header_data is None and (small_ok or medium_ok):
        f = dict(common, som=True, eom=True, request_length=n)
        if small_ok and not key:
            return SesPacket(NH_SMALL, f, ext, bytes(data), peer, message_id)
        f.update(key)
        return SesPacket(NH_MEDIUM, f, ext, bytes(data), peer, message_id)
    fields = dict(common, message_id=message_id, request_length=n, **key)
    first = {"hd": True, "header_data": header_data & M64} if header_data is not None else {}
    if n <= mtu:
        f = dict(fields, som=True, eom=True, **first)
        return SesPacket(NH_STD, f, ext, bytes(data), peer, message_id)
    assert opcode is not None
    return Message(peer, message_id, data, mtu, fields, first, ext)
