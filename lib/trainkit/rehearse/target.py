"""The job a rehearsal runs, read from the pods the controllers will create.

Everything a rehearsal runs with — nodes, processes per node, image, command
and args, env, shared memory, volumes, the script files — comes from the
effective model (``trainkit.effective``) of one cluster: the pods after every
merge the operator does, so a TrainJob's runtime, a runtime patch or a network
profile count exactly as on the cluster. The definition is read only for
wording (which field a value came from) and to name the job in messages.

What differs between a PyTorchJob, XGBoostJob or JAXJob (Training Operator v1.9), a TrainJob
(Kubeflow Trainer v2.3), an MPIJob (mpi-operator) and a RayJob (KubeRay v1.7) —
pod names, the env each operator injects, the variables it owns — is decided
here once, in the Target classes (a RayJob's in ``ray_target``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..effective import EffectiveJob, PodSet
from ..errors import Problem, RehearsalError
from ..injected_env.jax_env import jaxjob_env
from ..injected_env.kubeflow_trainer_env import TRAINJOB, trainjob_env
from ..injected_env.mpi_operator_env import MPIJOB, mpijob_env
from ..injected_env.training_operator_env import PYTORCHJOB, pytorchjob_env
from ..injected_env.xgboost_env import xgboostjob_env
from ..model import (
    WORKSPACE,
    ClusterTrainingRuntime,
    JAXJob,
    MPIJob,
    PyTorchJob,
    TrainingRuntime,
    TrainJob,
    XGBoostJob,
)
from ..render.kubeflow_trainer import NODE
from ..render.pod import forwarded

__all__ = [
    "Claim",
    "JAXJobTarget",
    "MPIJobTarget",
    "PyTorchJobTarget",
    "Target",
    "TrainJobTarget",
    "XGBoostJobTarget",
    "env_source_name",
    "from_definitions",
    "pod_mounts",
    "pod_name",
    "rank_target",
    "text_or_none",
]

# Who set a variable of the pod (EnvVar.source): the definitions' sources. Every
# other source is an operator, whose variables a rehearsal recomputes per node.
_DEFINITION_SOURCES = ("runtime ", "network profile ", "role ")


def pod_name(job: str, node_rank: int) -> str:
    """Training Operator's pod for a node rank: node 0 is the Master, node i is Worker i-1."""
    return f"{job}-master-0" if node_rank == 0 else f"{job}-worker-{node_rank - 1}"


def from_definitions(source: str) -> bool:
    """Whether a variable with this ``EnvVar.source`` comes from a definition, not an operator."""
    return source == "job" or source.startswith(_DEFINITION_SOURCES)


@dataclass(frozen=True)
class Claim:
    """A volume of the pod a rehearsal does not mount (a PersistentVolumeClaim, …)."""

    name: str
    path: str


@dataclass(frozen=True)
class Target(ABC):
    """One job's pods on one cluster, as a rehearsal needs them."""

    effective: EffectiveJob
    nodes: int
    """Pods of the job on the cluster."""
    procs_per_node: int
    """Processes per pod: ``numProcPerNode``, with ``auto`` taken as one per GPU."""
    procs_auto: bool
    """The operator passes ``auto`` to torchrun (which starts one process per GPU)."""
    nodes_label: str
    """How a change of ``nodes`` is introduced, e.g. ``nodes (from runtime 'x')``."""
    procs_label: str
    image: str
    command: tuple[str, ...] | None
    """The training container's command; None runs the image's entrypoint."""
    args: tuple[str, ...]
    env: Mapping[str, str]
    """The training container's env from the job, its runtime or a network profile."""
    cluster_env: Mapping[str, str]
    """Variables the pod reads from a Secret or ConfigMap key when it starts: name → where."""
    operator_env: Mapping[str, str]
    """What the operator injects into the first pod, as on the cluster."""
    gpus: int
    """GPUs of each pod, in the cluster's GPU resource."""
    cpu: str | None
    memory: str | None
    extra_resources: Mapping[str, str]
    """Other resources of each pod (a network profile's ``rdma/hca``, …)."""
    files: Mapping[str, str]
    """Script files mounted read-only at ``/workspace/<name>``: name → text."""
    shm_size: str | None
    """Size of the memory-backed ``/dev/shm``, when the pod mounts one."""
    claims: tuple[Claim, ...]
    restart_policy: str | None = None
    env_sources: tuple[str, ...] = ()
    """Secrets and ConfigMaps whose every key the pod gets as a variable (``envFrom``)."""

    operator: ClassVar[str]
    """Who runs the job, as said in messages."""
    master_vars: ClassVar[tuple[str, str]]
    """The injected variables holding the rendezvous address and port."""
    one_process_per_pod: ClassVar[bool] = False
    """The pod runs one framework process, not a launcher of ``procs_per_node``."""

    @property
    def name(self) -> str:
        """The object's name (``<name>-r<run>`` when the job has a run number)."""
        return self.effective.name

    @property
    def kind(self) -> str:
        return self.effective.kind

    @property
    def cluster(self) -> str:
        return self.effective.planned.cluster.name

    @property
    def file(self) -> str:
        return self.effective.planned.definition.file

    @property
    def runtime(self) -> str | None:
        """For a TrainJob: the runtime used and the cluster it was taken from."""
        pr = self.effective.planned.runtime
        return None if pr is None else f"{pr.describe()} of cluster {pr.cluster.name!r}"

    def describe(self) -> str:
        return self.effective.planned.job.describe()

    @abstractmethod
    def pod(self, node_rank: int) -> str: ...

    @abstractmethod
    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        """What the operator injects into one node's container, for a rehearsal's size
        (``auto`` replaced by ``procs_per_node``)."""

    @abstractmethod
    def sets(self, name: str) -> bool:
        """Whether the operator, or torchrun under it, sets ``name`` on the cluster."""


@dataclass(frozen=True)
class PyTorchJobTarget(Target):
    operator: ClassVar[str] = "the operator"
    master_vars: ClassVar[tuple[str, str]] = ("MASTER_ADDR", "MASTER_PORT")

    def pod(self, node_rank: int) -> str:
        return pod_name(self.name, node_rank)

    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        # kubeflow/trainer v1.9.4 pkg/controller.v1/pytorch/envvar.go: WORLD_SIZE is
        # replicas × nprocPerNode when that is a number, replicas × 1 for "auto";
        # PET_NPROC_PER_NODE is nprocPerNode as written ("auto" is given a number here,
        # since torchrun's auto would start one process per CPU on a machine without GPUs).
        env = pytorchjob_env(
            job_name=self.name,
            nodes=nodes,
            procs_per_node=1 if self.procs_auto else procs_per_node,
            node_rank=node_rank,
            master_addr=master_addr,
            master_port=master_port,
        )
        env["PET_NPROC_PER_NODE"] = str(procs_per_node)
        return env

    def sets(self, name: str) -> bool:
        return PYTORCHJOB.reason(name) is not None


@dataclass(frozen=True)
class MPIJobTarget(Target):
    """An MPIJob: ``nodes`` hosts of ``procs_per_node`` slots, started by the launcher."""

    operator: ClassVar[str] = "mpi-operator"
    master_vars: ClassVar[tuple[str, str]] = (
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_orte_set_default_slots",
    )
    launch: str = "mpirun"
    """How the launcher starts the script (the job's ``launch``); ``""`` for a command."""
    mpi: str = "OpenMPI"
    launcher_as_worker: bool = False
    launcher_args: tuple[str, ...] = ()
    forwarded: tuple[str, ...] = ()
    """Variables the launcher forwards to the ranks (``-x NAME``)."""

    def pod(self, node_rank: int) -> str:
        # The rehearsal's one process is the launcher; mpirun starts the ranks under it.
        return f"{self.name}-launcher"

    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        # kubeflow/mpi-operator pkg/controller/mpi_job_controller.go newLauncherPodTemplate.
        return mpijob_env(
            implementation=self.mpi,
            slots=procs_per_node,
            role="launcher",
            launcher_as_worker=self.launcher_as_worker,
        )

    def sets(self, name: str) -> bool:
        return MPIJOB.reason(name) is not None or name in self.operator_env


@dataclass(frozen=True)
class TrainJobTarget(Target):
    operator: ClassVar[str] = "Kubeflow Trainer"
    master_vars: ClassVar[tuple[str, str]] = ("PET_MASTER_ADDR", "PET_MASTER_PORT")

    def pod(self, node_rank: int) -> str:
        # JobSet's pod hostname <jobset>-<replicated job>-<job index>-<pod index>;
        # the pod's own name adds a random suffix.
        return f"{self.name}-{NODE}-0-{node_rank}"

    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        # kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/torch/torch.go: the five
        # PET_* variables on container "node", nothing else (torchrun sets the rest).
        return trainjob_env(
            trainjob=self.name,
            nodes=nodes,
            procs_per_node=procs_per_node,
            node_rank=node_rank,
            master_addr=master_addr,
            master_port=master_port,
        )

    def sets(self, name: str) -> bool:
        return TRAINJOB.reason(name) is not None


@dataclass(frozen=True)
class XGBoostJobTarget(Target):
    """An XGBoostJob: the Master (node 0) and Workers, one process each, which meet at the
    tracker the Master's script starts at MASTER_ADDR:MASTER_PORT."""

    operator: ClassVar[str] = "the operator"
    master_vars: ClassVar[tuple[str, str]] = ("MASTER_ADDR", "MASTER_PORT")
    one_process_per_pod: ClassVar[bool] = True

    def pod(self, node_rank: int) -> str:
        return pod_name(self.name, node_rank)

    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        # kubeflow/trainer v1.9.4 pkg/controller.v1/xgboost/xgboost.go SetPodEnv, every
        # Service name mapped to this machine.
        counts = {"Master": 1} | ({"Worker": nodes - 1} if nodes > 1 else {})
        role, index = ("Master", 0) if node_rank == 0 else ("Worker", node_rank - 1)
        env = xgboostjob_env(job=self.name, counts=counts, role=role, index=index)
        env |= {"MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port)}
        if "WORKER_ADDRS" in env:
            env["WORKER_ADDRS"] = ",".join([master_addr] * (nodes - 1))
            env["WORKER_PORT"] = str(master_port)
        return env

    def sets(self, name: str) -> bool:
        return name in self.operator_env or name in ("WORKER_ADDRS", "WORKER_PORT")


@dataclass(frozen=True)
class JAXJobTarget(Target):
    """A JAXJob: Workers, one JAX process each, which meet at Worker 0's coordinator."""

    operator: ClassVar[str] = "the operator"
    master_vars: ClassVar[tuple[str, str]] = ("COORDINATOR_ADDRESS", "COORDINATOR_PORT")
    one_process_per_pod: ClassVar[bool] = True

    def pod(self, node_rank: int) -> str:
        return f"{self.name}-worker-{node_rank}"

    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        # kubeflow/trainer v1.9.4 pkg/controller.v1/jax/envvar.go setPodEnv.
        env = jaxjob_env(job=self.name, workers=nodes, index=node_rank)
        return env | {"COORDINATOR_ADDRESS": master_addr, "COORDINATOR_PORT": str(master_port)}

    def sets(self, name: str) -> bool:
        return name in self.operator_env


def rank_target(
    ej: EffectiveJob, body: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, Any]]
) -> Target:
    """The Target of ``ej``, a job of ranks (not a RayJob: ``ray_target``), from its rendered
    object ``body`` and the ConfigMaps of its cluster (name → object), which hold the script
    files its pods mount."""
    pj = ej.planned
    if isinstance(pj.job, PyTorchJob) and pj.job.elastic is not None:
        raise RehearsalError(
            [
                Problem(
                    file=pj.definition.file,
                    line=pj.definition.line_of("elastic"),
                    obj=pj.job.describe(),
                    field="elastic",
                    message="an elastic job cannot be rehearsed yet (its Workers meet through "
                    "c10d rendezvous, not a Master); rehearse it without elastic=, which runs "
                    "the same script on the same number of nodes",
                )
            ]
        )
    if pj.runtime is not None:
        reason = _runtime_not_rehearsed(pj.runtime.runtime)
        if reason is not None:
            raise RehearsalError(
                [
                    Problem(
                        file=pj.definition.file,
                        line=pj.definition.line_of("runtime"),
                        obj=pj.job.describe(),
                        field="runtime",
                        message=f"runtime {pj.runtime.runtime.name!r} {reason}",
                    )
                ]
            )
    pods = _training_pods(ej)
    # An MPIJob's command and env are the launcher's; its files and resources the workers'.
    first = ej.pod_sets[0] if isinstance(pj.job, MPIJob) else pods[0]
    main = first.main
    procs = ej.procs_per_node
    auto = not procs.isdigit()
    resources = pods[0].main.get("resources") or {}
    amounts = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    gpu_resource = pj.cluster.gpu_resource
    gpus = ej.gpus_per_node()
    files, shm, claims = pod_mounts(pods[0], pods[0].main, configmaps)
    fields: dict[str, Any] = {
        "effective": ej,
        "nodes": sum(ps.count for ps in pods),
        "procs_per_node": max(1, gpus) if auto else int(procs),
        "procs_auto": auto,
        "image": str(main.get("image") or ""),
        "command": tuple(main["command"]) if main.get("command") else None,
        "args": tuple(main.get("args") or ()),
        "env": {e.name: e.value for e in first.env if from_definitions(e.source) and not e.ref},
        "cluster_env": {e.name: e.ref for e in first.env if e.ref},
        "operator_env": {e.name: e.value for e in first.env if not from_definitions(e.source)},
        "gpus": gpus,
        "cpu": text_or_none(amounts.get("cpu")),
        "memory": text_or_none(amounts.get("memory")),
        "extra_resources": {
            str(k): str(v)
            for k, v in sorted(amounts.items())
            if k not in ("cpu", "memory", gpu_resource)
        },
        "files": files,
        "shm_size": shm,
        "claims": claims,
        "env_sources": tuple(env_source_name(s) for s in main.get("envFrom") or []),
    }
    job = pj.job
    if isinstance(job, MPIJob):
        if job.launch == "horovodrun" and job.script is not None:
            raise RehearsalError(
                [
                    Problem(
                        file=pj.definition.file,
                        line=pj.definition.line_of("launch"),
                        obj=job.describe(),
                        field="launch",
                        message="a horovodrun job is not rehearsed: Horovod's last release "
                        "predates the torch a rehearsal runs; rehearse it with "
                        "launch='mpirun', which starts the same ranks",
                    )
                ]
            )
        return MPIJobTarget(
            **{**fields, "nodes": ej.nodes},
            nodes_label="hosts (nodes, and the launcher as a worker)",
            procs_label="procs_per_node (slots)",
            restart_policy=job.restart_policy,
            launch=job.launch if job.script is not None else "",
            mpi=job.mpi,
            launcher_as_worker=job.launcher_as_worker,
            launcher_args=tuple(job.launcher_args),
            forwarded=tuple(forwarded([*job.env, *job.env_refs, *pj.env_from_keys], pj.network)),
        )
    if isinstance(job, (XGBoostJob, JAXJob)):
        cls = XGBoostJobTarget if isinstance(job, XGBoostJob) else JAXJobTarget
        return cls(
            **fields,
            nodes_label="nodes",
            procs_label="processes per pod (one, the operator's)",
            restart_policy=job.restart_policy,
        )
    if isinstance(job, PyTorchJob):
        procs_label = "procs_per_node"
        if job.procs_per_node is None and gpus:
            procs_label += " (one per GPU)"
        master = body["spec"]["pytorchReplicaSpecs"]["Master"]
        return PyTorchJobTarget(
            **fields,
            nodes_label="nodes",
            procs_label=procs_label,
            restart_policy=master.get("restartPolicy"),
        )
    assert isinstance(job, TrainJob)
    trainer = body["spec"].get("trainer") or {}
    rt = pj.runtime.runtime if pj.runtime is not None else None
    from_rt = f"from runtime {rt.name!r}" if rt is not None else ""
    nodes_label = f"nodes ({from_rt})" if "numNodes" not in trainer and from_rt else "nodes"
    procs_label = "procs_per_node"
    if job.procs_per_node is None and (amounts or gpus):
        how = ["one per GPU" if gpus else "one per CPU"]
        if "resourcesPerNode" not in trainer and from_rt:
            how.append(from_rt)
        procs_label += f" ({', '.join(how)})"
    return TrainJobTarget(**fields, nodes_label=nodes_label, procs_label=procs_label)


def _runtime_not_rehearsed(rt: ClusterTrainingRuntime | TrainingRuntime) -> str | None:
    """Why a TrainJob on this runtime cannot be rehearsed yet, or None when it can."""
    if rt.mpi is not None:
        return (
            "is an MPI runtime, whose launcher starts the ranks over ssh; rehearsing it is "
            "not available yet (trainkit explain shows its pods)"
        )
    if rt.initializers is not None:
        return (
            "downloads a dataset or model before the nodes start; rehearsing TrainJobs on it "
            "is not available yet (trainkit explain shows its steps)"
        )
    if rt.flux is not None:
        return (
            "is a flux runtime; rehearsing TrainJobs on it is not available yet (trainkit "
            "explain shows its pods and the flux run command)"
        )
    if rt.ml_policy in ("jax", "xgboost"):
        return (
            f"is a {rt.ml_policy} runtime; rehearsing TrainJobs on it is not available yet "
            "(trainkit explain shows its pods; an XGBoostJob or JAXJob with the same script "
            "is rehearsed)"
        )
    return None


def _training_pods(ej: EffectiveJob) -> list[PodSet]:
    """The pod sets that run the ranks: every replica of a PyTorchJob, a TrainJob's ``node``,
    an MPIJob's workers."""
    if ej.kind == "TrainJob":
        return [ps for ps in ej.pod_sets if ps.role == NODE]
    if ej.kind == "MPIJob":
        return [ps for ps in ej.pod_sets if ps.role == "Worker"]
    return list(ej.pod_sets)


def pod_mounts(
    pod: PodSet, main: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, str], str | None, tuple[Claim, ...]]:
    """Script files at ``/workspace/<name>``, the ``/dev/shm`` size and the other volumes."""
    volumes = {v["name"]: v for v in pod.spec.get("volumes") or []}
    files: dict[str, str] = {}
    shm: str | None = None
    claims: list[Claim] = []
    for m in main.get("volumeMounts") or []:
        volume = volumes.get(m["name"], {})
        path = str(m["mountPath"])
        if "configMap" in volume and path.startswith(WORKSPACE + "/") and m.get("subPath"):
            data = configmaps.get(volume["configMap"]["name"], {}).get("data") or {}
            files[path.removeprefix(WORKSPACE + "/")] = str(data.get(m["subPath"], ""))
        elif path == "/dev/shm" and "emptyDir" in volume:
            shm = str((volume["emptyDir"] or {}).get("sizeLimit", "")) or None
        else:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            claims.append(Claim(str(claim or m["name"]), path))
    return files, shm, tuple(claims)


def text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def env_source_name(entry: Mapping[str, Any]) -> str:
    for ref, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
        if ref in entry:
            return f"{kind} {entry[ref].get('name')!r}"
    return str(dict(entry))
