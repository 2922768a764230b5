"""The Training Operator's examples (kubeflow/trainer at v1.9.4, the Training Operator's last
v1 release, ``examples/``): PyTorchJob, TFJob, PaddleJob, XGBoostJob, JAXJob."""

from __future__ import annotations

from trainkit import (
    Elastic,
    JAXJob,
    PaddleJob,
    PyTorchJob,
    ResourceMetric,
    Resources,
    Role,
    TFJob,
    Volume,
    XGBoostJob,
)

from . import Case, Expected, Source, pod

__all__ = ["CASES"]


def src(path: str) -> Source:
    return Source("kubeflow/trainer", "v1.9.4", "4445c12aa62e4345b0c2c6ac9b215a70eca46ed7", path)


SMALL = Resources(cpu=1, memory="1Gi")  # the manifests size nothing: any size (normalisation 5)
ONE_GPU = Resources(cpu=4, memory="16Gi", gpu=1)
GPU = {"nvidia.com/gpu": 1}

MNIST = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
MNIST_CMD = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
DIST_MNIST = "ghcr.io/kubeflow/training-v1/pytorch-dist-mnist:latest"
DEEPSPEED = "ghcr.io/kubeflow/training-v1/pytorch-deepspeed-demo:latest"
DEEPSPEED_CMD = ["torchrun", "/train_bert_ds.py", "--checkpoint_dir", "/root/deepspeed_data"]
SENDRECV = "ghcr.io/kubeflow/training-v1/pytorch-dist-sendrecv-test:latest"
ECHO = "ghcr.io/kubeflow/training-v1/pytorch-elastic-example-echo:latest"
ECHO_CMD = ["python", "-m", "torch.distributed.run", "--rdzv_backend=c10d", "./echo.py"]
IMAGENET = "ghcr.io/kubeflow/training-v1/pytorch-elastic-example-imagenet:latest"
IMAGENET_CMD = [
    "python",
    "-m",
    "torch.distributed.run",
    "/workspace/examples/imagenet.py",
    "--arch=resnet18",
    "--epochs=1",
    "--batch-size=32",
    "--workers=0",
    "/workspace/data/tiny-imagenet-200",
]
TF_MNIST = "ghcr.io/kubeflow/training-v1/tf-mnist-with-summaries:latest"
TF_DIST = "ghcr.io/kubeflow/training-v1/tf-dist-mnist-test:latest"
TF_STRATEGY = "ghcr.io/kubeflow/training-v1/tf-multi-worker-strategy:latest"
PADDLE_CPU = "registry.baidubce.com/paddlepaddle/paddle:2.4.0rc0-cpu"
PADDLE_GPU = "registry.baidubce.com/paddlepaddle/paddle:2.4.0rc0-gpu-cuda11.2-cudnn8.1-trt8.0"
PADDLE_ARGS = ["-m", "paddle.distributed.launch", "run_check"]
XGB_RABIT = "ghcr.io/kubeflow/training-v1/xgboost-dist-rabit-test:latest"
XGB_IRIS = "ghcr.io/kubeflow/training-v1/xgboost-dist-iris:latest"
XGB_PREDICT = [
    "--job_type=Predict",
    "--model_path=autoAI/xgb-opt/2",
    "--model_storage_type=oss",
    "--oss_param=unknown",
]
XGB_TRAIN = [
    "--job_type=Train",
    "--xgboost_parameter=objective:multi:softprob,num_class:3",
    "--n_estimators=10",
    "--learning_rate=0.1",
]
XGB_PORT = {"xgboostjob-port": 9991}
JAX_SIMPLE = "ghcr.io/kubeflow/training-v1/jaxjob-simple:latest"
JAX_MNIST = "ghcr.io/kubeflow/training-v1/jaxjob-dist-spmd-mnist:latest"


CASES = [
    # --- PyTorchJob ---------------------------------------------------------------------------
    Case(
        id="to-pytorch-simple",
        source=src("examples/pytorch/simple.yaml"),
        definition=lambda: PyTorchJob(
            name="pytorch-simple",
            image=MNIST,
            image_pull_policy="Always",
            command=MNIST_CMD,
            nodes=2,
            resources=SMALL,
        ),
        expected=Expected(
            "PyTorchJob",
            "pytorch-simple",
            {
                "Master": pod(1, MNIST, MNIST_CMD, restart="OnFailure", pull="Always"),
                "Worker": pod(1, MNIST, MNIST_CMD, restart="OnFailure", pull="Always"),
            },
        ),
    ),
    Case(
        id="to-pytorch-cpu-demo",
        source=src("examples/pytorch/cpu-demo/demo.yaml"),
        definition=lambda: PyTorchJob(
            name="torchrun-cpu",
            image="pytorch-cpu:py3.8",
            command=["torchrun", "demo.py"],
            nodes=2,
            procs_per_node=2,
            resources=SMALL,
        ),
        expected=Expected(
            "PyTorchJob",
            "torchrun-cpu",
            {
                "Master": pod(1, "pytorch-cpu:py3.8", ["torchrun", "demo.py"], restart="OnFailure"),
                "Worker": pod(1, "pytorch-cpu:py3.8", ["torchrun", "demo.py"], restart="OnFailure"),
            },
            spec={"nprocPerNode": "2"},
        ),
    ),
    Case(
        id="to-pytorch-deepspeed-demo",
        source=src("examples/pytorch/deepspeed-demo/pytorch_deepspeed_demo.yaml"),
        definition=lambda: PyTorchJob(
            name="pytorch-deepspeed-demo",
            image=DEEPSPEED,
            command=DEEPSPEED_CMD,
            nodes=2,
            resources=ONE_GPU,
        ),
        expected=Expected(
            "PyTorchJob",
            "pytorch-deepspeed-demo",
            {
                "Master": pod(1, DEEPSPEED, DEEPSPEED_CMD, limits=GPU, restart="OnFailure"),
                "Worker": pod(1, DEEPSPEED, DEEPSPEED_CMD, limits=GPU, restart="OnFailure"),
            },
        ),
    ),
    *(
        Case(
            id=f"to-pytorch-mnist-{backend}",
            source=src(f"examples/pytorch/mnist/v1/pytorch_job_mnist_{backend}.yaml"),
            definition=lambda backend=backend: PyTorchJob(
                name=f"pytorch-dist-mnist-{backend}",
                image=DIST_MNIST,
                args=["--backend", backend],
                nodes=2,
                resources=ONE_GPU,
            ),
            expected=Expected(
                "PyTorchJob",
                f"pytorch-dist-mnist-{backend}",
                {
                    role: pod(1, DIST_MNIST, None, ["--backend", backend], limits=GPU)
                    for role in ("Master", "Worker")
                },
            ),
        )
        for backend in ("gloo", "mpi", "nccl")
    ),
    Case(
        id="to-pytorch-sendrecv",
        source=src("examples/pytorch/smoke-dist/pytorch_job_sendrecv.yaml"),
        definition=lambda: PyTorchJob(
            name="pytorch-dist-basic-sendrecv", image=SENDRECV, nodes=4, resources=SMALL
        ),
        expected=Expected(
            "PyTorchJob",
            "pytorch-dist-basic-sendrecv",
            {"Master": pod(1, SENDRECV), "Worker": pod(3, SENDRECV)},
        ),
    ),
    Case(
        id="to-pytorch-elastic-echo",
        source=src("examples/pytorch/elastic/echo/echo.yaml"),
        definition=lambda: PyTorchJob(
            name="elastic-example-echo",
            image=ECHO,
            image_pull_policy="IfNotPresent",
            command=ECHO_CMD,
            env={"LOGLEVEL": "DEBUG"},
            nodes=2,
            resources=SMALL,
            elastic=Elastic(min_nodes=1, max_restarts=100),
        ),
        expected=Expected(
            "PyTorchJob",
            "elastic-example-echo",
            {"Worker": pod(2, ECHO, ECHO_CMD, env={"LOGLEVEL": "DEBUG"}, pull="IfNotPresent")},
            spec={
                "elasticPolicy": {
                    "rdzvBackend": "c10d",
                    "minReplicas": 1,
                    "maxReplicas": 2,
                    "maxRestarts": 100,
                },
            },
        ),
    ),
    Case(
        id="to-pytorch-elastic-imagenet",
        source=src("examples/pytorch/elastic/imagenet/imagenet.yaml"),
        definition=lambda: PyTorchJob(
            name="elastic-example-imagenet",
            image=IMAGENET,
            image_pull_policy="IfNotPresent",
            command=IMAGENET_CMD,
            env={"LOGLEVEL": "DEBUG"},
            nodes=2,
            resources=Resources(cpu=4, memory="16Gi"),
            elastic=Elastic(
                min_nodes=1,
                max_nodes=3,
                max_restarts=100,
                metrics=[ResourceMetric(resource="cpu", utilization=80)],
            ),
        ),
        expected=Expected(
            "PyTorchJob",
            "elastic-example-imagenet",
            {
                "Worker": pod(
                    2,
                    IMAGENET,
                    IMAGENET_CMD,
                    requests={"cpu": 4},
                    env={"LOGLEVEL": "DEBUG"},
                    pull="IfNotPresent",
                    restart="OnFailure",
                )
            },
            spec={
                "elasticPolicy": {
                    "rdzvBackend": "c10d",
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "maxRestarts": 100,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {
                                "name": "cpu",
                                "target": {"type": "Utilization", "averageUtilization": 80},
                            },
                        }
                    ],
                },
            },
        ),
    ),
    # --- TFJob --------------------------------------------------------------------------------
    Case(
        id="to-tf-simple",
        source=src("examples/tensorflow/simple.yaml"),
        definition=lambda: TFJob(
            name="tfjob-simple",
            image=TF_MNIST,
            command=["python", "/var/tf_mnist/mnist_with_summaries.py"],
            nodes=2,
            resources=SMALL,
        ),
        expected=Expected(
            "TFJob",
            "tfjob-simple",
            {
                "Worker": pod(
                    2,
                    TF_MNIST,
                    ["python", "/var/tf_mnist/mnist_with_summaries.py"],
                    restart="OnFailure",
                )
            },
        ),
    ),
    Case(
        id="to-tf-mnist-with-summaries",
        source=src("examples/tensorflow/mnist_with_summaries/tf_job_mnist.yaml"),
        definition=lambda: TFJob(
            name="mnist",
            image=TF_MNIST,
            command=[
                "python",
                "/var/tf_mnist/mnist_with_summaries.py",
                "--log_dir=/train/logs",
                "--learning_rate=0.01",
                "--batch_size=150",
            ],
            restart_policy="Never",
            clean_pods="None",
            resources=SMALL,
            volumes=[Volume(claim="tfevent-volume", path="/train")],
        ),
        expected=Expected(
            "TFJob",
            "mnist",
            {
                "Worker": pod(
                    1,
                    TF_MNIST,
                    [
                        "python",
                        "/var/tf_mnist/mnist_with_summaries.py",
                        "--log_dir=/train/logs",
                        "--learning_rate=0.01",
                        "--batch_size=150",
                    ],
                    mounts={"/train": "pvc:tfevent-volume"},
                    restart="Never",
                )
            },
            spec={"runPolicy": {"cleanPodPolicy": "None"}},
        ),
    ),
    Case(
        id="to-tf-multi-worker-strategy",
        source=src("examples/tensorflow/distribution_strategy/multi_worker_tfjob.yaml"),
        definition=lambda: TFJob(
            name="multi-worker",
            image=TF_STRATEGY,
            nodes=2,
            restart_policy="Never",
            clean_pods="None",
            resources=ONE_GPU,
            volumes=[Volume(claim="strategy-volume", path="/train")],
        ),
        expected=Expected(
            "TFJob",
            "multi-worker",
            {
                "Worker": pod(
                    2,
                    TF_STRATEGY,
                    limits=GPU,
                    mounts={"/train": "pvc:strategy-volume"},
                    restart="Never",
                )
            },
            spec={"runPolicy": {"cleanPodPolicy": "None"}},
        ),
    ),
    Case(
        id="to-tf-dist-mnist",
        source=src("examples/tensorflow/dist-mnist/tf_job_mnist.yaml"),
        definition=lambda: TFJob(
            name="dist-mnist-for-e2e-test",
            image=TF_DIST,
            nodes=2,
            restart_policy="Never",
            chief=Role(),
            ps=Role(),
            resources=SMALL,
        ),
        expected=Expected(
            "TFJob",
            "dist-mnist-for-e2e-test",
            {
                "Chief": pod(1, TF_DIST, restart="Never"),
                "PS": pod(1, TF_DIST, restart="Never"),
                "Worker": pod(2, TF_DIST, restart="Never"),
            },
        ),
    ),
    # --- PaddleJob (kubeflow.org/v1) -------------------------------------------------------------
    Case(
        id="to-paddle-simple-cpu",
        source=src("examples/paddlepaddle/simple-cpu.yaml"),
        definition=lambda: PaddleJob(
            name="paddle-simple-cpu",
            master_port=37777,
            image=PADDLE_CPU,
            image_pull_policy="Always",
            command=["python"],
            args=PADDLE_ARGS,
            nodes=2,
            resources=SMALL,
        ),
        expected=Expected(
            "PaddleJob",
            "paddle-simple-cpu",
            {
                "Worker": pod(
                    2,
                    PADDLE_CPU,
                    ["python"],
                    PADDLE_ARGS,
                    ports={"master": 37777},
                    restart="OnFailure",
                    pull="Always",
                )
            },
        ),
    ),
    Case(
        id="to-paddle-simple-gpu",
        source=src("examples/paddlepaddle/simple-gpu.yaml"),
        definition=lambda: PaddleJob(
            name="paddle-simple-gpu",
            master_port=37777,
            image=PADDLE_GPU,
            image_pull_policy="Always",
            command=["python"],
            args=PADDLE_ARGS,
            nodes=2,
            resources=Resources(cpu=8, memory="32Gi", gpu=2),
            shm_size="16Gi",
        ),
        expected=Expected(
            "PaddleJob",
            "paddle-simple-gpu",
            {
                "Worker": pod(
                    2,
                    PADDLE_GPU,
                    ["python"],
                    PADDLE_ARGS,
                    ports={"master": 37777},
                    limits={"nvidia.com/gpu": 2},
                    mounts={"/dev/shm": "emptyDir:Memory"},
                    restart="OnFailure",
                    pull="Always",
                )
            },
        ),
    ),
    # --- XGBoostJob ---------------------------------------------------------------------------
    Case(
        id="to-xgboost-rabit-test",
        source=src("examples/xgboost/smoke-dist/xgboostjob_v1_rabit_test.yaml"),
        definition=lambda: XGBoostJob(
            name="xgboost-dist-test", image=XGB_RABIT, nodes=3, resources=SMALL, port=9991
        ),
        expected=Expected(
            "XGBoostJob",
            "xgboost-dist-test",
            {
                "Master": pod(1, XGB_RABIT, ports=XGB_PORT, restart="Never"),
                "Worker": pod(2, XGB_RABIT, ports=XGB_PORT, restart="Never"),
            },
        ),
    ),
    Case(
        id="to-xgboost-iris-predict",
        source=src("examples/xgboost/xgboost-dist/xgboostjob_v1_iris_predict.yaml"),
        definition=lambda: XGBoostJob(
            name="xgboost-dist-iris-test-predict",
            port=9991,
            image=XGB_IRIS,
            args=XGB_PREDICT,
            nodes=3,
            resources=SMALL,
            restart_policy="ExitCode",  # the Workers'
            master=Role(restart_policy="Never"),
        ),
        expected=Expected(
            "XGBoostJob",
            "xgboost-dist-iris-test-predict",
            {
                "Master": pod(1, XGB_IRIS, None, XGB_PREDICT, ports=XGB_PORT, restart="Never"),
                "Worker": pod(2, XGB_IRIS, None, XGB_PREDICT, ports=XGB_PORT, restart="ExitCode"),
            },
        ),
    ),
    Case(
        id="to-xgboost-iris-train",
        source=src("examples/xgboost/xgboost-dist/xgboostjob_v1_iris_train.yaml"),
        definition=lambda: XGBoostJob(
            name="xgboost-dist-iris-test-train",
            port=9991,
            image=XGB_IRIS,
            nodes=3,
            resources=SMALL,
            args=[
                "--job_type=Train",
                '--xgboost_parameter="objective:multi:softprob,num_class:3"',
                "--n_estimators=10",
                "--learning_rate=0.1",
            ],
            restart_policy="ExitCode",  # the Workers'
            master=Role(
                args=[
                    *XGB_TRAIN,
                    "--model_path=/tmp/xgboost-model",
                    "--model_storage_type=local",
                ],
                restart_policy="Never",
            ),
        ),
        expected=Expected(
            "XGBoostJob",
            "xgboost-dist-iris-test-train",
            {
                "Master": pod(
                    1,
                    XGB_IRIS,
                    None,
                    [*XGB_TRAIN, "--model_path=/tmp/xgboost-model", "--model_storage_type=local"],
                    ports=XGB_PORT,
                    restart="Never",
                ),
                "Worker": pod(
                    2,
                    XGB_IRIS,
                    None,
                    [
                        "--job_type=Train",
                        '--xgboost_parameter="objective:multi:softprob,num_class:3"',
                        "--n_estimators=10",
                        "--learning_rate=0.1",
                    ],
                    ports=XGB_PORT,
                    restart="ExitCode",
                ),
            },
        ),
    ),
    Case(
        id="to-xgboost-iris-predict-local",
        source=src("examples/xgboost/xgboost-dist/xgboostjob_v1_iris_predict_local.yaml"),
        definition=lambda: XGBoostJob(
            name="xgboost-dist-iris-test-predict-local",
            port=9991,
            image=XGB_IRIS,
            nodes=3,
            resources=SMALL,
            volumes=[Volume(claim="xgboostlocal", path="/tmp/xgboost_model")],
            restart_policy="ExitCode",  # the Workers'
            master=Role(restart_policy="Never"),
            args=[
                "--job_type=Predict",
                "--model_path=/tmp/xgboost_model/2",
                "--model_storage_type=local",
            ],
        ),
        expected=Expected(
            "XGBoostJob",
            "xgboost-dist-iris-test-predict-local",
            {
                role: pod(
                    n,
                    XGB_IRIS,
                    None,
                    [
                        "--job_type=Predict",
                        "--model_path=/tmp/xgboost_model/2",
                        "--model_storage_type=local",
                    ],
                    ports=XGB_PORT,
                    restart=restart,
                    mounts={"/tmp/xgboost_model": "pvc:xgboostlocal"},
                )
                for role, n, restart in (("Master", 1, "Never"), ("Worker", 2, "ExitCode"))
            },
        ),
    ),
    # --- JAXJob -------------------------------------------------------------------------------
    Case(
        id="to-jax-cpu-demo",
        source=src("examples/jax/cpu-demo/demo.yaml"),
        definition=lambda: JAXJob(
            name="jaxjob-simple",
            image=JAX_SIMPLE,
            image_pull_policy="Always",
            command=["python3", "train.py"],
            nodes=2,
            restart_policy="OnFailure",
            resources=SMALL,
        ),
        expected=Expected(
            "JAXJob",
            "jaxjob-simple",
            {
                "Worker": pod(
                    2, JAX_SIMPLE, ["python3", "train.py"], restart="OnFailure", pull="Always"
                )
            },
        ),
    ),
    Case(
        id="to-jax-spmd-mnist",
        source=src("examples/jax/jax-dist-spmd-mnist/jaxjob_dist_spmd_mnist_gloo.yaml"),
        definition=lambda: JAXJob(
            name="jaxjob-mnist",
            image=JAX_MNIST,
            image_pull_policy="Always",
            nodes=2,
            restart_policy="OnFailure",
            resources=SMALL,
        ),
        expected=Expected(
            "JAXJob",
            "jaxjob-mnist",
            {"Worker": pod(2, JAX_MNIST, restart="OnFailure", pull="Always")},
        ),
    ),
]
