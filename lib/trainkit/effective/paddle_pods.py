"""The pods Training Operator v1.9 creates for a PaddleJob, or paddle-operator v0.3.5 for its own.

Sources (kubeflow/trainer v1.9.4): the env on every container, the rendezvous at the port
named ``master`` of its role (pkg/controller.v1/paddlepaddle/envvar.go setPodEnv,
getPortFromPaddleJob), the OnFailure restart default (pkg/apis/kubeflow.org/v1/
paddlepaddle_types.go), success when every Master (parameter server) has exited 0, else every
Worker (paddlepaddle_controller.go UpdateJobStatus), the PodGroup like every v1 kind
(pkg/controller.v1/common/job.go), Kueue's pod sets master then worker (kueue v0.19.2
pkg/controller/jobs/kubeflow/jobs/paddlejob/paddlejob_controller.go).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from ..injected_env.paddle_env import PADDLEJOB_PORT, paddle_operator_env, paddlejob_env
from ..render.paddle import CONTAINER, PADDLE_OPERATOR_API, PORT_NAME
from ..resolve import PlannedJob
from .admission import min_resources, replica_workload, resource_list
from .operator_pods import (
    BACKOFF_COUNTS,
    container_port,
    first_pod_requests,
    gpus_per_pod,
    role_pod_sets,
    run_policy_gang,
)
from .podsets import Completion, EffectiveJob, EnvVar, Gang, PodSet

__all__ = ["effective_paddlejob"]

_OPERATOR = "Training Operator"
_PADDLE_OPERATOR = "paddle-operator"
_PER_POD = {
    "PADDLE_MASTER": "the first pod reaches itself through its IP",
    "POD_IP_DUMMY": "the first pod only",
}
_POD_IP = {"fieldRef": {"fieldPath": "status.podIP"}}


def effective_paddlejob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    if body["apiVersion"] == PADDLE_OPERATOR_API:
        return _paddle_operator(pj, body)
    spec = body["spec"]
    replicas = spec["paddleReplicaSpecs"]
    rendezvous = "Master" if "Master" in replicas else "Worker"
    port = container_port(replicas, rendezvous, CONTAINER, PORT_NAME, PADDLEJOB_PORT)

    def injected(rtype: str, counts: dict[str, int], index: int) -> list[EnvVar]:
        env = paddlejob_env(job=pj.object_name, counts=counts, role=rtype, index=index, port=port)
        return [
            EnvVar(k, v, _OPERATOR, _PER_POD.get(k, ""), _POD_IP if k == "POD_IP_DUMMY" else None)
            for k, v in env.items()
        ]

    pod_sets = role_pod_sets(pj, replicas, CONTAINER, injected, default_restart="OnFailure")
    total = sum(ps.count for ps in pod_sets)
    gang = run_policy_gang(pj, spec, pod_sets, total)
    procs, world = _size(pj, pod_sets, "Worker")
    limit = (spec.get("runPolicy") or {}).get("backoffLimit")
    completion = Completion(
        (rendezvous,), "all", None if limit is None else int(limit), BACKOFF_COUNTS
    )
    workload = replica_workload(
        body, replicas, ("Master", "Worker"), (spec.get("runPolicy") or {}).get("schedulingPolicy")
    )
    if "Master" in replicas:  # the parameter servers
        notes = [
            "parameter-server mode: the job succeeds when every parameter server (Master) "
            "exits 0; paddle.distributed.launch starts a server on each Master and a trainer "
            "on each Worker, which meet at PADDLE_MASTER"
        ]
    else:
        notes = [
            "collective mode: the job succeeds when every Worker exits 0; "
            "paddle.distributed.launch starts a trainer per GPU on each Worker, and the "
            "Workers meet at Worker 0 (PADDLE_MASTER)"
        ]
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        str(procs),
        world,
        None,
        gang,
        tuple(notes),
        workload=workload,
        completion=completion,
    )


def _size(pj: PlannedJob, pod_sets: list[PodSet], worker: str) -> tuple[int, int]:
    """``(processes per pod, world size)``: the launcher starts one trainer per GPU of a
    collective job's Workers; in PS mode each pod is one process (PADDLE_TRAINER_NUM=1), the
    servers counted as in a TFJob."""
    total = sum(ps.count for ps in pod_sets)
    workers = [ps for ps in pod_sets if ps.role == worker]
    if len(workers) < len(pod_sets):
        return 1, total
    procs = max(1, gpus_per_pod(workers, pj))
    return procs, procs * total


def _paddle_operator(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    """paddle-operator v0.3.5 (controllers/paddlejob_helper.go): pods ``<job>-<role>-<i>``
    whose hostname and subdomain are their name, with POD_IP (the pod's name with
    ``intranet: Service``, else its IP), PADDLE_TRAINER_ID, TRAINING_ROLE and
    PADDLE_TRAINING_ROLE on the first container and the ConfigMap ``<job>`` as envFrom
    (constructPod); the pods' restartPolicy is the template's, else OnFailure for Workers
    behind Services and Never otherwise; the PodGroup ``<job>`` counts every pod and all
    their resources (constructPodGroup, getPGMinResource); Completed when every pod of every
    role has exited 0, Failed when one fails (getPaddleJobPhase)."""
    spec = body["spec"]
    replicas = {role: spec[role] for role in ("ps", "worker", "heter") if role in spec}
    intranet = spec.get("intranet")

    def injected(role: str, counts: dict[str, int], index: int) -> list[EnvVar]:
        env = paddle_operator_env(
            job=pj.object_name,
            counts=counts,
            role=role,
            intranet=intranet,
            with_gloo=spec.get("withGloo"),
            index=index,
        )
        why = {"PADDLE_TRAINER_ID": "the pod's index"}
        out = []
        for k, v in env.items():
            value_from = _POD_IP if k == "POD_IP" and intranet != "Service" else None
            per_pod = "the pod's name" if k == "POD_IP" and intranet == "Service" else ""
            out.append(EnvVar(k, v, _PADDLE_OPERATOR, why.get(k, per_pod), value_from))
        return out

    pod_sets = []
    for ps in role_pod_sets(pj, replicas, CONTAINER, injected, default_restart="Never"):
        template = replicas[ps.role]["template"]["spec"]
        restart = template.get("restartPolicy") or (
            "OnFailure" if ps.role == "worker" and intranet == "Service" else "Never"
        )
        pod_sets.append(_with(ps, restart, intranet))
    total = sum(ps.count for ps in pod_sets)
    gang = _paddle_operator_gang(pj, spec.get("schedulingPolicy"), replicas, total)
    if gang is not None:
        # minResources counts the containers; Volcano places the pods with their init
        # containers and sidecars (pod_info.go GetPodResourceRequest).
        placed = first_pod_requests(pod_sets, gang.min_member)
        if any(v > gang.requests.get(k, Decimal(0)) for k, v in placed.items()):
            gang = replace(gang, placed=placed)
    procs, world = _size(pj, pod_sets, "worker")
    notes = [
        "paddle-operator: the job completes when every pod of every role has exited 0 and "
        "fails when one pod fails (pods never restart); its ConfigMap "
        f"{pj.object_name!r} gives each pod the endpoints once every pod has an IP"
    ]
    completion = Completion(tuple(replicas), "all", 0, "any failed pod fails the job")
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        str(procs),
        world,
        None,
        gang,
        tuple(notes),
        completion=completion,
    )


def _with(ps: PodSet, restart: str, intranet: str | None) -> PodSet:
    """``ps`` with paddle-operator's restart policy, and, behind Services, the port it adds
    (PADDLE_PORT 36000) to the first container."""
    spec = dict(ps.spec)
    if intranet == "Service":
        first, *rest = spec["containers"]
        first = {**first, "ports": [*(first.get("ports") or []), {"containerPort": 36000}]}
        spec["containers"] = [first, *rest]
    elif intranet == "HostNetwork":
        spec["hostNetwork"] = True
    return PodSet(
        ps.role,
        ps.count,
        ps.first_rank,
        spec,
        ps.container,
        ps.env,
        restart_policy=restart,
        name_format=ps.name_format,
        vary=ps.vary,
    )


def _paddle_operator_gang(
    pj: PlannedJob, scheduling: dict[str, Any] | None, replicas: dict[str, Any], total: int
) -> Gang | None:
    """constructPodGroup: minMember every pod (or minAvailable), minResources every pod's
    (requests, else limits) whatever minMember says, queue and priority class as given; the
    PodGroup CRD defaults an empty queue to ``default``. None without a schedulingPolicy
    (trainkit writes one on every Volcano cluster)."""
    if scheduling is None:
        return None
    requests: dict[str, Decimal]
    if scheduling.get("minResources") is not None:
        requests = resource_list(scheduling["minResources"])
    else:
        requests = min_resources(
            [
                (r["template"]["spec"].get("containers") or [], int(r.get("replicas", 0)))
                for r in replicas.values()
            ]
        )
    return Gang(
        pj.object_name,
        scheduling.get("queue") or "default",
        int(scheduling.get("minAvailable", total)),
        requests,
        priority_class=scheduling.get("priorityClass") or None,
    )
