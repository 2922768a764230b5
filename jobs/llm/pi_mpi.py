"""mpi-operator's own example, pi, as its non-root user (kubeflow/mpi-operator v0.8,
examples/v2beta1/pi/pi.yaml): the workers run their own sshd, as user 1000."""

from trainkit import MPIJob, Resources, Role, SecurityContext

job = MPIJob(
    name="pi",
    run=1,  # run 0 kept its launcher: a deployed MPIJob is never edited in place
    image="registry.example.com/ml/mpi-pi:openmpi",
    command=["mpirun", "-n", "2", "/home/mpiuser/pi"],  # the launcher's program, from the image
    nodes=2,
    resources=Resources(cpu=1, memory="1Gi"),
    launcher=Role(resources=Resources(cpu=1, memory="1Gi")),
    # With a command of its own a worker gets no `/usr/sbin/sshd -De` from the operator: this
    # sshd reads the user's config, whose host keys user 1000 can read.
    worker=Role(
        command=["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"],
        restart_policy="Never",  # mpi-operator's default for workers
    ),
    security_context=SecurityContext(run_as_user=1000),
    # The launcher's Job (its pod and logs) is deleted a day after the job ends; the MPIJob
    # stays, with its status, until this file is removed.
    ttl_seconds=24 * 3600,
    ssh_dir="/home/mpiuser/.ssh",  # the operator mounts the ssh keys where user 1000 reads them
    queue="llm",
    clusters=["a800-north"],
)
