"""paddle-operator (github.com/PaddleFlow/paddle-operator, 68230bfd, v0.3.5): PaddleJob
``batch.paddlepaddle.org/v1``.

The project has one test, controllers/paddlejob_controller_test.go ("test wide-and-deep in
service mode"); there is no controllers/paddlejob_helper_test.go at this commit (nor on any
branch). The pods, env, restart policy, PodGroup and phases of that test's job come from the
helpers it exercises (controllers/paddlejob_helper.go); cases stating them say "(no upstream
test)" and name the function.
"""

from __future__ import annotations

from typing import Any

from trainkit import PaddleJob, Resources, Role, Script

from . import (
    ABSENT,
    Case,
    Definition,
    Env,
    FieldRef,
    Gang,
    Health,
    Manifest,
    NoGang,
    PodNames,
    Pods,
    Port,
    Refused,
    Restart,
    Source,
    Succeeds,
)

REPO, REF = "PaddleFlow/paddle-operator", "68230bfd"
CONTROLLER = "controllers/paddlejob_controller_test.go"
HELPER = "controllers/paddlejob_helper.go"
HEALTH = "resource.customizations.health.batch.paddlepaddle.org_PaddleJob"
KIND = "PaddleJob (paddle-operator)"
TEST = "PaddleJob controller / test wide-and-deep in service mode"


def src(case: str, file: str = CONTROLLER) -> Source:
    return Source(REPO, REF, file, case)


def helper(function: str) -> Source:
    return src(f"{function} (no upstream test), for the job of '{TEST}'", HELPER)


def wide_and_deep(ps: int, worker: int, **spec: Any) -> dict[str, Any]:
    """The test's job: intranet Service, cleanPodPolicy Never, container ``paddle`` with
    restartPolicy Never."""
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "paddle",
                    "image": "registry.baidubce.com/kuizhiqing/demo-wide-and-deep:v1",
                }
            ],
        }
    }
    return {
        "apiVersion": "batch.paddlepaddle.org/v1",
        "kind": "PaddleJob",
        "metadata": {"name": "wide-and-deep-service", "namespace": "default"},
        "spec": {
            "cleanPodPolicy": "Never",
            "intranet": "Service",
            "ps": {"replicas": ps, "template": template},
            "worker": {"replicas": worker, "template": template},
            **spec,
        },
    }


def paddle(**kw: Any) -> PaddleJob:
    fields: dict[str, Any] = {
        "name": "wide-and-deep",
        "image": "registry.example.com/demo-wide-and-deep:1",
        "script": Script.file("train.py"),
        "resources": Resources(cpu=4, memory="8Gi"),
        "nodes": 2,
        "mode": "ps",
        "ps": Role(replicas=3, resources=Resources(cpu=2, memory="4Gi")),
        "intranet": "Service",
        "queue": "q",
    }
    return PaddleJob(**(fields | kw))


OPERATORS = ("paddle-operator", "trainer")

CASES = [
    Case(
        "paddle-operator-ps-and-workers",
        src(f"{TEST} (3 PS, 2 workers)"),
        Manifest(wide_and_deep(3, 2)),
        (
            Pods({"ps": 3, "worker": 2}),
            PodNames(
                {
                    ("ps", 2): "wide-and-deep-service-ps-2",
                    ("worker", 1): "wide-and-deep-service-worker-1",
                }
            ),
        ),
        kind=KIND,
    ),
    Case(
        "paddle-operator-scaled",
        src(f"{TEST} (scaled to 1 PS, 4 workers)"),
        Manifest(wide_and_deep(1, 4)),
        (Pods({"ps": 1, "worker": 4}),),
        kind=KIND,
    ),
    Case(
        "paddle-operator-service-env",
        helper("constructPod"),
        Manifest(wide_and_deep(3, 2)),
        (
            # Behind Services a pod's POD_IP is its own name; its index is its trainer id.
            Env(
                "worker",
                1,
                {
                    "POD_IP": "wide-and-deep-service-worker-1",
                    "PADDLE_TRAINER_ID": "1",
                    "TRAINING_ROLE": "TRAINER",
                    "PADDLE_TRAINING_ROLE": "TRAINER",
                },
            ),
            Env("ps", 2, {"POD_IP": "wide-and-deep-service-ps-2", "TRAINING_ROLE": "PSERVER"}),
            Port("worker", 36000),
        ),
        kind=KIND,
    ),
    Case(
        "paddle-operator-pod-ip-env",
        helper("constructPod"),
        Manifest(wide_and_deep(1, 2, intranet="PodIP")),
        (Env("worker", 1, {"POD_IP": FieldRef("status.podIP"), "PADDLE_TRAINER_ID": "1"}),),
        kind=KIND,
    ),
    Case(
        "paddle-operator-template-restart-policy",
        helper("constructPod"),
        Manifest(wide_and_deep(3, 2)),
        (Restart("ps", "Never"), Restart("worker", "Never")),
        kind=KIND,
    ),
    Case(
        "paddle-operator-default-restart-policy",
        helper("constructPod"),
        Manifest(
            {
                **wide_and_deep(1, 2),
                "spec": {
                    "intranet": "Service",
                    "ps": {
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "paddle"}]}},
                    },
                    "worker": {
                        "replicas": 2,
                        "template": {"spec": {"containers": [{"name": "paddle"}]}},
                    },
                },
            }
        ),
        # Without a template policy: Workers behind Services restart, the rest never do.
        (Restart("worker", "OnFailure"), Restart("ps", "Never")),
        kind=KIND,
    ),
    Case(
        "paddle-operator-podgroup",
        helper("constructPodGroup"),
        Manifest(
            wide_and_deep(
                1, 2, schedulingPolicy={"queue": "q", "minAvailable": 2, "priorityClass": "high"}
            )
        ),
        # minAvailable sets minMember; minResources stays every pod's (none here).
        (Gang("wide-and-deep-service", 2, "q", min_resources={}, priority_class="high"),),
        kind=KIND,
    ),
    Case(
        "paddle-operator-podgroup-default-queue",
        helper("constructPodGroup"),
        Manifest(wide_and_deep(1, 2, schedulingPolicy={})),
        # An empty queue is the PodGroup CRD's default, queue "default".
        (Gang("wide-and-deep-service", 3, "default"),),
        kind=KIND,
    ),
    Case(
        "paddle-operator-completion",
        helper("getPaddleJobPhase"),
        Manifest(wide_and_deep(3, 2)),
        (Succeeds(("ps", "worker"), "all", 0),),
        kind=KIND,
    ),
    *[
        Case(
            f"paddle-operator-phase-{phase.lower()}",
            helper("getPaddleJobPhase"),
            None,
            (Health(HEALTH, {"phase": phase, "mode": "PS"}, health),),
            kind=KIND,
        )
        for phase, health in (
            ("Completed", "Healthy"),
            ("Failed", "Degraded"),
            ("Running", "Progressing"),
            ("Pending", "Progressing"),
            ("Starting", "Progressing"),
        )
    ],
    Case(
        "paddle-operator-mode-ps",
        src(f"{TEST} (status.mode is PS)"),
        None,
        (Health(HEALTH, {"phase": "Running", "mode": "PS"}, "Progressing", "PaddleJob (PS)"),),
        kind=KIND,
    ),
    Case(
        "paddle-operator-definition-service-mode",
        src(f"{TEST} (3 PS, 2 workers)"),
        Definition(paddle(), operators=OPERATORS),
        (
            Pods({"ps": 3, "worker": 2}),
            PodNames({("ps", 0): "wide-and-deep-ps-0", ("worker", 1): "wide-and-deep-worker-1"}),
            Env(
                "worker",
                1,
                {
                    "POD_IP": "wide-and-deep-worker-1",
                    "PADDLE_TRAINER_ID": "1",
                    "TRAINING_ROLE": "TRAINER",
                },
            ),
            Env("ps", 0, {"TRAINING_ROLE": "PSERVER", "PADDLE_MASTER": ABSENT}),
            # trainkit writes restartPolicy Never: a failed pod fails the job, no retry.
            Restart("worker", "Never"),
            Restart("ps", "Never"),
            Succeeds(("ps", "worker"), "all", 0),
            # constructPodGroup counts every pod and every pod's resources.
            Gang("wide-and-deep", 5, "q", min_resources={"cpu": "14", "memory": "28Gi"}),
        ),
        kind=KIND,
    ),
    Case(
        "paddle-operator-definition-collective",
        helper("constructPod"),
        Definition(
            paddle(mode="collective", ps=None, intranet="PodIP", nodes=2), operators=OPERATORS
        ),
        (
            Pods({"worker": 2}),
            Env("worker", 1, {"POD_IP": FieldRef("status.podIP"), "PADDLE_TRAINER_ID": "1"}),
        ),
        kind=KIND,
    ),
    Case(
        "paddle-operator-definition-no-gang-off-volcano",
        helper("constructPodGroup"),
        Definition(paddle(queue=None), operators=OPERATORS, scheduler="default"),
        (NoGang(),),
        kind=KIND,
        why="the operator's --scheduling=volcano is an install setting; trainkit writes a "
        "schedulingPolicy exactly on Volcano clusters",
    ),
    Case(
        "paddle-operator-not-on-kueue",
        src(f"{TEST} (Kueue has no paddle-operator integration)"),
        Definition(paddle(queue=None), operators=OPERATORS, scheduler="kueue"),
        (Refused("PaddleJob"),),
        kind=KIND,
        why="Kueue v0.19 has no batch.paddlepaddle.org integration: such a job would run "
        "outside every quota, so trainkit refuses it",
    ),
]
