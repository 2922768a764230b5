"""PaddleJob (``kubeflow.org/v1``, Training Operator v1.9).

The webhook wants a container named ``paddle`` in every role
(pkg/webhooks/paddlepaddle/paddlepaddle_webhook.go); the operator reads the rendezvous port
from the port named ``master`` (pkg/controller.v1/paddlepaddle/envvar.go
getPortFromPaddleJob) and sets PADDLE_MASTER, PADDLE_NNODES and PADDLE_JOB_ID on it, which
``paddle.distributed.launch`` reads.
"""

from __future__ import annotations

from typing import Any

from ..injected_env import PADDLEJOB_PORT
from ..model.paddlejob import PaddleJob
from ..plan import PlannedJob
from .operator_pod import role_replicas, run_policy
from .script import job_metadata

__all__ = ["CONTAINER", "render_paddlejob"]

CONTAINER = "paddle"
PORT_NAME = "master"


def render_paddlejob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, PaddleJob):
        raise TypeError(f"not a PaddleJob: {pj.kind}")
    port = {"containerPort": PADDLEJOB_PORT, "name": PORT_NAME, "protocol": "TCP"}
    # One launcher per pod: it starts a server on a Master (PADDLE_SERVER_NUM=1), else a
    # trainer per GPU, and meets the other pods at PADDLE_MASTER.
    launch = ["python3", "-m", "paddle.distributed.launch"]
    replicas = role_replicas(pj, job, CONTAINER, port, launch)
    # Every pod meets at the rendezvous before any trains: the gang is all of them.
    policy, annotations = run_policy(pj, job, sum(job.replica_counts().values()))
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PaddleJob",
        "metadata": job_metadata(pj, "PaddleJob", annotations),
        "spec": {"runPolicy": policy, "paddleReplicaSpecs": replicas},
    }
