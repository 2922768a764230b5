"""XGBoostJob (``kubeflow.org/v1``, Training Operator v1.9).

The webhook wants a container named ``xgboost`` in every role and exactly one Master
(pkg/webhooks/xgboost/xgboostjob_webhook.go); the operator reads the port named
``xgboostjob-port`` from the Master's and, with more than one pod, the Workers' container
(pkg/controller.v1/xgboost/xgboost.go getPortFromXGBoostJob: without it no pod is created).
"""

from __future__ import annotations

from typing import Any

from ..model.xgboostjob import XGBoostJob
from ..resolve import PlannedJob
from .operator_pod import role_replicas, run_policy
from .script import job_metadata

__all__ = ["CONTAINER", "render_xgboostjob"]

CONTAINER = "xgboost"
PORT_NAME = "xgboostjob-port"


def render_xgboostjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, XGBoostJob):
        raise TypeError(f"not an XGBoostJob: {pj.kind}")
    port = {"containerPort": job.port, "name": PORT_NAME, "protocol": "TCP"}
    replicas = role_replicas(pj, job, CONTAINER, port, ["python3"])
    # The tracker waits for every pod before the first round: the gang is all of them.
    policy, annotations = run_policy(pj, job, job.nodes)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "XGBoostJob",
        "metadata": job_metadata(pj, "XGBoostJob", annotations),
        "spec": {"runPolicy": policy, "xgbReplicaSpecs": replicas},
    }
