"""A whole generated tree: every manifest, and every kustomization as Argo CD will build it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainkit.deployed.baseline import Baseline
from trainkit.errors import Problem
from trainkit.validate.build import start_build
from trainkit.validate.crds import CrdSet
from trainkit.validate.files import validate_paths, validate_text
from trainkit.validate.pod_security import BASELINE, PodAllowance

__all__ = ["validate_tree"]


def validate_tree(
    out_dir: Path,
    crds: CrdSet | None,
    root: Path,
    baseline: Baseline | None = None,
    *,
    allowance: PodAllowance = BASELINE,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Problem], int]:
    """Problems of the files under ``out_dir`` and of each kustomize build; and the build count.

    ``baseline`` (the deployed tree) makes each changed file an update of its
    deployed version, for the CRDs' transition rules. Build outputs are
    checked as new objects only: an object's file is already compared.
    ``allowance`` is what pod templates may be granted. ``progress`` is told each step.
    """
    step = progress or (lambda _text: None)
    builds = sorted(p.parent for p in out_dir.glob("*/*/kustomization.yaml"))
    builds += sorted(p.parent for p in out_dir.glob("argocd/kustomization.yaml"))
    # The builds run while the files are validated.
    running = [start_build(build) for build in builds]
    try:
        step(f"validating the manifests in {out_dir.as_posix()}/")
        seen: set[str] = set()
        problems = validate_paths(
            [out_dir], crds, root=root, allowance=allowance, baseline=baseline, seen=seen
        )
        for build in running:
            step(f"kustomize build {build.directory.as_posix()}")
            text, build_problems = build.result()
            problems.extend(build_problems)
            # What Argo CD applies is the build output, so validate that too; an object
            # identical to one of a file was validated already.
            shown = f"{build.directory.as_posix()} (kustomize build)"
            problems.extend(validate_text(text, shown, crds, allowance=allowance, seen=seen))
    finally:
        for build in running:
            build.stop()
    return problems, len(builds)
