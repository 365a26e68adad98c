"""The SES host of the live endpoint (``open_endpoint(..., ses=True)``): the PDS core, a RUDI and a
UUD endpoint and the SES sublayer as one sans-IO object, built on the simulator's
:class:`uet.sim.ses_ops.MuxEndpoint` (its datagram sorting M1, RUDI target/initiator glue M2 and
timers are reused as they are); what differs is that the delivery mode is chosen per operation
(see the module docstring of uet.io.endpoint, "SES operations")."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..multipath import RoundRobinSpray
from ..pds.rudi import RudiConfig, RudiEndpoint
from ..pds.uud import UudEndpoint
from ..ses import SesConfig, SesEndpoint
from ..sim.ses_ops import MuxEndpoint
from ..wire.enums import AMO_DATATYPE, AMO_OPCODE, RETURN_CODE

SES_MODES = ("rud", "rod", "rudi", "uud")
AMO_BY_NAME = {v: k for k, v in AMO_OPCODE.table.items()}
DT_BY_NAME = {v: k for k, v in AMO_DATATYPE.table.items()}
# RUDI timers for a Python endpoint (the C.9 1 ms suits hardware; a live round trip is ms)
LIVE_RUDI = {"rto": 50e-3, "rto_max": 1.0, "max_retx": 8, "nack_retx_time": 50e-3}


def rc_name(rc: int) -> str:
    return RETURN_CODE.table.get(rc, f"0x{rc:02X}")


def ses_config(ses: Any, pds_cfg: Any, seed: int) -> SesConfig:
    if isinstance(ses, SesConfig):
        return ses
    return SesConfig(mtu=min(4096, pds_cfg.mtu), seed=seed & 0xFFFFFFFF)


class _SesView:
    """What the PDS core sees as its SES (attach_ses): the real SesEndpoint, except that
    ``packets_to_send`` hands over only the packets of the mode being pumped."""

    def __init__(self, ses: SesEndpoint):
        self._ses = ses
        self.queue: list = []

    def packets_to_send(self) -> list:
        q, self.queue = self.queue, []
        return q

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ses, name)


class SesHost(MuxEndpoint):
    def __init__(self, pds: Any, config: SesConfig, *, seed: int, port: int, entropy: list[int],
                 rudi_config: RudiConfig | None = None, ses_mode: str = "rud"):
        ses = SesEndpoint(config)
        super().__init__(pds, ses, "rudi", seed & 0xFFFFFFFF, config.mtu)
        rc = rudi_config or RudiConfig(**LIVE_RUDI)
        rc = dataclasses.replace(rc, port=port, seed=seed & 0xFFFFFFFF,
                                 entropy_base=min(entropy), entropy_values=len(entropy))
        self.rudi = RudiEndpoint(pds.address, rc, selector=RoundRobinSpray(entropy))
        self.uud = UudEndpoint(pds.address, port=port, mtu=config.mtu + 64)
        self.view = _SesView(ses)
        pds.attach_ses(self.view, mode="rud")
        if ses_mode not in ("rud", "rod"):
            raise ValueError("ses_mode must be 'rud' or 'rod'")
        self.ses_mode = ses_mode
        self.queues: dict[str, list] = {m: [] for m in SES_MODES}

    def route(self, mode: str | None = None) -> None:
        """Take what the SES queued and file it under ``mode`` (default ``ses_mode``)."""
        pk = self.ses.packets_to_send()
        if pk:
            self.queues[mode or self.ses_mode].extend(pk)

    def datagrams_to_send(self, now: float) -> list:
        self.route()
        q = self.queues
        if q["rudi"]:
            pk, q["rudi"] = q["rudi"], []
            for p in pk:
                if not p.is_request:
                    self.counts["rudi_stray_response"] += 1
                elif not (p.ses.get("som") and p.ses.get("eom")):
                    self.counts["rudi_multi_packet"] += 1
                    self.ses.transport_failed(p.message_id, "RUDI carries single-packet requests")
                else:
                    pid = self.rudi.send_request(str(p.peer), p.next_hdr, p.to_bytes(), now,
                                                 tag=p.message_id)
                    self._peer[pid] = p.peer
        if q["uud"]:
            pk, q["uud"] = q["uud"], []
            for p in pk:
                if not self.uud.send_datagram(str(p.peer), p.to_bytes(), next_hdr=p.next_hdr):
                    self.counts["uud_too_long"] += 1
        pds = self.pds
        if q["rod"]:
            self.view.queue, q["rod"] = q["rod"], []
            pds.ses_mode = "rod"
            try:
                pds._pump_ses()
            finally:
                pds.ses_mode = "rud"
        if q["rud"]:
            self.view.queue, q["rud"] = q["rud"], []
        out = pds.datagrams_to_send(now)
        out += self.rudi.datagrams_to_send(now)
        out += self.uud.datagrams_to_send(now)
        return out
