"""Volcano v1.12.4 (github.com/volcano-sh/volcano, tag v1.12.4): which gangs a queue ever
admits (the capacity plugin's enqueue and allocate tests) and the queue states its
controller reports (the queue controller's tests), where trainkit's admission check and its
Argo CD health check depend on them.

Upstream's cases run against a live session with other jobs holding part of a queue; what
carries over to a check that sees no cluster is the part that holds whatever else runs: a
gang whose minimum exceeds its queue's (or an ancestor's) capability is never enqueued, a job
in a queue with children never runs, and a gang within every capability on its path can be.
"""

from __future__ import annotations

from typing import Any

from trainkit import Capacity, PyTorchJob, Queue, Resources

from . import Case, Definition, Gang, Health, Refused, Source

REPO, REF = "volcano-sh/volcano", "v1.12.4"
CAPACITY = "pkg/scheduler/plugins/capacity/capacity_test.go"
QUEUE = "pkg/controllers/queue/queue_controller_test.go"
HEALTH = "resource.customizations.health.scheduling.volcano.sh_Queue"


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def job(queue: str, pods: int, **res: Any) -> PyTorchJob:
    """A gang of ``pods`` pods requesting ``res`` each (requests = limits)."""
    return PyTorchJob(
        name="pg",
        image="registry.example.com/img:1",
        command=["python3", "train.py"],
        nodes=pods,
        resources=Resources(**res),
        queue=queue,
    )


def queue(name: str, parent: str | None = None, cap: Any = None, deserved: Any = None) -> Queue:
    return Queue(
        name=name,
        parent=parent,
        capability=Capacity(**cap) if cap else None,
        deserved=Capacity(**deserved) if deserved else None,
    )


HIERARCHY_1 = (
    queue("q1", cap={"cpu": 4, "memory": "4Gi"}, deserved={"cpu": 2, "memory": "2Gi"}),
    queue("q2", cap={"cpu": 4, "memory": "4Gi"}, deserved={"cpu": 2, "memory": "2Gi"}),
    queue("q11", "q1", cap={"cpu": 1, "memory": "1Gi"}, deserved={"cpu": 1, "memory": "1Gi"}),
    queue("q12", "q1", cap={"cpu": 3, "memory": "3Gi"}, deserved={"cpu": 1, "memory": "1Gi"}),
)
HIERARCHY_3 = (
    queue("q3", cap={"cpu": 4, "memory": "4Gi"}, deserved={"cpu": 4, "memory": "4Gi"}),
    queue("q31", "q3", cap={"cpu": 4, "memory": "4Gi"}, deserved={"cpu": 2, "memory": "2Gi"}),
    queue("q32", "q3", cap={"cpu": 4, "memory": "4Gi"}, deserved={"cpu": 2, "memory": "2Gi"}),
)
HIERARCHY_6 = (
    queue("q6", cap={"cpu": 2, "memory": "4Gi"}, deserved={"cpu": 2, "memory": "4Gi"}),
    queue("q61", "q6", deserved={"cpu": 1, "memory": "2Gi"}),
    queue("q62", "q6", deserved={"cpu": 1, "memory": "2Gi"}),
)

CASES = [
    Case(
        "volcano-leaf-queue-admits",
        src(CAPACITY, "TestHierarchicalQueue / case0: Pod allocatable when queue is leaf queue"),
        Definition(job("q11", 1, cpu=1, memory="1Gi"), platform=HIERARCHY_1, queue="q11"),
        (Gang("pg", 1, "q11", min_resources={"cpu": "1", "memory": "1Gi"}),),
    ),
    Case(
        "volcano-parent-queue-never-runs",
        src(
            CAPACITY,
            "TestHierarchicalQueue / case1: Pod not allocatable when queue is not leaf queue",
        ),
        Definition(job("q1", 1, cpu=1, memory="1Gi"), platform=HIERARCHY_1, queue="q1"),
        (Refused("Volcano runs jobs only in leaf queues"),),
    ),
    Case(
        "volcano-gang-within-capability",
        src(
            CAPACITY,
            "TestHierarchicalQueue / case2: Pod allocatable when queue has not exceed capability",
        ),
        Definition(job("q31", 2, cpu=2, memory="2Gi"), platform=HIERARCHY_3, queue="q31"),
        (Gang("pg", 2, "q31", min_resources={"cpu": "4", "memory": "4Gi"}),),
    ),
    Case(
        "volcano-gang-over-leaf-capability",
        src(CAPACITY, "TestEnqueueAndAllocatable / case2: exceed capacity, can not enqueue"),
        Definition(job("q31", 3, cpu=2, memory="2Gi"), platform=HIERARCHY_3, queue="q31"),
        (Refused("queue 'q31' can hold at most 4 cpu, 4Gi memory"),),
    ),
    Case(
        "volcano-ancestor-capability-inherited",
        src(
            CAPACITY,
            "TestHierarchicalQueue / case6: podgroup can't be enqueued when any ancestor queue's capability is not enough",
        ),
        Definition(job("q61", 1, cpu=2, memory="4Gi"), platform=HIERARCHY_6, queue="q61"),
        # pg10 (2 cpu, 4Gi) is enqueued under q6's capability of 2 cpu, 4Gi.
        (Gang("pg", 1, "q61", min_resources={"cpu": "2", "memory": "4Gi"}),),
    ),
    Case(
        "volcano-ancestor-capability-exceeded",
        src(
            CAPACITY,
            "TestHierarchicalQueue / case4: Pod is not allocatable when ancestor queue's real capability not enough",
        ),
        Definition(job("q61", 2, cpu=2, memory="2Gi"), platform=HIERARCHY_6, queue="q61"),
        (Refused("queue 'q6' (an ancestor of 'q61') can hold at most 2 cpu"),),
    ),
    Case(
        "volcano-unlimited-resource-inherited",
        src(
            CAPACITY,
            "TestHierarchicalQueue / case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue",
        ),
        Definition(
            job("q51", 1, cpu=1, memory="1Gi"),
            platform=(
                queue("q5", cap={"memory": "4Gi"}, deserved={"memory": "4Gi"}),
                queue("q51", "q5", cap={"memory": "2Gi"}, deserved={"memory": "2Gi"}),
            ),
            queue="q51",
        ),
        (Gang("pg", 1, "q51"),),
    ),
    Case(
        "volcano-gpu-within-leaf",
        src(
            CAPACITY,
            "TestHierarchicalQueue / case8: When the queue's deserved value has a scalar resource set, the check can pass",
        ),
        Definition(
            job("q81", 1, cpu=2, memory="2Gi", gpu=1),
            platform=(
                queue("q8", deserved={"cpu": 2, "memory": "2Gi", "gpu": 8}),
                queue("q81", "q8", deserved={"cpu": 2, "memory": "2Gi", "gpu": 4}),
            ),
            queue="q81",
        ),
        (Gang("pg", 1, "q81", min_resources={"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}),),
    ),
    Case(
        "volcano-gpus-over-capability",
        src(CAPACITY, "TestEnqueueAndAllocatable / case2: exceed capacity, can not enqueue (GPUs)"),
        Definition(job("q", 3, cpu=2, memory="2Gi", gpu=8), capability={"gpu": 16}),
        (Refused("the gang of 3 pods needs 24 nvidia.com/gpu"),),
    ),
    Case(
        "volcano-queue-open",
        src(QUEUE, "TestSyncQueue / From empty state to open"),
        None,
        (Health(HEALTH, {"state": "Open"}, "Healthy", "Queue is Open"),),
        kind="Queue",
    ),
    Case(
        "volcano-queue-closed",
        src(QUEUE, "TestSyncQueue / From open to close"),
        None,
        (Health(HEALTH, {"state": "Closed"}, "Healthy", "admits no new jobs"),),
        kind="Queue",
        why="Volcano enqueues no gang in a Closed queue (capacity_test.go 'case4: queue with "
        "non-open state, can not enqueue'); the health check still says Healthy, because queues "
        "sync in an early wave and a queue that is not Healthy would hold every job's sync",
    ),
    Case(
        "volcano-queue-not-reported",
        src(QUEUE, "TestSyncQueue / From empty state to open (before the first sync)"),
        None,
        (Health(HEALTH, {"state": ""}, "Healthy", "has not reported"),),
        kind="Queue",
    ),
]
