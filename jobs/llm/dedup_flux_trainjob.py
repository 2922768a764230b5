"""Near-duplicate filtering of the raw corpus, as Flux tasks on the platform's flux runtime."""

from trainkit import Script, TrainJob, Volume

job = TrainJob(
    name="dedup-flux",
    run=2,  # now on Ubuntu 24.04: a TrainJob cannot change once created
    runtime="flux-jammy",  # flux run: 16 tasks on each node, no GPU
    image="registry.example.com/ml/python-hpc:3.12-noble",
    flux_view_image="registry.example.com/ml/flux-view-ubuntu:tag-noble",  # Flux for that OS
    script=Script.file("scripts/dedup_shards.py"),  # each task takes its shard of the files
    args=["--src", "/mnt/data/raw", "--out", "/mnt/output/dedup"],  # no spaces: Flux splits them
    nodes=4,
    volumes=[
        Volume(claim="llm-datasets", path="/mnt/data", read_only=True),
        Volume(claim="llm-checkpoints", path="/mnt/output"),
    ],
    clusters=["gpu-east"],
)
