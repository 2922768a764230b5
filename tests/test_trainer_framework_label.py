"""The ``trainer.kubeflow.org/framework`` label of a runtime: the framework it runs, in the
set Kubeflow Trainer v2.3.0 labels its own runtimes with (manifests/base/runtimes/*.yaml:
torch, torchtune, jax, xgboost, deepspeed, mlx), consistent with the ML policy (deepspeed and
mlx run on mlPolicy.mpi, torchtune on mlPolicy.torch). The Kubeflow SDK lists runtimes by the
label and picks its trainer by it (trainer v2.3.0 docs/operator-guides/runtime.md "Framework
Label Requirement"; kubeflow/sdk kubeflow/trainer/constants/constants.py
RUNTIME_FRAMEWORK_LABEL)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from test_trainer_frameworks import job_def, platform, rendered, trainjob
from trainkit import ClusterTrainingRuntime, ModelError, RuntimeFlux, RuntimeMPI
from trainkit.explain import format_text
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

LABEL = "trainer.kubeflow.org/framework"
MPI: dict[str, Any] = {"mpi": RuntimeMPI(), "run_as_user": 1000, "fs_group": 1000}


@pytest.mark.parametrize(
    ("framework", "more", "policy", "label"),
    [
        ("torch", {}, "torch", "torch"),
        ("torchtune", {}, "torch", "torchtune"),
        ("torch", MPI, "mpi", "mpi"),
        ("deepspeed", MPI, "mpi", "deepspeed"),
        ("mlx", MPI, "mpi", "mlx"),
    ],
)
def test_the_label_names_the_framework_and_the_policy_follows_it(
    framework: str, more: dict[str, Any], policy: str, label: str
) -> None:
    bodies, ej = rendered([*platform(framework, **more), job_def(trainjob())])
    rt = bodies["ClusterTrainingRuntime"]
    assert rt["metadata"]["labels"][LABEL] == label
    assert set(rt["spec"]["mlPolicy"]) == {"numNodes", policy}
    said = [n for n in ej.notes if LABEL in n]
    if label == policy:
        assert said == []
    else:
        assert said == [
            f"runtime 'rt' runs {label} on Trainer's {policy} policy (label {LABEL}: {label}, "
            "by which the Kubeflow SDK picks its trainer)"
        ]
        assert said[0] in format_text([ej])


def test_a_torchtune_job_still_runs_torchrun_with_the_torch_plugin_s_env() -> None:
    bodies, ej = rendered([*platform("torchtune"), job_def(trainjob())])
    assert bodies["TrainJob"]["spec"]["trainer"]["command"][0] == "torchrun"
    assert "PET_NNODES" in {e.name for e in ej.pod_sets[0].env}


@pytest.mark.parametrize(("framework", "more"), [("torchtune", {}), ("deepspeed", MPI)])
def test_the_runtime_is_valid_against_the_crds(framework: str, more: dict[str, Any]) -> None:
    crdset = shared_crd_set()
    plan = build_plan([*platform(framework, **more), job_def(trainjob())])
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"framework": "deepspeed"},
            "framework='deepspeed' runs on Trainer's MPI policy: add mpi=RuntimeMPI() (and "
            "run_as_user, fs_group), or pick 'torch'",
        ),
        (
            {"framework": "mlx"},
            "framework='mlx' runs on Trainer's MPI policy: add mpi=RuntimeMPI()",
        ),
        (
            {"framework": "torchtune", "mpi": RuntimeMPI()},
            "framework='torchtune' and mpi= are two ML policies; Trainer takes one: drop mpi= "
            "or framework= (on mpi= it may be 'deepspeed' or 'mlx')",
        ),
        (
            {"framework": "deepspeed", "flux": RuntimeFlux(view_image="v:1")},
            "framework='deepspeed' and flux= are two ML policies; Trainer takes one",
        ),
        (
            {"framework": "pytorch"},
            "framework: must be one of 'torch', 'torchtune', 'jax', 'xgboost', 'deepspeed' or "
            "'mlx'",
        ),
    ],
)
def test_a_framework_that_does_not_fit_is_refused_with_the_reason(
    fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(ModelError) as e:
        ClusterTrainingRuntime(name="r", image="i:1", **fields)
    assert says in str(e.value)
