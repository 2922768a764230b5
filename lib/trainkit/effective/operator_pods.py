"""The pods Training Operator v1.9 creates for a PyTorchJob.

Sources (kubeflow/trainer v1.9.4): replicas, ports and defaults
(pkg/apis/kubeflow.org/v1/pytorch_defaults.go), the injected environment
(pkg/controller.v1/pytorch/envvar.go: WORLD_SIZE is replicas × nprocPerNode when
that is a number, × 1 otherwise), the PodGroup (pkg/controller.v1/common/job.go,
pkg/controller.v1/common/scheduling.go: named after the job, minMember from
schedulingPolicy.minAvailable, queue from schedulingPolicy.queue).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..injected_env import pytorchjob_elastic_env, pytorchjob_env
from ..render.training_operator import CONTAINER
from ..resolve import PlannedJob
from .podsets import EffectiveJob, EnvVar, Gang, PodSet, env_source

__all__ = [
    "effective_pytorchjob",
    "first_requests",
    "gpus_per_pod",
    "role_pod_sets",
    "run_policy_gang",
    "scheduling_gang",
]

_OPERATOR = "Training Operator"
_PER_POD = {"RANK": "the node rank", "PET_NODE_RANK": "the node rank"}


def effective_pytorchjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    replicas = spec["pytorchReplicaSpecs"]
    nproc = str(spec.get("nprocPerNode", "auto"))
    total = sum(int(r.get("replicas", 1)) for r in replicas.values())
    per_node = int(nproc) if nproc.isdigit() else 1
    elastic = spec.get("elasticPolicy")
    if elastic is not None:
        operator = pytorchjob_elastic_env(
            job_name=pj.object_name,
            min_nodes=int(elastic["minReplicas"]),
            max_nodes=int(elastic["maxReplicas"]),
            max_restarts=int(elastic["maxRestarts"]),
            procs_per_node=nproc,
        )
    else:
        operator = pytorchjob_env(
            job_name=pj.object_name, nodes=total, procs_per_node=per_node, node_rank=0
        )
        operator["PET_NPROC_PER_NODE"] = nproc
    pod_sets = []
    rank = 0
    for role in ("Master", "Worker"):
        if role not in replicas:
            continue
        count = int(replicas[role].get("replicas", 1))
        template = replicas[role]["template"]["spec"]
        own = next(c for c in template["containers"] if c["name"] == CONTAINER)
        env = [EnvVar.of(e, env_source(pj, e["name"], "job")) for e in own.get("env") or []]
        names = {e.name for e in env}
        # Without a Master the rendezvous, not the operator, numbers the nodes.
        ranks = {} if elastic is not None else {"RANK": str(rank), "PET_NODE_RANK": str(rank)}
        first = {**operator, **ranks}
        env += [
            EnvVar(k, v, _OPERATOR, _PER_POD.get(k, "")) for k, v in first.items() if k not in names
        ]
        merged = dict(template)
        merged["containers"] = [
            {**c, "env": [e.entry() for e in env]} if c["name"] == CONTAINER else c
            for c in template["containers"]
        ]
        pod_sets.append(PodSet(role, count, rank, merged, CONTAINER, tuple(env)))
        rank += count
    gang = run_policy_gang(pj, spec, pod_sets, total)
    world = total * (per_node if nproc.isdigit() else max(1, gpus_per_pod(pod_sets, pj)))
    notes = []
    if elastic is not None:
        notes.append(
            f"elastic: {elastic['minReplicas']} to {elastic['maxReplicas']} Workers meet at "
            f"{operator['PET_RDZV_ENDPOINT']} (c10d), which numbers them; torchrun restarts the "
            f"group up to {elastic['maxRestarts']} times; world size {world} with every Worker"
        )
    elif not nproc.isdigit():
        notes.append(
            f"nprocPerNode is {nproc!r}: the operator sets WORLD_SIZE={total} (one per pod) and "
            f"torchrun, if the command runs it, starts one process per GPU ({world} in all)"
        )
    return EffectiveJob(
        pj, tuple(pod_sets), nproc, world, operator.get("WORLD_SIZE"), gang, tuple(notes)
    )


def gpus_per_pod(pod_sets: list[PodSet], pj: PlannedJob) -> int:
    """The most GPUs of the cluster's kind any of ``pod_sets``' pods has (0 without)."""
    return max(
        (int(Decimal(ps.limits().get(pj.cluster.gpu_resource, "0"))) for ps in pod_sets), default=0
    )


def run_policy_gang(
    pj: PlannedJob, spec: dict[str, Any], pod_sets: list[PodSet], default: int
) -> Gang | None:
    """The PodGroup of a kubeflow.org job from ``runPolicy.schedulingPolicy``: named after the
    job, ``minAvailable`` (else ``default``) members, the first ones' requests admitted at
    once; None without a schedulingPolicy (no Volcano)."""
    return scheduling_gang(pj, spec.get("runPolicy", {}).get("schedulingPolicy"), pod_sets, default)


def scheduling_gang(
    pj: PlannedJob, scheduling: dict[str, Any] | None, pod_sets: list[PodSet], default: int
) -> Gang | None:
    """The PodGroup an operator makes from a ``schedulingPolicy`` (the kubeflow.org kinds'
    and paddle-operator's): named after the job, ``minAvailable`` (else ``default``)
    members; None without one (no Volcano)."""
    if scheduling is None:
        return None
    members = int(scheduling.get("minAvailable", default))
    return Gang(pj.object_name, scheduling.get("queue"), members, first_requests(pod_sets, members))


def first_requests(pod_sets: list[PodSet], members: int) -> dict[str, Decimal]:
    """Requests of the first ``members`` pods in ``pod_sets`` order: what Volcano admits at
    once."""
    total: dict[str, Decimal] = {}
    left = members
    for ps in pod_sets:
        take = min(left, ps.count)
        for name, value in ps.requests().items():
            total[name] = total.get(name, Decimal(0)) + value * take
        left -= take
    return total


def role_pod_sets(
    pj: PlannedJob,
    replicas: dict[str, Any],
    container: str,
    injected: Callable[[str, dict[str, int]], list[EnvVar]],
) -> list[PodSet]:
    """The pod sets of a job of roles (TFJob, PaddleJob): each replica type's template with
    the job's env and what the operator appends for its first pod (``injected(type,
    counts)``) on container ``container``."""
    counts = {rtype: int(r.get("replicas", 1)) for rtype, r in replicas.items()}
    pod_sets = []
    for rtype, count in counts.items():
        template = dict(replicas[rtype]["template"]["spec"])
        own = next(c for c in template["containers"] if c["name"] == container)
        env = [EnvVar.of(e, env_source(pj, e["name"], "job")) for e in own.get("env") or []]
        env += injected(rtype, counts)
        template["containers"] = [
            {**c, "env": [e.entry() for e in env]} if c["name"] == container else c
            for c in template["containers"]
        ]
        pod_sets.append(PodSet(rtype, count, 0, template, container, tuple(env)))
    return pod_sets
