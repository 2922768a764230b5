"""ResNet on PaddlePaddle, collective mode (seed 004's resnet example) as a PaddleJob."""

from trainkit import PaddleJob, Resources, Script

job = PaddleJob(
    name="resnet-paddle",
    image="registry.example.com/ml/paddle:2.6.1-gpu-cuda12.0",
    script=Script.file("scripts/train_fleet.py"),  # python -m paddle.distributed.launch
    args=["--epochs", "10"],
    nodes=2,  # workers; they all-reduce, no parameter servers
    resources=Resources(cpu=8, memory="32Gi", gpu=1),
    shm_size="8Gi",  # DataLoader workers share batches through /dev/shm
    clean_pods="None",  # keep the pods to read their logs (seed 004: cleanPodPolicy Never)
    queue="vision",
    clusters=["gpu-east"],
)
