"""The pods Training Operator v1.9 creates for a PaddleJob.

Sources (kubeflow/trainer v1.9.4): the env on every container (pkg/controller.v1/paddlepaddle/
envvar.go setPodEnv), success when every Master (parameter server) has exited 0, else every
Worker (paddlepaddle_controller.go UpdateJobStatus), the PodGroup like every v1 kind
(pkg/controller.v1/common/job.go).
"""

from __future__ import annotations

from typing import Any

from ..injected_env import paddle_operator_env, paddlejob_env
from ..plan import PlannedJob
from ..render.paddle import CONTAINER, PADDLE_OPERATOR_API
from .operator_pods import first_requests, gpus_per_pod, role_pod_sets, run_policy_gang
from .podsets import EffectiveJob, EnvVar, Gang

__all__ = ["effective_paddlejob"]

_OPERATOR = "Training Operator"
_PADDLE_OPERATOR = "paddle-operator"
_PER_POD = {
    "PADDLE_MASTER": "the first pod reaches itself through its IP",
    "POD_IP_DUMMY": "the first pod only",
}


def effective_paddlejob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    if body["apiVersion"] == PADDLE_OPERATOR_API:
        return _paddle_operator(pj, body)
    spec = body["spec"]

    def injected(rtype: str, counts: dict[str, int]) -> list[EnvVar]:
        env = paddlejob_env(job=pj.object_name, counts=counts, role=rtype, index=0)
        return [EnvVar(k, v, _OPERATOR, _PER_POD.get(k, "")) for k, v in env.items()]

    pod_sets = role_pod_sets(pj, spec["paddleReplicaSpecs"], CONTAINER, injected)
    total = sum(ps.count for ps in pod_sets)
    gang = run_policy_gang(pj, spec, pod_sets, total)
    workers = [ps for ps in pod_sets if ps.role == "Worker"]
    ps_mode = len(workers) < len(pod_sets)
    # paddle.distributed.launch starts one trainer per GPU, and one per Worker in PS mode
    # (PADDLE_TRAINER_NUM=1).
    procs = 1 if ps_mode else max(1, gpus_per_pod(workers, pj))
    if ps_mode:
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
    # In PS mode servers are processes of the job too, one per pod, as in a TFJob.
    world = total if ps_mode else procs * total
    return EffectiveJob(pj, tuple(pod_sets), str(procs), world, None, gang, tuple(notes))


def _paddle_operator(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    """paddle-operator v0.3.5: pods ``<job>-ps-<i>`` and ``<job>-worker-<i>`` with the env of
    controllers/paddlejob_helper.go constructPod on the first container; the PodGroup
    ``<job>`` from schedulingPolicy (constructPodGroup); Completed when every pod of every
    role has exited 0, Failed when one fails (getPaddleJobPhase)."""
    spec = body["spec"]
    replicas = {role: spec[role] for role in ("ps", "worker") if role in spec}

    def injected(role: str, counts: dict[str, int]) -> list[EnvVar]:
        env = paddle_operator_env(job=pj.object_name, counts=counts, role=role)
        why = {"PADDLE_TRAINER_ID": "the pod's index"}
        return [EnvVar(k, v, _PADDLE_OPERATOR, why.get(k, "")) for k, v in env.items()]

    pod_sets = role_pod_sets(pj, replicas, CONTAINER, injected)
    total = sum(ps.count for ps in pod_sets)
    gang: Gang | None = None
    scheduling = spec.get("schedulingPolicy")
    if scheduling is not None:
        members = int(scheduling.get("minAvailable", total))
        gang = Gang(
            pj.object_name, scheduling.get("queue"), members, first_requests(pod_sets, members)
        )
    ps_mode = "ps" in replicas
    workers = [ps for ps in pod_sets if ps.role == "worker"]
    procs = 1 if ps_mode else max(1, gpus_per_pod(workers, pj))
    notes = [
        "paddle-operator: the job completes when every pod of every role has exited 0 and "
        "fails when one pod fails (pods never restart); its ConfigMap "
        f"{pj.object_name!r} gives each pod the endpoints once every pod has an IP"
    ]
    world = total if ps_mode else procs * total
    return EffectiveJob(pj, tuple(pod_sets), str(procs), world, None, gang, tuple(notes))
