"""Pre-training over InfiniBand attached by Multus (the ib-multus profile in
jobs/platform/policy.py): every pod gets interface net1 and the node's /dev/infiniband; NCCL
runs over net1."""

from trainkit import PyTorchJob, Resources, Script, Toleration, Volume

job = PyTorchJob(
    name="llama-pretrain-ib",
    run=1,  # run 0 asked for no rdma/hca: a deployed PyTorchJob is never edited in place
    image="registry.example.com/ml/pytorch-training:2.5.1-cuda12.4",
    script=Script.file("scripts/finetune_fsdp.py"),
    args=["--epochs", "1"],
    env={"TRAIN_DATA_PATH": "/mnt/data"},
    nodes=2,
    # rdma/hca, granted through the rdma profile: the scheduler places each pod on a node with a
    # free HCA (the shared RDMA device plugin's count) besides mounting /dev/infiniband.
    resources=Resources(cpu=16, memory="128Gi", gpu=4, extended={"rdma/hca": 1}),
    shm_size="8Gi",
    volumes=[Volume(claim="llm-datasets", path="/mnt/data", read_only=True)],
    tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
    backoff_limit=3,
    queue="llm",
    clusters=["a800-north"],
    network="ib-multus",
)
