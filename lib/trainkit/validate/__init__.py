"""Offline validation of generated manifests against the cluster's CRDs.

What the API server would reject or silently change — unknown (pruned)
fields, wrong types, bounds, CEL rules, invalid names, labels and quantities,
objects over the size limits — is found before Argo CD syncs, with the file,
object and JSON path. Every path (``trainkit check`` with or without CRDs,
``trainkit validate``) runs one function per object, ``check_object``.

    crds = load_crds(crds_dir(option))            # or None: object rules only
    allowance = PodAllowance.from_profiles(plan.network_profiles)  # or BASELINE
    problems = validate_paths([Path("generated")], crds, root=repo, allowance=allowance)
    text, build_problems = kustomize_build(Path("generated/overlays/prod"))
    print(format_text(problems))                  # or format_json(problems)
"""

from __future__ import annotations

from trainkit.validate.build import kustomize_build
from trainkit.validate.check import check_object, describe_object
from trainkit.validate.crd_needs import NeededCrd, crd_needs, describe_kind
from trainkit.validate.crds import CrdSet, crds_dir, load_crds
from trainkit.validate.files import validate_paths, validate_text
from trainkit.validate.pod_security import BASELINE, PodAllowance
from trainkit.validate.report import format_github, format_json, format_text
from trainkit.validate.tree import validate_tree

__all__ = [
    "BASELINE",
    "CrdSet",
    "NeededCrd",
    "PodAllowance",
    "check_object",
    "crd_needs",
    "crds_dir",
    "describe_kind",
    "describe_object",
    "format_github",
    "format_json",
    "format_text",
    "kustomize_build",
    "load_crds",
    "validate_paths",
    "validate_text",
    "validate_tree",
]
