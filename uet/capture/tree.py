"""The readable rendering of ``uet decode`` without ``--json``: a tree per frame, like ``tshark -V``."""

from __future__ import annotations

from ..wire.codec import codec
from ..wire.render import header_tree
from .frame import FrameResult


def frame_tree(res: FrameResult, length: int) -> str:
    obj = res.obj
    lines = [f"Frame {obj['frame']}: {length} bytes"]
    if res.csig_fields is not None:
        c = codec("csig")
        lines.append(f"  {c.header.title} [facts {c.header.ref}]")
        lines.extend(header_tree(c, res.csig_fields, indent="      "))
    if res.pfc_fields is not None:
        c = codec("pfc")
        lines.append(f"  {c.header.title}")
        lines.extend(header_tree(c, res.pfc_fields, indent="      "))
    ip = obj.get("ip")
    if ip:
        ecn = ("Not-ECT", "ECT(1)", "ECT(0)", "CE")[ip["ecn"]]
        lines.append(f"  IPv{ip['version']} {ip['src']} -> {ip['dst']}, DSCP {ip['dscp']}, ECN {ecn}, "
                     f"TTL {ip['ttl']}")
    udp = obj.get("udp")
    if udp:
        lines.append(f"  UDP {udp['sport']} -> {udp['dport']}, length {udp['length']}, "
                     f"checksum 0x{udp['checksum']:04x}")
    if res.transport is not None:
        proto = "UET" if "uet" in obj else "RoCEv2"
        for c, fields in res.transport.headers:
            ref = f" [facts {c.header.ref}]" if c.header.ref else ""
            lines.append(f"  {proto} {c.header.title}{ref}")
            lines.extend(header_tree(c, fields, indent="      "))
        layer = res.transport.layer
        if "payload_len" in layer:
            tss = layer.get("tss")
            hidden = tss is not None and "pds" not in layer  # F: no key opened it
            lines.append(f"  Payload: {layer['payload_len']} bytes"
                         + (" (encrypted: uet decode --sd-key FILE decrypts it)" if hidden else ""))
        crc = layer.get("crc") or layer.get("icrc")
        if crc and crc.get("value") is not None:
            name = "CRC-32C trailer" if "crc" in layer else "ICRC"
            verdict = {True: "good", False: "BAD", None: "not verified"}[crc["ok"]]
            lines.append(f"  {name}: 0x{crc['value']:08x} [{verdict}]")
    for p in obj.get("problems", []):
        lines.append(f"  ! {p}")
    return "\n".join(lines)
