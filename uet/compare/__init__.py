"""``uet compare`` (issue 19): RoCEv2, adaptive routing and UET side by side on one simulated fabric.
The scenarios (:mod:`.scenarios`), the RoCE fabric (:mod:`.rocefabric`, its ports
:mod:`.ports`), the UET runner (:mod:`.uetrun`), the driver and table (:mod:`.run`), the plot
(:mod:`.plot`) and the command (:mod:`.command`)."""
