"""Pre-training on InfiniBand NICs allocated through Dynamic Resource Allocation (the rdma-dra
profile in jobs/platform/fabrics.py): each pod claims its own NICs from the rdma-nics
ResourceClaimTemplate, asks for huge pages (the fabric libraries register buffers in them),
checks its fabric when it starts and logs it when it stops (lifecycle hooks)."""

from trainkit import Hook, PyTorchJob, Resources, Script, Toleration, Volume

job = PyTorchJob(
    name="llama-pretrain-dra",
    image="registry.example.com/ml/pytorch-training:2.5.1-cuda12.4",
    script=Script.file("scripts/finetune_fsdp.py"),
    args=["--epochs", "1"],
    env={"TRAIN_DATA_PATH": "/mnt/data"},
    nodes=2,
    # 1 GiB of 2 MiB pages per pod, apart from memory (the a800 nodes set pages aside).
    resources=Resources(cpu=16, memory="128Gi", gpu=4, hugepages={"2Mi": "1Gi"}),
    shm_size="8Gi",
    volumes=[Volume(claim="llm-datasets", path="/mnt/data", read_only=True)],
    tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
    # A pod whose claimed NICs have no active port fails at once (the kubelet kills the
    # container when the hook fails) instead of hanging in NCCL's setup.
    post_start=Hook(exec=["/bin/sh", "-c", "ibv_devinfo | grep -q PORT_ACTIVE"]),
    # Stopped (preempted, drained): the NICs' state goes to the container's log first.
    pre_stop=Hook(exec=["/bin/sh", "-c", "ibv_devinfo > /proc/1/fd/1"]),
    queue="llm",
    clusters=["a800-north"],
    network="rdma-dra",
)
