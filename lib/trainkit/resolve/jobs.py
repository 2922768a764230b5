"""Placing jobs: the team's namespace, clusters and queue; a TrainJob's runtime; the image."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import Problem
from ..load import PLATFORM_DIR, Definition
from ..model import (
    ACCELERATORS,
    Cluster,
    ClusterQueue,
    ClusterTrainingRuntime,
    Job,
    MPIJob,
    NetworkProfile,
    PyTorchJob,
    RayCluster,
    RayJob,
    Resources,
    Role,
    Team,
    TrainJob,
)
from ..model.env import SecretEnv, own_pod_refs_refused
from ..model.job import Volume, image_for
from ..model.kueue import KUEUE_FRAMEWORKS
from ..model.operator_job import OperatorJob
from ..model.paddlejob import (
    PADDLE_OPERATOR,
    PaddleJob,
    paddle_operator_problems,
    training_operator_problems,
)
from ..model.platform import VOLCANO_DEFAULT_QUEUE
from ..model.rayjob import WorkerGroup
from ..model.runtime_node import pre_stop_grace_problem
from ..model.security import effective_user
from ..model.trainer import trainjob_object_name
from ..model.trainer_flux import (
    FLUX_MOUNTS,
    FLUX_VOLUMES,
    flux_command_problem,
    tasks_gpus_problem,
)
from ..model.trainer_initializers import INITIALIZER_VOLUME, initializer_claim
from ..model.volumes import CsiVolume, volume_fields, volume_name
from .access import check_access, check_env_from, granted_keys
from .index import Declared, Index
from .network import (
    check_extended_grant,
    check_network_grant,
    claims_unsupported,
    env_conflicts,
    extended_gpus,
    fabric_conflicts,
    host_network_mpijob,
    host_network_trainjob,
    resolve_network,
)
from .problems import known, problem
from .references import not_a_leaf, on_cluster
from .runtimes import PlannedRuntime, Runtimes

__all__ = [
    "Job",
    "PlannedJob",
    "check_head_services",
    "check_ray_clusters",
    "check_unique",
    "place",
]

# The controller each kind needs on a cluster (Cluster.operators).
_OPERATOR = {
    "PyTorchJob": "training-operator",
    "TFJob": "training-operator",
    "PaddleJob": "training-operator",  # or paddle-operator, whose API wins where it runs
    "XGBoostJob": "training-operator",
    "JAXJob": "training-operator",
    "MPIJob": "mpi-operator",
    "RayJob": "kuberay",
    "RayCluster": "kuberay",
    "TrainJob": "trainer",
}

# Trainer names a TrainJob's pods <trainjob>-node-0-<index> and uses that as the
# pod's hostname, a DNS label of at most 63 characters.
_HOSTNAME_MAX = 63


@dataclass(frozen=True)
class PlannedJob:
    """A job placed on one cluster, with what it inherits resolved."""

    job: Job
    definition: Definition
    cluster: Cluster
    namespace: str
    queue: str | None
    """Volcano queue, or None on clusters without Volcano."""
    runtime: PlannedRuntime | None = None
    """The runtime a TrainJob names, on this cluster; None for other kinds."""
    network: NetworkProfile | None = None
    """The network profile the job's pods get (a TrainJob's is its runtime's)."""
    image: str | None = None
    """The job's image on this cluster; None when a TrainJob takes its runtime's."""
    env_from_keys: tuple[str, ...] = ()
    """The variables the job's (or its runtime's) ``env_from`` sources set: the keys the
    team's grants list."""
    local_queue: str | None = None
    """Kueue's LocalQueue (named after its ClusterQueue) on a Kueue cluster, else None."""
    package_indexes: tuple[str, ...] = ()
    """The platform's package indexes (``Policy.package_indexes``) a RayJob's
    ``runtime_env.pip`` installs from; empty for other kinds."""
    ray_cluster: str | None = None
    """The Kubernetes name of the team's RayCluster a RayJob runs on (``ray_cluster=``) on
    this cluster; None otherwise."""
    cluster_queue: ClusterQueue | None = None
    """The ClusterQueue Kueue admits the job through (``local_queue``), for ``explain``."""

    @property
    def kind(self) -> str:
        return type(self.job).__name__

    def role_of(self, rtype: str) -> tuple[str, Role] | None:
        """The field and the settings of replica type ``rtype``'s role (``("ps", Role(…))``)
        when the job gives it one; None where the type runs the job's own settings."""
        job = self.job
        if not isinstance(job, OperatorJob):
            return None
        for field, role in job.roles().items():
            if job.ROLE_FIELDS[field] == rtype:
                return field, role
        return None

    def role_image(self, role: Role | None) -> str | None:
        """The image of a role's pods on this cluster: the role's own when it gives one (the
        plan reported a missing key), else the job's."""
        if role is None or role.image is None:
            return self.image
        return image_for(role.image, self.cluster.name, self.cluster.accelerator)

    @property
    def object_name(self) -> str:
        """The Kubernetes name (with a run number, ``<name>-r<run>``, when the job has one)."""
        return self.job.object_name

    @property
    def nodes(self) -> int:
        job = self.job
        if isinstance(job, TrainJob):
            return job.nodes or (self.runtime.runtime.nodes if self.runtime else 1)
        return job.nodes

    @property
    def resources(self) -> Resources | None:
        """Resources of each node as the job or its runtime declares them."""
        job = self.job
        if isinstance(job, TrainJob) and job.resources is None and self.runtime:
            return self.runtime.runtime.resources
        if isinstance(job, RayJob | RayCluster):  # the first worker group's, else the head's
            return job.workers[0].resources if job.workers else job.head
        return job.resources

    def trainer_procs(self) -> int:
        """``numProcPerNode`` as Trainer v2.3 resolves ``auto`` for these resources: one per
        GPU, else one per CPU of the request (the limit without one), rounded up
        (pkg/runtime/framework/plugins/torch/torch.go getNumCPUPerNode, Quantity.Value())."""
        job = self.job
        if isinstance(job, TrainJob) and job.procs_per_node is not None:
            return job.procs_per_node
        res = self.resources
        if res is None:
            return 1
        if res.gpu:
            return res.gpu
        return max(1, res.requested_cpus)


def place(
    job: Job,
    d: Definition,
    index: Index,
    runtimes: Runtimes,
    problems: list[Problem],
    ray_clusters: Mapping[tuple[str, str], list[str] | None] | None = None,
) -> list[PlannedJob]:
    """The job on each of its clusters; every reference problem is collected. A RayJob on a
    RayCluster (``ray_cluster=``) without ``clusters`` runs where that RayCluster does:
    ``ray_clusters`` maps (team, RayCluster name) to its ``clusters``."""
    if d.team not in index.teams:
        problems.append(
            problem(
                d,
                f"team {d.team!r} (directory jobs/{d.team}/) is not declared; "
                f"add Team(name={d.team!r}, queues=[...]) to jobs/{PLATFORM_DIR}/; "
                f"declared teams: {known(index.teams)}",
            )
        )
        return []
    declared_team = index.teams[d.team]
    team = declared_team.obj
    problems.extend(check_access(d, declared_team))
    if not isinstance(job, TrainJob):  # a TrainJob's profile is its runtime's
        problems.extend(check_network_grant(d, job.network, declared_team, index))
    if isinstance(job, RayJob | RayCluster):
        problems.extend(_check_autoscaling(d, job, declared_team))
        problems.extend(_check_head_service(d, job, declared_team))
    allowed = team.clusters if team.clusters is not None else sorted(index.clusters)
    wanted = job.clusters if job.clusters is not None else allowed
    if isinstance(job, RayJob) and job.ray_cluster is not None and job.clusters is None:
        theirs = (ray_clusters or {}).get((d.team, job.ray_cluster))
        if theirs is not None:
            wanted = theirs
    if not wanted:
        problems.append(problem(d, "the job runs on no cluster; set clusters=[...]", "clusters"))
    _check_image_keys(job, d, index, problems)
    out = []
    for i, cname in enumerate(wanted):
        field = f"clusters[{i}]" if job.clusters is not None else "clusters"
        if cname not in index.clusters:
            problems.append(
                problem(
                    d,
                    f"unknown cluster {cname!r}; defined clusters: {known(index.clusters)}",
                    field,
                )
            )
            continue
        if cname not in allowed:
            problems.append(
                problem(
                    d,
                    f"team {team.name!r} may not run on cluster {cname!r} "
                    f"(Team.clusters in {declared_team.file} allows {known(allowed)})",
                    field,
                )
            )
            continue
        cluster = index.clusters[cname].obj
        operator_missing = _operator_missing(job, cluster, index)
        if operator_missing is not None:
            problems.append(problem(d, operator_missing, field))
            continue
        if isinstance(job, PaddleJob) and PADDLE_OPERATOR in cluster.operators:
            for where, why in paddle_operator_problems(job):
                problems.append(problem(d, f"on cluster {cname!r} (paddle-operator): {why}", where))
        elif isinstance(job, PaddleJob):
            for where, why in training_operator_problems(job):
                problems.append(problem(d, f"on cluster {cname!r}: {why}", where))
        if isinstance(job, RayJob) and job.ray_cluster is not None:
            # Its pods, queue and quota are its RayCluster's (check_ray_clusters).
            queue, local_queue = None, None
            if cluster.scheduler == "volcano":
                # KubeRay v1.7.0 batchscheduler/volcano/volcano_scheduler.go handleRayJob,
                # called for every RayJob while Initializing (rayjob_controller.go): "gang
                # scheduling does not support RayJob ... referencing an existing RayCluster",
                # so the RayJob would stay Initializing.
                problems.append(
                    problem(
                        d,
                        f"cluster {cname!r} schedules with Volcano, where KubeRay (run with "
                        "--batch-scheduler=volcano) refuses a RayJob on an existing RayCluster "
                        "and keeps it Initializing forever (volcano_scheduler.go handleRayJob); "
                        "run it where the RayCluster is on Kueue or kube-scheduler, or give the "
                        "job a cluster of its own (head=..., workers=...)",
                        field if job.clusters is not None else "ray_cluster",
                    )
                )
                continue
        else:
            queue = _queue_for(d, job, index, cluster, problems)
            local_queue = _local_queue_for(d, job, index, cluster, problems)
        runtime, network = None, None
        if isinstance(job, TrainJob):
            found = runtimes.resolve(job.runtime, team.name, cname)
            if isinstance(found, str):
                problems.append(problem(d, found, "runtime"))
                continue
            runtime, network = found, found.network
            if found.runtime.mpi is not None:
                problems.extend(_mpi_trainjob(d, job, found))
            if found.runtime.flux is not None:
                problems.extend(_flux_trainjob(d, job, found, cluster))
            elif job.flux_view_image is not None:
                problems.append(
                    problem(
                        d,
                        f"runtime {found.runtime.name!r} is a {found.runtime.ml_policy} runtime, "
                        "not a flux one: nothing installs Flux from a view image there; drop "
                        "flux_view_image, or name a flux runtime",
                        "flux_view_image",
                    )
                )
            problems.extend(_initializer_trainjob(d, job, found, declared_team))
            short = pre_stop_grace_problem(found.runtime, job.termination_grace_period)
            if short is not None:
                problems.append(problem(d, short, "termination_grace_period"))
            if found.runtime.ml_policy in ("jax", "xgboost") and job.procs_per_node is not None:
                # trainer v2.3.0 plugins/jax/jax.go, plugins/xgboost/xgboost.go: neither reads
                # numProcPerNode; each node runs one process.
                problems.append(
                    problem(
                        d,
                        f"runtime {found.runtime.name!r} is a {found.runtime.ml_policy} runtime, "
                        "which runs one process per node and reads no procs_per_node: drop it",
                        "procs_per_node",
                    )
                )
            if isinstance(found.runtime, ClusterTrainingRuntime):
                # Its sources are read in this team's namespace, whose keys the team
                # controls (a TrainingRuntime's were checked against its team already).
                problems.extend(_runtime_env_from(d, job, found, declared_team))
                # Its pods are this team's: the profile must be granted to the team (a
                # TrainingRuntime's profile was checked against its own team already).
                through = f" through {found.describe()}"
                problems.extend(
                    check_network_grant(
                        d, found.runtime.network, declared_team, index, "runtime", through
                    )
                )
            # A TrainJob's env reaches the same container as its runtime's profile env.
            problems.extend(env_conflicts(d, {**job.env, **job.env_refs}, network, index))
            problems.extend(host_network_trainjob(d, job, found.runtime, network))
        else:
            network = resolve_network(d, job.network, cluster, index, problems)
            if isinstance(job, OperatorJob):
                # A role's variables reach its pods beside the profile's, as the job's do.
                for field, role in job.roles().items():
                    problems.extend(
                        env_conflicts(d, role.env, network, index, (f"{field}.env", f"{field}.env"))
                    )
            if isinstance(job, MPIJob):
                problems.extend(host_network_mpijob(d, job, network))
        problems.extend(fabric_conflicts(d, network, index))
        problems.extend(claims_unsupported(d, network, cluster))
        problems.extend(extended_gpus(d, cluster))
        problems.extend(check_extended_grant(d, declared_team, index, cluster.name))
        image = _image(job, d, cluster, problems)
        # A TrainJob has no env_from of its own (refused): its runtime's reach its pods.
        sources = [*job.env_from, *(runtime.runtime.env_from if runtime else ())]
        indexes = tuple(index.rules.package_indexes) if isinstance(job, RayJob) else ()
        cq = index.cluster_queues.get(local_queue) if local_queue is not None else None
        pj = PlannedJob(
            job, d, cluster, team.target_namespace, queue, runtime, network, image,
            granted_keys(sources, team), local_queue, indexes,
            cluster_queue=cq.obj if cq else None,
        )  # fmt: skip
        _check_hostnames(pj, problems)
        _check_csi(pj, problems)
        out.append(pj)
    return out


def _check_autoscaling(
    d: Definition, job: RayJob | RayCluster, team: Declared[Team]
) -> list[Problem]:
    """An autoscaled worker group needs ``Team.ray_autoscaling``.

    KubeRay v1.7.0 ray-operator/controllers/ray/common/pod.go DefaultHeadPodTemplate: the
    autoscaled head runs as the autoscaler's ServiceAccount; common/rbac.go BuildRole: that
    ServiceAccount may patch the job's pods and rayclusters.
    """
    if team.obj.ray_autoscaling:
        return []
    for i, g in enumerate(job.workers):
        low, high = g.scaling
        if low == high:
            continue
        return [
            problem(
                d,
                f"worker group {g.name!r} autoscales ({low}..{high} nodes), which runs the head "
                "(and the job's code) as KubeRay's autoscaler ServiceAccount, allowed to patch "
                f"the RayCluster and its pods; team {team.obj.name!r} is not granted "
                f"ray_autoscaling (Team.ray_autoscaling in {team.file} is False): give each "
                "group equal min_nodes and max_nodes, or ask the platform team to set "
                "ray_autoscaling=True on the team",
                f"workers[{i}]",
            )
        ]
    return []


def _check_head_service(
    d: Definition, job: RayJob | RayCluster, team: Declared[Team]
) -> list[Problem]:
    """A head Service beyond the cluster's network needs ``Team.ray_head_service_types``,
    each of its annotations ``Team.ray_head_service_annotations``, and each of the job's own
    ports on it ``Team.ray_head_service_ports``.

    KubeRay v1.7.0 common/service.go BuildServiceForHeadPod: the Service takes the type of
    ``serviceType`` and every port of the head's container (getServicePorts: Ray's dashboard,
    GCS and client by default); the dashboard's job API runs what it is sent.
    """
    service = job.head_service
    if service is None or not service.exposed:
        return []
    grants = team.obj
    if service.type not in grants.ray_head_service_types:
        return [
            problem(
                d,
                f"head_service type {service.type!r} opens the Ray head beyond the cluster: its "
                "dashboard runs any job submitted to it, as this job (its service account, "
                f"Secrets and GPUs); team {grants.name!r} is not granted it "
                f"(Team.ray_head_service_types in {team.file} allows "
                f"{known(grants.ray_head_service_types)}): use type='ClusterIP' and reach the "
                "dashboard with `kubectl port-forward`, or ask the platform team to grant it",
                "head_service.type",
            )
        ]
    # service.go BuildServiceForHeadPod keeps a headService's own annotations, and
    # common/job.go BuildHeadServiceForRayJob builds a RayJob's <job>-head-svc from the same
    # headService, so both Services carry them.
    out = []
    for key, value in sorted(service.annotations.items()):
        allowed = grants.ray_head_service_annotations.get(key)
        if allowed is not None and ("*" in allowed or value in allowed):
            continue
        if allowed is None:
            why = (
                f"allows keys {known(sorted(grants.ray_head_service_annotations))}"
                if grants.ray_head_service_annotations
                else "allows none"
            )
        else:
            why = f"allows {known(allowed)} for it"
        out.append(
            problem(
                d,
                f"annotation {key}={value!r} on the {service.type} head Service is read by the "
                "cloud's load balancer controller and may change who reaches the head (whose "
                f"dashboard runs any job submitted to it); team {grants.name!r} is not granted "
                f"it (Team.ray_head_service_annotations in {team.file} {why}): drop it, or ask "
                "the platform team to grant it",
                f"head_service.annotations.{key}",
            )
        )
    for name in job.ports:
        if name not in grants.ray_head_service_ports:
            out.append(
                problem(
                    d,
                    f"port {name!r} would be reachable on the {service.type} head Service "
                    "(KubeRay puts every port of the head's container on it); team "
                    f"{grants.name!r} may expose {known(grants.ray_head_service_ports)} there "
                    f"(Team.ray_head_service_ports in {team.file}): drop the port, keep the "
                    "Service a ClusterIP one, or ask the platform team to grant it",
                    f"ports.{name}",
                )
            )
    return out


def _runtime_env_from(
    d: Definition, job: TrainJob, runtime: PlannedRuntime, team: Declared[Team]
) -> list[Problem]:
    rt = runtime.runtime
    if not rt.env_from:
        return []
    own = {*rt.env, *rt.env_refs, *job.env, *job.env_refs}
    via = f"runtime {rt.name!r} takes sources whole (env_from) from the job's namespace: "
    return check_env_from(d, team, rt.env_from, own, "TrainJob", lambda i: "runtime", via)


TRAINER_MPI_VOLUMES = ("mpi-hostfile", "mpi-ssh-auth")


def _mpi_trainjob(d: Definition, job: TrainJob, runtime: PlannedRuntime) -> list[Problem]:
    """What a TrainJob may not say on an MPI runtime: Trainer writes spec.trainer's image into
    the trainer job's container only (pkg/runtime/framework/plugins/jobset/builder.go), the
    launcher, so the nodes would keep the runtime's. Its resourcesPerNode reach the node job
    too when the launcher is a node (pkg/runtime/core/trainingruntime.go newRuntimeInfo,
    isMPILauncherAsNode), and only then."""
    out = []
    assert runtime.runtime.mpi is not None
    fields = ["image"] if runtime.runtime.mpi.launcher_as_node else ["image", "resources"]
    for field, what in ((f, f) for f in fields):
        if getattr(job, field) is not None:
            out.append(
                problem(
                    d,
                    f"runtime {runtime.runtime.name!r} is an MPI runtime, where a TrainJob's "
                    f"{what} would reach only the launcher, not the nodes that run the ranks; "
                    "set it on the runtime",
                    field,
                )
            )
    try:
        own_pod_refs_refused(job.env_refs, "env_refs")
    except ValueError as e:
        out.append(problem(d, f"on MPI runtime {runtime.runtime.name!r}: {e}", "env_refs"))
    # The runtime's user reads the ssh key, mode 0640, through its fs_group, at its own
    # ~/.ssh (ssh_dir): another user or group would find no usable key (see the runtime's
    # _ssh_key_readable).
    rt, mpi = runtime.runtime, runtime.runtime.mpi
    for i, v in enumerate(job.volumes):
        # Trainer's MPI plugin adds these volumes (trainer v2.3.0 pkg/constants/constants.go
        # MPIHostfileVolumeName, MPISSHAuthVolumeName); a patch's of the same name would be
        # merged into them.
        if volume_name(v) in TRAINER_MPI_VOLUMES:
            out.append(
                problem(
                    d,
                    f"volume {volume_name(v)!r} has the name of a volume Trainer's MPI plugin "
                    f"adds ({', '.join(TRAINER_MPI_VOLUMES)}); rename it",
                    f"volumes[{i}]",
                )
            )
    pod, own = job.security_context, job.container_security_context
    uid, _ = effective_user(pod, own)
    uid_field = (
        "container_security_context"
        if own is not None and own.run_as_user is not None
        else "security_context"
    )
    fs_group = pod.fs_group if pod is not None else None
    for what, field, mine, theirs in (
        ("run_as_user", uid_field, uid, rt.run_as_user),
        ("fs_group", "security_context", fs_group, rt.fs_group),
    ):
        if mine is not None and mine != theirs:
            out.append(
                problem(
                    d,
                    f"{what}={mine} differs from the {what} {theirs} of MPI runtime "
                    f"{rt.name!r}, whose ssh keys (mode 0640 at {mpi.ssh_dir}) only that "
                    f"user and group can use; leave {what} out",
                    f"{field}.{what}",
                )
            )
    return out


def _initializer_trainjob(
    d: Definition, job: TrainJob, runtime: PlannedRuntime, team: Declared[Team]
) -> list[Problem]:
    """What a TrainJob's dataset and model need from its runtime's steps (trainer v2.3.0
    plugins/jobset/jobset.go Validate) and from the workspace claim (jobset v0.12.0
    pkg/webhooks/jobset_webhook.go validateVolumeClaimPolicies)."""
    rt = runtime.runtime
    steps = rt.initializers
    out = []
    for field, source in (("dataset", job.dataset), ("model", job.model)):
        if source is None:
            continue
        if steps is None or getattr(steps, field) is None:
            out.append(
                problem(
                    d,
                    f"runtime {rt.name!r} has no {field} step (RuntimeInitializers({field}=...)): "
                    f"Trainer's webhook refuses a TrainJob's {field} without one; drop {field}= "
                    "or choose a runtime with the step",
                    field,
                )
            )
        if source.secret is not None:
            # builder.go Initializer: envFrom.secretRef, every key a variable of the step.
            def at(_: int, name: str = field) -> str:
                return name

            out.extend(
                check_env_from(d, team, [SecretEnv(secret=source.secret)], (), "TrainJob", at)
            )
    if steps is None:
        return out
    for field, source in (("dataset", job.dataset), ("model", job.model)):
        step = getattr(steps, field)
        given = source.storage_uri if source is not None else None
        if step is not None and step.storage_uri is None and given is None:
            # Kubeflow's initializer images read STORAGE_URI and fail without it (trainer
            # v2.3.0 pkg/initializers/dataset/__main__.py, model/__main__.py).
            out.append(
                problem(
                    d,
                    f"runtime {rt.name!r}'s {field} step has no storage_uri and the job gives "
                    "none: the step reads STORAGE_URI and fails without it; give "
                    f"{field}=DataSource(storage_uri=...)",
                    field,
                )
            )
    claim = initializer_claim(trainjob_object_name(job.name, job.run))
    if len(claim) > 63:
        out.append(
            problem(
                d,
                f"the workspace claim {claim!r} would exceed 63 characters (JobSet names it "
                f"initializer-<TrainJob>); shorten the name by {len(claim) - 63} characters",
                "name",
            )
        )
    nodes = job.nodes if job.nodes is not None else rt.nodes
    if steps.access_mode == "ReadWriteOnce" and nodes > 1:
        out.append(
            problem(
                d,
                f"runtime {rt.name!r} gives a ReadWriteOnce workspace: a ReadWriteOnce volume "
                f"attaches to one machine, and {nodes} nodes on different machines could not "
                "all mount it; run 1 node, or ask for access_mode='ReadWriteMany'",
                "nodes",
            )
        )
    for v in job.volumes:
        if volume_name(v) == INITIALIZER_VOLUME:
            what = "claim" if isinstance(v, Volume) else "volume"
            out.append(
                problem(
                    d,
                    f"{what} {volume_name(v)!r} has the name of the workspace volume of runtime "
                    f"{rt.name!r}, which JobSet refuses beside it; rename the {what}",
                    "volumes",
                )
            )
    return out


def _flux_trainjob(
    d: Definition, job: TrainJob, runtime: PlannedRuntime, cluster: Cluster
) -> list[Problem]:
    """What a TrainJob cannot say on a flux runtime (trainer v2.3.0 plugins/flux/flux.go and
    its templates/entrypoint.sh)."""
    rt = runtime.runtime
    assert rt.flux is not None
    on = f"runtime {rt.name!r} is a flux runtime: "
    out = []
    if job.script is None and job.command is None and rt.command is None:
        # getOriginalCommand reads the runtime's container command, then the TrainJob's;
        # entrypoint.sh runs an interactive broker for an empty command.
        out.append(
            problem(
                d,
                on + "Trainer's Flux plugin runs the job's command under flux run; without "
                "script= or command= (or the runtime's command=) its entrypoint starts a Flux "
                "instance that never ends; give the job a script or a command",
                "command",
            )
        )
    for field, words in (("command", job.command or []), ("args", job.args)):
        why = flux_command_problem(list(words))
        if why is not None:
            out.append(
                problem(
                    d,
                    on + "Trainer's Flux plugin joins command and args with spaces and its "
                    f"entrypoint splits them again unquoted: {why}; pass the value without "
                    "spaces or pattern characters (e.g. in a file the script reads)",
                    field,
                )
            )
    # Trainer counts GPUs only under a resource name holding "gpu" (pkg/runtime/runtime.go
    # GetNumGPUPerNode), which is what flux.go asks for per task.
    res = job.resources if job.resources is not None else rt.resources
    gpus = res.gpu if res is not None and "gpu" in cluster.gpu_resource.lower() else 0
    tasks = job.procs_per_node if job.procs_per_node is not None else rt.flux.procs_per_node
    why = tasks_gpus_problem(tasks, gpus)
    if why is not None and (job.procs_per_node is not None or job.resources is not None):
        field = "procs_per_node" if job.procs_per_node is not None else "resources"
        out.append(problem(d, on + why, field))
    for v in job.volumes:
        if volume_name(v) in FLUX_VOLUMES:
            what = "claim" if isinstance(v, Volume) else "volume"
            out.append(
                problem(
                    d,
                    on + f"{what} {volume_name(v)!r} has the name of a volume Trainer's Flux "
                    f"plugin adds ({', '.join(sorted(FLUX_VOLUMES))}), which would replace it; "
                    f"rename the {what}",
                    "volumes",
                )
            )
        for path, volume in FLUX_MOUNTS.items():
            if v.path == path or v.path.startswith(path + "/"):
                out.append(
                    problem(
                        d,
                        on + f"mount path {v.path!r} is where Trainer's Flux plugin mounts "
                        f"{volume} ({path}), replacing a mount there; choose another path, "
                        "e.g. /mnt/data",
                        "volumes",
                    )
                )
    return out


def _operator_missing(job: Job, cluster: Cluster, index: Index) -> str | None:
    kind = type(job).__name__
    needs = _OPERATOR[kind]
    if needs in cluster.operators or (kind == "PaddleJob" and PADDLE_OPERATOR in cluster.operators):
        return None
    also = (
        " (the Training Operator's MPIJob v1 is another API under the same CRD name, which "
        "trainkit does not generate)"
        if kind == "MPIJob"
        else ""
    )
    return (
        f"cluster {cluster.name!r} does not run {needs}, which {kind}s need{also}; "
        f"Cluster.operators in {index.cluster_file(cluster.name)} lists "
        f"{known(cluster.operators)}; choose other clusters or add {needs!r} there once the "
        "cluster runs it"
    )


def _images(job: Job) -> list[tuple[str, str | dict[str, str] | None]]:
    """``(field, image)`` of the job and of each role that gives its own."""
    out: list[tuple[str, str | dict[str, str] | None]] = [("image", job.image)]
    if isinstance(job, OperatorJob):
        out += [(f"{f}.image", r.image) for f, r in job.roles().items() if r.image is not None]
    if isinstance(job, RayJob) and job.submitter is not None and job.submitter.image is not None:
        out.append(("submitter.image", job.submitter.image))
    if isinstance(job, TrainJob) and job.flux_view_image is not None:
        out.append(("flux_view_image", job.flux_view_image))
    return out


def _check_image_keys(job: Job, d: Definition, index: Index, problems: list[Problem]) -> None:
    for field, image in _images(job):
        if not isinstance(image, dict):
            continue
        for key in sorted(image):
            if key not in index.clusters and key not in ACCELERATORS:
                problems.append(
                    problem(
                        d,
                        f"{field} key {key!r} is neither a cluster nor an accelerator; use a "
                        f"cluster name ({known(index.clusters)}) or {known(ACCELERATORS)}",
                        f"{field}.{key}",
                    )
                )


def _image(job: Job, d: Definition, cluster: Cluster, problems: list[Problem]) -> str | None:
    for field, image in _images(job)[1:]:
        if image is not None and image_for(image, cluster.name, cluster.accelerator) is None:
            problems.append(_no_image(d, cluster, field))
    if job.image is None:
        return None
    image = image_for(job.image, cluster.name, cluster.accelerator)
    if image is None:
        problems.append(_no_image(d, cluster, "image"))
    return image


def _no_image(d: Definition, cluster: Cluster, field: str) -> Problem:
    accel = (
        f" (accelerator {cluster.accelerator!r})"
        if cluster.accelerator
        else " (it declares no accelerator)"
    )
    return problem(
        d,
        f"{'no image' if field == 'image' else f'no {field}'} for cluster {cluster.name!r}"
        f"{accel}; add a key for the cluster"
        + (f" or {cluster.accelerator!r}" if cluster.accelerator else ""),
        field,
    )


def _check_csi(pj: PlannedJob, problems: list[Problem]) -> None:
    """A problem per CSI volume whose driver the cluster does not list: the kubelet finds no
    such driver and the pod never starts (and an unlisted driver may mount anything)."""
    listed = pj.cluster.csi_drivers
    for field, v in volume_fields(pj.job):
        if isinstance(v, CsiVolume) and v.driver not in listed:
            problems.append(
                problem(
                    pj.definition,
                    f"on cluster {pj.cluster.name!r}: CSI driver {v.driver!r} is not one the "
                    f"cluster lists (Cluster.csi_drivers: {known(listed)}); use a listed "
                    "driver, or ask the platform team",
                    field,
                )
            )


def _check_hostnames(pj: PlannedJob, problems: list[Problem]) -> None:
    job = pj.job
    if isinstance(job, TrainJob):
        hostname = f"{pj.object_name}-node-0-{pj.nodes - 1}"
        if len(hostname) > _HOSTNAME_MAX:
            over = len(hostname) - _HOSTNAME_MAX
            problems.append(
                problem(
                    pj.definition,
                    f"name {job.name!r} is too long for run {job.run} on {pj.nodes} nodes: the "
                    f"pod hostname {hostname!r} would exceed 63 characters; shorten the name "
                    f"by {over} characters",
                    "name",
                )
            )


def _local_queue_for(
    d: Definition, job: Job, index: Index, cluster: Cluster, problems: list[Problem]
) -> str | None:
    """The ClusterQueue a job on a Kueue cluster is admitted by (through the LocalQueue of
    the same name in its namespace), and what Kueue v0.19 cannot manage refused."""
    if cluster.scheduler != "kueue":
        return None
    team = index.teams[d.team]
    for where, why in kueue_problems(job, cluster):
        problems.append(problem(d, f"on cluster {cluster.name!r} (Kueue): {why}", where or ""))
    here = [q for q in team.obj.queues if q in index.cluster_queues]
    here = [q for q in here if on_cluster(index.cluster_queues[q].obj, cluster.name)]
    name = job.queue or (here[0] if here else None)
    if name is None:
        problems.append(
            problem(
                d,
                f"cluster {cluster.name!r} admits jobs through Kueue but team {team.obj.name!r} "
                f"lists no ClusterQueue there; add one to its queues in {team.file}",
                "queue",
            )
        )
        return None
    if name not in team.obj.queues:
        problems.append(
            problem(
                d,
                f"team {team.obj.name!r} may not use queue {name!r}; its queues: "
                f"{known(team.obj.queues)} (Team in {team.file})",
                "queue",
            )
        )
        return None
    if name not in here:
        volcano = (
            "; 'default' here is Volcano's own queue, which Kueue clusters lack"
            if name == VOLCANO_DEFAULT_QUEUE and name not in index.cluster_queues
            else ""
        )
        problems.append(
            problem(
                d,
                f"queue {name!r} is no Kueue ClusterQueue on cluster {cluster.name!r}; the "
                f"team's queues there: {known(here)}{volcano}",
                "queue",
            )
        )
        return None
    return name


def kueue_problems(job: Job, cluster: Cluster) -> list[tuple[str | None, str]]:
    """``(field, why)`` for what Kueue v0.19 on ``cluster`` would not manage as written
    (kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/*: the integrations and webhooks)."""
    kind = type(job).__name__
    out: list[tuple[str | None, str]] = []
    if isinstance(job, PaddleJob) and PADDLE_OPERATOR in cluster.operators:
        out.append(
            (
                None,
                "paddle-operator's batch.paddlepaddle.org PaddleJob is no Kueue integration: it "
                "would run at once, outside every quota; run it on another cluster",
            )
        )
        return out
    framework = KUEUE_FRAMEWORKS[kind]
    if framework not in cluster.kueue_integrations:
        out.append(
            (
                None,
                f"Kueue does not manage {kind}s here ({framework!r} is not in "
                "Cluster.kueue_frameworks; v0.19 ships with the Training Operator's kinds "
                "off): the job would run at once, outside every quota. Enable the integration "
                "in Kueue's configuration and list it, or run on another cluster",
            )
        )
    if isinstance(job, PyTorchJob) and job.elastic is not None and job.elastic.metrics:
        # kueue v0.19.2 pkg/controller/jobframework/reconciler.go ensureOneWorkload: once the
        # autoscaler changes the Worker replicas, the running job no longer matches its
        # Workload (EquivalentToWorkload compares pod counts), so Kueue stops it
        # (StopReasonNoMatchingWorkload) and queues a new Workload: every scaling step would
        # end the training and wait in the queue again. Elastic workload slices do not cover
        # kubeflow.org jobs in v0.19.
        out.append(
            (
                "elastic",
                "Kueue stops a running PyTorchJob whose Worker count changes (its Workload no "
                "longer matches) and queues it again, so each step of the autoscaler "
                "(elastic.metrics) would end the training; drop metrics here (the job keeps "
                "nodes Workers) or run on a Volcano cluster",
            )
        )
    if isinstance(job, RayJob):
        # pkg/controller/jobs/rayjob/rayjob_webhook.go validateCreate.
        if job.autoscaled:
            out.append(
                (
                    "workers",
                    "Kueue refuses RayJobs whose cluster autoscales "
                    "(enableInTreeAutoscaling): give each group equal min_nodes and max_nodes",
                )
            )
        if job.deletion_rules or not job.shutdown_after_finish:
            out.append(
                (
                    "deletion_rules" if job.deletion_rules else "shutdown_after_finish",
                    "Kueue manages only RayJobs that delete their Ray cluster when they end "
                    "(shutdownAfterJobFinishes): drop deletion_rules and keep "
                    "shutdown_after_finish=True",
                )
            )
        if job.ttl_seconds:
            # Kueue finishes the workload, freeing its quota, once the job deployment is
            # Complete or Failed (pkg/controller/jobs/rayjob/rayjob_controller.go Finished);
            # KubeRay deletes the Ray cluster ttlSecondsAfterFinished later.
            out.append(
                (
                    "ttl_seconds",
                    "Kueue frees the job's quota when the Ray job ends, while its pods keep "
                    f"their GPUs for ttl_seconds ({job.ttl_seconds} s) more, so other jobs "
                    "would be admitted onto GPUs still taken; drop ttl_seconds here",
                )
            )
        out.extend(_kueue_ray_groups(job.workers, job.submission_mode == "K8sJobMode"))
    if isinstance(job, RayCluster):
        # pkg/controller/jobs/raycluster/raycluster_webhook.go validateCreate: no in-tree
        # autoscaling (outside elastic workload slices), at most 18 pod sets, no group "head".
        if job.autoscaled:
            out.append(
                (
                    "workers",
                    "Kueue refuses a queued RayCluster that autoscales (enableInTreeAutoscaling): "
                    "give each group equal min_nodes and max_nodes",
                )
            )
        out.extend(_kueue_ray_groups(job.workers, False))
    return out


def _kueue_ray_groups(workers: list[WorkerGroup], submitter: bool) -> list[tuple[str | None, str]]:
    """Kueue's limits on a Ray cluster's groups: at most 18 pod sets a Workload (the head's,
    each group's and, for a RayJob in K8sJobMode, the submitter's: jobframework MaxPodSets),
    each named once."""
    out: list[tuple[str | None, str]] = []
    limit = 16 if submitter else 17
    if len(workers) > limit:
        out.append(
            (
                "workers",
                f"{len(workers)} worker groups; Kueue admits at most {limit} (18 pod "
                "sets with the head" + (" and the submitter)" if submitter else ")"),
            )
        )
    # Pod sets are keyed by name: the head's, each group's and, in K8sJobMode, Kueue's own
    # "submitter" (rayjob_controller.go PodSets, addSubmitterPodSet).
    taken = {"head": "head"}
    if submitter:
        taken["submitter"] = "submitter"
    for g in workers:
        if g.name in taken:
            out.append(
                (
                    "workers",
                    f"a worker group named {g.name!r} clashes with Kueue's {taken[g.name]} "
                    "pod set, so the workload would never be admitted; rename the group",
                )
            )
    return out


def _queue_for(
    d: Definition, job: Job, index: Index, cluster: Cluster, problems: list[Problem]
) -> str | None:
    if cluster.scheduler != "volcano":
        return None
    declared_team = index.teams[d.team]
    team = declared_team.obj
    name = job.queue or (team.queues[0] if team.queues else None)
    field = "queue"
    if name is None:
        problems.append(
            problem(
                d,
                f"cluster {cluster.name!r} schedules with Volcano but team "
                f"{team.name!r} has no queues; add queues=[...] to its Team "
                f"in {declared_team.file}",
                field,
            )
        )
        return None
    if name not in team.queues:
        grant = (
            "; Volcano's own queue 'default' is the platform's to grant: it lists \"default\" "
            "in the Team's queues"
            if name == VOLCANO_DEFAULT_QUEUE
            else ""
        )
        problems.append(
            problem(
                d,
                f"team {team.name!r} may not use queue {name!r}; its queues: "
                f"{known(team.queues)} (Team in {declared_team.file}){grant}",
                field,
            )
        )
        return None
    if name == VOLCANO_DEFAULT_QUEUE:
        # Volcano's own queue: the scheduler creates it on every Volcano cluster
        # (volcano-sh/volcano v1.12.4 pkg/scheduler/cache/cache.go newDefaultAndRootQueue)
        # and it has no children, so there is nothing more to check here.
        return name
    if name in index.queues and not on_cluster(index.queues[name].obj, cluster.name):
        problems.append(
            problem(
                d,
                f"queue {name!r} does not exist on cluster {cluster.name!r}; "
                "add the cluster to the Queue's clusters or choose other "
                "clusters",
                field,
            )
        )
    leaf = not_a_leaf(d, name, index, field)
    if leaf is not None:
        problems.append(leaf)
    return name


def check_ray_clusters(placed: list[PlannedJob], problems: list[Problem]) -> list[PlannedJob]:
    """``placed`` with each RayJob on an existing RayCluster (``ray_cluster=``) pointed at it.

    KubeRay looks the cluster up by name in the RayJob's namespace (v1.7.0 rayjob_controller.go
    getOrCreateRayClusterInstance: "It must be created manually"): the name must be a RayCluster
    the same team defines on the same cluster. One another team defines, or none, is refused:
    the job would run on pods (and quota) that are not its team's, or wait forever."""
    clusters = {
        (p.cluster.name, p.definition.team, p.job.name): p
        for p in placed
        if isinstance(p.job, RayCluster)
    }
    out = []
    for p in placed:
        job = p.job
        if not isinstance(job, RayJob) or job.ray_cluster is None:
            out.append(p)
            continue
        found = clusters.get((p.cluster.name, p.definition.team, job.ray_cluster))
        if found is not None and isinstance(found.job, RayCluster):
            pool = found.job
            why = job.entrypoint_problem(pool.head, pool.head_ray_start, pool.workers)
            if why is not None:
                problems.append(
                    problem(
                        p.definition,
                        f"on RayCluster {job.ray_cluster!r} ({found.definition.file}): {why}",
                        "entrypoint_resources",
                    )
                )
            out.append(dataclasses.replace(p, ray_cluster=found.object_name))
            continue
        here = sorted(
            name
            for (c, team, name) in clusters
            if c == p.cluster.name and team == p.definition.team
        )
        others = sorted(
            team for (c, team, name) in clusters if c == p.cluster.name and name == job.ray_cluster
        )
        whose = (
            f"; a RayCluster of that name belongs to team {others[0]!r}, whose pods and quota "
            "are not this team's"
            if others
            else ""
        )
        problems.append(
            problem(
                p.definition,
                f"ray_cluster {job.ray_cluster!r}: team {p.definition.team!r} defines no "
                f"RayCluster of that name on cluster {p.cluster.name!r}{whose}; KubeRay would "
                "wait for it forever. The team's RayClusters there: "
                f"{', '.join(repr(n) for n in here) or 'none'}: name one, or define "
                f"RayCluster(name={job.ray_cluster!r}, ...) on the same clusters",
                "ray_cluster",
            )
        )
    return out


def check_head_services(placed: list[PlannedJob], problems: list[Problem]) -> None:
    """A head Service's own name (``HeadService(name=...)``) is unique among the Services
    KubeRay makes in the namespace: another head Service's, and each RayJob's and
    RayCluster's ``<name>-head-svc`` (v1.7.0 utils/util.go GenerateHeadServiceName). KubeRay
    creates it once and never adopts one that exists (raycluster_controller.go
    reconcileHeadService), so a second would keep its cluster from starting."""
    taken: dict[tuple[str, str, str], tuple[PlannedJob, str]] = {}
    for p in placed:
        if isinstance(p.job, RayJob | RayCluster) and not getattr(p.job, "ray_cluster", None):
            key = (p.cluster.name, p.namespace, f"{p.object_name}-head-svc")
            taken.setdefault(key, (p, "KubeRay's head Service of"))
    for p in placed:
        service = getattr(p.job, "head_service", None)
        if service is None or service.name is None:
            continue
        key = (p.cluster.name, p.namespace, service.name)
        first = taken.get(key)
        if first is not None and first[0].definition is not p.definition:
            other, whose = first
            od = other.definition
            problems.append(
                problem(
                    p.definition,
                    f"head_service name {service.name!r} is already {whose} {other.kind} "
                    f"{other.object_name!r} ({od.file}:{od.line}) in namespace {p.namespace!r} on "
                    f"cluster {p.cluster.name!r}; KubeRay would not create a second: choose "
                    "another name",
                    "head_service.name",
                )
            )
        taken.setdefault(key, (p, "the head Service of"))


def check_unique(placed: list[PlannedJob], problems: list[Problem]) -> None:
    """Two jobs may not share a name in a namespace of a cluster, whatever their kinds:
    Volcano's PodGroup takes the object's name for both (training-operator
    pkg/controller.v1/common/job.go; trainer pkg/runtime/framework/plugins/volcano/volcano.go)."""
    seen: dict[tuple[str, str, str], PlannedJob] = {}
    for p in placed:
        key = (p.cluster.name, p.namespace, p.object_name)
        first = seen.get(key)
        if first is not None and first.definition is not p.definition:
            fd = first.definition
            same = first.kind == p.kind
            clash = (
                f"another {p.kind} named {p.object_name!r}"
                if same
                else f"{first.kind} {first.object_name!r} ({fd.file}:{fd.line}) has the same "
                f"Kubernetes name, and both would own Volcano PodGroup {p.object_name!r}"
            )
            where = f" ({fd.file}:{fd.line})" if same else ""
            problems.append(
                problem(
                    p.definition,
                    f"{clash} runs in namespace {p.namespace!r} on cluster "
                    f"{p.cluster.name!r}{where}; rename one",
                    "name",
                )
            )
        seen.setdefault(key, p)
