"""The stand-in for ``/workspace``: laid out as the pod's, read-only where the pod's is.

A pod mounts each script file read-only at ``/workspace/<file>`` (a ConfigMap
``subPath``) and leaves ``/workspace`` itself to the image, writable
(``trainkit.render.pod.pod_volumes``). The rehearsal's working directory is a
writable temporary directory holding the same files with mode 0444, so a script
saving to a relative path works here exactly when it works on the cluster, and
one rewriting its own file fails (PermissionError here, "Read-only file system"
there: both are OSError).

Root ignores file modes. Running as root on Linux, each node is started through
``readonly_mounts.py``, which mounts the files read-only in a mount namespace of
its own (EROFS, as on the cluster); where the system refuses that (a container
without CAP_SYS_ADMIN), the files stay writable and the rehearsal says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from . import readonly_mounts

__all__ = ["Protection", "ReadOnly", "prepare_workspace"]

MOUNT_HELPER = Path(readonly_mounts.__file__)


class Protection(Enum):
    MODE = "mode"
    """Mode 0444: enough for anyone but root."""
    MOUNT = "mount"
    """A read-only bind mount in each node's own mount namespace (root on Linux)."""
    NONE = "none"
    """Root where read-only mounts are refused: the files stay writable."""


@dataclass(frozen=True)
class ReadOnly:
    """How the workspace's script files are kept read-only."""

    protection: Protection = Protection.MODE
    reason: str = ""
    """Why read-only mounts were refused (Protection.NONE)."""

    def wrapper(self, files: list[Path], python: str) -> tuple[str, ...]:
        """What to put before a node's command so that ``files`` are read-only for it."""
        if self.protection is not Protection.MOUNT or not files:
            return ()
        return (python, str(MOUNT_HELPER), *(str(f) for f in files), "--")


def prepare_workspace(workspace: Path, files: Mapping[str, str], python: str) -> ReadOnly:
    """Write ``files`` (name → text) into ``workspace`` with mode 0444; how they stay read-only."""
    workspace.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        path = workspace / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o444)
        paths.append(path)
    if not paths or os.geteuid() != 0:
        return ReadOnly()
    if not sys.platform.startswith("linux"):
        return ReadOnly(Protection.NONE, "read-only mounts need Linux")
    probe = subprocess.run(
        [python, str(MOUNT_HELPER), *map(str, paths), "--"],  # no command: the mounts only
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode == 0:
        return ReadOnly(Protection.MOUNT)
    lines = probe.stderr.strip().splitlines()
    return ReadOnly(Protection.NONE, lines[-1] if lines else f"exit code {probe.returncode}")
