"""RoCEv2 as a transport model for the comparison of designs (issue 19): RC queue pairs sending an
RDMA WRITE or a SEND with go-back-N (:mod:`.qp`), DCQCN (:mod:`.dcqcn`) and PFC (:mod:`.pfc`),
sans-IO, on real frames (facts G; PFC frames per IEEE 802.1Qbb)."""

from .dcqcn import CnpGate, DcqcnParams, DcqcnRp
from .pfc import PauseGate, PfcIngress, PfcParams, headroom_bytes, pause_frame
from .qp import OPCODES, Framer, QpReceiver, QpSender, opcode_for, timeout_for

__all__ = ["OPCODES", "CnpGate", "DcqcnParams", "DcqcnRp", "Framer", "PauseGate", "PfcIngress",
           "PfcParams", "QpReceiver", "QpSender", "headroom_bytes", "opcode_for", "pause_frame",
           "timeout_for"]
