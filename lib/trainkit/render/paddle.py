"""PaddleJob: ``kubeflow.org/v1`` (Training Operator v1.9), or ``batch.paddlepaddle.org/v1``
on clusters that run paddle-operator (v0.3.5).

The webhook wants a container named ``paddle`` in every role
(pkg/webhooks/paddlepaddle/paddlepaddle_webhook.go); the operator reads the rendezvous port
from the port named ``master`` (pkg/controller.v1/paddlepaddle/envvar.go
getPortFromPaddleJob) and sets PADDLE_MASTER, PADDLE_NNODES and PADDLE_JOB_ID on it, which
``paddle.distributed.launch`` reads.
"""

from __future__ import annotations

from typing import Any

from ..injected_env.paddle_env import PADDLEJOB_PORT
from ..model.paddlejob import PADDLE_OPERATOR, PaddleJob
from ..resolve import PlannedJob
from .operator_pod import role_replicas, run_policy, scheduling_policy
from .script import job_metadata

__all__ = ["CONTAINER", "PADDLE_OPERATOR_API", "render_paddlejob"]

CONTAINER = "paddle"
# One launcher per pod: it starts a server on a parameter-server pod, else a trainer per
# GPU, and meets the other pods at the rendezvous the operator gives it.
_LAUNCH = ["python3", "-m", "paddle.distributed.launch"]
PORT_NAME = "master"
PADDLE_OPERATOR_API = "batch.paddlepaddle.org/v1"
# paddle-operator's cleanPodPolicy for trainkit's clean_pods (controllers/
# paddlejob_controller.go: a Failed job's pods go with Always|OnFailure, a Completed one's with
# ""|Always|OnCompletion). "Running" frees the pods of a failed job, which may still hold GPUs;
# a completed job has no running pod left.
_CLEAN_POD_POLICY = {"Running": "OnFailure", "All": "Always", "None": "Never"}


def render_paddlejob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, PaddleJob):
        raise TypeError(f"not a PaddleJob: {pj.kind}")
    if PADDLE_OPERATOR in pj.cluster.operators:
        return _paddle_operator(pj, job)
    port = {
        "containerPort": job.master_port or PADDLEJOB_PORT,
        "name": PORT_NAME,
        "protocol": "TCP",
    }
    replicas = role_replicas(pj, job, CONTAINER, port, _LAUNCH)
    # Every pod meets at the rendezvous before any trains: the gang is all of them.
    policy, annotations = run_policy(pj, job, sum(job.replica_counts().values()))
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PaddleJob",
        "metadata": job_metadata(pj, "PaddleJob", annotations),
        "spec": {"runPolicy": policy, "paddleReplicaSpecs": replicas},
    }


def _paddle_operator(pj: PlannedJob, job: PaddleJob) -> dict[str, Any]:
    """paddle-operator's PaddleJob (api/v1/paddlejob_types.go): ``ps`` and ``worker`` pod
    templates whose first container gets the rendezvous (controllers/paddlejob_helper.go
    constructPod), a Volcano ``schedulingPolicy`` the operator turns into the PodGroup
    (constructPodGroup), no run policy."""
    # In PS mode each pod runs the script itself: fleet's PaddleCloudRoleMaker reads the
    # operator's TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_PORT and POD_IP (the
    # operator's own wide_and_deep examples run no launcher); collective jobs start one
    # trainer per GPU with the launcher, which reads PADDLE_TRAINERS and POD_IP.
    program = ["python3"] if job.mode == "ps" else _LAUNCH
    replicas = role_replicas(pj, job, CONTAINER, None, program)
    spec: dict[str, Any] = {"cleanPodPolicy": _CLEAN_POD_POLICY[job.clean_pods]}
    if job.intranet is not None:
        spec["intranet"] = job.intranet
    if job.with_gloo is not None:
        spec["withGloo"] = job.with_gloo
    scheduling, annotations = scheduling_policy(pj, job, sum(job.replica_counts().values()))
    if scheduling is not None:
        spec["schedulingPolicy"] = scheduling
    for rtype, role in (("Master", "ps"), ("Worker", "worker"), ("Heter", "heter")):
        if rtype not in replicas:
            continue
        template = replicas[rtype]["template"]
        # No backoff limit exists here: a failed pod fails the job (plan refuses restarts).
        template["spec"]["restartPolicy"] = "Never"
        if job.deadline_seconds is not None:
            # No job deadline either: each pod's, counted from its start.
            template["spec"]["activeDeadlineSeconds"] = job.deadline_seconds
        spec[role] = {"replicas": replicas[rtype]["replicas"], "template": template}
    return {
        "apiVersion": PADDLE_OPERATOR_API,
        "kind": "PaddleJob",
        "metadata": job_metadata(pj, "PaddleJob", annotations),
        "spec": spec,
    }
