"""DeepSpeed ZeRO pre-training as an MPIJob (seed 001: DeepSpeed reads the MPI hostfile)."""

from trainkit import MPIJob, Resources, Script, Toleration, Volume

job = MPIJob(
    name="llama-pretrain-deepspeed",
    run=6,  # the launcher's pod changed: a deployed MPIJob is never edited in place
    image="registry.example.com/ml/deepspeed:0.19.8-cuda12.4",
    script=Script.file("scripts/pretrain_deepspeed.py"),
    args=["--steps", "1000", "--zero-stage", "2"],
    launch="deepspeed",  # deepspeed --hostfile /etc/mpi/hostfile --launcher openmpi ...
    env={"TRAIN_DATA_PATH": "/mnt/data", "NCCL_DEBUG": "WARN"},
    nodes=2,  # workers, 8 ranks each; the launcher runs no ranks and gets no GPU
    resources=Resources(cpu=64, memory="512Gi", gpu=8),
    shm_size="20Gi",
    volumes=[Volume(claim="llm-datasets", path="/mnt/data", read_only=True)],
    tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
    queue="llm",
    clusters=["a800-north"],
    network="rdma",
)
