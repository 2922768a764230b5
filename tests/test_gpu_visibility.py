"""Which GPUs each pod sees: those it requests, and none without a request.

The NVIDIA container runtime exposes the GPUs the image's NVIDIA_VISIBLE_DEVICES names (CUDA
images say ``all``) to a container that requests none, unless the pod's env overrides it with
an empty value; mpi-operator blanks it and NVIDIA_DRIVER_CAPABILITIES on its launcher for
this reason (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go
nvidiaDisableEnvVars). Every pod without a GPU request gets the same, and a GPU-less Ray head
says ``num-gpus: "0"`` to Ray.
"""

from __future__ import annotations

from typing import Any

import pytest

from kind_fixtures import render
from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    PaddleJob,
    Queue,
    RayJob,
    Resources,
    Role,
    RuntimeMPI,
    Script,
    Team,
    TFJob,
    TrainJob,
    WorkerGroup,
)
from trainkit.effective import effective_job
from trainkit.load import Definition
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects

BLANK = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
GPU = Resources(cpu=8, memory="32Gi", gpu=4)
CPU = Resources(cpu=4, memory="16Gi")


def blanks(ps: Any) -> dict[str, str]:
    return {e.name: e.value for e in ps.env if e.name in BLANK}


def tfjob() -> TFJob:
    return TFJob(
        name="tf", image="img:1", script=Script.file("train.py"), nodes=2, resources=GPU,
        ps=Role(replicas=2, resources=CPU), chief=Role(resources=CPU),
    )  # fmt: skip


@pytest.mark.parametrize("accelerator", ["cuda", None])
def test_tfjob_roles_without_gpus_see_none(accelerator: str | None) -> None:
    body, pj = render(tfjob(), accelerator=accelerator, operators=["training-operator"])
    ej = effective_job(pj, body)
    seen = {
        ps.role: (blanks(ps), ps.sees_gpus(pj.cluster.gpu_resource, pj.cluster.accelerator))
        for ps in ej.pod_sets
    }
    assert seen["PS"] == (BLANK, "none (NVIDIA_VISIBLE_DEVICES is blank)")
    assert seen["Chief"] == (BLANK, "none (NVIDIA_VISIBLE_DEVICES is blank)")
    assert seen["Worker"] == ({}, "its 4 nvidia.com/gpu")


def test_rocm_exposes_only_assigned_devices() -> None:
    c = {"gpu_resource": "amd.com/gpu", "accelerator": "rocm", "operators": ["training-operator"]}
    body, pj = render(tfjob(), **c)
    ej = effective_job(pj, body)
    (ps,) = [p for p in ej.pod_sets if p.role == "PS"]
    assert blanks(ps) == {}
    assert (
        ps.sees_gpus(pj.cluster.gpu_resource, pj.cluster.accelerator)
        == "none (ROCm exposes only the devices a pod requests)"
    )


def test_paddle_parameter_servers_see_none() -> None:
    job = PaddleJob(
        name="pd", image="img:1", script=Script.file("train.py"), mode="ps", nodes=2,
        resources=GPU, ps=Role(replicas=1, resources=CPU),
    )  # fmt: skip
    body, pj = render(job, operators=["training-operator"])
    ej = effective_job(pj, body)
    assert {ps.role: blanks(ps) for ps in ej.pod_sets} == {"Master": BLANK, "Worker": {}}


def test_a_gpu_less_ray_head_and_the_submitter_see_none() -> None:
    job = RayJob(
        name="rj", image="img:1", script=Script.file("train.py"), head=CPU,
        workers=[WorkerGroup(name="gpu", resources=GPU)],
    )  # fmt: skip
    body, pj = render(job, operators=["kuberay"])
    head = body["spec"]["rayClusterSpec"]["headGroupSpec"]
    # KubeRay passes rayStartParams to `ray start`; Ray would otherwise count the GPUs it
    # detects (ray-operator/controllers/ray/common/pod.go generateRayStartCommand).
    assert head["rayStartParams"] == {"num-gpus": "0"}
    assert "rayStartParams" not in body["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    ej = effective_job(pj, body)
    assert {ps.role: blanks(ps) for ps in ej.pod_sets} == {
        "Head": BLANK,
        "gpu": {},
        "Submitter": BLANK,
    }


def test_trainer_pods_without_gpus_see_none() -> None:
    p = "jobs/platform/p.py"
    mpi = ClusterTrainingRuntime(
        name="ds", image="img:1", nodes=2, resources=GPU, mpi=RuntimeMPI(), run_as_user=1000,
        fs_group=1000,
    )  # fmt: skip
    cpu_rt = ClusterTrainingRuntime(name="cpu", image="img:1", resources=CPU)
    defs = [
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8), p, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), p, "platform"),
        Definition(Team(name="t", queues=["q"]), p, "platform"),
        Definition(mpi, p, "platform"),
        Definition(cpu_rt, p, "platform"),
        Definition(
            TrainJob(name="a", runtime="ds", script=Script.file("t.py")), "jobs/t/a.py", "t",
            files={"t.py": "x"},
        ),
        Definition(
            TrainJob(name="b", runtime="cpu", script=Script.file("t.py")), "jobs/t/b.py", "t",
            files={"t.py": "x"},
        ),
    ]  # fmt: skip
    (cp,) = build_plan(defs).clusters
    objs = {(r.body["kind"], r.body["metadata"]["name"]): r.body for r in _cluster_objects(cp)}
    a, b = cp.jobs
    ej = effective_job(a, objs[("TrainJob", "a-r1")], objs[("ClusterTrainingRuntime", "ds")])
    assert {ps.role: blanks(ps) for ps in ej.pod_sets} == {"launcher": BLANK, "node": {}}
    # A torch runtime's GPUs may change with each TrainJob: the job says it, in spec.trainer.
    tj = objs[("TrainJob", "b-r1")]
    assert [e for e in tj["spec"]["trainer"]["env"] if e["name"] in BLANK] == [
        {"name": k, "value": v} for k, v in BLANK.items()
    ]
    ej = effective_job(b, tj, objs[("ClusterTrainingRuntime", "cpu")])
    assert {ps.role: blanks(ps) for ps in ej.pod_sets} == {"node": BLANK}
