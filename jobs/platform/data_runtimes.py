"""Kubeflow Trainer runtimes that download a dataset or a model before the nodes start."""

from trainkit import (
    ClusterTrainingRuntime,
    Hook,
    InitContainer,
    Initializer,
    Resources,
    RuntimeInitializers,
)

# On h100-south, a Kueue cluster (a Volcano gang would wait for nodes that wait for the step).
# Trainer's dataset initializer fills a volume JobSet creates per TrainJob; the nodes start once
# it completed and read it at /workspace/dataset.
torch_with_data = ClusterTrainingRuntime(
    name="torch-2-5-data",
    image="registry.example.com/ml/pytorch:2.5.1-cuda12.4",
    nodes=2,
    resources=Resources(cpu=16, memory="128Gi", gpu=8),
    shm_size="16Gi",
    initializers=RuntimeInitializers(
        dataset=Initializer(image="registry.example.com/ml/dataset-initializer:v2.3.0"),
        size="500Gi",
        access_mode="ReadWriteMany",  # every node mounts it
        storage_class="cephfs",
    ),
    # Fail before torchrun starts when the step left the dataset empty (a typo in a TrainJob's
    # storage_uri), instead of at the first batch on every node.
    init_containers=[
        InitContainer(
            name="check-dataset",
            command=["sh", "-c", "ls -A /workspace/dataset | grep -q ."],
            mounts=["initializer"],
            resources=Resources(cpu=1, memory="1Gi"),
        )
    ],
    # A node whose GPUs the driver lost fails at once (nvidia-smi exits non-zero).
    post_start=Hook(exec=["nvidia-smi", "-L"]),
    clusters=["h100-south"],
)

# torchtune's full fine-tune of Llama 3.2 1B on one node, shaped like Kubeflow's
# torchtune-llama3.2-1b runtime: the model and the dataset downloaded first, the runtime's own
# `tune run` command, and the whole volume at /workspace so the output stays on it.
tune_llama = ClusterTrainingRuntime(
    name="tune-llama3.2-1b",
    image="registry.example.com/ml/torchtune-trainer:v2.3.0",
    framework="torchtune",
    resources=Resources(cpu=16, memory="128Gi", gpu=2),
    command=[
        "tune",
        "run",
        "--rdzv_endpoint=localhost:29500",
        "full_finetune_distributed",
        "--config",
        "llama3_2/1B_full",
        "dataset=torchtune.datasets.instruct_dataset",
        "dataset.source=parquet",
        "dataset.data_dir=/workspace/dataset/data",
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ],
    initializers=RuntimeInitializers(
        dataset=Initializer(
            image="registry.example.com/ml/dataset-initializer:v2.3.0",
            storage_uri="hf://tatsu-lab/alpaca",
        ),
        model=Initializer(
            image="registry.example.com/ml/model-initializer:v2.3.0",
            storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct",
        ),
        size="50Gi",
        access_mode="ReadWriteOnce",  # one node
        mount_workspace=True,
    ),
    clusters=["h100-south"],
)
