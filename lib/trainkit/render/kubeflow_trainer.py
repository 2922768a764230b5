"""Kubeflow Trainer v2.3 objects: (Cluster)TrainingRuntime and TrainJob.

What the controller relies on (trainer v2.3.0 plugins): the replicated job
``node`` labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` with
a container ``node``; the Volcano queue as the annotation
``scheduling.volcano.sh/queue-name`` on the runtime template or a runtime
patch; ``schedulerName`` is not set by Trainer, so the runtime sets it.
"""

from __future__ import annotations

from typing import Any

from ..injected_env import TRAINER_MASTER_PORT
from ..model import TrainingRuntime, TrainJob
from ..plan import PlannedJob, PlannedRuntime
from .cluster_scoped import resource_requirements
from .meta import VOLCANO_QUEUE_ANNOTATION, metadata, pod_labels
from .pod import (
    env_list,
    network_container,
    network_pod,
    placement,
    pod_access,
    pod_volumes,
    tolerations,
)
from .script import job_metadata, script_configmap_name

__all__ = ["API_VERSION", "PATCH_MANAGER", "render_runtime", "render_trainjob"]

API_VERSION = "trainer.kubeflow.org/v1alpha1"
GROUP = "trainer.kubeflow.org"
NODE = "node"  # the replicated job and the container Trainer writes spec.trainer into
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"  # the Kubeflow SDK lists runtimes by it
# A runtime patch's manager must be a domain-prefixed path (Trainer's webhook).
PATCH_MANAGER = "trainkit.dev/synth"


def render_runtime(pr: PlannedRuntime) -> dict[str, Any]:
    rt, cluster = pr.runtime, pr.cluster
    container: dict[str, Any] = {"name": NODE, "image": rt.image}
    if rt.image_pull_policy is not None:
        container["imagePullPolicy"] = rt.image_pull_policy
    if rt.env or rt.env_refs:
        container["env"] = env_list(rt.env, rt.env_refs)
    container["ports"] = [{"containerPort": TRAINER_MASTER_PORT, "protocol": "TCP"}]
    if rt.resources is not None:
        container["resources"] = resource_requirements(rt.resources, cluster)
    # TrainJobs inherit these: Trainer merges resourcesPerNode onto this container's
    # resources (v2.3), and a TrainJob may not change once created, so the profile
    # is never written into the TrainJob itself.
    network_container(container, pr.network)
    pod: dict[str, Any] = {"containers": [container]}
    network_pod(pod, pr.network)
    volumes, mounts = pod_volumes(shm_size=rt.shm_size)
    if mounts:
        container["volumeMounts"] = mounts
        pod["volumes"] = volumes
    if rt.node_selector:
        pod["nodeSelector"] = dict(rt.node_selector)
    if rt.tolerations:
        pod["tolerations"] = tolerations(rt.tolerations)
    placement(pod, rt.node_affinity)
    # Trainer's Volcano plugin takes the PodGroup's priority from the pod template
    # (trainer v2.3.0 pkg/runtime/framework/plugins/volcano/volcano.go).
    pod_access(
        pod,
        service_account=rt.service_account,
        pull_secrets=rt.image_pull_secrets,
        priority_class=rt.priority_class,
    )
    spec: dict[str, Any] = {"mlPolicy": {"numNodes": rt.nodes, "torch": {}}}
    volcano = cluster.scheduler == "volcano"
    if volcano:
        # Trainer creates the PodGroup (all nodes or none); Volcano must also be
        # the pods' scheduler, which Trainer does not set.
        spec["podGroupPolicy"] = {"volcano": {}}
        pod["schedulerName"] = "volcano"
    template: dict[str, Any] = {}
    if pr.queue is not None:
        template["metadata"] = {"annotations": {VOLCANO_QUEUE_ANNOTATION: pr.queue}}
    template["spec"] = {
        "replicatedJobs": [
            {
                "name": NODE,
                "replicas": 1,
                "template": {
                    "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                    "spec": {"template": {"spec": pod}},
                },
            }
        ]
    }
    spec["template"] = template
    team = rt.team if isinstance(rt, TrainingRuntime) else None
    return {
        "apiVersion": API_VERSION,
        "kind": pr.kind,
        "metadata": metadata(
            name=rt.name,
            kind=pr.kind,
            source=pr.definition.file,
            namespace=pr.namespace,
            team=team,
            labels={FRAMEWORK_LABEL: "torch"},
        ),
        "spec": spec,
    }


def _trainer(pj: PlannedJob, job: TrainJob) -> dict[str, Any]:
    """Only what the job itself says: the rest comes from the runtime, which
    Trainer snapshots when the TrainJob is created, so a later runtime edit
    never turns into an in-place change of a committed TrainJob.

    Written even when empty: the torch plugin injects the PET_* variables only
    when ``spec.trainer`` is present (pkg/runtime/framework/plugins/torch/torch.go).
    """
    trainer: dict[str, Any] = {}
    if pj.image is not None:
        trainer["image"] = pj.image
    if job.script is not None:
        # torchrun takes nnodes, nproc_per_node, node_rank and the rendezvous
        # address from the PET_* variables Trainer injects.
        trainer["command"] = ["torchrun", job.script.mount_path]
    elif job.command is not None:
        trainer["command"] = list(job.command)
    if job.args:
        trainer["args"] = list(job.args)
    if job.env or job.env_refs:
        trainer["env"] = env_list(job.env, job.env_refs)
    if job.nodes is not None:
        trainer["numNodes"] = job.nodes
    res = pj.resources
    # Trainer's "auto" counts GPUs only for resource names holding "gpu"
    # (pkg/runtime/runtime.go GetNumGPUPerNode): with MIG or Gaudi names it would
    # start one process per CPU, so the number is written out there.
    odd_gpu = "gpu" not in pj.cluster.gpu_resource.lower() and res is not None and res.gpu > 0
    if job.procs_per_node is not None or job.resources is not None or odd_gpu:
        trainer["numProcPerNode"] = pj.trainer_procs()
    if job.resources is not None:
        # Trainer merges resourcesPerNode onto the runtime's container key by key
        # (pkg/runtime/core/trainingruntime.go, MergeResourceRequirements): a GPU key
        # left out would keep the runtime's GPUs, so it is always written, "0" included.
        trainer["resourcesPerNode"] = resource_requirements(job.resources, pj.cluster, gpu=True)
    return trainer


def _runtime_patch(pj: PlannedJob, job: TrainJob) -> dict[str, Any]:
    """Queue, pod labels and volumes: what spec.trainer cannot say."""
    pod: dict[str, Any] = {}
    labels = pod_labels(pj.definition.team, job.name)
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    volumes, mounts = pod_volumes(
        configmap=cm, scripts=list(pj.definition.files), claims=job.volumes
    )
    if mounts:
        pod["containers"] = [{"name": NODE, "volumeMounts": mounts}]
    if volumes:
        pod["volumes"] = volumes
    if job.node_selector:
        pod["nodeSelector"] = dict(job.node_selector)  # a map: merged key by key
    if job.tolerations and pj.runtime is not None:
        # PodSpec.tolerations has no merge key, so the patch's list replaces the runtime's
        # whole (trainer v2.3.0 pkg/runtime/core/trainingruntime.go merges runtime patches
        # as a strategic merge patch): the runtime's are written again ahead of the job's.
        base = pj.runtime.runtime.tolerations
        pod["tolerations"] = tolerations([*base, *(t for t in job.tolerations if t not in base)])
    if (job.node_affinity or job.topology) and pj.runtime is not None:
        # nodeSelectorTerms and preferred terms have no merge key: the patch's lists replace
        # the runtime's, so the runtime's rules are written again with the job's.
        rules = [*pj.runtime.runtime.node_affinity, *job.node_affinity] if job.node_affinity else []
        placement(pod, rules, job.topology, labels)
    # Both are fields of the patch's PodSpecPatch, immutable once the TrainJob exists
    # (trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go), as the whole job is here.
    pod_access(pod, service_account=job.service_account, pull_secrets=job.image_pull_secrets)
    node_job: dict[str, Any] = {
        "name": NODE,
        "template": {"spec": {"template": {"metadata": {"labels": labels}, "spec": pod}}},
    }
    template: dict[str, Any] = {}
    if pj.queue is not None:
        template["metadata"] = {"annotations": {VOLCANO_QUEUE_ANNOTATION: pj.queue}}
    template["spec"] = {"replicatedJobs": [node_job]}
    return {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": template}}


def render_trainjob(pj: PlannedJob) -> dict[str, Any]:
    job, runtime = pj.job, pj.runtime
    if not isinstance(job, TrainJob) or runtime is None:
        raise TypeError(f"not a planned TrainJob: {pj.kind}")
    spec: dict[str, Any] = {
        # Written in full: the CRD defaults apiGroup and kind, and a default the
        # API server fills in is a difference Argo CD would show.
        "runtimeRef": {"apiGroup": GROUP, "kind": runtime.kind, "name": runtime.runtime.name},
    }
    spec["trainer"] = _trainer(pj, job)
    spec["runtimePatches"] = [_runtime_patch(pj, job)]
    if job.deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.deadline_seconds
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": job_metadata(pj, "TrainJob"),
        "spec": spec,
    }
