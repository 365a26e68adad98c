"""Every value table of the wire formats, named as docs/facts.md names them.

UET: packet types (B.1), next headers (B.2), ACK request (B.4), CC types (B.8), NACK codes (B.11),
control types (B.12), SES request opcodes (D.1), response opcodes and lists (D.7), return codes
(D.8), AMO opcodes and data types (D.6). RoCEv2: BTH opcodes (G.3, G.5), AETH syndrome types (G.4),
ECN code points (A.2). CSIG: the tag's signal types (E.4).
"""

from __future__ import annotations

from .schema import Enum

PDS_TYPE = Enum("pds_type", {
    0: "RESERVED", 1: "TSS", 2: "RUD_REQ", 3: "ROD_REQ", 4: "RUDI_REQ", 5: "RUDI_RESP",
    6: "UUD_REQ", 7: "ACK", 8: "ACK_CC", 9: "ACK_CCX", 10: "NACK", 11: "CONTROL",
    12: "NACK_CCX", 13: "RUD_CC_REQ", 14: "ROD_CC_REQ",
}, ref="B.1")

NEXT_HDR = Enum("next_hdr", {
    0: "NONE", 1: "REQUEST_SMALL", 2: "REQUEST_MEDIUM", 3: "REQUEST_STD",
    4: "RESPONSE", 5: "RESPONSE_DATA", 6: "RESPONSE_DATA_SMALL",
}, ref="B.2")

ACK_REQ = Enum("ack_req", {0: "NONE", 1: "CLEAR", 2: "CLOSE"}, ref="B.4")

CC_TYPE = Enum("cc_type", {0: "NSCC", 1: "CREDIT"}, ref="B.8")

NACK_CODE = Enum("nack_code", {
    0x01: "TRIMMED", 0x02: "TRIMMED_LASTHOP", 0x03: "TRIMMED_ACK", 0x04: "NO_PDC_AVAIL",
    0x05: "NO_CCC_AVAIL", 0x06: "NO_BITMAP", 0x07: "NO_PKT_BUFFER", 0x08: "NO_GTD_DEL_AVAIL",
    0x09: "NO_SES_MSG_AVAIL", 0x0A: "NO_RESOURCE", 0x0B: "PSN_OOR_WINDOW", 0x0D: "ROD_OOO",
    0x0E: "INV_DPDCID", 0x0F: "PDC_HDR_MISMATCH", 0x10: "CLOSING", 0x11: "CLOSING_IN_ERR",
    0x12: "PKT_NOT_RCVD", 0x13: "GTD_RESP_UNAVAIL", 0x14: "ACK_WITH_DATA", 0x15: "INVALID_SYN",
    0x16: "PDC_MODE_MISMATCH", 0x17: "NEW_START_PSN", 0x18: "RCVD_SES_PROCG", 0x19: "UNEXP_EVENT",
    0x1A: "RCVR_INFER_LOSS", 0xFD: "EXP_NACK_NORMAL", 0xFE: "EXP_NACK_ERR", 0xFF: "EXP_NACK_FATAL",
}, ref="B.11")

CTL_TYPE = Enum("ctl_type", {
    0: "NOOP", 1: "ACK_REQ", 2: "CLEAR", 3: "CLEAR_REQ", 4: "CLOSE", 5: "CLOSE_REQ",
    6: "PROBE", 7: "CREDIT", 8: "CREDIT_REQ", 9: "NEGOTIATION",
}, ref="B.12")

SES_OPCODE = Enum("ses_opcode", {
    0x00: "NO_OP", 0x01: "WRITE", 0x02: "READ", 0x03: "ATOMIC", 0x04: "FETCHING_ATOMIC",
    0x05: "SEND", 0x06: "RENDEZVOUS_SEND", 0x07: "DATAGRAM_SEND", 0x08: "DEFERRABLE_SEND",
    0x09: "TAGGED_SEND", 0x0A: "RENDEZVOUS_TSEND", 0x0B: "DEFERRABLE_TSEND",
    0x0C: "DEFERRABLE_RTR", 0x0D: "TSEND_ATOMIC", 0x0E: "TSEND_FETCH_ATOMIC", 0x0F: "MSG_ERROR",
}, ref="D.1", ranges=((0x30, 0x3E, "VENDOR"), (0x3F, 0x3F, "EXTENDED")))

RSP_OPCODE = Enum("rsp_opcode", {
    0: "DEFAULT_RESPONSE", 1: "RESPONSE", 2: "RESPONSE_W_DATA", 3: "NO_RESPONSE",
}, ref="D.7", ranges=((0x30, 0x3F, "VENDOR"),))

RSP_LIST = Enum("rsp_list", {0: "EXPECTED", 1: "OVERFLOW"}, ref="D.7", ranges=((2, 3, "VENDOR"),))

RETURN_CODE = Enum("return_code", {
    0x00: "NULL", 0x01: "OK", 0x02: "BAD_GENERATION", 0x03: "DISABLED", 0x04: "DISABLED_GEN",
    0x05: "NO_MATCH", 0x06: "UNSUPPORTED_OP", 0x07: "UNSUPPORTED_SIZE", 0x08: "AT_INVALID",
    0x09: "AT_PERM", 0x0A: "AT_ATS_ERROR", 0x0B: "AT_NO_TRANS", 0x0C: "AT_OUT_OF_RANGE",
    0x0D: "HOST_POISONED", 0x0E: "HOST_UNSUCCESS_CMPL", 0x0F: "AMO_UNSUPPORTED_OP",
    0x10: "AMO_UNSUPPORTED_DT", 0x11: "AMO_UNSUPPORTED_SIZE", 0x12: "AMO_UNALIGNED",
    0x13: "AMO_FP_NAN", 0x14: "AMO_FP_UNDERFLOW", 0x15: "AMO_FP_OVERFLOW", 0x16: "AMO_FP_INEXACT",
    0x17: "PERM_VIOLATION", 0x18: "OP_VIOLATION", 0x19: "BAD_INDEX", 0x1A: "BAD_PID",
    0x1B: "BAD_JOB_ID", 0x1C: "BAD_MKEY", 0x1D: "BAD_ADDR", 0x1E: "CANCELLED",
    0x1F: "UNDELIVERABLE", 0x20: "UNCOR", 0x21: "UNCOR_TRNSNT", 0x22: "TOO_LONG",
    0x23: "INITIATOR_ERR", 0x24: "DROPPED", 0x3E: "EXTENDED",
}, ref="D.8", ranges=((0x30, 0x37, "VENDOR"),))

AMO_OPCODE = Enum("amo_opcode", {
    0x00: "MIN", 0x01: "MAX", 0x02: "SUM", 0x03: "DIFF", 0x04: "PROD", 0x05: "LOR", 0x06: "LAND",
    0x07: "BOR", 0x08: "BAND", 0x09: "LXOR", 0x0A: "BXOR", 0x0B: "READ", 0x0C: "WRITE",
    0x0D: "CSWAP", 0x0E: "CSWAP_NE", 0x0F: "CSWAP_LE", 0x10: "CSWAP_LT", 0x11: "CSWAP_GE",
    0x12: "CSWAP_GT", 0x13: "MSWAP", 0x14: "INVAL",
}, ref="D.6", ranges=((0xE0, 0xFE, "VENDOR"),))

AMO_DATATYPE = Enum("amo_datatype", {
    0x00: "INT8", 0x01: "UINT8", 0x02: "INT16", 0x03: "UINT16", 0x04: "INT32", 0x05: "UINT32",
    0x06: "INT64", 0x07: "UINT64", 0x08: "INT128", 0x09: "UINT128", 0x0A: "FLOAT", 0x0B: "DOUBLE",
    0x0C: "FLOAT_COMPLEX", 0x0D: "DOUBLE_COMPLEX", 0x0E: "LONG_DOUBLE", 0x0F: "LONG_DOUBLE_COMPLEX",
    0x10: "BF16", 0x11: "FP16",
}, ref="D.6", ranges=((0xE0, 0xFE, "VENDOR"),))

# --- RoCEv2 -----------------------------------------------------------------------------------

ROCE_TRANSPORT = {"RC": 0x00, "UC": 0x20, "RD": 0x40, "UD": 0x60}

# G.3 operation codes (low 5 bits); which transports define them follows IBTA via ib_pack.h.
ROCE_OPS = {
    0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x03: "SEND_LAST_WITH_IMMEDIATE",
    0x04: "SEND_ONLY", 0x05: "SEND_ONLY_WITH_IMMEDIATE", 0x06: "RDMA_WRITE_FIRST",
    0x07: "RDMA_WRITE_MIDDLE", 0x08: "RDMA_WRITE_LAST", 0x09: "RDMA_WRITE_LAST_WITH_IMMEDIATE",
    0x0A: "RDMA_WRITE_ONLY", 0x0B: "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 0x0C: "RDMA_READ_REQUEST",
    0x0D: "RDMA_READ_RESPONSE_FIRST", 0x0E: "RDMA_READ_RESPONSE_MIDDLE",
    0x0F: "RDMA_READ_RESPONSE_LAST", 0x10: "RDMA_READ_RESPONSE_ONLY", 0x11: "ACKNOWLEDGE",
    0x12: "ATOMIC_ACKNOWLEDGE", 0x13: "COMPARE_SWAP", 0x14: "FETCH_ADD",
    0x16: "SEND_LAST_WITH_INVALIDATE", 0x17: "SEND_ONLY_WITH_INVALIDATE", 0x1C: "FLUSH",
    0x1D: "ATOMIC_WRITE",
}
_UC_OPS = range(0x00, 0x0C)
_UD_OPS = (0x04, 0x05)

CNP_OPCODE = 0x81  # G.5, H.1 #16


def _roce_opcodes() -> dict[int, str]:
    table: dict[int, str] = {}
    for tname, base in ROCE_TRANSPORT.items():
        for op, oname in ROCE_OPS.items():
            if tname == "UC" and op not in _UC_OPS:
                continue
            if tname == "UD" and op not in _UD_OPS:
                continue
            table[base + op] = f"{tname}_{oname}"
    table[CNP_OPCODE] = "CNP"
    return table


ROCE_OPCODE = Enum("roce_opcode", _roce_opcodes(), ref="G.3", ranges=((0xC0, 0xFF, "VENDOR"),))

# G.4: AETH syndrome bits 7-5.
AETH_TYPE = Enum("aeth_type", {0: "ACK", 1: "RNR_NAK", 3: "NAK"}, ref="G.4")
AETH_NAK_CODE = Enum("aeth_nak", {
    0: "PSN_SEQUENCE_ERROR", 1: "INVALID_REQUEST", 2: "REMOTE_ACCESS_ERROR",
    3: "REMOTE_OPERATIONAL_ERROR",
}, ref="G.4")

ECN = Enum("ecn", {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}, ref="A.2")
#: A.2: the ECN code points by name (the one definition; every module imports these)
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
#: A.2, docs/design-notes.md "Defaults": the DSCP classes of data, of ACKs/NACKs/control, and of a trimmed
#: packet (C.6: a switch that trims rewrites the DSCP to this)
DSCP_DATA, DSCP_CONTROL, DSCP_TRIMMED = 0, 46, 11

# --- CSIG (E.4) -------------------------------------------------------------------------------
# The signal types of the CSIG tag's t field, as E.4 lists them. uet.cms.csig (CMS-C1) holds the same
# table under lower-case names for the CMS code; it cannot be imported here, because uet.cms imports
# uet.wire (an import the other way would make a circle), so a test pins the two together.
CSIG_TYPE = Enum("csig_type", {0: "ABW", 1: "ABW/C", 2: "DELAY", 3: "NQD"}, ref="E.4")


def aeth_syndrome_name(syndrome: int) -> str:
    """``ACK(credits=5)``, ``RNR_NAK(timer=5)``, ``NAK(PSN_SEQUENCE_ERROR)`` (G.4)."""
    kind = syndrome >> 5
    low = syndrome & 0x1F
    if kind == 0:
        return "ACK(credits=unlimited)" if low == 0x1F else f"ACK(credits={low})"
    if kind == 1:
        return f"RNR_NAK(timer={low})"
    if kind == 3:
        code = AETH_NAK_CODE.symbol(low)
        return f"NAK({code})" if code else f"NAK(0x{low:02X})"
    return f"RESERVED(0x{syndrome:02X})"


# --- the PDS types by role (B.1), for whoever sorts datagrams: named from PDS_TYPE ---------------
_PDS = {name: code for code, name in PDS_TYPE.table.items()}
TSS_TYPE = _PDS["TSS"]
RUD_REQ, ROD_REQ, RUD_CC_REQ, ROD_CC_REQ = (_PDS["RUD_REQ"], _PDS["ROD_REQ"], _PDS["RUD_CC_REQ"],
                                            _PDS["ROD_CC_REQ"])
RUDI_REQ, RUDI_RESP, UUD_REQ = _PDS["RUDI_REQ"], _PDS["RUDI_RESP"], _PDS["UUD_REQ"]
ACK_TYPE, ACK_CC_TYPE, ACK_CCX_TYPE = _PDS["ACK"], _PDS["ACK_CC"], _PDS["ACK_CCX"]
NACK_TYPE, NACK_CCX_TYPE, CONTROL_TYPE = _PDS["NACK"], _PDS["NACK_CCX"], _PDS["CONTROL"]
#: RUD/ROD requests, plain and with CC state (B.5, B.6)
REQUEST_TYPES = frozenset({RUD_REQ, ROD_REQ, RUD_CC_REQ, ROD_CC_REQ})
ROD_TYPES = frozenset({ROD_REQ, ROD_CC_REQ})
CC_REQUEST_TYPES = frozenset({RUD_CC_REQ, ROD_CC_REQ})
ACK_TYPES = frozenset({ACK_TYPE, ACK_CC_TYPE, ACK_CCX_TYPE})
NACK_TYPES = frozenset({NACK_TYPE, NACK_CCX_TYPE})
#: what belongs to a PDC (C.8): requests, their ACKs and NACKs (NT = 0), control
PDC_TYPES = REQUEST_TYPES | ACK_TYPES | NACK_TYPES | {CONTROL_TYPE}
#: the connectionless modes (C.8, B.13, B.14); a NACK with NT = 1 also belongs to RUDI
RUDI_TYPES = frozenset({RUDI_REQ, RUDI_RESP})
NACK_NT_FLAG = 0x08  # B.4: NT in the 7-bit flags of a NACK (byte 1), 1 = a RUDI NACK
_CTL = {name: code for code, name in CTL_TYPE.table.items()}
(CTL_NOOP, CTL_ACK_REQ, CTL_CLEAR, CTL_CLEAR_REQ, CTL_CLOSE, CTL_CLOSE_REQ, CTL_PROBE, CTL_CREDIT,
 CTL_CREDIT_REQ, CTL_NEGOTIATION) = (_CTL[n] for n in (
    "NOOP", "ACK_REQ", "CLEAR", "CLEAR_REQ", "CLOSE", "CLOSE_REQ", "PROBE", "CREDIT", "CREDIT_REQ",
    "NEGOTIATION"))
#: B.11 by name, e.g. NACK_BY_NAME["TRIMMED"] == 0x01
NACK_BY_NAME = {name: code for code, name in NACK_CODE.table.items()}
#: B.11 0x01-0x03, C.6: the NACKs saying a packet was trimmed - congestion, not an error (the
#: PDS's trim budget, PDS-I10 of uet/pds/initiator.py)
TRIM_CODES = frozenset(NACK_BY_NAME[n] for n in ("TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK"))
#: B.11 0x01, 0x02: the subset that answers a trimmed *request* (our own packet on the forward
#: path); 0x03 answers a trimmed read-data ACK, the peer's packet on the reverse path. What NSCC
#: reacts to (E.1) and what the analyzer pairs with a trimmed request.
REQUEST_TRIM_CODES = frozenset(NACK_BY_NAME[n] for n in ("TRIMMED", "TRIMMED_LASTHOP"))


def nack_name(code: int) -> str:
    """A NACK code's name (B.11), or its hex value when it has none."""
    return NACK_CODE.table.get(code, f"0x{code:02X}")
