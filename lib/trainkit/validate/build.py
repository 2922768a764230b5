"""``kubectl kustomize``: the build Argo CD will run, run first on the developer's machine.

A kustomization that does not build shows up in Argo CD only as a
ComparisonError on the Application; building it here turns that into a
Problem with kustomize's own message.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from trainkit.errors import Problem, SetupError

__all__ = ["kustomize_build"]

_INSTALL = (
    "kubectl not found on PATH; install it (https://kubernetes.io/docs/tasks/tools/, e.g. "
    "`apt-get install kubectl` from the Kubernetes apt repository or the static binary from "
    "https://dl.k8s.io/release/<version>/bin/linux/amd64/kubectl); it bundles kustomize"
)


def kustomize_build(directory: Path) -> tuple[str, list[Problem]]:
    """Run ``kubectl kustomize <directory>``; return ``(yaml, [])`` or ``("", problems)``."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SetupError([Problem(file=str(directory), message=_INSTALL)])
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode == 0:
        return result.stdout, []
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    if not lines:
        lines = [f"kubectl kustomize exited with status {result.returncode}"]
    return "", [
        Problem(
            file=str(directory), message=f"kustomize build failed: {line.removeprefix('error: ')}"
        )
        for line in lines
    ]
