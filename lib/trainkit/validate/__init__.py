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
    objects = decode_build(text.encode())          # what Argo CD applies from a build
    print(format_text(problems))                  # or format_json(problems)
"""

from __future__ import annotations

from trainkit.validate.applied import Planned, planned_objects
from trainkit.validate.argo_decode import ARGOCD_KUSTOMIZE, Decoded, DecodeError, decode_build
from trainkit.validate.build import kustomize_build
from trainkit.validate.check import check_object, describe_object
from trainkit.validate.crd_needs import NeededCrd, crd_needs, describe_kind
from trainkit.validate.crds import CrdSet, TreeCrds, crds_dir, load_crds
from trainkit.validate.files import validate_paths, validate_text
from trainkit.validate.pod_security import BASELINE, PodAllowance
from trainkit.validate.report import format_github, format_json, format_text
from trainkit.validate.tree import TreeBuilds, validate_tree

__all__ = [
    "ARGOCD_KUSTOMIZE",
    "BASELINE",
    "CrdSet",
    "DecodeError",
    "Decoded",
    "NeededCrd",
    "Planned",
    "PodAllowance",
    "TreeBuilds",
    "TreeCrds",
    "check_object",
    "crd_needs",
    "crds_dir",
    "decode_build",
    "describe_kind",
    "describe_object",
    "format_github",
    "format_json",
    "format_text",
    "kustomize_build",
    "load_crds",
    "planned_objects",
    "validate_paths",
    "validate_text",
    "validate_tree",
]
