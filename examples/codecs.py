"""The codecs: encode UET headers from fields, build a whole frame, decode it back.

Run from the repository:  python examples/codecs.py
"""

from uet import wire
from uet.wire import build

# A PDS request (RUD, type 2) that opens a PDC (syn) and carries a standard SES header (next_hdr 3).
pds = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": 1000, "psn_offset": 0, "spdcid": 7}
# The SES header of a one-packet SEND of 5 bytes (som and eom: the first and last packet).
ses = {"opcode": 5, "som": True, "eom": True, "message_id": 1, "job_id": 42, "request_length": 5}
payload = b"hello"

# One header alone: fields in, bytes out, and back (flags are bools, enums their numbers).
pds_bytes = wire.encode("pds.rud_rod_req", pds)
fields = wire.decode("pds.rud_rod_req", pds_bytes)
print("pds.rud_rod_req:", len(pds_bytes), "bytes, psn", fields["psn"], "syn", fields["syn"])

# The UET part of a datagram (PDS + SES + payload), then a whole Ethernet/IPv4/UDP frame to the
# UET port 4793 with the CRC-32C trailer appended.
uet_bytes = build.uet_bytes(pds, ses, payload=payload)
frame = build.udp_frame(uet_bytes, sport=50000)
print("frame:", len(frame), "bytes")

# Decode the frame as `uet decode` does: every layer as a dict.
from uet.capture.frame import decode_frame

obj = decode_frame(1, frame, 1).obj  # linktype 1: Ethernet
uet = obj["uet"]
print("decoded:", uet["pds"]["type_name"], "psn", uet["pds"]["psn"], "|", uet["ses"]["opcode_name"],
      "job", uet["ses"]["job_id"], "| crc ok:", uet["crc"]["ok"])
assert uet["pds"]["psn"] == 1000 and uet["ses"]["request_length"] == 5 and uet["crc"]["ok"]
