"""The RayJob (``ray.io/v1``, KubeRay v1.7) definition.

Rules cite ray-project/kuberay at v1.7.0: ray-operator/controllers/ray/utils/validation.go
(ValidateRayJobSpec, ValidateRayClusterSpec, validateDeletionRules: what the controller refuses
at run time, which shows only as a RayJob in ``ValidationFailed``), utils/constant.go (name
limits), common/pod.go (what KubeRay does with the pods' resources), common/service.go (the
head Service) and common/job.go with rayjob_controller.go (the submitter pod).
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from ..injected_env import refused_env_reason
from ..kube.expansion import references
from ..kube.quantities import parse_quantity
from .base import TrainkitModel
from .fields import (
    AnnotationValue,
    DNS1035Name,
    DNS1123Label,
    EnvName,
    EnvValue,
    LabelKey,
    LabelValue,
)
from .job import Resources, repeated
from .lifecycle import Hook
from .operator_job import PodJob, Role
from .pip_requirements import requirement_problem
from .pod_metadata import own_keys_refused
from .volumes import AnyVolume, check_group_volumes, check_volumes, check_workspace
from .working_dir import Exclude, is_remote, remote_problem

__all__ = [
    "MAX_RAYJOB_NAME",
    "DeletionRule",
    "HeadService",
    "RayJob",
    "RayStart",
    "RuntimeEnv",
    "WorkerGroup",
    "check_submitter",
]

MAX_RAYJOB_NAME = 47
"""utils/constant.go MaxRayJobNameLength: the RayCluster's name (at most 53) is the RayJob's
plus ``-`` and five random characters."""


def whole_cpus(resources: Resources, where: str) -> None:
    """Ray schedules whole CPUs: KubeRay passes ``--num-cpus`` rounded up from the limit
    (common/pod.go generateRayStartCommand, ``Quantity.Value()``), so 500m becomes a CPU Ray
    hands out although the pod has half of one."""
    cpu = str(resources.cpu)
    if cpu.endswith("m") or "." in cpu:
        raise ValueError(
            f"{where} has cpu {cpu!r}: Ray schedules whole CPUs and KubeRay rounds the limit up "
            "for `ray start --num-cpus`, so tasks would get CPUs the pod does not have; give a "
            "whole number of cores"
        )


def _ray_resource(name: str) -> str:
    # KubeRay writes the resources into the container's shell command inside single quotes
    # (common/pod.go generateRayStartCommand, convertParamMap): a quote or a space would end
    # them. Ray itself refuses its built-in names there (python/ray/_private/
    # resource_spec.py, Ray 2.60.0: "Use the --num-cpus and --num-gpus flags").
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.:/-]{0,62}", name):
        raise ValueError(
            f"{name!r} is not a Ray resource name trainkit writes: a letter, then letters, "
            "digits and _ . : / -, at most 63 characters, e.g. 'accelerator_type:A100'"
        )
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is Ray's own resource: {_BUILT_IN[name]}")
    return name


_BUILT_IN = {
    "CPU": "give RayStart(cpus=...)",
    "GPU": "give RayStart(gpus=...)",
    "memory": "Ray takes it from the pod's memory limit",
    "object_store_memory": "Ray sizes it from the pod's memory",
}
RayResourceName = Annotated[str, AfterValidator(_ray_resource)]
RayAmount = Annotated[float, Field(gt=0, le=1_000_000)]


class RayStart(TrainkitModel):
    """What Ray is told a node (pod) has, where it differs from the pod's resources
    (KubeRay's ``rayStartParams``), e.g. ``RayStart(cpus=0)`` keeps tasks off the head, and
    ``RayStart(resources={"accelerator_type:A100": 1})`` lets tasks ask for this kind of node.
    These are Ray's own bookkeeping: the pod's CPUs, memory and GPUs stay its ``resources``."""

    cpus: int | None = Field(default=None, ge=0, le=100_000)
    """CPUs Ray schedules on the node (``--num-cpus``); default: the pod's CPU limit."""
    gpus: int | None = Field(default=None, ge=0, le=64)
    """GPUs Ray schedules on the node (``--num-gpus``), at most the pod's; default: the pod's."""
    resources: dict[RayResourceName, RayAmount] = Field(default={}, max_length=32)
    """Custom resources of the node (``--resources``) that tasks, actors and the entrypoint
    may ask for, e.g. ``{"eval_slot": 4}``."""

    def params(self) -> dict[str, str]:
        """The ``rayStartParams`` it stands for."""
        out: dict[str, str] = {}
        if self.cpus is not None:
            out["num-cpus"] = str(self.cpus)
        if self.gpus is not None:
            out["num-gpus"] = str(self.gpus)
        if self.resources:
            text = json.dumps(
                {k: _number(v) for k, v in sorted(self.resources.items())}, separators=(",", ":")
            )
            # KubeRay's own form: single quotes for the shell (getResourcesMap trims them).
            out["resources"] = f"'{text}'"
        return out

    def check(self, resources: Resources, where: str) -> None:
        if self.gpus is not None and self.gpus > resources.gpu:
            raise ValueError(
                f"{where} tells Ray it has {self.gpus} GPU(s) but its pod has {resources.gpu}: "
                "Ray would place GPU tasks where no GPU is visible; give ray_start gpus at most "
                f"{resources.gpu}"
            )


def ray_node(resources: Resources, start: RayStart | None) -> dict[str, float]:
    """What Ray schedules on one node: ``CPU`` and ``GPU`` as ``ray start`` gets them (KubeRay
    v1.7.0 common/pod.go generateRayStartCommand: the params, else the pod's limits; trainkit
    tells a GPU-less head it has none) and the custom resources."""
    cpus = float(math.ceil(parse_quantity(str(resources.cpu)) or 0))
    gpus = float(resources.gpu)
    out: dict[str, float] = {}
    if start is not None:
        cpus = float(start.cpus) if start.cpus is not None else cpus
        gpus = float(start.gpus) if start.gpus is not None else gpus
        out.update(start.resources)
    if cpus:
        out["CPU"] = cpus
    if gpus:
        out["GPU"] = gpus
    return out


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


class WorkerGroup(TrainkitModel):
    """Identical Ray worker pods (a ``workerGroupSpecs`` entry), e.g.
    ``WorkerGroup(name="gpu", nodes=4, resources=Resources(cpu=32, memory="256Gi", gpu=8))``."""

    name: DNS1123Label = "workers"
    """Group name (the pods' ``ray.io/group`` label), unique in the job."""
    nodes: int = Field(default=1, ge=1, le=10000)
    """Worker pods the job starts with."""
    min_nodes: int | None = Field(default=None, ge=0)
    """With ``max_nodes``, lets Ray's autoscaler scale the group between the two (KubeRay's
    in-tree autoscaler); the Volcano gang then admits ``min_nodes`` workers."""
    max_nodes: int | None = Field(default=None, ge=1)
    """The most workers the autoscaler may start; see ``min_nodes``. ``Team.max_gpus``,
    ``Policy.max_gpus_per_job``, the Volcano queue and the plan count them all."""
    resources: Resources
    """CPU (whole cores), memory and GPUs of each worker pod."""
    node_selector: dict[LabelKey, LabelValue] | None = None
    """Node labels the group's pods must run on, instead of the job's."""
    hosts: int = Field(default=1, ge=1, le=64)
    """Pods of each worker (KubeRay's ``numOfHosts``): a multi-host worker, e.g. a slice of 4
    TPU VMs, is created, scaled and deleted as one. The group has ``nodes × hosts`` pods, and
    ``min_nodes``/``max_nodes`` count workers, not pods."""
    ray_start: RayStart | None = None
    """What Ray is told each pod has, where it differs from ``resources``."""
    volumes: list[AnyVolume] = []
    """Volumes mounted on this group's pods only, beside the job's ``volumes`` (which every
    pod gets), e.g. a ``ConfigMapVolume`` the group alone reads; held to the same grants and
    rules, and named apart from the job's."""
    pre_stop: Hook | None = None
    """What the kubelet runs in this group's Ray container before stopping it, over the job's
    ``pre_stop``, e.g. ``Hook(exec=["/bin/sh", "-c", "ray stop"])`` so the worker leaves the
    cluster before it is killed."""

    @model_validator(mode="after")
    def _scaling(self) -> WorkerGroup:
        low, high = self.scaling
        if low > high:
            raise ValueError(
                f"min_nodes {low} is greater than max_nodes {high}; KubeRay refuses the job "
                "(validation.go ValidateRayClusterSpec): make min_nodes ≤ max_nodes"
            )
        if not low <= self.nodes <= high:
            raise ValueError(
                f"nodes {self.nodes} is outside min_nodes..max_nodes ({low}..{high}); the "
                "group starts with nodes workers, so give a count in that range"
            )
        whole_cpus(self.resources, f"worker group {self.name!r}")
        if self.ray_start is not None:
            self.ray_start.check(self.resources, f"worker group {self.name!r}")
        return self

    @property
    def pods(self) -> int:
        """Pods the group starts with: ``nodes × hosts``."""
        return self.nodes * self.hosts

    @property
    def scaling(self) -> tuple[int, int]:
        """``(min, max)`` workers; equal when the group does not autoscale."""
        low = self.nodes if self.min_nodes is None else self.min_nodes
        high = self.nodes if self.max_nodes is None else self.max_nodes
        return low, high


def _requirement(entry: str) -> str:
    why = requirement_problem(entry)
    if why is not None:
        raise ValueError(f"{entry!r} {why}")
    return entry


PipRequirement = Annotated[str, AfterValidator(_requirement)]

# Ray's runtime_env fields (ray-project/ray, Ray 2.60.0, python/ray/runtime_env/runtime_env.py
# RuntimeEnv.known_fields) that fetch code or packages from elsewhere: py_modules takes a
# remote URI (working_dir too, offered with a grant: model/working_dir.py) (https://, s3://, gs://, …: python/ray/_private/runtime_env/
# validation.py validate_uri, working_dir.py, py_modules.py, java_jars.py), conda an environment
# spec with its own channels and pip section (conda.py), uv its own index options (uv.py),
# image_uri and container another image (image_uri.py).
_SOURCES = {
    "py_modules": "the job's code comes from the repository: script=Script.file(...)",
    "conda": "packages come through pip=[...], by name, from the platform's indexes",
    "uv": "packages come through pip=[...], by name, from the platform's indexes",
    "java_jars": "the job's code comes from the repository and its image",
    "image_uri": "the image is the job's image=, which the platform's Policy.registries check",
    "container": "the image is the job's image=, which the platform's Policy.registries check",
    "pip_install_options": "trainkit writes pip's options from the platform's Policy",
}


class RuntimeEnv(TrainkitModel):
    """What Ray prepares for the job's processes (``runtimeEnvYAML``), on every node."""

    pip: list[PipRequirement] = []
    """Packages Ray installs for the job when it starts, each a PEP 508 requirement, e.g.
    ``["datasets==3.0.1"]``: by name from the platform's indexes (``Policy.package_indexes``),
    or ``"name @ <url>"`` from a source the platform allows (``Policy.package_sources``). pip
    options (``--index-url``, ``-f``, ``-r``, ``-e``…), bare URLs and paths are refused."""
    env_vars: dict[EnvName, EnvValue] = {}
    """Variables of every Ray task and actor of the job (the same rules as ``env``)."""
    working_dir: str | None = Field(default=None, min_length=1, max_length=1000)
    """Where the job's processes start, on every node (Ray's ``working_dir``): a directory of
    the repository, relative to the definition file, e.g. ``"scripts/pipeline"`` (shipped in a
    ConfigMap to the submitter, which uploads it to the Ray cluster: at most 1 MB and
    256 files, UTF-8 text; ``K8sJobMode`` only), or the URI of an archive
    (``.zip``, ``.tar.gz``, ``.tgz``, ``.tar.xz``) under a prefix the team is granted
    (``Team.working_dir_sources``), e.g. ``"s3://ml-code/eval-v3.zip"``."""
    excludes: list[Exclude] = Field(default=[], max_length=64)
    """Files of a repository ``working_dir`` not to ship, e.g. ``["*.ipynb", "/data/"]``: a
    name or glob matches at any depth, a path with ``/`` from the directory's top, a
    trailing ``/`` directories only (``__pycache__`` and ``*.pyc`` are never shipped)."""

    @field_validator("working_dir")
    @classmethod
    def _where(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if is_remote(v):
            why = remote_problem(v)
            if why is not None:
                raise ValueError(f"{v!r} {why}")
            return v
        norm = posixpath.normpath(v)
        if v.startswith("/") or "\\" in v or norm == ".." or norm.startswith("../"):
            raise ValueError(
                f"{v!r} must be a directory relative to the definition file, "
                "inside jobs/ (e.g. 'scripts/pipeline'), or the URI of an archive"
            )
        if not v.isprintable():
            raise ValueError(f"{v!r} holds a control character; rename it")
        return v

    @model_validator(mode="after")
    def _excludes_need_a_directory(self) -> RuntimeEnv:
        if self.excludes and (self.working_dir is None or is_remote(self.working_dir)):
            raise ValueError(
                "excludes choose the files of a repository working_dir; an archive is shipped "
                "as it is: drop excludes, or leave the files out of the archive"
            )
        return self

    @property
    def local_dir(self) -> str | None:
        """The repository directory shipped as the working directory, if any."""
        wd = self.working_dir
        return wd if wd is not None and not is_remote(wd) else None

    @model_validator(mode="before")
    @classmethod
    def _no_remote_sources(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in sorted(set(data) & set(_SOURCES)):
                raise ValueError(
                    f"RuntimeEnv({key}=...) is not offered: Ray would fetch code or packages from "
                    f"wherever it names; {_SOURCES[key]}"
                )
        return data

    @field_validator("env_vars")
    @classmethod
    def _no_reserved(cls, env: dict[str, str]) -> dict[str, str]:
        bad = [(k, why) for k in env if (why := refused_env_reason(k, "RayJob"))]
        if bad:
            raise ValueError(
                "; ".join(f"{k} may not be set: {why}" for k, why in bad)
                + " — remove it from env_vars"
            )
        return env


# The deletion policies and conditions of rayjob_types.go DeletionRule, in the user's words.
_POLICIES = {
    "workers": "DeleteWorkers",
    "cluster": "DeleteCluster",
    "self": "DeleteSelf",
    "nothing": "DeleteNone",
}


class DeletionRule(TrainkitModel):
    """What KubeRay deletes once the job ends (``deletionStrategy.deletionRules``), e.g.
    ``DeletionRule(delete="cluster", when="failed", after_seconds=3600)`` keeps a failed
    job's Ray cluster an hour for debugging."""

    delete: Literal["workers", "cluster", "self", "nothing"]
    """``workers`` (keep the head and its logs), ``cluster`` (the whole RayCluster),
    ``nothing``. ``self`` (the RayJob) is refused: Argo CD's self-heal would create it again
    and run the job a second time."""
    when: Literal["succeeded", "failed", "not-submitted"]
    """The Ray job ``succeeded`` or ``failed``, or the RayJob failed before its job ran
    (``not-submitted``: the cluster never came up, or a deadline passed)."""
    after_seconds: int = Field(default=0, ge=0)
    """Wait this long after ``when`` before deleting."""

    @model_validator(mode="after")
    def _not_self(self) -> DeletionRule:
        if self.delete == "self":
            raise ValueError(
                "delete='self' deletes the RayJob, which Argo CD's self-heal then creates again "
                "from git, running the job a second time; use delete='cluster' (the RayJob "
                "stays, its Ray cluster goes)"
            )
        return self

    @property
    def policy(self) -> str:
        return _POLICIES[self.delete]

    def condition(self) -> dict[str, object]:
        """The rule's ``condition`` (rayjob_types.go DeletionCondition)."""
        cond: dict[str, object] = (
            {"jobDeploymentStatus": "Failed"}
            if self.when == "not-submitted"
            else {"jobStatus": self.when.upper()}
        )
        if self.after_seconds:
            cond["ttlSeconds"] = self.after_seconds
        return cond


class HeadService(TrainkitModel):
    """The Kubernetes Service of the Ray head (KubeRay's ``headGroupSpec.headService`` and
    ``serviceType``), e.g. ``HeadService(name="eval-ray")`` for a fixed DNS name. It carries
    the dashboard, whose job API runs any code submitted to it, the GCS and the Ray client:
    whoever reaches it runs code as the job. ``ClusterIP`` (the default) keeps it inside the
    cluster; ``NodePort`` and ``LoadBalancer`` reach beyond it and need the Team's grant
    (``Team.ray_head_service_types``)."""

    name: DNS1035Name | None = None
    """The Service's name instead of KubeRay's ``<cluster>-head-svc``, unique among the
    team's Services on the cluster. KubeRay then gives it a cluster IP (its own Service is
    headless); a RayJob's ``<job>-head-svc`` stays as it is."""
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = "ClusterIP"
    """``ClusterIP``: reachable inside the cluster (``kubectl port-forward`` for the
    dashboard); ``NodePort``: on a port of every node; ``LoadBalancer``: at an address of the
    cloud's load balancer. A RayJob's own ``<job>-head-svc`` gets the same type."""
    annotations: dict[LabelKey, AnnotationValue] = {}
    """Annotations of a ``NodePort`` or ``LoadBalancer`` Service, for what provisions its
    address, e.g. ``{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}``;
    a RayJob's own ``<job>-head-svc`` gets them too. Each key and value needs the Team's
    grant (``Team.ray_head_service_annotations``): they choose who can reach the head."""

    @field_validator("annotations")
    @classmethod
    def _not_trainkits(cls, meta: dict[str, str]) -> dict[str, str]:
        return own_keys_refused(meta)

    @model_validator(mode="after")
    def _annotations_need_an_address(self) -> HeadService:
        if self.annotations and not self.exposed:
            raise ValueError(
                "annotations shape the address of a NodePort or LoadBalancer head Service "
                "(the cloud's load balancer controller reads them), but type is 'ClusterIP'; "
                "drop annotations, or give type='LoadBalancer' or 'NodePort' where the team "
                "is granted it"
            )
        return self

    @property
    def exposed(self) -> bool:
        """Whether it reaches beyond the cluster's own network."""
        return self.type != "ClusterIP"


def check_submitter(
    submitter: Role | None, resources: Resources | None, mode: str, backoff: int | None
) -> None:
    """What a RayJob's own submitter pod (``submitter=Role(...)``) may say.

    KubeRay v1.7.0: utils/validation.go ValidateRayJobSpec refuses SubmitterPodTemplate and
    SubmitterConfig in SidecarMode, and HTTPMode has no submitter; rayjob_controller.go
    createNewK8sJob runs the template as a batch Job (one pod at a time, a Job's restart
    policy), getSubmitterTemplate configures its first container: a command given is kept,
    and PYTHONUNBUFFERED, RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID are appended to its
    env (configureSubmitterContainer).
    """
    given = [
        f
        for f, v in (("submitter", submitter), ("submitter_backoff_limit", backoff))
        if v is not None
    ]
    if given and mode != "K8sJobMode":
        raise ValueError(
            f"{' and '.join(given)} shape the submitter Job of K8sJobMode, but submission_mode "
            f"is {mode!r}, which has none (KubeRay refuses a submitter template in SidecarMode: "
            "validation.go ValidateRayJobSpec): drop it"
        )
    if submitter is None:
        return
    if submitter.replicas != 1:
        raise ValueError(
            f"submitter.replicas is {submitter.replicas}; KubeRay runs one submitter pod at a "
            "time (a batch Job): drop replicas"
        )
    if submitter.restart_policy == "ExitCode":
        raise ValueError(
            "submitter.restart_policy 'ExitCode' is the Training Operator's; the submitter is a "
            "batch Job's pod: use 'Never' (the default: the Job starts a new pod) or 'OnFailure'"
        )
    if submitter.args is not None:
        raise ValueError(
            "submitter.args: trainkit writes the submitter's arguments from the job's script or "
            "command, runtime_env and entrypoint resources (the flags of KubeRay's "
            "rayjob-submitter and `ray job submit`), so that what runs is what the RayJob says; "
            "drop args and give the program in command= or script="
        )
    own = [
        f"submitter.{f}"
        for f in ("volumes", "security_context", "container_security_context")
        if getattr(submitter, f)
    ]
    if own:
        # Role's volumes and security contexts are the operator kinds' (render/operator_pod.py
        # role_template); the submitter pod takes the job's contexts and needs no volume.
        raise ValueError(
            f"{' and '.join(own)}: the submitter pod runs with the job's security contexts "
            "and mounts no volume (it only submits the entrypoint and follows its logs); drop "
            "them, or set security_context= on the job"
        )
    if submitter.resources is not None and resources is not None:
        raise ValueError(
            "submitter.resources and submitter_resources both size the submitter pod: keep "
            "submitter=Role(resources=...)"
        )
    if submitter.resources is not None and submitter.resources.gpu:
        raise ValueError(
            "submitter.resources.gpu: the submitter only submits the job and follows its logs; "
            "GPUs there would be held for the whole job unused: give gpu=0"
        )
    bad = []
    for name in submitter.env:
        why = refused_env_reason(name, "RayJob")
        if name == "PYTHONUNBUFFERED":
            why = "KubeRay sets it on the submitter, after the env given (1)"
        if why is not None:
            bad.append(f"submitter.env: {name} may not be set: {why}")
    if bad:
        raise ValueError("; ".join(bad) + " — remove it from the submitter's env")


def ray_group_volume_fields(job: RayJob | Any) -> list[tuple[str, AnyVolume]]:
    """The head's (``head_volumes``) and each worker group's own volumes, with their fields."""
    out: list[tuple[str, AnyVolume]] = [
        (f"head_volumes[{i}]", v) for i, v in enumerate(job.head_volumes)
    ]
    for k, g in enumerate(job.workers):
        out += [(f"workers[{k}].volumes[{i}]", v) for i, v in enumerate(g.volumes)]
    return out


def check_ray_groups(job: Any) -> None:
    """Each Ray pod group's volumes beside the job's: unique names and paths on its pods,
    clear of the script that every pod mounts (render/kuberay.py ray_cluster_spec)."""
    script = getattr(job, "script", None)
    check_group_volumes(job.volumes, job.head_volumes, "the head", "head_volumes")
    check_workspace(job.head_volumes, script, field="head_volumes")
    for k, g in enumerate(job.workers):
        field = f"workers[{k}].volumes"
        check_group_volumes(job.volumes, g.volumes, f"worker group {g.name!r}", field)
        check_workspace(g.volumes, script, field=field)


class RayJob(PodJob):
    """A Ray job (KubeRay): a Ray cluster of a head and worker groups, created for the job;
    the ``script`` (or ``command``) is submitted to it as the job's entrypoint and runs on the
    head, where ``ray.init()`` connects to the cluster. With ``ray_cluster`` it runs on a
    long-lived RayCluster of the team instead."""

    head: Resources | None = None
    """CPU (whole cores), memory and GPUs of the head pod, which runs the entrypoint and
    Ray's control plane (GCS, dashboard). Required unless ``ray_cluster`` is given."""
    head_ray_start: RayStart | None = None
    """What Ray is told the head has, e.g. ``RayStart(cpus=0)`` so that no task or actor runs
    beside Ray's control plane and the entrypoint (default: the head has no GPUs for Ray
    unless it asks for some)."""
    head_volumes: list[AnyVolume] = []
    """Volumes mounted on the head pod only, beside the job's ``volumes`` (which every pod
    gets), e.g. ``[EmptyDir(name="ray-logs", path="/tmp/ray")]`` for the head's logs; held to
    the same grants and rules, and named apart from the job's."""
    entrypoint_cpus: float | None = Field(default=None, gt=0, le=100_000)
    """CPUs Ray reserves for the entrypoint (``entrypointNumCpus``), so it runs on a node
    with them free."""
    entrypoint_gpus: float | None = Field(default=None, gt=0, le=64)
    """GPUs Ray reserves for the entrypoint (``entrypointNumGpus``): it then runs on a worker
    with a GPU, not on the head."""
    entrypoint_resources: dict[RayResourceName, RayAmount] = Field(default={}, max_length=32)
    """Custom resources Ray reserves for the entrypoint (``entrypointResources``), ones a
    group declares in ``ray_start``."""
    ray_cluster: DNS1035Name | None = None
    """Run on the team's RayCluster of this name (``RayCluster(name=...)``) instead of a Ray
    cluster of the job's own: KubeRay submits the entrypoint to its head (``clusterSelector``).
    The entrypoint runs in the RayCluster's image, so the code comes with it
    (``command=[...]``; a ``script`` would be mounted on a head the job does not make); the
    job's ``image`` is its submitter's. The pods, queue and quota are the RayCluster's."""
    workers: list[WorkerGroup] = []
    """Worker groups, e.g. ``[WorkerGroup(name="gpu", nodes=4, resources=...)]``; none runs
    everything on the head."""
    runtime_env: RuntimeEnv | None = None
    """Packages and variables Ray sets up for the job (``runtimeEnvYAML``)."""
    submission_mode: Literal["K8sJobMode", "HTTPMode", "SidecarMode"] = "K8sJobMode"
    """How KubeRay submits the entrypoint: a Kubernetes Job (``K8sJobMode``, whose logs
    keep the driver's output), from the operator over HTTP (``HTTPMode``) or from a
    container beside the head (``SidecarMode``). ``InteractiveMode`` waits for a person to
    submit, which no git change can do."""
    submitter_resources: Resources | None = None
    """CPU and memory of the submitter pod (``K8sJobMode``), which only runs ``ray job
    submit`` and follows the logs; default 1 CPU and 1 GiB. No GPUs. The same as
    ``submitter=Role(resources=...)``."""
    submitter: Role | None = None
    """The submitter pod's own settings (``K8sJobMode``), each held to the same rules as the
    job's: ``image`` (default: the head's), ``command`` (default KubeRay's ``ray job
    submit``), ``resources``, ``env``, ``node_selector``, ``tolerations``,
    ``restart_policy``. With a ``command``, e.g. KubeRay's light-weight submitter
    ``Role(image="quay.io/kuberay/submitter:v1.5.1", command=["/submitter"])``, trainkit
    writes its arguments: ``--runtime-env-json``, the entrypoint resources, then ``--`` and
    the entrypoint (``args`` is refused). It runs with the job's security context, service
    account and pull secrets."""
    submitter_backoff_limit: int | None = Field(default=None, ge=0, le=10)
    """Times the submitter Job starts a new pod after one fails (``submitterConfig
    .backoffLimit``; KubeRay's default 2). KubeRay's submitter and its light-weight one resume
    a job already submitted instead of submitting it again."""
    head_service: HeadService | None = None
    """The head's Service: its name and type (``HeadService``); default KubeRay's headless
    ``<cluster>-head-svc``, inside the cluster."""
    shutdown_after_finish: bool = True
    """Delete the Ray cluster when the job ends, releasing its GPUs; the RayJob stays."""
    ttl_seconds: int = Field(default=0, ge=0)
    """Keep the Ray cluster this long after the job ends (with ``shutdown_after_finish``)."""
    deletion_rules: list[DeletionRule] = []
    """Finer cleanup than ``shutdown_after_finish`` (which it replaces), per outcome."""
    backoff_limit: int = Field(default=0, ge=0)
    """Times KubeRay runs the job again after it fails, each time on a new Ray cluster."""
    deadline_seconds: int | None = Field(default=None, ge=1)
    """Fail the job when it has run this long (``activeDeadlineSeconds``), counted from when
    KubeRay starts it (Initializing): at creation on Volcano, so time queued there counts; at
    admission on Kueue; anew for each retry."""

    @field_validator("command", "args")
    @classmethod
    def _no_kubelet_references(cls, argv: list[str] | None) -> list[str] | None:
        # The entrypoint is never a container's command: KubeRay joins it into the text of
        # its submitter's `ray job submit ... -- <entrypoint>` bash line (controllers/ray/
        # common/job.go BuildJobSubmitCommand; rayjob_controller.go
        # configureSubmitterContainer), or posts it over HTTP (HTTPMode), and Ray runs it in a
        # shell on the head. So the kubelet never expands $(VAR) with the job's variables (in
        # the submitter it sees only KubeRay's own), and the head's shell runs VAR as a
        # command instead. ($$ differs by mode, the kubelet's escape in the submitter's args
        # and the shell's PID over HTTP, so it is not suggested.)
        for text in argv or ():
            refs = references(text)
            if refs:
                name = refs[0].name
                raise ValueError(
                    f"$({name}) in {text!r}: a RayJob's entrypoint is no container's command, "
                    "so the kubelet does not expand it with the job's variables: KubeRay hands "
                    f"it to Ray as text, and Ray runs it in a shell on the head, where $({name}) "
                    f"runs {name!r} as a command; write ${name} (or ${{{name}}}) to read the "
                    "variable there (the job's env and runtime_env.env_vars are set for it)"
                )
        return argv

    @field_validator("name")
    @classmethod
    def _short(cls, name: str) -> str:
        if len(name) > MAX_RAYJOB_NAME:
            raise ValueError(
                f"name is {len(name)} characters; KubeRay takes at most {MAX_RAYJOB_NAME} "
                "(the RayCluster it creates appends 6), shorten it"
            )
        return name

    @model_validator(mode="after")
    def _one_program(self) -> RayJob:
        if self.ray_cluster is not None:
            self._on_existing_cluster()
            return self
        if self.head is None:
            raise ValueError(
                "a RayJob needs head=Resources(...) for the Ray cluster it starts, or "
                "ray_cluster='<name>' to run on a RayCluster of the team"
            )
        if (self.script is None) == (self.command is None) or self.command == []:
            raise ValueError(
                "a RayJob submits one entrypoint: give script=Script.file('train.py') (shipped "
                "in a ConfigMap) or command=[...] (code inside the image)"
            )
        check_volumes(self.volumes)
        check_workspace(self.volumes, self.script)
        check_ray_groups(self)
        return self

    def group_volume_fields(self) -> list[tuple[str, AnyVolume]]:
        """The head's and the worker groups' own volumes, with their fields."""
        return ray_group_volume_fields(self)

    def _on_existing_cluster(self) -> None:
        """What a RayJob on an existing RayCluster (``clusterSelector``) may not say.

        KubeRay v1.7.0 utils/validation.go ValidateRayJobSpec refuses SidecarMode, a
        backoffLimit above 0 and suspend with a clusterSelector, and validateDeletionRules
        rules that delete the cluster or its workers; rayjob_controller.go skips the cluster's
        deletion (shutdownAfterJobFinishes has no effect). Everything that shapes the Ray
        cluster's pods is the RayCluster's.
        """
        given = self.model_fields_set
        owned = [
            f
            for f in (
                "head", "head_ray_start", "head_volumes", "head_service", "workers", "script",
                "volumes", "init_containers",
                "env", "env_refs",
                "env_from", "shm_size", "node_selector", "node_affinity", "topology", "network",
            )
            if f in given and getattr(self, f) not in (None, [], {})
        ]  # fmt: skip
        if owned:
            raise ValueError(
                f"{', '.join(owned)} shape{'s' if len(owned) == 1 else ''} the Ray cluster's "
                f"pods, which are RayCluster {self.ray_cluster!r}'s: set them there (a job's "
                "variables go in runtime_env=RuntimeEnv(env_vars=...), its code in the "
                "RayCluster's image, started with command=[...])"
            )
        if not self.command:
            raise ValueError(
                f"a RayJob on RayCluster {self.ray_cluster!r} needs command=[...]: the "
                "entrypoint runs on the RayCluster's head, in its image"
            )
        refused = {
            "queue": "the RayJob is not queued: its RayCluster is (Kueue does not manage a "
            "RayJob on an existing cluster, and would suspend it forever), so drop queue",
            "ttl_seconds": "KubeRay never deletes a RayCluster it did not create for the job: "
            "drop ttl_seconds",
            "shutdown_after_finish": "KubeRay never deletes a RayCluster it did not create for "
            "the job: drop shutdown_after_finish",
            "deletion_rules": "KubeRay refuses rules that delete the cluster or its workers with "
            "a clusterSelector (validation.go validateDeletionRules): drop deletion_rules",
        }
        for field, why in refused.items():
            if field in given:
                raise ValueError(f"{field} with ray_cluster: {why}")
        if self.backoff_limit:
            raise ValueError(
                "backoff_limit with ray_cluster: KubeRay refuses retries on an existing "
                "cluster (validation.go ValidateRayJobSpec: BackoffLimit is incompatible with "
                "ClusterSelector mode); drop it"
            )
        if self.submission_mode == "SidecarMode":
            raise ValueError(
                "submission_mode='SidecarMode' with ray_cluster: KubeRay refuses it (validation.go "
                "ValidateRayJobSpec: ClusterSelector is not supported in SidecarMode), the "
                "sidecar would belong to a head the job does not make; use 'K8sJobMode' or "
                "'HTTPMode'"
            )

    @model_validator(mode="after")
    def _working_dir_submitted(self) -> RayJob:
        local = self.runtime_env.local_dir if self.runtime_env is not None else None
        if local is not None and self.submission_mode != "K8sJobMode":
            # KubeRay v1.7.0: HTTPMode posts runtimeEnvYAML from the operator
            # (utils/dashboardclient/dashboard_httpclient.go SubmitJob), SidecarMode runs
            # `ray job submit` in a default container KubeRay builds itself
            # (rayjob_controller.go getSubmitterContainer): neither has the directory.
            raise ValueError(
                f"runtime_env working_dir {local!r} is a directory of the repository, which "
                "trainkit mounts on the submitter pod of K8sJobMode for `ray job submit` to "
                f"upload; submission_mode {self.submission_mode!r} submits from where it is "
                "not: use submission_mode='K8sJobMode', or an archive URI"
            )
        return self

    @model_validator(mode="after")
    def _submitter(self) -> RayJob:
        check_submitter(
            self.submitter,
            self.submitter_resources,
            self.submission_mode,
            self.submitter_backoff_limit,
        )
        res = self.submitter_resources
        if res is None:
            return self
        if self.submission_mode != "K8sJobMode":
            raise ValueError(
                f"submitter_resources size the submitter pod of K8sJobMode, but "
                f"submission_mode is {self.submission_mode!r}, which has none: drop it"
            )
        if res.gpu:
            raise ValueError(
                "submitter_resources.gpu: the submitter only runs `ray job submit`; GPUs there "
                "would be held for the whole job unused: give gpu=0"
            )
        return self

    @model_validator(mode="after")
    def _coherent(self) -> RayJob:
        if len(self.object_name) > MAX_RAYJOB_NAME:
            raise ValueError(
                f"name {self.object_name!r} (with its run) is {len(self.object_name)} "
                f"characters; KubeRay takes at most {MAX_RAYJOB_NAME}: shorten the name"
            )
        if self.head is not None:
            whole_cpus(self.head, "head")
            if self.head_ray_start is not None:
                self.head_ray_start.check(self.head, "the head")
            self._entrypoint_fits(self.head)
        if self.autoscaled and self.service_account is not None:
            # common/pod.go DefaultHeadPodTemplate: the head of an autoscaled cluster runs as
            # the autoscaler's ServiceAccount, which KubeRay creates.
            raise ValueError(
                "an autoscaling Ray cluster's head runs under KubeRay's autoscaler "
                "ServiceAccount, which would replace service_account: drop one of them"
            )
        dupes = repeated(g.name for g in self.workers)
        if dupes:
            raise ValueError(f"worker groups share the name {dupes[0]!r}; name each group once")
        given = self.model_fields_set
        if self.ttl_seconds and not self.shutdown_after_finish:
            raise ValueError(
                "ttl_seconds keeps the Ray cluster after the job ends, which needs "
                "shutdown_after_finish=True (validation.go validateDeletionConfiguration)"
            )
        if self.deletion_rules:
            if {"shutdown_after_finish", "ttl_seconds"} & given:
                raise ValueError(
                    "deletion_rules replace shutdown_after_finish and ttl_seconds (KubeRay "
                    "refuses both together): drop them and give after_seconds per rule"
                )
            self._check_rules()
        return self

    def _entrypoint_fits(self, head: Resources) -> None:
        why = self.entrypoint_problem(head, self.head_ray_start, self.workers)
        if why is not None:
            raise ValueError(why)

    def entrypoint_problem(
        self, head: Resources, head_start: RayStart | None, workers: list[WorkerGroup]
    ) -> str | None:
        """Why no Ray node of this head and these groups can run the entrypoint, or None.
        Ray runs it on a node with what it reserves free (Ray 2.60.0
        dashboard/modules/job/job_manager.py: the supervisor actor is scheduled with
        entrypoint_num_cpus, _gpus and _resources); with no such node it waits for ever,
        and the RayJob with it."""
        wanted: dict[str, float] = dict(self.entrypoint_resources)
        if self.entrypoint_cpus:
            wanted["CPU"] = self.entrypoint_cpus
        if self.entrypoint_gpus:
            wanted["GPU"] = self.entrypoint_gpus
        if not wanted:
            return None
        nodes = [("the head", ray_node(head, head_start))]
        nodes += [(f"worker group {g.name!r}", ray_node(g.resources, g.ray_start)) for g in workers]
        if any(all(has.get(k, 0) >= v for k, v in wanted.items()) for _, has in nodes):
            return None
        asked = ", ".join(f"{k} {_number(v)}" for k, v in sorted(wanted.items()))
        offered = "; ".join(
            f"{where}: "
            + (", ".join(f"{k} {_number(v)}" for k, v in sorted(has.items())) or "none")
            for where, has in nodes
        )
        return (
            f"the entrypoint reserves {asked}, which no Ray node has ({offered}): Ray would "
            "wait for such a node for ever; lower entrypoint_cpus, entrypoint_gpus or "
            "entrypoint_resources, or give a group what they ask (ray_start=RayStart(...))"
        )

    def _check_rules(self) -> None:
        seen: dict[str, dict[str, int]] = {}
        for rule in self.deletion_rules:
            per = seen.setdefault(rule.when, {})
            if rule.delete in per:
                raise ValueError(
                    f"two deletion rules delete {rule.delete!r} when {rule.when!r}; keep one"
                )
            if rule.delete == "workers" and self.autoscaled:
                raise ValueError(
                    "delete='workers' is refused by KubeRay when a group autoscales "
                    "(validateDeletionRules); use delete='cluster'"
                )
            per[rule.delete] = rule.after_seconds
        for when, ttls in seen.items():
            # validateTTLConsistency: workers, then the cluster, never the reverse.
            if "workers" in ttls and "cluster" in ttls and ttls["cluster"] < ttls["workers"]:
                raise ValueError(
                    f"when {when!r}, the cluster would be deleted ({ttls['cluster']} s) before "
                    f"its workers ({ttls['workers']} s); KubeRay refuses it: give the cluster "
                    "rule an after_seconds at least the workers'"
                )

    @property
    def autoscaled(self) -> bool:
        """Whether a group scales (KubeRay's ``enableInTreeAutoscaling``)."""
        return any(low != high for low, high in (g.scaling for g in self.workers))

    @property
    def nodes(self) -> int:
        """Ray pods the job starts with: the head and every group's pods; none on an
        existing RayCluster."""
        if self.ray_cluster is not None:
            return 0
        return 1 + sum(g.pods for g in self.workers)
