"""Photo-quality classifier: distributed XGBoost on image embeddings, CPU only."""

from trainkit import Resources, Role, Script, XGBoostJob

job = XGBoostJob(
    name="photo-quality-xgb",
    run=1,  # the CPU pods hide the node's GPUs: a deployed job is never edited in place
    image="registry.example.com/ml/xgboost:3.2.0",
    script=Script.file("scripts/train_xgb_ranker.py"),  # the Master runs the tracker
    args=["--rounds", "200", "--rows", "2000000"],
    nodes=3,  # the Master (rank 0) and 2 Workers, one process each
    resources=Resources(cpu=8, memory="32Gi"),
    master=Role(resources=Resources(cpu=8, memory="48Gi")),  # it also holds the tracker
    deadline_seconds=6 * 3600,
    queue="vision",
    clusters=["gpu-east"],
)
