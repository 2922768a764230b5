"""The platform's JSON patches (``PlatformPatch``) applied to the rendered objects.

They apply to the plain dicts every later step reads — the effective pods, policy, the
in-place checks, the files and what ``check`` compares with each kustomize build — so a
patched object is judged as it will run. A patch that targets nothing, names an unknown
team or cluster, or fails on an object is an error naming the patch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import jsonpatch
import jsonpointer

from ..errors import DefinitionError, Problem
from ..model import PlatformPatch
from ..render.meta import DEFINITION_ANNOTATION, definition_hash
from ..resolve import Declared, Plan, problem
from ..resolve.problems import known
from .rendered import Groups, Rendered

__all__ = ["PATCHED_BY_ANNOTATION", "apply_patches", "patched_problems"]

PATCHED_BY_ANNOTATION = "trainkit.dev/patched-by"
"""On every patched object: the patches that changed it, in the order they applied."""


def apply_patches(plan: Plan, groups: Groups) -> Groups:
    """``groups`` with every platform patch applied; raise DefinitionError naming each
    patch that targets nothing or cannot apply."""
    patches = sorted(plan.index.patches.items())
    if not patches:
        return groups
    problems: list[Problem] = []
    namespaces = {name: t.obj.target_namespace for name, t in plan.index.teams.items()}
    out: Groups = []
    matched: set[str] = set()
    for chart, items in groups:
        patched_items = []
        for r in items:
            for name, declared in patches:
                if r.plain or not _targets(declared.obj, chart, r.body, namespaces):
                    continue
                matched.add(name)
                r = _apply(declared, r, chart, problems)
            patched_items.append(r)
        out.append((chart, patched_items))
    for name, declared in patches:
        unknown = _reference_problems(declared, plan, namespaces)
        problems.extend(unknown)
        if name not in matched and not unknown:
            problems.append(
                problem(declared.definition, _matches_nothing(declared.obj), "object_kind")
            )
    if problems:
        raise DefinitionError(list(dict.fromkeys(problems)))
    return out


def _targets(
    p: PlatformPatch, chart: str, body: dict[str, Any], namespaces: dict[str, str]
) -> bool:
    meta = body.get("metadata") or {}
    if body.get("kind") != p.object_kind or chart == "argocd":
        return False
    if p.clusters is not None and chart not in p.clusters:
        return False
    if p.object_name is not None and meta.get("name") != p.object_name:
        return False
    return p.team is None or meta.get("namespace") == namespaces.get(p.team)


def _apply(
    declared: Declared[PlatformPatch], r: Rendered, chart: str, problems: list[Problem]
) -> Rendered:
    p = declared.obj
    ops = [op.as_rfc6902() for op in p.ops]
    try:
        # A new document (in_place=False copies it first): the rendered body stays as it was.
        body = jsonpatch.apply_patch(r.body, ops)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as e:
        meta = r.body.get("metadata") or {}
        problems.append(
            problem(
                declared.definition,
                f"cannot apply to {r.body.get('kind')} {meta.get('name')!r} on cluster "
                f"{chart!r} ({r.path}): {e}; fix the operation or narrow the target "
                "(object_name, team, clusters)",
                "ops",
            )
        )
        return r
    meta = body.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {})
    before = annotations.get(PATCHED_BY_ANNOTATION)
    annotations[PATCHED_BY_ANNOTATION] = f"{before},{p.name}" if before else p.name
    if DEFINITION_ANNOTATION in annotations:
        # The patch is part of what the object is made from: an object whose definition did
        # not change but whose patch did is a changed object, never kept as deployed.
        annotations[DEFINITION_ANNOTATION] = definition_hash(
            {"definition": annotations[DEFINITION_ANNOTATION], "patch": json.dumps(ops)}
        )
    return Rendered(r.path, body, r.source, r.definition, r.planned, r.plain)


def _reference_problems(
    declared: Declared[PlatformPatch], plan: Plan, namespaces: dict[str, str]
) -> list[Problem]:
    p = declared.obj
    out = []
    if p.team is not None and p.team not in namespaces:
        out.append(
            problem(
                declared.definition, f"unknown team {p.team!r}; defined teams: {known(namespaces)}",
                "team",
            )
        )  # fmt: skip
    clusters = {cp.cluster.name for cp in plan.clusters}
    for c in p.clusters or ():
        if c not in clusters:
            out.append(
                problem(
                    declared.definition,
                    f"unknown cluster {c!r}; defined clusters: {known(clusters)}",
                    "clusters",
                )
            )
    return out


def _matches_nothing(p: PlatformPatch) -> str:
    scope = [f"object_kind {p.object_kind!r}"]
    if p.object_name is not None:
        scope.append(f"object_name {p.object_name!r}")
    if p.team is not None:
        scope.append(f"team {p.team!r}")
    if p.clusters is not None:
        scope.append(f"clusters {', '.join(repr(c) for c in p.clusters)}")
    return (
        f"matches no planned object ({', '.join(scope)}); a patch that changes nothing is "
        "a leftover or a typo: fix the target or remove the patch"
    )


def patched_problems(problems: Sequence[Problem], groups: Groups) -> list[Problem]:
    """``problems``, each of a patched object saying which patches made it what was judged
    (the definition alone may be fine: the fix may be the patch's)."""
    patched: dict[tuple[str, str], list[str]] = {}
    for _, items in groups:
        for r in items:
            names = ((r.body.get("metadata") or {}).get("annotations") or {}).get(
                PATCHED_BY_ANNOTATION
            )
            if names and r.definition is not None:
                key = (r.definition.file, r.definition.obj.describe())
                patched.setdefault(key, [])
                patched[key] += [n for n in names.split(",") if n not in patched[key]]
    out = []
    for p in problems:
        names = patched.get((p.file, p.obj))
        if names:
            shown = ", ".join(f"PlatformPatch {n!r}" for n in names)
            p = dataclasses.replace(p, message=f"{p.message} (as patched by {shown})")
        out.append(p)
    return out
