"""Init containers, native sidecars, ports, probes and hooks on a Trainer v2.3 runtime: on the
pods that run the training, under the operator kinds' rules, counted as the scheduler counts
them in every TrainJob's gang, queue and Kueue workload.

Read from kubeflow/trainer v2.3.0: pkg/runtime/runtime.go WithPodSet (a pod set's
SinglePodRequests is k8s.io/component-helpers resource.PodRequests of the runtime's pod spec,
init containers and sidecars included), pkg/runtime/core/trainingruntime.go newRuntimeInfo,
plugins/volcano/volcano.go Build (minResources: SinglePodRequests × count, summed),
plugins/jobset/builder.go (the runtime's templates pass through), plugins/flux/flux.go
(``flux-installer`` reserved); kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go
(publishNotReadyAddresses defaults to true); Kueue v0.19.2 pkg/workload/workload.go
totalRequestsFromPodSets (resource.PodRequests per pod set).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from example_edits import edit
from kind_fixtures import kueue_queue, policy_problems, rendered_one
from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    Hook,
    InitContainer,
    Initializer,
    Policy,
    Probe,
    Queue,
    Resources,
    RuntimeInitializers,
    RuntimeMPI,
    Script,
    Team,
    TrainJob,
)
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"
IMAGE = "registry.example.com/ml/torch:1"
SMALL = Resources(cpu=1, memory="1Gi")
FETCH = InitContainer(
    name="fetch", command=["sh", "-c", "cp /a /dev/shm"], mounts=["dshm"],
    resources=Resources(cpu=40, memory="4Gi"),
)  # fmt: skip
SIDECAR = InitContainer(
    name="metrics-push", image="registry.example.com/ml/push:1", command=["push"],
    sidecar=True, resources=Resources(cpu=2, memory="1Gi"),
)  # fmt: skip


def runtime(**kw: Any) -> ClusterTrainingRuntime:
    fields: dict[str, Any] = {
        "name": "rt", "image": IMAGE, "nodes": 2, "shm_size": "1Gi",
        "resources": Resources(cpu=8, memory="32Gi", gpu=4),
    }  # fmt: skip
    return ClusterTrainingRuntime(**(fields | kw))


def platform(rt: ClusterTrainingRuntime, scheduler: str = "volcano", **policy: Any) -> list[Any]:
    cluster: dict[str, Any] = {"name": "c", "server": "https://c", "gpus_per_node": 8}
    if scheduler == "kueue":
        cluster |= {"scheduler": "kueue", "operators": ["trainer"]}
        queues = kueue_queue(Capacity(cpu=256, memory="1024Gi", gpu=16), P)
    else:
        queues = [Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform")]
    defs = [
        Definition(Cluster(**cluster), P, "platform"),
        *queues,
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(rt, P, "platform"),
    ]
    if policy:
        defs.append(Definition(Policy(**policy), P, "platform"))
    return defs


def job(**kw: Any) -> Definition:
    tj = TrainJob(**({"name": "tj", "runtime": "rt", "script": Script.file("train.py")} | kw))
    return Definition(tj, "jobs/t/j.py", "t", line=3, files={"train.py": "x"})


def pods(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["name"]: r["template"]["spec"]["template"]["spec"]
        for r in body["spec"]["template"]["spec"]["replicatedJobs"]
    }


def problems_of(defs: list[Any]) -> list[Any]:
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    return list(e.value.problems)


def test_the_node_pods_run_them_and_the_initializer_steps_do_not() -> None:
    rt = runtime(
        init_containers=[FETCH, SIDECAR],
        ports={"metrics": 9090},
        readiness_probe=Probe(http_get="/ready", port="metrics"),
        liveness_probe=Probe(exec=["test", "-f", "/tmp/alive"], period=30, failure_threshold=3),
        startup_probe=Probe(tcp_socket=True, port=9090),
        post_start=Hook(exec=["nvidia-smi", "-L"]),
        pre_stop=Hook(sleep=5),
        initializers=RuntimeInitializers(
            dataset=Initializer(
                image="registry.example.com/ml/dataset-initializer:v2.3.0", storage_uri="hf://a/b"
            ),
            size="10Gi",
        ),
    )
    bodies, ej = rendered_one([*platform(rt, "kueue"), job()])
    by_job = pods(bodies["ClusterTrainingRuntime"])
    assert "initContainers" not in by_job["dataset-initializer"]
    node = by_job["node"]
    fetch, push = node["initContainers"]
    assert fetch["image"] == IMAGE and "restartPolicy" not in fetch
    assert fetch["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "dshm"}]
    assert fetch["resources"]["requests"] == fetch["resources"]["limits"]
    assert push["restartPolicy"] == "Always" and push["image"] == "registry.example.com/ml/push:1"
    (main,) = node["containers"]
    assert main["ports"] == [
        {"containerPort": 29500, "protocol": "TCP"},
        {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
    ]
    assert main["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "metrics"}
    assert main["livenessProbe"]["exec"] == {"command": ["test", "-f", "/tmp/alive"]}
    assert main["startupProbe"]["tcpSocket"] == {"port": 9090}
    assert main["lifecycle"] == {
        "postStart": {"exec": {"command": ["nvidia-smi", "-L"]}},
        "preStop": {"sleep": {"seconds": 5}},
    }
    # The TrainJob's pods are the runtime's: its image replaces only the node container's.
    (ps,) = [p for p in ej.pod_sets if p.role == "node"]
    assert [c["name"] for c in ps.spec["initContainers"]] == ["fetch", "metrics-push"]
    assert ps.main["startupProbe"] == main["startupProbe"]


def test_an_mpi_launcher_that_runs_no_ranks_gets_none() -> None:
    mpi = {"mpi": RuntimeMPI(), "run_as_user": 1000, "fs_group": 1000}
    bodies, _ = rendered_one([*platform(runtime(init_containers=[SIDECAR], **mpi)), job()])
    by_job = pods(bodies["ClusterTrainingRuntime"])
    assert [c["name"] for c in by_job["node"]["initContainers"]] == ["metrics-push"]
    # Volcano: trainkit's wait-for-hosts only (render/kubeflow_trainer.py _mpi_runtime).
    assert [c["name"] for c in by_job["launcher"]["initContainers"]] == ["wait-for-hosts"]
    mpi["mpi"] = RuntimeMPI(launcher_as_node=True)
    bodies, _ = rendered_one([*platform(runtime(init_containers=[SIDECAR], **mpi)), job()])
    launcher = pods(bodies["ClusterTrainingRuntime"])["launcher"]
    assert [c["name"] for c in launcher["initContainers"]] == ["wait-for-hosts", "metrics-push"]


def test_the_gang_counts_them_as_volcano_and_trainer_do() -> None:
    # Each node runs 8 CPUs + a 2-CPU sidecar = 10, after a 40-CPU init container that starts
    # before the sidecar: the pod needs max(40, 8 + 2) = 40 CPUs (resource.PodRequests), the
    # gang 2 × 40. Counting the containers alone would give 2 × 8.
    _, ej = rendered_one([*platform(runtime(init_containers=[FETCH, SIDECAR])), job()])
    assert ej.gang is not None
    assert ej.gang.requests["cpu"] == Decimal(80)
    assert ej.gang.requests["memory"] == Decimal(2 * 33) * 2**30  # max(4Gi, 32Gi + 1Gi)
    # A sidecar first: the init container runs beside it, 42 CPUs.
    _, ej = rendered_one([*platform(runtime(init_containers=[SIDECAR, FETCH])), job()])
    assert ej.gang is not None and ej.gang.requests["cpu"] == Decimal(84)


def test_kueue_s_workload_counts_them() -> None:
    _, ej = rendered_one([*platform(runtime(init_containers=[SIDECAR]), "kueue"), job(nodes=3)])
    assert ej.workload is not None
    # Three nodes of 8 CPUs plus a 2-CPU sidecar each.
    assert ej.workload.requests()["cpu"] == Decimal(30)


def test_a_gang_whose_sidecars_overflow_the_queue_is_refused() -> None:
    # The queue holds 64 GPUs and 100 CPUs; 2 nodes of 8 CPUs fit, with a 50-CPU sidecar not.
    big = SIDECAR.model_copy(update={"resources": Resources(cpu=50, memory="1Gi")})
    defs = platform(runtime(init_containers=[big]))
    defs[1] = Definition(Queue(name="q", capability=Capacity(gpu=64, cpu=100)), P, "platform")
    found = policy_problems([*defs, job()])
    assert any("needs 116 cpu" in p.message for p in found), [str(p) for p in found]
    small = SIDECAR.model_copy(update={"resources": Resources(cpu=10, memory="1Gi")})
    defs[3] = Definition(runtime(init_containers=[small]), P, "platform")
    assert policy_problems([*defs, job()]) == []


def test_an_unlisted_registry_is_refused_at_the_runtime_s_field() -> None:
    evil = SIDECAR.model_copy(update={"image": "docker.io/evil/miner:1"})
    rt = runtime(init_containers=[FETCH, evil])
    found = policy_problems([*platform(rt, registries=["registry.example.com/ml/"]), job()])
    bad = [p for p in found if "docker.io/evil/miner:1" in p.message]
    assert [p.field for p in bad] == ["init_containers[1].image"], [str(p) for p in found]
    assert "ClusterTrainingRuntime 'rt'" in str(bad[0])


def test_a_burstable_init_container_needs_the_policy() -> None:
    loose = FETCH.model_copy(update={"resources": Resources(cpu=4, cpu_request=1, memory="1Gi")})
    found = policy_problems([*platform(runtime(init_containers=[loose])), job()])
    assert [p.field for p in found] == ["init_containers[0].resources.cpu_request"], found
    assert "makes the pods Burstable" in found[0].message
    assert (
        policy_problems([*platform(runtime(init_containers=[loose]), burstable=True), job()]) == []
    )


def test_a_trainjob_s_grace_period_must_leave_the_runtime_s_pre_stop_time() -> None:
    rt = runtime(pre_stop=Hook(sleep=20))
    build_plan([*platform(rt), job()])  # Kubernetes' 30 s
    found = problems_of([*platform(rt), job(termination_grace_period=10)])
    assert [p.field for p in found] == ["termination_grace_period"], found
    assert "the runtime's pre_stop sleeps 20 s but the pod's grace period is 10 s" in str(found[0])


def test_the_runtime_and_the_trainjob_are_valid_against_the_crds() -> None:
    crdset = shared_crd_set()
    rt = runtime(
        init_containers=[FETCH, SIDECAR], ports={"metrics": 9090},
        liveness_probe=Probe(http_get="/alive", port="metrics", period=20, failure_threshold=3),
        post_start=Hook(http_get="/started", port="metrics"), pre_stop=Hook(exec=["true"]),
    )  # fmt: skip
    plan = build_plan([*platform(rt), job()])
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []


def _scheduler_cpu(node: int, inits: list[tuple[int, bool]]) -> int:
    """k8s.io/component-helpers resource/helpers.go PodRequests, written from its loop: the
    containers plus every sidecar, or, if more, the peak of an init container beside the
    sidecars started before it."""
    total, sidecars, peak = node, 0, 0
    for cpu, sidecar in inits:
        if sidecar:
            total += cpu
            sidecars += cpu
            peak = max(peak, sidecars)
        else:
            peak = max(peak, sidecars + cpu)
    return max(total, peak)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inits=st.lists(st.tuples(st.integers(1, 64), st.booleans()), min_size=1, max_size=4),
    nodes=st.integers(1, 4),
    scheduler=st.sampled_from(["volcano", "kueue"]),
)
def test_every_pod_counts_them_as_the_scheduler_does(
    inits: list[tuple[int, bool]], nodes: int, scheduler: str
) -> None:
    containers = [
        _ic(name=f"c{i}", sidecar=sidecar, resources=Resources(cpu=cpu, memory="1Gi"))
        for i, (cpu, sidecar) in enumerate(inits)
    ]
    defs = [*platform(runtime(init_containers=containers), scheduler), job(nodes=nodes)]
    bodies, ej = rendered_one(defs)
    want = Decimal(nodes * _scheduler_cpu(8, inits))
    if scheduler == "volcano":
        assert ej.gang is not None and ej.gang.requests["cpu"] == want
    else:
        assert ej.workload is not None and ej.workload.requests()["cpu"] == want
    crdset = shared_crd_set()
    runtime_body = bodies["ClusterTrainingRuntime"]
    assert validate_text(yaml.safe_dump(runtime_body), "rt.yaml", crdset) == []


def _ic(**kw: Any) -> InitContainer:
    return InitContainer(**({"name": "x", "command": ["x"], "resources": SMALL} | kw))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"init_containers": [_ic(name="a"), _ic(name="a")]}, "two init containers are named 'a'"),
        (
            {"init_containers": [_ic(mounts=["data"])]},
            "init container 'x' mounts 'data', which is none of the job's volumes ('dshm')",
        ),
        (
            {"shm_size": None, "init_containers": [_ic(mounts=["dshm"])]},
            "mounts 'dshm', which is none of the job's volumes (none)",
        ),
        (
            {"init_containers": [_ic(command=["echo", "$(SHARD)"])]},
            "init_containers[0]: $(SHARD) names none of its env",
        ),
        (
            {"init_containers": [_ic(env={"A": "$(B)", "B": "1"})]},
            "init_containers[0].env.A: $(B) names no variable before A",
        ),
        ({"ports": {"rdzv": 29500}}, "port 'rdzv' is 29500, which Kubeflow Trainer's rendezvous"),
        ({"ports": {"broker": 8050}}, "port 'broker' is 8050, which the Flux broker"),
        ({"ports": {"a": 9000, "b": 9000}}, "ports 'a' and 'b' are both 9000"),
        ({"ports": {"Metrics": 9000}}, "is not a port name"),
        (
            {"readiness_probe": Probe(http_get="/r", port="status")},
            "readiness_probe checks port 'status', which ports does not name",
        ),
        (
            {"liveness_probe": Probe(exec=["true"], period=10, failure_threshold=3)},
            "liveness_probe kills the container after 30 s of failed checks",
        ),
        (
            {"startup_probe": Probe(exec=["true"], success_threshold=2)},
            "startup_probe.success_threshold must be 1",
        ),
        ({"pre_stop": Hook(sleep=30)}, "pre_stop sleeps 30 s but the pod's grace period is 30 s"),
        (
            {"post_start": Hook(http_get="/s", port="status")},
            "post_start calls port 'status', which ports does not name",
        ),
        (
            {
                "mpi": RuntimeMPI(ssh_port=2222), "run_as_user": 1, "fs_group": 1,
                "ports": {"ssh": 2222},
            },
            "mpi.ssh_port is 2222, which ports also gives 'ssh'",
        ),
        (
            {
                "mpi": RuntimeMPI(), "run_as_user": 1, "fs_group": 1,
                "readiness_probe": Probe(exec=["true"]),
            },
            "readiness_probe on an MPI runtime has no place",
        ),
    ],
)  # fmt: skip
def test_bad_node_settings_are_refused_with_why(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(DefinitionError) as e:
        runtime(**fields)
    assert "ClusterTrainingRuntime 'rt'" in str(e.value), str(e.value)
    assert says in str(e.value), str(e.value)


def test_an_init_container_may_use_its_own_variables() -> None:
    ok = _ic(command=["echo", "$(SHARD)", "$$(date)"], env={"SHARD": "3", "PATHS": "/d/$(SHARD)"})
    assert runtime(init_containers=[ok]).init_containers == [ok]


@pytest.mark.parametrize("name", ["node", "flux-installer"])
def test_trainer_s_container_names_are_taken(name: str) -> None:
    with pytest.raises(DefinitionError, match=f"name '{name}' is taken by a container"):
        _ic(name=name)


def test_the_example_runtimes_containers_reach_the_gang_and_explain(ws, cli) -> None:
    # jobs/platform/runtimes.py fsdp-a800: 4 nodes of 64 CPUs and a 1-CPU sidecar each.
    run = cli("explain", "llama-sft", "--cluster", "a800-north")
    assert run.code == 0, run.err
    assert "cpu 260" in run.out, run.out
    assert (
        "sidecar    metrics-push (registry.example.com/ml/prom-push:1.2), beside the job's "
        "container; limits cpu 1, memory 256Mi"
    ) in run.out, run.out
    assert "ports      29500, metrics 9090" in run.out
    # jobs/platform/data_runtimes.py torch-2-5-data: an init container and a post_start hook.
    run = cli("explain", "wiki-sft", "--cluster", "h100-south")
    assert (
        "init       check-dataset (registry.example.com/ml/pytorch:2.5.1-cuda12.4), before it "
        "starts; limits cpu 1, memory 1Gi"
    ) in run.out, run.out
    assert "started    runs nvidia-smi -L" in run.out
    edit(ws, "jobs/platform/runtimes.py", 'cpu=1, memory="256Mi"', 'cpu=1, memory="1Gi"')
    run = cli("explain", "llama-sft", "--cluster", "a800-north")
    assert "memory 2052Gi" in run.out, run.out
