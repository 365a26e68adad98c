"""What differs between Wireshark versions, read without depending on 4.0's details
(uet/wireshark/tshark.py): how ``tshark -v`` names its Lua, whether ``-X lua_script`` runs as root,
and the plugin's name beside a built-in ``uet`` dissector. The first tests are pure (no tshark)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wshelpers import (  # noqa: E402
    CAPTURES, NEEDS_TSHARK, TSHARK, compare, lua_file, run_tshark, tshark_env, uet_decode_json,
)

from uet.wireshark import tshark_command  # noqa: E402
from uet.wireshark.tshark import (  # noqa: E402
    UNPRIVILEGED, Tshark, TsharkVersion, lua_version, parse_version, plugin_name, protocols, run_as_for,
)

__all__ = ["lua_file"]

WS_40 = """TShark (Wireshark) 4.0.17 (Git v4.0.17 packaged as 4.0.17-0+deb12u3).

Compiled (64-bit) using GCC 12.2.0, with GLib 2.74.6, with PCRE2, with zlib
1.2.13, with libpcap, with POSIX capabilities (Linux), with libnl 3, with Lua
5.2.4, with GnuTLS 3.7.9 and PKCS #11 support, with Gcrypt 1.10.1, with Kerberos
"""
WS_44 = """TShark (Wireshark) 4.4.7 (Git v4.4.7 packaged as 4.4.7-1).

Compiled (64-bit) using GCC 14.2.0, with GLib 2.84.1, with libpcap, with POSIX
capabilities (Linux), with libnl 3, with zlib 1.3.1, with PCRE2, with Lua 5.4.6, with GnuTLS
"""
WS_DEV = """TShark (Wireshark) 4.5.0 (v4.5.0rc0-3456-g0123456789ab).

Compiled (64-bit) using Clang 18.1.3, with GLib 2.80.0, with Lua 5.4, with zlib-ng 2.2.2
"""


# --- pure ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, want", [
    ("Lua 5.2.4", (5, 2, 4)),
    ("with Lua 5.4.6", (5, 4, 6)),
    ("Lua 5.4", (5, 4)),
    ("with libnl 3, with Lua\n5.2.4, with GnuTLS", (5, 2, 4)),  # 4.0 wraps after "Lua"
    ("with Lua (5.4.6)", (5, 4, 6)),
    ("without Lua, with GnuTLS", None),
    ("with LuaJIT 2.1", None),
    ("with GLib 2.74.6", None),
])
def test_lua_version_in_every_spelling(text, want):
    assert lua_version(text) == want


@pytest.mark.parametrize("text, ws, lua, dev", [
    (WS_40, (4, 0, 17), (5, 2, 4), False),
    (WS_44, (4, 4, 7), (5, 4, 6), False),
    (WS_DEV, (4, 5, 0), (5, 4), True),
    ("", None, None, False),
])
def test_parse_version(text, ws, lua, dev):
    v = parse_version(text)
    assert (v.wireshark, v.lua, v.development) == (ws, lua, dev)


def test_superuser_workaround_only_when_needed():
    """The command line runs tshark unprivileged exactly when we are root and this build skips user
    scripts for root, and never carries a run_user_scripts_when_superuser preference: no Wireshark
    has one (it is a Lua global of init.lua), and an unknown -o makes tshark exit 1."""
    assert run_as_for(0, scripts_as_root=True) is None
    assert run_as_for(1000, scripts_as_root=True) is None
    assert run_as_for(1000, scripts_as_root=False) is None  # not root: scripts always run
    assert run_as_for(0, scripts_as_root=False) == UNPRIVILEGED
    plain = ["/usr/bin/tshark", "-n", "-r", "a.pcap", "-X", "lua_script:b.lua", "-o", "uet.trailer:crc",
             "-T", "pdml"]
    for euid, ok, prefix in [(0, True, []), (1000, False, []),
                             (0, False, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                         "--reset-env"])]:
        cmd = tshark_command("a.pcap", ["b.lua"], output="pdml", tshark="/usr/bin/tshark",
                             prefs=("uet.trailer:crc",), run_as=run_as_for(euid, ok))
        assert cmd == prefix + plain
        assert not any("superuser" in a for a in cmd)


def test_tshark_properties_follow_the_probe():
    v = parse_version(WS_44)
    root_skips = Tshark("/t", v, frozenset({"udp", "uet"}), euid=0, scripts_as_root=False)
    assert root_skips.name == "uetref" and root_skips.run_as == UNPRIVILEGED
    user = Tshark("/t", v, frozenset({"udp"}), euid=1000, scripts_as_root=True)
    assert user.name == "uet" and user.run_as is None and user.usable is None
    no_lua = Tshark("/t", TsharkVersion((4, 4, 7), None), frozenset(), euid=1000, scripts_as_root=True)
    assert no_lua.usable == "tshark has no Lua"


def test_plugin_name_beside_a_builtin_uet():
    dump = "User Datagram Protocol\tUDP\tudp\nUltra Ethernet Transport\tUET\tuet\n"
    assert protocols(dump) == {"udp", "uet"}
    assert plugin_name(protocols(dump)) == "uetref"
    assert plugin_name({"udp"}) == "uet"
    assert plugin_name({"uetx"}, "uetx") == "uetxref"


# --- with the installed tshark ---------------------------------------------------------------

@NEEDS_TSHARK
@pytest.mark.tshark
def test_probe_reads_this_tshark():
    env = tshark_env()
    out = subprocess.run([TSHARK, "-v"], capture_output=True, text=True).stdout
    assert env.version == parse_version(out)
    assert env.version.wireshark is not None and env.version.lua is not None
    assert env.name == ("uetref" if "uet" in env.builtin else "uet")
    assert env.euid == os.geteuid()


@NEEDS_TSHARK
@pytest.mark.tshark
def test_there_is_no_superuser_preference():
    """Why the runner never passes -o run_user_scripts_when_superuser: tshark rejects it."""
    for pref in ("run_user_scripts_when_superuser:TRUE", "gui.run_user_scripts_when_superuser:TRUE"):
        proc = subprocess.run([TSHARK, "-n", "-r", str(CAPTURES / "uet_pds.pcap"), "-o", pref, "-c", "1"],
                              capture_output=True, text=True)
        assert proc.returncode != 0 and "unknown preference" in proc.stderr


@NEEDS_TSHARK
@pytest.mark.tshark
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv (util-linux)")
def test_unprivileged_run_gives_the_same_dissection(lua_file):
    """The fallback for builds that skip user scripts as root, forced here: tshark as nobody with
    copies of the files shows exactly what uet decode shows."""
    pcap = CAPTURES / "uet_pds.pcap"
    name = tshark_env().name
    run = run_tshark(pcap, [lua_file], prefs=(f"{name}.check_crc:TRUE",), run_as=UNPRIVILEGED)
    assert run.returncode == 0 and "Running as user" not in run.stderr, run.stderr
    objs = uet_decode_json(pcap)
    assert len(objs) == len(run.packets)
    for obj, pkt in zip(objs, run.packets):
        assert compare(obj, pkt, pn=name) == []
