"""UET header declarations: entropy (A.1), TSS (B.15), PDS (B.3-B.14) and SES (D.2-D.7).

Each declaration is the single description of its header; field names are the lower-case
snake_case names of the rows in docs/facts.md (and of docs/design-notes.md's JSON contract). Where a position has
two meanings the :func:`When` switch names both; where the sources conflict the switch is on a
decoder option (``@...``) with the H.1 recommendation as default.
"""

from __future__ import annotations

from .enums import (
    ACK_REQ, AMO_DATATYPE, AMO_OPCODE, CC_TYPE, CTL_TYPE, NACK_CODE, NEXT_HDR, PDS_TYPE,
    RETURN_CODE, RSP_LIST, RSP_OPCODE, SES_OPCODE,
)
from .schema import Derived, E, Flag, Header, Rsvd, S, U, When, X

# --- A.1 entropy header (native IP mode only) -------------------------------------------------

ENTROPY = Header("entropy", "UET entropy header", (
    U("entropy", 16, "entropy value for ECMP/spraying", "A.1"),
    Rsvd(16),
), ref="A.1", doc="4 bytes after the IP header when UET runs directly over IP (protocol 253).")

# --- B.15 TSS security header -------------------------------------------------------------------

TSS = Header("tss", "UET transport security header", (
    E("type", 5, PDS_TYPE, "1 = TSS", "B.15"),
    Flag("sp", "SSI present", "B.15"),
    Rsvd(1),
    U("an", 1, "association number (which of two keys)", "B.15"),
    X("sdi", 24, "secure domain index", "B.15"),
    When("sp", {1: [X("ssi", 32, "secure source identifier", "B.15")]}, [],
         doc="SSI only when SP = 1 (12 or 16 bytes)"),
    U("epoch", 16, "top 16 bits of the 64-bit counter word", "B.15"),
    U("tsc", 48, "per-SD transmit counter", "B.15"),
), ref="B.15")

# --- PDS ----------------------------------------------------------------------------------------

_TYPE = E("type", 5, PDS_TYPE, "PDS packet type", "B.3")
_NEXT = E("next_hdr", 4, NEXT_HDR, "SES header that follows", "B.2")

# B.5: bytes 10-11 hold the DPDCID, or pdc_info + psn_offset while SYN = 1. The position of
# use_rsv_pdc conflicts (H.1 #4): bit 80 per Wireshark/XDP2 (default), bit 83 per the reference
# provider; the decoder option @rsv_pdc_bit picks.
_SYN_FORM = When("syn", {
    1: [When("@rsv_pdc_bit", {83: [Rsvd(3), Flag("use_rsv_pdc", "use a reserved PDC", "B.5")]},
             [Flag("use_rsv_pdc", "use a reserved PDC", "B.5"), Rsvd(3)]),
        U("psn_offset", 12, "PSN minus the PDC start PSN", "B.5")],
}, [U("dpdcid", 16, "destination PDC id", "B.5")], doc="SYN form of bytes 10-11 (B.5)")

_REQ_ITEMS = (
    _TYPE, _NEXT, Rsvd(2),
    Flag("retx", "retransmission", "B.4"), Flag("ar", "ACK requested", "B.4"),
    Flag("syn", "PDC not yet established", "B.4"), Rsvd(2),
    S("clear_psn_offset", 16, "CLEAR_PSN = PSN + offset", "B.5"),
    U("psn", 32, "packet sequence number", "B.5"),
    U("spdcid", 16, "source PDC id", "B.5"),
    _SYN_FORM,
)
_REQ_DERIVED = (
    Derived("clear_psn", "psn", "+", "clear_psn_offset", doc="PSN + clear_psn_offset", ref="B.5"),
    Derived("start_psn", "psn", "-", "psn_offset", doc="PSN - psn_offset (SYN only)", ref="B.5"),
)

RUD_ROD_REQ = Header("pds.rud_rod_req", "RUD/ROD request", _REQ_ITEMS, ref="B.5",
                     derived=_REQ_DERIVED)

RUD_ROD_CC_REQ = Header("pds.rud_rod_cc_req", "RUD/ROD request with CC state", _REQ_ITEMS + (
    U("ccc_id", 8, "congestion-control-context id", "B.6"),
    U("credit_target", 24, "requested credit (RCCC)", "B.6"),
), ref="B.6", derived=_REQ_DERIVED)

# B.7: the ACK base, shared by ACK, ACK_CC and ACK_CCX. Flag 0x40 is EPSN in the reference provider
# only (H.1 #6); it is decoded as reserved.
_ACK_ITEMS = (
    _TYPE, _NEXT, Rsvd(1),
    Flag("m", "acked packet was CE-marked", "B.4"),
    Flag("retx", "ACK of a retransmission", "B.4"),
    Flag("p", "ACK to a probe", "B.4"),
    E("req", 2, ACK_REQ, "target request: clear or close", "B.4"),
    Rsvd(1),
    When("p", {1: [X("probe_opaque", 16, "opaque value from the probe", "B.7")]},
         [S("ack_psn_offset", 16, "ACK_PSN = CACK_PSN + offset", "B.7")]),
    U("cack_psn", 32, "cumulative ACK PSN", "B.7"),
    U("spdcid", 16, "source (target) PDC id", "B.7"),
    U("dpdcid", 16, "destination (initiator) PDC id", "B.7"),
)
_ACK_DERIVED = (Derived("ack_psn", "cack_psn", "+", "ack_psn_offset", doc="CACK_PSN + offset", ref="B.7"),)
_SACK_DERIVED = _ACK_DERIVED + (
    Derived("sack_base_psn", "cack_psn", "+", "sack_psn_offset", doc="CACK_PSN + offset", ref="C.4"),
)
_SACK_ITEMS = (
    U("mpr", 8, "maximum PSN range, units of 128 PSNs", "B.8"),
    S("sack_psn_offset", 16, "SACK_BASE_PSN = CACK_PSN + offset", "B.8"),
    X("sack_bitmap", 64, "bit i set: PSN SACK_BASE + i received", "B.8"),
)

ACK = Header("pds.ack", "ACK", _ACK_ITEMS, ref="B.7", derived=_ACK_DERIVED)

ACK_CC = Header("pds.ack_cc", "ACK with CC state", _ACK_ITEMS + (
    E("cc_type", 4, CC_TYPE, "0 NSCC, 1 credit", "B.8"),
    X("cc_flags", 4, "reserved CC flags", "B.8"),
) + _SACK_ITEMS + (
    When("cc_type", {
        0: [U("service_time", 16, "target-side service time", "B.8"),
            Flag("restore_cwnd", "ask sender to restore its window", "B.8"),
            U("rcv_cwnd_pend", 7, "receiver window penalty 0..127", "B.8"),
            U("rcvd_bytes", 24, "running count of received bytes", "B.8"),
            U("ooo_count", 16, "out-of-order count", "B.8")],
        1: [U("credit", 24, "credit granted", "B.8"), Rsvd(24),
            U("ooo_count", 16, "out-of-order count", "B.8")],
    }, [X("ack_cc_state", 64, "CC state of an unknown cc_type", "B.8")]),
), ref="B.8", derived=_SACK_DERIVED)

# B.9 / H.1 #2: 40 bytes (16-byte state) by default; XDP2's 32-byte form with @ccx_layout=xdp2.
ACK_CCX = Header("pds.ack_ccx", "ACK with extended CC state", _ACK_ITEMS + (
    X("ccx_type", 4, "extended CC type (reserved; 14-15 proprietary per XDP2)", "B.9"),
    X("cc_flags", 4, "reserved CC flags", "B.9"),
) + _SACK_ITEMS + (
    When("@ccx_layout", {"xdp2": [X("ack_ccx_state", 64, "extended CC state (XDP2 layout)", "H.1")]},
         [X("ack_ccx_state", 128, "opaque extended CC state", "B.9")]),
), ref="B.9", derived=_SACK_DERIVED)

_NACK_ITEMS = (
    _TYPE, _NEXT, Rsvd(1),
    Flag("m", "NACKed packet was CE-marked", "B.4"),
    Flag("retx", "NACKed packet was a retransmission", "B.4"),
    Flag("nt", "0 RUD/ROD NACK, 1 RUDI NACK", "B.4"),
    Rsvd(3),
    E("nack_code", 8, NACK_CODE, "reason", "B.11"),
    X("vendor_code", 8, "vendor detail", "B.10"),
    When("nt", {1: [X("pkt_id", 32, "RUDI packet id", "B.10")]},
         [U("nack_psn", 32, "NACKed PSN", "B.10")]),
    U("spdcid", 16, "source PDC id (0 for RUDI or no PDC)", "B.10"),
    U("dpdcid", 16, "destination PDC id", "B.10"),
    X("payload", 32, "code-specific (NEW_START_PSN: the start PSN)", "B.10"),
)

NACK = Header("pds.nack", "NACK", _NACK_ITEMS, ref="B.10")

# B.10 / H.1 #3: 16 bytes of CCX state (32 in all) by default; XDP2 appends only 8.
NACK_CCX = Header("pds.nack_ccx", "NACK with extended CC state", _NACK_ITEMS + (
    X("nccx_type", 4, "extended CC type (14-15 proprietary per XDP2)", "B.10"),
    When("@ccx_layout", {"xdp2": [X("nack_ccx_state", 60, "extended CC state (XDP2 layout)", "H.1")]},
         [X("nack_ccx_state", 124, "opaque extended CC state", "B.10")]),
), ref="B.10")

# B.12: ctl_type occupies the next-header slot; flag 0x20 is isROD (H.1 #5: encode 0 RUD, 1 ROD).
CONTROL = Header("pds.control", "CONTROL", (
    _TYPE, E("ctl_type", 4, CTL_TYPE, "control type", "B.12"), Rsvd(1),
    Flag("isrod", "PDC is ROD (reserved in Wireshark)", "H.1"),
    Flag("retx", "retransmission", "B.4"), Flag("ar", "ACK requested", "B.4"),
    Flag("syn", "PDC not yet established", "B.4"), Rsvd(2),
    X("probe_opaque", 16, "echoed in the probe ACK (PROBE), else 0", "B.12"),
    U("psn", 32, "PSN", "B.12"),
    U("spdcid", 16, "source PDC id", "B.12"),
    _SYN_FORM,
    X("payload", 32, "per ctl_type", "B.12"),
), ref="B.12", derived=(_REQ_DERIVED[1],))

RUDI = Header("pds.rudi", "RUDI request/response", (
    _TYPE, _NEXT, Rsvd(1),
    Flag("m", "request was CE-marked (responses only)", "B.13"),
    Flag("retx", "retransmission", "B.13"), Rsvd(4), Rsvd(16),
    X("pkt_id", 32, "RUDI packet id", "B.13"),
), ref="B.13")

UUD = Header("pds.uud", "UUD request", (
    _TYPE, _NEXT, Rsvd(7), Rsvd(16),
), ref="B.14")

#: PDS type -> header (B.1).
PDS_BY_TYPE = {
    2: RUD_ROD_REQ, 3: RUD_ROD_REQ, 4: RUDI, 5: RUDI, 6: UUD, 7: ACK, 8: ACK_CC, 9: ACK_CCX,
    10: NACK, 11: CONTROL, 12: NACK_CCX, 13: RUD_ROD_CC_REQ, 14: RUD_ROD_CC_REQ,
}

# --- SES ----------------------------------------------------------------------------------------

_TAGGED = (0x09, 0x0A, 0x0D, 0x0E)  # TAGGED_SEND, RENDEZVOUS_TSEND, TSEND_ATOMIC, TSEND_FETCH_ATOMIC
# (DEFERRABLE_TSEND 0x0B is tagged too; its own arm below also moves the restart tokens)
_RTR = 0x0C  # DEFERRABLE_RTR carries them at memory_key

_SES_FLAGS = (
    Rsvd(2), E("opcode", 6, SES_OPCODE, "request opcode", "D.1"),
    U("version", 2, "SES version", "D.2"),
    Flag("dc", "delivery complete requested", "D.2"), Flag("ie", "initiator error", "D.2"),
    Flag("rel", "relative addressing", "D.2"), Flag("hd", "header data present", "D.2"),
    Flag("eom", "end of message", "D.2"), Flag("som", "start of message", "D.2"),
)
_SES_IDS = (
    U("ri_generation", 8, "resource-index generation", "D.2"),
    U("job_id", 24, "job id", "D.2"),
    Rsvd(4), U("pid_on_fep", 12, "process id on the fabric endpoint", "D.2"),
    Rsvd(4), U("resource_index", 12, "resource index", "D.2"),
)
_REQ_LEN14 = (Rsvd(2), U("request_length", 14, "total message length", "D.2"))
_TOKENS = (X("initiator_restart_token", 32, "initiator restart token", "D.3"),
           X("target_restart_token", 32, "target restart token", "D.3"))
_MATCH = X("match_bits", 64, "tag match bits", "D.3")
_MKEY = X("memory_key", 64, "memory key", "D.3")
_BUF_OFF = X("buffer_offset", 64, "offset in the target buffer", "D.3")
_KEY_OR_BITS = When("opcode", {_TAGGED + (0x0B,): [_MATCH], _RTR: list(_TOKENS)}, [_MKEY],
                    doc="memory_key, match_bits or restart tokens")
_INITIATOR = U("initiator", 32, "initiator id", "D.3")

SES_STD = Header("ses.std", "SES standard request", _SES_FLAGS + (
    X("message_id", 16, "message id", "D.2"),
) + _SES_IDS + (
    # D.3: bytes 12-31 by opcode - restart tokens replace buffer_offset for the deferrable sends
    # and memory_key for DEFERRABLE_RTR; tagged opcodes carry match_bits.
    When("opcode", {
        0x08: [*_TOKENS, _INITIATOR, _MKEY],
        0x0B: [*_TOKENS, _INITIATOR, _MATCH],
        _RTR: [_BUF_OFF, _INITIATOR, *_TOKENS],
        _TAGGED: [_BUF_OFF, _INITIATOR, _MATCH],
    }, [_BUF_OFF, _INITIATOR, _MKEY], doc="buffer_offset/initiator/memory_key by opcode"),
    When("som", {1: [X("header_data", 64, "completion/header data", "D.3")]},
         [Rsvd(18), U("payload_length", 14, "payload bytes in this packet", "D.3"),
          U("message_offset", 32, "offset of this payload in the message", "D.3")]),
    U("request_length", 32, "total message length", "D.3"),
), ref="D.3")

SES_SMALL = Header("ses.small", "SES small request (optimized non-matching)", _SES_FLAGS + _REQ_LEN14
                   + _SES_IDS + (X("buffer_offset", 64, "offset in the target buffer", "D.4"),), ref="D.4")

SES_MEDIUM = Header("ses.medium", "SES medium request (small message)", _SES_FLAGS + _REQ_LEN14
                    + _SES_IDS + (
    When("hd", {1: [X("header_data", 64, "header data", "D.4")]},
         [X("buffer_offset", 64, "offset in the target buffer", "D.4")]),
    _INITIATOR,
    _KEY_OR_BITS,
), ref="D.4")

_RSP_FIRST = (
    E("list", 2, RSP_LIST, "0 expected, 1 overflow", "D.7"),
    E("opcode", 6, RSP_OPCODE, "response opcode", "D.7"),
    U("version", 2, "SES version", "D.7"),
    E("return_code", 6, RETURN_CODE, "return code", "D.8"),
)

SES_RSP = Header("ses.rsp", "SES response", _RSP_FIRST + (
    X("message_id", 16, "message id", "D.7"),
    U("ri_generation", 8, "resource-index generation", "D.7"),
    U("job_id", 24, "job id", "D.7"),
    U("modified_length", 32, "bytes modified", "D.7"),
), ref="D.7")

# H.1 #9: 14-bit payload_length (RP, WS) rather than XDP2's 12.
SES_RSP_DATA = Header("ses.rsp_data", "SES response with data", _RSP_FIRST + (
    X("message_id", 16, "message id", "D.7"),
    Rsvd(8), U("job_id", 24, "job id", "D.7"),
    X("read_request_message_id", 16, "message id of the read request", "D.7"),
    Rsvd(2), U("payload_length", 14, "payload bytes in this packet", "D.7"),
    U("modified_length", 32, "bytes modified", "D.7"),
    U("message_offset", 32, "offset of this payload in the message", "D.7"),
), ref="D.7")

SES_RSP_DATA_SMALL = Header("ses.rsp_data_small", "SES small response with data", _RSP_FIRST + (
    Rsvd(2), U("payload_length", 14, "payload bytes in this packet", "D.7"),
    Rsvd(8), U("job_id", 24, "job id", "D.7"),
    U("original_request_psn", 32, "PSN of the request answered", "D.7"),
), ref="D.7")

# D.6 / H.1 #11: semantic control flags 0x01 cacheable, 0x02 CPU coherent (RP, WS).
_AMO_ITEMS = (
    E("atomic_opcode", 8, AMO_OPCODE, "AMO opcode", "D.6"),
    E("atomic_datatype", 8, AMO_DATATYPE, "AMO data type", "D.6"),
    Rsvd(6), Flag("cpu_coherent", "CPU coherent", "D.6"), Flag("cacheable", "cacheable", "D.6"),
    Rsvd(8),
)

SES_ATOMIC = Header("ses.atomic", "SES atomic operation extension", _AMO_ITEMS, ref="D.6")

SES_CSWAP = Header("ses.cswap", "SES compare-and-swap extension", _AMO_ITEMS + (
    X("compare_value", 128, "compare value", "D.6"),
    X("swap_value", 128, "swap value", "D.6"),
), ref="D.6")

# D.5 / H.1 #10: 24 bytes, second word per the reference provider.
SES_RENDEZVOUS = Header("ses.rendezvous", "SES rendezvous extension", (
    U("eager_length", 32, "bytes sent eagerly", "D.5"),
    U("ri_generation", 8, "read-back resource-index generation", "D.5"),
    U("pid_on_fep", 12, "read-back process id", "D.5"),
    U("resource_index", 12, "read-back resource index", "D.5"),
    X("read_offset", 64, "where the target reads the rest from", "D.5"),
    X("read_match_bits", 64, "read match bits / memory key", "D.5"),
), ref="D.5")

#: next_hdr -> SES header (B.2).
SES_BY_NEXT_HDR = {1: SES_SMALL, 2: SES_MEDIUM, 3: SES_STD, 4: SES_RSP, 5: SES_RSP_DATA,
                   6: SES_RSP_DATA_SMALL}

#: D.6 / H.1 #15: request opcodes that carry the atomic extension.
ATOMIC_OPCODES = frozenset({0x03, 0x04, 0x0D, 0x0E})
#: D.6: AMO opcodes that use the 36-byte compare-swap extension (Wireshark: 0x0D-0x12).
CSWAP_AMO_OPCODES = frozenset(range(0x0D, 0x13))
MSWAP_AMO_OPCODE = 0x13
#: D.5: request opcodes that carry the rendezvous extension.
RENDEZVOUS_OPCODES = frozenset({0x06, 0x0A})

UET_HEADERS = (ENTROPY, TSS, RUD_ROD_REQ, RUD_ROD_CC_REQ, ACK, ACK_CC, ACK_CCX, NACK, NACK_CCX,
               CONTROL, RUDI, UUD, SES_STD, SES_SMALL, SES_MEDIUM, SES_RSP, SES_RSP_DATA,
               SES_RSP_DATA_SMALL, SES_ATOMIC, SES_CSWAP, SES_RENDEZVOUS)

CRC_TRAILER_LEN = 4  # A.3
TSS_ICV_LEN = 16  # F
