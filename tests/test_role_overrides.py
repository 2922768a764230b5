"""Roles with settings of their own (``Role(image=, command=, args=, env=, resources=,
restart_policy=, node_selector=, tolerations=, volumes=, security_context=,
container_security_context=)``) on every operator kind with roles.

What the operators do per replica type, at the versions trainkit pins:
- training-operator v1.9.4 pkg/controller.v1/common/pod.go ReconcilePods and pkg/core/pod.go
  SetRestartPolicy: each replica type's restartPolicy applies to its pods alone (``ExitCode``
  becomes the pod's ``Never``), and each type's template is its own;
- mpi-operator v0.8 pkg/controller/mpi_job_controller.go: setRestartPolicy for the launcher
  Job's template and for each worker pod, from its own replica spec; newWorker starts
  ``/usr/sbin/sshd -De`` only in a worker container with neither command nor args;
  pkg/apis/kubeflow/v2beta1/default.go defaults workers to ``Never`` and the launcher to
  ``OnFailure``; validation.go accepts only ``Never`` and ``OnFailure``.
Every override passes the job's own checks: registries, caps, tolerations, reserved env.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, policy_problems, render
from trainkit import (
    Capacity,
    Cluster,
    ContainerSecurityContext,
    CsiVolume,
    EmptyDir,
    HostPath,
    ModelError,
    MPIJob,
    NetworkProfile,
    PaddleJob,
    Policy,
    PyTorchJob,
    Queue,
    Resources,
    Role,
    Script,
    SecretKey,
    SecretVolume,
    SecurityContext,
    Team,
    TFJob,
    Toleration,
    Volume,
    XGBoostJob,
)
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.policy import check_policy
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups, rendered_runtimes
from trainkit.synth.layout import _cluster_objects

GPU = Resources(cpu=8, memory="64Gi", gpu=8)
CPU = Resources(cpu=4, memory="16Gi")
GPU_TAINT = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
CPU_TAINT = Toleration(key="pool", operator="Equal", value="cpu", effect="NoSchedule")
TAINTS = {"tolerations": [GPU_TAINT, CPU_TAINT]}
P = "jobs/platform/p.py"
MPI = {"operators": ["training-operator", "mpi-operator", "trainer"]}


def _job(kind: type[Any], **kw: Any) -> Any:
    fields: dict[str, Any] = {
        "name": "j",
        "image": "registry.example.com/ml/img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": GPU,
    }
    return kind(**(fields | kw))


def _spec(replica: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = replica["template"]["spec"]
    return spec


def _main(replica: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = _spec(replica)["containers"][0]
    return c


def _env(replica: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in _main(replica).get("env") or []}


# --- Rendered, per kind ----------------------------------------------------------------------

ROLE = Role(
    image="registry.example.com/ml/img-cpu:1",
    env={"ROLE_ONLY": "1", "SHARED": "role"},
    restart_policy="Never",
    node_selector={"pool": "cpu"},
    tolerations=[CPU_TAINT],
    command=["python3", "-m", "serve"],
    args=["--port", "9000"],
)


@pytest.mark.parametrize(
    ("kind", "field", "rtype", "other", "specs"),
    [
        (PyTorchJob, "master", "Master", "Worker", "pytorchReplicaSpecs"),
        (TFJob, "ps", "PS", "Worker", "tfReplicaSpecs"),
        (TFJob, "chief", "Chief", "Worker", "tfReplicaSpecs"),
        (TFJob, "evaluator", "Evaluator", "Worker", "tfReplicaSpecs"),
        (XGBoostJob, "master", "Master", "Worker", "xgbReplicaSpecs"),
        (PaddleJob, "ps", "Master", "Worker", "paddleReplicaSpecs"),
    ],
)
def test_a_role_s_own_settings_reach_its_pods_only(
    kind: type[Any], field: str, rtype: str, other: str, specs: str
) -> None:
    extra = {"mode": "ps"} if kind is PaddleJob else {}
    kw = {
        "env": {"SHARED": "job", "JOB_ONLY": "1"},
        "tolerations": [GPU_TAINT],
        "args": ["-v"],
        "restart_policy": "OnFailure",  # XGBoostJob's default is Never
    }
    body, pj = render(_job(kind, **{field: ROLE}, **extra, **kw), **TAINTS)
    replicas = body["spec"][specs]
    mine, theirs = replicas[rtype], replicas[other]
    assert mine["restartPolicy"] == "Never"
    assert theirs["restartPolicy"] == "OnFailure"
    assert _main(mine)["image"] == "registry.example.com/ml/img-cpu:1"
    assert _main(theirs)["image"] == "registry.example.com/ml/img:1"
    assert _main(mine)["command"] == ["python3", "-m", "serve"]
    assert _main(mine)["args"] == ["--port", "9000"]
    assert _main(theirs)["args"] == ["-v"]
    # The role's variables over the job's; the other roles keep the job's.
    assert {k: v for k, v in _env(mine).items() if k in ("SHARED", "JOB_ONLY", "ROLE_ONLY")} == {
        "SHARED": "role",
        "JOB_ONLY": "1",
        "ROLE_ONLY": "1",
    }
    assert "ROLE_ONLY" not in _env(theirs) and _env(theirs)["SHARED"] == "job"
    assert _spec(mine)["nodeSelector"] == {"pool": "cpu"}
    assert "nodeSelector" not in _spec(theirs)
    assert [t["key"] for t in _spec(mine)["tolerations"]] == ["pool"]
    assert [t["key"] for t in _spec(theirs)["tolerations"]] == ["nvidia.com/gpu"]
    # The effective pods: the role's restart policy and its variables' origin.
    ej = effective_job(pj, body)
    sets = {ps.role: ps for ps in ej.pod_sets}
    assert sets[rtype].restart_policy == "Never"
    sources = {e.name: e.source for e in sets[rtype].env}
    assert sources["ROLE_ONLY"] == f"role {field}" and sources["JOB_ONLY"] == "job"


def test_exit_code_on_a_role_is_the_operator_s_and_its_pods_restart_never() -> None:
    # pkg/core/pod.go SetRestartPolicy: ExitCode → the pod's Never; the operator decides.
    body, pj = render(_job(TFJob, chief=Role(restart_policy="ExitCode")))
    assert body["spec"]["tfReplicaSpecs"]["Chief"]["restartPolicy"] == "ExitCode"
    sets = {ps.role: ps for ps in effective_job(pj, body).pod_sets}
    assert sets["Chief"].restart_policy == "Never"
    assert sets["Worker"].restart_policy == "OnFailure"


def test_mpijob_launcher_and_worker_settings() -> None:
    job = _job(
        MPIJob,
        tolerations=[GPU_TAINT],
        launcher=Role(
            image="registry.example.com/ml/launcher:1",
            env={"LAUNCHER_ONLY": "1"},
            tolerations=[],
            node_selector={"pool": "cpu"},
            restart_policy="Never",
        ),
        worker=Role(command=["/usr/sbin/sshd", "-De", "-f", "/home/u/.sshd_config"]),
    )
    body, pj = render(job, **TAINTS, **MPI)
    replicas = body["spec"]["mpiReplicaSpecs"]
    launcher, worker = replicas["Launcher"], replicas["Worker"]
    assert launcher["restartPolicy"] == "Never" and worker["restartPolicy"] == "OnFailure"
    assert _main(launcher)["image"] == "registry.example.com/ml/launcher:1"
    # The launcher's wait for the workers' sshd runs ssh from the launcher's image.
    (wait,) = [c for c in _spec(launcher)["initContainers"] if c["name"] == "wait-for-hosts"]
    assert wait["image"] == "registry.example.com/ml/launcher:1"
    assert _main(worker)["image"] == "registry.example.com/ml/img:1"
    assert "tolerations" not in _spec(launcher)
    assert _spec(launcher)["nodeSelector"] == {"pool": "cpu"}
    assert [t["key"] for t in _spec(worker)["tolerations"]] == ["nvidia.com/gpu"]
    assert _env(launcher)["LAUNCHER_ONLY"] == "1" and "LAUNCHER_ONLY" not in _env(worker)
    # A worker command of its own replaces the operator's `/usr/sbin/sshd -De`.
    assert _main(worker)["command"] == ["/usr/sbin/sshd", "-De", "-f", "/home/u/.sshd_config"]
    ej = effective_job(pj, body)
    assert any("as the worker role says: /usr/sbin/sshd -De -f" in n for n in ej.notes)
    # The launcher's variable is not forwarded to the ranks (-x): it is the launcher's own.
    assert "LAUNCHER_ONLY" not in _main(launcher)["command"]


def test_mpijob_workers_restart_never_when_asked_as_mpi_operator_defaults() -> None:
    body, pj = render(_job(MPIJob, worker=Role(restart_policy="Never")), **MPI)
    assert body["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] == "Never"
    assert body["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] == "OnFailure"
    sets = {ps.role: ps for ps in effective_job(pj, body).pod_sets}
    assert sets["Worker"].restart_policy == "Never"
    assert sets["Launcher"].restart_policy == "OnFailure"


def test_a_role_image_per_accelerator_is_the_cluster_s() -> None:
    ps = Role(
        image={"cuda": "registry.example.com/ml/a:cu", "rocm": "registry.example.com/ml/a:ro"}
    )
    body, _ = render(_job(TFJob, ps=ps), accelerator="rocm")
    assert _main(body["spec"]["tfReplicaSpecs"]["PS"])["image"] == "registry.example.com/ml/a:ro"


def test_the_gang_counts_each_role_with_its_own_resources() -> None:
    job = _job(TFJob, ps=Role(replicas=2, resources=CPU), chief=Role(resources=GPU))
    body, pj = render(job)
    ej = effective_job(pj, body)
    assert ej.gang is not None and ej.gang.min_member == 2 + 1 + 2
    requests = ej.gang.requests
    assert requests["cpu"] == 2 * 4 + 8 + 2 * 8
    assert requests["nvidia.com/gpu"] == 8 + 2 * 8
    assert ej.gpus() == 24


# --- Refused: each bad value, with its message -------------------------------------------------


@pytest.mark.parametrize(
    ("make", "says"),
    [
        # A role the kind does not have.
        (
            lambda: _job(PyTorchJob, chief=Role()),
            "chief: unknown field; a PyTorchJob's roles with settings of their own are "
            "master= (Master); the other pods run the job's settings",
        ),
        (
            lambda: _job(TFJob, master=Role()),
            "master: unknown field; a TFJob's roles with settings of their own are chief= "
            "(Chief), ps= (PS), evaluator= (Evaluator)",
        ),
        (
            lambda: _job(XGBoostJob, worker=Role()),
            "worker: unknown field; an XGBoostJob's roles with settings of their own are "
            "master= (Master)",
        ),
        # Always, on any role.
        (
            lambda: _job(TFJob, ps=Role(restart_policy="Always")),
            "'Always' restarts the role even after it exits 0, so the job never succeeds",
        ),
        (
            lambda: _job(TFJob, ps=Role(restart_policy="Sometimes")),
            "restart_policy: must be one of 'OnFailure', 'Never' or 'ExitCode'",
        ),
        # Variables the operator sets, per kind.
        (
            lambda: _job(TFJob, ps=Role(env={"TF_CONFIG": "{}"})),
            "ps.env: TF_CONFIG may not be set: the Training Operator sets it",
        ),
        (
            lambda: _job(PyTorchJob, master=Role(env={"MASTER_ADDR": "x"})),
            "master.env: MASTER_ADDR may not be set: the Training Operator sets it",
        ),
        (
            lambda: _job(PyTorchJob, master=Role(env={"PET_NNODES": "2"})),
            "master.env: PET_NNODES may not be set",
        ),
        (
            lambda: _job(XGBoostJob, master=Role(env={"CUDA_VISIBLE_DEVICES": "0"})),
            "master.env: CUDA_VISIBLE_DEVICES may not be set: the device plugin assigns",
        ),
        (
            lambda: _job(PaddleJob, mode="ps", ps=Role(env={"PADDLE_MASTER": "x"})),
            "ps.env: PADDLE_MASTER may not be set: the Training Operator sets it",
        ),
        (
            lambda: _job(MPIJob, launcher=Role(env={"OMPI_MCA_orte_default_hostfile": "x"})),
            "launcher.env: OMPI_MCA_orte_default_hostfile may not be set: Open MPI reads OMPI_*",
        ),
        (
            lambda: _job(
                TFJob,
                env_refs={"TOKEN": SecretKey(secret="s", key="k")},
                ps=Role(env={"TOKEN": "x"}),
            ),
            "ps.env: TOKEN is read from a Secret or ConfigMap by the job's env_refs",
        ),
        # PyTorchJob's Master.
        (
            lambda: _job(PyTorchJob, master=Role(replicas=2)),
            "master.replicas is 2; a PyTorchJob has one Master",
        ),
        (
            lambda: _job(PyTorchJob, master=Role(resources=CPU)),
            "master.resources.gpu 0 differs from resources.gpu 8: torchrun starts the same "
            "number of processes on every node",
        ),
        (
            lambda: _job(
                PyTorchJob,
                master=Role(env={"A": "1"}),
                elastic={"min_nodes": 1},
            ),
            "master= sets the Master pod, which an elastic job has none of",
        ),
        # MPIJob's roles.
        (
            lambda: _job(MPIJob, worker=Role(restart_policy="ExitCode")),
            "worker.restart_policy 'ExitCode' is refused by mpi-operator, which accepts "
            "'Never' and 'OnFailure' only",
        ),
        (
            lambda: _job(MPIJob, launcher=Role(restart_policy="ExitCode")),
            "launcher.restart_policy 'ExitCode' is refused by mpi-operator",
        ),
        (
            lambda: _job(MPIJob, worker=Role(resources=CPU)),
            "worker.resources is the job's own: the workers run the job's settings; set "
            "resources= on the job",
        ),
        (
            lambda: _job(MPIJob, worker=Role(replicas=3)),
            "worker.replicas is the job's own: the workers run the job's settings; set nodes=",
        ),
        (
            lambda: _job(MPIJob, worker=Role(node_selector={"a": "b"})),
            "worker.node_selector is the job's own",
        ),
        (
            lambda: _job(MPIJob, worker=Role(tolerations=[])),
            "worker.tolerations is the job's own",
        ),
        (
            lambda: _job(MPIJob, worker=Role(env={"A": "1"})),
            "worker.env would reach only the workers' sshd: the ranks are started over ssh",
        ),
        (
            lambda: _job(MPIJob, env={"A": "1"}, launcher=Role(env={"A": "2"})),
            "launcher.env: A is in the job's env too, which mpirun forwards to every rank with "
            "the launcher's value (-x A)",
        ),
    ],
)
def test_bad_role_settings_are_refused_with_why(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value), str(e.value)


def _plan_problems(job: Any, **cluster: Any) -> list[str]:
    with pytest.raises(DefinitionError) as e:
        planned(job, **cluster)
    return [f"{p.field}: {p.message}" for p in e.value.problems]


def test_a_role_image_key_must_name_a_cluster_or_accelerator() -> None:
    ps = Role(image={"cuda": "registry.example.com/ml/a:1", "tpu": "registry.example.com/ml/a:2"})
    (msg,) = _plan_problems(_job(TFJob, ps=ps), accelerator="cuda")
    assert msg.startswith("ps.image.tpu: ps.image key 'tpu' is neither a cluster nor an")


def test_a_role_image_missing_for_the_cluster_is_refused() -> None:
    ps = Role(image={"rocm": "registry.example.com/ml/a:1"})
    (msg,) = _plan_problems(_job(TFJob, ps=ps), accelerator="cuda")
    assert msg == (
        "ps.image: no ps.image for cluster 'c' (accelerator 'cuda'); add a key for the cluster "
        "or 'cuda'"
    )


def test_paddle_operator_roles_never_restart() -> None:
    job = _job(PaddleJob, mode="ps", ps=Role(resources=CPU, restart_policy="OnFailure"))
    msgs = _plan_problems(job, operators=["training-operator", "paddle-operator"])
    assert any(
        m.startswith(
            "ps.restart_policy: on cluster 'c' (paddle-operator): 'OnFailure' would restart a "
            "failing ps pod forever on paddle-operator, which has no backoff limit"
        )
        for m in msgs
    ), msgs


# --- Policy: what a role could widen ------------------------------------------------------------


def _policy(job: Any, *platform: Any, **cluster: Any) -> list[str]:
    c = Cluster(name="c", server="https://c", gpus_per_node=8, **cluster)
    defs = [
        Definition(c, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"], max_gpus=64), P, "platform"),
        *(Definition(o, P, "platform") for o in platform),
        Definition(job, "jobs/t/j.py", "t", files={"train.py": "x"}),
    ]
    found = policy_problems(defs)
    return [f"{p.field}: {p.message}" for p in found]


REGISTRY = Policy(registries=["registry.example.com/ml/"])


@pytest.mark.parametrize(
    ("field", "rtype_kw"),
    [
        ("ps", {"kind": TFJob}),
        ("master", {"kind": PyTorchJob}),
        ("master", {"kind": XGBoostJob}),
        ("launcher", {"kind": MPIJob}),
        ("worker", {"kind": MPIJob}),
    ],
)
def test_a_role_image_from_another_registry_is_refused(field: str, rtype_kw: Any) -> None:
    job = _job(rtype_kw["kind"], **{field: Role(image="docker.io/evil/miner:1")})
    found = _policy(job, REGISTRY, **MPI)
    assert found and all(
        f.startswith(f"{field}.image: image 'docker.io/evil/miner:1'") for f in found
    )
    assert "is not from an allowed registry" in found[0]


def test_a_role_image_for_another_accelerator_is_refused() -> None:
    job = _job(TFJob, ps=Role(image="registry.example.com/ml/tf:2.18-rocm6.2"))
    (msg,) = _policy(job, accelerator="cuda")
    assert msg.startswith(
        "ps.image: image 'registry.example.com/ml/tf:2.18-rocm6.2' is built for rocm but "
        "cluster 'c' runs cuda"
    )


def test_a_role_toleration_the_cluster_does_not_allow_is_refused() -> None:
    job = _job(TFJob, ps=Role(tolerations=[CPU_TAINT]))
    (msg,) = _policy(job, tolerations=[GPU_TAINT])
    assert msg.startswith(
        "ps.tolerations[0]: toleration 'pool=cpu:NoSchedule' is not allowed on cluster 'c'"
    )
    assert _policy(job, tolerations=[GPU_TAINT, CPU_TAINT]) == []


def test_launcher_gpus_beyond_a_node_are_refused() -> None:
    job = _job(MPIJob, launcher=Role(resources=Resources(cpu=8, memory="8Gi", gpu=16)))
    found = _policy(job, **MPI)
    assert found[0] == ("launcher.resources.gpu: 16 exceeds the 8 GPUs per node of cluster 'c'"), (
        found
    )


def test_role_gpus_count_against_the_per_job_cap() -> None:
    job = _job(
        XGBoostJob,
        nodes=3,
        resources=CPU,
        master=Role(resources=Resources(cpu=8, memory="8Gi", gpu=8)),
    )
    (msg,) = _policy(job, Policy(max_gpus_per_job=4))
    assert "8 GPUs (Master 1 × 8) exceed the per-job cap of 4" in msg, msg


def test_a_role_gang_larger_than_its_queue_is_refused() -> None:
    job = _job(TFJob, nodes=1, resources=CPU, ps=Role(replicas=9, resources=GPU))
    found = _policy(job)
    assert any(
        "the gang of 10 pods needs 72 nvidia.com/gpu on cluster 'c', but queue 'q' can hold "
        "at most 64" in f
        for f in found
    ), found


def test_a_role_variable_the_network_profile_sets_is_refused() -> None:
    rdma = NetworkProfile(name="rdma", env={"NCCL_IB_DISABLE": "0"})
    defs = [
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8), P, "platform"),
        Definition(rdma, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"], network_profiles=["rdma"]), P, "platform"),
        Definition(
            _job(TFJob, network="rdma", ps=Role(env={"NCCL_IB_DISABLE": "1"})),
            "jobs/t/j.py",
            "t",
            files={"train.py": "x"},
        ),
    ]
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    (p,) = e.value.problems
    assert p.field == "ps.env"
    assert p.message.startswith(
        "NCCL_IB_DISABLE is set by network profile 'rdma' (jobs/platform/p.py) to '0' for every "
        "pod on that network; remove it from ps.env"
    )


def test_an_mpi_worker_command_on_the_host_network_is_refused() -> None:
    host = NetworkProfile(name="host", host_network=True)
    defs = [
        Definition(
            Cluster(
                name="c",
                server="https://c",
                gpus_per_node=8,
                operators=["training-operator", "mpi-operator"],
            ),
            P,
            "platform",
        ),
        Definition(host, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"], network_profiles=["host"]), P, "platform"),
        Definition(
            _job(MPIJob, network="host", worker=Role(command=["/usr/sbin/sshd", "-De"])),
            "jobs/t/j.py",
            "t",
            files={"train.py": "x"},
        ),
    ]
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    msgs = [(p.field, p.message) for p in e.value.problems]
    assert any(
        f == "worker.command"
        and "trainkit starts the workers' sshd on port 2222 itself, and worker.command would "
        "replace it"
        in m
        for f, m in msgs
    ), msgs


def test_without_roles_nothing_changes() -> None:
    # The job's own settings still reach every role (a Role() changes nothing but its size).
    plain, _ = render(_job(TFJob, ps=Role()))
    (cp,) = planned(_job(TFJob, ps=Role())).clusters
    (again,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "TFJob"]
    assert plain == again
    ps, worker = plain["spec"]["tfReplicaSpecs"]["PS"], plain["spec"]["tfReplicaSpecs"]["Worker"]
    assert _main(ps)["image"] == _main(worker)["image"]
    assert ps["restartPolicy"] == worker["restartPolicy"] == "OnFailure"


# --- Rehearsal -------------------------------------------------------------------------------


def test_a_rehearsal_says_every_node_runs_the_master_s_settings(tmp_path: Any) -> None:
    from trainkit.rehearse.definitions import targets_for
    from trainkit.rehearse.launch import plan_rehearsal

    platform = [
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8), P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
    ]

    def plan(master: Role | None) -> Any:
        j = _job(XGBoostJob, resources=CPU, master=master)
        d = Definition(j, "jobs/t/j.py", "t", line=3, files={"train.py": "print(1)\n"})
        (t,) = targets_for(d, platform)
        return plan_rehearsal(t, workspace=tmp_path, log_dir=tmp_path / "l", master_port=4000)

    said = plan(Role(env={"SAVE": "1"}))
    # The role's variable is the definition's: passed on as written, not recomputed.
    assert all(dict(launch.env)["SAVE"] == "1" for launch in said.launches)
    note = (
        "master=Role(...): every node here runs the Master's image, command, args and env; on "
        "the cluster the Workers run the job's own"
    )
    assert note in said.changes
    # A Master only larger than the Workers changes nothing a rehearsal runs.
    assert note not in plan(Role(resources=GPU)).changes


def test_explain_prints_each_role_s_nodes_tolerations_and_variables() -> None:
    from trainkit.explain import format_text

    job = _job(
        TFJob,
        tolerations=[GPU_TAINT],
        ps=Role(node_selector={"pool": "cpu"}, tolerations=[CPU_TAINT], env={"A": "1"}),
    )
    body, pj = render(job, **TAINTS)
    text = format_text([effective_job(pj, body)])
    ps = text[text.index("  PS × 1") : text.index("  Worker × 2")]
    worker = text[text.index("  Worker × 2") :]
    assert "    nodes      pool=cpu\n" in ps
    assert "    tolerates  pool=cpu:NoSchedule\n" in ps
    assert "    env        A" in ps and "(role ps)" in ps
    assert "    nodes " not in worker
    assert "    tolerates  nvidia.com/gpu:NoSchedule\n" in worker


# --- Property: whatever a role overrides lands on its pods, the rest is the job's ------------------

_POLICIES = ("OnFailure", "Never", "ExitCode")
_TF_FIELDS = {"chief": "Chief", "ps": "PS", "evaluator": "Evaluator"}


@st.composite
def _roles(draw: Any, many: bool) -> Role:
    kw: dict[str, Any] = {}
    if many:
        kw["replicas"] = draw(st.integers(1, 3))
    if draw(st.booleans()):
        kw["image"] = f"registry.example.com/ml/role:{draw(st.integers(1, 9))}"
    if draw(st.booleans()):
        kw["resources"] = Resources(
            cpu=draw(st.integers(1, 8)), memory="8Gi", gpu=draw(st.integers(0, 8))
        )
    if draw(st.booleans()):
        kw["command"] = ["python3", "-m", draw(st.sampled_from(["a", "b"]))]
    if draw(st.booleans()):
        kw["args"] = draw(st.lists(st.sampled_from(["-x", "-y", "--z"]), max_size=2))
    if draw(st.booleans()):
        kw["env"] = {f"V{i}": str(i) for i in range(draw(st.integers(0, 2)))}
    if draw(st.booleans()):
        kw["restart_policy"] = draw(st.sampled_from(_POLICIES))
    if draw(st.booleans()):
        kw["node_selector"] = {"pool": draw(st.sampled_from(["cpu", "gpu"]))}
    if draw(st.booleans()):
        kw["tolerations"] = draw(st.sampled_from([[], [CPU_TAINT], [GPU_TAINT, CPU_TAINT]]))
    return Role(**kw)


@st.composite
def _tfjobs(draw: Any) -> TFJob:
    roles = {f: draw(st.none() | _roles(many=f == "ps")) for f in _TF_FIELDS}
    return _job(
        TFJob,
        nodes=draw(st.integers(1, 3)),
        env={"V0": "job", "JOB": "1"},
        args=["--job"],
        tolerations=[GPU_TAINT],
        restart_policy=draw(st.sampled_from(_POLICIES)),
        **roles,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job=_tfjobs())
def test_each_role_runs_its_own_settings_and_the_job_s_otherwise(job: TFJob) -> None:
    body, pj = render(job, **TAINTS)
    replicas = body["spec"]["tfReplicaSpecs"]
    ej = effective_job(pj, body)
    sets = {ps.role: ps for ps in ej.pod_sets}
    gpus = 0
    for rtype, replica in replicas.items():
        role = job.role(rtype)
        main, spec = _main(replica), _spec(replica)
        given = role if role is not None else Role()
        assert main["image"] == (given.image or job.image)
        assert replica["restartPolicy"] == (given.restart_policy or job.restart_policy)
        pod_policy = "Never" if replica["restartPolicy"] == "ExitCode" else replica["restartPolicy"]
        assert sets[rtype].restart_policy == pod_policy
        expected_cmd = given.command or ["python3", "/workspace/train.py"]
        assert main["command"] == expected_cmd
        assert main.get("args", []) == (given.args if given.args is not None else job.args)
        env = _env(replica)
        for k, v in {**job.env, **given.env}.items():
            assert env[k] == v
        assert spec.get("nodeSelector", {}) == (given.node_selector or {})
        tolerated = given.tolerations if given.tolerations is not None else job.tolerations
        assert [t.get("key") for t in spec.get("tolerations", [])] == [t.key for t in tolerated]
        res = given.resources or job.resources
        assert sets[rtype].gpus("nvidia.com/gpu") == res.gpu
        gpus += replica["replicas"] * res.gpu
    # The job's GPUs and its gang count each role with its own resources.
    assert ej.gpus() == gpus
    assert ej.gang is not None and ej.gang.min_member == sum(
        r["replicas"] for r in replicas.values()
    )
    assert ej.gang.requests.get("nvidia.com/gpu", 0) == gpus


# --- A role's own volumes (Role(volumes=[...])) ---------------------------------------------------

LOGS = EmptyDir(name="ps-logs", path="/var/log/ps", size="1Gi")
CERTS = SecretVolume(name="ps-certs", secret="ps-certs", path="/etc/ps")
DATA = Volume(claim="data", path="/mnt/data", read_only=True)


def _mounts(replica: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in _main(replica).get("volumeMounts") or []}


def test_a_role_s_volumes_are_mounted_on_its_pods_only_after_the_job_s() -> None:
    job = _job(TFJob, volumes=[DATA], ps=Role(volumes=[LOGS]))
    body, pj = render(job)
    replicas = body["spec"]["tfReplicaSpecs"]
    ps, worker = replicas["PS"], replicas["Worker"]
    assert [v["name"] for v in _spec(ps)["volumes"]][-2:] == ["data", "ps-logs"]
    assert _mounts(ps)["ps-logs"] == "/var/log/ps" and _mounts(ps)["data"] == "/mnt/data"
    assert {"emptyDir": {"sizeLimit": "1Gi"}, "name": "ps-logs"} in _spec(ps)["volumes"]
    assert "ps-logs" not in _mounts(worker) and "data" in _mounts(worker)
    # `trainkit explain` lists it on the PS pods alone.
    from trainkit.explain import format_text

    text = format_text([effective_job(pj, body)])
    shown = text[text.index("  PS × 1") : text.index("  Worker × 2")]
    assert "volume     /var/log/ps ← the node's disk (1Gi)" in shown, shown
    assert "/var/log/ps" not in text[text.index("  Worker × 2") :]


def test_an_mpi_launcher_that_runs_no_ranks_gets_its_own_volumes_only() -> None:
    scratch = EmptyDir(name="scratch", path="/scratch", size="10Gi")
    job = _job(
        MPIJob, volumes=[DATA], launcher=Role(volumes=[LOGS]), worker=Role(volumes=[scratch])
    )
    body, _ = render(job, **MPI)
    launcher, worker = body["spec"]["mpiReplicaSpecs"].values()
    assert "ps-logs" in _mounts(launcher) and "data" not in _mounts(launcher)
    assert "scratch" not in _mounts(launcher)
    assert {"data", "scratch"} <= set(_mounts(worker)) and "ps-logs" not in _mounts(worker)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: _job(TFJob, volumes=[DATA], ps=Role(volumes=[DATA])),
            "on the ps pods, with the job's volumes and ps.volumes: volumes mount more than "
            "once at /mnt/data",
        ),
        (
            lambda: _job(
                TFJob,
                volumes=[LOGS],
                ps=Role(volumes=[EmptyDir(name="ps-logs", path="/tmp/x", size="1Gi")]),
            ),
            "on the ps pods, with the job's volumes and ps.volumes: two volumes are named "
            "'ps-logs'",
        ),
        (
            lambda: _job(
                PyTorchJob,
                master=Role(volumes=[EmptyDir(name="w", path="/workspace", size="1Gi")]),
            ),
            "master.volumes[0] at '/workspace' would hide the script",
        ),
        (
            lambda: _job(
                MPIJob, launcher=Role(volumes=[EmptyDir(name="ssh-auth", path="/x", size="1Gi")])
            ),
            "volume 'ssh-auth' has the name of a volume mpi-operator adds",
        ),
    ],
)
def test_bad_role_volumes_are_refused_with_why(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value), str(e.value)


def test_a_role_volume_is_held_to_the_team_s_grants_at_the_role_s_field() -> None:
    # A Secret, a node directory and a CSI driver widen what the pods can read: each needs
    # the grant a job-wide volume needs, and the problem names the role's field.
    job = _job(
        TFJob,
        ps=Role(
            volumes=[
                CERTS,
                HostPath(name="scratch", host_path="/scratch", path="/scratch"),
                CsiVolume(name="blob", driver="blob.csi.example.com", path="/mnt/blob"),
            ]
        ),
    )
    team = Team(name="t", queues=["q"], max_gpus=64)
    found = _problems(job, team)
    assert any(f.startswith("ps.volumes[0]: team 't' may not mount") for f in found), found
    assert any(
        f.startswith("ps.volumes[1]: team 't' may not mount the node's /scratch") for f in found
    ), found
    assert any(f.startswith("ps.volumes[2]:") and "blob.csi.example.com" in f for f in found), found
    granted = team.model_copy(
        update={"secrets": {"ps-certs": ["ca.crt"]}, "host_paths": ["/scratch"]}
    )
    assert _problems(job, granted, csi_drivers=["blob.csi.example.com"]) == []


def _problems(job: Any, team: Team, **cluster: Any) -> list[str]:
    """What synth reports for ``job`` of ``team``: the plan's problems, else the policy's."""
    c = Cluster(name="c", server="https://c", gpus_per_node=8, **cluster)
    defs = [
        Definition(c, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(team, P, "platform"),
        Definition(job, "jobs/t/j.py", "t", files={"train.py": "x"}),
    ]
    try:
        plan = build_plan(defs)
    except DefinitionError as e:
        return [f"{p.field}: {p.message}" for p in e.problems]
    groups = render_groups(plan)
    found = check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    return [f"{p.field}: {p.message}" for p in found]


# --- A role's own security contexts ----------------------------------------------------------------


def test_a_role_s_security_contexts_replace_the_job_s_on_its_pods_only() -> None:
    job = _job(
        TFJob,
        security_context=SecurityContext(run_as_user=1000),
        ps=Role(
            security_context=SecurityContext(run_as_user=2000, fs_group=2000),
            container_security_context=ContainerSecurityContext(allow_privilege_escalation=False),
        ),
    )
    body, pj = render(job)
    ps, worker = body["spec"]["tfReplicaSpecs"]["PS"], body["spec"]["tfReplicaSpecs"]["Worker"]
    assert _spec(ps)["securityContext"] == {"fsGroup": 2000, "runAsUser": 2000}
    assert _main(ps)["securityContext"] == {"allowPrivilegeEscalation": False}
    assert _spec(worker)["securityContext"] == {"runAsUser": 1000}
    assert "securityContext" not in _main(worker)
    from trainkit.explain import format_text

    text = format_text([effective_job(pj, body)])
    shown = text[text.index("  PS × 1") : text.index("  Worker × 2")]
    assert "security   pod: runAsUser 2000; fsGroup 2000" in shown, shown
    assert "security   pod: runAsUser 1000" in text[text.index("  Worker × 2") :]


def test_an_mpi_launcher_s_own_user_reads_the_ssh_key_it_can() -> None:
    # mpi-operator mounts the key 0644 under a non-root ssh_dir: root's ssh refuses it there.
    job = _job(
        MPIJob,
        ssh_dir="/home/mpiuser/.ssh",
        security_context=SecurityContext(run_as_user=1000),
        launcher=Role(security_context=SecurityContext(run_as_user=1000)),
    )
    body, _ = render(job, **MPI)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]
    assert _spec(launcher)["securityContext"] == {"runAsUser": 1000}
    with pytest.raises(ModelError) as e:
        _job(
            MPIJob,
            ssh_dir="/home/mpiuser/.ssh",
            security_context=SecurityContext(run_as_user=1000),
            launcher=Role(security_context=SecurityContext(run_as_user=0)),
        )
    assert "launcher's security context: run_as_user=0 (root) with ssh_dir" in str(e.value)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: Role(
                security_context=SecurityContext(run_as_non_root=True),
                container_security_context=ContainerSecurityContext(run_as_user=0),
            ),
            "run_as_non_root=True while the containers run as run_as_user=0",
        ),
        (
            lambda: _job(
                TFJob,
                container_security_context=ContainerSecurityContext(run_as_user=0),
                ps=Role(security_context=SecurityContext(run_as_non_root=True)),
            ),
            "ps, with the job's security contexts: run_as_non_root=True while the containers "
            "run as run_as_user=0",
        ),
    ],
)
def test_bad_role_security_contexts_are_refused_with_why(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value), str(e.value)


def test_a_role_s_unconfined_profile_needs_the_team_s_grant() -> None:
    job = _job(TFJob, ps=Role(security_context=SecurityContext(seccomp="Unconfined")))
    team = Team(name="t", queues=["q"], max_gpus=64)
    (found,) = _problems(job, team)
    assert found.startswith(
        "ps.security_context.seccomp: team 't' may not use the seccomp profile 'Unconfined'"
    ), found
    assert _problems(job, team.model_copy(update={"seccomp_profiles": ["Unconfined"]})) == []


def test_a_role_s_app_armor_profile_is_refused_on_paddle_operator() -> None:
    own = ContainerSecurityContext(app_armor="RuntimeDefault")
    job = _job(PaddleJob, mode="ps", ps=Role(container_security_context=own))
    team = Team(name="t", queues=["q"], max_gpus=64)
    (found,) = _problems(job, team, operators=["paddle-operator"])
    assert found == (
        "ps.container_security_context.app_armor: on cluster 'c' (paddle-operator): "
        "paddle-operator's CRD has no appArmorProfile, so the API server would drop it "
        "silently; leave it out here (the node's default profile applies)"
    )
