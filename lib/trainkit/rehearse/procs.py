"""Finding and stopping every process a rehearsal started.

Each node's launcher runs in its own session, and torchrun starts each worker
in a session of its own too, so killing the launcher's process group is not
enough: the runner keeps learning the process groups of all descendants while
they run, and signals every one of them when it stops.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "Proc",
    "descendants",
    "forget_ended",
    "kill_groups",
    "live_in_groups",
    "process_table",
]

_PROC = Path("/proc")
_PROC_DIR = str(_PROC)
_STAT_BYTES = 4096
"""More than /proc/<pid>/stat holds (52 numbers and a name of at most 64 bytes)."""


class Proc(NamedTuple):
    """One process of the table (a tuple: built for every process of the machine at each scan,
    where a frozen dataclass costs twice as much)."""

    ppid: int
    pgid: int
    zombie: bool
    """Exited, waiting for its parent to collect it: no longer running."""


def process_table() -> dict[int, Proc]:
    """Every process on the machine: pid → parent, process group, zombie."""
    if (_PROC / "self" / "stat").exists():
        return _from_proc()
    return _from_ps()


def _from_proc() -> dict[int, Proc]:
    # Read with os.open/os.read and bytes, not pathlib or open(): the runner reads the table
    # up to four times a second while a rehearsal runs, each time one file per process of the
    # machine, and a buffered file object per read costs a third of the scan.
    table = {}
    for name in os.listdir(_PROC_DIR):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"{_PROC_DIR}/{name}/stat", os.O_RDONLY)
        except OSError:  # exited meanwhile
            continue
        try:
            raw = os.read(fd, _STAT_BYTES)
        except OSError:  # exited meanwhile
            continue
        finally:
            os.close(fd)
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = raw[raw.rfind(b")") + 2 :].split(None, 3)
        if len(fields) < 3:
            continue
        table[int(name)] = Proc(int(fields[1]), int(fields[2]), fields[0] in (b"Z", b"X"))
    return table


def _from_ps() -> dict[int, Proc]:
    out = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "stat="],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].isdigit():
            table[int(parts[0])] = Proc(int(parts[1]), int(parts[2]), parts[3].startswith("Z"))
    return table


def descendants(table: dict[int, Proc], roots: Iterable[int]) -> set[int]:
    """``roots`` and every process below them."""
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.ppid, []).append(pid)
    seen: set[int] = set()
    todo = [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(children.get(pid, []))
    return seen


def live_in_groups(table: dict[int, Proc], groups: set[int]) -> set[int]:
    """Running (not zombie) members of ``groups``."""
    return {pid for pid, p in table.items() if p.pgid in groups and not p.zombie}


def forget_ended(table: dict[int, Proc], groups: set[int]) -> None:
    """Drop from ``groups`` each group that no process of ``table`` is in any more (a zombie
    still holds its group). An ended group's number is free: the kernel hands it to a new
    process, which may lead a group of its own (a new session, as launchers and daemons
    start), and signalling the old number would stop another program's processes. Learnt
    groups are pruned at every scan, so a number would have to be reused between two scans."""
    groups.intersection_update({p.pgid for p in table.values()})


def kill_groups(groups: Iterable[int], sig: signal.Signals) -> None:
    """Send ``sig`` to each process group that still exists."""
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
