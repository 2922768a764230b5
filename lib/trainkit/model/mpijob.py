"""The MPIJob (``kubeflow.org/v2beta1``, kubeflow/mpi-operator v0.8) definition.

One launcher pod runs ``mpirun`` (or ``deepspeed``, ``horovodrun``) against the hostfile the
operator writes; the worker pods run sshd and the ranks. Rules below cite
kubeflow/mpi-operator at v0.8 (pkg/apis/kubeflow/validation/validation.go,
pkg/controller/mpi_job_controller.go).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .env import EnvRef, own_pod_refs_refused
from .fields import Arg, Path
from .job import Resources, Volume
from .operator_job import OperatorJob, Role
from .security import effective_user
from .volumes import volume_name

__all__ = [
    "HOST_NETWORK_SSH_PORT",
    "LAUNCHER_RESOURCES",
    "MIN_TTL_SECONDS",
    "MPI_RESERVED_VOLUMES",
    "MPIJob",
]

LAUNCHER_RESOURCES = Resources(cpu="1", memory="2Gi")
"""What a launcher that is not a worker gets unless ``launcher=Role(resources=…)`` says
otherwise: it only starts the ranks over ssh."""

# Volumes mpi-operator adds to the pods (configVolumeName, sshAuthVolume).
MPI_RESERVED_VOLUMES = frozenset({"mpi-job-config", "ssh-auth"})
_CONFIG_DIR = "/etc/mpi"
_ROOT_SSH = "/root/.ssh"  # mpi_job_controller.go rootSSHPath

# pkg/controller/mpi_job_controller.go (v0.8.0) newLauncherJob copies
# runPolicy.ttlSecondsAfterFinished to the launcher's batch Job only: Kubernetes' TTL controller
# deletes that Job, never the MPIJob, which Argo CD would otherwise create again. syncHandler
# creates the launcher again when it is missing and the MPIJob's status has no CompletionTime
# yet (updateMPIJobStatus sets it from the finished launcher), so a TTL of 0 could delete the
# launcher before its end is recorded and run the job twice: the floor leaves the operator a
# minute to record it.
MIN_TTL_SECONDS = 60
"""The smallest ``ttl_seconds`` of an MPIJob."""

HOST_NETWORK_SSH_PORT = 2222
"""The port sshd listens on, and ssh reaches, in the MPI pods of a job on a host-network
profile: port 22 of the node's network namespace is the node's own sshd. 2222 is the port of
mpi-operator's and Trainer's MPI images (kubeflow/mpi-operator build/base/Dockerfile)."""


class MPIJob(OperatorJob):
    """An MPI job (mpi-operator): one launcher runs ``mpirun``, ``deepspeed`` or
    ``horovodrun`` against the hostfile of ``nodes`` workers, which run sshd and the ranks."""

    launch: Literal["mpirun", "deepspeed", "horovodrun"] = "mpirun"
    """What starts ``script`` on the workers: ``mpirun -np <ranks> python3 <script>``,
    ``deepspeed --hostfile /etc/mpi/hostfile --launcher openmpi <script>`` or
    ``horovodrun -np <ranks> --hostfile /etc/mpi/hostfile python3 <script>``. With
    ``command`` the launcher runs the command as given."""
    launcher_args: list[Arg] = []
    """Extra arguments of ``mpirun`` (for ``deepspeed``, its ``--launcher_args``), e.g.
    ``["--mca", "btl_tcp_if_include", "eth0"]``."""
    nodes: int = Field(default=1, ge=1, le=10000)
    """Worker pods; each gets ``resources`` and runs ``procs_per_node`` ranks."""
    procs_per_node: Annotated[int, Field(ge=1, le=1024)] | None = None
    """Ranks per worker (``slotsPerWorker`` in the hostfile). Default: ``resources.gpu``
    (or 1). It must divide the worker's GPUs."""
    launcher: Role = Role()
    """The launcher pod's own settings: ``Role(resources=…, node_selector=…)``. Without
    ``resources`` it gets 1 CPU and 2Gi and no GPU (the job's ``resources`` when
    ``launcher_as_worker``)."""
    worker: Role | None = None
    """The worker pods' own ``image``, ``command``, ``args`` and ``restart_policy``, e.g.
    ``Role(command=["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"])`` for an
    image whose sshd runs as its non-root user (mpi-operator starts ``/usr/sbin/sshd -De`` in
    a worker with neither command nor args). Their resources, node selector and tolerations are
    the job's; their env is the job's, which ``mpirun`` forwards to the ranks."""
    launcher_as_worker: bool = False
    """Run ranks on the launcher too (``runLauncherAsWorker``): it is then the first host of
    the hostfile and gets the job's ``resources``."""
    mpi: Literal["OpenMPI", "Intel", "MPICH"] = "OpenMPI"
    """The image's MPI implementation, which decides the hostfile format and the launcher's
    variables. ``deepspeed`` and ``horovodrun`` need ``OpenMPI``."""
    ssh_dir: Path = "/root/.ssh"
    """Where the operator mounts the generated ssh keys (``sshAuthMountPath``): the home
    ``.ssh`` of the user the image runs as."""
    wait_for_workers: bool = False
    """Refused when True (``launcherCreationPolicy: WaitForWorkersReady``): a worker pod that
    fails before the launcher exists is never recreated, so nothing would ever end the job.
    The launcher is created at once and waits for the workers itself, for a bounded time."""
    deadline_seconds: int | None = Field(default=None, ge=1)
    """Fail the job when its launcher has existed this long: mpi-operator gives the deadline to
    the launcher's Job only, created with the MPIJob, so time queued in Volcano counts (on
    Kueue the clock starts at admission)."""
    ttl_seconds: (
        Annotated[int, Field(le=2**31 - 1, json_schema_extra={"minimum": MIN_TTL_SECONDS})] | None
    ) = None
    """Delete the launcher's batch Job, and with it the launcher pod and its logs, this many
    seconds after the job ends (``runPolicy.ttlSecondsAfterFinished``). The MPIJob itself
    stays, with its status, until its file is removed: mpi-operator gives the TTL to the
    launcher's Job only, so Argo CD has nothing to create again. At least 60: a launcher
    deleted before the operator has recorded the job's end would be created again and run the
    job a second time. Default: the launcher stays as long as the MPIJob."""
    restart_policy: Literal["OnFailure", "Never"] = "OnFailure"
    """What happens when a pod fails: ``OnFailure`` restarts it (the launcher counts against
    ``backoff_limit``), ``Never`` fails it. mpi-operator accepts no other policy."""

    @field_validator("ttl_seconds")
    @classmethod
    def _ttl_floor(cls, ttl: int | None) -> int | None:
        if ttl is not None and ttl < MIN_TTL_SECONDS:
            raise ValueError(
                f"ttl_seconds {ttl} is below {MIN_TTL_SECONDS}: it could delete the launcher "
                "before mpi-operator records that the job ended, and the operator would create "
                f"it again and run the job a second time; use at least {MIN_TTL_SECONDS}, or "
                "drop ttl_seconds to keep the launcher"
            )
        return ttl

    @field_validator("env_refs")
    @classmethod
    def _no_own_pod_refs(cls, refs: dict[str, EnvRef]) -> dict[str, EnvRef]:
        own_pod_refs_refused(refs, "env_refs")
        return refs

    ROLE_FIELDS: ClassVar[dict[str, str]] = {"launcher": "Launcher", "worker": "Worker"}

    @model_validator(mode="after")
    def _coherent(self) -> MPIJob:
        self._check_roles()
        role = self.launcher
        if role.replicas != 1:
            # validation.go validateReplicaSpecs: the Launcher's replicas must be 1.
            raise ValueError(
                f"launcher.replicas is {role.replicas}; an MPIJob has exactly one launcher "
                "(add workers with nodes=)"
            )
        if role.command is not None or role.args is not None:
            raise ValueError(
                "launcher.command and launcher.args are not used: the job's script or command "
                "runs on the launcher; set command= or args= on the job"
            )
        if self.wait_for_workers:
            # pkg/controller/mpi_job_controller.go: with WaitForWorkersReady the launcher Job
            # (the only object with backoffLimit and activeDeadlineSeconds) is created once
            # every worker is Ready, and getOrCreateWorker never recreates a failed worker pod.
            raise ValueError(
                "wait_for_workers=True could hold the workers' GPUs forever: mpi-operator "
                "creates the launcher, which alone carries the backoff limit and deadline, only "
                "once every worker is ready, and never recreates a failed worker; drop it (the "
                "launcher waits for the workers itself, for a bounded time)"
            )
        if self.launch != "mpirun" and self.mpi != "OpenMPI":
            raise ValueError(
                f"launch={self.launch!r} reads an Open MPI hostfile and runs Open MPI's mpirun; "
                f"use mpi='OpenMPI' or launch='mpirun'"
            )
        gpu = self.resources.gpu
        if gpu and gpu % self.slots:
            raise ValueError(
                f"procs_per_node {self.slots} does not divide the {gpu} GPUs of a worker: "
                "each rank should own whole GPUs; use a divisor of resources.gpu"
            )
        if self.launcher_as_worker and role.resources is not None:
            raise ValueError(
                "launcher.resources is ignored with launcher_as_worker=True: the launcher runs "
                "ranks and gets the job's resources; drop one of them"
            )
        # The launcher's and the workers' own volumes are on pods mpi-operator mounts too.
        for v in [*self.volumes, *(v for _, v in self.group_volume_fields())]:
            name = volume_name(v)
            if name in MPI_RESERVED_VOLUMES:
                what = "claim" if isinstance(v, Volume) else "volume"
                raise ValueError(
                    f"{what} {name!r} has the name of a volume mpi-operator adds "
                    f"({', '.join(sorted(MPI_RESERVED_VOLUMES))}); rename the {what}"
                )
            for taken in (_CONFIG_DIR, self.ssh_dir):
                if v.path == taken or v.path.startswith(taken.rstrip("/") + "/"):
                    raise ValueError(
                        f"volume {name!r} mounts at {v.path}, where mpi-operator mounts the "
                        f"{'hostfile' if taken == _CONFIG_DIR else 'ssh keys'} ({taken}); "
                        "choose another path"
                    )
        self._check_ssh_user()
        # validation.go validateMPIJobName: "<name>-worker-<replicas-1>" must be a DNS-1035
        # label, or the operator creates no pods.
        self._check_longest_name(
            f"{self.object_name}-worker-{self.nodes - 1}", f"{self.nodes} nodes"
        )
        return self

    def _check_roles(self) -> None:
        for field, role in self.roles().items():
            if role.restart_policy == "ExitCode":
                # validation.go validateReplicaSpec: validRestartPolicies is Never, OnFailure.
                raise ValueError(
                    f"{field}.restart_policy 'ExitCode' is refused by mpi-operator, which "
                    "accepts 'Never' and 'OnFailure' only"
                )
        for name in self.launcher.env:
            if name in self.env:
                raise ValueError(
                    f"launcher.env: {name} is in the job's env too, which mpirun forwards to "
                    f"every rank with the launcher's value (-x {name}): the ranks would get "
                    "the launcher's; set it once, on the job or on the launcher"
                )
        worker = self.worker
        if worker is None:
            return
        given = worker.model_fields_set
        job_own = {
            "replicas": "nodes=",
            "resources": "resources=",
            "node_selector": "node_selector=",
            "tolerations": "tolerations=",
        }
        for field, instead in job_own.items():
            if field in given:
                raise ValueError(
                    f"worker.{field} is the job's own: the workers run the job's settings; set "
                    f"{instead} on the job (launcher= holds the launcher's)"
                )
        if worker.env:
            raise ValueError(
                "worker.env would reach only the workers' sshd: the ranks are started over ssh "
                "and get the job's env, which mpirun forwards (-x); set env= on the job"
            )

    def _check_ssh_user(self) -> None:
        """The user the security contexts choose must be able to use the ssh key the operator
        mounts: mode 0600 under ``/root/.ssh``, the Secret's default 0644 elsewhere, owned by
        root either way (pkg/controller/mpi_job_controller.go setupSSHOnPod). OpenSSH
        (authfile.c sshkey_perm_ok) refuses a private key its own uid owns with any group or
        other bit, and another uid cannot read a 0600 file of root's."""
        # The launcher's ssh and the workers' sshd each read the key as their own user, which
        # a role's security contexts may choose.
        for field, role in (("launcher", self.launcher), ("worker", self.worker)):
            try:
                self._check_ssh_key_user(*effective_user(*self.security_contexts(role)))
            except ValueError as e:
                own = role is not None and (
                    role.security_context is not None or role.container_security_context is not None
                )
                raise ValueError(f"{field}'s security context: {e}" if own else str(e)) from None

    def _check_ssh_key_user(self, uid: int | None, non_root: bool) -> None:
        root_dir = self.ssh_dir.rstrip("/") == _ROOT_SSH
        if root_dir and (non_root or (uid is not None and uid != 0)):
            who = f"run_as_user={uid}" if uid not in (None, 0) else "run_as_non_root=True"
            raise ValueError(
                f"{who} with ssh_dir {self.ssh_dir!r}: mpi-operator mounts the ssh key there "
                "with mode 0600, owned by root, which another user cannot read; set ssh_dir to "
                "the .ssh of the image's user, e.g. ssh_dir='/home/mpiuser/.ssh'"
            )
        if not root_dir and uid == 0:
            raise ValueError(
                f"run_as_user=0 (root) with ssh_dir {self.ssh_dir!r}: mpi-operator mounts the "
                "ssh key there readable by everyone (0644), owned by root, and OpenSSH refuses "
                "a key its own user owns that others can read; use ssh_dir='/root/.ssh' for "
                "root, or the image's non-root user"
            )

    @property
    def slots(self) -> int:
        """Ranks per worker: ``procs_per_node``, else one per GPU, else 1."""
        return self.procs_per_node or self.resources.gpu or 1

    @property
    def ranks(self) -> int:
        """Ranks of the whole job: the workers' slots (and the launcher's, as a worker)."""
        return self.slots * (self.nodes + (1 if self.launcher_as_worker else 0))

    @property
    def launcher_resources(self) -> Resources:
        if self.launcher_as_worker:
            return self.resources
        return self.launcher.resources or LAUNCHER_RESOURCES
