"""What mpi-operator v0.8 injects into an MPIJob's containers (render/mpi_operator.py)."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = [
    "MPIJOB",
    "MPIJOB_RESERVED_ENV",
    "MPI_HOSTFILE",
    "mpijob_env",
]

# mpi-operator v0.8 (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go): the hostfile
# ConfigMap is mounted at /etc/mpi on the launcher, whose first container gets the variables
# below (newLauncherPodTemplate); workers get K_MPI_JOB_ROLE=worker (newWorker).
MPI_HOSTFILE = "/etc/mpi/hostfile"

_MPI_SETS = "mpi-operator sets it on the launcher from the hostfile and procs_per_node"
MPIJOB_RESERVED_ENV: dict[str, str] = {
    "K_MPI_JOB_ROLE": "mpi-operator sets it to launcher or worker",
    "I_MPI_HYDRA_HOST_FILE": _MPI_SETS,
    "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": _MPI_SETS,
    "I_MPI_PERHOST": _MPI_SETS,
    "HYDRA_HOST_FILE": _MPI_SETS,
    "HYDRA_LAUNCH_EXTRA_ARGS": _MPI_SETS,
}


MPIJOB = ReservedEnv(
    kinds=("MPIJob",),
    names=MPIJOB_RESERVED_ENV,
    prefixes={
        # Open MPI reads every OMPI_* variable as a setting of mpirun; the operator's hostfile,
        # slots and ssh options are among them, and one set here would override them.
        "OMPI_": (
            "Open MPI reads OMPI_* as mpirun settings, and mpi-operator sets the hostfile, "
            "slots and ssh options through them; pass MCA parameters with launcher_args="
            "['--mca', NAME, VALUE]"
        ),
    },
)


def mpijob_env(
    *, implementation: str, slots: int, role: str, launcher_as_worker: bool = False
) -> dict[str, str]:
    """The env mpi-operator v0.8 gives the first container of a launcher or worker pod."""
    if role == "worker":
        return {"K_MPI_JOB_ROLE": "worker"}
    env = {"K_MPI_JOB_ROLE": "launcher"}
    if implementation == "OpenMPI":
        env |= {
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_default_hostfile": MPI_HOSTFILE,
            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
            "OMPI_MCA_orte_set_default_slots": str(slots),
        }
    elif implementation == "Intel":
        env |= {
            "I_MPI_HYDRA_HOST_FILE": MPI_HOSTFILE,
            "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
            "I_MPI_PERHOST": str(slots),
        }
    else:
        env |= {
            "HYDRA_HOST_FILE": MPI_HOSTFILE,
            "HYDRA_LAUNCH_EXTRA_ARGS": "-o ConnectionAttempts=10",
        }
    if not launcher_as_worker:
        # The operator hides GPUs from a launcher that is not a worker.
        env |= {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    return env
