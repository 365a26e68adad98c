"""RoCEv2 header declarations (docs/facts.md G.2-G.5), and which extension headers each opcode has.

Field names follow docs/design-notes.md's JSON contract (``dest_qp``, ``p_key``, ``pad_cnt``); the Scapy
binding maps them onto ``scapy.contrib.roce``'s own names where that module already has the header.
"""

from __future__ import annotations

from .enums import CNP_OPCODE, ROCE_OPCODE
from .schema import E, Flag, Header, Rsvd, U, X

BTH = Header("roce.bth", "InfiniBand base transport header", (
    E("opcode", 8, ROCE_OPCODE, "transport (bits 7-5) and operation (4-0)", "G.2"),
    Flag("se", "solicited event", "G.2"),
    Flag("m", "MigReq", "G.2"),
    U("pad_cnt", 2, "pad bytes before the ICRC", "G.2"),
    U("tver", 4, "transport header version", "G.2"),
    X("p_key", 16, "partition key", "G.2"),
    Flag("fecn", "forward congestion notification", "G.2"),
    Flag("becn", "backward congestion notification", "G.2"),
    Rsvd(6),
    U("dest_qp", 24, "destination QP", "G.2"),
    Flag("ack_req", "ACK requested", "G.2"),
    Rsvd(7),
    U("psn", 24, "packet sequence number", "G.2"),
), ref="G.2")

RETH = Header("roce.reth", "RDMA extended transport header", (
    X("virtual_address", 64, "virtual address", "G.4"),
    X("r_key", 32, "remote key", "G.4"),
    U("dma_length", 32, "DMA length", "G.4"),
), ref="G.4")

AETH = Header("roce.aeth", "ACK extended transport header", (
    X("syndrome", 8, "ACK/NAK syndrome", "G.4"),
    U("msn", 24, "message sequence number", "G.4"),
), ref="G.4")

IMMDT = Header("roce.immdt", "immediate data", (X("immediate", 32, "immediate data", "G.4"),), ref="G.4")

IETH = Header("roce.ieth", "invalidate extended transport header", (
    X("r_key", 32, "R_Key to invalidate", "G.4"),
), ref="G.4")

ATOMICETH = Header("roce.atomiceth", "atomic extended transport header", (
    X("virtual_address", 64, "virtual address", "G.4"),
    X("r_key", 32, "remote key", "G.4"),
    X("swap_add", 64, "swap or add value", "G.4"),
    X("compare", 64, "compare value", "G.4"),
), ref="G.4")

ATOMICACKETH = Header("roce.atomicacketh", "atomic ACK extended transport header", (
    X("original_value", 64, "original remote value", "G.4"),
), ref="G.4")

DETH = Header("roce.deth", "datagram extended transport header", (
    X("q_key", 32, "queue key", "G.4"),
    Rsvd(8),
    U("source_qp", 24, "source QP", "G.4"),
), ref="G.4")

CNP = Header("roce.cnp", "congestion notification packet body", (Rsvd(64), Rsvd(64)), ref="G.5")

ROCE_HEADERS = (BTH, RETH, AETH, IMMDT, IETH, ATOMICETH, ATOMICACKETH, DETH, CNP)

_AFTER_BTH = {
    # low 5 bits of the opcode -> extension headers in wire order (G.4)
    0x03: (IMMDT,), 0x05: (IMMDT,), 0x06: (RETH,), 0x09: (IMMDT,), 0x0A: (RETH,),
    0x0B: (RETH, IMMDT), 0x0C: (RETH,), 0x0D: (AETH,), 0x0F: (AETH,), 0x10: (AETH,),
    0x11: (AETH,), 0x12: (AETH, ATOMICACKETH), 0x13: (ATOMICETH,), 0x14: (ATOMICETH,),
    0x16: (IETH,), 0x17: (IETH,),
}


def extension_headers(opcode: int) -> tuple[Header, ...] | None:
    """Extension headers that follow the BTH for ``opcode``, in order; ``None`` if not decodable
    (RD transport with its RDETH, vendor and reserved opcodes)."""
    if opcode == CNP_OPCODE:
        return (CNP,)
    if opcode not in ROCE_OPCODE.table:
        return None
    transport, op = opcode & 0xE0, opcode & 0x1F
    if transport == 0x40:  # RD: RDETH + DETH precede; not decoded
        return None
    exts = _AFTER_BTH.get(op, ())
    return (DETH,) + exts if transport == 0x60 else exts


__all__ = ["ROCE_HEADERS", "extension_headers"]
