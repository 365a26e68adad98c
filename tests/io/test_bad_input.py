"""Bad input is normal input (docs/design-notes.md principle 6): garbage thrown at a serving live endpoint
while a real transfer runs. The transfer completes with the right hash, the spec's NACKs come
back, the rest is counted, the core never fails, and PDC state stays within the PDC limit."""

from __future__ import annotations

import hashlib
import random

import pytest
import trio

from uet.io import open_endpoint

from .peer import Peer, arecv_all, fresh_spdcid

pytestmark = pytest.mark.trio

LO = "127.0.0.1"
MAX_PDCS = 32
START = 0x30000


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


async def test_garbage_while_a_transfer_runs():
    rng = random.Random(2024)
    data = rng.randbytes(4 << 20)
    with trio.fail_after(60):
        async with open_endpoint((LO, 0), max_pdcs=MAX_PDCS) as srv, \
                open_endpoint(None, peer_port=srv.port, paths=4) as cli:
            h = cli.send_nowait(LO, data, mode="rud", job_id=1)
            while not any(p.role == "target" for p in srv.core.pdcs()):
                await trio.sleep(0.001)
            peer = Peer((LO, srv.port))
            try:
                answers, reordered_sha = await throw_garbage(peer, rng)
                max_pdcs_seen = len(srv.core.pdcs())
                res = await cli.wait(h)
                # the messages the sink received: the transfer and the peer's reordered one
                got = {}
                while (m := srv.receive_nowait()) is not None:
                    got.setdefault(m.job_id, []).append(m)
                for _ in range(2):
                    with trio.move_on_after(0.5):
                        while 1 not in got or 2 not in got:
                            m = await srv.receive()
                            got.setdefault(m.job_id, []).append(m)
            finally:
                peer.close()
            st = srv.stats
    assert res.nbytes == len(data)
    assert [sha(m.data) for m in got[1]] == [sha(data)]
    assert len(got[2]) == 1 and sha(got[2][0].data) == reordered_sha  # delivered once, in order
    assert max_pdcs_seen <= MAX_PDCS
    assert st["pdcs"] <= MAX_PDCS
    # answered as the spec says
    codes = [a.pds["nack_code_name"] for a in answers if a.type_name == "NACK"]
    assert "INV_DPDCID" in codes and "NO_PDC_AVAIL" in codes and "PSN_OOR_WINDOW" in codes
    assert st["nacks_sent"].get("NO_PDC_AVAIL", 0) > 0
    # counted, never crashed
    assert st.get("bad_crc", 0) > 0 and st.get("malformed", 0) > 0
    assert st.get("internal_error", 0) == 0, srv.core.last_error


async def throw_garbage(peer: Peer, rng: random.Random) -> tuple[list, str]:
    answers = []
    # 1. random bytes (no valid trailer), including empty and tiny datagrams
    for _ in range(300):
        peer.send_raw(rng.randbytes(rng.choice([0, 1, 3, 4, 11, 40, 300, 4200])))
    # 2. random bytes with a valid trailer (the decoder itself sees garbage), every PDS type
    for _ in range(300):
        body = bytearray(rng.randbytes(rng.randrange(1, 120)))
        body[0] = (rng.randrange(32) << 3) | (body[0] & 7)
        peer.send(bytes(body))
    # 3. truncated headers with a valid trailer
    full = Peer.request(START, spdcid=fresh_spdcid(), start=START, payload=b"t" * 100)
    for cut in range(0, 60):
        peer.send(full[:cut])
    await trio.sleep(0)
    # 4. wrong PDC ids: requests without SYN naming PDCs that do not exist
    for i in range(20):
        peer.send(Peer.request(START + i, spdcid=fresh_spdcid(), dpdcid=0xF000 + i))
    answers += await arecv_all(peer, 0.2)
    # 5. a real flow of ours, replayed and reordered: a 10-packet message, shuffled, duplicated
    sp = fresh_spdcid()
    msg = rng.randbytes(10 * 1000)
    peer.send(Peer.request(START, spdcid=sp, start=START, payload=b"syn", job_id=4, message_id=1))
    ack = next(a for a in await arecv_all(peer, 0.2) if a.type_name == "ACK_CC" and a.pds["dpdcid"] == sp)
    tp = ack.pds["spdcid"]
    pkts = [Peer.request(START + 1 + i, spdcid=sp, dpdcid=tp, payload=msg[i * 1000:(i + 1) * 1000],
                         message_id=2, offset=i * 1000, total=len(msg), job_id=2, rod=False)
            for i in range(10)]
    order = list(range(10)) + rng.sample(range(10), 6)
    rng.shuffle(order)
    for i in order:
        peer.send(pkts[i])
    peer.send(Peer.request(START + 5000, spdcid=sp, dpdcid=tp))  # far beyond the window
    answers += await arecv_all(peer, 0.2)
    # 6. a burst of SYNs from new initiators: more than the PDC limit
    for i in range(3 * MAX_PDCS):
        s = START + 100 * i
        peer.send(Peer.request(s, spdcid=fresh_spdcid(), start=s, payload=b"burst", job_id=3))
        if i % 16 == 15:
            await trio.sleep(0)
    answers += await arecv_all(peer, 0.3)
    return answers, sha(msg)
