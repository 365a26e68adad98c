"""IPv4, IPv6 and UDP declarations: the underlay that ``uet decode`` reads before UET or RoCEv2, the
link layers around them, and the one link-layer frame a RoCE fabric adds (PFC, 802.1Qbb).

They go through the same schema and codecs as the transport headers, so nothing is parsed by hand;
the Lua generator leaves them to Wireshark's own dissectors, except the CSIG tag (E.4), which no
Wireshark dissects and the generator therefore declares too.
"""

from __future__ import annotations

from .enums import CSIG_TYPE, ECN
from .schema import E, Enum, Flag, Header, Rsvd, U, X, Field

IPV4 = Header("ipv4", "IPv4 header (without options)", (
    U("version", 4), U("ihl", 4, "header length in 32-bit words"),
    U("dscp", 6), E("ecn", 2, ECN, ref="A.2"),
    U("total_length", 16), X("identification", 16),
    U("flags", 3), U("fragment_offset", 13),
    U("ttl", 8), U("protocol", 8), X("checksum", 16),
    Field("src", 32, display="ipv4"), Field("dst", 32, display="ipv4"),
), ref="RFC 791")

IPV6 = Header("ipv6", "IPv6 fixed header", (
    U("version", 4), U("dscp", 6), E("ecn", 2, ECN, ref="A.2"), X("flow_label", 20),
    U("payload_length", 16), U("next_header", 8), U("hop_limit", 8),
    Field("src", 128, display="ipv6"), Field("dst", 128, display="ipv6"),
), ref="RFC 8200")

# RFC 8200 4.3-4.6: the start every extension header before the transport shares (hop-by-hop,
# routing, destination options: its length in 8-byte units, not counting the first 8), and the
# Fragment header, which ``uet decode`` reassembles (uet.capture.reassembly).
IPV6_EXT = Header("ipv6_ext", "IPv6 extension header (its first two bytes)", (
    U("next_header", 8, "the header that follows", "RFC 8200"),
    U("hdr_ext_len", 8, "length in 8-octet units, not counting the first 8", "RFC 8200"),
), ref="RFC 8200")
IPV6_FRAG = Header("ipv6_frag", "IPv6 Fragment header", (
    U("next_header", 8, "the header that follows the reassembled packet's", "RFC 8200"),
    Rsvd(8, "reserved, 0"),
    U("fragment_offset", 13, "offset in 8-octet units", "RFC 8200"), Rsvd(2, "reserved, 0"),
    Flag("m", "more fragments", "RFC 8200"),
    X("identification", 32, "the datagram's identification", "RFC 8200"),
), ref="RFC 8200")

UDP = Header("udp", "UDP header", (
    U("sport", 16, "source port (UET: the entropy value)", "A.1"), U("dport", 16),
    U("length", 16), X("checksum", 16),
), ref="RFC 768")

# Link layers that pcap files carry (linktypes 1, 113, 276, 0/108).
ETH = Header("eth", "Ethernet II", (
    Field("dst", 48, display="hex"), Field("src", 48, display="hex"), X("ethertype", 16),
), ref="IEEE 802.3")
VLAN = Header("vlan", "802.1Q tag (after its TPID)", (
    U("pcp", 3), U("dei", 1), U("vid", 12), X("ethertype", 16),
), ref="IEEE 802.1Q")
# E.4: the CSIG compact tag sits where an 802.1Q tag would, so it is declared like VLAN: what follows
# its TPID (the EtherType uet.cms.csig.CSIG_ETHERTYPE, an option of every reader). E.4 gives the
# fields but not their bit positions; the positions are the project's choice, uet.cms.csig CMS-C1 (whose
# pack/unpack a test holds this declaration to).
CSIG = Header("csig", "CSIG tag (after its TPID)", (
    E("t", 2, CSIG_TYPE, "signal type", "E.4"),
    U("s", 5, "signal value, one of 32 buckets (the meaning of a bucket: uet.cms.csig CMS-C2)", "E.4"),
    U("lm", 7, "locator metadata: which hop last replaced s", "E.4"),
    Flag("d", "do-not-update, set by a trimming switch (C.6)", "E.4"),
    # Named rather than Rsvd: a reader keeps the tag's r visible (csig CMS-C1: a tag with r set is
    # counted and ignored), and the decoders report it as a problem.
    U("r", 1, "reserved, 0", "E.4"),
    X("ethertype", 16, "the EtherType of what follows (0x0800 IPv4, 0x86DD IPv6)", "E.4"),
), ref="E.4", doc="Compact form; the wide 8-byte form (E.4) is not decoded.")
# IEEE 802.1Qbb (clause 36; the frame of 802.3 Annex 31D): priority-based flow control, a MAC control
# frame (EtherType 0x8808) that RoCE fabrics send to pause one priority of their upstream neighbour.
# docs/facts.md has no row for it (it is not part of UET or RoCEv2); uet.roce.pfc builds these frames
# and ``uet compare --pcap`` writes them. What follows the EtherType: the opcode, the class-enable
# vector (its first octet reserved, bit n of the second enables priority n), then Time(0)..Time(7)
# in quanta of 512 bit times. ``uet decode`` folds the eight times into the list ``pause_quanta``.
PFC_REF = "IEEE 802.1Qbb"
MAC_CONTROL_OPCODE = Enum("mac_control_opcode", {0x0101: "PFC"}, ref=PFC_REF)
PFC = Header("pfc", "Priority-based flow control (802.1Qbb)", (
    E("opcode", 16, MAC_CONTROL_OPCODE, "MAC control opcode (0x0101: PFC)", PFC_REF),
    Rsvd(8, "reserved, 0 (802.1Qbb: the vector's first octet)"),
    X("class_enable", 8, "priority-enable vector: bit n set means Time(n) is valid", PFC_REF),
) + tuple(U(f"pause_quanta_{n}", 16, f"Time({n}): pause of priority {n} in quanta of 512 bit "
            "times (0: resume)", PFC_REF) for n in range(8)),
    ref=PFC_REF, doc="Only the PFC opcode is declared; a classic 802.3x PAUSE (0x0001) is not.")
SLL = Header("sll", "Linux cooked capture v1", (
    U("packet_type", 16), U("arphrd", 16), U("addr_len", 16), X("addr", 64), X("protocol", 16),
), ref="LINKTYPE_LINUX_SLL")
SLL2 = Header("sll2", "Linux cooked capture v2", (
    X("protocol", 16), U("rsvd", 16), U("ifindex", 32), U("arphrd", 16), U("packet_type", 8),
    U("addr_len", 8), X("addr", 64),
), ref="LINKTYPE_LINUX_SLL2")
NULL = Header("null", "BSD loopback (address family in the capturing host's byte order)", (
    U("family", 32),
), ref="LINKTYPE_NULL")

NET_HEADERS = (IPV4, IPV6, IPV6_EXT, IPV6_FRAG, UDP, ETH, VLAN, CSIG, PFC, SLL, SLL2, NULL)
