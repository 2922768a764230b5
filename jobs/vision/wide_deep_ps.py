"""Wide & Deep with parameter servers on paddle-operator (seed 004's PS mode)."""

from trainkit import PaddleJob, Resources, Role, Script

job = PaddleJob(
    name="wide-deep-ps",
    image="registry.example.com/ml/paddle:2.6.1-cpu",
    script=Script.file("scripts/train_wide_deep.py"),  # fleet reads its role from the operator
    args=["--steps", "2000"],
    mode="ps",
    nodes=2,  # trainers
    resources=Resources(cpu=8, memory="16Gi"),
    ps=Role(replicas=2, resources=Resources(cpu=4, memory="32Gi")),  # the sparse tables
    queue="vision",
    clusters=["rocm-west"],  # paddle-operator runs there
)
