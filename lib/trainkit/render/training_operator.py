"""PyTorchJob (kubeflow.org/v1, Training Operator v1.9) and its script ConfigMap."""

from __future__ import annotations

from typing import Any

from ..injected_env.training_operator_env import PYTORCHJOB_MASTER_PORT
from ..model import WORKSPACE, Elastic, PyTorchJob, Role
from ..resolve import PlannedJob
from .operator_pod import restart_policy, role_template, run_policy
from .script import job_metadata, script_configmap_name

__all__ = ["CONTAINER", "elastic_policy", "nproc_per_node", "render_pytorchjob"]

CONTAINER = "pytorch"  # the operator's webhook requires this container name
PORT_NAME = "pytorchjob-port"


def nproc_per_node(job: PyTorchJob) -> str | None:
    """``spec.nprocPerNode``, or None to leave the operator's ``auto``.

    The operator computes WORLD_SIZE = replicas × nprocPerNode when it is a number
    and replicas × 1 otherwise (pkg/controller.v1/pytorch/envvar.go). torchrun (script)
    gets the number of GPUs; a command that launches its own processes
    (``accelerate launch``) keeps ``auto`` unless the job says otherwise.
    """
    if job.procs_per_node is not None:
        return str(job.procs_per_node)
    if job.script is not None:
        return str(job.resources.gpu or 1)
    return None


def elastic_policy(job: PyTorchJob, elastic: Elastic) -> dict[str, Any]:
    """``spec.elasticPolicy``: Workers only, the rendezvous and, with metrics, the autoscaler.

    pkg/controller.v1/pytorch/elastic.go turns it into PET_NNODES ``min:max``, PET_RDZV_*
    (rdzvId PET_RDZV_ID, rdzvConf one PET_RDZV_CONF ``k=v,k=v`` in the list's order) and
    PET_MAX_RESTARTS; hpa.go creates a HorizontalPodAutoscaler named after the job
    (minReplicas, maxReplicas, metrics) only when metrics are given, and it scales
    ``pytorchReplicaSpecs.Worker.replicas`` through the CRD's scale subresource. Argo CD
    leaves that field alone on such a job (render/argocd.py IGNORE_DIFFERENCES).
    nProcPerNode stays in spec (the webhook forbids both).
    """
    policy: dict[str, Any] = {
        "minReplicas": elastic.min_nodes,
        "maxReplicas": job.max_workers,
        "rdzvBackend": elastic.rdzv_backend,
    }
    if elastic.rdzv_host is not None:
        policy["rdzvHost"] = elastic.rdzv_host
        policy["rdzvPort"] = elastic.rdzv_port
    if elastic.rdzv_id is not None:
        policy["rdzvId"] = elastic.rdzv_id
    if elastic.rdzv_conf:
        policy["rdzvConf"] = [{"key": k, "value": v} for k, v in elastic.rdzv_conf.items()]
    policy["maxRestarts"] = elastic.max_restarts
    if elastic.metrics:
        policy["metrics"] = [m.spec() for m in elastic.metrics]
    return policy


def _pod_template(
    pj: PlannedJob, job: PyTorchJob, cm: str | None, role: Role | None = None
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": CONTAINER, "image": pj.image}
    if role is not None and role.command is not None:
        c["command"] = list(role.command)
    elif job.script is not None:
        # torchrun reads nnodes, nproc_per_node, node_rank and the master address
        # from the PET_* variables the operator injects.
        c["command"] = ["torchrun", job.script.mount_path]
    elif job.command is not None:
        c["command"] = list(job.command)
    if job.script is not None:
        c["workingDir"] = WORKSPACE
    c["args"] = list(role.args if role is not None and role.args is not None else job.args)
    port = job.master_port or PYTORCHJOB_MASTER_PORT
    c["ports"] = [{"containerPort": port, "name": PORT_NAME, "protocol": "TCP"}]
    resources = role.resources if role is not None and role.resources else job.resources
    return role_template(pj, job, c, configmap=cm, resources=resources, role=role)


def render_pytorchjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, PyTorchJob):
        raise TypeError(f"not a PyTorchJob: {pj.kind}")
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    replicas: dict[str, Any] = {}
    if job.elastic is None:
        replicas["Master"] = {
            "replicas": 1,
            "restartPolicy": restart_policy(job.master, job.restart_policy),
            "template": _pod_template(pj, job, cm, job.master),
        }
    if job.workers > 0:
        replicas["Worker"] = {
            "replicas": job.workers,
            "restartPolicy": job.restart_policy,
            # Built again, not shared, so YAML dumpers never emit anchors for it.
            "template": _pod_template(pj, job, cm),
        }
    # An elastic gang starts with its fewest nodes.
    gang = job.elastic.min_nodes if job.elastic is not None else job.nodes
    policy, annotations = run_policy(pj, job, gang)
    spec: dict[str, Any] = {}
    nproc = nproc_per_node(job)
    if nproc is not None:
        spec["nprocPerNode"] = nproc
    if job.elastic is not None:
        spec["elasticPolicy"] = elastic_policy(job, job.elastic)
    spec["pytorchReplicaSpecs"] = replicas
    spec["runPolicy"] = policy
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": job_metadata(pj, "PyTorchJob", annotations),
        "spec": spec,
    }
