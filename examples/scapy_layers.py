"""The Scapy layers: build a UET packet layer by layer, read it back, write and read a pcap.

Run from the repository:  python examples/scapy_layers.py
"""

import os
import tempfile

from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap

from uet.scapy import UET, UET_PDS_RUD_ROD_REQ, UET_SES_STD

# Ethernet / IPv4 / UDP to the UET port (4793, bound by importing uet.scapy) / PDS / SES / data.
pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=49152, chksum=0)
       / UET_PDS_RUD_ROD_REQ(psn=7, spdcid=1, dpdcid=2) / UET_SES_STD(opcode="WRITE")
       / Raw(b"data"))
wire_bytes = bytes(pkt)  # the CRC-32C trailer is appended on build
print("built:", len(wire_bytes), "bytes")

again = Ether(wire_bytes)  # dissected back into the same layers
print("psn", again[UET_PDS_RUD_ROD_REQ].psn, "opcode", again[UET_SES_STD].sprintf("%opcode%"),
      "crc ok", again[UET].crc_ok())
assert again[UET_PDS_RUD_ROD_REQ].psn == 7 and again[UET].crc_ok()

# A capture file round trip: what uet decode and Wireshark read.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "one.pcap")
    wrpcap(path, [pkt])
    (read,) = rdpcap(path)
    print("from the pcap: psn", read[UET_PDS_RUD_ROD_REQ].psn)
    assert bytes(read) == wire_bytes
