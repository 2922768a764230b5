"""TFJob (``kubeflow.org/v1``, Training Operator v1.9).

The webhook wants a container named ``tensorflow`` in every role (pkg/webhooks/tensorflow/
tfjob_webhook.go); the operator sets TF_CONFIG on it and reads the port named
``tfjob-port`` (pkg/controller.v1/tensorflow/util.go GetPortFromTFJob), ``TFJob.port``.
"""

from __future__ import annotations

from typing import Any

from ..model.tfjob import TFJob
from ..resolve import PlannedJob
from .operator_pod import role_replicas, run_policy
from .script import job_metadata

__all__ = ["CONTAINER", "render_tfjob"]

CONTAINER = "tensorflow"
PORT_NAME = "tfjob-port"


def render_tfjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, TFJob):
        raise TypeError(f"not a TFJob: {pj.kind}")
    port = {"containerPort": job.port, "name": PORT_NAME, "protocol": "TCP"}
    replicas = role_replicas(pj, job, CONTAINER, port, ["python3"])
    # Every pod, parameter servers and evaluator included, must start together: the
    # workers block until TF_CONFIG's whole cluster answers.
    policy, annotations = run_policy(pj, job, sum(job.replica_counts().values()))
    spec: dict[str, Any] = {"runPolicy": policy}
    if job.success == "all_workers":
        spec["successPolicy"] = "AllWorkers"
    spec["tfReplicaSpecs"] = replicas
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": job_metadata(pj, "TFJob", annotations),
        "spec": spec,
    }
