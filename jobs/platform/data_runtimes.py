"""Kubeflow Trainer runtimes that download a dataset or a model before the nodes start."""

from trainkit import ClusterTrainingRuntime, Initializer, Resources, RuntimeInitializers

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
    clusters=["h100-south"],
)
