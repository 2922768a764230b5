"""Near-duplicate filtering of the raw corpus, as Flux tasks on the platform's flux runtime."""

from trainkit import Script, TrainJob, Volume

job = TrainJob(
    name="dedup-flux",
    runtime="flux-jammy",  # flux run: 16 tasks on each node, no GPU
    script=Script.file("scripts/dedup_shards.py"),  # each task takes its shard of the files
    args=["--src", "/mnt/data/raw", "--out", "/mnt/output/dedup"],  # no spaces: Flux splits them
    nodes=4,
    volumes=[
        Volume(claim="llm-datasets", path="/mnt/data", read_only=True),
        Volume(claim="llm-checkpoints", path="/mnt/output"),
    ],
    clusters=["gpu-east"],
)
