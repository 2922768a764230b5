"""TFJob (kubeflow.org/v1, Training Operator v1.9): roles, TF_CONFIG, success, conformance."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, render
from trainkit import ModelError, Resources, Role, Script, TFJob
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.explain import format_text
from trainkit.injected_env.tensorflow_env import tf_config
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

CPU = Resources(cpu=4, memory="8Gi")


def job(**kw: Any) -> TFJob:
    fields: dict[str, Any] = {
        "name": "tf",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": Resources(cpu=8, memory="32Gi", gpu=1),
    }
    return TFJob(**(fields | kw))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"env": {"TF_CONFIG": "{}"}}, "TF_CONFIG may not be set: the Training Operator sets it"),
        ({"chief": Role(replicas=2)}, "chief.replicas is 2; a TFJob has one chief"),
        ({"evaluator": Role(replicas=3)}, "evaluator.replicas is 3; a TFJob has one evaluator"),
        (
            {"chief": Role(), "success": "all_workers"},
            "success is decided by the chief when there is one",
        ),
        ({"restart_policy": "Always"}, "'Always' restarts a Worker even after it exits 0"),
        ({"port": 0}, "port: must be at least 1"),
        ({"port": 65536}, "port: must be at most 65535"),
        ({"port": "x"}, "port: must be a whole number"),
        (
            {"port": 2223, "ports": {"metrics": 2223}},
            "port is 2223, which ports also gives 'metrics': the TensorFlow server and the "
            "program would both listen there; choose another number for one of them",
        ),
        # The name is the operator's whatever the number: it reads the port by that name.
        (
            {"port": 2223, "ports": {"tfjob-port": 9000}},
            "port name 'tfjob-port' is the one TF_CONFIG's cluster, at tfjob-port has in a "
            "TFJob's pods; choose another name",
        ),
        (
            {"name": "p" * 58, "ps": Role(replicas=12)},
            "too long for 12 PS pods: the operator's Service '" + "p" * 58 + "-ps-11'",
        ),
    ],
)
def test_bad_fields_are_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        job(**fields)
    assert says in str(e.value)


def test_ps_worker_renders_roles_with_their_own_settings() -> None:
    ps = Role(replicas=2, resources=CPU, node_selector={"pool": "cpu"}, args=["--ps"])
    body, _ = render(job(ps=ps, chief=Role(command=["python3", "-m", "coordinator"])))
    specs = body["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["Chief", "PS", "Worker"]
    assert [specs[r]["replicas"] for r in specs] == [1, 2, 2]
    chief, ps_pod, worker = (specs[r]["template"]["spec"] for r in specs)
    for pod in (chief, ps_pod, worker):
        (c,) = pod["containers"]
        assert c["name"] == "tensorflow"  # the webhook's required container
        assert c["ports"] == [{"containerPort": 2222, "name": "tfjob-port", "protocol": "TCP"}]
    assert chief["containers"][0]["command"] == ["python3", "-m", "coordinator"]
    assert ps_pod["containers"][0]["command"] == ["python3", "/workspace/train.py"]
    assert ps_pod["containers"][0]["args"] == ["--ps"]
    assert ps_pod["containers"][0]["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}
    assert ps_pod["nodeSelector"] == {"pool": "cpu"}
    assert worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "nodeSelector" not in worker
    assert body["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 5, "queue": "q"}
    assert "successPolicy" not in body["spec"]


def test_all_workers_success_and_the_default_scheduler() -> None:
    body, _ = render(job(success="all_workers"), scheduler="default")
    assert body["spec"]["successPolicy"] == "AllWorkers"
    assert "schedulingPolicy" not in body["spec"]["runPolicy"]


def test_tf_config_is_the_operator_s() -> None:
    counts = {"Chief": 1, "PS": 2, "Worker": 2}
    config = json.loads(tf_config(job="tf", namespace="t", counts=counts, role="PS", index=1) or "")
    assert config == {
        "cluster": {
            "chief": ["tf-chief-0.t.svc:2222"],
            "ps": ["tf-ps-0.t.svc:2222", "tf-ps-1.t.svc:2222"],
            "worker": ["tf-worker-0.t.svc:2222", "tf-worker-1.t.svc:2222"],
        },
        "task": {"type": "ps", "index": 1},
        "environment": "cloud",
    }
    # One pod is not distributed: the operator sets no TF_CONFIG.
    assert tf_config(job="tf", namespace="t", counts={"Worker": 1}, role="Worker", index=0) is None


def test_port_is_the_servers_on_every_pod_and_in_tf_config() -> None:
    # util.go GetPortFromTFJob: each type's addresses in TF_CONFIG are at the container port
    # named tfjob-port of its container "tensorflow".
    body, pj = render(job(port=2223, ps=Role(resources=CPU), chief=Role()))
    for spec in body["spec"]["tfReplicaSpecs"].values():
        (c,) = spec["template"]["spec"]["containers"]
        assert c["ports"] == [{"containerPort": 2223, "name": "tfjob-port", "protocol": "TCP"}]
    ej = effective_job(pj, body)
    for ps in ej.pod_sets:
        config = json.loads({e.name: e.value for e in ps.env}["TF_CONFIG"])
        addresses = [a for role in config["cluster"].values() for a in role]
        assert len(addresses) == 4 and all(a.endswith(".svc:2223") for a in addresses), config
    # `trainkit explain` shows it on every pod.
    shown = format_text([ej])
    assert shown.count("ports      tfjob-port 2223") == 3, shown


def test_effective_pods_get_tf_config_and_the_success_rule() -> None:
    body, pj = render(job(ps=Role(resources=CPU)))
    ej = effective_job(pj, body)
    assert [ps.role for ps in ej.pod_sets] == ["PS", "Worker"]
    env = {e.name: e for e in ej.pod_sets[1].env}
    assert json.loads(env["TF_CONFIG"].value)["task"] == {"type": "worker", "index": 0}
    assert env["TF_CONFIG"].source == "Training Operator"
    assert ej.notes[0].startswith("the job succeeds when Worker 0 exits 0")
    assert ej.gang is not None and ej.gang.min_member == 3


def test_a_cluster_without_the_training_operator_refuses_it() -> None:
    with pytest.raises(DefinitionError) as e:
        planned(job(), operators=["trainer"])
    (p,) = e.value.problems
    assert "cluster 'c' does not run training-operator, which TFJobs need" in p.message


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@st.composite
def tfjobs(draw: Any) -> TFJob:
    roles = st.none() | st.builds(
        Role,
        replicas=st.just(1),
        resources=st.none() | st.just(CPU),
        command=st.none() | st.just(["python3", "x.py"]),
        node_selector=st.none() | st.just({"pool": "cpu"}),
    )
    chief = draw(roles)
    return TFJob(
        name=draw(st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)),
        run=draw(st.none() | st.integers(1, 99)),
        image="img:1",
        script=draw(st.none() | st.just(Script.file("train.py"))),
        nodes=draw(st.integers(1, 8)),
        resources=Resources(cpu=2, memory="4Gi", gpu=draw(st.integers(0, 8))),
        ps=draw(st.none() | st.builds(Role, replicas=st.integers(1, 4), resources=st.just(CPU))),
        chief=chief,
        evaluator=draw(roles),
        success="first_worker" if chief else draw(st.sampled_from(["first_worker", "all_workers"])),
        restart_policy=draw(st.sampled_from(["OnFailure", "Never", "ExitCode"])),
        clean_pods=draw(st.sampled_from(["Running", "All", "None"])),
        port=draw(st.integers(1, 65535)),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(j=tfjobs(), volcano=st.booleans())
def test_anything_the_model_accepts_renders_a_valid_tfjob(
    crdset: Any, j: TFJob, volcano: bool
) -> None:
    (cp,) = planned(j, scheduler="volcano" if volcano else "default").clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "TFJob"]
    counts = j.replica_counts()
    assert {k: v["replicas"] for k, v in body["spec"]["tfReplicaSpecs"].items()} == counts
    ej = effective_job(cp.jobs[0], body)
    has_config = any(e.name == "TF_CONFIG" for ps in ej.pod_sets for e in ps.env)
    assert has_config == (sum(counts.values()) > 1)
