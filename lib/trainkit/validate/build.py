"""``kubectl kustomize``: the build Argo CD will run, run first on the developer's machine.

A kustomization that does not build shows up in Argo CD only as a
ComparisonError on the Application; building it here turns that into a
Problem with kustomize's own message.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from trainkit.errors import Problem, SetupError

__all__ = ["Build", "kustomize_build", "start_build"]

_INSTALL = (
    "kubectl not found on PATH; install it (https://kubernetes.io/docs/tasks/tools/, e.g. "
    "`apt-get install kubectl` from the Kubernetes apt repository or the static binary from "
    "https://dl.k8s.io/release/<version>/bin/linux/amd64/kubectl); it bundles kustomize"
)


def kustomize_build(directory: Path) -> tuple[str, list[Problem]]:
    """Run ``kubectl kustomize <directory>``; return ``(yaml, [])`` or ``("", problems)``."""
    build = start_build(directory)
    try:
        return build.result()
    finally:
        build.stop()


class Build:
    """A ``kubectl kustomize`` running in the background (builds of a tree run at once:
    kustomize takes seconds for a thousand objects, on one CPU each)."""

    def __init__(self, directory: Path, kubectl: str) -> None:
        self.directory = directory
        # Files, not pipes: a full pipe would stop kustomize until we read it.
        # (Closed by ``stop``: they outlive this method.)
        self._out = tempfile.TemporaryFile()  # noqa: SIM115
        self._err = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            [kubectl, "kustomize", str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
        )

    def result(self) -> tuple[str, list[Problem]]:
        """Wait for the build; ``(yaml, [])`` or ``("", problems)``."""
        self._proc.wait()
        out, err = self._read(self._out), self._read(self._err)
        if self._proc.returncode == 0:
            return out.decode("utf-8", "replace"), []
        text = err.decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            lines = [f"kubectl kustomize exited with status {self._proc.returncode}"]
        return "", [
            Problem(
                file=str(self.directory),
                message=f"kustomize build failed: {line.removeprefix('error: ')}",
            )
            for line in lines
        ]

    def stop(self) -> None:
        """Kill the build if it still runs (an error or Ctrl-C while it did); close its files."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._out.close()
        self._err.close()

    @staticmethod
    def _read(fh: IO[bytes]) -> bytes:
        fh.seek(0)
        return fh.read()


def start_build(directory: Path) -> Build:
    """Start ``kubectl kustomize <directory>``; ``Build.result`` waits for it."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SetupError([Problem(file=str(directory), message=_INSTALL)])
    return Build(directory, kubectl)
