"""Offline validation of generated manifests against the cluster's CRDs.

What the API server would reject or silently change — unknown (pruned)
fields, wrong types, bounds, CEL rules, invalid names, labels and quantities
— is found before Argo CD syncs, with the file, object and JSON path.

    crds = load_crds(crds_dir(option))            # or None: object rules only
    problems = validate_paths([Path("generated")], crds, root=repo)
    text, build_problems = kustomize_build(Path("generated/overlays/prod"))
    grant_profiles(crds, plan.network_profiles)   # pods may have what the platform grants
    print(format_text(problems))                  # or format_json(problems)
"""

from __future__ import annotations

from trainkit.validate.crds import CrdSet, crds_dir, load_crds
from trainkit.validate.files import validate_paths, validate_text
from trainkit.validate.kustomize import kustomize_build
from trainkit.validate.pod_security import grant_profiles
from trainkit.validate.report import format_json, format_text
from trainkit.validate.tree import validate_tree

__all__ = [
    "CrdSet",
    "crds_dir",
    "format_json",
    "format_text",
    "grant_profiles",
    "kustomize_build",
    "load_crds",
    "validate_paths",
    "validate_text",
    "validate_tree",
]
