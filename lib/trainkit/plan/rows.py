"""The rows of a cluster's plan: objects Argo CD will create, change or delete.

A job's new run (``x-r3`` → ``x-r4``: same kind, namespace and
``trainkit.dev/job`` label) is one row with its field diff: Argo CD deletes the
old object and creates the new one, and that is what the reviewer decides on.
A job's script ConfigMap is part of its job (its ``script`` field), not a row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from ..effective import EffectiveJob
from ..render.meta import SOURCE_ANNOTATION
from .facts import Action, FieldChange, JobFacts, ObjectChange
from .summaries import job_facts, job_fields, object_fields
from .trees import JOB_KINDS, Key, Obj, application_cluster

__all__ = ["object_changes"]

_ORDER: dict[str, int] = {"add": 0, "new-run": 1, "change": 2, "remove": 3}
_PLATFORM = "platform"


def object_changes(
    cluster: str | None,
    before: Mapping[Key, Obj],
    after: Mapping[Key, Obj],
    pods_before: Mapping[Key, EffectiveJob],
    pods_after: Mapping[Key, EffectiveJob],
) -> list[ObjectChange]:
    """Rows for one cluster (``cluster`` None: Argo CD's own objects), sorted."""
    rows: list[ObjectChange] = []
    old = {k: o for k, o in before.items() if _shown(o)}
    new = {k: o for k, o in after.items() if _shown(o)}
    for key in sorted(old.keys() & new.keys()):
        a, b = old[key], new[key]
        if a.body == b.body:
            continue
        rows.append(_changed("change", a, b, pods_before.get(key), pods_after.get(key)))
    added = sorted(new.keys() - old.keys())
    removed = sorted(old.keys() - new.keys())
    for a_key, b_key in _runs(old, new, removed, added):
        removed.remove(a_key)
        added.remove(b_key)
        rows.append(
            _changed(
                "new-run", old[a_key], new[b_key], pods_before.get(a_key), pods_after.get(b_key)
            )
        )
    for key in added:
        ej = pods_after.get(key)
        rows.append(_row("add", new[key], after=job_facts(ej) if ej else None))
    for key in removed:
        ej = pods_before.get(key)
        obj = old[key]
        rows.append(
            _row(
                "remove",
                obj,
                before=job_facts(ej) if ej else None,
                note=_removal(obj, cluster),
            )
        )
    return sorted(
        rows, key=lambda r: (r.team == _PLATFORM, r.team, _ORDER[r.action], r.kind, r.name)
    )


def _shown(obj: Obj) -> bool:
    return not (obj.kind == "ConfigMap" and obj.job is not None)


def _runs(
    old: Mapping[Key, Obj], new: Mapping[Key, Obj], removed: list[Key], added: list[Key]
) -> list[tuple[Key, Key]]:
    """Pairs (deployed run, new run) of the same job; both lists sorted by name."""
    gone: dict[tuple[str, str, str], list[Key]] = defaultdict(list)
    for key in removed:
        obj = old[key]
        if obj.kind in JOB_KINDS and obj.job:
            gone[(obj.kind, obj.namespace or "", obj.job)].append(key)
    pairs = []
    for key in added:
        obj = new[key]
        if obj.kind not in JOB_KINDS or not obj.job:
            continue
        candidates = gone.get((obj.kind, obj.namespace or "", obj.job))
        if candidates:
            pairs.append((candidates.pop(0), key))
    return pairs


def _changed(
    action: Action, old: Obj, new: Obj, before: EffectiveJob | None, after: EffectiveJob | None
) -> ObjectChange:
    if new.kind in JOB_KINDS:
        fields = job_fields(old, new, before, after)
    else:
        fields = object_fields(old, new)
    note = ""
    if action == "new-run":
        note = (
            f"Argo CD will delete {old.kind} `{old.name}` (and stop it if it is running) "
            f"and create `{new.name}`"
        )
    return _row(
        action,
        new,
        previous=old.name if action == "new-run" else None,
        fields=fields,
        before=job_facts(before) if before else None,
        after=job_facts(after) if after else None,
        note=note,
    )


def _row(
    action: Action,
    obj: Obj,
    *,
    previous: str | None = None,
    fields: list[FieldChange] | None = None,
    before: JobFacts | None = None,
    after: JobFacts | None = None,
    note: str = "",
) -> ObjectChange:
    return ObjectChange.model_construct(
        action=action,
        team=obj.team,
        kind=obj.kind,
        namespace=obj.namespace,
        name=obj.name,
        previous=previous,
        source=obj.annotation(SOURCE_ANNOTATION),
        fields=fields or [],
        before=before,
        after=after,
        note=note,
    )


def _removal(obj: Obj, cluster: str | None) -> str:
    where = f" in `{obj.namespace}`" if obj.namespace else ""
    on = f" on `{cluster}`" if cluster else ""
    what = f"{obj.kind} `{obj.name}`"
    if obj.kind in JOB_KINDS:
        return f"Argo CD will delete {what}{where}{on} (and stop it if it is running)"
    options = obj.annotation("argocd.argoproj.io/sync-options") or ""
    if "Prune=false" in options:
        # The namespaces trainkit writes are never pruned (render/argocd.py).
        return (
            f"Argo CD leaves {what}{on} in place (Prune=false): delete it by hand once it is empty"
        )
    synced = application_cluster(obj)
    finalizers = obj.meta.get("finalizers") or []
    if synced is not None and "resources-finalizer.argocd.argoproj.io" in finalizers:
        return (
            f"Argo CD will delete {what}{where}; its finalizer deletes everything it synced "
            f"to `{synced}` (namespaces stay)"
        )
    return f"Argo CD will delete {what}{where}{on}"
