"""tools/trace_send.py (issue 28, "Done when": one SEND followed through few files): the files
under uet/ that one warm 1 MiB SEND between two live loopback endpoints enters. What does not
belong on the per-send path stays off it: the peer's address is resolved once per peer (not
uet/addresses.py per send), RUDI is not polled by a host that never used it (uet/pds/rudi.py),
the fixed window answers its per-packet hooks itself (not uet/cms/base.py), and the C request
builder seeds the trailers (uet/wire/trailer.py is entered by the receive side, not by the
builder)."""

from __future__ import annotations

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool():
    spec = importlib.util.spec_from_file_location("trace_send", os.path.join(ROOT, "tools",
                                                                            "trace_send.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_a_warm_send_keeps_per_peer_and_unused_work_off_its_path():
    order = _tool().trace(warm=True, nbytes=1 << 20, port=0)
    print(order)  # shown when an assertion fails
    files = dict(order)
    assert len(files) == len(order)  # each file once, with the function that entered it
    assert order[0] == ("io/endpoint.py", "address")  # the caller's rx.address, then send()
    assert "addresses.py" not in files
    assert "pds/rudi.py" not in files
    assert files.get("cms/base.py") not in ("on_send", "on_ack", "on_rtt_sample")
    names = [f for f, _ in order]
    if files.get("wire/trailer.py") == "udp_seed":  # by the receive side, not by the builder
        assert names.index("wire/trailer.py") > names.index("native/rxlane.py")
    for must in ("host.py", "pds/endpoint.py", "pds/initiator.py", "native/txbuild.py",
                 "native/rxlane.py", "pds/target.py", "ses/target.py"):
        assert must in files


def test_the_tool_prints_the_list_and_its_count(capsys):
    assert _tool().main(["--bytes", "64KiB", "--port", "0", "--cold"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["warm"] is False and out["bytes"] == 65536
    assert out["count"] == len(out["files"]) > 0
    assert out["files"][1] == {"file": "addresses.py", "function": "canonical"}  # first send
