"""The FSDP fine-tune on h100-south, its corpus downloaded from S3 first by Trainer's dataset step."""

from trainkit import DataSource, KueueTopology, Script, TrainJob

job = TrainJob(
    name="wiki-sft",
    run=3,  # the JobSet labels change the runtime patch, which a TrainJob cannot change
    runtime="torch-2-5-data",  # nodes of 8 H100s after a dataset-initializer step
    dataset=DataSource(
        storage_uri="s3://ml-corpora/wiki-en/txt",  # the step copies it to /workspace/dataset
        env={"ENDPOINT": "https://s3.example.com"},  # read with the nodes' IAM role
    ),
    script=Script.file("scripts/finetune_fsdp.py"),
    args=["--epochs", "3"],
    env={"TRAIN_DATA_PATH": "/workspace/dataset"},
    nodes=1,  # one H100 node: 8 ranks
    queue="llm",
    jobset_labels={"example.com/cost-center": "llm-sft"},  # on the JobSet, not on its pods
    workload_priority="deadline",  # Kueue admits it before the team's other jobs
    kueue_topology=KueueTopology(level="cloud.example.com/topology-rack"),  # prefer one rack
    clusters=["h100-south"],
)
