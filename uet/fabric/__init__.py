"""The live loopback fabric behind ``uet fabric`` and ``uet demo`` (docs/design-notes.md "Test beds" item 2):
a trio UDP relay that applies the network model of :mod:`uet.net` (rate, FIFO queue, ECN marking,
trimming, loss, reordering, duplication, corruption, path failure, ECMP) to real datagrams.

    async with open_fabric(listen=("127.0.0.1", 0), to=("127.0.0.1", 4793),
                           config=FabricConfig(paths=4, trim=0.01)) as fab:
        ...  # senders use fab.address as their UET destination; fab.counters() any time
"""

from .capture import FrameBuilder, PcapCapture
from .paths import FabricConfig, Link
from .relay import Fabric, open_fabric

__all__ = ["FabricConfig", "Fabric", "open_fabric", "PcapCapture", "FrameBuilder", "Link"]
