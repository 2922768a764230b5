"""When each kind's deadline starts counting, as its controller does it (effective/deadlines.py).

Training Operator v1.9.4 common/job.go sets status.startTime with the pods, after Volcano admits
the PodGroup; mpi-operator's deadline is its launcher Job's, created with the MPIJob
(mpi_job_controller.go newLauncherJob); Trainer counts from the TrainJob's creation or last
resume (trainjob_controller.go reconcileDeadline); KubeRay from Initializing
(rayjob_controller.go initRayJobStatusIfNeed), at creation on Volcano, at admission on Kueue.
"""

from __future__ import annotations

from typing import Any

import pytest

from kind_fixtures import render
from trainkit import MPIJob, PaddleJob, PyTorchJob, RayJob, Resources, Role, Script, TFJob
from trainkit.effective import effective_job

RES = Resources(cpu=4, memory="8Gi", gpu=1)


def one(kind: Any, **kw: Any) -> Any:
    return kind(name="j", image="img:1", script=Script.file("train.py"), **kw)


@pytest.mark.parametrize(
    ("job", "operators", "says"),
    [
        (
            one(PyTorchJob, resources=RES, deadline_seconds=60),
            ["training-operator"],
            "60 s, from when the operator creates the pods, once Volcano admits the gang: time "
            "queued does not count",
        ),
        (
            one(TFJob, resources=RES, deadline_seconds=60),
            ["training-operator"],
            "60 s, from when the operator creates the pods, once Volcano admits the gang",
        ),
        (
            one(MPIJob, resources=RES, deadline_seconds=60),
            ["mpi-operator"],
            "60 s, the launcher Job's, from its creation with the MPIJob: time queued in "
            "Volcano counts",
        ),
        (
            one(RayJob, head=Resources(cpu=4, memory="8Gi"), deadline_seconds=60),
            ["kuberay"],
            "60 s, from the RayJob's creation (KubeRay starts the clock at Initializing): time "
            "queued in Volcano counts; each retry starts a new clock",
        ),
        (
            one(PaddleJob, resources=RES, mode="ps", ps=Role(replicas=1), deadline_seconds=60),
            ["paddle-operator"],
            "60 s per pod (paddle-operator has no job deadline), counted by the kubelet from "
            "each pod's start: time queued does not count",
        ),
        (one(PyTorchJob, resources=RES), ["training-operator"], "none"),
    ],
)
def test_the_deadline_says_when_its_clock_starts(job: Any, operators: list[str], says: str) -> None:
    body, pj = render(job, operators=operators)
    assert effective_job(pj, body).deadline.startswith(says)
