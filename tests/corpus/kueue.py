"""Kueue's job samples (kubernetes-sigs/kueue at v0.19.2, ``site/static/examples/jobs/``): each
Kubeflow kind and a RayJob, queued through a LocalQueue (``kueue.x-k8s.io/queue-name``)."""

from __future__ import annotations

from trainkit import (
    ContainerSecurityContext,
    JAXJob,
    MPIJob,
    PaddleJob,
    PyTorchJob,
    Resources,
    Role,
    TFJob,
    XGBoostJob,
)

from . import Case, Expected, Source, pod

__all__ = ["CASES"]

Q = ("kueue", "user-queue")
# Kueue v0.19 manages the Training Operator's kinds only where its configuration enables them.
KUBEFLOW = {
    "kueue_frameworks": [
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/jaxjob",
    ]
}


def src(name: str) -> Source:
    return Source(
        "kubernetes-sigs/kueue",
        "v0.19.2",
        "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb",
        f"site/static/examples/jobs/{name}",
    )


REQ = {"cpu": 1, "memory": "200Mi"}
SMALL = Resources(cpu=1, memory="200Mi")
MNIST = "docker.io/kubeflowkatib/pytorch-mnist-cpu:v1beta1-21320b6"
MNIST_CMD = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
TF = "kubeflow/tf-dist-mnist-test:latest"
PADDLE = "registry.baidubce.com/paddlepaddle/paddle:2.5.1"
PADDLE_ARGS = ["-m", "paddle.distributed.launch", "run_check"]
XGB = "docker.io/kubeflow/xgboost-dist-iris:latest"
XGB_TRAIN = [
    "--job_type=Train",
    "--xgboost_parameter=objective:multi:softprob,num_class:3",
    "--n_estimators=10",
    "--learning_rate=0.1",
]
XGB_WORKER = [
    "--job_type=Train",
    '--xgboost_parameter="objective:multi:softprob,num_class:3"',
    "--n_estimators=10",
    "--learning_rate=0.1",
]
JAX = "docker.io/kubeflow/jaxjob-simple:latest"
PI = "mpioperator/mpi-pi:openmpi"
SSHD = ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
USER = {"securityContext": {"runAsUser": 1000}}
SIZE1 = {"cpu": 1, "memory": "1Gi"}

CASES = [
    Case(
        id="kueue-pytorchjob",
        source=src("sample-pytorchjob.yaml"),
        definition=lambda: PyTorchJob(
            name="pytorch-simple",
            image=MNIST,
            image_pull_policy="Always",
            command=MNIST_CMD,
            nodes=2,
            resources=SMALL,
            queue="user-queue",
        ),
        expected=Expected(
            "PyTorchJob",
            "pytorch-simple",
            {
                role: pod(1, MNIST, MNIST_CMD, requests=REQ, restart="OnFailure", pull="Always")
                for role in ("Master", "Worker")
            },
            queue=Q,
        ),
        cluster=KUBEFLOW,
    ),
    Case(
        id="kueue-tfjob",
        source=src("sample-tfjob.yaml"),
        definition=lambda: TFJob(
            name="tensorflow-dist-mnist",
            image=TF,
            nodes=2,
            ps=Role(),
            restart_policy="Never",
            resources=SMALL,
            queue="user-queue",
        ),
        expected=Expected(
            "TFJob",
            "tensorflow-dist-mnist",
            {
                "PS": pod(1, TF, requests=REQ, restart="Never"),
                "Worker": pod(2, TF, requests=REQ, restart="Never"),
            },
            queue=Q,
        ),
        cluster=KUBEFLOW,
    ),
    Case(
        id="kueue-paddlejob",
        source=src("sample-paddlejob.yaml"),
        definition=lambda: PaddleJob(
            name="paddle-simple-cpu",
            master_port=37777,
            image=PADDLE,
            image_pull_policy="Always",
            command=["python"],
            args=PADDLE_ARGS,
            nodes=2,
            resources=Resources(cpu=1, memory="256Mi"),
            queue="user-queue",
        ),
        expected=Expected(
            "PaddleJob",
            "paddle-simple-cpu",
            {
                "Worker": pod(
                    2,
                    PADDLE,
                    ["python"],
                    PADDLE_ARGS,
                    requests={"cpu": 1, "memory": "256Mi"},
                    ports={"master": 37777},
                    restart="OnFailure",
                    pull="Always",
                )
            },
            queue=Q,
        ),
        cluster=KUBEFLOW,
    ),
    Case(
        id="kueue-xgboostjob",
        source=src("sample-xgboostjob.yaml"),
        definition=lambda: XGBoostJob(
            name="xgboost-dist-iris-test-train",
            port=9991,
            image=XGB,
            nodes=3,
            args=XGB_WORKER,
            resources=Resources(cpu="500m", memory="256Mi"),
            queue="user-queue",
            restart_policy="ExitCode",  # the Workers'
            master=Role(
                args=[*XGB_TRAIN, "--model_path=/tmp/xgboost-model", "--model_storage_type=local"],
                restart_policy="Never",
            ),
        ),
        expected=Expected(
            "XGBoostJob",
            "xgboost-dist-iris-test-train",
            {
                "Master": pod(
                    1,
                    XGB,
                    None,
                    [*XGB_TRAIN, "--model_path=/tmp/xgboost-model", "--model_storage_type=local"],
                    requests={"cpu": "500m", "memory": "256Mi"},
                    ports={"xgboostjob-port": 9991},
                    restart="Never",
                ),
                "Worker": pod(
                    2,
                    XGB,
                    None,
                    XGB_WORKER,
                    requests={"cpu": "500m", "memory": "256Mi"},
                    ports={"xgboostjob-port": 9991},
                    restart="ExitCode",
                ),
            },
            queue=Q,
        ),
        cluster=KUBEFLOW,
    ),
    Case(
        id="kueue-jaxjob",
        source=src("sample-jaxjob.yaml"),
        definition=lambda: JAXJob(
            name="jax-simple",
            image=JAX,
            image_pull_policy="Always",
            command=["python3", "train.py"],
            nodes=2,
            restart_policy="OnFailure",
            resources=SMALL,
            queue="user-queue",
        ),
        expected=Expected(
            "JAXJob",
            "jax-simple",
            {
                "Worker": pod(
                    2,
                    JAX,
                    ["python3", "train.py"],
                    requests=REQ,
                    restart="OnFailure",
                    pull="Always",
                )
            },
            queue=Q,
        ),
        cluster=KUBEFLOW,
    ),
    Case(
        id="kueue-mpijob",
        source=src("sample-mpijob.yaml"),
        definition=lambda: MPIJob(
            name="pi",
            image=PI,
            command=["mpirun", "-n", "2", "/home/mpiuser/pi"],
            nodes=2,
            resources=Resources(cpu=1, memory="1Gi"),
            launcher=Role(resources=Resources(cpu=1, memory="1Gi")),
            ssh_dir="/home/mpiuser/.ssh",
            clean_pods="Running",
            queue="user-queue",
            container_security_context=ContainerSecurityContext(run_as_user=1000),
            worker=Role(command=SSHD[:1], args=SSHD[1:], restart_policy="Never"),
            ttl_seconds=60,
        ),
        expected=Expected(
            "MPIJob",
            "pi",
            {
                "Launcher": pod(
                    1,
                    PI,
                    ["mpirun"],
                    ["-n", "2", "/home/mpiuser/pi"],
                    limits=SIZE1,
                    container=USER,
                ),
                "Worker": pod(2, PI, SSHD[:1], SSHD[1:], limits=SIZE1, container=USER),
            },
            spec={
                "sshAuthMountPath": "/home/mpiuser/.ssh",
                "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
            },
            queue=Q,
        ),
        cluster={"operators": ["mpi-operator"]},
    ),
]
