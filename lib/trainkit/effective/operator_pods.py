"""The pods Training Operator v1.9 creates for a PyTorchJob, and what every v1 kind shares.

Sources (kubeflow/trainer v1.9.4): replicas, ports, restart policy and nprocPerNode defaults
(pkg/apis/kubeflow.org/v1/pytorch_defaults.go), the injected environment
(pkg/controller.v1/pytorch/envvar.go, master.go, elastic.go: WORLD_SIZE is replicas ×
nprocPerNode when that is a number, × 1 otherwise; MASTER_PORT is the Master's
``pytorchjob-port``), the Workers' init container that waits for the Master's name
(pytorch/initcontainer.go), pod names ``<job>-<type>-<index>`` (pkg/core/utils.go
GenGeneralName), the pod's restartPolicy (pkg/core/pod.go SetRestartPolicy: ``ExitCode``
becomes ``Never``, the operator deciding the retry), success (pytorchjob_controller.go
UpdateJobStatus) and the PodGroup (pkg/controller.v1/common/job.go, util.go
CalcPGMinResources: named after the job, minMember from schedulingPolicy.minAvailable, queue
from schedulingPolicy.queue else ``default``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..injected_env.training_operator_env import (
    PYTORCHJOB_MASTER_PORT,
    pytorchjob_elastic_env,
    pytorchjob_env,
)
from ..render.training_operator import CONTAINER, PORT_NAME
from ..resolve import PlannedJob
from .admission import container_amounts, replica_workload, resource_list
from .podsets import Completion, EffectiveJob, EnvVar, Gang, PodSet, own_env_source

__all__ = [
    "BACKOFF_COUNTS",
    "container_port",
    "effective_pytorchjob",
    "first_pod_requests",
    "first_requests",
    "gpus_per_pod",
    "pod_restart_policy",
    "role_pod_sets",
    "run_policy_gang",
    "scheduling_gang",
]

_OPERATOR = "Training Operator"
_PER_POD = {"RANK": "the node rank", "PET_NODE_RANK": "the node rank"}
# pkg/apis/kubeflow.org/v1/pytorch_types.go PyTorchJobDefaultRestartPolicy.
_DEFAULT_RESTART = "OnFailure"
# pkg/config/config.go: the operator's --pytorch-init-container-image and -max-tries defaults.
INIT_IMAGE = "alpine:3.10"
_INIT_TRIES = 100
# pkg/core/job.go PastBackoffLimit: what runPolicy.backoffLimit counts.
BACKOFF_COUNTS = "restarts of the containers of running pods that restart"


def effective_pytorchjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    replicas = spec["pytorchReplicaSpecs"]
    elastic = spec.get("elasticPolicy")
    nproc = spec.get("nprocPerNode")
    if nproc is None and (elastic is None or elastic.get("nProcPerNode") is None):
        nproc = "auto"  # pytorch_defaults.go setDefaultNprocPerNode
    nproc = None if nproc is None else str(nproc)
    counts = {role: int(r.get("replicas", 1)) for role, r in replicas.items()}
    start = counts.get("Worker", 0)
    if elastic is not None and elastic.get("metrics") and "Worker" in counts:
        # hpa.go desiredHPA: the autoscaler may scale the Workers up to maxReplicas (through
        # the scale subresource, .spec.pytorchReplicaSpecs.Worker.replicas). Quota, caps,
        # gangs and the plan count every pod it may start.
        counts["Worker"] = max(start, int(elastic.get("maxReplicas", start)))
    total = sum(counts.values())
    per_node = int(nproc) if nproc is not None and nproc.isdigit() else 1
    if elastic is not None:
        workers = counts.get("Worker", 0)
        rdzv_conf = [(str(c["key"]), str(c["value"])) for c in elastic.get("rdzvConf") or []]
        operator = pytorchjob_elastic_env(
            job_name=pj.object_name,
            min_nodes=int(elastic.get("minReplicas", elastic.get("maxReplicas", workers))),
            max_nodes=int(elastic.get("maxReplicas", elastic.get("minReplicas", workers))),
            max_restarts=elastic.get("maxRestarts"),
            procs_per_node=nproc,
            port=int(elastic.get("rdzvPort") or container_port(replicas, "Worker")),
            host=elastic.get("rdzvHost"),
            rdzv_id=elastic.get("rdzvId"),
            rdzv_conf=rdzv_conf,
            standalone=bool(elastic.get("standalone")),
            backend=str(elastic.get("rdzvBackend") or "c10d"),
        )
        if elastic.get("nProcPerNode") is not None:
            operator["PET_NPROC_PER_NODE"] = str(elastic["nProcPerNode"])
    else:
        master = "Master" in replicas
        operator = pytorchjob_env(
            job_name=pj.object_name,
            nodes=total,
            procs_per_node=per_node,
            node_rank=0,
            master_port=container_port(replicas, "Master") if master else PYTORCHJOB_MASTER_PORT,
        )
        if not master:  # the master variables, WORLD_SIZE and RANK come with a Master only
            for name in ("MASTER_ADDR", "PET_MASTER_ADDR", "MASTER_PORT", "PET_MASTER_PORT"):
                operator.pop(name)
            for name in ("WORLD_SIZE", "RANK", "PET_NODE_RANK"):
                operator.pop(name)
        if nproc is None:
            operator.pop("PET_NPROC_PER_NODE")
        else:
            operator["PET_NPROC_PER_NODE"] = nproc
    pod_sets = []
    rank = 0
    for role in ("Master", "Worker"):
        if role not in replicas:
            continue
        template = replicas[role]["template"]["spec"]
        own = next(c for c in template["containers"] if c["name"] == CONTAINER)
        user = [EnvVar.of(e, own_env_source(pj, role, e["name"])) for e in own.get("env") or []]
        ranked = elastic is None and "Master" in replicas

        def injected(index: int, first: int = rank, ranked: bool = ranked) -> list[EnvVar]:
            values = dict(operator)
            if ranked:
                values |= {"RANK": str(first + index), "PET_NODE_RANK": str(first + index)}
            return [EnvVar(k, v, _OPERATOR, _PER_POD.get(k, "")) for k, v in values.items()]

        def pod_env(
            index: int, user: list[EnvVar] = user, injected: Callable[..., list[EnvVar]] = injected
        ) -> list[EnvVar]:
            return _appended(user, injected(index))

        env = pod_env(0)
        merged = dict(template)
        merged["containers"] = [
            {**c, "env": [e.entry() for e in env]} if c["name"] == CONTAINER else c
            for c in template["containers"]
        ]
        init: tuple[dict[str, Any], ...] = ()
        if role == "Worker" and "Master" in replicas:
            init = (_init_container(f"{pj.object_name}-master-0"),)
        pod_sets.append(
            PodSet(
                role,
                counts[role],
                rank,
                merged,
                CONTAINER,
                tuple(env),
                restart_policy=pod_restart_policy(replicas[role], _DEFAULT_RESTART),
                name_format=f"{pj.object_name}-{role.lower()}-{{i}}",
                added_init_containers=init,
                vary=pod_env if ranked else None,
            )
        )
        rank += counts[role]
    gang = run_policy_gang(pj, spec, pod_sets, total)
    if gang is not None and elastic is not None and total > gang.min_member:
        gang = dataclasses.replace(gang, at_most=_all_requests(pod_sets))
    world = total * (per_node if nproc and nproc.isdigit() else max(1, gpus_per_pod(pod_sets, pj)))
    notes = []
    if elastic is not None:
        notes.append(
            f"elastic: {operator['PET_NNODES'].replace(':', ' to ')} Workers meet at "
            f"{operator['PET_RDZV_ENDPOINT']} ({_rendezvous(operator)}), which numbers "
            f"them; torchrun restarts the group up to {elastic.get('maxRestarts', 3)} times; "
            f"world size {world} with every Worker; the job succeeds when any Worker exits 0"
        )
        if elastic.get("metrics"):
            notes.append(
                f"autoscaled: starts with {start} Workers; the operator's HorizontalPodAutoscaler "
                f"{pj.object_name} scales them between {operator['PET_NNODES'].replace(':', ' and ')} "
                f"by {_metrics(elastic['metrics'])}, each step a torchrun restart; quota, caps "
                f"and the plan count all {counts['Worker']}"
            )
    elif nproc is not None and not nproc.isdigit():
        notes.append(
            f"nprocPerNode is {nproc!r}: the operator sets WORLD_SIZE={total} (one per pod) and "
            f"torchrun, if the command runs it, starts one process per GPU ({world} in all)"
        )
    if "Master" in replicas and counts.get("Worker"):
        notes.append(
            f"each Worker first waits in init container init-pytorch until the Master's name "
            f"{pj.object_name}-master-0 resolves ({_INIT_TRIES} tries, 2 s apart)"
        )
    if "Master" in replicas:
        completion = _completion(spec, ("Master",), "all")
    elif elastic is not None:
        completion = _completion(spec, ("Worker",), "any")
    else:
        completion = _completion(spec, ("Worker",), "all")
    workload = replica_workload(
        body, replicas, ("Master", "Worker"), (spec.get("runPolicy") or {}).get("schedulingPolicy")
    )
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        nproc or "auto",
        world,
        operator.get("WORLD_SIZE"),
        gang,
        tuple(notes),
        workload=workload,
        completion=completion,
    )


def _rendezvous(env: Mapping[str, str]) -> str:
    """The backend, run id and settings torchrun's rendezvous gets from the operator's env."""
    parts = [env["PET_RDZV_BACKEND"]]
    if "PET_RDZV_ID" in env:
        parts.append(f"run id {env['PET_RDZV_ID']}")
    if "PET_RDZV_CONF" in env:
        parts.append(f"settings {env['PET_RDZV_CONF']}")
    return ", ".join(parts)


def _all_requests(pod_sets: Sequence[PodSet]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for ps in pod_sets:
        for name, value in ps.requests().items():
            total[name] = total.get(name, Decimal(0)) + value * ps.count
    return total


def _metrics(metrics: Sequence[Mapping[str, Any]]) -> str:
    """The autoscaler's targets in words: ``average cpu at 80% of the request``,
    ``samples_per_second at 400 per Worker``, ``backlog of Service/ingest at 1k``."""
    return " or ".join(_metric(m) for m in metrics)


def _metric(m: Mapping[str, Any]) -> str:
    kind = str(m.get("type"))
    source = m.get(kind[:1].lower() + kind[1:]) or {}
    target = source.get("target") or {}
    if kind == "Resource":
        if target.get("type") == "Utilization":
            return f"average {source.get('name')} at {target.get('averageUtilization')}% of the request"
        return f"average {source.get('name')} at {target.get('averageValue')} per pod"
    metric = source.get("metric") or {}
    name = str(metric.get("name"))
    labels = (metric.get("selector") or {}).get("matchLabels") or {}
    if labels:
        name += "{" + ",".join(f"{k}={v}" for k, v in labels.items()) + "}"
    if kind == "Object":
        obj = source.get("describedObject") or {}
        name += f" of {obj.get('kind')}/{obj.get('name')}"
    elif kind == "External":
        name = f"external {name}"
    if target.get("type") == "Value":
        return f"{name} at {target.get('value')}"
    return f"{name} at {target.get('averageValue')} per Worker"


def _appended(user: Sequence[EnvVar], injected: Sequence[EnvVar]) -> list[EnvVar]:
    """The container's env after the operator appends ``injected``: where a name repeats,
    the kubelet keeps the last value, so the operator's replaces the job's."""
    names = {e.name for e in injected}
    return [*(e for e in user if e.name not in names), *injected]


def _init_container(master: str) -> dict[str, Any]:
    """pytorch/initcontainer.go's default template."""
    script = (
        f"err=1;for i in $(seq {_INIT_TRIES}); do if nslookup {master}; then err=0 && break; "
        "fi;echo waiting for master; sleep 2; done; exit $err"
    )
    return {
        "name": "init-pytorch",
        "image": INIT_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": ["sh", "-c", script],
    }


def _completion(spec: Mapping[str, Any], roles: tuple[str, ...], needs: str) -> Completion:
    limit = (spec.get("runPolicy") or {}).get("backoffLimit")
    return Completion(roles, needs, None if limit is None else int(limit), BACKOFF_COUNTS)


def pod_restart_policy(replica: Mapping[str, Any], default: str) -> str:
    """The pods' restartPolicy from a replica spec's (pkg/core/pod.go SetRestartPolicy):
    ``ExitCode`` becomes ``Never`` (the operator recreates a pod that exited with a
    retryable code, 128 or more, and fails the job on any other, pkg/util/train)."""
    policy = str(replica.get("restartPolicy") or default)
    return "Never" if policy == "ExitCode" else policy


def container_port(
    replicas: Mapping[str, Any],
    role: str,
    container: str = CONTAINER,
    port_name: str = PORT_NAME,
    default: int = PYTORCHJOB_MASTER_PORT,
) -> int:
    """The port named ``port_name`` of container ``container`` in ``role``'s template, else
    ``default`` (the port the operator's defaulting adds)."""
    spec = ((replicas.get(role) or {}).get("template") or {}).get("spec") or {}
    for c in spec.get("containers") or []:
        if c.get("name") == container:
            for port in c.get("ports") or []:
                if port.get("name") == port_name:
                    return int(port["containerPort"])
    return default


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
    """The PodGroup the Training Operator makes from a ``schedulingPolicy``
    (pkg/controller.v1/common/job.go): named after the job, ``minAvailable`` (else
    ``default``) members, queue ``default`` when none is named, and ``minResources`` as
    given, else those of the first members (``first_requests``); None without one (trainkit
    writes a schedulingPolicy on every cluster whose operator gang-schedules)."""
    if scheduling is None:
        return None
    members = int(scheduling.get("minAvailable", default))
    given = scheduling.get("minResources")
    requests = resource_list(given) if given is not None else first_requests(pod_sets, members)
    placed = first_pod_requests(pod_sets, members)
    return Gang(
        pj.object_name,
        scheduling.get("queue") or "default",
        members,
        requests,
        priority_class=scheduling.get("priorityClass") or None,
        placed=placed if _more(placed, requests) else None,
    )


def _more(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> bool:
    """Whether ``a`` asks for more of some resource than ``b`` (the pods count, which the
    operator never puts in minResources, aside)."""
    return any(v > b.get(k, Decimal(0)) for k, v in a.items() if k != "pods")


def first_pod_requests(pod_sets: Sequence[PodSet], members: int) -> dict[str, Decimal]:
    """What the first ``members`` pods request as Volcano places them (each pod's
    ``PodSet.requests``: init containers and native sidecars counted as the scheduler counts
    them), where the operator's minResources counts only the containers."""
    total: dict[str, Decimal] = {}
    left = members
    for ps in pod_sets:
        take = min(left, ps.count)
        for name, value in ps.requests().items():
            total[name] = total.get(name, Decimal(0)) + value * take
        left -= take
    return total


def first_requests(pod_sets: Sequence[PodSet], members: int) -> dict[str, Decimal]:
    """The PodGroup's minResources as the Training Operator computes it for the first
    ``members`` pods in ``pod_sets`` order (common/util.go CalcPGMinResources: roles by
    priority, each container's requests, or its limits when it has no requests)."""
    total: dict[str, Decimal] = {}
    left = members
    for ps in pod_sets:
        take = min(left, ps.count)
        for c in ps.spec.get("containers") or []:
            for name, value in container_amounts(c).items():
                total[name] = total.get(name, Decimal(0)) + value * take
        left -= take
    return total


def role_pod_sets(
    pj: PlannedJob,
    replicas: dict[str, Any],
    container: str,
    injected: Callable[[str, dict[str, int], int], list[EnvVar]],
    *,
    default_restart: str,
    names: Callable[[str], str | None] | None = None,
    varies: bool = True,
) -> list[PodSet]:
    """The pod sets of a job of roles (TFJob, PaddleJob): each replica type's template with
    the job's env and what the operator appends for pod ``index`` (``injected(type, counts,
    index)``) on container ``container``."""
    counts = {rtype: int(r.get("replicas", 1)) for rtype, r in replicas.items()}
    pod_sets = []
    for rtype, count in counts.items():
        template = dict(replicas[rtype]["template"]["spec"])
        own = next(c for c in template["containers"] if c["name"] == container)
        user = [EnvVar.of(e, own_env_source(pj, rtype, e["name"])) for e in own.get("env") or []]
        env = _appended(user, injected(rtype, counts, 0))
        template["containers"] = [
            {**c, "env": [e.entry() for e in env]} if c["name"] == container else c
            for c in template["containers"]
        ]

        def vary(index: int, rtype: str = rtype, user: list[EnvVar] = user) -> list[EnvVar]:
            return _appended(user, injected(rtype, counts, index))

        name = names(rtype) if names is not None else f"{pj.object_name}-{rtype.lower()}-{{i}}"
        pod_sets.append(
            PodSet(
                rtype,
                count,
                0,
                template,
                container,
                tuple(env),
                restart_policy=pod_restart_policy(replicas[rtype], default_restart),
                name_format=name,
                vary=vary if varies else None,
            )
        )
    return pod_sets
