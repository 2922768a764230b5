"""Trainer v2.3 initializer steps: a runtime's ``dataset-initializer`` and ``model-initializer``
replicated jobs, the node job's ``dependsOn``, the workspace volume (JobSet
``volumeClaimPolicies``), a TrainJob's ``initializer`` section, and how they are counted.

Read from kubeflow/trainer v2.3.0: pkg/runtime/framework/plugins/jobset/builder.go Initializer
(STORAGE_URI, env upserted, envFrom.secretRef), plugins/jobset/jobset.go Validate ("must have
dataset-initializer job when trainJob is configured with input datasetConfig"),
pkg/runtime/core/trainingruntime.go newRuntimeInfo (a job without the trainer label keeps its
parallelism as its count), plugins/volcano/volcano.go Build (minMember sums every pod set),
manifests/base/runtimes/torchtune (dependsOn Complete, the ``initializer`` claim at
/workspace); kubernetes-sigs/jobset v0.12.0 pkg/controllers/volume_claim_policy.go and
pkg/webhooks/jobset_webhook.go validateVolumeClaimPolicies; Kueue v0.19.2
pkg/controller/jobs/jobset (one pod set per replicated job).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    ClusterTrainingRuntime,
    DataSource,
    FlavorQuota,
    Initializer,
    ModelError,
    Queue,
    ResourceFlavor,
    Resources,
    RuntimeInitializers,
    Script,
    Team,
    TrainJob,
    Volume,
)
from trainkit.errors import DefinitionError, RehearsalError
from trainkit.load import Definition
from trainkit.rehearse.definitions import targets_for
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"
GPU_LESS = "trainkit: the pod requests no GPU"  # the NVIDIA variables blanked
DATA = Initializer(image="registry.example.com/ml/dataset-initializer:v2.3.0")
MODEL = Initializer(
    image="registry.example.com/ml/model-initializer:v2.3.0",
    storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct",
)


def steps(**kw: Any) -> RuntimeInitializers:
    fields: dict[str, Any] = {"dataset": DATA, "model": MODEL, "size": "200Gi"}
    return RuntimeInitializers(**(fields | kw))


def platform(
    scheduler: str = "kueue", initializers: RuntimeInitializers | None = None, **rt: Any
) -> list[Definition]:
    runtime = ClusterTrainingRuntime(
        name="rt",
        image="registry.example.com/ml/torch:1",
        nodes=2,
        resources=Resources(cpu=8, memory="32Gi", gpu=4),
        initializers=initializers or steps(),
        **rt,
    )
    cluster: dict[str, Any] = {"name": "c", "server": "https://c", "gpus_per_node": 8}
    if scheduler == "kueue":
        cluster |= {"scheduler": "kueue", "operators": ["trainer"]}
        quota = Capacity(cpu=64, memory="512Gi", gpu=16)
        queues = [
            Definition(ResourceFlavor(name="f", node_labels={"pool": "f"}), P, "platform"),
            Definition(
                ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]),
                P,
                "platform",
            ),
        ]
    else:
        cluster |= {"scheduler": scheduler}
        queues = [Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform")]
    return [
        Definition(Cluster(**cluster), P, "platform"),
        *queues,
        Definition(Team(name="t", queues=["q"], secrets={"hf-token": ["HF_TOKEN"]}), P, "platform"),
        Definition(runtime, P, "platform"),
    ]


def trainjob(**kw: Any) -> TrainJob:
    fields: dict[str, Any] = {"name": "tj", "run": 1, "runtime": "rt"}
    fields.setdefault("script", Script.file("train.py"))
    return TrainJob(**(fields | kw))


def job_def(j: TrainJob) -> Definition:
    return Definition(j, "jobs/t/j.py", "t", line=3, files={"train.py": "x"} if j.script else {})


def rendered(defs: list[Definition]) -> tuple[dict[str, dict[str, Any]], Any]:
    plan = build_plan(defs)
    (cp,) = plan.clusters
    bodies = {r.body["kind"]: r.body for r in _cluster_objects(cp) if r.body["kind"] != "ConfigMap"}
    (ej,) = effective_jobs(render_groups(plan))
    return bodies, ej


def problems_of(defs: list[Definition]) -> list[Any]:
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    return list(e.value.problems)


HF = DataSource(storage_uri="hf://tatsu-lab/alpaca")


def test_the_runtime_has_the_steps_the_volume_and_the_order() -> None:
    bodies, _ = rendered([*platform(), job_def(trainjob(dataset=HF))])
    jobset = bodies["ClusterTrainingRuntime"]["spec"]["template"]["spec"]
    assert jobset["volumeClaimPolicies"] == [
        {
            "templates": [
                {
                    "metadata": {"name": "initializer"},
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "resources": {"requests": {"storage": "200Gi"}},
                    },
                }
            ]
        }
    ]
    by_name = {r["name"]: r for r in jobset["replicatedJobs"]}
    assert list(by_name) == ["dataset-initializer", "model-initializer", "node"]
    for step in ("dataset-initializer", "model-initializer"):
        rjob = by_name[step]
        # The webhook's rules: the ancestor label, a container of the step's name, a mount
        # named initializer (jobset.go Validate, trainingruntime_webhook.go).
        assert rjob["template"]["metadata"]["labels"] == {
            "trainer.kubeflow.org/trainjob-ancestor-step": step
        }
        (c,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
        assert c["name"] == step
        assert c["volumeMounts"] == [{"name": "initializer", "mountPath": "/workspace"}]
    model = by_name["model-initializer"]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "STORAGE_URI", "value": "hf://meta-llama/Llama-3.2-1B-Instruct"} in model["env"]
    node = by_name["node"]
    assert node["dependsOn"] == [
        {"name": "dataset-initializer", "status": "Complete"},
        {"name": "model-initializer", "status": "Complete"},
    ]
    (main,) = node["template"]["spec"]["template"]["spec"]["containers"]
    assert {"name": "initializer", "mountPath": "/workspace/dataset", "subPath": "dataset"} in main[
        "volumeMounts"
    ]
    assert {"name": "initializer", "mountPath": "/workspace/model", "subPath": "model"} in main[
        "volumeMounts"
    ]


def test_the_trainjob_s_sources_reach_the_steps() -> None:
    # builder.go Initializer: STORAGE_URI upserted, env upserted, envFrom secretRef appended.
    job = trainjob(
        dataset=DataSource(storage_uri="hf://tatsu-lab/alpaca", env={"SPLIT": "train"}),
        model=DataSource(secret="hf-token"),
    )
    bodies, ej = rendered([*platform(), job_def(job)])
    assert bodies["TrainJob"]["spec"]["initializer"] == {
        "dataset": {
            "storageUri": "hf://tatsu-lab/alpaca",
            "env": [{"name": "SPLIT", "value": "train"}],
        },
        "model": {"secretRef": {"name": "hf-token"}},
    }
    sets = {ps.role: ps for ps in ej.pod_sets}
    data_env = {e.name: e.value for e in sets["dataset-initializer"].env if e.source != GPU_LESS}
    assert data_env == {"STORAGE_URI": "hf://tatsu-lab/alpaca", "SPLIT": "train"}
    model = sets["model-initializer"]
    assert {e.name: e.value for e in model.env if e.source != GPU_LESS} == {
        "STORAGE_URI": "hf://meta-llama/Llama-3.2-1B-Instruct"
    }
    assert model.main["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
    assert not model.runs_ranks and model.count == 1
    assert "downloads" in model.duty


def test_the_steps_are_counted_in_kueue_s_pod_sets() -> None:
    # Kueue admits the JobSet whole: one pod set per replicated job, the steps' included.
    _, ej = rendered([*platform(), job_def(trainjob(nodes=3, dataset=HF))])
    assert [(p.name, p.count) for p in ej.workload.pod_sets] == [
        ("dataset-initializer", 1),
        ("model-initializer", 1),
        ("node", 3),
    ]
    assert ej.workload.requests()["cpu"] == Decimal(2 + 2 + 3 * 8)
    assert ej.nodes == 3  # only the nodes run ranks
    assert ej.world_size == 3 * 4


def test_a_volcano_gang_would_never_start_the_steps() -> None:
    # volcano.go Build: minMember counts the steps and the nodes, while JobSet creates the
    # nodes only once the steps completed (dependsOn): the gang never gathers.
    found = problems_of([*platform(scheduler="volcano"), job_def(trainjob())])
    (p,) = [p for p in found if p.field == "initializers"]
    assert p.file == P
    assert "the gang would never gather and the steps never start" in p.message


def test_without_a_gang_scheduler_the_steps_run_first() -> None:
    _, ej = rendered([*platform(scheduler="default"), job_def(trainjob(dataset=HF))])
    assert ej.gang is None
    assert any("the nodes start once" in n for n in ej.notes)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: RuntimeInitializers(size="10Gi"),
            "give dataset=Initializer(...), model=Initializer(...) or both",
        ),
        (
            lambda: Initializer(image="i:1", env={"STORAGE_URI": "hf://x"}),
            "STORAGE_URI may not be set in env: Trainer sets it from storage_uri",
        ),
        (
            lambda: DataSource(storage_uri="tatsu-lab/alpaca"),
            "storage_uri",
        ),
        (
            lambda: Initializer(image="i:1", resources=Resources(cpu=1, memory="1Gi", gpu=1)),
            "an initializer downloads and needs no GPU",
        ),
    ],
)
def test_bad_definitions_are_refused_with_the_reason(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


@pytest.mark.parametrize(
    ("defs", "field", "says"),
    [
        (
            lambda: [
                *platform(initializers=steps(model=None)),
                job_def(trainjob(model=DataSource(storage_uri="hf://x/y"))),
            ],
            "model",
            "runtime 'rt' has no model step (RuntimeInitializers(model=...)): Trainer's "
            "webhook refuses a TrainJob's model without one",
        ),
        (
            lambda: [*platform(), job_def(trainjob())],
            "dataset",
            "runtime 'rt''s dataset step has no storage_uri and the job gives none: the step "
            "reads STORAGE_URI and fails without it; give dataset=DataSource(storage_uri=...)",
        ),
        (
            lambda: [*platform(), job_def(trainjob(dataset=DataSource(secret="s3-keys")))],
            "dataset",
            "team 't' may not read Secret 's3-keys'",
        ),
        (
            lambda: [
                *platform(initializers=steps(access_mode="ReadWriteOnce")),
                job_def(trainjob()),
            ],
            "nodes",
            "a ReadWriteOnce volume attaches to one machine",
        ),
        (
            lambda: [*platform(), job_def(trainjob(name="a" * 50))],
            "name",
            "the workspace claim 'initializer-" + "a" * 50 + "-r1' would exceed 63 characters "
            "(JobSet names it initializer-<TrainJob>); shorten the name by 2 characters",
        ),
        (
            lambda: [
                *platform(),
                job_def(trainjob(volumes=[Volume(claim="initializer", path="/mnt/x")])),
            ],
            "volumes",
            "claim 'initializer' has the name of the workspace volume",
        ),
    ],
)
def test_bad_trainjobs_are_refused(defs: Any, field: str, says: str) -> None:
    found = problems_of(defs())
    assert any(p.field == field and says in p.message for p in found), [str(p) for p in found]


def test_the_runtime_and_the_trainjob_are_valid_against_the_crds() -> None:
    crdset = shared_crd_set()
    job = trainjob(
        dataset=DataSource(storage_uri="s3://bucket/data", env={"ENDPOINT": "https://s3"}),
        model=DataSource(secret="hf-token"),
    )
    plan = build_plan([*platform(initializers=steps(storage_class="fast")), job_def(job)])
    groups = render_groups(plan)
    (ej,) = effective_jobs(groups)
    assert ej.planned.job.model is not None
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []


def test_the_steps_pods_carry_the_job_s_labels() -> None:
    bodies, _ = rendered([*platform(), job_def(trainjob(dataset=HF))])
    (patch,) = bodies["TrainJob"]["spec"]["runtimePatches"]
    names = [j["name"] for j in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]]
    assert names == ["dataset-initializer", "model-initializer", "node"]
    step = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    labels = step["template"]["spec"]["template"]["metadata"]["labels"]
    assert labels["trainkit.dev/job"] == "tj"
    assert "spec" not in step["template"]["spec"]["template"]


def test_a_trainjob_with_steps_is_not_rehearsed_yet() -> None:
    with pytest.raises(RehearsalError) as e:
        targets_for(job_def(trainjob(dataset=HF)), platform())
    assert "runtime 'rt' downloads a dataset or model before the nodes start" in str(e.value)


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dataset=st.booleans(),
    model=st.booleans(),
    give_data=st.booleans(),
    give_model=st.booleans(),
    nodes=st.none() | st.integers(1, 4),
    once=st.booleans(),
    scheduler=st.sampled_from(["kueue", "default"]),
)
def test_an_accepted_trainjob_with_steps_is_valid_and_counted_with_its_steps(
    crdset: Any,
    dataset: bool,
    model: bool,
    give_data: bool,
    give_model: bool,
    nodes: int | None,
    once: bool,
    scheduler: str,
) -> None:
    """Anything the plan accepts validates against the CRDs, and Kueue's workload counts each
    step's pod beside the nodes; a refusal names the field at fault."""
    assume(dataset or model)
    runtime_steps = steps(
        dataset=DATA if dataset else None,
        model=MODEL if model else None,
        access_mode="ReadWriteOnce" if once else "ReadWriteMany",
    )
    job = trainjob(
        dataset=HF if give_data else None,
        model=DataSource(env={"IGNORE_PATTERNS": "*.bin"}) if give_model else None,
        nodes=nodes,
    )
    defs = [*platform(scheduler=scheduler, initializers=runtime_steps), job_def(job)]
    try:
        plan = build_plan(defs)
    except DefinitionError as e:
        fields = {p.field for p in e.problems}
        assert fields <= {"dataset", "model", "nodes"}
        # DATA has no storage URI: the job must give one; MODEL has one.
        assert ("dataset" in fields) == ((give_data and not dataset) or (dataset and not give_data))
        assert ("model" in fields) == (give_model and not model)
        assert ("nodes" in fields) == (once and (nodes or 2) > 1)
        return
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []
    (ej,) = effective_jobs(render_groups(plan))
    named = [n for n, on in (("dataset-initializer", dataset), ("model-initializer", model)) if on]
    assert [ps.role for ps in ej.pod_sets] == [*named, "node"]
    assert ej.nodes == (nodes or 2)
    if scheduler == "kueue":
        assert ej.workload is not None and ej.workload.pods == len(named) + (nodes or 2)
