"""Refuse a synth that would change a deployed object where the cluster forbids it.

A TrainJob cannot change once created; neither can a PyTorchJob's queue nor
a runtime's JobSet policies. Argo CD would apply such an edit, the API server
would reject it ("field is immutable") and the sync would stay failed. So
each rendered job and runtime is compared with its deployed version (the
committed file at the same path, see ``deployed``) before anything is
written, and the error says how to make the change a new object instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import DefinitionError, Problem
from ..load import Definition
from ..model import JOB_KINDS, RayCluster, TrainJob
from .baseline import Baseline
from .immutable import in_place_changes

__all__ = ["keep_deployed", "refuse_in_place_changes"]

_DEFINITION = re.compile(rb"^    trainkit\.dev/definition: ['\"]?(sha256:[0-9a-f]+)", re.MULTILINE)


def keep_deployed(
    files: dict[str, bytes], origins: dict[str, Definition], baseline: Baseline
) -> list[str]:
    """Give back the deployed bytes of every job whose definition did not change.

    A trainkit upgrade may render an unchanged job differently (an explicit
    default, a new mount layout). Applied to a deployed job that would be an
    in-place change: refused by the API server for a TrainJob, restarts with
    mixed templates for a running PyTorchJob. So the committed object stays as
    it is and the new rendering applies from the job's next run. Returns the
    paths kept. Only a git baseline counts: on disk, the "deployed" files are the
    very output being checked, and keeping them would hide a hand edit.
    """
    if baseline.git is None:
        return []
    deployed = baseline.read_changed({p: files[p] for p in sorted(origins) if p in files})
    kept = []
    for path, old in deployed.items():
        new = files[path]
        if _same_definition(old, new):
            files[path] = old
            kept.append(path)
    return kept


def _same_definition(old: bytes, new: bytes) -> bool:
    was, now = _DEFINITION.search(old), _DEFINITION.search(new)
    return was is not None and now is not None and was.group(1) == now.group(1)


def refuse_in_place_changes(
    files: dict[str, bytes], origins: dict[str, Definition], baseline: Baseline
) -> None:
    """Raise DefinitionError naming every object of ``origins`` that would change in place.

    ``origins`` maps the path of each job and runtime file to its definition.
    """
    deployed = baseline.read_changed({p: files[p] for p in sorted(origins) if p in files})
    # One message per definition, naming every cluster where it would change: the advice
    # (run=N) is one edit of the job, not one per cluster.
    found: dict[int, _Change] = {}
    for path, old_bytes in deployed.items():
        new_bytes = files[path]
        if _same_definition(old_bytes, new_bytes):
            # Same definition, other bytes: a hand edit of the output or a new trainkit's
            # rendering, not a change of the job (stale output, or kept by keep_deployed).
            continue
        old, new = _load(old_bytes), _load(new_bytes)
        if old is None or new is None:
            continue  # an unreadable deployed file is the validator's to report
        changed = in_place_changes(old, new)
        if changed:
            d = origins[path]
            change = found.setdefault(id(d), _Change(d, new, [], [], set()))
            change.clusters.append(path.split("/")[1] if path.startswith("clusters/") else "?")
            change.fields.extend(f for f in changed if f not in change.fields)
            change.scripts |= _changed_scripts(old, new, path, files, baseline)
    if found:
        raise DefinitionError([_problem(c, baseline) for c in found.values()])


@dataclass
class _Change:
    definition: Definition
    new: dict[str, Any]
    clusters: list[str]
    fields: list[str]
    scripts: set[str] = field(default_factory=set)
    """Script files whose content changed (the ConfigMap the pods mount was renamed)."""


def _config_maps(doc: Any) -> set[str]:
    """Names of the ConfigMaps an object's pod templates mount."""
    names: set[str] = set()
    if isinstance(doc, dict):
        ref = doc.get("configMap")
        if isinstance(ref, dict) and isinstance(ref.get("name"), str):
            names.add(ref["name"])
        for value in doc.values():
            names |= _config_maps(value)
    elif isinstance(doc, list):
        for value in doc:
            names |= _config_maps(value)
    return names


def _changed_scripts(
    old: dict[str, Any], new: dict[str, Any], path: str, files: dict[str, bytes], baseline: Baseline
) -> set[str]:
    """The script files that differ between the mounted ConfigMaps (named by content hash)."""
    gone, added = _config_maps(old) - _config_maps(new), _config_maps(new) - _config_maps(old)
    if not gone or not added:
        return set()
    folder = path.rsplit("/", 1)[0]
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for name in gone:
        data = baseline.read_many([f"{folder}/configmap-{name}.yaml"]).get(
            f"{folder}/configmap-{name}.yaml"
        )
        doc = _load(data) if data is not None else None
        before.update((doc or {}).get("data") or {})
    for name in added:
        doc = _load(files.get(f"{folder}/configmap-{name}.yaml", b""))
        after.update((doc or {}).get("data") or {})
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return changed or {"(the mounted ConfigMap)"}


def _load(data: bytes) -> dict[str, Any] | None:
    try:
        doc = yaml.load(data, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None
    return doc if isinstance(doc, dict) else None


def _problem(c: _Change, baseline: Baseline) -> Problem:
    d, new = c.definition, c.new
    kind, name = new.get("kind", ""), new.get("metadata", {}).get("name", "")
    where = (
        f"cluster {c.clusters[0]!r}"
        if len(c.clusters) == 1
        else "clusters " + ", ".join(repr(x) for x in c.clusters)
    )
    changed = ", ".join(c.fields)
    if c.scripts:
        changed += f"; its script changed: {', '.join(sorted(c.scripts))}"
    what = (
        f"{kind} {name!r} on {where} is deployed from {baseline.description} "
        f"and would change in place ({changed})"
    )
    obj = d.obj
    if isinstance(obj, JOB_KINDS):
        run = (obj.run or 0) + 1
        why = (
            ", but a TrainJob cannot change once created (Argo CD's sync would fail: field "
            "is immutable)"
            if isinstance(obj, TrainJob)
            else ": KubeRay makes a RayCluster's pods once from its template and never updates "
            "them, so the cluster would run old pods beside new ones (only a group's nodes, "
            "min_nodes and max_nodes, and new groups, apply in place)"
            if isinstance(obj, RayCluster)
            else f": a finished {type(obj).__name__} never runs again, and a running one would get "
            "pods of the new template beside pods of the old"
        )
        return Problem(
            file=d.file,
            line=d.line_of("run"),
            obj=obj.describe(),
            field="run",
            message=f"{what}{why}; set run={run} to start the edited job as {obj.name}-r{run} "
            f"(Argo CD prunes {name!r}), or revert the change",
        )
    advice = (
        "give the runtime a new name (e.g. with a version suffix) and point the "
        "jobs at it, or revert the change"
    )
    return Problem(
        file=d.file,
        line=d.line,
        obj=obj.describe(),
        field="name",
        message=f"{what}, which the API server refuses (field is immutable); {advice}",
    )
