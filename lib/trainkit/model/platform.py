"""Platform objects, declared by the platform team in ``jobs/platform/``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import TrainkitModel
from .env import Key
from .fields import (
    AnnotationValue,
    ClusterRef,
    CpuQuantity,
    DNS1123Label,
    HugePageSize,
    LabelKey,
    LabelValue,
    MemoryQuantity,
    ObjectName,
    Path,
    ResourceName,
)
from .job import Toleration
from .pod_settings import PortName
from .security import Profile
from .working_dir import ArchiveSource

__all__ = ["ArgoCD", "Capacity", "Cluster", "Queue", "Team"]

# Volcano's scheduler creates these itself and refuses to delete them.
RESERVED_QUEUES = frozenset({"root", "default"})
VOLCANO_DEFAULT_QUEUE = "default"
"""Volcano's built-in queue: the scheduler creates it at start (volcano-sh/volcano v1.12.4
pkg/scheduler/cache/cache.go newDefaultAndRootQueue) and its admission webhook refuses deleting
it (pkg/webhooks/admission/queues/validate/validate_queue.go). A team may use it when its Team
lists it in ``queues``; trainkit never generates it."""


class Cluster(TrainkitModel):
    """A Kubernetes cluster that Argo CD syncs ``generated/clusters/<name>/`` to."""

    name: DNS1123Label
    """Cluster name; also the directory under ``generated/clusters/``."""
    server: str | None = None
    """Argo CD destination by API server URL, e.g. ``https://kubernetes.default.svc``."""
    destination_name: str | None = None
    """Argo CD destination by the cluster's name in Argo CD (instead of ``server``)."""
    gpu_resource: ResourceName = "nvidia.com/gpu"
    """Extended resource name of the GPUs, e.g. ``nvidia.com/gpu``, ``amd.com/gpu``."""
    gpus_per_node: int = Field(ge=0)
    """GPUs on one node; a job may not ask for more per node."""
    accelerator: Literal["cuda", "rocm"] | None = None
    """The GPUs' software stack. Jobs may then give one image per accelerator
    (``image={"cuda": …, "rocm": …}``), and an image whose tag names the other stack
    (``…-rocm6.2`` on a ``cuda`` cluster) is refused."""
    scheduler: Literal["volcano", "kueue", "default"] = "volcano"
    """``volcano`` gang-schedules jobs in Volcano queues; ``kueue`` admits them against
    ClusterQueue quota (Kueue v0.19); ``default`` uses kube-scheduler alone."""
    kueue_frameworks: (
        list[
            Literal[
                "kubeflow.org/pytorchjob",
                "kubeflow.org/tfjob",
                "kubeflow.org/paddlejob",
                "kubeflow.org/xgboostjob",
                "kubeflow.org/jaxjob",
                "kubeflow.org/mpijob",
                "ray.io/rayjob",
                "ray.io/raycluster",
                "trainer.kubeflow.org/trainjob",
            ]
        ]
        | None
    ) = None
    """With ``scheduler="kueue"``: the job integrations the cluster's Kueue enables
    (``integrations.frameworks``). Default: those of Kueue v0.19's shipped configuration,
    ``kubeflow.org/mpijob``, ``ray.io/rayjob``, ``ray.io/raycluster`` and
    ``trainer.kubeflow.org/trainjob``; the
    Training Operator's kinds are off there. A kind Kueue does not manage would run at once,
    outside every quota, so it is refused."""
    kueue_admission_checks: list[ObjectName] = Field(default=[], max_length=64)
    """With ``scheduler="kueue"``: the AdmissionChecks the platform installs on the cluster
    with their controllers and parameters (e.g. ``"gpu-provisioning"``, a
    ``kueue.x-k8s.io/provisioning-request`` check), which ClusterQueues may then require
    (``ClusterQueue.admission_checks``). A ClusterQueue naming a check the cluster lacks is
    inactive: Kueue admits nothing through it."""
    kueue_topologies: dict[ObjectName, list[LabelKey]] = {}
    """With ``scheduler="kueue"``: the Topologies (``kueue.x-k8s.io``) the platform installs
    for topology-aware scheduling, each with its levels' node labels from the largest domain
    to the smallest, e.g. ``{"h100-fabric": ["example.com/block", "example.com/rack",
    "kubernetes.io/hostname"]}``. A ResourceFlavor names one in ``topology_name``; a job's
    ``kueue_topology`` level must be one of its levels."""
    operators: list[
        Literal["training-operator", "mpi-operator", "paddle-operator", "kuberay", "trainer"]
    ] = [
        "training-operator",
        "trainer",
    ]
    """Controllers the cluster runs, which decide the kinds its jobs may be:
    ``training-operator`` (Kubeflow Training Operator v1.9: PyTorchJob, TFJob, PaddleJob, XGBoostJob, JAXJob),
    ``mpi-operator``
    (kubeflow/mpi-operator v0.8: MPIJob ``kubeflow.org/v2beta1``) and ``trainer`` (Kubeflow
    Trainer v2.3: TrainJob and runtimes). The Training Operator's own MPIJob (``v1``) has the
    same CRD name, ``mpijobs.kubeflow.org``, so a cluster serves one of the two: with
    ``mpi-operator`` listed, run the Training Operator without its MPI scheme
    (``--enable-scheme`` without ``mpijob``). trainkit generates only ``v2beta1``.
    ``paddle-operator`` (PaddleFlow/paddle-operator v0.3.5): PaddleJobs there are
    ``batch.paddlepaddle.org/v1``, not the Training Operator's ``kubeflow.org/v1``.
    ``kuberay`` (KubeRay v1.7: RayJob, RayCluster); on a Volcano cluster its operator must run with
    ``--batch-scheduler=volcano``, and never with ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true``
    (the RayJob would be deleted when it ends, and Argo CD would run it again)."""
    tolerations: list[Toleration] = []
    """Taints that jobs and runtimes on this cluster may tolerate (e.g. the GPU nodes'
    ``nvidia.com/gpu:NoSchedule``); a job's toleration must be covered by one of these. A
    toleration without key (``operator='Exists'``) tolerates every taint, control-plane and
    dedicated nodes included: declare it only on purpose."""
    node_labels: dict[LabelKey, list[LabelValue]] = {}
    """Labels the cluster's nodes carry, each with its values (``[]``: any value), e.g.
    ``{"gpu.product": ["A100", "H100"], "rack": []}``. When given, the node label rules of the
    jobs on the cluster (``node_affinity``, ``node_selector``, a ``Topology`` or
    ``PodAffinity`` key) may name only these: a required rule on a label no node has keeps the
    job pending forever. Empty: not checked."""
    csi_drivers: list[ObjectName] = []
    """CSI drivers installed on the cluster whose inline volumes jobs may mount
    (``CsiVolume``), e.g. ``["secrets-store.csi.k8s.io"]``; a pod naming a driver the cluster
    lacks never starts."""

    @model_validator(mode="after")
    def _one_destination(self) -> Cluster:
        if self.kueue_frameworks is not None and self.scheduler != "kueue":
            raise ValueError(
                f"kueue_frameworks is a Kueue setting, but the cluster schedules with "
                f"{self.scheduler!r}: drop it or set scheduler='kueue'"
            )
        if self.kueue_admission_checks and self.scheduler != "kueue":
            raise ValueError(
                f"kueue_admission_checks is a Kueue setting, but the cluster schedules with "
                f"{self.scheduler!r}: drop it or set scheduler='kueue'"
            )
        if len(set(self.kueue_admission_checks)) != len(self.kueue_admission_checks):
            raise ValueError("kueue_admission_checks lists a check twice; name each once")
        if self.kueue_topologies and self.scheduler != "kueue":
            raise ValueError(
                f"kueue_topologies is a Kueue setting, but the cluster schedules with "
                f"{self.scheduler!r}: drop it or set scheduler='kueue'"
            )
        for name, levels in self.kueue_topologies.items():
            _topology_levels(name, levels)
        if len(set(self.operators)) != len(self.operators):
            raise ValueError("operators lists a controller twice; name each once")
        if (self.server is None) == (self.destination_name is None):
            raise ValueError(
                "give exactly one Argo CD destination: server='https://…' or "
                "destination_name='<cluster name in Argo CD>'"
            )
        if not (self.server or self.destination_name or "").strip():
            raise ValueError("the Argo CD destination is empty; give the API server URL or name")
        return self

    @property
    def kueue_integrations(self) -> tuple[str, ...]:
        """The job integrations Kueue enables here (none without Kueue)."""
        if self.scheduler != "kueue":
            return ()
        if self.kueue_frameworks is not None:
            return tuple(self.kueue_frameworks)
        # config/components/manager/controller_manager_config.yaml at v0.19.2.
        return (
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/raycluster",
            "trainer.kubeflow.org/trainjob",
        )


def _topology_levels(name: str, levels: list[str]) -> None:
    """A Topology's levels as its CRD validates them (kueue v0.19.2
    apis/kueue/v1beta2/topology_types.go TopologySpec.Levels)."""
    if not 1 <= len(levels) <= 16:
        raise ValueError(
            f"Topology {name!r} has {len(levels)} levels; Kueue takes 1 to 16 node labels"
        )
    twice = [level for i, level in enumerate(levels) if level in levels[:i]]
    if twice:
        raise ValueError(f"Topology {name!r} lists level {twice[0]!r} twice; Kueue wants each once")
    host = "kubernetes.io/hostname"
    if host in levels and levels[-1] != host:
        raise ValueError(
            f"Topology {name!r} has {host!r} above another level; Kueue allows it only as the "
            "lowest (last) level"
        )


class Capacity(TrainkitModel):
    """An amount of resources; ``gpu`` is counted in the cluster's GPU resource, e.g.
    ``Capacity(cpu=64, memory="512Gi", gpu=8, extended={"vpc.amazonaws.com/efa": 32})``."""

    cpu: CpuQuantity | None = None
    """CPU cores, e.g. ``64`` or ``"500m"``."""
    memory: MemoryQuantity | None = None
    """Memory with a unit, e.g. ``"256Gi"``."""
    gpu: int | None = Field(default=None, ge=0)
    """Number of GPUs (rendered as the cluster's ``gpu_resource``)."""
    ephemeral_storage: MemoryQuantity | None = None
    """Local disk of the nodes (``ephemeral-storage``), e.g. ``"2Ti"``: Volcano and Kueue
    count the pods' requests of it like any other resource (volcano v1.12
    pkg/scheduler/api/resource_info.go NewResource), so a queue that lists it caps it, and a
    Kueue queue must list it for jobs that ask for it."""
    extended: dict[ResourceName, Annotated[int, Field(ge=0)]] = {}
    """Other extended resources by name, e.g. the devices a network profile gives each pod:
    ``{"vpc.amazonaws.com/efa": 32, "rdma/hca": 8}``. GPUs go in ``gpu``."""
    hugepages: dict[HugePageSize, MemoryQuantity] = {}
    """Huge pages by page size (``hugepages-<size>``), e.g. ``{"2Mi": "64Gi"}``: Volcano and
    Kueue count the pods' requests of them, and a Kueue queue must list them for jobs that ask
    for them."""

    def amounts(self, gpu_resource: str, *, zero_gpu: bool = False) -> dict[str, str]:
        """The amounts in a cluster's words (``gpu`` → its GPU resource); no GPUs are left
        out unless ``zero_gpu`` asks for the key to be written (``"0"``)."""
        out: dict[str, str] = {}
        if self.cpu is not None:
            out["cpu"] = str(self.cpu)
        if self.memory is not None:
            out["memory"] = self.memory
        if self.ephemeral_storage is not None:
            out["ephemeral-storage"] = self.ephemeral_storage
        if self.gpu or (zero_gpu and self.gpu is not None):
            out[gpu_resource] = str(self.gpu)
        for size, amount in sorted(self.hugepages.items()):
            out[f"hugepages-{size}"] = amount
        for name, value in sorted(self.extended.items()):
            out.setdefault(name, str(value))
        return out


class Queue(TrainkitModel):
    """A Volcano queue (``scheduling.volcano.sh/v1beta1``, cluster-scoped)."""

    name: DNS1123Label
    """Queue name; teams list the queues they may use."""
    weight: int = Field(default=1, ge=1, le=65535)
    """Share of the cluster for Volcano's ``proportion`` plugin."""
    capability: Capacity | None = None
    """Hard upper limit of what the queue's jobs may use together; a job whose gang needs more
    can never start and is refused."""
    deserved: Capacity | None = None
    """What the queue is entitled to under Volcano's ``capacity`` plugin (lent when idle,
    reclaimed when needed); required for hierarchical queues, which that plugin schedules."""
    guarantee: Capacity | None = None
    """What is reserved for the queue and never lent (``capacity`` plugin)."""
    reclaimable: bool = True
    """Whether other queues may reclaim resources this queue has borrowed."""
    parent: DNS1123Label | None = None
    """Parent queue for hierarchical queues; ``None`` means Volcano's ``root``."""
    clusters: list[ClusterRef] | None = None
    """Clusters the queue exists on; ``None`` means every cluster that schedules with Volcano
    (``scheduler="volcano"``): the others have no Queue CRD."""

    @model_validator(mode="after")
    def _not_builtin(self) -> Queue:
        if self.name in RESERVED_QUEUES:
            grant = (
                "; to let a team run on Volcano's own 'default' queue, list \"default\" in its "
                "Team.queues instead"
                if self.name == VOLCANO_DEFAULT_QUEUE
                else ""
            )
            raise ValueError(
                f"queue {self.name!r} is created and kept by Volcano itself; a generated Queue "
                f"of that name would be owned (and could be changed or pruned) by Argo CD: "
                f"choose another name{grant}"
            )
        if self.parent == self.name:
            raise ValueError("a queue cannot be its own parent")
        return self


SYSTEM_NAMESPACES = frozenset(
    {
        "default",
        "argocd",
        "openshift-gitops",
        "volcano-system",
        "volcano-monitoring",
        "kubeflow",
        "kubeflow-system",
        "kueue-system",
        "jobset-system",
        "ray-system",
        "cert-manager",
    }
)
"""Namespaces of Kubernetes itself and of the operators trainkit works with."""


def system_namespace(namespace: str) -> bool:
    return namespace in SYSTEM_NAMESPACES or namespace.startswith(("kube-", "openshift-"))


class Team(TrainkitModel):
    """A team: the directory ``jobs/<name>/`` holds its jobs."""

    name: DNS1123Label
    """Team name; must equal its directory under ``jobs/``."""
    namespace: DNS1123Label | None = None
    """Namespace of the team's objects; defaults to the team name."""
    queues: list[DNS1123Label] = []
    """Queues the team may use; the first is the default for its jobs. ``"default"`` grants
    Volcano's built-in queue (which Volcano creates and keeps, so trainkit never generates
    it) on the clusters that schedule with Volcano; with no capability known, its jobs are
    checked against no quota there."""
    clusters: list[ClusterRef] | None = None
    """Clusters the team may run on; ``None`` means every cluster."""
    max_gpus: int | None = Field(default=None, ge=0)
    """Most GPUs all the team's jobs on one cluster may use together (nodes × GPUs per node,
    summed); ``None`` means no cap."""
    service_accounts: list[ObjectName] = []
    """ServiceAccounts of the team's namespace its jobs may run as (``service_account=``);
    none listed: only the namespace's ``default``. The platform creates them and their RBAC."""
    image_pull_secrets: list[ObjectName] = []
    """Secrets of the team's namespace its jobs may pull images with (``image_pull_secrets=``)."""
    secrets: dict[ObjectName, list[Key]] = {}
    """Secrets of the team's namespace, and the keys of each, that its jobs may read into
    variables (``env_refs``), e.g. ``{"hf-token": ["token"]}``. A job may take a whole Secret
    (``env_from``) when the list names every key it holds."""
    config_maps: dict[ObjectName, list[Key]] = {}
    """ConfigMaps of the team's namespace, and the keys of each, that its jobs may read into
    variables (``env_refs``), or whole (``env_from``) when the list names every key."""
    workload_priority_classes: list[DNS1123Label] = []
    """Kueue WorkloadPriorityClasses the team's jobs may name (``workload_priority=``) on Kueue
    clusters; a higher one is admitted first and may preempt other teams' jobs."""
    priority_classes: list[ObjectName] = []
    """PriorityClasses the team's jobs may name (``priority_class=``); a higher class can
    preempt other teams' pods, so none is allowed unless listed."""
    pod_metadata_keys: list[str] = []
    """Pod label and annotation keys under a prefix a controller acts on (``kueue.x-k8s.io/``,
    ``volcano.sh/``, ``k8s.v1.cni.cncf.io/``, ``kubernetes.io/``, …) that the team's jobs may
    set (``pod_labels``, ``pod_annotations``, a TrainJob's ``jobset_labels`` and
    ``jobset_annotations``, the job object's own ``labels`` and ``annotations``): a whole key, or a prefix ending in ``/``
    (``"example.kubernetes.io/"``). Keys under other prefixes need no grant."""
    network_profiles: list[DNS1123Label] = []
    """NetworkProfiles the team's jobs and runtimes may name (``network=``), and that its
    TrainJobs may get through a ClusterTrainingRuntime. A profile grants capabilities, device
    resources or the host network, so none is allowed unless listed."""
    ray_autoscaling: bool = False
    """Whether the team's RayJobs may autoscale a worker group (``min_nodes``/``max_nodes``).
    KubeRay then runs the head, and so the job's own code, as its autoscaler's ServiceAccount,
    which may patch the job's RayCluster and its pods: the code could change its own pod
    templates after every check here. Off: a group keeps its node count."""
    ray_head_service_types: list[Literal["NodePort", "LoadBalancer"]] = []
    """Ray head Service types beyond ``ClusterIP`` the team's RayJobs and RayClusters may give
    (``HeadService(type=...)``). The head Service carries Ray's dashboard, whose job API runs
    whatever code is submitted to it as the job (its service account, its Secrets, its
    GPUs), and the GCS and Ray client: a ``NodePort`` opens them on every node's address, a
    ``LoadBalancer`` wherever the cloud's load balancer is reachable. Grant one only where
    the network in front of it admits no one the team would not hand its jobs to."""
    ray_head_service_ports: list[PortName] = []
    """Names of a job's own ``ports`` that may ride on an exposed (``NodePort`` or
    ``LoadBalancer``) head Service: KubeRay puts every port of the head's container on it
    (common/service.go getServicePorts), so each is reachable as far as the Service is."""
    ray_head_service_annotations: dict[LabelKey, list[AnnotationValue]] = {}
    """Annotations the team's exposed head Services may carry (``HeadService(annotations=
    ...)``), by key, each with the values allowed: ``{"service.beta.kubernetes.io/
    aws-load-balancer-scheme": ["internal"]}``; ``"*"`` allows any value of that key. The
    cloud's load balancer controller reads them, and some decide who reaches the head (an
    internet-facing scheme, source ranges), so none is allowed unless listed."""
    seccomp_profiles: list[Profile] = []
    """Seccomp profiles besides ``"RuntimeDefault"`` the team's jobs may give
    (``security_context``, ``container_security_context``): ``"Unconfined"`` lifts the
    system call filter; ``"localhost/<file>"`` names a profile the platform installs on the
    nodes (a pod naming one the node lacks never starts)."""
    host_paths: list[Path] = []
    """Directories of the nodes the team's jobs may mount (``HostPath``), each with what is
    below it, e.g. ``["/mnt/nvme/cache"]``; none by default. A node's directory is shared
    with every pod on the node and outlives the job: grant only what is meant to be shared."""
    app_armor_profiles: list[Profile] = []
    """AppArmor profiles besides ``"RuntimeDefault"`` the team's jobs may give:
    ``"Unconfined"``, or ``"localhost/<name>"`` of a profile loaded on the nodes."""
    working_dir_sources: list[ArchiveSource] = []
    """URI prefixes of archives the team's RayJobs may run from
    (``runtime_env=RuntimeEnv(working_dir="s3://ml-code/eval-v3.zip")``), each ending in
    ``/``, e.g. ``["s3://ml-code/"]``: Ray downloads the archive on every node with the
    pods' credentials and runs it, code that no review of this repository saw. None
    listed: the code comes from the repository (a ``working_dir`` directory, a script) or the
    image."""

    @model_validator(mode="after")
    def _own_namespace(self) -> Team:
        if system_namespace(self.target_namespace):
            field = "namespace" if self.namespace else "name"
            raise ValueError(
                f"namespace {self.target_namespace!r} belongs to Kubernetes or an operator; "
                f"trainkit would own (and Argo CD could delete) it: set {field} to a namespace "
                "of the team's own"
            )
        return self

    @property
    def target_namespace(self) -> str:
        return self.namespace or self.name


class ArgoCD(TrainkitModel):
    """Where Argo CD finds this repository; one per platform."""

    repo_url: str = Field(min_length=1)
    """Git URL of this repository as Argo CD knows it."""
    revision: str = "main"
    """Branch, tag or commit Argo CD follows."""
    path: str = "generated"
    """Directory of the generated tree inside the repository."""
    namespace: DNS1123Label = "argocd"
    """Namespace Argo CD runs in."""
    project: DNS1123Label = "trainkit"
    """Names the AppProjects and Applications: the platform's AppProject ``<project>``, each
    team's ``<project>-team-<team>``, the Applications ``<project>-<cluster>-platform`` and
    ``<project>-<cluster>-<team>``."""
    retire_cluster_applications: bool = False
    """Step 1 of moving from trainkit's one Application per cluster (``trainkit-<cluster>``,
    up to 0.2) to one per team: keep those Applications, without their resources
    finalizer and automated sync, while the new ones take every object over; set it back
    to False once they have (``trainkit plan`` shows each step)."""
