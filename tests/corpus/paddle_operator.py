"""paddle-operator's examples (PaddleFlow/paddle-operator at v0.3.5, the pinned CRD's commit,
``deploy/examples/``): PaddleJob ``batch.paddlepaddle.org/v1``, collective and parameter
servers, on Volcano for one."""

from __future__ import annotations

from trainkit import PaddleJob, Resources, Role

from . import Case, Expected, Source, pod

__all__ = ["CASES"]

PADDLE = {"cluster": {"operators": ["paddle-operator"]}}
SMALL = Resources(cpu=1, memory="1Gi")


def src(path: str) -> Source:
    return Source(
        "PaddleFlow/paddle-operator", "v0.3.5", "68230bfd69b3e36f81904866829f73c9f1e15798", path
    )


WIDE = "registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1"
DEEPFM = "registry.baidubce.com/paddle-operator/demo-deepfm:v1"
RESNET = "registry.baidubce.com/paddle-operator/demo-resnet:v1"
CPU = "registry.baidubce.com/paddlepaddle/paddle:2.4.0rc0-cpu"


def wide_and_deep(name: str, **more: object) -> PaddleJob:
    """The wide-and-deep examples: two parameter servers, two trainers, pods kept."""
    fields: dict[str, object] = {
        "image": WIDE,
        "mode": "ps",
        "ps": Role(replicas=2),
        "nodes": 2,
        "resources": SMALL,
        "clean_pods": "None",
    }
    return PaddleJob(name=name, **(fields | more))


CASES = [
    Case(
        id="po-simple",
        source=src("deploy/examples/simple.yaml"),
        definition=lambda: PaddleJob(
            name="simple",
            image=CPU,
            command=["python"],
            args=["-m", "paddle.distributed.launch", "run_check"],
            nodes=2,
            resources=SMALL,
            clean_pods="None",
        ),
        expected=Expected(
            "PaddleJob",
            "simple",
            {"worker": pod(2, CPU, ["python"], ["-m", "paddle.distributed.launch", "run_check"])},
            spec={"cleanPodPolicy": "Never"},
        ),
        **PADDLE,
    ),
    Case(
        id="po-resnet",
        source=src("deploy/examples/resnet.yaml"),
        definition=lambda: PaddleJob(
            name="resnet",
            image=RESNET,
            command=["python"],
            args=["-m", "paddle.distributed.launch", "train_fleet.py"],
            nodes=2,
            resources=Resources(cpu=8, memory="32Gi", gpu=1),
            shm_size="8Gi",
            clean_pods="None",
        ),
        expected=Expected(
            "PaddleJob",
            "resnet",
            {
                "worker": pod(
                    2,
                    RESNET,
                    ["python"],
                    ["-m", "paddle.distributed.launch", "train_fleet.py"],
                    limits={"nvidia.com/gpu": 1},
                    mounts={"/dev/shm": "emptyDir:Memory"},
                )
            },
            spec={"cleanPodPolicy": "Never"},
        ),
        **PADDLE,
    ),
    Case(
        id="po-deepfm",
        source=src("deploy/examples/deepfm.yaml"),
        definition=lambda: PaddleJob(
            name="deepfm",
            image=DEEPFM,
            image_pull_policy="Always",
            command=["python3"],
            args=["train.py"],
            mode="ps",
            ps=Role(replicas=2),
            nodes=2,
            with_gloo=1,
            resources=SMALL,
            clean_pods="None",
        ),
        expected=Expected(
            "PaddleJob",
            "deepfm",
            {
                role: pod(2, DEEPFM, ["python3"], ["train.py"], pull="Always")
                for role in ("ps", "worker")
            },
            # "OnFailed" is none of paddle-operator's values (api/v1/paddlejob_types.go): it
            # matches neither cleanup branch (controllers/paddlejob_controller.go), so the pods
            # are kept, as with Never.
            spec={"cleanPodPolicy": "Never", "withGloo": 1},
        ),
        **PADDLE,
    ),
    Case(
        id="po-wide-and-deep",
        source=src("deploy/examples/wide_and_deep.yaml"),
        definition=lambda: wide_and_deep("wide-ande-deep", with_gloo=1),
        expected=Expected(
            "PaddleJob",
            "wide-ande-deep",
            {role: pod(2, WIDE) for role in ("ps", "worker")},
            spec={"cleanPodPolicy": "Never", "withGloo": 1},
        ),
        **PADDLE,
    ),
    Case(
        id="po-wide-and-deep-podip",
        source=src("deploy/examples/wide_and_deep_podip.yaml"),
        definition=lambda: PaddleJob(
            name="wide-ande-deep-podip",
            mode="ps",
            ps=Role(replicas=2),
            nodes=2,
            resources=SMALL,
            clean_pods="None",
            intranet="PodIP",
            restart_policy="Never",
            image="registry.baidubce.com/kuizhiqing/demo-wide-and-deep:v1",
        ),
        expected=Expected(
            "PaddleJob",
            "wide-ande-deep-podip",
            {
                role: pod(
                    2, "registry.baidubce.com/kuizhiqing/demo-wide-and-deep:v1", restart="Never"
                )
                for role in ("ps", "worker")
            },
            spec={"cleanPodPolicy": "Never", "intranet": "PodIP"},
        ),
        **PADDLE,
    ),
    Case(
        id="po-wide-and-deep-service",
        source=src("deploy/examples/wide_and_deep_service.yaml"),
        definition=lambda: wide_and_deep("wide-ande-deep-service", with_gloo=1, intranet="Service"),
        expected=Expected(
            "PaddleJob",
            "wide-ande-deep-service",
            {role: pod(2, WIDE) for role in ("ps", "worker")},
            spec={"cleanPodPolicy": "Never", "withGloo": 1, "intranet": "Service"},
        ),
        refused="paddle-operator restarts a Service worker OnFailure forever (it has no backoff "
        "limit); trainkit's paddle-operator pods never restart",
        **PADDLE,
    ),
    Case(
        id="po-wide-and-deep-volcano",
        source=src("deploy/examples/wide_and_deep_volcano.yaml"),
        definition=lambda: wide_and_deep(
            "wide-ande-deep-volcano",
            with_gloo=1,
            queue="default",
            resources=Resources(cpu="200m", memory="1Gi"),
            ps=Role(replicas=2, resources=Resources(cpu="300m", memory="1Gi")),
        ),
        expected=Expected(
            "PaddleJob",
            "wide-ande-deep-volcano",
            {
                "ps": pod(2, WIDE, limits={"cpu": "300m"}),
                "worker": pod(2, WIDE, requests={"cpu": "200m"}),
            },
            spec={"cleanPodPolicy": "Never", "withGloo": 1},
            queue=("volcano", "default"),
        ),
        **PADDLE,
    ),
]
