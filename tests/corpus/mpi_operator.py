"""mpi-operator's examples (kubeflow/mpi-operator at v0.8.0, ``examples/v2beta1/``; the
pinned CRD's commit caa3c47 has the same files): MPIJob v2beta1 with Open MPI, Intel MPI,
MPICH and Horovod."""

from __future__ import annotations

from trainkit import ContainerSecurityContext, MPIJob, Resources, Role

from . import Case, Expected, Source, pod

__all__ = ["CASES"]

MPI = {"cluster": {"operators": ["mpi-operator"]}}


def src(path: str) -> Source:
    return Source(
        "kubeflow/mpi-operator", "v0.8.0", "1bfc6b3ac4b0a178c22a5141254434802a999d82", path
    )


CPU1 = Resources(cpu=1, memory="1Gi")
SIZE1 = {"cpu": 1, "memory": "1Gi"}
USER = {"securityContext": {"runAsUser": 1000}}
SSHD = ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
PI = "/home/mpiuser/pi"
HOROVOD = "docker.io/kubeflow/mpi-horovod-mnist"
HOROVOD_ARGS = [
    "-np",
    "2",
    "--allow-run-as-root",
    "-bind-to",
    "none",
    "-map-by",
    "slot",
    "-x",
    "LD_LIBRARY_PATH",
    "-x",
    "PATH",
    "-mca",
    "pml",
    "ob1",
    "-mca",
    "btl",
    "^openib",
    "python",
    "/examples/tensorflow_mnist.py",
]
BENCH = "mpioperator/tensorflow-benchmarks:latest"
BENCH_CMD = [
    "mpirun",
    "--allow-run-as-root",
    "-np",
    "2",
    "-bind-to",
    "none",
    "-map-by",
    "slot",
    "-x",
    "NCCL_DEBUG=INFO",
    "-x",
    "LD_LIBRARY_PATH",
    "-x",
    "PATH",
    "-mca",
    "pml",
    "ob1",
    "-mca",
    "btl",
    "^openib",
    "python",
    "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py",
    "--model=resnet101",
    "--batch_size=64",
    "--variable_update=horovod",
]


def pi_job(name: str, image: str, mpi: str, **more: object) -> MPIJob:
    """The pi examples: two one-slot workers, a non-root user, the image's sshd config."""
    return MPIJob(
        name=name,
        image=image,
        mpi=mpi,
        nodes=2,
        resources=CPU1,
        launcher=Role(resources=CPU1),
        ssh_dir="/home/mpiuser/.ssh",
        clean_pods="Running",
        container_security_context=ContainerSecurityContext(run_as_user=1000),
        **more,
    )


def pi_expected(
    image: str, launcher_argv: tuple[list[str] | None, list[str]], **spec: object
) -> Expected:
    command, args = launcher_argv
    return Expected(
        "MPIJob",
        "pi",
        {
            "Launcher": pod(1, image, command, args, requests=SIZE1, limits=SIZE1, container=USER),
            "Worker": pod(
                2, image, SSHD[:1], SSHD[1:], requests=SIZE1, limits=SIZE1, container=USER
            ),
        },
        spec={"sshAuthMountPath": "/home/mpiuser/.ssh", **spec},
    )


CASES = [
    Case(
        id="mpi-pi-openmpi",
        source=src("examples/v2beta1/pi/pi.yaml"),
        definition=lambda: pi_job(
            "pi",
            "mpioperator/mpi-pi:openmpi",
            "OpenMPI",
            command=["mpirun", "-n", "2", PI],
            worker=Role(command=SSHD[:1], args=SSHD[1:], restart_policy="Never"),
            ttl_seconds=60,
        ),
        expected=pi_expected(
            "mpioperator/mpi-pi:openmpi",
            (["mpirun"], ["-n", "2", PI]),
            runPolicy={"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
        ),
        **MPI,
    ),
    *(
        Case(
            id=f"mpi-pi-{flavour.lower()}",
            source=src(f"examples/v2beta1/pi/pi-{flavour.lower()}.yaml"),
            definition=lambda flavour=flavour, mpi=mpi: pi_job(
                "pi",
                f"mpioperator/mpi-pi:{flavour.lower()}",
                mpi,
                args=["mpirun", "-n", "2", PI],
                image_pull_policy="Always",
                worker=Role(args=SSHD, restart_policy="Never"),
            ),
            expected=Expected(
                "MPIJob",
                "pi",
                {
                    "Launcher": pod(
                        1,
                        f"mpioperator/mpi-pi:{flavour.lower()}",
                        None,
                        ["mpirun", "-n", "2", PI],
                        requests=SIZE1,
                        limits=SIZE1,
                        container=USER,
                        pull="Always",
                    ),
                    "Worker": pod(
                        2,
                        f"mpioperator/mpi-pi:{flavour.lower()}",
                        None,
                        SSHD,
                        requests=SIZE1,
                        limits=SIZE1,
                        pull="Always",
                        container={
                            **USER,
                            "readinessProbe": {
                                "tcpSocket": {"port": 2222},
                                "initialDelaySeconds": 2,
                            },
                        },
                    ),
                },
                spec={
                    "sshAuthMountPath": "/home/mpiuser/.ssh",
                    "mpiImplementation": mpi,
                    "runPolicy": {"cleanPodPolicy": "Running"},
                },
            ),
            refused="a readiness probe on an MPIJob: mpi-operator's headless Service names a pod "
            "only once it is ready, so the launcher's hostfile waits or fails until then",
            **MPI,
        )
        for flavour, mpi in (("Intel", "Intel"), ("MPICH", "MPICH"))
    ),
    Case(
        id="mpi-horovod-tensorflow-mnist",
        source=src("examples/v2beta1/horovod/tensorflow-mnist.yaml"),
        definition=lambda: MPIJob(
            name="tensorflow-mnist",
            image=HOROVOD,
            command=["mpirun", *HOROVOD_ARGS],
            nodes=2,
            procs_per_node=1,
            resources=Resources(cpu=2, memory="4Gi"),
            launcher=Role(resources=Resources(cpu=1, memory="2Gi")),
            worker=Role(restart_policy="Never"),
            clean_pods="Running",
        ),
        expected=Expected(
            "MPIJob",
            "tensorflow-mnist",
            {
                "Launcher": pod(
                    1, HOROVOD, ["mpirun"], HOROVOD_ARGS, limits={"cpu": 1, "memory": "2Gi"}
                ),
                "Worker": pod(2, HOROVOD, limits={"cpu": 2, "memory": "4Gi"}),
            },
            spec={"runPolicy": {"cleanPodPolicy": "Running"}},
        ),
        **MPI,
    ),
    Case(
        id="mpi-tensorflow-benchmarks",
        source=src("examples/v2beta1/tensorflow-benchmarks/tensorflow-benchmarks.yaml"),
        definition=lambda: MPIJob(
            name="tensorflow-benchmarks",
            image=BENCH,
            command=BENCH_CMD,
            nodes=2,
            resources=Resources(cpu=8, memory="32Gi", gpu=1),
            worker=Role(restart_policy="Never"),
            clean_pods="Running",
        ),
        expected=Expected(
            "MPIJob",
            "tensorflow-benchmarks",
            {
                "Launcher": pod(1, BENCH, BENCH_CMD),
                "Worker": pod(2, BENCH, limits={"nvidia.com/gpu": 1}),
            },
            spec={"runPolicy": {"cleanPodPolicy": "Running"}},
        ),
        **MPI,
    ),
]
