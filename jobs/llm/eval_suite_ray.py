"""An evaluation suite as a RayJob whose code is a directory of the repository: Ray's
``runtime_env`` ``working_dir``. trainkit ships ``scripts/eval_suite/`` in a ConfigMap to the
submitter, ``ray job submit`` uploads it, and the driver and every task start in a copy of it,
so the suite's modules and prompt files are found on every node."""

from trainkit import RayJob, Resources, RuntimeEnv, WorkerGroup

job = RayJob(
    name="eval-suite-ray",
    image="registry.example.com/ml/ray:2.60.0-py311-cu124",
    command=["python", "run_eval.py"],
    args=["--tasks", "arith,arith_hard"],
    head=Resources(cpu=4, memory="16Gi"),
    workers=[WorkerGroup(name="cpu", nodes=2, resources=Resources(cpu=8, memory="32Gi"))],
    runtime_env=RuntimeEnv(working_dir="scripts/eval_suite", excludes=["*.md"]),
    queue="llm",
    clusters=["gpu-east"],
)
