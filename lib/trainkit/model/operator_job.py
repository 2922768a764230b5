"""What every operator-run job kind (PyTorchJob, MPIJob, TFJob, PaddleJob, …) says the same way.

The kinds differ in their roles and launchers; the pod settings, the run policy and
the placement are one set of fields, declared once here so every kind reads them alike.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..injected_env import refused_env_reason
from .base import TrainkitModel
from .env import EnvRef, EnvSource, check_env_refs, env_from_validator
from .fields import (
    AnnotationValue,
    Arg,
    ClusterRef,
    DNS1035Name,
    DNS1123Label,
    EnvName,
    EnvValue,
    LabelKey,
    LabelValue,
    MemoryQuantity,
    ObjectName,
    Path,
)
from .init_containers import InitContainer, check_init_containers
from .job import Image, Resources, Script, Toleration, check_program
from .lifecycle import Hook, check_hooks
from .placement import (
    KueueTopology,
    NodeLabel,
    PodAffinity,
    Topology,
    check_pod_affinity,
    one_topology_annotation,
)
from .pod_metadata import job_keys_refused, own_keys_refused
from .pod_settings import (
    HostName,
    IPAddress,
    PortName,
    PortNumber,
    check_host_aliases,
    check_ports,
)
from .probes import Probe, check_probes
from .security import ContainerSecurityContext, SecurityContext, check_security
from .volumes import (
    AnyVolume,
    check_group_volumes,
    check_volumes,
    check_workspace,
    volume_name,
)

__all__ = ["MAX_RUN", "OperatorJob", "PodJob", "Role", "RoleJob", "refuse_always", "run_name"]

MAX_RUN = 9999


def run_name(name: str, run: int | None) -> str:
    """The Kubernetes name of a job's run: ``<name>-r<run>``, or the name without a run."""
    return name if run is None else f"{name}-r{run}"


def refuse_always(value: Any, who: str) -> Any:
    """A restart policy of ``Always`` is refused: ``who`` restarted after exiting 0 keeps the
    job from ever succeeding."""
    if value == "Always":
        raise ValueError(
            f"'Always' restarts {who} even after it exits 0, so the job never succeeds; use "
            "'OnFailure' or 'ExitCode'"
        )
    return value


class Role(TrainkitModel):
    """Settings of one role (an MPIJob's launcher, a TFJob's parameter servers, a PyTorchJob's
    Master) that differ from the job's; a setting left out is the job's. Each one passes the
    same checks as the job's own: registries, caps, queue counts, granted tolerations and the
    variables the operator sets."""

    replicas: int = Field(default=1, ge=1, le=10000)
    """Pods of the role."""
    image: Image | None = None
    """The role's image instead of the job's, e.g. a CPU image for parameter servers; one per
    cluster or accelerator as for the job's ``image``. It must come from a registry the
    platform allows."""
    resources: Resources | None = None
    """CPU, memory and GPUs of each of the role's pods."""
    command: list[Arg] | None = None
    """The role's command instead of the job's (or instead of the script's launcher), e.g. a
    parameter server's own entrypoint or an MPI worker's own sshd."""
    args: list[Arg] | None = None
    """The role's arguments instead of the job's ``args``."""
    env: dict[EnvName, EnvValue] = {}
    """Variables of the role's pods on top of the job's ``env`` (a name in both takes the
    role's value); those the operator sets itself are refused, as in the job's."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] | None = None
    """What the operator does when one of the role's pods fails, instead of the job's
    ``restart_policy`` (each replica type has its own in the operators). ``Always`` is
    refused."""
    node_selector: dict[LabelKey, LabelValue] | None = None
    """Node labels the role's pods must run on, instead of the job's."""
    tolerations: list[Toleration] | None = None
    """Taints the role's pods tolerate, instead of the job's (only those the Cluster
    allows): ``[]`` keeps a CPU role off tainted GPU nodes the job tolerates."""
    security_context: SecurityContext | None = None
    """Who the role's containers run as, instead of the job's ``security_context``, e.g.
    ``SecurityContext(run_as_user=1000)`` for a launcher whose image has its own user; the
    same grants hold for its seccomp and AppArmor profiles."""
    container_security_context: ContainerSecurityContext | None = None
    """The role's container's own settings, instead of the job's
    ``container_security_context``; it can only narrow what the container may do."""
    volumes: list[AnyVolume] = []
    """Volumes mounted on the role's pods only, beside the job's ``volumes`` (which every pod
    running the job's code gets), e.g. ``[SecretVolume(secret="ps-certs", path="/etc/ps")]``
    for parameter servers; held to the same grants and rules as the job's, and named and
    placed apart from them. An MPI launcher that runs no ranks gets its own but not the
    job's."""

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        return refuse_always(value, "the role")

    @model_validator(mode="after")
    def _security(self) -> Role:
        check_security(self.security_context, self.container_security_context)
        return self


class PodJob(TrainkitModel):
    """The pod settings every operator-run job kind shares (not a kind itself): what the
    pods run, their environment, mounts, placement and access."""

    name: DNS1035Name
    """Job name, unique in the team's namespace on each cluster."""
    run: int | None = Field(default=None, ge=1, le=MAX_RUN)
    """Run number: the object is then named ``<name>-r<run>``; raise it to run an edited job
    (a deployed job is never changed in place). Without it the object keeps its name."""
    image: Image
    """Container image, e.g. ``registry.example.com/ml/pytorch:2.5.1-cuda12.4``; or one per
    cluster or per accelerator the cluster declares: ``{"cuda": "…", "rocm": "…"}``."""
    script: Script | None = None
    """Training script next to the definition (``Script.file(...)``), shipped in a ConfigMap
    and started by the kind's launcher."""
    command: list[Arg] | None = None
    """Command for images that carry their own code (instead of ``script``). With neither,
    the image's ENTRYPOINT runs (with ``args`` as its arguments)."""
    args: list[Arg] = []
    """Arguments passed to the script, the command or the image's ENTRYPOINT."""
    env: dict[EnvName, EnvValue] = {}
    """Extra environment variables (those the operator sets itself are refused)."""
    env_refs: dict[EnvName, EnvRef] = {}
    """Variables read when the pod starts from a key of a Secret or ConfigMap the Team grants,
    e.g. ``{"HF_TOKEN": SecretKey(secret="hf-token", key="token")}``: the value never enters
    git."""
    env_from: list[EnvSource] = []
    """Whole Secrets or ConfigMaps as variables, one per key: ``[SecretEnv(secret="wandb")]``.
    Only ones the Team grants with every key they hold, since an unseen key could set any
    variable (a device-visibility one, say)."""
    shm_size: MemoryQuantity | None = None
    """Size of ``/dev/shm`` (memory-backed emptyDir), e.g. ``"20Gi"`` for data loaders, NCCL."""
    volumes: list[AnyVolume] = []
    """Volumes mounted on every node: claims (``Volume(claim=…)``), scratch space
    (``EmptyDir``), Secret and ConfigMap files (``SecretVolume``, ``ConfigMapVolume``),
    tokens for other systems (``ServiceAccountToken``), CSI volumes (``CsiVolume``)."""
    node_selector: dict[LabelKey, LabelValue] = {}
    """Node labels the pods must run on, e.g. ``{"gpu.product": "A100"}``."""
    tolerations: list[Toleration] = []
    """Taints the pods tolerate (only those the Cluster allows)."""
    node_affinity: list[NodeLabel] = []
    """Node label rules beyond ``node_selector``: ``NodeLabel(key=…, operator="In",
    values=[…])`` is required, one with ``weight=`` preferred."""
    kueue_topology: KueueTopology | None = None
    """On a Kueue cluster whose flavor has a Topology: where Kueue places the pods together,
    ``KueueTopology(level="example.com/topology-rack", required=True)`` (the
    ``kueue.x-k8s.io/podset-required-topology`` or ``podset-preferred-topology`` annotation
    of each pod template)."""
    topology: Topology | None = None
    """How the job's pods lie across racks or zones: ``Topology(key="rack", layout="pack")``
    keeps NCCL traffic in one rack where it can, ``layout="spread"`` spreads the pods."""
    pod_affinity: list[PodAffinity] = []
    """Near or away from pods with labels the job sets, per node, rack or zone:
    ``PodAffinity(labels={"example.com/shard": "a"}, anti=True)`` (required), or preferred
    with ``weight=``."""
    queue: DNS1123Label | None = None
    """Volcano queue; defaults to the team's first queue."""
    clusters: list[ClusterRef] | None = None
    """Clusters to run on; defaults to the team's clusters."""
    network: DNS1123Label | None = None
    """A ``NetworkProfile`` declared in ``jobs/platform/`` (e.g. ``"rdma"``): the capabilities,
    device resources, host network and env its pods get. Nothing else can ask for them;
    privileged containers are never generated."""
    service_account: ObjectName | None = None
    """ServiceAccount the pods run as, one the Team lists in ``service_accounts``; default:
    the namespace's ``default``."""
    image_pull_secrets: list[ObjectName] = []
    """Secrets to pull the image with, ones the Team lists in ``image_pull_secrets``."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    """When the kubelet pulls the image; default: Kubernetes' (``Always`` for ``:latest``
    or no tag, else ``IfNotPresent``)."""
    priority_class: ObjectName | None = None
    """PriorityClass of the pods and of Volcano's PodGroup, one the Team lists in
    ``priority_classes``."""
    workload_priority: DNS1123Label | None = None
    """On a Kueue cluster: the WorkloadPriorityClass Kueue admits and preempts the job by (the
    pods keep their own priority), one the Team lists in ``workload_priority_classes``."""
    pod_labels: dict[LabelKey, LabelValue] = {}
    """Labels of every pod, e.g. ``{"example.com/cost-center": "vision"}``. A key under a
    prefix a controller acts on (``kueue.x-k8s.io/``, ``volcano.sh/``, ``kubernetes.io/``, …)
    needs the Team's grant (``pod_metadata_keys``); ``trainkit.dev/`` keys are trainkit's."""
    pod_annotations: dict[LabelKey, AnnotationValue] = {}
    """Annotations of every pod, e.g. ``{"example.com/owner": "ml-infra"}``; the same keys
    as ``pod_labels`` need a grant."""
    labels: dict[LabelKey, LabelValue] = {}
    """Labels of the job object itself (the PyTorchJob, MPIJob, RayJob, … that Argo CD
    syncs), e.g. ``{"example.com/cost-center": "vision"}`` for what lists or bills jobs. No
    operator copies them to the pods (use ``pod_labels``); KubeRay copies a RayJob's to the
    RayCluster it creates. The same keys as ``pod_labels`` need a grant; the keys trainkit
    sets on the job (the Kueue and Volcano queues, the priorities, Argo CD's sync wave) are
    refused."""
    annotations: dict[LabelKey, AnnotationValue] = {}
    """Annotations of the job object itself, e.g.
    ``{"sagemaker.amazonaws.com/job-max-retry-count": "2"}`` for a tool that reads jobs.
    The Training Operator copies them to the Volcano PodGroup it creates, KubeRay a RayJob's
    to its RayCluster; none reach a pod (use ``pod_annotations``). The same keys as
    ``pod_labels`` need a grant and trainkit's own are refused."""
    security_context: SecurityContext | None = None
    """Who every container of the pods runs as: ``SecurityContext(run_as_user=1000,
    fs_group=1000, run_as_non_root=True)``, seccomp and AppArmor profiles (``"Unconfined"``
    or a node's profile only where the Team grants it). Default: the image's user."""
    container_security_context: ContainerSecurityContext | None = None
    """The job's container's own settings over ``security_context``, e.g.
    ``ContainerSecurityContext(allow_privilege_escalation=False, drop_capabilities=["ALL"])``;
    it can only narrow what the container may do."""
    init_containers: list[InitContainer] = []
    """Containers of every pod that runs the job's code besides the job's own:
    ``InitContainer(...)`` runs to completion before it, ``InitContainer(sidecar=True, ...)``
    beside it (a native sidecar, stopped when it ends). An MPI launcher that runs no ranks and
    KubeRay's submitter get none."""
    working_dir: Path | None = None
    """The job's container's working directory (``workingDir``), e.g. ``"/mnt/code"``; relative
    paths the program opens are read from there. Default: ``/workspace`` with a script (the
    script stays at ``/workspace/<file>``), else the image's."""
    termination_grace_period: int | None = Field(default=None, ge=0, le=86400)
    """Seconds the pods get to stop after SIGTERM (deleted, preempted, evicted) before they are
    killed, e.g. ``120`` to write a checkpoint; default Kubernetes' 30. A pod keeps its GPUs
    until it has stopped, so ``Policy.max_termination_grace_period`` caps it."""
    host_aliases: dict[IPAddress, list[HostName]] = {}
    """Extra lines of every pod's ``/etc/hosts``: ``{"10.0.0.5": ["minio.lab.internal"]}``
    (``hostAliases``), for a name the cluster's DNS does not know."""

    ports: dict[PortName, PortNumber] = {}
    """Ports the job's program listens on, by name: ``{"metrics": 9090}`` (TCP
    ``containerPort``s, beside the operator's own, whose numbers and names are refused). They
    open nothing (no Service, no NetworkPolicy): they name the port for monitoring and for
    ``kubectl port-forward``. On the host network each is also the node's port (``hostPort``),
    so no two pods using it share a node."""

    readiness_probe: Probe | None = None
    """When the job's container counts as ready (``readinessProbe``), e.g.
    ``Probe(http_get="/healthz", port="status")``; it kills nothing. Only on a RayJob: the
    other operators' Services hide a pod that is not ready from the others' DNS."""
    liveness_probe: Probe | None = None
    """When the kubelet kills the job's container as hung (``livenessProbe``). A killed rank
    fails or hangs the whole job (see ``Probe``), so it must fail for at least 60 s
    (``failure_threshold`` × ``period``) first."""
    startup_probe: Probe | None = None
    """What must pass once before the other probes start (``startupProbe``), for a slow
    start; the kubelet kills the container when it never does."""
    post_start: Hook | None = None
    """What the kubelet runs in the job's container right after it starts
    (``lifecycle.postStart``), e.g. ``Hook(exec=["sh", "-c", "nvidia-smi -L"])``; the
    container counts as running only once it has ended, and fails when it fails."""
    pre_stop: Hook | None = None
    """What the kubelet runs in the job's container before stopping it (``lifecycle.preStop``),
    e.g. ``Hook(exec=["ray", "stop"])``; it spends the ``termination_grace_period`` (SIGTERM
    comes after it), so a ``sleep`` must be shorter than that."""

    @field_validator("ports")
    @classmethod
    def _ports(cls, ports: dict[str, int]) -> dict[str, int]:
        return check_ports(ports, cls.__name__)

    @field_validator("host_aliases")
    @classmethod
    def _aliases(cls, aliases: dict[str, list[str]]) -> dict[str, list[str]]:
        return check_host_aliases(aliases)

    @field_validator("pod_labels", "pod_annotations")
    @classmethod
    def _not_trainkits(cls, meta: dict[str, str]) -> dict[str, str]:
        return own_keys_refused(meta)

    @field_validator("labels", "annotations")
    @classmethod
    def _not_trainkits_job_keys(cls, meta: dict[str, str]) -> dict[str, str]:
        return job_keys_refused(meta)

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, env: dict[str, str]) -> dict[str, str]:
        bad = [(k, why) for k in env if (why := refused_env_reason(k, cls.__name__))]
        if bad:
            raise ValueError(
                "; ".join(f"{k} may not be set: {why}" for k, why in bad) + " — remove it from env"
            )
        return env

    @field_validator("env_refs")
    @classmethod
    def _refs(cls, refs: dict[str, EnvRef], info: Any) -> dict[str, EnvRef]:
        check_env_refs(info.data.get("env", {}), refs, cls.__name__)
        return refs

    _sources = env_from_validator()

    @model_validator(mode="after")
    def _one_program(self) -> PodJob:
        check_program(self.script, self.command, "the image's ENTRYPOINT runs")
        check_volumes(self.volumes)
        check_workspace(self.volumes, self.script)
        return self

    @model_validator(mode="after")
    def _pod_rules(self) -> PodJob:
        # A validator of its own: a kind's _one_program (RayJob's) replaces the one above.
        check_security(self.security_context, self.container_security_context)
        check_init_containers(self.init_containers, [volume_name(v) for v in self.volumes])
        one_topology_annotation(self.kueue_topology, self.pod_annotations)
        check_pod_affinity(self.pod_affinity, self.pod_labels)
        check_probes(
            {
                "readiness_probe": self.readiness_probe,
                "liveness_probe": self.liveness_probe,
                "startup_probe": self.startup_probe,
            },
            self.ports,
            type(self).__name__,
        )
        # A Ray worker group's own pre_stop (WorkerGroup) spends the same grace period (other
        # kinds' ``workers`` is a count).
        workers = getattr(self, "workers", None)
        groups = {
            f"workers[{i}].pre_stop": getattr(group, "pre_stop", None)
            for i, group in enumerate(workers if isinstance(workers, list) else [])
        }
        check_hooks(
            {"post_start": self.post_start, "pre_stop": self.pre_stop, **groups},
            self.ports,
            self.termination_grace_period,
        )
        return self

    @property
    def object_name(self) -> str:
        """The Kubernetes name: ``<name>-r<run>`` with a run number, else the name."""
        return run_name(self.name, self.run)

    def _check_longest_name(self, longest: str, pods: str) -> None:
        """Raise when the operator's longest pod (and Service) name is no DNS label: the
        operator could create the job but not its pods."""
        if len(longest) > 63:
            raise ValueError(
                f"name {self.name!r} is too long for {pods}: the operator's Service "
                f"{longest!r} would exceed 63 characters; shorten the name to "
                f"{63 - len(longest) + len(self.name)} characters"
            )


class OperatorJob(PodJob):
    """Fields every kubeflow.org-style operator job shares (not a kind itself): its nodes'
    resources and the run policy."""

    resources: Resources
    """CPU, memory and GPUs of each node."""
    backoff_limit: int = Field(default=3, ge=0)
    """Restarts before the whole job is marked failed; without a limit a crashing job would
    restart forever, holding its gang's GPUs."""
    clean_pods: Literal["Running", "All", "None"] = "Running"
    """Pods deleted when the job ends: ``Running`` (the default) stops hung workers so they
    release their GPUs; ``All`` also removes finished pods; ``None`` keeps them for debugging."""
    deadline_seconds: int | None = Field(default=None, ge=1)
    """Fail the job when it has run this long, counted from when the operator creates its pods
    (``status.startTime``: once Volcano admits the gang, or Kueue the job, so time queued does
    not count; an MPIJob's is its launcher's, see there)."""

    ROLE_FIELDS: ClassVar[dict[str, str]] = {}
    """The kind's role fields and the replica type each sets (``{"ps": "PS", …}``); the
    replica types not named here run the job's own settings."""

    def roles(self) -> dict[str, Role]:
        """The roles the job gives, by field name, in ``ROLE_FIELDS`` order."""
        return {f: r for f in self.ROLE_FIELDS if (r := getattr(self, f)) is not None}

    def group_volume_fields(self) -> list[tuple[str, AnyVolume]]:
        """Each role's own volumes, with their fields (``ps.volumes[0]``)."""
        return [
            (f"{field}.volumes[{i}]", v)
            for field, role in self.roles().items()
            for i, v in enumerate(role.volumes)
        ]

    def security_contexts(
        self, role: Role | None
    ) -> tuple[SecurityContext | None, ContainerSecurityContext | None]:
        """The pod's and the container's security context of ``role``'s pods: each the
        role's where it gives one, else the job's."""
        pod, own = self.security_context, self.container_security_context
        if role is not None:
            pod = role.security_context or pod
            own = role.container_security_context or own
        return pod, own

    def role(self, name: str) -> Role | None:
        """The settings of replica type ``name``; None where it runs the job's own."""
        for field, rtype in self.ROLE_FIELDS.items():
            if rtype == name:
                role: Role | None = getattr(self, field)
                return role
        return None

    @model_validator(mode="after")
    def _role_env(self) -> OperatorJob:
        # The operator injects the same variables into every replica type's container
        # (training-operator v1.9.4 pkg/controller.v1/common/pod.go createNewPod calls the
        # kind's SetClusterSpec for each rtype), so a role may not set them either.
        kind = type(self).__name__
        bad = []
        for field, role in self.roles().items():
            for name in role.env:
                why = refused_env_reason(name, kind)
                if why is not None:
                    bad.append(f"{field}.env: {name} may not be set: {why}")
                elif name in self.env_refs:
                    bad.append(
                        f"{field}.env: {name} is read from a Secret or ConfigMap by the job's "
                        "env_refs, for every pod; drop it from one of them"
                    )
        if bad:
            raise ValueError("; ".join(bad) + " — remove it from the role's env")
        return self

    @model_validator(mode="after")
    def _role_pods(self) -> OperatorJob:
        # A role's pods get the job's volumes and its own, and each level's security context
        # from the role where it gives one (render/operator_pod.py role_template): the kubelet
        # must accept the pair, and the volumes' names and paths be unique, clear of the script.
        for field, role in self.roles().items():
            try:
                check_security(*self.security_contexts(role))
            except ValueError as e:
                raise ValueError(f"{field}, with the job's security contexts: {e}") from None
            check_group_volumes(self.volumes, role.volumes, f"the {field} pods", f"{field}.volumes")
            check_workspace(role.volumes, self.script, field=f"{field}.volumes")
        return self


class RoleJob(OperatorJob):
    """An operator job of Workers and named roles (TFJob, PaddleJob, XGBoostJob, JAXJob), not a kind itself: each
    role is a ``Role`` whose settings left out are the job's."""

    nodes: int = Field(default=1, ge=1, le=10000)
    """Worker pods; each gets ``resources``."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] = "OnFailure"
    """What the operator does when a pod fails; ``ExitCode`` retries only exit codes ≥ 128.
    ``Always`` is refused: a Worker restarted after exit 0 never lets the job succeed."""

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        return refuse_always(value, "a Worker")

    def replica_counts(self) -> dict[str, int]:
        """Pods per replica type in the order the pods are listed, the absent ones left out."""
        raise NotImplementedError

    def _check_role_names(self) -> None:
        """The operator names pods and Services ``<job>-<type>-<index>``; each a DNS label."""
        for rtype, count in self.replica_counts().items():
            self._check_longest_name(
                f"{self.object_name}-{rtype.lower()}-{count - 1}", f"{count} {rtype} pods"
            )
