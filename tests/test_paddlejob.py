"""PaddleJob (kubeflow.org/v1, Training Operator v1.9): collective and PS modes, the
rendezvous env, success, conformance."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, render
from trainkit import ModelError, PaddleJob, Resources, Role, Script
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.injected_env.paddle_env import paddlejob_env
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

CPU = Resources(cpu=16, memory="64Gi")


def job(**kw: Any) -> PaddleJob:
    fields: dict[str, Any] = {
        "name": "pd",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": Resources(cpu=8, memory="32Gi", gpu=4),
    }
    return PaddleJob(**(fields | kw))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"mode": "ps"}, "mode='ps' needs parameter servers: add ps=Role("),
        ({"ps": Role(resources=CPU)}, "a collective job has no parameter servers: drop ps="),
        (
            {"env": {"PADDLE_MASTER": "x:1"}},
            "PADDLE_MASTER may not be set: the Training Operator sets it to the rendezvous",
        ),
        ({"env": {"PADDLE_TRAINER_NUM": "2"}}, "PADDLE_TRAINER_NUM may not be set"),
        ({"restart_policy": "Always"}, "'Always' restarts a Worker even after it exits 0"),
        ({"master_port": 0}, "PaddleJob 'pd': master_port: must be at least 1"),
        ({"master_port": 65536}, "PaddleJob 'pd': master_port: must be at most 65535"),
        ({"master_port": "x"}, "PaddleJob 'pd': master_port: must be a whole number"),
        (
            {"master_port": 30000, "ports": {"metrics": 30000}},
            "master_port is 30000, which ports also gives 'metrics': the rendezvous and the "
            "program would both listen there; choose another number",
        ),
        (
            {"name": "p" * 54, "mode": "ps", "ps": Role(replicas=12, resources=CPU)},
            "too long for 12 Master pods: the operator's Service '" + "p" * 54 + "-master-11'",
        ),
    ],
)
def test_bad_fields_are_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        job(**fields)
    assert says in str(e.value)


def test_collective_mode_is_workers_only_started_by_paddle_s_launcher() -> None:
    body, pj = render(job())
    specs = body["spec"]["paddleReplicaSpecs"]
    assert list(specs) == ["Worker"]
    (c,) = specs["Worker"]["template"]["spec"]["containers"]
    assert c["name"] == "paddle"  # the webhook's required container
    assert c["command"] == ["python3", "-m", "paddle.distributed.launch", "/workspace/train.py"]
    assert c["ports"] == [{"containerPort": 36543, "name": "master", "protocol": "TCP"}]
    assert body["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 2, "queue": "q"}
    ej = effective_job(pj, body)
    assert (ej.procs_per_node, ej.world_size) == ("4", 8)  # a trainer per GPU
    env = {e.name: e.value for e in ej.pod_sets[0].env}
    assert env["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
    assert env["PADDLE_NNODES"] == "2"
    assert "PADDLE_TRAINER_NUM" not in env
    assert ej.notes[0].startswith("collective mode: the job succeeds when every Worker exits 0")


def test_ps_mode_renders_the_servers_as_the_operator_s_master() -> None:
    ps = Role(replicas=2, resources=CPU, node_selector={"pool": "cpu"})
    body, pj = render(job(mode="ps", ps=ps))
    specs = body["spec"]["paddleReplicaSpecs"]
    assert list(specs) == ["Master", "Worker"]
    master = specs["Master"]["template"]["spec"]
    assert master["containers"][0]["resources"]["limits"] == {"cpu": "16", "memory": "64Gi"}
    assert master["nodeSelector"] == {"pool": "cpu"}
    assert body["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 4
    ej = effective_job(pj, body)
    servers, workers = ({e.name: e.value for e in ps.env} for ps in ej.pod_sets)
    assert servers["PADDLE_SERVER_NUM"] == "1" and "PADDLE_TRAINER_NUM" not in servers
    assert workers["PADDLE_TRAINER_NUM"] == "1"
    assert workers["PADDLE_MASTER"] == "pd-master-0:36543"
    assert ej.notes[0].startswith("parameter-server mode: the job succeeds when every parameter")


def test_the_rendezvous_is_the_operator_s() -> None:
    # pkg/controller.v1/paddlepaddle/envvar.go: the first pod of the first role reaches itself
    # through its IP, every other pod the first pod's Service.
    assert paddlejob_env(job="pd", counts={"Worker": 3}, role="Worker", index=1) == {
        "PYTHONUNBUFFERED": "1",
        "PADDLE_JOB_ID": "pd",
        "PADDLE_NNODES": "3",
        "PADDLE_MASTER": "pd-worker-0:36543",
    }
    master0 = paddlejob_env(job="pd", counts={"Master": 1, "Worker": 2}, role="Master", index=0)
    assert master0["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
    assert master0["PADDLE_SERVER_NUM"] == "1"


def test_master_port_is_the_rendezvous_on_every_pod() -> None:
    # envvar.go getPortFromPaddleJob reads the container port named master (the examples'
    # paddlepaddle/simple-cpu.yaml declares 37777) into PADDLE_MASTER.
    body, pj = render(job(nodes=2, master_port=37777))
    (c,) = body["spec"]["paddleReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert c["ports"] == [{"containerPort": 37777, "name": "master", "protocol": "TCP"}]
    (worker,) = effective_job(pj, body).pod_sets
    assert {e.name: e.value for e in worker.env}["PADDLE_MASTER"].endswith(":37777")


def test_a_cluster_without_the_training_operator_refuses_it() -> None:
    with pytest.raises(DefinitionError) as e:
        planned(job(), operators=["trainer"])
    (p,) = e.value.problems
    assert "cluster 'c' does not run training-operator, which PaddleJobs need" in p.message


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@st.composite
def paddlejobs(draw: Any) -> PaddleJob:
    ps = draw(
        st.none()
        | st.builds(
            Role,
            replicas=st.integers(1, 4),
            resources=st.none() | st.just(CPU),
            command=st.none() | st.just(["python3", "server.py"]),
            node_selector=st.none() | st.just({"pool": "cpu"}),
        )
    )
    return PaddleJob(
        name=draw(st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)),
        run=draw(st.none() | st.integers(1, 99)),
        image="img:1",
        script=draw(st.none() | st.just(Script.file("train.py"))),
        nodes=draw(st.integers(1, 8)),
        resources=Resources(cpu=2, memory="4Gi", gpu=draw(st.integers(0, 8))),
        mode="collective" if ps is None else "ps",
        ps=ps,
        restart_policy=draw(st.sampled_from(["OnFailure", "Never", "ExitCode"])),
        clean_pods=draw(st.sampled_from(["Running", "All", "None"])),
        shm_size=draw(st.none() | st.just("8Gi")),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(j=paddlejobs(), volcano=st.booleans())
def test_anything_the_model_accepts_renders_a_valid_paddlejob(
    crdset: Any, j: PaddleJob, volcano: bool
) -> None:
    (cp,) = planned(j, scheduler="volcano" if volcano else "default").clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "PaddleJob"]
    counts = j.replica_counts()
    assert {k: v["replicas"] for k, v in body["spec"]["paddleReplicaSpecs"].items()} == counts
    ej = effective_job(cp.jobs[0], body)
    # Exactly one pod reaches the rendezvous through its own IP: the first of the first role.
    first = ej.pod_sets[0]
    assert first.role == ("Master" if j.ps is not None else "Worker")
    assert {e.name: e.value for e in first.env}["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
    for later in ej.pod_sets[1:]:
        env = {e.name: e.value for e in later.env}
        assert env["PADDLE_MASTER"] == f"{j.object_name}-master-0:36543"


# --- paddle-operator (batch.paddlepaddle.org/v1) ---------------------------------------------

PADDLE_OPERATOR = {"operators": ["training-operator", "paddle-operator", "trainer"]}


def test_on_a_paddle_operator_cluster_the_job_is_paddle_operator_s() -> None:
    ps = Role(replicas=2, resources=CPU, node_selector={"pool": "cpu"})
    body, pj = render(job(mode="ps", ps=ps, deadline_seconds=3600), **PADDLE_OPERATOR)
    assert body["apiVersion"] == "batch.paddlepaddle.org/v1"
    spec = body["spec"]
    assert list(spec) == ["cleanPodPolicy", "schedulingPolicy", "ps", "worker"]
    # clean_pods="Running": a failed job's pods go, a completed job has none running.
    assert spec["cleanPodPolicy"] == "OnFailure"
    assert spec["schedulingPolicy"] == {"minAvailable": 4, "queue": "q"}
    assert (spec["ps"]["replicas"], spec["worker"]["replicas"]) == (2, 2)
    for role in ("ps", "worker"):
        pod = spec[role]["template"]["spec"]
        assert pod["restartPolicy"] == "Never"  # no backoff limit: a failed pod fails the job
        assert pod["activeDeadlineSeconds"] == 3600
        (c,) = pod["containers"]
        # fleet's role maker reads the operator's env; no launcher in PS mode
        assert c["command"] == ["python3", "/workspace/train.py"]
        assert "ports" not in c
    assert spec["ps"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    ej = effective_job(pj, body)
    assert [p.role for p in ej.pod_sets] == ["ps", "worker"]
    servers, workers = ({e.name: e.value for e in p.env} for p in ej.pod_sets)
    assert servers["TRAINING_ROLE"] == "PSERVER" and workers["TRAINING_ROLE"] == "TRAINER"
    assert workers["PADDLE_TRAINERS_NUM"] == "2"
    assert "PADDLE_PSERVERS_IP_PORT_LIST" in workers
    assert ej.gang is not None and (ej.gang.podgroup, ej.gang.min_member) == ("pd", 4)
    assert ej.notes[0].startswith("paddle-operator: the job completes when every pod of every")


def test_a_collective_job_on_paddle_operator_runs_the_launcher_and_cleans_as_asked() -> None:
    body, pj = render(job(clean_pods="All"), scheduler="default", **PADDLE_OPERATOR)
    spec = body["spec"]
    assert spec["cleanPodPolicy"] == "Always"
    assert "schedulingPolicy" not in spec and "ps" not in spec
    (c,) = spec["worker"]["template"]["spec"]["containers"]
    assert c["command"] == ["python3", "-m", "paddle.distributed.launch", "/workspace/train.py"]
    ej = effective_job(pj, body)
    assert (ej.procs_per_node, ej.world_size, ej.gang) == ("4", 8, None)


@pytest.mark.parametrize(
    ("fields", "where", "says"),
    [
        (
            {"restart_policy": "OnFailure"},
            "restart_policy",
            "'OnFailure' would restart a failing pod forever on paddle-operator, which has no "
            "backoff limit",
        ),
        (
            {"backoff_limit": 5},
            "backoff_limit",
            "paddle-operator has no backoff limit: a failed pod fails the job; drop it",
        ),
        (
            {"master_port": 37777},
            "master_port",
            "paddle-operator picks its own ports (a random one in 36000-55999, or 36000 with "
            "intranet='Service') and reads no master port: drop master_port",
        ),
    ],
)
def test_what_paddle_operator_cannot_run_is_refused(
    fields: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(DefinitionError) as e:
        planned(job(**fields), **PADDLE_OPERATOR)
    (p,) = e.value.problems
    assert p.field == where
    assert f"on cluster 'c' (paddle-operator): {says}" in p.message
    # The same job is the Training Operator's elsewhere, where both exist.
    planned(job(**fields))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    j=paddlejobs(),
    volcano=st.booleans(),
    intranet=st.sampled_from([None, "PodIP", "Service"]),
    gloo=st.sampled_from([None, 0, 1, 2]),
    heter=st.none() | st.integers(1, 3),
)
def test_anything_the_model_accepts_renders_a_valid_paddle_operator_job(
    crdset: Any,
    j: PaddleJob,
    volcano: bool,
    intranet: str | None,
    gloo: int | None,
    heter: int | None,
) -> None:
    ps = j.mode == "ps"
    extra: dict[str, Any] = {"intranet": intranet, "with_gloo": gloo if ps else None}
    if ps and heter is not None:
        extra["heter"] = {"replicas": heter, "resources": {"cpu": 2, "memory": "4Gi", "gpu": 1}}
    j = PaddleJob.model_validate(
        {**j.model_dump(exclude_unset=True), "restart_policy": "Never", **extra}
    )
    (cp,) = planned(j, scheduler="volcano" if volcano else "default", **PADDLE_OPERATOR).clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "PaddleJob"]
    assert body["apiVersion"] == "batch.paddlepaddle.org/v1"
    roles = {"ps": "Master", "worker": "Worker", "heter": "Heter"}
    counts = {roles[r]: body["spec"][r]["replicas"] for r in roles if r in body["spec"]}
    assert counts == j.replica_counts()
    ej = effective_job(cp.jobs[0], body)
    assert sum(p.count for p in ej.pod_sets) == sum(counts.values())


def test_gloo_and_service_intranet_on_paddle_operator() -> None:
    ps = Role(replicas=2, resources=CPU)
    j = job(mode="ps", ps=ps, with_gloo=1, intranet="Service", restart_policy="Never")
    body, pj = render(j, **PADDLE_OPERATOR)
    assert (body["spec"]["withGloo"], body["spec"]["intranet"]) == (1, "Service")
    worker = effective_job(pj, body).pod_sets[1]
    env = {e.name: e.value for e in worker.env}
    # With a Service per pod the endpoints are known before the pods run (constructConfigMap).
    assert env["PADDLE_PSERVERS_IP_PORT_LIST"] == "pd-ps-0:36000,pd-ps-1:36000"
    assert env["PADDLE_TRAINERS"] == "pd-worker-0,pd-worker-1"
    assert env["PADDLE_WITH_GLOO"] == "1"


def test_paddle_operator_settings_are_refused_elsewhere() -> None:
    with pytest.raises(ModelError) as e:
        job(with_gloo=1)
    assert "with_gloo sets up Gloo beside parameter servers" in str(e.value)
    with pytest.raises(DefinitionError) as d:
        planned(job(intranet="Service"))
    (p,) = d.value.problems
    assert "intranet is paddle-operator's (batch.paddlepaddle.org)" in p.message
    with pytest.raises(ModelError):
        job(env={"PADDLE_WITH_GLOO": "1"})


def test_heter_workers_on_paddle_operator() -> None:
    heter = Role(replicas=2, resources=Resources(cpu=8, memory="32Gi", gpu=1))
    j = job(mode="ps", ps=Role(resources=CPU), heter=heter, restart_policy="Never")
    body, pj = render(j, **PADDLE_OPERATOR)
    assert body["spec"]["heter"]["replicas"] == 2
    (c,) = body["spec"]["heter"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    ej = effective_job(pj, body)
    assert [p.role for p in ej.pod_sets] == ["ps", "worker", "heter"]
    assert ej.gang is not None and ej.gang.min_member == 1 + 2 + 2
    env = {e.name: e.value for e in ej.pod_sets[2].env}
    assert env["TRAINING_ROLE"] == "HETER" and "PADDLE_HETER_ENDPOINTS" in env
    with pytest.raises(ModelError) as e:
        job(heter=heter)
    assert "heter workers serve parameter servers" in str(e.value)
    with pytest.raises(DefinitionError) as d:
        planned(job(mode="ps", ps=Role(resources=CPU), heter=heter))
    assert "heter is paddle-operator's" in d.value.problems[0].message
