"""Kubeflow Trainer runtimes for HPC programs: Flux starts the tasks across the nodes."""

from trainkit import ClusterTrainingRuntime, Resources, RuntimeFlux

# Trainer copies Flux into every node from the view image (built on the same Ubuntu as the
# application image) and the first node runs the TrainJob's command with `flux run`, one task
# per core here; the other nodes run Flux brokers.
flux_runtime = ClusterTrainingRuntime(
    name="flux-jammy",
    image="registry.example.com/ml/python-hpc:3.11-jammy",
    flux=RuntimeFlux(
        view_image="registry.example.com/ml/flux-view-ubuntu:tag-jammy",  # mirrored
        procs_per_node=16,
    ),
    nodes=2,
    resources=Resources(cpu=16, memory="64Gi"),
    clusters=["gpu-east"],
    webhook_validation=False,  # synced with Trainer itself: applies before its webhook is up
)
