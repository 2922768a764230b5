"""Field-level summaries of a change (``nodes 2→4``, ``image``, ``args``), never whole objects.

A job is compared on its effective pods, so what the summary names is what the
controllers will run differently: ``nodes`` when the replicas or ``numNodes``
change, ``image`` when the trainer's or the runtime's image does. What the
operators inject from the object's name (``MASTER_ADDR`` of a new run) is no
change of the job. Other kinds are compared leaf by leaf.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..effective import EffectiveJob, PodSet
from ..render.kubeflow_trainer import NODE
from ..render.meta import DEFINITION_ANNOTATION
from .facts import FieldChange, JobFacts, PodCount
from .trees import Obj

__all__ = ["job_facts", "job_fields", "object_fields", "shown"]

# Variables the controllers set themselves (from the object's name, the node rank).
_INJECTED = frozenset({"Training Operator", "Kubeflow Trainer"})
# Container keys the summary names on its own terms.
_CONTAINER_OWN = frozenset({"name", "image", "command", "args", "env", "volumeMounts"})
# Wrappers that say where a field lives, not what it is: left out of short paths.
_WRAPPERS = frozenset(
    {"spec", "template", "replicatedJobs", "containers", "trainingRuntimeSpec", "resource"}
)
_SHORT_VALUE = 24
_PER_NODE = frozenset({"GPUs/node", "cpu/node", "memory/node"})


def main_pods(ej: EffectiveJob) -> PodSet | None:
    """The pod set that runs the training container (Master, or Trainer's ``node``)."""
    for ps in ej.pod_sets:
        if ps.role == NODE:
            return ps
    return ej.pod_sets[0] if ej.pod_sets else None


def job_facts(ej: EffectiveJob) -> JobFacts:
    ps = main_pods(ej)
    return JobFacts.model_construct(
        nodes=ej.nodes,
        procs_per_node=ej.procs_per_node,
        world_size=ej.world_size,
        gpus=ej.gpus(),
        gpu_resource=ej.planned.cluster.gpu_resource,
        image=str(ps.main.get("image") or "") if ps is not None else "",
        queue=ej.gang.queue if ej.gang is not None else None,
        pods=[PodCount.model_construct(role=p.role, count=p.count) for p in ej.pod_sets],
    )


def shown(change: FieldChange) -> str:
    """``nodes 2→4`` for short values, else the field's name."""
    a, b = change.before, change.after
    if a is not None and b is not None and len(a) <= _SHORT_VALUE and len(b) <= _SHORT_VALUE:
        return f"{change.field} {a}→{b}"
    return change.field


def job_fields(
    old: Obj, new: Obj, before: EffectiveJob | None, after: EffectiveJob | None
) -> list[FieldChange]:
    """What differs between two runs of a job, most telling first."""
    if before is None or after is None:
        return object_fields(old, new)
    out = [*_numbers(before, after), *_pods(before, after), *_job_spec(old, new)]
    if any(c.field in _PER_NODE for c in out):
        out = [c for c in out if c.field != "resources"]  # already said, in numbers
    if not out:
        out = _metadata(old, new)
    return _unique(out)


def object_fields(old: Obj, new: Obj) -> list[FieldChange]:
    """Every differing leaf of two versions of an object, with short paths."""
    out = [
        FieldChange.model_construct(field=_short(path), before=_scalar(a), after=_scalar(b))
        for path, a, b in _leaves(old.body.get("spec"), new.body.get("spec"), ())
    ]
    for key in sorted((old.body.keys() | new.body.keys()) - {"apiVersion", "metadata", "spec"}):
        if old.body.get(key) != new.body.get(key):
            out.append(FieldChange.model_construct(field=key))
    out += _metadata(old, new)
    return _unique(out)


def _numbers(before: EffectiveJob, after: EffectiveJob) -> Iterator[FieldChange]:
    pb, pa = main_pods(before), main_pods(after)
    rb = pb.limits() if pb is not None else {}
    ra = pa.limits() if pa is not None else {}
    qb = before.gang.queue if before.gang else None
    qa = after.gang.queue if after.gang else None
    pairs = (
        ("nodes", str(before.nodes), str(after.nodes)),
        ("procs/node", before.procs_per_node, after.procs_per_node),
        ("GPUs/node", str(before.gpus_per_node()), str(after.gpus_per_node())),
        ("cpu/node", rb.get("cpu", "-"), ra.get("cpu", "-")),
        ("memory/node", rb.get("memory", "-"), ra.get("memory", "-")),
        ("queue", qb or "-", qa or "-"),
    )
    for name, a, b in pairs:
        if a != b:
            yield FieldChange.model_construct(field=name, before=a, after=b)


def _pods(before: EffectiveJob, after: EffectiveJob) -> Iterator[FieldChange]:
    old_sets = {ps.role: ps for ps in before.pod_sets}
    for new in after.pod_sets:
        old = old_sets.get(new.role)
        if old is not None:
            yield from _pod(old, new)


def _pod(old: PodSet, new: PodSet) -> Iterator[FieldChange]:
    a, b = old.main, new.main
    if a.get("image") != b.get("image"):
        yield FieldChange.model_construct(
            field="image", before=str(a.get("image")), after=str(b.get("image"))
        )
    for key in ("command", "args"):
        if a.get(key) != b.get(key):
            yield FieldChange.model_construct(field=key)
    if _own_env(old) != _own_env(new):
        yield FieldChange.model_construct(field="env")
    if _scripts(old.spec) != _scripts(new.spec):
        yield FieldChange.model_construct(field="script")
    if _volumes(old.spec) != _volumes(new.spec) or _mounts(a) != _mounts(b):
        yield FieldChange.model_construct(field="volumes")
    for key in sorted((a.keys() | b.keys()) - _CONTAINER_OWN):
        if a.get(key) != b.get(key):
            yield FieldChange.model_construct(field=key)
    others = [
        [c for c in spec.get("containers") or [] if c.get("name") != ps.container]
        for spec, ps in ((old.spec, old), (new.spec, new))
    ]
    if others[0] != others[1] or old.spec.get("initContainers") != new.spec.get("initContainers"):
        yield FieldChange.model_construct(field="containers")
    for key in sorted((old.spec.keys() | new.spec.keys()) - {"containers", "initContainers"}):
        if key != "volumes" and old.spec.get(key) != new.spec.get(key):
            yield FieldChange.model_construct(field=key)


def _own_env(ps: PodSet) -> dict[str, str]:
    return {e.name: f"<{e.ref}>" if e.ref else e.value for e in ps.env if e.source not in _INJECTED}


def _scripts(spec: dict[str, Any]) -> list[str]:
    return sorted(
        str(v["configMap"].get("name"))
        for v in spec.get("volumes") or []
        if isinstance(v.get("configMap"), dict)
    )


def _volumes(spec: dict[str, Any]) -> list[Any]:
    return [v for v in spec.get("volumes") or [] if "configMap" not in v]


def _mounts(container: dict[str, Any]) -> list[Any]:
    return sorted(
        (str(m.get("mountPath")), str(m.get("name"))) for m in container.get("volumeMounts") or []
    )


def _job_spec(old: Obj, new: Obj) -> Iterator[FieldChange]:
    """Job-level fields the pods do not show (restart and run policies, the runtime)."""
    a, b = _dict(old.body.get("spec")), _dict(new.body.get("spec"))
    if new.kind == "TrainJob":
        ra, rb = _dict(a.get("runtimeRef")), _dict(b.get("runtimeRef"))
        if ra != rb:
            yield FieldChange.model_construct(field="runtime", before=_name(ra), after=_name(rb))
        skip = {"trainer", "runtimePatches", "suspend", "runtimeRef"}
    else:
        skip = {"pytorchReplicaSpecs", "nprocPerNode", "runPolicy"}
        pa, pb = _dict(a.get("runPolicy")), _dict(b.get("runPolicy"))
        for key in sorted((pa.keys() | pb.keys()) - {"schedulingPolicy", "suspend"}):
            if pa.get(key) != pb.get(key):
                yield FieldChange.model_construct(
                    field=f"runPolicy.{key}",
                    before=_scalar(pa.get(key)),
                    after=_scalar(pb.get(key)),
                )
        sa, sb = _dict(pa.get("schedulingPolicy")), _dict(pb.get("schedulingPolicy"))
        for key in sorted((sa.keys() | sb.keys()) - {"queue", "minAvailable"}):
            if sa.get(key) != sb.get(key):
                yield FieldChange.model_construct(field=f"schedulingPolicy.{key}")
        ra, rb = _dict(a.get("pytorchReplicaSpecs")), _dict(b.get("pytorchReplicaSpecs"))
        for role in sorted(ra.keys() & rb.keys()):
            x, y = _dict(ra[role]), _dict(rb[role])
            for key in sorted((x.keys() | y.keys()) - {"template", "replicas"}):
                if x.get(key) != y.get(key):
                    yield FieldChange.model_construct(field=f"{role}.{key}")
    for key in sorted((a.keys() | b.keys()) - skip):
        if a.get(key) != b.get(key):
            yield FieldChange.model_construct(
                field=key, before=_scalar(a.get(key)), after=_scalar(b.get(key))
            )


def _metadata(old: Obj, new: Obj) -> list[FieldChange]:
    out = []
    for part in ("labels", "annotations"):
        a, b = _dict(old.meta.get(part)), _dict(new.meta.get(part))
        a.pop(DEFINITION_ANNOTATION, None)
        b.pop(DEFINITION_ANNOTATION, None)
        if a != b:
            out.append(FieldChange.model_construct(field=part))
    return out


def _leaves(a: Any, b: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any, Any]]:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            yield from _leaves(a.get(key), b.get(key), (*path, str(key)))
    elif _named(a) and _named(b):
        x = {str(i["name"]): i for i in a}
        y = {str(i["name"]): i for i in b}
        found = [
            leaf
            for name in sorted(x.keys() | y.keys())
            for leaf in _leaves(x.get(name), y.get(name), (*path, name))
        ]
        # Same items by name, yet other lists: another order, or a name twice.
        yield from found or [(path, a, b)]
    else:
        yield path, a, b


def _named(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, dict) and "name" in i for i in value)


def _short(path: tuple[str, ...]) -> str:
    kept: list[str] = []
    for part in path:
        if part in _WRAPPERS or (kept and kept[-1] == part):
            continue
        kept.append(part)
    return ".".join(kept) or (path[-1] if path else "spec")


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def _name(ref: dict[str, Any]) -> str | None:
    name = ref.get("name")
    return str(name) if name is not None else None


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _unique(changes: list[FieldChange]) -> list[FieldChange]:
    seen: dict[str, FieldChange] = {}
    for c in changes:
        seen.setdefault(c.field, c)
    return list(seen.values())
