"""Wide & Deep with parameter servers on paddle-operator (seed 004's PS mode)."""

from trainkit import (
    ContainerSecurityContext,
    EmptyDir,
    InitContainer,
    PaddleJob,
    Resources,
    Role,
    Script,
    SecurityContext,
)

job = PaddleJob(
    name="wide-deep-ps",
    run=1,  # now runs as a non-root user: a deployed PaddleJob is never edited in place
    image="registry.example.com/ml/paddle:2.6.1-cpu",
    script=Script.file("scripts/train_wide_deep.py"),  # fleet reads its role from the operator
    args=["--steps", "2000"],
    mode="ps",
    nodes=2,  # trainers
    resources=Resources(cpu=8, memory="16Gi"),
    ps=Role(replicas=2, resources=Resources(cpu=4, memory="32Gi")),  # the sparse tables
    queue="vision",
    clusters=["rocm-west"],  # paddle-operator runs there
    volumes=[EmptyDir(name="scratch", path="/scratch", size="50Gi")],  # on the node's disk
    # Runs to completion before training starts, in the job's image, with the scratch volume;
    # sidecar=True would run it beside the trainer instead (stopped when training ends).
    init_containers=[
        InitContainer(
            name="unpack-vocab",
            command=["sh", "-c", "tar -xzf /opt/vocab.tgz -C /scratch"],
            mounts=["scratch"],
            resources=Resources(cpu=1, memory="1Gi"),
        )
    ],
    # Pod Security "restricted": a non-root user, the runtime's seccomp filter, no privilege
    # escalation and no capabilities (Unconfined would need the Team's seccomp_profiles).
    security_context=SecurityContext(
        run_as_user=1000,
        run_as_group=1000,
        fs_group=1000,
        run_as_non_root=True,
        seccomp="RuntimeDefault",
    ),
    container_security_context=ContainerSecurityContext(
        allow_privilege_escalation=False, drop_capabilities=["ALL"]
    ),
)
