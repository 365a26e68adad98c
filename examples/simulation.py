"""The simulator: a transfer over 4 lossy paths, then an incast through a leaf-spine fabric, both
in virtual time and seeded (the same seed gives the same figures).

Run from the repository:  python examples/simulation.py
"""

from uet.sim import SimConfig, run
from uet.sim.fabric import FabricSimConfig, run as run_fabric

# Two hosts joined by 4 parallel paths of 100 Gb/s and 10 us RTT; 1% of packets lost per path.
r = run(SimConfig(bytes=1 << 20, paths=4, loss=0.01, seed=7))
print(f"paths:4  ok={r['ok']}  {r['bytes']} bytes in {r['sim_time_s'] * 1e6:.1f} us of virtual "
      f"time, {r['dropped']} packets dropped, {r['retransmissions']} retransmitted")
assert r["ok"] and r["bytes"] == 1 << 20

# 8 hosts send 256 KiB each to host 0 through one ToR (9 hosts, 1 ToR, 1 spine): NSCC and REPS,
# the switch trims what its queue cannot hold.
f = run_fabric(FabricSimConfig(topology="leafspine:9,1,1", traffic=("incast", 8),
                               flow_bytes=256 << 10, seed=1))
print(f"incast:8  ok={f['ok']}  last flow done at {f['last_fct_s'] * 1e6:.1f} us, "
      f"{f['last_over_ideal']:.2f}x the ideal, {f['trimmed']} packets trimmed")
assert f["ok"]
