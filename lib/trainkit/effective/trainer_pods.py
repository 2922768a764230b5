"""The pods Kubeflow Trainer v2.3 creates for a TrainJob, from it and its runtime.

Sources (kubeflow/trainer v2.3.0): runtimePatches are strategic-merged onto the
runtime's JobSet spec in order, and their template labels and annotations merged
onto the runtime's (pkg/runtime/core/trainingruntime.go); ``resourcesPerNode`` is
merged key by key onto container ``node`` (MergeResourceRequirements,
pkg/util/trainingruntime/trainingruntime.go); image, command and args replace
the runtime's and env is upserted by name (pkg/runtime/framework/plugins/jobset/
builder.go); the torch plugin adds PET_* only when spec.trainer is set and
resolves ``auto`` (plugins/torch/torch.go); Volcano's PodGroup is named after
the TrainJob and counts every pod (plugins/volcano/volcano.go).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ..injected_env import TRAINER_MASTER_PORT
from ..kube.quantities import parse_quantity
from ..plan import PlannedJob
from ..render.kubeflow_trainer import ANCESTOR_LABEL, NODE
from ..render.meta import VOLCANO_QUEUE_ANNOTATION
from .merge import strategic_merge
from .podsets import EffectiveJob, EnvVar, Gang, PodSet, env_source

__all__ = ["effective_trainjob"]

_TRAINER = "Kubeflow Trainer"


def effective_trainjob(
    pj: PlannedJob, body: dict[str, Any], runtime: dict[str, Any]
) -> EffectiveJob:
    spec = body["spec"]
    rt_spec = runtime["spec"]
    jobset = rt_spec["template"]["spec"]
    annotations = dict((rt_spec["template"].get("metadata") or {}).get("annotations") or {})
    for patch in spec.get("runtimePatches") or []:
        template = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
        annotations.update((template.get("metadata") or {}).get("annotations") or {})
        if template.get("spec") is not None:
            jobset = strategic_merge(jobset, template["spec"])
    trainer = spec.get("trainer")
    runtime_name = f"runtime {runtime['metadata']['name']!r}"
    pod_sets: list[PodSet] = []
    notes: list[str] = []
    procs = "1"
    world = 0
    for rjob in jobset["replicatedJobs"]:
        labels = (rjob["template"].get("metadata") or {}).get("labels") or {}
        pod = rjob["template"]["spec"]["template"]["spec"]
        count = 1
        if labels.get(ANCESTOR_LABEL) == "trainer":
            count = int((trainer or {}).get("numNodes") or rt_spec["mlPolicy"].get("numNodes", 1))
            pod, env, procs = _trainer_pod(pod, runtime_name, trainer, pj, count, notes)
            world = count * _procs(procs, pod)
        else:
            env = ()
        pod_sets.append(PodSet(rjob["name"], count, 0, pod, NODE, env))
    gang = None
    if "volcano" in (rt_spec.get("podGroupPolicy") or {}):
        members = sum(ps.count for ps in pod_sets)
        requests: dict[str, Decimal] = {}
        for ps in pod_sets:
            for name, value in ps.requests().items():
                requests[name] = requests.get(name, Decimal(0)) + value * ps.count
        gang = Gang(pj.object_name, annotations.get(VOLCANO_QUEUE_ANNOTATION), members, requests)
    return EffectiveJob(pj, tuple(pod_sets), procs, world, None, gang, tuple(notes))


def _trainer_pod(
    pod: dict[str, Any],
    runtime_name: str,
    trainer: dict[str, Any] | None,
    pj: PlannedJob,
    count: int,
    notes: list[str],
) -> tuple[dict[str, Any], tuple[EnvVar, ...], str]:
    containers = []
    env: list[EnvVar] = []
    procs = "1"
    for c in pod.get("containers") or []:
        if c.get("name") != NODE:
            containers.append(c)
            continue
        c = dict(c)
        env = [EnvVar.of(e, env_source(pj, e["name"], runtime_name)) for e in c.get("env") or []]
        if trainer is not None:
            for key in ("image", "command", "args"):
                if key in trainer:
                    c[key] = trainer[key]
            for e in trainer.get("env") or []:
                env = [x for x in env if x.name != e["name"]]
                env.append(EnvVar.of(e, "job"))
            if "resourcesPerNode" in trainer:
                base = c.get("resources") or {}
                override = trainer["resourcesPerNode"]
                c["resources"] = {
                    part: {**(base.get(part) or {}), **(override.get(part) or {})}
                    for part in ("limits", "requests")
                    if base.get(part) or override.get(part)
                }
            procs = _resolve_procs(trainer, c, pj, notes)
            injected = {
                "PET_NNODES": str(count),
                "PET_NPROC_PER_NODE": procs,
                "PET_NODE_RANK": "0",
                "PET_MASTER_ADDR": f"{pj.object_name}-node-0-0.{pj.object_name}",
                "PET_MASTER_PORT": str(TRAINER_MASTER_PORT),
            }
            env = [x for x in env if x.name not in injected]
            env += [
                EnvVar(k, v, _TRAINER, "the pod's completion index" if k == "PET_NODE_RANK" else "")
                for k, v in injected.items()
            ]
        else:
            notes.append(
                "spec.trainer is not set: Trainer injects no PET_* variables, torchrun runs alone"
            )
        c["env"] = [e.entry() for e in env]
        containers.append(c)
    return {**pod, "containers": containers}, tuple(env), procs


def _resolve_procs(
    trainer: dict[str, Any], container: dict[str, Any], pj: PlannedJob, notes: list[str]
) -> str:
    if "numProcPerNode" in trainer:
        return str(trainer["numProcPerNode"])
    # "auto" is resolved from resourcesPerNode as given, else the runtime's resources.
    res = trainer.get("resourcesPerNode") or container.get("resources") or {}
    gpus = _gpus(res.get("requests") or {}) or _gpus(res.get("limits") or {})
    if gpus:
        return "auto"
    cpu = parse_quantity(str((res.get("requests") or res.get("limits") or {}).get("cpu", "1")))
    cores = max(1, math.ceil(cpu or 1))
    notes.append(f"numProcPerNode 'auto' without GPUs: Trainer starts {cores} (one per CPU)")
    return str(cores)


def _gpus(amounts: dict[str, Any]) -> int:
    # Trainer's GetNumGPUPerNode: the first resource whose name contains "gpu".
    for name, value in amounts.items():
        if "gpu" in name.lower():
            return int(parse_quantity(str(value)) or 0)
    return 0


def _procs(procs: str, pod: dict[str, Any]) -> int:
    if procs.isdigit():
        return int(procs)
    node: dict[str, Any] = next(
        (c for c in pod.get("containers") or [] if c.get("name") == NODE), {}
    )
    limits = (node.get("resources") or {}).get("limits") or {}
    return max(1, _gpus(limits))
