"""Elastic PyTorchJobs: Worker pods only, c10d rendezvous, as Training Operator v1.9 runs them
(pkg/controller.v1/pytorch/{envvar.go,elastic.go})."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Run, Workspace
from trainkit import (
    Cluster,
    DefinitionError,
    Elastic,
    PyTorchJob,
    ResourceMetric,
    Resources,
    Script,
)
from trainkit.effective.operator_pods import effective_pytorchjob
from trainkit.load import Definition
from trainkit.render.argocd import IGNORE_DIFFERENCES, SYNC_OPTIONS
from trainkit.render.training_operator import render_pytorchjob
from trainkit.resolve import PlannedJob
from trainkit.resolve.jobs import kueue_problems

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


# --- autoscaling (elasticPolicy.metrics) and the rendezvous server -------------------------------
# training-operator v1.9 pkg/controller.v1/pytorch/hpa.go (desiredHPA: minReplicas, maxReplicas,
# metrics; no metrics, no HPA), elastic.go (PET_NNODES min:max, PET_RDZV_ENDPOINT rdzvHost:rdzvPort),
# and their tests (elastic_test.go: "Without RDZVHost", etcd backend with host and port).

CPU_80 = ResourceMetric(resource="cpu", utilization=80)
BASE: dict[str, object] = {
    "name": "e",
    "image": "i:1",
    "command": ["python", "-m", "torch.distributed.run", "train.py"],
    "resources": Resources(cpu=4, memory="16Gi", gpu=2),
}


def job(**fields: object) -> PyTorchJob:
    return PyTorchJob(**{**BASE, **fields})  # type: ignore[arg-type]


@given(
    nodes=st.integers(1, 12),
    min_nodes=st.integers(1, 12),
    max_nodes=st.none() | st.integers(1, 14),
    scaled=st.booleans(),
)
def test_an_autoscaled_job_starts_with_nodes_and_counts_its_maximum(
    nodes: int, min_nodes: int, max_nodes: int | None, scaled: bool
) -> None:
    elastic = Elastic(min_nodes=min_nodes, max_nodes=max_nodes, metrics=[CPU_80] if scaled else [])
    most = nodes if max_nodes is None else max_nodes
    if min_nodes > nodes or most < nodes or (most > nodes and not scaled):
        with pytest.raises(DefinitionError, match=r"elastic\.m"):
            job(nodes=nodes, elastic=elastic)
        return
    pj = planned(job(nodes=nodes, elastic=elastic))
    body = render_pytorchjob(pj)
    spec = body["spec"]
    assert spec["pytorchReplicaSpecs"]["Worker"]["replicas"] == nodes
    policy = spec["elasticPolicy"]
    assert (policy["minReplicas"], policy["maxReplicas"]) == (min_nodes, most)
    assert ("metrics" in policy) == scaled
    assert spec["runPolicy"]["schedulingPolicy"]["minAvailable"] == min_nodes
    ej = effective_pytorchjob(pj, body)
    (workers,) = ej.pod_sets
    # Quota, caps and the plan read these: every Worker the autoscaler may start.
    assert workers.count == ej.nodes == most
    assert ej.gpus() == 2 * most
    env = {e.name: e.value for e in workers.env}
    assert env["PET_NNODES"] == f"{min_nodes}:{most}"
    autoscaled = [n for n in ej.notes if n.startswith("autoscaled")]
    assert bool(autoscaled) == scaled


def test_the_imagenet_example_renders_as_the_operator_expects() -> None:
    # examples/pytorch/elastic/imagenet/imagenet.yaml at v1.9.4: 2 Workers, 1..3, cpu at 80 %.
    pj = planned(job(nodes=2, elastic=Elastic(min_nodes=1, max_nodes=3, metrics=[CPU_80])))
    body = render_pytorchjob(pj)
    assert body["spec"]["elasticPolicy"] == {
        "minReplicas": 1,
        "maxReplicas": 3,
        "rdzvBackend": "c10d",
        "maxRestarts": 3,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ],
    }
    ej = effective_pytorchjob(pj, body)
    assert (
        "autoscaled: starts with 2 Workers; the operator's HorizontalPodAutoscaler e scales them "
        "between 1 and 3 by average cpu at 80% of the request, each step a torchrun restart; "
        "quota, caps and the plan count all 3"
    ) in ej.notes


def test_an_etcd_rendezvous_points_torchrun_at_the_server() -> None:
    elastic = Elastic(
        min_nodes=1,
        rdzv_backend="etcd",
        rdzv_host="etcd-gpu",
        rdzv_port=2379,
        metrics=[ResourceMetric(resource="memory", average="12Gi")],
        max_nodes=6,
    )
    pj = planned(job(nodes=3, elastic=elastic))
    body = render_pytorchjob(pj)
    policy = body["spec"]["elasticPolicy"]
    assert (policy["rdzvBackend"], policy["rdzvHost"], policy["rdzvPort"]) == (
        "etcd",
        "etcd-gpu",
        2379,
    )
    assert policy["metrics"][0]["resource"] == {
        "name": "memory",
        "target": {"type": "AverageValue", "averageValue": "12Gi"},
    }
    env = {e.name: e.value for e in effective_pytorchjob(pj, body).pod_sets[0].env}
    assert env["PET_RDZV_ENDPOINT"] == "etcd-gpu:2379"
    assert env["PET_RDZV_BACKEND"] == "etcd"
    assert env["PET_NNODES"] == "1:6"


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"nodes": 4, "elastic": Elastic(min_nodes=1, max_nodes=3, metrics=[CPU_80])},
            "elastic.max_nodes 3 is below nodes 4, the Workers the job starts with; raise "
            "max_nodes or lower nodes",
        ),
        (
            {"nodes": 2, "elastic": Elastic(min_nodes=1, max_nodes=3)},
            "elastic.max_nodes 3 is above nodes 2 but elastic.metrics is empty: without metrics "
            "no autoscaler is created and the job never grows past nodes; give metrics",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "rdzv_backend": "etcd"}},
            "rdzv_backend 'etcd' needs rdzv_host: without it the operator points torchrun at "
            "the first Worker, where no etcd runs",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "rdzv_host": "etcd-gpu"}},
            "rdzv_host and rdzv_port go together",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "rdzv_port": 2379}},
            "rdzv_host and rdzv_port go together",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "rdzv_host": "etcd:2379", "rdzv_port": 2379}},
            "'etcd:2379' is not a host name",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "rdzv_backend": "static"}},
            "rdzv_backend",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "rdzv_host": "etcd", "rdzv_port": 70000}},
            "rdzv_port",
        ),
        (
            {"nodes": 2, "elastic": {"min_nodes": 1, "metrics": [{"resource": "cpu"}]}},
            "cpu metric: give exactly one target, utilization=<percent of the request> or "
            "average=<quantity per pod>",
        ),
        (
            {
                "nodes": 2,
                "elastic": {
                    "min_nodes": 1,
                    "metrics": [{"resource": "cpu", "utilization": 80, "average": "2"}],
                },
            },
            "cpu metric: give exactly one target",
        ),
        (
            {
                "nodes": 2,
                "elastic": {"min_nodes": 1, "metrics": [{"resource": "memory", "average": "0"}]},
            },
            "memory metric: average '0' must be a positive quantity (the autoscaler refuses 0)",
        ),
        (
            {
                "nodes": 2,
                "elastic": {"min_nodes": 1, "metrics": [{"resource": "cpu", "utilization": 0}]},
            },
            "utilization",
        ),
        (
            {
                "nodes": 2,
                "elastic": {
                    "min_nodes": 1,
                    "metrics": [{"resource": "nvidia.com/gpu", "utilization": 50}],
                },
            },
            "resource",
        ),
    ],
)
def test_bad_elastic_values_are_refused_with_the_reason(
    fields: dict[str, object], says: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        job(**fields)
    assert says in str(caught.value)


def test_a_name_fits_the_last_worker_the_autoscaler_may_start() -> None:
    elastic = Elastic(min_nodes=1, max_nodes=100, metrics=[CPU_80])
    assert job(name="a" * 53, nodes=2, elastic=elastic).max_workers == 100
    with pytest.raises(
        DefinitionError, match=r"too long for max_nodes 100.*shorten the name to 53"
    ):
        job(name="a" * 54, nodes=2, elastic=elastic)


def test_kueue_refuses_an_autoscaled_job_with_the_reason() -> None:
    kueue = Cluster(
        name="k",
        server="https://k",
        gpus_per_node=8,
        scheduler="kueue",
        kueue_frameworks=["kubeflow.org/pytorchjob"],
    )
    scaled = job(nodes=2, elastic=Elastic(min_nodes=1, max_nodes=4, metrics=[CPU_80]))
    assert kueue_problems(scaled, kueue) == [
        (
            "elastic",
            "Kueue stops a running PyTorchJob whose Worker count changes (its Workload no longer "
            "matches) and queues it again, so each step of the autoscaler (elastic.metrics) would "
            "end the training; drop metrics here (the job keeps nodes Workers) or run on a "
            "Volcano cluster",
        )
    ]
    # Without an autoscaler the count never changes: Kueue admits all nodes Workers.
    assert kueue_problems(job(nodes=2, elastic=Elastic(min_nodes=1)), kueue) == []


def test_argo_cd_leaves_only_an_autoscaled_worker_count_to_the_autoscaler() -> None:
    (entry,) = [e for e in IGNORE_DIFFERENCES if e["kind"] == "PyTorchJob"]
    assert entry["jqPathExpressions"] == [
        "select(.spec.elasticPolicy.metrics != null) | .spec.pytorchReplicaSpecs.Worker.replicas"
    ]
    assert "RespectIgnoreDifferences=true" in SYNC_OPTIONS


SCALED_JOB = ELASTIC_JOB.replace(
    "elastic=Elastic(min_nodes=2, max_restarts=5)",
    "elastic=Elastic(min_nodes=1, max_nodes=MAX, max_restarts=5, "
    'metrics=[ResourceMetric(resource="cpu", utilization=80)])',
).replace("import Elastic,", "import Elastic, ResourceMetric,")


def test_an_autoscaled_job_synthesizes_checks_and_explains(bare: Workspace, bare_cli, crds) -> None:  # type: ignore[no-untyped-def]
    bare.write("jobs/vision/stretch.py", SCALED_JOB.replace("MAX", "6"))
    assert bare_cli("synth").code == 0
    written = (bare.root / "generated/clusters/east/vision/pytorchjob-stretch.yaml").read_text()
    assert "averageUtilization: 80" in written and "replicas: 4" in written
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err
    run = bare_cli("explain", "stretch", "--format", "json")
    assert run.code == 0, run.err
    (explained,) = json.loads(run.out)["jobs"]
    assert explained["podgroup"]["min_member"] == 1
    assert any(n.startswith("autoscaled: starts with 4 Workers") for n in explained["notes"])
    run = bare_cli("explain", "stretch")
    assert "autoscaled: starts with 4 Workers" in run.out


def nine_workers_over_the_queue(bare: Workspace, bare_cli, scaled_job: str) -> Run:  # type: ignore[no-untyped-def]
    """``scaled_job`` with max_nodes 9, refused: research holds 16 GPUs, so the gang (1 × 2)
    fits and 9 Workers × 2 do not."""
    bare.write("jobs/vision/stretch.py", scaled_job.replace("MAX", "9"))
    run: Run = bare_cli("synth")
    assert run.code == 1
    assert (
        "PyTorchJob 'stretch': elastic: at its most, 9 Workers, the job needs 18 nvidia.com/gpu "
        "on cluster 'east', but queue 'research' can hold at most 16 nvidia.com/gpu"
    ) in run.err
    return run


def test_the_queue_must_hold_every_worker_the_autoscaler_may_start(
    bare: Workspace, bare_cli
) -> None:  # type: ignore[no-untyped-def]
    run = nine_workers_over_the_queue(bare, bare_cli, SCALED_JOB)
    assert "lower elastic.max_nodes, or use another queue" in run.err
    assert "Traceback" not in run.err


def test_an_elastic_job_without_autoscaler_must_fit_its_queue_whole(
    bare: Workspace, bare_cli
) -> None:  # type: ignore[no-untyped-def]
    # 9 Workers of 2 GPUs, gang of 2: before, only the gang was checked and 1 Worker stayed
    # Pending for good.
    bare.write("jobs/vision/stretch.py", ELASTIC_JOB.replace("nodes=4,", "nodes=9,"))
    run = bare_cli("synth")
    assert run.code == 1
    assert "nodes: at its most, 9 Workers, the job needs 18 nvidia.com/gpu" in run.err
    assert "lower nodes, or use another queue" in run.err


def test_team_and_job_caps_count_the_most_workers(bare: Workspace, bare_cli) -> None:  # type: ignore[no-untyped-def]
    platform = (bare.root / "jobs/platform/platform.py").read_text()
    bare.write(
        "jobs/platform/platform.py",
        platform.replace('queues=["research"])', 'queues=["research"], max_gpus=8)'),
    )
    bare.write("jobs/vision/stretch.py", SCALED_JOB.replace("MAX", "6"))
    bare.write("jobs/vision/ddp.py", "")
    run = bare_cli("synth")
    assert run.code == 1
    assert "use 12 GPUs together but Team.max_gpus" in run.err
    bare.write(
        "jobs/platform/platform.py",
        platform + "\nfrom trainkit import Policy\npolicy = Policy(max_gpus_per_job=10)\n",
    )
    run = bare_cli("synth")
    assert run.code == 1
    assert (
        "12 GPUs (up to 6 Workers (elastic.max_nodes) × 2) exceed the per-job cap of 10"
    ) in run.err


def test_the_operators_own_elastic_cases() -> None:
    # pytorchjob_controller_test.go "When creating the elastic PyTorchJob": 1 Worker, c10d,
    # minReplicas 1, maxReplicas 3, maxRestarts 3, a cpu metric: an HPA named after the job,
    # and on worker 0 PET_RDZV_BACKEND, PET_NNODES 1:3, PET_RDZV_ENDPOINT <job>-worker-0:<port>,
    # PET_MAX_RESTARTS 3.
    elastic = Elastic(min_nodes=1, max_nodes=3, max_restarts=3, metrics=[CPU_80])
    pj = planned(job(name="elastic-job", nodes=1, elastic=elastic))
    body = render_pytorchjob(pj)
    assert body["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1
    ej = effective_pytorchjob(pj, body)
    env = {e.name: e.value for e in ej.pod_sets[0].env}
    assert {k: env[k] for k in ("PET_RDZV_BACKEND", "PET_NNODES", "PET_RDZV_ENDPOINT")} == {
        "PET_RDZV_BACKEND": "c10d",
        "PET_NNODES": "1:3",
        "PET_RDZV_ENDPOINT": "elastic-job-worker-0:23456",
    }
    assert env["PET_MAX_RESTARTS"] == "3"
    assert any(
        "HorizontalPodAutoscaler elastic-job scales them between 1 and 3" in n for n in ej.notes
    )
    # elastic_test.go "With ElasticPolicy": rdzvHost localhost, rdzvPort 1234 →
    # PET_RDZV_ENDPOINT localhost:1234 (c10d on a server of its own).
    elastic = Elastic(
        min_nodes=1, max_nodes=3, metrics=[CPU_80], rdzv_host="localhost", rdzv_port=1234
    )
    pj = planned(job(nodes=1, elastic=elastic))
    env = {e.name: e.value for e in effective_pytorchjob(pj, render_pytorchjob(pj)).pod_sets[0].env}
    assert env["PET_RDZV_ENDPOINT"] == "localhost:1234" and env["PET_RDZV_BACKEND"] == "c10d"
