"""PyTorchJob (kubeflow.org/v1, Training Operator v1.9) and its script ConfigMap."""

from __future__ import annotations

from typing import Any

from ..injected_env import PYTORCHJOB_MASTER_PORT
from ..model import WORKSPACE, PyTorchJob
from ..plan import PlannedJob
from .meta import VOLCANO_QUEUE_ANNOTATION, metadata, pod_labels
from .platform import resource_requirements
from .pod import (
    claim_mounts,
    claim_volumes,
    env_list,
    network_container,
    network_pod,
    script_mount,
    script_volume,
    shm_mount,
    shm_volume,
    tolerations,
)
from .script import script_configmap_name

__all__ = ["render_pytorchjob"]

CONTAINER = "pytorch"  # the operator's webhook requires this container name
PORT_NAME = "pytorchjob-port"


def _container(pj: PlannedJob, job: PyTorchJob) -> dict[str, Any]:
    c: dict[str, Any] = {"name": CONTAINER, "image": job.image}
    if job.script is not None:
        # torchrun reads nnodes, nproc_per_node, node_rank and the master address
        # from the PET_* variables the operator injects.
        c["command"] = ["torchrun", job.script.mount_path]
        c["workingDir"] = WORKSPACE
    else:
        c["command"] = list(job.command or [])
    if job.args:
        c["args"] = list(job.args)
    if job.env:
        c["env"] = env_list(job.env)
    c["ports"] = [{"containerPort": PYTORCHJOB_MASTER_PORT, "name": PORT_NAME, "protocol": "TCP"}]
    c["resources"] = resource_requirements(job.resources, pj.cluster)
    network_container(c, pj.network)
    mounts = []
    if job.script is not None:
        mounts.append(script_mount())
    if job.shm_size is not None:
        mounts.append(shm_mount())
    mounts += claim_mounts(job.volumes)
    if mounts:
        c["volumeMounts"] = mounts
    return c


def _pod_template(pj: PlannedJob, job: PyTorchJob, script_configmap: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [_container(pj, job)]}
    network_pod(spec, pj.network)
    if pj.queue is not None:
        spec["schedulerName"] = "volcano"
    volumes: list[dict[str, Any]] = []
    if script_configmap is not None:
        volumes.append(script_volume(script_configmap))
    if job.shm_size is not None:
        volumes.append(shm_volume(job.shm_size))
    volumes += claim_volumes(job.volumes)
    if volumes:
        spec["volumes"] = volumes
    if job.node_selector:
        spec["nodeSelector"] = dict(job.node_selector)
    if job.tolerations:
        spec["tolerations"] = tolerations(job.tolerations)
    labels = pod_labels(pj.definition.team, job.name)
    return {"metadata": {"labels": labels}, "spec": spec}


def render_pytorchjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, PyTorchJob):
        raise TypeError(f"not a PyTorchJob: {pj.kind}")
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    template = _pod_template(pj, job, cm)
    replicas: dict[str, Any] = {
        "Master": {"replicas": 1, "restartPolicy": job.restart_policy, "template": template}
    }
    if job.nodes > 1:
        replicas["Worker"] = {
            "replicas": job.nodes - 1,
            "restartPolicy": job.restart_policy,
            # Built again, not shared, so YAML dumpers never emit anchors for it.
            "template": _pod_template(pj, job, cm),
        }
    # No ttlSecondsAfterFinished: under Argo CD self-heal a job deleted by its TTL
    # is re-created and runs again.
    run_policy: dict[str, Any] = {"cleanPodPolicy": "None"}
    if job.backoff_limit is not None:
        run_policy["backoffLimit"] = job.backoff_limit
    if job.deadline_seconds is not None:
        run_policy["activeDeadlineSeconds"] = job.deadline_seconds
    annotations = {}
    if pj.queue is not None:
        run_policy["schedulingPolicy"] = {"minAvailable": job.nodes, "queue": pj.queue}
        # The operator reads the queue from schedulingPolicy; the annotation is
        # copied to the PodGroup and is what Volcano's tools display.
        annotations[VOLCANO_QUEUE_ANNOTATION] = pj.queue
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": metadata(
            name=job.name,
            kind="PyTorchJob",
            source=pj.definition.file,
            namespace=pj.namespace,
            team=pj.definition.team,
            annotations=annotations,
        ),
        "spec": {
            "nprocPerNode": str(job.nprocs),
            "pytorchReplicaSpecs": replicas,
            "runPolicy": run_policy,
        },
    }
