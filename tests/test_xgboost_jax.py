"""XGBoostJob and JAXJob (kubeflow.org/v1, Training Operator v1.9): roles, the env the operator
injects, success, Volcano gangs, Kueue, conformance, rehearsal.

The controller-expectation cases are those of kubeflow/trainer v1.9.4's own tests
(pkg/controller.v1/jax/envvar_test.go, pkg/webhooks/{xgboost,jax}/*_webhook_test.go,
pkg/apis/kubeflow.org/v1/xgboost_defaults_test.go), turned into what trainkit writes: the
operator's expectations must hold for every job trainkit renders.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, policy_problems, render
from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    FlavorQuota,
    JAXJob,
    ModelError,
    Queue,
    ResourceFlavor,
    Resources,
    Role,
    Script,
    Team,
    XGBoostJob,
)
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError, RehearsalError
from trainkit.health import HEALTH_KEY_PREFIX, health_checks
from trainkit.injected_env.jax_env import jaxjob_env
from trainkit.injected_env.xgboost_env import xgboostjob_env
from trainkit.load import Definition
from trainkit.rehearse import rehearse
from trainkit.rehearse.definitions import targets_for
from trainkit.rehearse.launch import plan_rehearsal
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

REPO = Path(__file__).resolve().parents[1]
CPU = Resources(cpu=8, memory="32Gi")


def xgb(**kw: Any) -> XGBoostJob:
    fields: dict[str, Any] = {
        "name": "xg",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 3,
        "resources": CPU,
    }
    return XGBoostJob(**(fields | kw))


def jax(**kw: Any) -> JAXJob:
    fields: dict[str, Any] = {
        "name": "jx",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": Resources(cpu=8, memory="32Gi", gpu=4),
    }
    return JAXJob(**(fields | kw))


def env_of(ps: Any) -> dict[str, str]:
    return {e.name: e.value for e in ps.env}


# --- bad inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "fields", "says"),
    [
        (
            xgb,
            {"master": Role(replicas=2)},
            "master.replicas is 2; an XGBoostJob has one Master (the tracker): drop replicas",
        ),
        (
            xgb,
            {"env": {"MASTER_ADDR": "x"}},
            "MASTER_ADDR may not be set: the Training Operator sets it to the Master pod's Service",
        ),
        (xgb, {"env": {"WORKER_ADDRS": "a,b"}}, "WORKER_ADDRS may not be set"),
        (xgb, {"restart_policy": "Always"}, "'Always' restarts the Master even after it exits 0"),
        (xgb, {"port": 0}, "XGBoostJob 'xg': port: must be at least 1"),
        (xgb, {"port": 65536}, "XGBoostJob 'xg': port: must be at most 65535"),
        (xgb, {"port": "x"}, "XGBoostJob 'xg': port: must be a whole number"),
        (
            xgb,
            {"port": 9991, "ports": {"metrics": 9991}},
            "port is 9991, which ports also gives 'metrics': the tracker and the program would "
            "both listen there; choose another number",
        ),
        (
            xgb,
            {"name": "x" * 54, "nodes": 12},
            "too long for 11 Worker pods: the operator's Service '" + "x" * 54 + "-worker-10'",
        ),
        # xgboostjob_webhook_test.go "XGBoostJob name does not meet DNS1035".
        (xgb, {"name": "1-xgboost"}, "name"),
        (
            jax,
            {"env": {"PROCESS_ID": "0"}},
            "PROCESS_ID may not be set: the Training Operator sets it to the Worker's index",
        ),
        (jax, {"env": {"COORDINATOR_ADDRESS": "h:1"}}, "COORDINATOR_ADDRESS may not be set"),
        (jax, {"env": {"PYTHONUNBUFFERED": "0"}}, "PYTHONUNBUFFERED may not be set"),
        (jax, {"restart_policy": "Always"}, "'Always' restarts a Worker even after it exits 0"),
        (jax, {"port": 0}, "JAXJob 'jx': port: must be at least 1"),
        (jax, {"port": 65536}, "JAXJob 'jx': port: must be at most 65535"),
        (jax, {"port": 1.5}, "JAXJob 'jx': port: must be a whole number"),
        (
            jax,
            {"port": 7777, "ports": {"status": 7777}},
            "port is 7777, which ports also gives 'status': the coordinator and the program "
            "would both listen there; choose another number",
        ),
        (
            jax,
            {"name": "j" * 55, "nodes": 10},
            "too long for 10 Worker pods: the operator's Service '" + "j" * 55 + "-worker-9'",
        ),
    ],
)
def test_bad_fields_are_refused_with_the_reason(
    make: Any, fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(ModelError) as e:
        make(**fields)
    assert says in str(e.value)


def test_a_cluster_without_the_training_operator_refuses_them() -> None:
    for j in (xgb(), jax()):
        with pytest.raises(DefinitionError) as e:
            planned(j, operators=["trainer"])
        (p,) = e.value.problems
        kind = type(j).__name__
        assert f"cluster 'c' does not run training-operator, which {kind}s need" in p.message


# --- XGBoostJob ------------------------------------------------------------------------------


def test_xgboost_renders_one_master_and_the_workers_with_the_operator_s_port() -> None:
    body, pj = render(xgb(master=Role(resources=Resources(cpu=16, memory="96Gi"))))
    specs = body["spec"]["xgbReplicaSpecs"]
    assert list(specs) == ["Master", "Worker"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 2)
    for rtype, spec in specs.items():
        # xgboost_defaults.go: restartPolicy Never, port xgboostjob-port 9999 on "xgboost".
        assert spec["restartPolicy"] == "Never"
        (c,) = spec["template"]["spec"]["containers"]
        assert c["name"] == "xgboost", rtype
        assert c["ports"] == [{"containerPort": 9999, "name": "xgboostjob-port", "protocol": "TCP"}]
        assert c["command"] == ["python3", "/workspace/train.py"]
    master = specs["Master"]["template"]["spec"]["containers"][0]
    assert master["resources"]["limits"] == {"cpu": "16", "memory": "96Gi"}
    assert body["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3, "queue": "q"}
    ej = effective_job(pj, body)
    assert (ej.procs_per_node, ej.world_size, ej.world_size_env) == ("1", 3, "3")
    assert [(p.role, p.count, p.first_rank) for p in ej.pod_sets] == [
        ("Master", 1, 0),
        ("Worker", 2, 1),
    ]
    master_env, worker_env = (env_of(p) for p in ej.pod_sets)
    assert master_env["RANK"] == "0" and worker_env["RANK"] == "1"
    assert worker_env["MASTER_ADDR"] == "xg-master-0"
    assert worker_env["WORKER_ADDRS"] == "xg-worker-0,xg-worker-1"
    assert ej.gang is not None and (ej.gang.podgroup, ej.gang.min_member) == ("xg", 3)
    assert ej.notes[0].startswith("the job succeeds when the Master exits 0")


def test_xgboost_port_is_the_tracker_s_on_every_pod_and_in_the_env() -> None:
    # xgboost.go getPortFromXGBoostJob reads the port named xgboostjob-port from the Master's
    # and the Workers' container "xgboost" into MASTER_PORT and WORKER_PORT (the examples'
    # xgboostjob_v1_rabit_test.yaml declares 9991).
    body, pj = render(xgb(port=9991))
    for spec in body["spec"]["xgbReplicaSpecs"].values():
        (c,) = spec["template"]["spec"]["containers"]
        assert c["ports"] == [{"containerPort": 9991, "name": "xgboostjob-port", "protocol": "TCP"}]
    for ps in effective_job(pj, body).pod_sets:
        assert (env_of(ps)["MASTER_PORT"], env_of(ps)["WORKER_PORT"]) == ("9991", "9991")


def test_a_single_pod_xgboost_job_is_its_master_alone() -> None:
    body, pj = render(xgb(nodes=1))
    # The webhook requires the Master; Workers are optional.
    assert list(body["spec"]["xgbReplicaSpecs"]) == ["Master"]
    (master,) = effective_job(pj, body).pod_sets
    # xgboost.go: WORKER_PORT and WORKER_ADDRS only with more than one pod.
    assert "WORKER_ADDRS" not in env_of(master) and "WORKER_PORT" not in env_of(master)


def test_xgboost_env_is_the_operator_s() -> None:
    # pkg/controller.v1/xgboost/xgboost.go SetPodEnv: in this order, on every container; a
    # Worker's RANK is its index plus the Master's replicas.
    assert list(
        xgboostjob_env(job="j", counts={"Master": 1, "Worker": 3}, role="Worker", index=2).items()
    ) == [
        ("MASTER_PORT", "9999"),
        ("MASTER_ADDR", "j-master-0"),
        ("WORLD_SIZE", "4"),
        ("RANK", "3"),
        ("PYTHONUNBUFFERED", "1"),
        ("WORKER_PORT", "9999"),
        ("WORKER_ADDRS", "j-worker-0,j-worker-1,j-worker-2"),
    ]


# --- JAXJob ----------------------------------------------------------------------------------


def test_jax_renders_workers_only_with_the_coordinator_port() -> None:
    body, pj = render(jax(nodes=3))
    specs = body["spec"]["jaxReplicaSpecs"]
    assert list(specs) == ["Worker"]  # jaxjob_webhook.go: Worker is the only replica type
    spec = specs["Worker"]
    assert (spec["replicas"], spec["restartPolicy"]) == (3, "Never")
    (c,) = spec["template"]["spec"]["containers"]
    assert c["name"] == "jax"
    assert c["ports"] == [{"containerPort": 6666, "name": "jaxjob-port", "protocol": "TCP"}]
    assert body["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3, "queue": "q"}
    ej = effective_job(pj, body)
    assert (ej.procs_per_node, ej.world_size, ej.gpus()) == ("1", 3, 12)
    assert ej.notes[0].startswith("the job succeeds when every Worker exits 0")


def test_jax_port_is_the_coordinator_s_on_every_pod_and_in_the_env() -> None:
    # jax/envvar.go getPortFromJAXJob reads the Workers' port named jaxjob-port into
    # COORDINATOR_PORT.
    body, pj = render(jax(port=7777))
    (c,) = body["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert c["ports"] == [{"containerPort": 7777, "name": "jaxjob-port", "protocol": "TCP"}]
    (worker,) = effective_job(pj, body).pod_sets
    assert env_of(worker)["COORDINATOR_PORT"] == "7777"


def test_jax_env_matches_the_operator_s_own_test() -> None:
    # pkg/controller.v1/jax/envvar_test.go "successful environment variable setup": one
    # Worker with jaxjob-port 6666 of job test-jaxjob, index 0, exactly these in this order.
    expected = [
        ("PYTHONUNBUFFERED", "1"),
        ("COORDINATOR_PORT", "6666"),
        ("COORDINATOR_ADDRESS", "test-jaxjob-worker-0"),
        ("NUM_PROCESSES", "1"),
        ("PROCESS_ID", "0"),
    ]
    assert list(jaxjob_env(job="test-jaxjob", workers=1, index=0).items()) == expected
    body, pj = render(jax(name="test-jaxjob", nodes=1, script=None, command=["python", "t.py"]))
    (worker,) = effective_job(pj, body).pod_sets
    assert [(e.name, e.value) for e in worker.env] == expected


# --- Argo CD health --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "conditions", "status", "says"),
    [
        # xgboostjob_controller.go UpdateJobStatus: the Master's success ends the job, while
        # Workers may still run.
        (
            "XGBoostJob",
            [("Created", "True"), ("Running", "False"), ("Succeeded", "True")],
            "Healthy",
            "XGBoostJobSucceeded: XGBoostJob xg is successfully completed.",
        ),
        (
            "XGBoostJob",
            [("Created", "True"), ("Running", "True"), ("Failed", "True")],
            "Degraded",
            "XGBoostJobFailed: XGBoostJob xg is failed because 1 Worker replica(s) failed.",
        ),
        # jaxjob_controller.go: a failed Worker with a restart policy other than Never.
        (
            "JAXJob",
            [("Created", "True"), ("Running", "True"), ("Restarting", "True")],
            "Progressing",
            "JAXJobRestarting: JAXJob jx is restarting because 1 Worker replica(s) failed.",
        ),
        ("JAXJob", [("Created", "True"), ("Suspended", "True")], "Suspended", "JAXJobSuspended"),
    ],
)
def test_argo_cd_health_reads_the_operator_s_conditions(
    kind: str, conditions: list[tuple[str, str]], status: str, says: str
) -> None:
    from test_argocd_health import run_health

    name = "xg" if kind == "XGBoostJob" else "jx"
    text = {
        "Succeeded": f"{kind} {name} is successfully completed.",
        "Failed": f"{kind} {name} is failed because 1 Worker replica(s) failed.",
        "Restarting": f"{kind} {name} is restarting because 1 Worker replica(s) failed.",
    }
    obj = {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "t"},
        "status": {
            "conditions": [
                {"type": t, "status": v, "reason": f"{kind}{t}", "message": text.get(t, "")}
                for t, v in conditions
            ]
        },
    }
    out = run_health(health_checks()[f"{HEALTH_KEY_PREFIX}kubeflow.org_{kind}"], obj)
    assert out["status"] == status
    assert says in out["message"]


# --- Volcano, Kueue, conformance --------------------------------------------------------------


def test_on_kueue_they_are_managed_only_where_the_integration_is_on() -> None:
    P = "jobs/platform/p.py"
    for j, framework in ((xgb(), "kubeflow.org/xgboostjob"), (jax(), "kubeflow.org/jaxjob")):

        def defs(frameworks: list[str] | None, j: Any = j) -> list[Definition]:
            c = Cluster(
                name="k",
                server="https://k",
                gpus_per_node=8,
                scheduler="kueue",
                kueue_frameworks=frameworks,  # type: ignore[arg-type]
            )
            quota = Capacity(cpu=64, memory="512Gi", gpu=16)
            return [
                Definition(c, P, "platform"),
                Definition(ResourceFlavor(name="f"), P, "platform"),
                Definition(
                    ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]),
                    P,
                    "platform",
                ),
                Definition(Team(name="t", queues=["q"]), P, "platform"),
                Definition(j, "jobs/t/j.py", "t", files={"train.py": "x"}),
            ]

        with pytest.raises(DefinitionError) as e:
            build_plan(defs(None))
        kind = type(j).__name__
        assert any(
            f"Kueue does not manage {kind}s here ({framework!r} is not in" in p.message
            for p in e.value.problems
        )
        (cp,) = build_plan(defs([framework])).clusters
        (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == kind]
        assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
        assert "schedulingPolicy" not in body["spec"]["runPolicy"]


def test_a_gang_larger_than_its_queue_is_refused() -> None:
    defs = [
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8), "p.py", "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=8)), "p.py", "platform"),
        Definition(Team(name="t", queues=["q"]), "p.py", "platform"),
        Definition(jax(nodes=3), "jobs/t/j.py", "t", files={"train.py": "x"}),
    ]
    found = policy_problems(defs)
    assert [p.message for p in found] == [
        "the gang of 3 pods needs 12 nvidia.com/gpu on cluster 'c', but queue 'q' can hold at "
        "most 8 nvidia.com/gpu (Queue.capability in p.py): Volcano would never admit it and the "
        "job would stay Pending; use fewer nodes or resources, or another queue"
    ]


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


_NAMES = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)


@st.composite
def xgboostjobs(draw: Any) -> XGBoostJob:
    return XGBoostJob(
        name=draw(_NAMES),
        run=draw(st.none() | st.integers(1, 99)),
        image="img:1",
        script=draw(st.none() | st.just(Script.file("train.py"))),
        nodes=draw(st.integers(1, 8)),
        resources=Resources(cpu=2, memory="4Gi", gpu=draw(st.integers(0, 8))),
        master=draw(st.none() | st.builds(Role, resources=st.just(CPU))),
        restart_policy=draw(st.sampled_from(["OnFailure", "Never", "ExitCode"])),
        clean_pods=draw(st.sampled_from(["Running", "All", "None"])),
        deadline_seconds=draw(st.none() | st.integers(1, 10**6)),
    )


@st.composite
def jaxjobs(draw: Any) -> JAXJob:
    return JAXJob(
        name=draw(_NAMES),
        run=draw(st.none() | st.integers(1, 99)),
        image="img:1",
        script=draw(st.none() | st.just(Script.file("train.py"))),
        nodes=draw(st.integers(1, 8)),
        resources=Resources(cpu=2, memory="4Gi", gpu=draw(st.integers(0, 8))),
        restart_policy=draw(st.sampled_from(["OnFailure", "Never", "ExitCode"])),
        shm_size=draw(st.none() | st.just("8Gi")),
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(j=st.one_of(xgboostjobs(), jaxjobs()), volcano=st.booleans())
def test_anything_the_models_accept_renders_a_valid_job_the_operator_accepts(
    crdset: Any, j: XGBoostJob | JAXJob, volcano: bool
) -> None:
    (cp,) = planned(j, scheduler="volcano" if volcano else "default").clusters
    for rendered in _cluster_objects(cp):
        # safe_dump's representer and data, written by libyaml (a fifth of the CPU)
        text = yaml.dump(rendered.body, Dumper=yaml.CSafeDumper)
        assert validate_text(text, rendered.path, crdset) == []
    kind = type(j).__name__
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == kind]
    key, container, port = (
        ("xgbReplicaSpecs", "xgboost", "xgboostjob-port")
        if isinstance(j, XGBoostJob)
        else ("jaxReplicaSpecs", "jax", "jaxjob-port")
    )
    specs = body["spec"][key]
    assert {k: v["replicas"] for k, v in specs.items()} == j.replica_counts()
    # The webhooks' expectations (xgboostjob_webhook.go, jaxjob_webhook.go): known replica
    # types, a container of the kind's name with an image in each, one Master for XGBoost.
    assert set(specs) <= ({"Master", "Worker"} if isinstance(j, XGBoostJob) else {"Worker"})
    if isinstance(j, XGBoostJob):
        assert specs["Master"]["replicas"] == 1
    for spec in specs.values():
        containers = spec["template"]["spec"]["containers"]
        assert all(c["image"] for c in containers)
        (own,) = [c for c in containers if c["name"] == container]
        # The controllers find the port by name or create no pod (getPortFrom*Job).
        assert [p["name"] for p in own["ports"]] == [port]
    ej = effective_job(cp.jobs[0], body)
    assert ej.world_size == sum(j.replica_counts().values())
    assert ej.gang is None if not volcano else ej.gang.min_member == ej.world_size  # type: ignore[union-attr]


# --- rehearsal -------------------------------------------------------------------------------


def _targets(j: XGBoostJob | JAXJob, script: str) -> Any:
    text = (REPO / script).read_text()
    P = "jobs/platform/p.py"
    platform = [
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8), P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
    ]
    assert j.script is not None
    d = Definition(j, "jobs/t/j.py", "t", line=3, files={j.script.filename: text})
    return targets_for(d, platform)[0]


def test_the_rehearsal_plan_gives_each_node_the_operator_s_env_on_this_machine(
    tmp_path: Path,
) -> None:
    t = _targets(
        xgb(script=Script.file("train_xgb_ranker.py")), "jobs/vision/scripts/train_xgb_ranker.py"
    )
    plan = plan_rehearsal(t, workspace=tmp_path, log_dir=tmp_path / "logs", master_port=4000)
    assert plan.nodes == 2 and plan.procs_per_node == 1  # capped from 3 pods
    envs = [dict(launch.env) for launch in plan.launches]
    assert [(e["RANK"], e["WORLD_SIZE"], e["MASTER_ADDR"]) for e in envs] == [
        ("0", "2", "127.0.0.1"),
        ("1", "2", "127.0.0.1"),
    ]
    assert envs[1]["WORKER_ADDRS"] == "127.0.0.1"
    assert [t.pod(n) for n in range(2)] == ["xg-master-0", "xg-worker-0"]
    assert "MASTER_ADDR xg-master-0 → 127.0.0.1 and MASTER_PORT 9999 → 4000" in "\n".join(
        plan.changes
    )
    assert not any(launch.torchrun for launch in plan.launches)
    with pytest.raises(RehearsalError) as e:
        plan_rehearsal(
            t, workspace=tmp_path, log_dir=tmp_path / "l", master_port=4000, procs_per_node=2
        )
    assert "each pod of a XGBoostJob runs one process" in str(e.value)


def test_a_shell_s_coordinator_is_not_inherited(tmp_path: Path) -> None:
    t = _targets(jax(script=Script.file("train_jax_lm.py")), "jobs/llm/scripts/train_jax_lm.py")
    plan = plan_rehearsal(
        t,
        workspace=tmp_path,
        log_dir=tmp_path / "logs",
        master_port=4001,
        base_env={"COORDINATOR_ADDRESS": "elsewhere", "NUM_PROCESSES": "9", "HOME": "/h"},
    )
    assert [dict(launch.env)["PROCESS_ID"] for launch in plan.launches] == ["0", "1"]
    for launch in plan.launches:
        assert launch.env["COORDINATOR_ADDRESS"] == "127.0.0.1"
        assert launch.env["NUM_PROCESSES"] == "2"
    assert any("COORDINATOR_ADDRESS, NUM_PROCESSES" in c for c in plan.changes)


@pytest.mark.long
def test_xgboost_rehearses_with_its_tracker_on_the_master(tmp_path: Path) -> None:
    out_file = tmp_path / "model.ubj"
    j = xgb(
        script=Script.file("train_xgb_ranker.py"),
        args=["--rounds", "3", "--rows", "200", "--output", str(out_file)],
        nodes=2,
    )
    out = io.StringIO()
    report = rehearse(_targets(j, "jobs/vision/scripts/train_xgb_ranker.py"), timeout=120, out=out)
    text = out.getvalue()
    assert (report.kind, report.nodes, report.procs_per_node) == ("XGBoostJob", 2, 1)
    assert "Task 1 got rank 1" in text and "Task 0 got rank 0" in text
    assert f"[node0] saved {out_file} after 3 rounds" in text
    assert out_file.exists()
    # A Worker that starts before the tracker listens joins without XGBoost's reconnect,
    # which sleeps 2 s, then 4 s (the script's join tries every 0.1 s).
    assert "Retrying connection" not in text and "Failed to connect" not in text


@pytest.mark.long
def test_jax_rehearses_with_distributed_initialization(tmp_path: Path) -> None:
    j = jax(script=Script.file("train_jax_lm.py"), args=["--steps", "3"], nodes=2)
    out = io.StringIO()
    report = rehearse(_targets(j, "jobs/llm/scripts/train_jax_lm.py"), timeout=120, out=out)
    text = out.getvalue()
    assert (report.kind, report.nodes) == ("JAXJob", 2)
    assert "[node0] process 0 of 2: 1 local of 2 devices" in text
    assert "[node1] process 1 of 2: 1 local of 2 devices" in text
    assert "[node0] step 2: loss" in text
    assert json.dumps(report.commands)  # the commands are recorded, one per node
