"""A whole generated tree: every manifest, and every kustomization as Argo CD will build it."""

from __future__ import annotations

from pathlib import Path

from trainkit.deployed import Baseline
from trainkit.errors import Problem
from trainkit.validate.crds import CrdSet
from trainkit.validate.files import validate_paths, validate_text
from trainkit.validate.kustomize import kustomize_build

__all__ = ["validate_tree"]


def validate_tree(
    out_dir: Path, crds: CrdSet | None, root: Path, baseline: Baseline | None = None
) -> tuple[list[Problem], int]:
    """Problems of the files under ``out_dir`` and of each kustomize build; and the build count.

    ``baseline`` (the deployed tree) makes each changed file an update of its
    deployed version, for the CRDs' transition rules. Build outputs are
    checked as new objects only: an object's file is already compared.
    """
    problems = validate_paths([out_dir], crds, root=root, baseline=baseline)
    builds = sorted(p.parent for p in out_dir.glob("*/*/kustomization.yaml"))
    builds += sorted(p.parent for p in out_dir.glob("argocd/kustomization.yaml"))
    for build in builds:
        text, build_problems = kustomize_build(build)
        problems.extend(build_problems)
        # What Argo CD applies is the build output, so validate that too.
        problems.extend(validate_text(text, f"{build.as_posix()} (kustomize build)", crds))
    return problems, len(builds)
