"""The job object's own labels and annotations (``labels=``, ``annotations=``): on the
PyTorchJob, RayJob, TrainJob, … itself, never on a pod; keys a controller acts on need the
Team's grant as pod labels do, and the keys trainkit sets on a job object are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainkit import (
    Capacity,
    Cluster,
    DefinitionError,
    ModelError,
    MPIJob,
    PaddleJob,
    PyTorchJob,
    Queue,
    RayCluster,
    RayJob,
    Resources,
    Team,
    TFJob,
    TrainJob,
    WorkerGroup,
)
from trainkit.explain import format_text
from trainkit.load import Definition
from trainkit.model.pod_metadata import JOB_OWNED_KEYS, TRAINKIT_DOMAIN, steering_domain
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups

P = "jobs/platform/p.py"
RES = Resources(cpu=1, memory="1Gi")
JOB_KINDS = {
    "PyTorchJob",
    "TFJob",
    "PaddleJob",
    "XGBoostJob",
    "JAXJob",
    "MPIJob",
    "RayJob",
    "RayCluster",
    "TrainJob",
}


def _jobs(**meta: Any) -> list[Any]:
    """One job of each shape that takes ``labels``/``annotations``."""
    common = {"image": "registry.example.com/i:1", "resources": RES, **meta}
    return [
        PyTorchJob(name="pt", command=["python", "t.py"], nodes=2, **common),
        TFJob(name="tf", command=["python", "t.py"], **common),
        PaddleJob(name="pd", command=["python", "t.py"], **common),
        MPIJob(name="mpi", command=["hostname"], nodes=2, **common),
        RayJob(
            name="ray",
            command=["python", "t.py"],
            head=RES,
            workers=[WorkerGroup(nodes=1, resources=RES)],
            **meta,
            image="registry.example.com/i:1",
        ),
        RayCluster(
            name="pool",
            image="registry.example.com/i:1",
            head=RES,
            workers=[WorkerGroup(nodes=1, resources=RES)],
            **meta,
        ),
    ]


def _plan(jobs: list[Any], **team: Any):  # type: ignore[no-untyped-def]
    cluster = Cluster(
        name="c",
        server="https://c",
        gpus_per_node=8,
        scheduler="volcano",
        operators=["training-operator", "mpi-operator", "paddle-operator", "kuberay"],
    )
    defs = [
        Definition(cluster, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(cpu=64, memory="256Gi")), P, "platform"),
        Definition(Team(name="t", queues=["q"], **team), P, "platform"),
    ]
    defs += [Definition(j, "jobs/t/j.py", "t") for j in jobs]
    return build_plan(defs)


def _bodies(plan: Any) -> dict[str, dict[str, Any]]:
    return {
        r.body["kind"]: r.body
        for _, items in render_groups(plan)
        for r in items
        if r.body.get("kind") in JOB_KINDS
    }


def _pod_metas(node: Any) -> list[dict[str, Any]]:
    """Every pod template's metadata under ``node``."""
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if "template" in node and isinstance(node["template"], dict) and "spec" in node["template"]:
            out.append(node["template"].get("metadata") or {})
        for v in node.values():
            out += _pod_metas(v)
    elif isinstance(node, list):
        for v in node:
            out += _pod_metas(v)
    return out


META = {
    "labels": {"example.com/cost-center": "vision"},
    "annotations": {"sagemaker.amazonaws.com/job-max-retry-count": "2"},
}


def test_they_are_on_the_job_object_of_every_kind_and_on_no_pod() -> None:
    bodies = _bodies(_plan(_jobs(**META)))
    assert set(bodies) == {"PyTorchJob", "TFJob", "PaddleJob", "MPIJob", "RayJob", "RayCluster"}
    for kind, body in bodies.items():
        meta = body["metadata"]
        assert meta["labels"]["example.com/cost-center"] == "vision", kind
        assert meta["labels"]["trainkit.dev/team"] == "t", kind  # trainkit's stay
        assert meta["annotations"]["sagemaker.amazonaws.com/job-max-retry-count"] == "2", kind
        pods = _pod_metas(body["spec"])
        assert pods, kind
        for pod in pods:  # no operator copies them to a pod (resolve/access.py cites each)
            assert "example.com/cost-center" not in pod.get("labels", {}), kind
            assert "sagemaker.amazonaws.com/job-max-retry-count" not in pod.get(
                "annotations", {}
            ), kind


def test_a_trainjob_keeps_them_off_its_runtime_patch(tw) -> None:  # type: ignore[no-untyped-def]
    # Trainer v2.3.0 builds the JobSet's metadata from the runtime and its patches only
    # (pkg/runtime/core/trainingruntime.go newRuntimeInfo): the TrainJob's stay on it.
    path = tw.jobs / "vision/tj.py"
    path.write_text(
        path.read_text().replace(
            "nodes=2,",
            'nodes=2,\n    labels={"example.com/cost-center": "research"},\n'
            '    annotations={"example.com/owner": "ml"},',
        )
    )
    from trainkit.synth import synthesize

    synthesize(tw.jobs, tw.out)
    tj = yaml.safe_load((tw.out / "clusters/east/vision/trainjob-tj-r1.yaml").read_text())
    assert tj["metadata"]["labels"]["example.com/cost-center"] == "research"
    assert tj["metadata"]["annotations"]["example.com/owner"] == "ml"
    (patch,) = tj["spec"]["runtimePatches"]
    text = yaml.safe_dump(patch)
    assert "example.com/cost-center" not in text and "example.com/owner" not in text


def test_the_examples_carry_them_and_pass_the_crds(synthesized, cli) -> None:  # type: ignore[no-untyped-def]
    # jobs/vision/resnet50_elastic.py and jobs/llm/tokenize_ray.py set them; check validates
    # the objects against the pinned CRDs (TRAINKIT_CRDS).
    out: Path = synthesized.out
    pt = yaml.safe_load(
        (out / "clusters/gpu-east/vision/pytorchjob-resnet50-elastic-r1.yaml").read_text()
    )
    assert pt["metadata"]["labels"]["example.com/cost-center"] == "vision"
    assert pt["metadata"]["annotations"]["example.com/owner"] == "vision-ml@example.com"
    ray = yaml.safe_load(
        (out / "clusters/gpu-east/llm-training/rayjob-tokenize-ray-r1.yaml").read_text()
    )
    assert ray["metadata"]["labels"]["example.com/pipeline"] == "tokenize"
    run = cli("check")
    assert run.code == 0, run.err


def test_keys_trainkit_sets_on_a_job_object_are_all_refused(_examples_generated: Path) -> None:
    """JOB_OWNED_KEYS holds every key under a controller's prefix that trainkit writes on a
    job object of the example tree (the queues, priorities, sync wave), so none can be set
    twice. (The session's generated/ of the examples, only read.)"""
    written: set[str] = set()
    for path in _examples_generated.rglob("*.yaml"):
        for doc in yaml.load_all(path.read_bytes(), Loader=yaml.CSafeLoader):
            if not isinstance(doc, dict) or doc.get("kind") not in JOB_KINDS:
                continue
            meta = doc["metadata"]
            for key in (*meta.get("labels", {}), *meta.get("annotations", {})):
                domain = steering_domain(key)
                if domain is not None and domain != TRAINKIT_DOMAIN:
                    written.add(key)
    assert written, "no example job object carries a controller's key"
    assert written <= set(JOB_OWNED_KEYS), written - set(JOB_OWNED_KEYS)


@pytest.mark.parametrize("field", ["labels", "annotations"])
@pytest.mark.parametrize("key", sorted(JOB_OWNED_KEYS))
def test_a_key_trainkit_sets_on_the_job_is_refused(field: str, key: str) -> None:
    for make in (
        lambda: PyTorchJob(
            name="j", image="i:1", command=["t"], resources=RES, **{field: {key: "x"}}
        ),
        lambda: TrainJob(name="j", runtime="torch", command=["t"], **{field: {key: "x"}}),
    ):
        with pytest.raises(ModelError) as e:
            make()
        message = str(e.value)
        assert f"{field}: {key!r} is trainkit's on the job object ({JOB_OWNED_KEYS[key]}); " in (
            message
        ), message
        assert message.endswith("remove it"), message


@pytest.mark.parametrize(
    ("field", "key", "value", "says"),
    [
        ("labels", "trainkit.dev/team", "x", "keys under trainkit.dev/ are trainkit's own"),
        ("annotations", "a.trainkit.dev/x", "x", "keys under trainkit.dev/ are trainkit's own"),
        ("labels", "app.kubernetes.io/managed-by", "x", "keys under trainkit.dev/ are trainkit's"),
        ("labels", "Bad Key", "x", "'Bad Key' is not a label key"),
        ("annotations", "Bad Key", "x", "'Bad Key' is not a label key"),
        ("labels", "a", "x y", "labels.a: 'x y' is not a label value"),
    ],
)
def test_bad_keys_and_values_are_refused(field: str, key: str, value: str, says: str) -> None:
    with pytest.raises(DefinitionError) as e:
        RayJob(name="j", image="i:1", command=["t"], head=RES, **{field: {key: value}})
    message = str(e.value)
    assert says in message, message
    assert field in message, message


def test_trainkits_key_and_a_taken_key_are_both_reported() -> None:
    with pytest.raises(ModelError) as e:
        PyTorchJob(
            name="j",
            image="i:1",
            command=["t"],
            resources=RES,
            labels={"kueue.x-k8s.io/queue-name": "other", "trainkit.dev/a": "b"},
        )
    message = str(e.value)
    assert "'trainkit.dev/a': keys under trainkit.dev/ are trainkit's own" in message
    assert "'kueue.x-k8s.io/queue-name' is trainkit's on the job object" in message


def test_a_key_a_controller_acts_on_needs_the_teams_grant() -> None:
    # Widening: the Training Operator copies a job's annotations to its Volcano PodGroup,
    # KubeRay a RayJob's labels and annotations to its RayCluster (resolve/access.py cites
    # both), so a steering key on the job object reaches a controller.
    meta = {
        "labels": {"kueue.x-k8s.io/pod-group-name": "other"},
        "annotations": {"ray.io/ft-enabled": "true"},
    }
    jobs = _jobs(**meta)
    with pytest.raises(DefinitionError) as e:
        _plan(jobs)
    found = [str(p) for p in e.value.problems]
    for job in jobs:
        for field, key, domain in (
            ("labels", "kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io"),
            ("annotations", "ray.io/ft-enabled", "ray.io"),
        ):
            assert any(
                f"{type(job).__name__} {job.name!r}: {field}.{key}: {key!r} is under {domain}/, "
                f"which a controller acts on; team 't' may set it only where "
                f"Team.pod_metadata_keys in {P} grants it (allows none)" in p
                for p in found
            ), (job.name, field, found)
    # Granted (a key, or a prefix ending in '/'), the same jobs plan and keep them.
    plan = _plan(jobs, pod_metadata_keys=["kueue.x-k8s.io/pod-group-name", "ray.io/"])
    body = _bodies(plan)["RayJob"]
    assert body["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"


def test_explain_shows_them_and_where_they_are_copied() -> None:
    plan = _plan(_jobs(**META))
    by_kind = {ej.kind: ej for ej in effective_jobs(render_groups(plan))}
    text = format_text([by_kind["RayJob"]])
    assert "RayJob labels (on the job object, no pod): example.com/cost-center=vision" in text
    assert "(KubeRay copies them to the RayCluster it creates)" in text
    text = format_text([by_kind["PyTorchJob"]])
    assert (
        "PyTorchJob annotations (on the job object, no pod): "
        "sagemaker.amazonaws.com/job-max-retry-count=2"
    ) in text
    assert "(the Training Operator copies the annotations to its Volcano PodGroup)" in text
    assert "copies" not in format_text([by_kind["MPIJob"]])
