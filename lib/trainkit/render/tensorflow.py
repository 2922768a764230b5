"""TFJob (``kubeflow.org/v1``, Training Operator v1.9).

The webhook wants a container named ``tensorflow`` in every role (pkg/webhooks/tensorflow/
tfjob_webhook.go); the operator sets TF_CONFIG on it and reads the port named
``tfjob-port`` (pkg/controller.v1/tensorflow/tensorflow.go).
"""

from __future__ import annotations

from typing import Any

from ..injected_env import TFJOB_PORT
from ..model import WORKSPACE
from ..model.tfjob import TFJob
from ..plan import PlannedJob
from .operator_pod import role_template, run_policy
from .script import job_metadata, script_configmap_name

__all__ = ["CONTAINER", "render_tfjob"]

CONTAINER = "tensorflow"
PORT_NAME = "tfjob-port"


def _role_container(pj: PlannedJob, job: TFJob, rtype: str) -> dict[str, Any]:
    role = job.role(rtype)
    c: dict[str, Any] = {"name": CONTAINER, "image": pj.image}
    if role is not None and role.command is not None:
        c["command"] = list(role.command)
    elif job.script is not None:
        c["command"] = ["python3", job.script.mount_path]
    elif job.command is not None:
        c["command"] = list(job.command)
    if job.script is not None:
        c["workingDir"] = WORKSPACE
    c["args"] = list(role.args if role is not None and role.args is not None else job.args)
    c["ports"] = [{"containerPort": TFJOB_PORT, "name": PORT_NAME, "protocol": "TCP"}]
    return c


def render_tfjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, TFJob):
        raise TypeError(f"not a TFJob: {pj.kind}")
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    replicas: dict[str, Any] = {}
    for rtype, count in job.replica_counts().items():
        role = job.role(rtype)
        resources = role.resources if role is not None and role.resources else job.resources
        selector = role.node_selector if role is not None else None
        replicas[rtype] = {
            "replicas": count,
            "restartPolicy": job.restart_policy,
            "template": role_template(
                pj, job, _role_container(pj, job, rtype), configmap=cm, resources=resources,
                node_selector=selector,
            ),
        }  # fmt: skip
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
