"""A whole generated tree: every manifest, and every kustomization as Argo CD will build it.

The kustomizations built are those Argo CD builds: each directory whose kustomization
lists only files (an Application's). One that lists other kustomizations' directories
(a cluster's, for overlays) would build the same objects again, in one build whose cost
grows with the square of its objects; a Component builds only inside another. The builds
run beside the validation of the files, as many at once as there are cores.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from pathlib import Path

import yaml

from trainkit.deployed.baseline import Baseline
from trainkit.errors import Problem
from trainkit.validate.applied import Planned, compare_build
from trainkit.validate.argo_decode import DecodeError, decode_build
from trainkit.validate.build import Build, VersionProbe, origin_build, start_build
from trainkit.validate.crds import CrdSet
from trainkit.validate.documents import InputLimitError
from trainkit.validate.files import validate_decoded, validate_paths
from trainkit.validate.pod_security import BASELINE, PodAllowance

__all__ = ["build_directories", "validate_tree"]


def validate_tree(
    out_dir: Path,
    crds: CrdSet | None,
    root: Path,
    baseline: Baseline | None = None,
    *,
    allowance: PodAllowance = BASELINE,
    progress: Callable[[str], None] | None = None,
    planned: Planned | None = None,
    notes: list[Problem] | None = None,
) -> tuple[list[Problem], int]:
    """Problems of the files under ``out_dir`` and of each kustomize build; and the build count.

    ``baseline`` (the deployed tree) makes each changed file an update of its
    deployed version, for the CRDs' transition rules. Each build is decoded as Argo CD
    decodes it (``argo_decode``) and its objects validated as new objects (an object
    identical to a file's was validated already). With ``planned`` (the objects each
    file must give, see ``applied``), each build must hold exactly those objects.
    ``allowance`` is what pod templates may be granted. ``progress`` is told each step.
    ``notes`` receives warnings (a kustomize other than the one Argo CD bundles).
    """
    step = progress or (lambda _text: None)
    builds = build_directories(out_dir)
    # The first builds run while the files are validated, the rest as those end.
    waiting = deque(builds)
    running: deque[Build] = deque()
    cores = _cores()

    def fill() -> None:
        while waiting and len(running) < cores:
            running.append(start_build(waiting.popleft()))

    fill()
    probe = VersionProbe(running[0].kubectl) if running and notes is not None else None
    shown_tree = _shown(out_dir, root)
    try:
        step(f"validating the manifests in {out_dir.as_posix()}/")
        seen: set[str] = set()
        problems = validate_paths(
            [out_dir], crds, root=root, allowance=allowance, baseline=baseline, seen=seen
        )
        while running:
            build = running[0]
            step(f"kustomize build {build.directory.as_posix()}")
            data, build_problems = build.output()
            build.stop()
            running.popleft()
            fill()
            problems.extend(build_problems)
            if build_problems:
                continue
            shown = f"{build.directory.as_posix()} (kustomize build)"
            try:
                objects = decode_build(data)
            except (DecodeError, InputLimitError) as err:
                problems.append(
                    Problem(
                        file=shown,
                        line=err.line,
                        message=f"Argo CD cannot decode this build: {err.message}",
                    )
                )
                continue
            # What Argo CD applies is the build output, so validate that too; an object
            # identical to one of a file was validated already.
            problems.extend(validate_decoded(objects, shown, crds, allowance=allowance, seen=seen))
            if planned is not None:
                compared = compare_build(
                    build.directory, out_dir, objects, planned,
                    shown=shown_tree, origins=origin_build,
                )  # fmt: skip
                problems.extend(compared)
        if probe is not None and notes is not None:
            warning = probe.warning(f"{shown_tree}/")
            if warning is not None:
                notes.append(warning)
    finally:
        for build in running:
            build.stop()
        if probe is not None:
            probe.stop()
    return problems, len(builds)


def _shown(out_dir: Path, root: Path) -> str:
    try:
        return out_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return out_dir.as_posix()


def build_directories(out_dir: Path) -> list[Path]:
    """Every directory below ``out_dir`` whose kustomization Argo CD builds: a Kustomization
    (not a Component) listing no directory (see the module docstring)."""
    found = []
    for path in sorted(out_dir.rglob("kustomization.yaml")):
        if any(part.startswith(".") for part in path.relative_to(out_dir).parts):
            continue
        try:
            doc = yaml.safe_load(path.read_bytes())
        except (OSError, yaml.YAMLError):
            found.append(path.parent)  # the build says what is wrong with it
            continue
        if not isinstance(doc, dict) or doc.get("kind") == "Component":
            continue
        listed = doc.get("resources") or []
        if isinstance(listed, list) and any(
            isinstance(r, str) and (path.parent / r).is_dir() for r in listed
        ):
            continue
        found.append(path.parent)
    return found


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
