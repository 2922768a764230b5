"""JAXJob (``kubeflow.org/v1``, Training Operator v1.9).

The webhook wants Workers only, each with a container named ``jax``
(pkg/webhooks/jax/jaxjob_webhook.go); the operator reads the coordinator's port from the
Worker container's port named ``jaxjob-port`` (pkg/controller.v1/jax/envvar.go
getPortFromJAXJob: without it no pod is created).
"""

from __future__ import annotations

from typing import Any

from ..model.jaxjob import JAXJob
from ..resolve import PlannedJob
from .operator_pod import role_replicas, run_policy
from .script import job_metadata

__all__ = ["CONTAINER", "render_jaxjob"]

CONTAINER = "jax"
PORT_NAME = "jaxjob-port"


def render_jaxjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, JAXJob):
        raise TypeError(f"not a JAXJob: {pj.kind}")
    port = {"containerPort": job.port, "name": PORT_NAME, "protocol": "TCP"}
    replicas = role_replicas(pj, job, CONTAINER, port, ["python3"])
    # jax.distributed.initialize() blocks until every process has joined: all in the gang.
    policy, annotations = run_policy(pj, job, job.nodes)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "JAXJob",
        "metadata": job_metadata(pj, "JAXJob", annotations),
        "spec": {"runPolicy": policy, "jaxReplicaSpecs": replicas},
    }
