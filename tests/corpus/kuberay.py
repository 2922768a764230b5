"""KubeRay's RayJob samples (ray-project/kuberay at v1.7.0, ``ray-operator/config/samples/``)
and Kueue's (kubernetes-sigs/kueue at v0.19.2). Each runs ``sample_code.py`` from a ConfigMap
the sample ships beside the RayJob, mounted on the head."""

from __future__ import annotations

from trainkit import (
    ConfigMapVolume,
    DeletionRule,
    HeadService,
    Hook,
    Policy,
    RayJob,
    RayStart,
    Resources,
    Role,
    RuntimeEnv,
    WorkerGroup,
)

from . import Case, Expected, Source, pod

__all__ = ["CASES"]


def src(path: str) -> Source:
    return Source(
        "ray-project/kuberay",
        "v1.7.0",
        "59d663aeec13760646da3db9c1cf8cfe883e30b7",
        f"ray-operator/config/samples/{path}",
    )


RAY = "rayproject/ray:2.52.0"
CMD = ["python", "/home/ray/samples/sample_code.py"]
CODE = {
    "/home/ray/samples": 'configMap:ray-job-code-sample:[{"key": "sample_code.py", "path": "sample_code.py"}]:ro'
}
PIP = ["requests==2.26.0", "pendulum==2.1.2"]
ENV = {"pip": PIP, "env_vars": {"counter_name": "test_counter"}}
HEAD_REQ = {"cpu": "1", "memory": "2Gi"}
HEAD_LIM = {"cpu": "1", "memory": "5Gi"}
WORKER = {"cpu": "1", "memory": "1Gi"}
# The team may mount the sample's code and pip installs from an index the platform names; the
# head is burstable (the samples request less memory than their limit).
PLATFORM = {
    "cluster": {"operators": ["kuberay"]},
    "team": {"config_maps": {"ray-job-code-sample": ["sample_code.py"]}},
    "objects": (lambda: Policy(burstable=True, package_indexes=["https://pypi.org/simple/"]),),
}


def sample(name: str, nodes: int = 1, **more: object) -> RayJob:
    """KubeRay's sample RayJob: a 1-CPU head with the code (on the head only), one group of
    1-CPU workers."""
    fields: dict[str, object] = {
        "image": RAY,
        "command": CMD,
        "shutdown_after_finish": False,
        "head": Resources(cpu=1, memory="5Gi", memory_request="2Gi"),
        "workers": [
            WorkerGroup(name="small-group", nodes=nodes, resources=Resources(cpu=1, memory="1Gi"))
        ],
        "runtime_env": RuntimeEnv(pip=PIP, env_vars={"counter_name": "test_counter"}),
        "head_volumes": [
            ConfigMapVolume(
                name="code-sample",
                config_map="ray-job-code-sample",
                path="/home/ray/samples",
                items={"sample_code.py": "sample_code.py"},
            )
        ],
    }
    return RayJob(name=name, **(fields | more))


def expected(name: str, workers: int = 1, **spec: object) -> Expected:
    return Expected(
        "RayJob",
        name,
        {
            "head": pod(1, RAY, requests=HEAD_REQ, limits=HEAD_LIM, mounts=CODE),
            "small-group": pod(workers, RAY, requests=WORKER, limits=WORKER),
        },
        spec={
            "entrypoint": CMD,
            "runtimeEnvYAML": ENV,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}},
                "workerGroupSpecs": [{"rayStartParams": {}}],
            },
            **spec,
        },
    )


DELETION_PROGRAM = (
    "\nimport ray\nray.init()\nprint(f'ray.cluster_resources(): {ray.cluster_resources()}')\n"
)

CASES = [
    Case(
        id="ray-job-sample",
        source=src("ray-job.sample.yaml"),
        definition=lambda: sample(
            "rayjob-sample",
            workers=[
                WorkerGroup(
                    name="small-group", resources=Resources(cpu=1, cpu_request="200m", memory="1Gi")
                )
            ],
        ),
        expected=Expected(
            "RayJob",
            "rayjob-sample",
            {
                "head": pod(1, RAY, requests=HEAD_REQ, limits=HEAD_LIM, mounts=CODE),
                "small-group": pod(1, RAY, requests={"cpu": "200m"}, limits={"cpu": "1"}),
            },
            spec=expected("rayjob-sample").spec,
        ),
        **PLATFORM,
    ),
    Case(
        id="ray-job-shutdown",
        source=src("ray-job.shutdown.yaml"),
        definition=lambda: sample(
            "rayjob-sample-shutdown", shutdown_after_finish=True, ttl_seconds=10
        ),
        expected=expected(
            "rayjob-sample-shutdown", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10
        ),
        **PLATFORM,
    ),
    Case(
        id="ray-job-custom-head-svc",
        source=src("ray-job.custom-head-svc.yaml"),
        definition=lambda: sample(
            "rayjob-sample", head_service=HeadService(name="custom-ray-head-service-name")
        ),
        expected=Expected(
            "RayJob",
            "rayjob-sample",
            expected("rayjob-sample").roles,
            spec={
                **expected("rayjob-sample").spec,
                "rayClusterSpec": {
                    "headGroupSpec": {
                        "rayStartParams": {},
                        "headService": {"metadata": {"name": "custom-ray-head-service-name"}},
                    },
                    "workerGroupSpecs": [{"rayStartParams": {}}],
                },
            },
        ),
        **PLATFORM,
    ),
    Case(
        id="ray-job-sidecar-mode",
        source=src("ray-job.sidecar-mode.yaml"),
        definition=lambda: sample("rayjob-sidecar-mode", submission_mode="SidecarMode"),
        expected=expected("rayjob-sidecar-mode", submissionMode="SidecarMode"),
        **PLATFORM,
    ),
    Case(
        id="ray-job-volcano-queue",
        source=src("ray-job.volcano-scheduler-queue.yaml"),
        definition=lambda: sample("rayjob-sample-0", nodes=2, queue="kuberay-test-queue"),
        expected=Expected(
            "RayJob",
            "rayjob-sample-0",
            expected("rayjob-sample-0", workers=2).roles,
            spec=expected("rayjob-sample-0").spec,
            queue=("volcano", "kuberay-test-queue"),
        ),
        **PLATFORM,
    ),
    Case(
        id="ray-job-batch-inference",
        source=src("ray-job.batch-inference.yaml"),
        definition=lambda: RayJob(
            name="rayjob-sample",
            image="rayproject/ray-ml:2.46.0.0e19ea-py39-gpu",
            command=CMD,
            shutdown_after_finish=False,
            head=Resources(cpu=54, memory="54Gi", gpu=4),
            node_selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
            volumes=[
                ConfigMapVolume(
                    name="code-sample",
                    config_map="ray-job-code-sample",
                    path="/home/ray/samples",
                    items={"sample_code.py": "sample_code.py"},
                )
            ],
        ),
        expected=Expected(
            "RayJob",
            "rayjob-sample",
            {
                "head": pod(
                    1,
                    "rayproject/ray-ml:2.46.0.0e19ea-py39-gpu",
                    limits={"nvidia.com/gpu": "4", "cpu": "54", "memory": "54Gi"},
                    mounts=CODE,
                    pod={"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"}},
                )
            },
            spec={
                "entrypoint": CMD,
                "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}}, "workerGroupSpecs": []},
            },
        ),
        **PLATFORM,
    ),
    Case(
        id="ray-job-resources",
        source=src("ray-job.resources.yaml"),
        definition=lambda: sample(
            "rayjob-sample",
            head_ray_start=RayStart(cpus=3, gpus=2, resources={"resource1": 2, "resource2": 3}),
            entrypoint_cpus=2,
            entrypoint_gpus=0.5,
            entrypoint_resources={"resource1": 1, "resource2": 2},
        ),
        expected=Expected(
            "RayJob",
            "rayjob-sample",
            expected("rayjob-sample").roles,
            spec={
                **expected("rayjob-sample").spec,
                "entrypointNumCpus": 2,
                "entrypointNumGpus": 0.5,
                "entrypointResources": '{"resource1": 1, "resource2": 2}',
                "rayClusterSpec": {
                    "headGroupSpec": {
                        "rayStartParams": {
                            "num-cpus": "3",
                            "num-gpus": "2",
                            "resources": '"{\\"resource1\\": 2, \\"resource2\\": 3}"',
                        }
                    },
                    "workerGroupSpecs": [{"rayStartParams": {}}],
                },
            },
        ),
        refused="num-gpus 2 on a head pod without GPUs: Ray would place the entrypoint's "
        "GPU share where no GPU is visible (the rest, rayStartParams and the entrypoint's "
        "resources, is said)",
        **PLATFORM,
    ),
    Case(
        id="ray-job-deletion-rules",
        source=src("ray-job.deletion-rules.yaml"),
        definition=lambda: RayJob(
            name="rayjob-deletion-rules",
            image=RAY,
            command=["python", "-c", DELETION_PROGRAM],
            head=Resources(cpu=1, memory="5Gi", memory_request="2Gi"),
            workers=[WorkerGroup(name="small-group", resources=Resources(cpu=1, memory="1Gi"))],
            deletion_rules=[
                DeletionRule(delete=what, when=when, after_seconds=after)
                for when in ("failed", "succeeded")
                for what, after in (("workers", 30), ("cluster", 60), ("self", 90))
            ],
        ),
        expected=Expected(
            "RayJob",
            "rayjob-deletion-rules",
            {
                "head": pod(1, RAY, requests=HEAD_REQ, limits=HEAD_LIM),
                "small-group": pod(1, RAY, requests=WORKER, limits=WORKER),
            },
            spec={
                "entrypoint": ["python", "-c", DELETION_PROGRAM],
                "deletionStrategy": {
                    "deletionRules": [
                        {"condition": {"jobStatus": status, "ttlSeconds": ttl}, "policy": policy}
                        for status in ("FAILED", "SUCCEEDED")
                        for policy, ttl in (
                            ("DeleteWorkers", 30),
                            ("DeleteCluster", 60),
                            ("DeleteSelf", 90),
                        )
                    ]
                },
                "rayClusterSpec": {
                    "headGroupSpec": {"rayStartParams": {}},
                    "workerGroupSpecs": [{"rayStartParams": {}}],
                },
            },
        ),
        refused="DeleteSelf: Argo CD's self-heal would create the RayJob again and run it twice",
        **PLATFORM,
    ),
    Case(
        id="ray-job-light-weight-submitter",
        source=src("ray-job.light-weight-submitter.yaml"),
        # KubeRay's light-weight submitter (ray-operator/rayjob-submitter): trainkit writes its
        # arguments from the job's command and runtime_env, which the RayJob's spec then
        # leaves out as the sample does (KubeRay reads neither with a submitter command).
        definition=lambda: sample(
            "rayjob-light-weight-submitter",
            submitter=Role(image="quay.io/kuberay/submitter:v1.5.1", command=["/submitter"]),
        ),
        expected=Expected(
            "RayJob",
            "rayjob-light-weight-submitter",
            {
                **expected("rayjob-light-weight-submitter").roles,
                # the sample's submitterPodTemplate
                "submitter": pod(
                    1,
                    "quay.io/kuberay/submitter:v1.5.1",
                    ["/submitter"],
                    [
                        "--runtime-env-json",
                        '{"pip":["requests==2.26.0","pendulum==2.1.2"],'
                        '"env_vars":{"counter_name":"test_counter"}}',
                        "--",
                        *CMD,
                    ],
                    restart="Never",
                ),
            },
            spec={"rayClusterSpec": expected("x").spec["rayClusterSpec"]},
        ),
        **PLATFORM,
    ),
    Case(
        id="ray-job-pytorch-mnist",
        source=src("pytorch-mnist/ray-job.pytorch-mnist.yaml"),
        definition=lambda: RayJob(
            name="rayjob-pytorch-mnist",
            image=RAY,
            command=[
                "python",
                "ray-operator/config/samples/pytorch-mnist/ray_train_pytorch_mnist.py",
            ],
            shutdown_after_finish=False,
            head=Resources(cpu=1, memory="5Gi", memory_request="4Gi"),
            workers=[
                WorkerGroup(name="small-group", nodes=2, resources=Resources(cpu=3, memory="4Gi"))
            ],
            runtime_env=RuntimeEnv(
                pip=["torch", "torchvision"],
                env_vars={"NUM_WORKERS": "2", "CPUS_PER_WORKER": "2"},
                working_dir="https://github.com/ray-project/kuberay/archive/master.zip",
            ),
        ),
        expected=Expected(
            "RayJob",
            "rayjob-pytorch-mnist",
            {
                "head": pod(1, RAY, requests={"cpu": "1", "memory": "4Gi"}, limits=HEAD_LIM),
                "small-group": pod(2, RAY, limits={"cpu": "3", "memory": "4Gi"}),
            },
            spec={
                "entrypoint": [
                    "python",
                    "ray-operator/config/samples/pytorch-mnist/ray_train_pytorch_mnist.py",
                ],
                "runtimeEnvYAML": {
                    "pip": ["torch", "torchvision"],
                    "working_dir": "https://github.com/ray-project/kuberay/archive/master.zip",
                    "env_vars": {"NUM_WORKERS": "2", "CPUS_PER_WORKER": "2"},
                },
                "rayClusterSpec": expected("x").spec["rayClusterSpec"],
            },
        ),
        # The archive is KubeRay's own repository at master: the team is granted its prefix.
        **(
            PLATFORM
            | {
                "team": {
                    **PLATFORM["team"],
                    "working_dir_sources": ["https://github.com/ray-project/kuberay/archive/"],
                }
            }
        ),
    ),
    Case(
        id="kueue-ray-job-sample",
        source=Source(
            "kubernetes-sigs/kueue",
            "v0.19.2",
            "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb",
            "site/static/examples/jobs/ray-job-sample.yaml",
        ),
        definition=lambda: RayJob(
            name="rayjob-sample",
            image="rayproject/ray:2.9.0",
            command=CMD,
            queue="user-queue",
            head=Resources(cpu=1, memory="2Gi"),
            workers=[
                WorkerGroup(
                    name="small-group",
                    resources=Resources(cpu=1, memory="1Gi"),
                    pre_stop=Hook(exec=["/bin/sh", "-c", "ray stop"]),
                )
            ],
            runtime_env=RuntimeEnv(pip=PIP, env_vars={"counter_name": "test_counter"}),
            head_volumes=[
                ConfigMapVolume(
                    name="code-sample",
                    config_map="ray-job-code-sample",
                    path="/home/ray/samples",
                    items={"sample_code.py": "sample_code.py"},
                )
            ],
        ),
        expected=Expected(
            "RayJob",
            "rayjob-sample",
            {
                "head": pod(1, "rayproject/ray:2.9.0", limits={"cpu": "1"}, mounts=CODE),
                "small-group": pod(
                    1,
                    "rayproject/ray:2.9.0",
                    limits={"cpu": "1"},
                    container={
                        "lifecycle": {
                            "preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}}
                        }
                    },
                ),
            },
            spec={
                "entrypoint": CMD,
                "runtimeEnvYAML": ENV,
                "shutdownAfterJobFinishes": True,
                "rayClusterSpec": {
                    "headGroupSpec": {"rayStartParams": {}},
                    "workerGroupSpecs": [{"rayStartParams": {}}],
                },
            },
            queue=("kueue", "user-queue"),
        ),
        **PLATFORM,
    ),
]
