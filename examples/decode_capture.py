"""A capture to decode: the repository's captures/uet_flows.pcap (a PDC's life: the SYN exchange,
trimming, the close; native IP; IPv6; ECN), one line per frame, as `uet decode --json` reads it.

The same from the shell:
    uet decode captures/uet_flows.pcap              # every field of every frame
    uet analyze captures/uet_flows.pcap --ladder 1  # the first PDC as a ladder diagram

Run from the repository:  python examples/decode_capture.py [FILE]
"""

import sys
from pathlib import Path

from uet.capture.frame import decode_frame
from uet.capture.pcap import read_frames

DEFAULT = Path(__file__).parent.parent / "captures" / "uet_flows.pcap"
path = sys.argv[1] if len(sys.argv) > 1 else str(DEFAULT)

for number, (linktype, raw, ts) in enumerate(read_frames(path), 1):
    obj = decode_frame(linktype, raw, number).obj
    ip = obj.get("ip", {})
    uet = obj.get("uet", {})
    pds = uet.get("pds", {})
    ses = uet.get("ses", {})
    problems = "(problems: " + "; ".join(obj["problems"]) + ")" if obj["problems"] else None
    what = " ".join(filter(None, [pds.get("type_name"), ses.get("opcode_name"),
                                  f"psn {pds['psn']}" if "psn" in pds else None, problems]))
    print(f"{number:3}  {ip.get('src', '?')} -> {ip.get('dst', '?')}  {what or 'not UET'}")
