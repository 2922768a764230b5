"""A port for a rehearsal's rendezvous that no other process is about to take.

``bind(0)`` hands out a port from the ephemeral range, which every outgoing connection of the
machine draws from too: between that probe and the rendezvous's own bind, another process (a
second rehearsal, a test suite beside this one) may be given the same port, and the rendezvous
fails with EADDRINUSE. Ports below the range are given only to whoever asks for one by number,
so a random free one there stays free unless another process draws the same at random.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # below: well-known and registered services


def ephemeral_low() -> int:
    """The first port of the machine's ephemeral range (Linux's default when unknown)."""
    try:
        low, _ = (int(x) for x in _EPHEMERAL.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return 32_768  # Linux's default; macOS starts at 49152
    return low


def free_port(rng: random.Random | None = None) -> int:
    """A port free on every address, below the ephemeral range when there is room."""
    low = ephemeral_low()
    draw = rng or random.SystemRandom()
    for _ in range(100 if low > _LOWEST + 100 else 0):
        port = draw.randrange(_LOWEST, low)
        with socket.socket() as s:
            try:
                s.bind(("", port))  # every address: a rendezvous listens on all of them
            except OSError:
                continue  # taken, or a past connection's TIME_WAIT
            return port
    with socket.socket() as s:
        s.bind(("", 0))
        found: int = s.getsockname()[1]
        return found
