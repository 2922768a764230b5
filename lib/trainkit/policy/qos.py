"""Guaranteed QoS unless the platform allows less (``Policy.burstable``).

A pod whose CPU or memory request is below its limit is Burstable: the kubelet throttles
and evicts it before Guaranteed pods, and a gang of them can lose a node mid-step. Checked
on the pods the controllers create, so a runtime's request reaches its TrainJobs' pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..effective import EffectiveJob
from ..errors import Problem
from ..load import Definition
from ..resolve import Index, PlannedRuntime, problem

__all__ = ["check_qos"]


def check_qos(
    index: Index,
    jobs: Sequence[EffectiveJob],
    runtimes: Sequence[tuple[PlannedRuntime, dict[str, Any]]],
    problems: list[Problem],
) -> None:
    if index.rules.burstable:
        return
    for pr, body in runtimes:
        mine = {ic.name: i for i, ic in enumerate(pr.runtime.init_containers)}
        seen: set[str] = set()
        for rjob in body["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = rjob["template"]["spec"]["template"]["spec"]
            _check(index, pr.definition, pod.get("containers") or [], problems)
            # The runtime's init containers and sidecars, once each: the QoS counts them too.
            for c in pod.get("initContainers") or []:
                name = str(c.get("name"))
                if name in mine and name not in seen:
                    seen.add(name)
                    field = f"init_containers[{mine[name]}].resources."
                    _check(index, pr.definition, [c], problems, field)
    for ej in jobs:
        pj = ej.planned
        if hasattr(pj.job, "resources") and pj.job.resources is None:
            continue  # the runtime's resources, reported at the runtime
        own = [ic.name for ic in getattr(pj.job, "init_containers", [])]
        ray = _ray_fields(pj.job)
        for ps in ej.pod_sets:
            _check(index, pj.definition, [ps.main], problems, ray.get(ps.role, "resources."))
            # The job's init containers and sidecars: the pod's QoS counts them too.
            for c in ps.spec.get("initContainers") or []:
                if c.get("name") in own:
                    field = f"init_containers[{own.index(c['name'])}].resources."
                    _check(index, pj.definition, [c], problems, field)


def _ray_fields(job: object) -> dict[str, str]:
    """Where a RayJob's or RayCluster's pod sets take their resources from, by role (the
    head, each worker group, the submitter); none for other kinds, whose pod sets take the
    job's ``resources``."""
    head = getattr(job, "head", None)
    workers = getattr(job, "workers", None)
    if head is None and not hasattr(job, "ray_cluster"):
        return {}
    out = {"Head": "head."}
    for i, g in enumerate(workers if isinstance(workers, list) else []):
        out[str(getattr(g, "name", ""))] = f"workers[{i}].resources."
    submitter = getattr(job, "submitter", None)
    own = submitter is not None and submitter.resources is not None
    out["Submitter"] = "submitter.resources." if own else "submitter_resources."
    return out


def _check(
    index: Index,
    d: Definition,
    containers: Iterable[dict[str, Any]],
    problems: list[Problem],
    field: str = "resources.",
) -> None:
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for name in ("cpu", "memory"):
            if name in requests and requests[name] != limits.get(name):
                where = index.policy.file if index.policy else "jobs/platform/"
                problems.append(
                    problem(
                        d,
                        f"a {name} request below the limit makes the pods Burstable (throttled "
                        f"and evicted before Guaranteed pods), which Policy.burstable in {where} "
                        f"does not allow; remove {name}_request",
                        f"{field}{name}_request",
                    )
                )
