"""One ``kubectl kustomize`` per distinct input in a test run, shared by the xdist workers.

Hundreds of tests run ``trainkit check`` on copies of the example tree that differ in one
file or not at all, and each copy's Applications were built again although kustomize
(deterministic) read the same bytes: about a fifth of the suite's CPU. Here a build whose
inputs were built before *in this test run* gives the earlier build's output; the code
under test runs unchanged around it (``validate.build.Build`` still starts, waits, reads
and stops each build; only the kubectl process is not started again).

The key is conservative and independent of trainkit's own reuse digest (so a bug there
cannot hide here): the kubectl binary (path, size, mtime), the ``KUSTOMIZE_*`` and
``XDG_CONFIG_HOME`` environment, and the bytes and relative names of every file kustomize
may read: the directory's tree, and the tree or file of every string in any
kustomization of it that names an existing path (resources, components, patches…),
followed transitively; symlinks count by their target text and the bytes they reach.
Only a clean success is stored (exit 0, nothing on stderr, no ``buildMetadata``, no
absolute path of the inputs in the output): a failure's message names its directory, so
failures always run kubectl.

``TRAINKIT_TEST_BUILD_CACHE=0`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainkit.validate import build

_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")


class _Done:
    """A kubectl process that already ended with status 0 (its output is in the file)."""

    returncode = 0

    def poll(self) -> int:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def kill(self) -> None:
        pass


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


class _Inputs:
    """The digest of everything a build of ``directory`` may read; None when unsure."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.seen: set[Path] = set()
        self.roots: list[Path] = []

    def add(self, path: Path, name: str) -> bool:
        real = path.resolve()
        if real in self.seen:
            return True
        self.seen.add(real)
        if real.is_dir():
            self.roots.append(real)
            for entry in sorted(path.rglob("*")):
                rel = f"{name}/{entry.relative_to(path).as_posix()}"
                if entry.is_symlink():
                    self.h.update(f"L {rel} -> {os.readlink(entry)}\n".encode())
                    if entry.is_dir():  # rglob does not descend into it
                        if not self.add(entry, rel):
                            return False
                        continue
                if entry.is_file():
                    self.h.update(f"F {rel} {entry.stat().st_size}\n".encode())
                    self.h.update(entry.read_bytes())
                    if entry.name in _KUSTOMIZATIONS and not self.kustomization(entry, rel):
                        return False
                elif not entry.is_dir() and not entry.exists():
                    self.h.update(f"X {rel}\n".encode())  # a dangling link
            return True
        if real.is_file():
            self.h.update(f"F {name} {real.stat().st_size}\n".encode())
            self.h.update(real.read_bytes())
            return True
        return False

    def kustomization(self, file: Path, rel: str) -> bool:
        try:
            docs = list(yaml.safe_load_all(file.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError):
            return False
        for doc in docs:
            if isinstance(doc, dict) and "buildMetadata" in doc:
                return False  # origin annotations hold the inputs' paths
            for s in _strings(doc):
                if "://" in s or "\n" in s or len(s) > 4096:
                    continue
                target = file.parent / s
                try:
                    exists = target.exists()
                except OSError:
                    continue
                if exists and not self.add(target, f"{rel}:{s}"):
                    return False
        return True


def build_key(directory: Path, kubectl: str) -> tuple[str, list[Path]] | None:
    try:
        st = os.stat(kubectl)
        inputs = _Inputs()
        env = sorted(
            (k, v)
            for k, v in os.environ.items()
            if k.startswith("KUSTOMIZE") or k == "XDG_CONFIG_HOME"
        )
        inputs.h.update(
            f"{os.path.realpath(kubectl)} {st.st_size} {st.st_mtime_ns} {env}\n".encode()
        )
        if not inputs.add(Path(directory), "."):
            return None
    except (OSError, RecursionError):
        return None
    return inputs.h.hexdigest(), inputs.roots


def install(monkeypatch: pytest.MonkeyPatch, store: Path) -> None:
    """Serve ``validate.build.Build`` from ``store`` (a directory shared by the workers)."""
    if os.environ.get("TRAINKIT_TEST_BUILD_CACHE") == "0":
        return
    store.mkdir(parents=True, exist_ok=True)
    real_init = build.Build.__init__
    real_output = build.Build.output

    def init(self: build.Build, directory: Path, kubectl: str) -> None:
        found = build_key(directory, kubectl)
        self._test_key = found  # type: ignore[attr-defined]
        if found is not None:
            try:
                data = (store / found[0]).read_bytes()
            except OSError:
                pass
            else:
                self.directory = directory
                self.kubectl = kubectl
                self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
                self._err = tempfile.TemporaryFile()  # noqa: SIM115
                self._out.write(data)
                self._proc = _Done()  # type: ignore[assignment]
                return
        real_init(self, directory, kubectl)

    def output(self: build.Build) -> tuple[bytes, list[Any]]:
        data, problems = real_output(self)
        found = getattr(self, "_test_key", None)
        if found is not None and not problems and not isinstance(self._proc, _Done):
            key, roots = found
            paths = {str(self.directory), *map(str, roots)}
            clean = not self._read(self._err) and not any(p.encode() in data for p in paths)
            if clean:
                fd, tmp = tempfile.mkstemp(dir=store)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, store / key)
        return data, problems

    monkeypatch.setattr(build.Build, "__init__", init)
    monkeypatch.setattr(build.Build, "output", output)
