"""Photo-quality classifier: distributed XGBoost on image embeddings, CPU only."""

from trainkit import (
    NodeLabel,
    PodAffinity,
    PodField,
    Probe,
    ResourceField,
    Resources,
    Role,
    Script,
    Volume,
    XGBoostJob,
)

job = XGBoostJob(
    name="photo-quality-xgb",
    run=3,  # r3: the Workers join the tracker without XGBoost's backoff; never edited in place
    image="registry.example.com/ml/xgboost:3.2.0",
    script=Script.file("scripts/train_xgb_ranker.py"),  # the Master runs the tracker
    # --status-port: the rounds done so far, served over HTTP
    args=["--rounds", "200", "--rows", "2000000", "--output=models/pq.ubj", "--status-port=8081"],
    ports={"status": 8081},  # the script's rounds-done endpoint (kubectl port-forward)
    # Killed (and, with restart_policy Never, failed) when the status thread stops answering
    # for two minutes: a hung process, not a busy one (XGBoost trains without the GIL).
    liveness_probe=Probe(http_get="/", port="status", period=30, failure_threshold=4),
    volumes=[Volume(claim="vision-models", path="/workspace/models")],  # beside the script
    env_refs={  # read when each pod starts (the downward API)
        "CPUS": ResourceField(resource="limits.cpu"),  # XGBoost's threads: the CPU limit
        "NODE_NAME": PodField(path="spec.nodeName"),  # logged with the rank
    },
    nodes=3,  # the Master (rank 0) and 2 Workers, one process each
    resources=Resources(cpu=8, memory="32Gi"),
    master=Role(resources=Resources(cpu=8, memory="48Gi")),  # it also holds the tracker
    deadline_seconds=6 * 3600,
    # CPU only: prefer the CPU pool, leaving the GPU nodes to GPU jobs.
    node_affinity=[NodeLabel(key="node.example.com/pool", values=["cpu"], weight=20)],
    pod_labels={"example.com/workload": "photo-quality"},
    # Prefer one pod per node: each scans its shard with every core of the node.
    pod_affinity=[
        PodAffinity(labels={"example.com/workload": "photo-quality"}, anti=True, weight=50)
    ],
    termination_grace_period=60,  # time to log the last round when preempted (default 30 s)
    host_aliases={"10.20.0.15": ["features.lab.internal"]},  # the feature store, not in DNS
    queue="vision",
    clusters=["gpu-east"],
)
