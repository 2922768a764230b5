"""RayJob and RayCluster (``ray.io/v1``, KubeRay v1.7).

What KubeRay does with what is written here (ray-project/kuberay v1.7.0, ray-operator/):
- controllers/ray/common/pod.go BuildPod: the first container of each pod is the Ray
  container; without a command containing ``ray start`` KubeRay replaces its command with
  ``ulimit …; ray start …`` generated from the container's limits, so no command is written;
  it mounts a memory-backed ``/dev/shm`` unless one is mounted already.
- controllers/ray/rayjob_controller.go: the entrypoint is submitted by a Kubernetes Job from
  ``submitterPodTemplate`` (its command filled in when empty, a command given kept:
  configureSubmitterContainer), which otherwise gets neither the job's pull secrets, service
  account nor tolerations: trainkit writes it.
- controllers/ray/common/service.go BuildServiceForHeadPod: the head Service takes its ports
  from the head container's (only those, and ``metrics``, once it has any:
  getServicePorts), its type from ``serviceType``, its name from ``headService``; KubeRay's
  own (no ``headService``, ClusterIP) is headless.
- controllers/ray/batchscheduler/volcano/volcano_scheduler.go: the PodGroup
  ``ray-<job>-pg`` takes its queue from the RayJob's ``volcano.sh/queue-name`` label and its
  priority from ``ray.io/priority-class-name``; ``ray.io/scheduler-name`` is unused since
  KubeRay 1.6 and is not written.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ..model import WORKSPACE, Resources
from ..model.lifecycle import Hook
from ..model.operator_job import Role
from ..model.raycluster import RayCluster
from ..model.rayjob import RayJob
from ..model.volumes import AnyVolume
from ..resolve import PlannedJob
from .cluster_scoped import resource_requirements
from .meta import VOLCANO_QUEUE_ANNOTATION, pod_metadata
from .operator_pod import role_template
from .pod import container_security, hide_gpus, pod_access, pod_security, tolerations
from .script import (
    job_metadata,
    script_configmap_name,
    working_dir_configmap_name,
    working_dir_keys,
)

__all__ = [
    "CLUSTER_SELECTOR_KEY",
    "HEAD_CONTAINER",
    "PRIORITY_LABEL",
    "QUEUE_LABEL",
    "RAY_HEAD_PORTS",
    "SUBMITTER",
    "SUBMITTER_RESOURCES",
    "WORKER_CONTAINER",
    "WORKING_DIR_MOUNT",
    "WORKING_DIR_VOLUME",
    "entrypoint",
    "job_entrypoint",
    "ray_cluster_spec",
    "render_raycluster",
    "render_rayjob",
    "runtime_env_data",
    "submitter_args",
]

HEAD_CONTAINER = "ray-head"
WORKER_CONTAINER = "ray-worker"
SUBMITTER = "ray-job-submitter"
QUEUE_LABEL = "volcano.sh/queue-name"
CLUSTER_SELECTOR_KEY = "ray.io/cluster"
"""utils/constant.go RayJobClusterSelectorKey: the one key KubeRay reads of a clusterSelector."""
PRIORITY_LABEL = "ray.io/priority-class-name"
# KubeRay's default submitter asks 500m/200Mi below limits of 1 CPU/1Gi (common/job.go
# GetDefaultSubmitterContainer); trainkit's pods are Guaranteed unless the policy says not.
SUBMITTER_RESOURCES = Resources(cpu=1, memory="1Gi")
RAY_HEAD_PORTS = {"gcs-server": 6379, "dashboard": 8265, "client": 10001}
"""The head's ports KubeRay's head Service carries by default (common/service.go
getDefaultPorts; utils/constant.go names), besides ``metrics`` and Serve's, which it adds."""
WORKING_DIR_MOUNT = "/trainkit/working_dir"
"""Where the submitter finds a repository ``working_dir`` to upload (``ray job submit``)."""
WORKING_DIR_VOLUME = "working-dir"
"""The submitter's volume of the ``working_dir`` ConfigMap."""
# A ConfigMap volume keeps its files behind ``..data`` and a ``..<timestamp>`` directory at
# its top (kubelet atomic_writer.go); Ray's zip walks everything it can reach
# (Ray 2.60.0 packaging.py _dir_travel, excludes matched by pathspec as .gitignore lines), so
# those are excluded, anchored at the top. trainkit refuses files named ``..*``.
VOLUME_ENTRIES = "/..*"


def entrypoint(job: RayJob) -> str:
    """The shell command KubeRay submits (``ray job submit -- <entrypoint>``); it runs on the
    head, from the script's ConfigMap mounted in /workspace."""
    return shlex.join(_argv(job))


def job_entrypoint(pj: PlannedJob) -> str:
    """The entrypoint of a planned RayJob."""
    if not isinstance(pj.job, RayJob):
        raise TypeError(f"not a RayJob: {pj.kind}")
    return entrypoint(pj.job)


def _argv(job: RayJob) -> list[str]:
    if job.script is not None:
        return ["python", f"{WORKSPACE}/{job.script.filename}", *job.args]
    return [*(job.command or []), *job.args]


def ray_cluster_spec(pj: PlannedJob, job: RayJob | RayCluster) -> dict[str, Any]:
    """The ``RayClusterSpec`` of a RayJob (``rayClusterSpec``) or of a RayCluster (its
    ``spec``): the head and the worker groups, autoscaling when a group scales."""
    cm = (
        script_configmap_name(job.name, dict(pj.definition.files))
        if isinstance(job, RayJob) and job.script
        else None
    )

    def template(
        container: str,
        resources: Resources,
        selector: Mapping[str, str] | None = None,
        volumes: Sequence[AnyVolume] = (),
        pre_stop: Hook | None = None,
    ) -> dict[str, Any]:
        c: dict[str, Any] = {"name": container, "image": pj.image}
        if isinstance(job, RayJob) and job.script is not None:
            c["workingDir"] = WORKSPACE
        if container == HEAD_CONTAINER and job.ports:
            # With a port of its own on the head, KubeRay's head Service would carry only
            # that one and metrics (common/service.go getServicePorts): the RayJob controller
            # then finds no dashboard port and never submits (utils/util.go
            # FetchHeadServiceURL). Ray's own come first.
            host = pj.network is not None and pj.network.host_network
            c["ports"] = [
                {"containerPort": n, "name": name, "protocol": "TCP"}
                | ({"hostPort": n} if host else {})
                for name, n in RAY_HEAD_PORTS.items()
            ]
        out = role_template(
            pj, job, c, configmap=cm, resources=resources, node_selector=selector,
            own_volumes=volumes,
        )  # fmt: skip
        if pre_stop is not None:
            # The group's hook over the job's, on the group's Ray container.
            main = out["spec"]["containers"][0]
            main.setdefault("lifecycle", {})["preStop"] = pre_stop.render()
        return out

    if job.head is None:
        raise TypeError(f"{job.describe()} runs on an existing RayCluster: it has no cluster spec")
    cluster: dict[str, Any] = {}
    if job.autoscaled:
        cluster["enableInTreeAutoscaling"] = True
    head: dict[str, Any] = {}
    params: dict[str, str] = {}
    if job.head.gpu == 0:
        # KubeRay passes rayStartParams to `ray start` (common/pod.go generateRayStartCommand);
        # a head without GPUs says so rather than let Ray count what it detects.
        params["num-gpus"] = "0"
    if job.head_ray_start is not None:
        params.update(job.head_ray_start.params())
    if params:
        head["rayStartParams"] = dict(sorted(params.items()))
    service = job.head_service
    if service is not None and service.exposed:
        head["serviceType"] = service.type
    if service is not None and (service.name is not None or service.annotations):
        # KubeRay keeps only a headService's name, labels, annotations, type and extra
        # ports, setting the selector, namespace and Ray's ports itself (common/service.go
        # BuildServiceForHeadPod; without a name, <cluster>-head-svc). A RayJob's own
        # <job>-head-svc is built from it too (common/job.go BuildHeadServiceForRayJob), which
        # headServiceAnnotations would not reach.
        meta: dict[str, Any] = {}
        if service.name is not None:
            meta["name"] = service.name
        if service.annotations:
            meta["annotations"] = dict(service.annotations)
        head["headService"] = {"metadata": meta}
    head["template"] = template(HEAD_CONTAINER, job.head, volumes=job.head_volumes)
    cluster["headGroupSpec"] = head
    groups = []
    for g in job.workers:
        low, high = g.scaling
        group: dict[str, Any] = {"groupName": g.name, "replicas": g.nodes}
        if g.hosts > 1:
            # Each worker is hosts pods, made and deleted together (raycluster_controller.go
            # reconcileMultiHostWorkerGroup); min/max count workers.
            group["numOfHosts"] = g.hosts
        if g.ray_start is not None and g.ray_start.params():
            group["rayStartParams"] = g.ray_start.params()
        if isinstance(job, RayCluster) and low != high:
            # The autoscaler patches a long-lived cluster's replicas (and scaleStrategy); a
            # count in git would be set back by Argo CD's self-heal, a fight. Without one
            # KubeRay starts minReplicas (utils/util.go GetWorkerGroupDesiredReplicas).
            del group["replicas"]
        # Both are required (the CRD), and equal when the group does not scale.
        group["minReplicas"] = low
        group["maxReplicas"] = high
        group["template"] = template(
            WORKER_CONTAINER, g.resources, g.node_selector, g.volumes, g.pre_stop
        )
        groups.append(group)
    if groups:
        cluster["workerGroupSpecs"] = groups
    return cluster


def render_raycluster(pj: PlannedJob) -> dict[str, Any]:
    """A long-lived RayCluster. On Volcano, KubeRay's plugin reads its queue and priority from
    the RayCluster's own labels (volcano_scheduler.go handleRayCluster, getAppPodGroupName:
    PodGroup ``ray-<cluster>-pg``); on Kueue the ``kueue.x-k8s.io/queue-name`` label queues
    it (kueue pkg/controller/jobs/raycluster), which RayJobs on it cannot be."""
    job = pj.job
    if not isinstance(job, RayCluster):
        raise TypeError(f"not a RayCluster: {pj.kind}")
    labels, annotations = volcano_metadata(pj, job)
    meta = job_metadata(pj, "RayCluster", annotations, labels)
    spec = ray_cluster_spec(pj, job)
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": spec}


def render_rayjob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, RayJob):
        raise TypeError(f"not a RayJob: {pj.kind}")
    if pj.ray_cluster is not None:
        return _on_existing_cluster(pj, job, pj.ray_cluster)
    cluster = ray_cluster_spec(pj, job)

    spec = _submission(pj, job)
    spec["submissionMode"] = job.submission_mode
    # Written even where it is the default, so the RayJob says what will happen to its
    # cluster; a rule set replaces it (validation.go: mutually exclusive).
    spec["shutdownAfterJobFinishes"] = job.shutdown_after_finish and not job.deletion_rules
    if job.ttl_seconds:
        spec["ttlSecondsAfterFinished"] = job.ttl_seconds
    if job.deletion_rules:
        spec["deletionStrategy"] = {
            "deletionRules": [
                {"policy": r.policy, "condition": r.condition()} for r in job.deletion_rules
            ]
        }
    spec["backoffLimit"] = job.backoff_limit
    if job.deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.deadline_seconds
    _submitter_spec(spec, pj, job)
    spec["rayClusterSpec"] = cluster

    labels, annotations = volcano_metadata(pj, job)
    meta = job_metadata(pj, "RayJob", annotations, labels)
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta, "spec": spec}


def _own_submitter(job: RayJob) -> Role | None:
    """The submitter's settings when it runs a program of its own (``submitter.command``)."""
    sub = job.submitter
    return sub if sub is not None and sub.command is not None else None


def _submission(pj: PlannedJob, job: RayJob) -> dict[str, Any]:
    """What KubeRay submits: the entrypoint, its resources and the runtime env. A submitter
    with its own command gets them as arguments instead (``submitter_args``): KubeRay reads
    none of these fields then (rayjob_controller.go configureSubmitterContainer keeps the
    command given, and its ``ray job submit`` line goes unused)."""
    spec: dict[str, Any] = {}
    if _own_submitter(job) is not None:
        return spec
    spec["entrypoint"] = entrypoint(job)
    _entrypoint_resources(spec, job)
    if job.runtime_env is not None:
        spec["runtimeEnvYAML"] = _runtime_env_yaml(job, pj.package_indexes)
    return spec


def submitter_args(job: RayJob, indexes: tuple[str, ...]) -> list[str]:
    """A submitter command's arguments: the flags of KubeRay v1.7.0's light-weight submitter
    (ray-operator/rayjob-submitter/cmd/main.go, the same as ``ray job submit``'s), then ``--``
    and the entrypoint, which it joins with spaces (each word quoted for the shell as
    ``entrypoint`` quotes it)."""
    args: list[str] = []
    env = runtime_env_data(job, indexes)
    if env:
        args += ["--runtime-env-json", json.dumps(env, separators=(",", ":"), sort_keys=True)]
    if job.entrypoint_cpus is not None:
        args += ["--entrypoint-num-cpus", str(_whole(job.entrypoint_cpus))]
    if job.entrypoint_gpus is not None:
        args += ["--entrypoint-num-gpus", str(_whole(job.entrypoint_gpus))]
    if job.entrypoint_resources:
        amounts = {k: _whole(v) for k, v in sorted(job.entrypoint_resources.items())}
        args += ["--entrypoint-resources", json.dumps(amounts, separators=(",", ":"))]
    return [*args, "--", *(shlex.quote(word) for word in _argv(job))]


def _submitter_spec(spec: dict[str, Any], pj: PlannedJob, job: RayJob) -> None:
    if job.submission_mode != "K8sJobMode":
        return
    spec["submitterPodTemplate"] = _submitter(pj, job)
    if job.submitter_backoff_limit is not None:
        # rayjob_controller.go createNewK8sJob: the submitter Job's backoffLimit (default 2).
        spec["submitterConfig"] = {"backoffLimit": job.submitter_backoff_limit}


def _entrypoint_resources(spec: dict[str, Any], job: RayJob) -> None:
    """What Ray reserves for the entrypoint: ``ray job submit --entrypoint-num-cpus …``
    (KubeRay v1.7.0 common/job.go GetK8sJobCommand)."""
    if job.entrypoint_cpus is not None:
        spec["entrypointNumCpus"] = job.entrypoint_cpus
    if job.entrypoint_gpus is not None:
        spec["entrypointNumGpus"] = job.entrypoint_gpus
    if job.entrypoint_resources:
        amounts = {k: _whole(v) for k, v in sorted(job.entrypoint_resources.items())}
        spec["entrypointResources"] = json.dumps(amounts, separators=(",", ":"))


def _whole(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _on_existing_cluster(pj: PlannedJob, job: RayJob, cluster: str) -> dict[str, Any]:
    """A RayJob on a long-lived RayCluster: ``clusterSelector`` names it by ``ray.io/cluster``
    (KubeRay v1.7.0 utils/constant.go RayJobClusterSelectorKey; rayjob_controller.go
    initRayJobStatusIfNeed takes the value as the cluster's name, in the RayJob's namespace),
    no ``rayClusterSpec``. No queue label: kueue v0.19.2 pkg/controller/jobs/rayjob
    rayjob_controller.go Skip leaves such a RayJob alone, while its webhook
    (jobframework ApplyDefaultForSuspend) would still suspend one carrying a queue name, which
    KubeRay then refuses (validation.go: no suspend with a clusterSelector); its RayCluster is
    queued instead. KubeRay never deletes that cluster (rayjob_controller.go: "skipping
    resource deletion"), so ``shutdownAfterJobFinishes`` is false."""
    spec = _submission(pj, job)
    spec["submissionMode"] = job.submission_mode
    spec["shutdownAfterJobFinishes"] = False
    spec["backoffLimit"] = 0
    if job.deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.deadline_seconds
    _submitter_spec(spec, pj, job)
    spec["clusterSelector"] = {CLUSTER_SELECTOR_KEY: cluster}
    meta = job_metadata(pj, "RayJob")
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta, "spec": spec}


def volcano_metadata(
    pj: PlannedJob, job: RayJob | RayCluster
) -> tuple[dict[str, str], dict[str, str]]:
    """``(labels, annotations)`` KubeRay's Volcano plugin reads from the RayJob or
    RayCluster; none on a cluster without Volcano."""
    if pj.queue is None:
        return {}, {}
    labels = {QUEUE_LABEL: pj.queue}
    if job.priority_class is not None:
        labels[PRIORITY_LABEL] = job.priority_class
    # KubeRay copies the RayJob's annotations to the PodGroup: Volcano's tools show the queue.
    return labels, {VOLCANO_QUEUE_ANNOTATION: pj.queue}


# Ray's pip plugin runs `pip install -r <the packages> <pip_install_options>`, whose default
# the options replace (ray-project/ray, Ray 2.60.0, python/ray/_private/runtime_env/pip.py
# _install_pip_packages; validation.py parse_and_validate_pip takes the dict form).
PIP_DEFAULT_OPTIONS = ("--disable-pip-version-check", "--no-cache-dir")


def pip_options(indexes: tuple[str, ...]) -> list[str]:
    """pip's options for a RayJob's packages: Ray's defaults, then the platform's indexes
    (options on the command line win over pip's environment and configuration files)."""
    out = list(PIP_DEFAULT_OPTIONS)
    for i, url in enumerate(indexes):
        out += ["--index-url" if i == 0 else "--extra-index-url", url]
    return out


def _runtime_env_yaml(job: RayJob, indexes: tuple[str, ...]) -> str:
    data = runtime_env_data(job, indexes)
    return str(yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=True, default_flow_style=False))


def runtime_env_data(job: RayJob, indexes: tuple[str, ...]) -> dict[str, Any]:
    """The job's runtime env as Ray reads it, pip's options from the platform's indexes."""
    env = job.runtime_env
    data: dict[str, Any] = {}
    if env is None:
        return data
    if env.local_dir is not None:
        # The directory as mounted on the submitter, which uploads it (model/working_dir.py).
        data["working_dir"] = WORKING_DIR_MOUNT
        data["excludes"] = [VOLUME_ENTRIES]
    elif env.working_dir is not None:
        data["working_dir"] = env.working_dir
    if env.pip and indexes:
        data["pip"] = {"packages": list(env.pip), "pip_install_options": pip_options(indexes)}
    elif env.pip:
        data["pip"] = list(env.pip)
    if env.env_vars:
        data["env_vars"] = dict(sorted(env.env_vars.items()))
    return data


def _mount_working_dir(
    spec: dict[str, Any], container: dict[str, Any], job: str, files: dict[str, str]
) -> None:
    """The repository ``working_dir`` on the submitter, each file at its path (``items``),
    read-only; and a small writable ``/tmp``, where ``ray job submit`` zips it
    (Ray 2.60.0 dashboard_sdk.py ``_upload_package``: ``tempfile.TemporaryDirectory``), so
    the upload works under a read-only root filesystem too."""
    keys = working_dir_keys(files)
    spec["volumes"] = [
        {
            "name": WORKING_DIR_VOLUME,
            "configMap": {
                "name": working_dir_configmap_name(job, files),
                "items": [{"key": keys[p], "path": p} for p in sorted(files)],
            },
        },
        {"name": "working-dir-tmp", "emptyDir": {"sizeLimit": "64Mi"}},
    ]
    container["volumeMounts"] = [
        {"name": WORKING_DIR_VOLUME, "mountPath": WORKING_DIR_MOUNT, "readOnly": True},
        {"name": "working-dir-tmp", "mountPath": "/tmp"},
    ]


def _submitter(pj: PlannedJob, job: RayJob) -> dict[str, Any]:
    """The submitter Job's pod: the head's image (as KubeRay's default), a small Guaranteed
    container, and the job's pull secrets, service account, priority and tolerations, which
    KubeRay's default template leaves out. KubeRay fills in the ``ray job submit`` command
    unless ``submitter`` gives one; ``submitter``'s other settings replace the job's."""
    own = job.submitter or Role()
    sized = own.resources or job.submitter_resources or SUBMITTER_RESOURCES
    container: dict[str, Any] = {
        "name": SUBMITTER,
        "image": pj.role_image(own),
        "resources": resource_requirements(sized, pj.cluster),
    }
    if own.command is not None:
        container["command"] = list(own.command)
        container["args"] = submitter_args(job, pj.package_indexes)
    if own.env:
        container["env"] = [{"name": k, "value": v} for k, v in own.env.items()]
    if job.image_pull_policy is not None:
        container["imagePullPolicy"] = job.image_pull_policy
    hide_gpus(container, pj.cluster)  # the head's image, on a GPU node maybe
    container_security(container, job)  # a pod of the job, its user the job's
    spec: dict[str, Any] = {
        "containers": [container],
        "restartPolicy": own.restart_policy or "Never",
    }
    if pj.definition.working_dir:
        _mount_working_dir(spec, container, job.name, dict(pj.definition.working_dir))
    pod_security(spec, job)
    if own.node_selector:
        spec["nodeSelector"] = dict(own.node_selector)
    toleration_list = own.tolerations if own.tolerations is not None else job.tolerations
    if toleration_list:
        spec["tolerations"] = tolerations(toleration_list)
    pod_access(
        spec,
        service_account=job.service_account,
        pull_secrets=job.image_pull_secrets,
        priority_class=job.priority_class,
    )
    return {"metadata": pod_metadata(pj.definition.team, job.name, job), "spec": spec}
