"""RoCEv2 layers: the extension headers generated from the schema, bound onto Scapy's own BTH.

``scapy.contrib.roce`` provides ``BTH``, ``AETH`` and ``CNPPadding``; this module generates RETH,
ImmDt, IETH, AtomicETH, AtomicAckETH and DETH from :mod:`uet.wire.roce_headers`, binds them (and
``AETH``) onto ``BTH`` by opcode for every transport, and adds one ``guess_payload_class`` rule to
``AETH`` so that the header after it is found from the BTH opcode (see "RoCEv2" in
:mod:`uet.scapy`). :data:`ROCE_LAYERS` maps the RoCE schema keys to classes.
"""

from __future__ import annotations

from scapy.contrib import roce as _roce
from scapy.contrib.roce import AETH, BTH
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_bottom_up, bind_layers, bind_top_down

from .. import ROCE_UDP_PORT
from ..wire import roce_headers as R
from .base import LAYERS, _SchemaPacket, class_name, make_layer


class _RoCEExt(_SchemaPacket):
    """Base of the generated RoCEv2 extension headers: the next header follows the BTH opcode."""

    def guess_payload_class(self, payload):  # type: ignore[override]
        nxt = _roce_next(self)
        return nxt if nxt is not None else super().guess_payload_class(payload)


# --- generation -------------------------------------------------------------------------------
# Stored as module globals under their class names (RETH, ImmDt, ...).

for _h in (R.RETH, R.IMMDT, R.IETH, R.ATOMICETH, R.ATOMICACKETH, R.DETH):
    globals()[class_name(_h)] = make_layer(_h, _RoCEExt)
LAYERS[R.BTH.key] = BTH
LAYERS[R.AETH.key] = AETH
LAYERS[R.CNP.key] = _roce.CNPPadding

#: RoCE schema key -> class
ROCE_LAYERS: dict[str, type] = {h.key: LAYERS[h.key] for h in R.ROCE_HEADERS}


# --- chaining and bindings --------------------------------------------------------------------

# RoCEv2: extension headers onto scapy.contrib.roce's BTH by opcode (G.3, G.4).
def _roce_next(layer: Packet) -> type | None:
    """The class of the RoCE extension header after ``layer``, from the BTH opcode below it."""
    bth = layer.underlayer
    while bth is not None and not isinstance(bth, BTH):
        bth = bth.underlayer
    if bth is None:
        return None
    try:
        exts = R.extension_headers(int(bth.opcode))
    except (TypeError, ValueError):
        return None
    if not exts:
        return None
    classes = [ROCE_LAYERS[h.key] for h in exts]
    for i, cls in enumerate(classes[:-1]):
        if type(layer) is cls:
            return classes[i + 1]
    return None


_scapy_aeth_guess = AETH.guess_payload_class


def _aeth_guess_payload_class(self, payload):
    nxt = _roce_next(self)
    return nxt if nxt is not None else _scapy_aeth_guess(self, payload)


if not getattr(AETH.guess_payload_class, "_uet", False):
    _aeth_guess_payload_class._uet = True
    AETH.guess_payload_class = _aeth_guess_payload_class  # type: ignore[method-assign]

_TOP_DOWN_OPCODE = {  # the opcode BTH()/X() gets (RC; UD for DETH), one per class
    "roce.reth": 0x0A, "roce.immdt": 0x05, "roce.ieth": 0x17, "roce.atomiceth": 0x14,
    "roce.deth": 0x64,
}
for _opc in range(256):
    _exts = R.extension_headers(_opc)
    if not _exts or _exts[0] is R.CNP:
        continue
    _first = ROCE_LAYERS[_exts[0].key]
    if _first is AETH:
        if not any(c is AETH and fv.get("opcode") == _opc for fv, c in BTH.payload_guess):
            bind_bottom_up(BTH, AETH, opcode=_opc)
        continue
    bind_bottom_up(BTH, _first, opcode=_opc)
for _key, _opc in _TOP_DOWN_OPCODE.items():
    bind_top_down(BTH, ROCE_LAYERS[_key], opcode=_opc)

# Scapy binds UDP 4791 -> BTH itself; make sure of it.
if not any(c is BTH and fv.get("dport") == ROCE_UDP_PORT for fv, c in UDP.payload_guess):
    bind_layers(UDP, BTH, dport=ROCE_UDP_PORT)

del _h, _opc, _exts, _first, _key
