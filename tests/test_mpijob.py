"""MPIJob (kubeflow.org/v2beta1, mpi-operator v0.8): the model's rules, the rendered object,
the pods the operator makes of it, and conformance with the upstream CRD."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainkit import (
    Capacity,
    Cluster,
    ModelError,
    MPIJob,
    NetworkProfile,
    Queue,
    Resources,
    Role,
    Script,
    SecretEnv,
    SecretKey,
    Team,
    Volume,
)
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

GPU = "nvidia.com/gpu"


def cluster(**kw: Any) -> Cluster:
    fields: dict[str, Any] = {
        "name": "c",
        "server": "https://c",
        "gpus_per_node": 8,
        "operators": ["training-operator", "mpi-operator", "trainer"],
    }
    return Cluster(**(fields | kw))


def job(**kw: Any) -> MPIJob:
    fields: dict[str, Any] = {
        "name": "ds",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": Resources(cpu=8, memory="64Gi", gpu=8),
    }
    return MPIJob(**(fields | kw))


def plan(j: MPIJob, *, c: Cluster | None = None, extra: tuple[Any, ...] = ()) -> Any:
    defs = [
        Definition(c or cluster(), "jobs/platform/p.py", "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), "jobs/platform/p.py", "platform"),
        Definition(
            Team(
                name="t",
                queues=["q"],
                secrets={"hf": ["token"]},
                # The team is granted every profile the test declares.
                network_profiles=[e.name for e in extra if isinstance(e, NetworkProfile)],
            ),
            "jobs/platform/p.py",
            "platform",
        ),
        *(Definition(e, "jobs/platform/p.py", "platform") for e in extra),
        Definition(j, "jobs/t/j.py", "t", files={"train.py": "print(1)"} if j.script else {}),
    ]
    return build_plan(defs)


def render(j: MPIJob, **kw: Any) -> tuple[dict[str, Any], Any]:
    (cp,) = plan(j, **kw).clusters
    (r,) = [r for r in _cluster_objects(cp) if r.body["kind"] == "MPIJob"]
    return r.body, cp.jobs[0]


def container(body: dict[str, Any], role: str) -> dict[str, Any]:
    c: dict[str, Any] = body["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["containers"][0]
    return c


# --- the model ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"launcher": Role(replicas=2)}, "an MPIJob has exactly one launcher"),
        ({"procs_per_node": 3}, "procs_per_node 3 does not divide the 8 GPUs of a worker"),
        ({"env": {"OMPI_MCA_btl": "tcp"}}, "OMPI_MCA_btl may not be set: Open MPI reads OMPI_*"),
        ({"env": {"K_MPI_JOB_ROLE": "x"}}, "mpi-operator sets it to launcher or worker"),
        (
            {"env_refs": {"OMPI_X": SecretKey(secret="s", key="k")}},
            "OMPI_X may not be set: Open MPI reads OMPI_*",
        ),
        ({"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "the container runtime reads it"),
        ({"launch": "deepspeed", "mpi": "Intel"}, "use mpi='OpenMPI' or launch='mpirun'"),
        ({"launcher": Role(command=["sh"])}, "the job's script or command runs on the launcher"),
        (
            {
                "launcher_as_worker": True,
                "launcher": Role(resources=Resources(cpu=1, memory="1Gi")),
            },
            "launcher.resources is ignored with launcher_as_worker=True",
        ),
        (
            {"volumes": [Volume(claim="ssh-auth", path="/mnt/a")]},
            "claim 'ssh-auth' has the name of a volume mpi-operator adds",
        ),
        (
            {"volumes": [Volume(claim="data", path="/etc/mpi/x")]},
            "where mpi-operator mounts the hostfile (/etc/mpi)",
        ),
        (
            {"ssh_dir": "/home/mpi/.ssh", "volumes": [Volume(claim="d", path="/home/mpi/.ssh")]},
            "where mpi-operator mounts the ssh keys",
        ),
        (
            {"name": "a" * 55, "nodes": 100},
            "the operator's Service '" + "a" * 55 + "-worker-99' would exceed 63 characters; "
            "shorten the name to 53 characters",
        ),
        ({"restart_policy": "ExitCode"}, "restart_policy"),
        (
            {"env_from": [SecretEnv(secret="w"), SecretEnv(secret="w")]},
            "env_from lists Secret 'w' twice",
        ),
        ({"script": Script.file("t.py"), "command": ["x"]}, "not both"),
        # mpi-operator creates the launcher, the only Job with a backoff limit and deadline,
        # once every worker is Ready, and never recreates a failed worker pod
        # (pkg/controller/mpi_job_controller.go syncHandler, getOrCreateWorker).
        (
            {"wait_for_workers": True},
            "wait_for_workers=True could hold the workers' GPUs forever: mpi-operator creates "
            "the launcher",
        ),
        # syncHandler creates a missing launcher again until the MPIJob's status records the
        # end (pkg/controller/mpi_job_controller.go): a launcher deleted at once reruns it.
        (
            {"ttl_seconds": 0},
            "ttl_seconds 0 is below 60: it could delete the launcher before mpi-operator "
            "records that the job ended, and the operator would create it again and run the "
            "job a second time; use at least 60, or drop ttl_seconds",
        ),
        ({"ttl_seconds": 59}, "ttl_seconds 59 is below 60: it could delete the launcher"),
        ({"ttl_seconds": -1}, "ttl_seconds -1 is below 60"),
        ({"ttl_seconds": 2**31}, "must be at most 2147483647"),
        ({"ttl_after_finished": 60}, "did you mean 'ttl_seconds'?"),
    ],
)
def test_bad_fields_are_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        job(**fields)
    assert says in str(e.value)


def test_slots_ranks_and_launcher_resources() -> None:
    j = job()
    assert (j.slots, j.ranks) == (8, 16)
    assert j.launcher_resources.model_dump() == {**Resources(cpu="1", memory="2Gi").model_dump()}
    j = job(launcher_as_worker=True, procs_per_node=4)
    assert (j.slots, j.ranks) == (4, 12)
    assert j.launcher_resources is j.resources
    assert job(resources=Resources(cpu=2, memory="1Gi")).slots == 1


# --- the plan -----------------------------------------------------------------------------------


def test_a_cluster_without_mpi_operator_refuses_the_job() -> None:
    with pytest.raises(DefinitionError) as e:
        plan(job(), c=cluster(operators=["training-operator", "trainer"]))
    (p,) = e.value.problems
    assert p.field == "clusters"
    assert "cluster 'c' does not run mpi-operator, which MPIJobs need" in p.message
    assert "the Training Operator's MPIJob v1 is another API under the same CRD name" in p.message
    assert "Cluster.operators in jobs/platform/p.py lists 'trainer', 'training-operator'" in (
        p.message
    )


def test_the_default_operators_keep_pytorchjobs_and_trainjobs() -> None:
    assert Cluster(name="c", server="https://c", gpus_per_node=8).operators == [
        "training-operator",
        "trainer",
    ]
    with pytest.raises(ModelError, match="operators lists a controller twice"):
        cluster(operators=["trainer", "trainer"])


# --- rendering ----------------------------------------------------------------------------------


def test_deepspeed_job_renders_the_operator_s_fields_and_the_launch_command() -> None:
    body, _ = render(job(launch="deepspeed", env={"HF_HOME": "/cache"}))
    spec = body["spec"]
    assert body["apiVersion"] == "kubeflow.org/v2beta1"
    assert {k: spec[k] for k in ("slotsPerWorker", "runLauncherAsWorker", "mpiImplementation")} == {
        "slotsPerWorker": 8,
        "runLauncherAsWorker": False,
        "mpiImplementation": "OpenMPI",
    }
    assert spec["launcherCreationPolicy"] == "AtStartup"
    assert spec["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3, "queue": "q"}
    launcher, worker = container(body, "Launcher"), container(body, "Worker")
    cmd = launcher["command"]
    assert cmd[:5] == ["deepspeed", "--hostfile", "/etc/mpi/hostfile", "--launcher", "openmpi"]
    assert shlex.split(cmd[cmd.index("--launcher_args") + 1]) == [
        "--allow-run-as-root", "-x", "HF_HOME",
    ]  # fmt: skip
    assert cmd[cmd.index("--master_addr") + 1] == "ds-worker-0.ds.t.svc"
    assert cmd[-1] == "/workspace/train.py"
    # Workers keep no command: mpi-operator starts sshd only in a container without one.
    assert "command" not in worker and "args" not in worker
    assert launcher["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert worker["resources"]["limits"] == {"cpu": "8", "memory": "64Gi", GPU: "8"}
    assert spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert spec["mpiReplicaSpecs"]["Launcher"]["replicas"] == 1


def test_mpirun_forwards_env_for_open_mpi_only() -> None:
    refs = {"TOKEN": SecretKey(secret="hf", key="token")}
    body, _ = render(job(env={"A": "1"}, env_refs=refs, args=["--lr", "1"]))
    launcher = container(body, "Launcher")
    assert launcher["command"] == [
        "mpirun", "--allow-run-as-root", "-np", "16", "--hostfile", "/etc/mpi/hostfile",
        "-x", "A", "-x", "TOKEN", "python3", "/workspace/train.py",
    ]  # fmt: skip
    assert launcher["args"] == ["--lr", "1"]
    body, _ = render(job(mpi="Intel", launcher_args=["-ppn", "8"]))
    assert container(body, "Launcher")["command"] == [
        "mpirun", "-np", "16", "-ppn", "8", "python3", "/workspace/train.py",
    ]  # fmt: skip
    body, _ = render(job(launch="horovodrun"))
    assert container(body, "Launcher")["command"][:5] == [
        "horovodrun", "-np", "16", "--hostfile", "/etc/mpi/hostfile",
    ]  # fmt: skip


def test_launcher_as_worker() -> None:
    body, _ = render(job(launcher_as_worker=True, launch="deepspeed"))
    spec = body["spec"]
    assert spec["runLauncherAsWorker"] is True
    assert spec["launcherCreationPolicy"] == "AtStartup"
    assert spec["runPolicy"]["schedulingPolicy"]["minAvailable"] == 3
    launcher = container(body, "Launcher")
    assert launcher["resources"]["limits"][GPU] == "8"
    cmd = launcher["command"]
    assert cmd[cmd.index("--master_addr") + 1] == "ds-launcher.ds.t.svc"


def test_a_launcher_that_runs_no_ranks_gets_no_devices_shm_or_claims() -> None:
    rdma = NetworkProfile(
        name="rdma", capabilities=["IPC_LOCK"], resources={"rdma/hca": 1}, env={"NCCL_X": "1"}
    )
    j = job(network="rdma", shm_size="1Gi", volumes=[Volume(claim="data", path="/mnt/d")])
    body, _ = render(j, extra=(rdma,))
    launcher, worker = container(body, "Launcher"), container(body, "Worker")
    assert "rdma/hca" not in launcher["resources"]["limits"]
    assert "securityContext" not in launcher
    assert [m["mountPath"] for m in launcher["volumeMounts"]] == ["/workspace/train.py"]
    assert worker["resources"]["limits"]["rdma/hca"] == "1"
    assert [m["mountPath"] for m in worker["volumeMounts"]] == [
        "/workspace/train.py", "/dev/shm", "/mnt/d",
    ]  # fmt: skip
    # The profile's variable reaches the ranks only if the launcher forwards it.
    assert {"name": "NCCL_X", "value": "1"} in launcher["env"]
    assert launcher["command"][6:8] == ["-x", "NCCL_X"]


def test_the_launcher_role_overrides_resources_and_node_selector() -> None:
    role = Role(resources=Resources(cpu=2, memory="4Gi"), node_selector={"pool": "cpu"})
    body, _ = render(job(launcher=role, node_selector={"pool": "gpu"}))
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert launcher["nodeSelector"] == {"pool": "cpu"}
    assert worker["nodeSelector"] == {"pool": "gpu"}
    assert launcher["containers"][0]["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}


def test_ttl_seconds_goes_to_the_run_policy_and_explain_says_what_it_deletes() -> None:
    body, pj = render(job(ttl_seconds=600))
    assert body["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 600
    notes = effective_job(pj, body).notes
    assert (
        "the launcher's Job, its pod and logs are deleted 600 s after the job ends; the MPIJob "
        "and its status stay until its file is removed"
    ) in notes


def test_without_ttl_seconds_the_launcher_stays() -> None:
    body, pj = render(job())
    assert "ttlSecondsAfterFinished" not in body["spec"]["runPolicy"]
    assert not [n for n in effective_job(pj, body).notes if "deleted" in n]


def test_the_default_scheduler_gets_no_gang() -> None:
    body, _ = render(job(), c=cluster(scheduler="default"))
    assert "schedulingPolicy" not in body["spec"]["runPolicy"]
    assert "scheduling.volcano.sh/queue-name" not in body["metadata"]["annotations"]


# --- the pods the operator makes ----------------------------------------------------------------


def test_effective_pods_carry_the_operator_s_env_and_sshd() -> None:
    body, pj = render(job(env={"A": "1"}))
    ej = effective_job(pj, body)
    launcher, worker = ej.pod_sets
    env = {e.name: (e.value, e.source) for e in launcher.env}
    assert env["A"] == ("1", "job")
    assert env["OMPI_MCA_orte_default_hostfile"] == ("/etc/mpi/hostfile", "mpi-operator")
    assert env["OMPI_MCA_orte_set_default_slots"] == ("8", "mpi-operator")
    assert env["NVIDIA_VISIBLE_DEVICES"] == ("", "mpi-operator")
    assert {e.name: e.value for e in worker.env}["K_MPI_JOB_ROLE"] == "worker"
    assert worker.main["command"] == ["/usr/sbin/sshd", "-De"]
    assert (ej.nodes, ej.world_size, ej.gpus()) == (2, 16, 16)
    assert not launcher.runs_ranks and worker.runs_ranks
    assert ej.gang is not None and ej.gang.min_member == 3
    assert ej.gang.requests[GPU] == 16


# --- conformance --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


names = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)


@st.composite
def mpijobs(draw: Any) -> MPIJob:
    gpu = draw(st.sampled_from([0, 1, 2, 4, 8]))
    mpi = draw(st.sampled_from(["OpenMPI", "Intel", "MPICH"]))
    script = draw(st.booleans())
    as_worker = draw(st.booleans())
    small = Role(resources=Resources(cpu=2, memory="1Gi"))
    return MPIJob(
        name=draw(names),
        run=draw(st.none() | st.integers(1, 99)),
        image="img:1",
        script=Script.file("train.py") if script else None,
        command=None if script else draw(st.none() | st.just(["mpirun", "-np", "2", "x"])),
        args=draw(st.lists(st.sampled_from(["--a", "1", "x y"]), max_size=3)),
        launch=draw(st.sampled_from(["mpirun", "deepspeed", "horovodrun"]))
        if mpi == "OpenMPI"
        else "mpirun",
        launcher_args=draw(st.lists(st.sampled_from(["--mca", "btl", "tcp"]), max_size=3)),
        env=draw(st.dictionaries(st.sampled_from(["A", "B_C", "NCCL_DEBUG"]), names, max_size=2)),
        nodes=draw(st.integers(1, 16)),
        procs_per_node=draw(
            st.none() | st.sampled_from([d for d in (1, 2, 4, 8) if not gpu or gpu % d == 0])
        ),
        resources=Resources(cpu=draw(st.sampled_from([1, 4, "500m"])), memory="8Gi", gpu=gpu),
        launcher=Role() if as_worker else draw(st.sampled_from([Role(), small])),
        launcher_as_worker=as_worker,
        mpi=mpi,
        ssh_dir=draw(st.sampled_from(["/root/.ssh", "/home/mpiuser/.ssh"])),
        restart_policy=draw(st.sampled_from(["OnFailure", "Never"])),
        clean_pods=draw(st.sampled_from(["Running", "All", "None"])),
        deadline_seconds=draw(st.none() | st.integers(1, 10**6)),
        ttl_seconds=draw(st.none() | st.integers(60, 2**31 - 1)),
        shm_size=draw(st.none() | st.just("1Gi")),
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(j=mpijobs(), volcano=st.booleans())
def test_anything_the_model_accepts_renders_a_valid_mpijob(
    crdset: Any, j: MPIJob, volcano: bool
) -> None:
    (cp,) = plan(j, c=cluster(scheduler="volcano" if volcano else "default")).clusters
    for rendered in _cluster_objects(cp):
        text = yaml.safe_dump(rendered.body)
        assert validate_text(text, rendered.path, crdset) == [], rendered.body
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "MPIJob"]
    ej = effective_job(cp.jobs[0], body)
    assert ej.world_size == j.ranks
    assert body["spec"]["slotsPerWorker"] == j.slots
    gang = body["spec"]["runPolicy"].get("schedulingPolicy")
    if volcano:
        assert gang["minAvailable"] == j.nodes + 1
    else:
        assert gang is None


def test_runtimes_go_only_where_trainer_runs() -> None:
    from trainkit import ClusterTrainingRuntime

    rt = ClusterTrainingRuntime(name="rt", image="img:1")
    mpi_only = cluster(name="m", operators=["mpi-operator"])
    defs = [
        Definition(cluster(), "jobs/platform/p.py", "platform"),
        Definition(mpi_only, "jobs/platform/p.py", "platform"),
        Definition(rt, "jobs/platform/p.py", "platform"),
    ]
    by_cluster = {cp.cluster.name: cp.runtimes for cp in build_plan(defs).clusters}
    assert [r.runtime.name for r in by_cluster["c"]] == ["rt"]
    assert by_cluster["m"] == ()
    named = ClusterTrainingRuntime(name="rt", image="img:1", clusters=["m"])
    with pytest.raises(DefinitionError) as e:
        build_plan([*defs[:2], Definition(named, "jobs/platform/p.py", "platform")])
    (p,) = e.value.problems
    assert (p.field, p.message) == (
        "clusters[0]",
        "cluster 'm' does not run trainer, which runtimes need; Cluster.operators in "
        "jobs/platform/p.py lists 'mpi-operator'; remove the cluster",
    )


@pytest.mark.parametrize("as_worker", [False, True])
def test_deepspeed_on_one_worker_still_runs_the_ranks_on_the_workers(as_worker: bool) -> None:
    # DeepSpeed's runner goes multi-node only with more than one host or --force_multi
    # (deepspeed/launcher/runner.py: multi_node_exec = (args.force_multi or
    # len(active_resources) > 1)); otherwise it starts every slot on the launcher itself, a
    # pod without the workers' GPUs.
    body, _ = render(job(launch="deepspeed", nodes=1, launcher_as_worker=as_worker))
    cmd = container(body, "Launcher")["command"]
    assert cmd.index("--force_multi") < cmd.index("/workspace/train.py")


def test_the_launcher_waits_for_the_workers_names_bounded() -> None:
    # mpi-operator creates the launcher at once (AtStartup) and publishes the workers' names
    # only once they are Ready (the Service's publishNotReadyAddresses is runLauncherAsWorker;
    # pkg/controller/mpi_job_controller.go newJobService); ssh fails at once on an unknown
    # name (ConnectionAttempts retries refused connections only), so mpirun would fail and the
    # launcher burn its backoff while the workers pull their image.
    body, _ = render(job(ssh_dir="/home/mpi/.ssh"))
    pod = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    (wait,) = pod["initContainers"]
    assert wait["name"] == "wait-for-hosts"
    assert wait["image"] == "img:1"
    assert wait["volumeMounts"] == [
        {"mountPath": "/etc/mpi", "name": "mpi-job-config", "readOnly": True},
        {"mountPath": "/home/mpi/.ssh", "name": "ssh-auth", "readOnly": True},
    ]
    assert wait["command"][:2] == ["sh", "-c"]
    assert wait["command"][3:] == ["wait-for-hosts", "/etc/mpi/hostfile", "900"]
    assert "ssh -o BatchMode=yes" in wait["command"][2]
    assert wait["resources"] == container(body, "Launcher")["resources"]
    assert "initContainers" not in body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
