"""Elastic PyTorchJobs: Worker pods only, c10d rendezvous, as Training Operator v1.9 runs them
(pkg/controller.v1/pytorch/{envvar.go,elastic.go})."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Workspace
from trainkit import Cluster, DefinitionError, Elastic, PyTorchJob, Resources, Script
from trainkit.effective.operator_pods import effective_pytorchjob
from trainkit.load import Definition
from trainkit.render.training_operator import render_pytorchjob
from trainkit.resolve import PlannedJob

CLUSTER = Cluster(name="east", server="https://east.example.com", gpus_per_node=8)

ELASTIC_JOB = """\
from trainkit import Elastic, PyTorchJob, Resources, Script

job = PyTorchJob(
    name="stretch",
    image="registry.example.com/pytorch:2",
    script=Script.file("scripts/train.py"),
    nodes=4,
    elastic=Elastic(min_nodes=2, max_restarts=5),
    resources=Resources(cpu=4, memory="16Gi", gpu=2),
    clusters=["east"],
)
"""


def planned(job: PyTorchJob, queue: str | None = "research") -> PlannedJob:
    d = Definition(obj=job, file="jobs/vision/j.py", team="vision", line=3)
    return PlannedJob(job, d, CLUSTER, "vision", queue, image=str(job.image))


@given(nodes=st.integers(1, 40), min_nodes=st.integers(1, 45), gpus=st.integers(0, 8))
def test_elastic_jobs_are_worker_only_and_start_with_their_fewest_nodes(
    nodes: int, min_nodes: int, gpus: int
) -> None:
    fields = {
        "name": "e",
        "image": "i:1",
        "script": Script.file("t.py"),
        "nodes": nodes,
        "resources": Resources(cpu=1, memory="1Gi", gpu=gpus),
    }
    if min_nodes > nodes:
        with pytest.raises(DefinitionError, match=f"elastic.min_nodes {min_nodes} exceeds"):
            PyTorchJob(**fields, elastic=Elastic(min_nodes=min_nodes))  # type: ignore[arg-type]
        return
    job = PyTorchJob(**fields, elastic=Elastic(min_nodes=min_nodes))  # type: ignore[arg-type]
    pj = planned(job)
    body = render_pytorchjob(pj)
    spec = body["spec"]
    assert list(spec["pytorchReplicaSpecs"]) == ["Worker"]
    assert spec["pytorchReplicaSpecs"]["Worker"]["replicas"] == nodes
    assert spec["elasticPolicy"] == {
        "minReplicas": min_nodes,
        "maxReplicas": nodes,
        "rdzvBackend": "c10d",
        "maxRestarts": 3,
    }
    assert "nProcPerNode" not in spec["elasticPolicy"]  # the webhook forbids it beside nprocPerNode
    assert spec["runPolicy"]["schedulingPolicy"]["minAvailable"] == min_nodes
    ej = effective_pytorchjob(pj, body)
    (workers,) = ej.pod_sets
    env = {e.name: e.value for e in workers.env}
    assert env["PET_NNODES"] == f"{min_nodes}:{nodes}"
    assert env["PET_RDZV_ENDPOINT"] == "e-worker-0:23456"
    assert env["PET_RDZV_BACKEND"] == "c10d" and env["PET_MAX_RESTARTS"] == "3"
    assert env["PET_NPROC_PER_NODE"] == str(max(gpus, 1))
    # No Master: the operator sets neither the master address nor ranks nor WORLD_SIZE.
    assert not {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "PET_NODE_RANK"} & set(env)
    assert ej.world_size_env is None and ej.world_size == nodes * max(gpus, 1)
    assert ej.gang is not None and ej.gang.min_member == min_nodes


def test_an_elastic_name_fits_its_last_worker_service() -> None:
    base = {"image": "i:1", "command": ["x"], "resources": Resources(cpu=1, memory="1Gi")}
    # Elastic jobs have nodes Workers: the last Service is <name>-worker-<nodes - 1>.
    assert PyTorchJob(name="a" * 54, nodes=10, elastic=Elastic(min_nodes=1), **base).workers == 10
    with pytest.raises(DefinitionError, match="shorten the name to 54"):
        PyTorchJob(name="a" * 55, nodes=10, elastic=Elastic(min_nodes=1), **base)


def test_an_elastic_job_synthesizes_checks_and_explains(bare: Workspace, bare_cli, crds) -> None:  # type: ignore[no-untyped-def]
    bare.write("jobs/vision/stretch.py", ELASTIC_JOB)
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err
    run = bare_cli("explain", "stretch", "--format", "json")
    assert run.code == 0, run.err
    (explained,) = json.loads(run.out)["jobs"]
    assert [p["role"] for p in explained["pods"]] == ["Worker"]
    assert explained["podgroup"]["min_member"] == 2
    assert any(
        "elastic: 2 to 4 Workers meet at stretch-worker-0:23456" in n for n in explained["notes"]
    )


def test_an_elastic_job_is_not_rehearsed_and_says_why(bare: Workspace, bare_cli) -> None:  # type: ignore[no-untyped-def]
    bare.write("jobs/vision/stretch.py", ELASTIC_JOB)
    run = bare_cli("rehearse", "jobs/vision/stretch.py")
    assert run.code == 1
    assert (
        "jobs/vision/stretch.py:8: PyTorchJob 'stretch': elastic: an elastic job cannot be "
        "rehearsed yet"
    ) in run.err
    assert "Traceback" not in run.err
