"""MobileNet with parameter servers as a TFJob whose roles differ in more than size: the
parameter servers and the chief run TensorFlow's CPU build on CPU nodes, with their own env
and restart policy."""

from trainkit import Resources, Role, Script, TFJob

job = TFJob(
    name="mobilenet-ps-roles",
    image="registry.example.com/ml/tensorflow:2.18.0-gpu",
    script=Script.file("scripts/train_mobilenet_ps.py"),  # reads TF_CONFIG
    args=["--epochs", "2"],
    nodes=2,  # workers, one GPU each
    resources=Resources(cpu=8, memory="32Gi", gpu=1),
    ps=Role(
        replicas=2,
        resources=Resources(cpu=8, memory="64Gi"),
        image="registry.example.com/ml/tensorflow:2.18.0",  # the CPU build: no GPU here
        env={"TF_NUM_INTEROP_THREADS": "8"},
        node_selector={"node.example.com/pool": "cpu"},  # off the GPU nodes
    ),
    chief=Role(
        resources=Resources(cpu=4, memory="16Gi"),
        image="registry.example.com/ml/tensorflow:2.18.0",
        node_selector={"node.example.com/pool": "cpu"},
        # The chief's exit decides the job: retried only when killed (exit code >= 128), so a
        # bug in the model fails the job at once.
        restart_policy="ExitCode",
    ),
    queue="vision",
    clusters=["gpu-east"],
)
