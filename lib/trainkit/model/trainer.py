"""Kubeflow Trainer v2.3 definitions: torch runtimes and the TrainJobs that name them.

A platform engineer declares runtimes in ``jobs/platform/`` (what every job of
a kind shares: image, nodes, resources, shared memory, network env); an ML
engineer's ``TrainJob`` names one and overrides only what differs.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator, model_validator

from ..injected_env import refused_env_reason
from ..kube.names import DNS1123_SUBDOMAIN
from .base import TrainkitModel
from .env import (
    EnvRef,
    EnvSource,
    env_from_validator,
    env_refs_validator,
    own_pod_refs_refused,
)
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
from .init_containers import InitContainer
from .job import Image, Resources, Script, Toleration, check_program
from .lifecycle import Hook
from .placement import KueueTopology, NodeLabel, Topology, one_topology_annotation
from .pod_metadata import job_keys_refused, own_keys_refused
from .pod_settings import PortName, PortNumber, check_ports
from .probes import Probe
from .pytorchjob import MAX_RUN, run_name
from .runtime_node import RUNTIME_KIND, check_runtime_node
from .security import ContainerSecurityContext, SecurityContext, check_security
from .trainer_flux import RuntimeFlux, flux_command_problem, tasks_gpus_problem
from .trainer_initializers import DataSource, RuntimeInitializers
from .volumes import AnyVolume, check_volumes, check_workspace

__all__ = [
    "ClusterTrainingRuntime",
    "RuntimeFlux",
    "RuntimeMPI",
    "TrainJob",
    "TrainingRuntime",
    "trainjob_object_name",
]


_VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"

# generated/ holds a runtime as trainingruntime-<name>.yaml: a file name has at most 255 bytes.
_MAX_RUNTIME_NAME = 200


def _runtime_name(name: str) -> str:
    if len(name) > _MAX_RUNTIME_NAME:
        raise ValueError(
            f"{name[:20]!r}… has {len(name)} characters; a runtime name has at most "
            f"{_MAX_RUNTIME_NAME} (its file under generated/ is named after it): shorten it"
        )
    return name


RuntimeName = Annotated[
    ObjectName,
    AfterValidator(_runtime_name),
    WithJsonSchema(
        {"type": "string", "pattern": f"^{DNS1123_SUBDOMAIN.pattern}$", "maxLength": 200}
    ),
]


def _refuse_reserved(env: dict[str, str]) -> dict[str, str]:
    bad = [(k, why) for k in env if (why := refused_env_reason(k, "TrainJob"))]
    if bad:
        raise ValueError(
            "; ".join(f"{k} may not be set: {why}" for k, why in bad) + " — remove it from env"
        )
    return env


class RuntimeMPI(TrainkitModel):
    """Makes a runtime an MPI runtime (Trainer's ``mlPolicy.mpi``, Open MPI only): a launcher
    pod runs the TrainJob's command against the hostfile of ``nodes`` node pods running sshd."""

    procs_per_node: int = Field(default=1, ge=1, le=1024)
    """Slots per node in the hostfile; Trainer turns 1 into the node's GPU count."""
    ssh_dir: Path = "/root/.ssh"
    """Where Trainer mounts the generated ssh keys: the ``.ssh`` of the user the image runs as
    (``/home/mpiuser/.ssh`` for Kubeflow's DeepSpeed image)."""
    launcher_as_node: bool = False
    """The launcher runs ranks too (``runLauncherAsNode``): it is the first host of the hostfile,
    has the runtime's resources and counts as one of the TrainJob's nodes."""
    sshd: list[Arg] = ["/usr/sbin/sshd", "-De"]
    """Command of the node pods: an ssh server in the foreground."""
    ssh_port: int = Field(default=22, ge=1, le=65535)
    """Port sshd listens on: the node pods are ready once it accepts connections."""
    probe_delay: int = Field(default=0, ge=0, le=300)
    """Seconds after a node starts before the kubelet first checks that sshd accepts
    connections on ``ssh_port`` (the readiness probe's ``initialDelaySeconds``), e.g. ``5``
    as Kubeflow's deepspeed and mlx runtimes wait; without Volcano the launcher starts once
    every node passed the check, so the delay only postpones it (at most 300 s)."""
    launcher: Resources = Resources(cpu="1", memory="2Gi")
    """The launcher's resources when it runs no ranks (it only starts them over ssh)."""


# Trainer v2.3.0's runtimes label each with the framework it runs (manifests/base/runtimes/
# *.yaml: torch, torchtune, jax, xgboost, deepspeed, mlx); deepspeed and mlx run on mlPolicy.mpi.
_ON_MPI = ("deepspeed", "mlx")
_MPI_FRAMEWORKS = ("torch", *_ON_MPI)


class _TorchRuntime(TrainkitModel):
    """Fields every runtime has, cluster-wide or namespaced."""

    name: RuntimeName
    """Runtime name that TrainJobs give as ``runtime=``, a DNS subdomain (dots allowed, as in
    Trainer's ``torchtune-llama3.2-1b``) of at most 200 characters; version it
    (``torch-2-5``) instead of editing one that jobs use."""
    image: str = Field(min_length=1, pattern=r"^\S+$")
    """Default container image of every node, e.g. ``pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime``."""
    command: list[Arg] | None = Field(default=None, min_length=1)
    """Command of every node for TrainJobs that give neither ``script`` nor ``command`` (a
    TrainJob's replaces it; its ``args`` follow it), e.g. torchtune's ``["tune", "run",
    "--rdzv_endpoint=localhost:29500", "full_finetune_distributed", "--config", …]``; default:
    the image's. Not on an MPI runtime, whose nodes run ``sshd``."""
    nodes: int = Field(default=1, ge=1, le=10000)
    """Default number of nodes (pods) of a TrainJob."""
    resources: Resources | None = None
    """Default CPU, memory and GPUs of each node."""
    shm_size: MemoryQuantity | None = None
    """Size of ``/dev/shm`` (memory-backed emptyDir) on every node, e.g. ``"16Gi"``."""
    env: dict[EnvName, EnvValue] = {}
    """Environment of every node, e.g. NCCL network settings (``PET_*`` are refused)."""
    env_refs: dict[EnvName, EnvRef] = {}
    """Variables of every node read from a key of a Secret or ConfigMap of the TrainJob's
    namespace (a TrainingRuntime: ones its Team grants)."""
    env_from: list[EnvSource] = []
    """Secrets and ConfigMaps of the TrainJob's namespace taken whole, every key a variable
    (``envFrom``): each TrainJob's Team must list the source with every key it holds, since
    the keys are the team's, not the platform's."""
    node_selector: dict[LabelKey, LabelValue] = {}
    """Node labels the pods must run on."""
    tolerations: list[Toleration] = []
    """Taints the pods tolerate."""
    node_affinity: list[NodeLabel] = []
    """Node label rules beyond ``node_selector`` (required, or preferred with ``weight=``)."""
    queue: DNS1123Label | None = None
    """Volcano queue for TrainJobs that name none (trainkit's TrainJobs always name one)."""
    clusters: list[ClusterRef] | None = None
    """Clusters the runtime exists on; ``None`` means every cluster."""
    network: DNS1123Label | None = None
    """A ``NetworkProfile`` declared in ``jobs/platform/`` (e.g. ``"rdma"``) that every node gets;
    the TrainJobs on this runtime inherit it."""
    service_account: ObjectName | None = None
    """ServiceAccount every node runs as (of the TrainJob's namespace); a TrainingRuntime may
    name only one its Team lists."""
    image_pull_secrets: list[ObjectName] = []
    """Secrets to pull the image with (of the TrainJob's namespace)."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    """When the kubelet pulls the image; default: Kubernetes'."""
    priority_class: ObjectName | None = None
    """PriorityClass of every node and of Volcano's PodGroup."""
    mpi: RuntimeMPI | None = None
    """An MPI runtime instead of a torch one (``RuntimeMPI()``): DeepSpeed or Horovod on the
    Trainer path; its TrainJobs run ``mpirun`` on the launcher. It needs ``run_as_user`` and
    ``fs_group``."""
    run_as_user: int | None = Field(default=None, ge=0, le=2147483647)
    """User id every container of the pods runs as (``securityContext.runAsUser``), e.g.
    ``1000``; default: the image's. An MPI runtime needs one other than 0."""
    fs_group: int | None = Field(default=None, ge=0, le=2147483647)
    """Group id that owns the pods' volumes and is added to their processes
    (``securityContext.fsGroup``), e.g. ``1000``. An MPI runtime needs one."""
    initializers: RuntimeInitializers | None = None
    """Steps that download a dataset and/or a model into a workspace volume before the nodes
    start (``RuntimeInitializers(dataset=Initializer(...), size="200Gi")``); the nodes read
    them at ``/workspace/dataset`` and ``/workspace/model``. Not on Volcano clusters."""
    flux: RuntimeFlux | None = None
    """A Flux runtime instead of a torch one (``RuntimeFlux(view_image=...)``): Trainer
    installs Flux into the nodes and its TrainJobs run their command with ``flux run`` from
    the first node, ``procs_per_node`` tasks per node (HPC and MPI programs)."""
    webhook_validation: bool = True
    """``False`` labels the runtime ``trainer.kubeflow.org/webhook-validation: disabled``, as
    Trainer labels its own runtimes ("validated ahead of time"): Trainer's runtime webhooks
    then skip it, so it applies while Trainer's controller, which serves them, is not up yet
    (both synced together). They check only what trainkit always renders (one replica of each
    step's job, the step's container name); TrainJobs are still validated."""
    framework: Literal["torch", "torchtune", "jax", "xgboost", "deepspeed", "mlx"] = "torch"
    """The framework the runtime runs, which picks Trainer's ML policy of the nodes and is
    written as the ``trainer.kubeflow.org/framework`` label (the Kubeflow SDK lists runtimes
    by it and picks its trainer by it): ``torch`` (torchrun with the ``PET_*`` variables;
    with ``mpi=`` the label says ``mpi``), ``torchtune`` (the torch policy, for torchtune's
    ``tune run``), ``jax`` (one process per node, ``JAX_COORDINATOR_ADDRESS``,
    ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``), ``xgboost`` (one process per node, XGBoost's
    tracker on the first node: ``DMLC_TRACKER_URI``, ``DMLC_TRACKER_PORT``, ``DMLC_TASK_ID``,
    ``DMLC_NUM_WORKER``), ``deepspeed`` or ``mlx`` (the MPI policy: they need ``mpi=``). A
    TrainJob's script runs with ``torchrun``, else ``python3``."""
    init_containers: list[InitContainer] = []
    """Containers of every node pod besides ``node``, the one running the training:
    ``InitContainer(...)`` runs to completion before it, ``InitContainer(sidecar=True, ...)``
    beside it (a native sidecar, stopped when it ends). Default image: the runtime's (a
    TrainJob's ``image`` replaces only the node container's); ``mounts`` may name ``dshm``
    (``shm_size``) and ``initializer`` (the initializers' workspace). An MPI launcher that
    runs no ranks and the initializer steps get none. Counted as the scheduler counts them
    (the larger of the biggest init container and the containers plus sidecars) in every
    TrainJob's quota, caps and gang."""
    ports: dict[PortName, PortNumber] = {}
    """Ports the training program listens on, by name: ``{"metrics": 9090}`` (TCP
    ``containerPort``s of the node container beside Trainer's 29500; that number and the
    Flux broker's 8050 are refused). They open nothing: they name the port for monitoring
    and ``kubectl port-forward``; on a host-network profile each is also the node's port."""
    readiness_probe: Probe | None = None
    """When the node container counts as ready (``readinessProbe``); it kills nothing, and
    hides no node from the others (JobSet publishes not-ready pods' names). Not on an MPI
    runtime, whose nodes are ready once sshd accepts connections."""
    liveness_probe: Probe | None = None
    """When the kubelet kills the node container as hung (``livenessProbe``). A killed rank
    fails or hangs the whole job, so it must fail for at least 60 s (``failure_threshold``
    × ``period``) first."""
    startup_probe: Probe | None = None
    """What must pass once before the other probes start (``startupProbe``), for a slow
    start; the kubelet kills the container when it never does."""
    post_start: Hook | None = None
    """What the kubelet runs in the node container right after it starts
    (``lifecycle.postStart``), e.g. ``Hook(exec=["sh", "-c", "nvidia-smi -L"])``."""
    pre_stop: Hook | None = None
    """What the kubelet runs in the node container before stopping it
    (``lifecycle.preStop``); it spends the pod's grace period (SIGTERM comes after it), so a
    ``sleep`` must be shorter than it (30 s, or a TrainJob's ``termination_grace_period``)."""

    @field_validator("ports")
    @classmethod
    def _ports(cls, ports: dict[str, int]) -> dict[str, int]:
        return check_ports(ports, RUNTIME_KIND)

    @model_validator(mode="after")
    def _node_settings(self) -> _TorchRuntime:
        check_runtime_node(self)
        return self

    @model_validator(mode="after")
    def _one_policy(self) -> _TorchRuntime:
        # The CRD's CEL rule on mlPolicy: "Only one of the policy can be configured".
        if self.flux is not None and self.mpi is not None:
            raise ValueError(
                "flux= and mpi= are two ML policies; Trainer takes one: drop one of them"
            )
        if self.flux is not None and self.framework != "torch":
            raise ValueError(
                f"framework={self.framework!r} and flux= are two ML policies; Trainer takes "
                "one: drop flux= or framework="
            )
        if self.command is not None and self.mpi is not None:
            raise ValueError(
                "command= on an MPI runtime has no place: its nodes run sshd (mpi.sshd) and the "
                "launcher runs each TrainJob's mpirun; give the TrainJobs their command"
            )
        if self.initializers is not None and self.mpi is not None:
            raise ValueError(
                "initializers= on an MPI runtime is not offered: the launcher already waits for "
                "the nodes; download in the job's script instead"
            )
        if self.mpi is not None and self.framework not in _MPI_FRAMEWORKS:
            # The CRD's CEL rule on mlPolicy: "Only one of the policy can be configured".
            raise ValueError(
                f"framework={self.framework!r} and mpi= are two ML policies; Trainer takes one: "
                "drop mpi= or framework= (on mpi= it may be 'deepspeed' or 'mlx')"
            )
        if self.mpi is None and self.framework in _ON_MPI:
            # Trainer v2.3.0's own deepspeed and mlx runtimes (manifests/base/runtimes/
            # deepspeed_distributed.yaml, mlx_distributed.yaml) run on mlPolicy.mpi.
            raise ValueError(
                f"framework={self.framework!r} runs on Trainer's MPI policy: add "
                "mpi=RuntimeMPI() (and run_as_user, fs_group), or pick 'torch'"
            )
        return self

    @property
    def ml_policy(self) -> Literal["torch", "jax", "xgboost", "mpi", "flux"]:
        """Trainer's ML policy of the nodes (the ``mlPolicy`` source)."""
        if self.flux is not None:
            return "flux"
        if self.mpi is not None:
            return "mpi"
        if self.framework == "jax":
            return "jax"
        if self.framework == "xgboost":
            return "xgboost"
        return "torch"  # torch and torchtune (deepspeed and mlx come with mpi=)

    @property
    def framework_label(self) -> str:
        """The ``trainer.kubeflow.org/framework`` label: the framework the runtime runs."""
        if self.ml_policy in ("flux", "mpi") and self.framework == "torch":
            return self.ml_policy
        return self.framework

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, env: dict[str, str]) -> dict[str, str]:
        return _refuse_reserved(env)

    _refs = env_refs_validator("TrainJob")
    _sources = env_from_validator()

    @model_validator(mode="after")
    def _flux_fits(self) -> _TorchRuntime:
        if self.flux is None:
            return self
        if self.shm_size is not None:
            # flux.go EnforceMLPolicy mounts its memory-backed volume shared-memory at
            # /dev/shm, upserted by path (pkg/apply/apply.go UpsertVolumeMounts).
            raise ValueError(
                "shm_size cannot be kept: Trainer's Flux plugin mounts its own /dev/shm over it "
                "(memory-backed, read-only, no size limit: it counts against the pod's memory); "
                "drop shm_size"
            )
        if self.command is not None:
            # getOriginalCommand joins the runtime's command like a TrainJob's.
            bad = flux_command_problem(list(self.command))
            if bad is not None:
                raise ValueError(
                    "command: Trainer's Flux plugin joins the command with spaces and its "
                    f"entrypoint splits it again unquoted: {bad}; pass the value without spaces "
                    "or pattern characters"
                )
        gpus = self.resources.gpu if self.resources is not None else 0
        why = tasks_gpus_problem(self.flux.procs_per_node, gpus)
        if why is not None:
            raise ValueError(why)
        return self

    @model_validator(mode="after")
    def _no_own_pod_refs(self) -> _TorchRuntime:
        if self.mpi is not None:
            own_pod_refs_refused(self.env_refs, "env_refs")
        return self

    @model_validator(mode="after")
    def _ssh_key_readable(self) -> _TorchRuntime:
        # Trainer mounts the MPI ssh private key with mode 0640 (trainer v2.3.0
        # pkg/constants/constants.go MPISSHPrivateKeyFileMode, plugins/mpi/mpi.go): OpenSSH
        # (authfile.c sshkey_perm_ok) refuses a key its own uid owns with any group or other
        # bit, and the Secret's files belong to root; another uid reads it only through the
        # fsGroup the kubelet gives the volume.
        if self.mpi is None:
            return self
        wrong = []
        if self.run_as_user is None:
            wrong.append("run_as_user is not set (the image's user, root in most images)")
        elif self.run_as_user == 0:
            wrong.append("run_as_user is 0 (root)")
        if self.fs_group is None:
            wrong.append("fs_group is not set")
        if wrong:
            raise ValueError(
                f"{' and '.join(wrong)}: Trainer mounts the ssh private key with mode 0640, "
                "which OpenSSH refuses to use as root (the file's owner), and which another "
                "user can read only through fs_group; run the pods as the image's non-root "
                "MPI user, e.g. run_as_user=1000, fs_group=1000, with ssh_dir at that user's "
                "~/.ssh"
            )
        return self


class ClusterTrainingRuntime(_TorchRuntime):
    """A torch runtime every team's TrainJobs may use (cluster-scoped)."""


class TrainingRuntime(_TorchRuntime):
    """A torch runtime only one team's TrainJobs may use (in the team's namespace)."""

    team: DNS1123Label
    """The team whose namespace holds the runtime."""


def trainjob_object_name(name: str, run: int) -> str:
    """The Kubernetes name of run ``run`` of TrainJob ``name``."""
    return run_name(name, run)


# Container settings the operator kinds take that a TrainJob cannot: a runtime patch's
# ContainerPatch holds only a runtime container's env, volumeMounts and securityContext (trainer
# v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go), its PodSpecPatch no hostAliases, and
# Trainer's webhook refuses a patched container or init container the runtime lacks
# (plugins/jobset/jobset.go Validate: "must not have container that doesn't exist in the
# runtime job").
_ADDS_A_CONTAINER = (
    "a TrainJob cannot add a container: Trainer v2.3's runtime patches only change the "
    "env, mounts and security context of containers the runtime has, and its webhook refuses "
    "any other; the runtime takes it (init_containers= on the ClusterTrainingRuntime or "
    "TrainingRuntime, which the platform owns), or use a PyTorchJob, which takes it"
)
_CONTAINER_SETTING = (
    "a TrainJob cannot set this on its container: Trainer v2.3's runtime patches carry only "
    "a runtime container's env, mounts and security context; the runtime takes it (the same "
    "field on the ClusterTrainingRuntime or TrainingRuntime, which the platform owns), or use "
    "a PyTorchJob, which takes it"
)


class TrainJob(TrainkitModel):
    """A Kubeflow Trainer TrainJob: a runtime plus what this job changes.

    A TrainJob cannot change once created, so its Kubernetes name carries the
    run number (``<name>-r<run>``): to run an edited job, raise ``run``.
    """

    NOT_CARRIED: ClassVar[dict[str, str]] = {
        "init_containers": _ADDS_A_CONTAINER,
        **dict.fromkeys(
            (
                "readiness_probe",
                "liveness_probe",
                "startup_probe",
                "ports",
                "pre_stop",
                "post_start",
            ),
            _CONTAINER_SETTING,
        ),
        "host_aliases": (
            "a TrainJob cannot set this: Trainer v2.3's runtime patches have no hostAliases; "
            "use a PyTorchJob, which takes it"
        ),
    }

    name: DNS1035Name
    """Job name; the object is named ``<name>-r<run>``."""
    run: int = Field(default=1, ge=1, le=MAX_RUN)
    """Run number; raise it to run an edited job (a TrainJob cannot change in place)."""
    runtime: RuntimeName
    """Runtime to start from: the team's ``TrainingRuntime`` of that name, else the
    ``ClusterTrainingRuntime``."""
    image: Image | None = None
    """Container image; defaults to the runtime's. One image, or one per cluster or per
    accelerator the cluster declares: ``{"cuda": "…", "rocm": "…"}``."""
    script: Script | None = None
    """Training script next to the definition (``Script.file(...)``), run with torchrun."""
    command: list[Arg] | None = None
    """Command for images that carry their own code (instead of ``script``); defaults to the
    runtime's."""
    args: list[Arg] = []
    """Arguments passed to the script or command."""
    env: dict[EnvName, EnvValue] = {}
    """Extra environment variables (``PET_*`` and torchrun's own are refused)."""
    env_refs: dict[EnvName, EnvRef] = {}
    """Variables read when the pod starts from a key of a Secret or ConfigMap the Team grants,
    e.g. ``{"HF_TOKEN": SecretKey(secret="hf-token", key="token")}``."""
    dataset: DataSource | None = None
    """What the runtime's dataset step downloads to ``/workspace/dataset`` before the nodes
    start, e.g. ``DataSource(storage_uri="hf://tatsu-lab/alpaca")``."""
    model: DataSource | None = None
    """What the runtime's model step downloads to ``/workspace/model`` before the nodes
    start, e.g. ``DataSource(storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct",
    secret="hf-token")``."""
    nodes: int | None = Field(default=None, ge=1, le=10000)
    """Number of nodes (pods); defaults to the runtime's."""
    procs_per_node: int | None = Field(default=None, ge=1, le=1024)
    """Processes per node; defaults to the GPUs per node (Trainer's ``auto``)."""
    flux_view_image: Image | None = None
    """On a flux runtime: the Flux view image Trainer copies Flux from into the nodes, over the
    runtime's ``view_image`` (``FLUX_VIEW_IMAGE`` in ``spec.trainer.env``, which Trainer's
    Flux plugin reads last), e.g. ``ghcr.io/converged-computing/flux-view-rocky:tag-9`` for a
    job ``image`` built on Rocky 9: its OS and version must match the job's image. One
    image, or one per cluster or accelerator, as ``image``."""
    resources: Resources | None = None
    """CPU, memory and GPUs of each node; defaults to the runtime's."""
    volumes: list[AnyVolume] = []
    """Volumes mounted on every node: claims (``Volume(claim=…)``), scratch space
    (``EmptyDir``), Secret and ConfigMap files (``SecretVolume``, ``ConfigMapVolume``),
    tokens for other systems (``ServiceAccountToken``), CSI volumes (``CsiVolume``)."""
    deadline_seconds: int | None = Field(default=None, ge=1)
    """Fail the job when it has existed this long, counted from its creation (Trainer's clock:
    time queued in Volcano counts, unlike a PyTorchJob's deadline; on Kueue from admission)."""
    queue: DNS1123Label | None = None
    """Volcano queue; defaults to the team's first queue."""
    clusters: list[ClusterRef] | None = None
    """Clusters to run on; defaults to the team's clusters."""
    node_selector: dict[LabelKey, LabelValue] = {}
    """Node labels the nodes must run on, added to the runtime's (a key given here wins)."""
    tolerations: list[Toleration] = []
    """Taints the nodes tolerate besides the runtime's (only those the Cluster allows)."""
    node_affinity: list[NodeLabel] = []
    """Node label rules added to the runtime's (required, or preferred with ``weight=``)."""
    kueue_topology: KueueTopology | None = None
    """On a Kueue cluster whose flavor has a Topology: where Kueue places the pods together,
    ``KueueTopology(level="example.com/topology-rack", required=True)`` (the
    ``kueue.x-k8s.io/podset-required-topology`` or ``podset-preferred-topology`` annotation
    of each pod template)."""
    topology: Topology | None = None
    """``Topology(key="rack", layout="pack")``: prefer one rack for all the job's nodes. A
    spread layout is refused: Trainer v2.3's runtime patches cannot carry
    ``topologySpreadConstraints``."""
    service_account: ObjectName | None = None
    """ServiceAccount the nodes run as, one the Team lists in ``service_accounts``; default:
    the runtime's."""
    image_pull_secrets: list[ObjectName] = []
    """Secrets to pull the image with, ones the Team lists in ``image_pull_secrets``."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    """Not settable here: Trainer v2.3's runtime patches cannot carry it; set it on the runtime."""
    priority_class: ObjectName | None = None
    """Not settable here: Trainer v2.3's runtime patches cannot carry it; set it on the runtime."""
    workload_priority: DNS1123Label | None = None
    """On a Kueue cluster: the WorkloadPriorityClass Kueue admits and preempts the TrainJob by
    (the nodes keep their runtime's priority), one the Team lists in
    ``workload_priority_classes``. Kueue reads it from the TrainJob's own label, as for any
    job it manages."""
    env_from: list[EnvSource] = []
    """Not settable here: Trainer v2.3's runtime patches cannot carry it; set it on the runtime."""
    pod_labels: dict[LabelKey, LabelValue] = {}
    """Labels of the nodes' pods (in the runtime patch's pod template), e.g.
    ``{"example.com/cost-center": "vision"}``. A key under a prefix a controller acts on
    (``kueue.x-k8s.io/``, ``volcano.sh/``, ``kubernetes.io/``, …) needs the Team's grant
    (``pod_metadata_keys``); ``trainkit.dev/`` keys are trainkit's."""
    pod_annotations: dict[LabelKey, AnnotationValue] = {}
    """Annotations of the nodes' pods; the same keys as ``pod_labels`` need a grant."""
    labels: dict[LabelKey, LabelValue] = {}
    """Labels of the TrainJob object itself, e.g. ``{"example.com/cost-center": "research"}``
    for what lists or bills jobs. They stay on the TrainJob: Trainer builds the JobSet's
    labels from the runtime and its patches only (``jobset_labels``), and no pod gets them
    (``pod_labels``). The same keys as ``pod_labels`` need a grant; the keys trainkit sets on
    the job (the Kueue queue and priority, Argo CD's sync wave) are refused."""
    annotations: dict[LabelKey, AnnotationValue] = {}
    """Annotations of the TrainJob object itself; like ``labels`` they reach neither the
    JobSet nor a pod. The same keys as ``pod_labels`` need a grant and trainkit's own are
    refused."""
    jobset_labels: dict[LabelKey, LabelValue] = {}
    """Labels of the JobSet Trainer creates for the TrainJob (the runtime patch's own
    metadata), e.g. ``{"example.com/cost-center": "research"}`` for what lists or bills
    JobSets. They stay on the JobSet: JobSet copies none to its Jobs or pods (use
    ``pod_labels`` for those). The same keys as ``pod_labels`` need a grant."""
    jobset_annotations: dict[LabelKey, AnnotationValue] = {}
    """Annotations of the JobSet Trainer creates for the TrainJob; like ``jobset_labels``
    they reach no pod. The same keys as ``pod_labels`` need a grant; the Volcano queue is
    ``queue=``'s."""
    security_context: SecurityContext | None = None
    """Who every container of the nodes' pods runs as, over the runtime's (in the runtime
    patch): ``SecurityContext(run_as_user=1000, fs_group=1000, run_as_non_root=True)``. On an
    MPI runtime its ``run_as_user`` and ``fs_group`` are the runtime's, which its ssh keys
    need."""
    container_security_context: ContainerSecurityContext | None = None
    """The node container's own settings over ``security_context``, e.g.
    ``ContainerSecurityContext(allow_privilege_escalation=False, drop_capabilities=["ALL"])``."""
    termination_grace_period: int | None = Field(default=None, ge=0, le=86400)
    """Seconds the nodes' pods get to stop after SIGTERM before they are killed (in the runtime
    patch), e.g. ``120`` to write a checkpoint; default the runtime's, else Kubernetes' 30.
    ``Policy.max_termination_grace_period`` caps it."""

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, env: dict[str, str]) -> dict[str, str]:
        return _refuse_reserved(env)

    @field_validator("pod_labels", "pod_annotations", "jobset_labels", "jobset_annotations")
    @classmethod
    def _not_trainkits(cls, meta: dict[str, str]) -> dict[str, str]:
        return own_keys_refused(meta)

    @field_validator("labels", "annotations")
    @classmethod
    def _not_trainkits_job_keys(cls, meta: dict[str, str]) -> dict[str, str]:
        return job_keys_refused(meta)

    @field_validator("jobset_annotations")
    @classmethod
    def _queue_is_queues(cls, meta: dict[str, str]) -> dict[str, str]:
        # Trainer's Volcano plugin reads the queue from the JobSet template's annotations,
        # where the runtime patch's metadata lands (trainer v2.3.0 pkg/runtime/core/
        # trainingruntime.go newRuntimeInfo, plugins/volcano/volcano.go).
        if _VOLCANO_QUEUE in meta:
            raise ValueError(
                f"{_VOLCANO_QUEUE!r} is the Volcano queue trainkit writes from queue= (checked "
                "against the team's queues); set queue= instead"
            )
        return meta

    @field_validator("topology")
    @classmethod
    def _pack_only(cls, value: Topology | None) -> Topology | None:
        # PodSpecPatch holds affinity but no topologySpreadConstraints (trainer v2.3.0
        # pkg/apis/trainer/v1alpha1/trainjob_types.go).
        if value is not None and value.layout != "pack":
            raise ValueError(
                "a TrainJob cannot spread its nodes (Trainer v2.3's runtime patches have no "
                "topologySpreadConstraints); use layout='pack', or a PyTorchJob"
            )
        return value

    @field_validator("image_pull_policy", "priority_class", "env_from")
    @classmethod
    def _on_the_runtime(cls, value: object) -> object:
        # A runtime patch's PodSpecPatch holds serviceAccountName and imagePullSecrets but no
        # priorityClassName, its ContainerPatch no imagePullPolicy or envFrom, and
        # spec.trainer only env (trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go);
        # a per-job runtime would hide it.
        if value:
            raise ValueError(
                "a TrainJob cannot carry this (Trainer v2.3's runtime patches have no such "
                "field); set it on the runtime and give the job that runtime"
            )
        return value

    _refs = env_refs_validator("TrainJob")

    @field_validator("command")
    @classmethod
    def _not_tune_run(cls, command: list[str] | None) -> list[str] | None:
        # Trainer v2.3.0 rewrites exactly this command (plugins/torch/torch.go EnforceMLPolicy,
        # torchtune.go getRecipeAndConfig: recipe and config from the runtime's name and the
        # GPUs), which trainkit does not model, so what it shows would not be what runs.
        if command == ["tune", "run"]:
            raise ValueError(
                "command ['tune', 'run'] alone is rewritten by Trainer (recipe and config picked "
                "from the runtime's name and GPUs), which trainkit cannot show or check; give "
                "the whole command (recipe, --config, overrides), or leave command out to run "
                "the runtime's"
            )
        return command

    @model_validator(mode="after")
    def _coherent(self) -> TrainJob:
        one_topology_annotation(self.kueue_topology, self.pod_annotations)
        check_program(self.script, self.command, "the runtime's command runs")
        check_volumes(self.volumes)
        check_workspace(self.volumes, self.script, trainer=True)
        check_security(self.security_context, self.container_security_context)
        return self

    @property
    def object_name(self) -> str:
        """The Kubernetes name: ``<name>-r<run>``."""
        return trainjob_object_name(self.name, self.run)
