"""Socket buffer sizes, shared by every socket the project opens: the live endpoint's UDP sockets
(uet.io.sockets), the raw IP socket of native-IP mode (uet.rawip) and whoever else needs a
receive queue that holds a whole window. No trio and no protocol here: the conformance suite may
import it."""

from __future__ import annotations

import socket


def set_buffer(sock: socket.socket, size: int, force: int, plain: int) -> int:
    """Ask for ``size`` bytes with the privileged option ``force`` (SO_RCVBUFFORCE or
    SO_SNDBUFFORCE: root passes net.core.rmem_max / wmem_max), else the plain one (SO_RCVBUF or
    SO_SNDBUF, capped by the kernel); ``size <= 0`` changes nothing. The size in force after."""
    if size > 0:
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, size)
        except OSError:
            try:
                sock.setsockopt(socket.SOL_SOCKET, plain, size)
            except OSError:
                pass  # the kernel's default stays: a smaller queue, not an error
    return sock.getsockopt(socket.SOL_SOCKET, plain)
