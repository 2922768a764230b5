"""Trainer v2.3 runtimes whose ML policy is ``jax`` or ``xgboost``: the policy, the env the
plugins inject, one process per node, what is refused, conformance with the CRDs.

Cases from kubeflow/trainer v2.3.0's own tests: pkg/runtime/framework/plugins/xgboost/
xgboost_test.go ("XGBoost training with GPU resources": 2 nodes of 4 ``example.com/gpu`` make
DMLC_NUM_WORKER 8; "error when using reserved DMLC_* env") and plugins/jax/jax_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    ModelError,
    Queue,
    Resources,
    RuntimeMPI,
    Script,
    Team,
    TrainJob,
)
from trainkit.errors import DefinitionError, RehearsalError
from trainkit.injected_env.kubeflow_trainer_env import trainer_framework_env
from trainkit.load import Definition
from trainkit.rehearse.definitions import targets_for
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"


def platform(framework: str, gpu_resource: str = "nvidia.com/gpu", **rt: Any) -> list[Definition]:
    runtime = ClusterTrainingRuntime(
        name="rt",
        image="img:1",
        framework=framework,  # type: ignore[arg-type]
        nodes=2,
        resources=Resources(cpu=8, memory="32Gi", gpu=4),
        **rt,
    )
    return [
        Definition(
            Cluster(name="c", server="https://c", gpus_per_node=8, gpu_resource=gpu_resource),
            P,
            "platform",
        ),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(runtime, P, "platform"),
    ]


def trainjob(**kw: Any) -> TrainJob:
    fields: dict[str, Any] = {"name": "tj", "run": 1, "runtime": "rt"}
    fields.setdefault("script", Script.file("train.py"))
    return TrainJob(**(fields | kw))


def rendered(defs: list[Definition]) -> tuple[dict[str, dict[str, Any]], Any]:
    plan = build_plan(defs)
    (cp,) = plan.clusters
    bodies = {r.body["kind"]: r.body for r in _cluster_objects(cp) if r.body["kind"] != "ConfigMap"}
    (ej,) = effective_jobs(render_groups(plan))
    return bodies, ej


def job_def(j: TrainJob) -> Definition:
    return Definition(j, "jobs/t/j.py", "t", line=3, files={"train.py": "x"} if j.script else {})


@pytest.mark.parametrize("framework", ["jax", "xgboost"])
def test_the_runtime_selects_the_plugin_and_the_job_runs_python(framework: str) -> None:
    bodies, ej = rendered([*platform(framework), job_def(trainjob())])
    rt = bodies["ClusterTrainingRuntime"]
    assert rt["spec"]["mlPolicy"] == {"numNodes": 2, framework: {}}
    assert rt["metadata"]["labels"]["trainer.kubeflow.org/framework"] == framework
    trainer = bodies["TrainJob"]["spec"]["trainer"]
    assert trainer["command"] == ["python3", "/workspace/train.py"]  # no torchrun
    assert "numProcPerNode" not in trainer  # read by the torch plugin only
    (node,) = ej.pod_sets
    assert node.count == 2


def test_jax_env_is_the_plugin_s() -> None:
    # plugins/jax/jax.go EnforceMLPolicy: the three variables on container "node".
    _, ej = rendered([*platform("jax"), job_def(trainjob())])
    env = {e.name: e.value for e in ej.pod_sets[0].env}
    assert env == {
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": "0",
        "JAX_COORDINATOR_ADDRESS": "tj-r1-node-0-0.tj-r1:29500",
    }
    assert (ej.procs_per_node, ej.world_size) == ("1", 2)


def test_xgboost_counts_a_worker_per_gpu_as_the_plugin_s_own_test() -> None:
    # xgboost_test.go "XGBoost training with GPU resources": trainjob gpu-job, 2 nodes with 4
    # example.com/gpu each.
    assert trainer_framework_env(framework="xgboost", trainjob="gpu-job", nodes=2, gpus=4) == {
        "DMLC_TRACKER_URI": "gpu-job-node-0-0.gpu-job",
        "DMLC_TRACKER_PORT": "29500",
        "DMLC_TASK_ID": "0",
        "DMLC_NUM_WORKER": "8",
    }
    # "resources not set - defaults to 1 worker per node".
    assert (
        trainer_framework_env(framework="xgboost", trainjob="j", nodes=3, gpus=0)["DMLC_NUM_WORKER"]
        == "3"
    )
    # The same through trainkit: the GPU count from the TrainJob's resources.
    _, ej = rendered(
        [
            *platform("xgboost", gpu_resource="example.com/gpu"),
            job_def(
                trainjob(name="gpu-job", nodes=2, resources=Resources(cpu=8, memory="32Gi", gpu=4))
            ),
        ]
    )
    env = {e.name: e.value for e in ej.pod_sets[0].env}
    assert env["DMLC_NUM_WORKER"] == "8"
    assert env["DMLC_TRACKER_URI"] == "gpu-job-r1-node-0-0.gpu-job-r1"
    assert ej.notes[-1].startswith("the tracker on the first node waits for DMLC_NUM_WORKER=8")


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: trainjob(env={"DMLC_TRACKER_URI": "x"}),
            "DMLC_TRACKER_URI may not be set: Kubeflow Trainer's XGBoost plugin sets it",
        ),
        (
            lambda: trainjob(env={"JAX_PROCESS_ID": "1"}),
            "JAX_PROCESS_ID may not be set: Kubeflow Trainer's JAX plugin sets it",
        ),
        (
            lambda: ClusterTrainingRuntime(
                name="r", image="i:1", framework="jax", mpi=RuntimeMPI()
            ),
            "framework='jax' and mpi= are two ML policies; Trainer takes one",
        ),
    ],
)
def test_bad_inputs_are_refused_with_the_reason(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


def test_procs_per_node_on_a_jax_runtime_is_refused() -> None:
    with pytest.raises(DefinitionError) as e:
        build_plan([*platform("jax"), job_def(trainjob(procs_per_node=4))])
    (p,) = e.value.problems
    assert p.field == "procs_per_node"
    assert "runtime 'rt' is a jax runtime, which runs one process per node" in p.message


def test_a_trainjob_on_a_jax_runtime_is_not_rehearsed_yet() -> None:
    defs = platform("jax")
    with pytest.raises(RehearsalError) as e:
        targets_for(job_def(trainjob()), defs)
    assert "runtime 'rt' is a jax runtime; rehearsing TrainJobs on it is not available" in str(
        e.value
    )


@pytest.mark.parametrize("framework", ["jax", "xgboost"])
def test_the_runtime_and_the_trainjob_are_valid_against_the_crds(framework: str) -> None:
    crdset = shared_crd_set()
    plan = build_plan([*platform(framework), job_def(trainjob(nodes=3))])
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []
