"""MPI runtimes on Kubeflow Trainer v2.3 (mlPolicy.mpi) and the TrainJobs that use them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    ModelError,
    NetworkProfile,
    Queue,
    Resources,
    RuntimeMPI,
    Script,
    Team,
    TrainJob,
)
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

GPU = "nvidia.com/gpu"


def runtime(**kw: Any) -> ClusterTrainingRuntime:
    fields: dict[str, Any] = {
        "name": "ds",
        "image": "img:1",
        "nodes": 2,
        "resources": Resources(cpu=8, memory="64Gi", gpu=4),
        "env": {"RT": "1"},
        "mpi": RuntimeMPI(),
        "run_as_user": 1000,
        "fs_group": 1000,
    }
    return ClusterTrainingRuntime(**(fields | kw))


def trainjob(**kw: Any) -> TrainJob:
    fields: dict[str, Any] = {"name": "tj", "runtime": "ds", "script": Script.file("train.py")}
    return TrainJob(**(fields | kw))


def plan(rt: ClusterTrainingRuntime, tj: TrainJob, scheduler: str = "volcano", *extra: Any) -> Any:
    c = Cluster(name="c", server="https://c", gpus_per_node=8, scheduler=scheduler)
    # The team is granted every profile the test declares.
    granted = [e.name for e in extra if isinstance(e, NetworkProfile)]
    p = "jobs/platform/p.py"
    defs = [
        Definition(c, "jobs/platform/p.py", "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), "jobs/platform/p.py", "platform"),
        Definition(Team(name="t", queues=["q"], network_profiles=granted), p, "platform"),
        Definition(rt, "jobs/platform/r.py", "platform"),
        *(Definition(e, "jobs/platform/p.py", "platform") for e in extra),
        Definition(tj, "jobs/t/j.py", "t", files={"train.py": "x"} if tj.script else {}),
    ]
    return build_plan(defs)


def rendered(rt: ClusterTrainingRuntime, tj: TrainJob, scheduler: str = "volcano", *extra: Any):
    (cp,) = plan(rt, tj, scheduler, *extra).clusters
    objs = {r.body["kind"]: r.body for r in _cluster_objects(cp)}
    return objs["ClusterTrainingRuntime"], objs["TrainJob"], cp.jobs[0]


def jobs_of(body: dict[str, Any]) -> dict[str, Any]:
    return {r["name"]: r for r in body["spec"]["template"]["spec"]["replicatedJobs"]}


def test_the_runtime_has_a_launcher_and_sshd_nodes() -> None:
    rt, _, _ = rendered(runtime(), trainjob(), "default")
    assert rt["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "mpi"
    assert rt["spec"]["mlPolicy"] == {
        "numNodes": 1,  # the launcher's count
        "mpi": {
            "numProcPerNode": 1,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/root/.ssh",
            "runLauncherAsNode": False,
        },
    }
    jobset = rt["spec"]["template"]["spec"]
    assert jobset["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["launcher"]}
    assert jobset["network"] == {"publishNotReadyAddresses": True}
    jobs = jobs_of(rt)
    node, launcher = jobs["node"], jobs["launcher"]
    assert (node["template"]["spec"]["parallelism"], node["template"]["spec"]["completions"]) == (
        2,
        2,
    )
    assert "metadata" not in node["template"]  # not the trainer: spec.trainer goes elsewhere
    assert launcher["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
    }
    # Without Volcano the launcher waits for the nodes to accept ssh connections.
    assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]
    (nc,) = node["template"]["spec"]["template"]["spec"]["containers"]
    assert nc["command"] == ["/usr/sbin/sshd", "-De"]
    assert nc["readinessProbe"] == {"tcpSocket": {"port": 22}}
    assert nc["resources"]["limits"][GPU] == "4"
    lpod = launcher["template"]["spec"]["template"]["spec"]
    assert lpod["restartPolicy"] == "OnFailure"
    assert lpod["containers"][0]["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}


def test_with_volcano_the_launcher_does_not_wait_for_the_gang() -> None:
    rt, _, _ = rendered(runtime(), trainjob())
    # Trainer's PodGroup counts every pod: a launcher waiting for ready nodes would keep the
    # gang (and so the nodes) from ever being admitted.
    assert "dependsOn" not in jobs_of(rt)["launcher"]
    assert rt["spec"]["podGroupPolicy"] == {"volcano": {}}


def test_launcher_as_node_gets_the_runtime_resources_and_one_node_less() -> None:
    rt, tj, pj = rendered(runtime(nodes=3, mpi=RuntimeMPI(launcher_as_node=True)), trainjob())
    jobs = jobs_of(rt)
    assert jobs["node"]["template"]["spec"]["parallelism"] == 2
    launcher = jobs["launcher"]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert launcher["resources"]["limits"][GPU] == "4"
    assert tj["spec"]["trainer"]["command"][:4] == ["mpirun", "--allow-run-as-root", "-np", "12"]
    ej = effective_job(pj, tj, rt)
    assert [(ps.role, ps.count, ps.runs_ranks) for ps in ej.pod_sets] == [
        ("launcher", 1, True),
        ("node", 2, True),
    ]
    assert ej.world_size == 12


def test_the_trainjob_runs_mpirun_and_says_its_nodes() -> None:
    rdma = NetworkProfile(name="ib", env={"NCCL_IB_HCA": "mlx5"})
    rt, tj, pj = rendered(runtime(network="ib"), trainjob(env={"JOB": "2"}), "volcano", rdma)
    trainer = tj["spec"]["trainer"]
    assert trainer["command"] == [
        "mpirun", "--allow-run-as-root", "-np", "8", "--hostfile", "/etc/mpi/hostfile",
        "-x", "RT", "-x", "JOB", "-x", "NCCL_IB_HCA", "python3", "/workspace/train.py",
    ]  # fmt: skip
    # The MPI plugin sizes the node job from spec.trainer.numNodes only.
    assert trainer["numNodes"] == 2
    patched = [
        r["name"]
        for r in tj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
            "replicatedJobs"
        ]
    ]
    assert patched == ["node", "launcher"]
    ej = effective_job(pj, tj, rt)
    launcher, node = ej.pod_sets
    env = {e.name: e.value for e in launcher.env}
    assert env["OMPI_MCA_orte_set_default_slots"] == "4"
    assert env["JOB"] == "2" and env["RT"] == "1"
    assert not launcher.runs_ranks and node.count == 2
    assert (ej.nodes, ej.world_size, ej.gpus()) == (2, 8, 8)
    assert ej.gang is not None and ej.gang.min_member == 3


def test_a_launcher_as_node_runtime_takes_the_trainjob_s_resources_on_every_host() -> None:
    # With runLauncherAsNode Trainer merges resourcesPerNode into the node job as well as the
    # launcher (pkg/runtime/core/trainingruntime.go newRuntimeInfo, isMPILauncherAsNode), and
    # the TrainJob's env too (plugins/jobset/builder.go Trainer); image, command and args
    # reach the launcher only.
    big = Resources(cpu=16, memory="128Gi", gpu=8)
    rt_def = runtime(nodes=3, mpi=RuntimeMPI(launcher_as_node=True))
    rt, tj, pj = rendered(rt_def, trainjob(resources=big, env={"JOB": "2"}))
    assert tj["spec"]["trainer"]["resourcesPerNode"]["limits"][GPU] == "8"
    ej = effective_job(pj, tj, rt)
    launcher, node = ej.pod_sets
    assert launcher.gpus(GPU) == node.gpus(GPU) == 8
    assert {e.name: e.value for e in node.env}["JOB"] == "2"
    assert node.main["command"] == ["/usr/sbin/sshd", "-De"]
    assert launcher.main["command"][0] == "mpirun"
    assert ej.world_size == 3 * 8
    command = tj["spec"]["trainer"]["command"]
    assert command[command.index("-np") + 1] == "24"


@pytest.mark.parametrize("field", ["image", "resources"])
def test_image_and_resources_belong_to_the_runtime(field: str) -> None:
    value = "img:2" if field == "image" else Resources(cpu=1, memory="1Gi")
    with pytest.raises(DefinitionError) as e:
        plan(runtime(), trainjob(**{field: value}))
    (p,) = e.value.problems
    assert p.field == field
    assert f"a TrainJob's {field} would reach only the launcher" in p.message
    assert p.message.endswith("set it on the runtime")


def test_open_mpi_variables_are_refused() -> None:
    with pytest.raises(ModelError, match="OMPI_MCA_btl may not be set: Open MPI reads OMPI_"):
        trainjob(env={"OMPI_MCA_btl": "tcp"})
    with pytest.raises(ModelError, match="Trainer's MPI plugin sets the hostfile"):
        runtime(env={"OMPI_X": "1"})


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 6),
    gpu=st.sampled_from([0, 1, 4, 8]),
    slots=st.integers(1, 8),
    as_node=st.booleans(),
    job_nodes=st.none() | st.integers(1, 6),
    script=st.booleans(),
    volcano=st.booleans(),
)
def test_mpi_runtimes_and_trainjobs_validate(
    crdset: Any,
    nodes: int,
    gpu: int,
    slots: int,
    as_node: bool,
    job_nodes: int | None,
    script: bool,
    volcano: bool,
) -> None:
    rt_def = runtime(
        nodes=nodes,
        resources=Resources(cpu=2, memory="4Gi", gpu=gpu),
        mpi=RuntimeMPI(procs_per_node=slots, launcher_as_node=as_node, ssh_dir="/home/u/.ssh"),
    )
    tj_def = trainjob(
        nodes=job_nodes,
        script=Script.file("train.py") if script else None,
        command=None if script else ["deepspeed", "x.py"],
    )
    (cp,) = plan(rt_def, tj_def, "volcano" if volcano else "default").clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == [], r.body
    objs = {r.body["kind"]: r.body for r in _cluster_objects(cp)}
    ej = effective_job(cp.jobs[0], objs["TrainJob"], objs["ClusterTrainingRuntime"])
    n = job_nodes or nodes
    assert ej.pod_sets[1].count == (max(n - 1, 1) if as_node else n)
    expected_slots = gpu if slots == 1 and gpu > 1 else slots
    assert ej.world_size == expected_slots * (ej.pod_sets[1].count + (1 if as_node else 0))
    if script:
        command = objs["TrainJob"]["spec"]["trainer"]["command"]
        assert command[command.index("-np") + 1] == str(ej.world_size)


def test_an_mpi_runtime_starts_one_launcher_whatever_its_nodes() -> None:
    # Trainer sets the count of the replicated job labelled as the trainer ancestor (the
    # launcher) from mlPolicy.numNodes (pkg/runtime/core/trainingruntime.go newRuntimeInfo);
    # the MPI plugin resizes only the node job from the TrainJob's numNodes (plugins/mpi/
    # mpi.go EnforceMLPolicy). The runtime's nodes are the TrainJobs' default node count.
    rt, tj, pj = rendered(runtime(nodes=3), trainjob())
    assert rt["spec"]["mlPolicy"]["numNodes"] == 1
    assert jobs_of(rt)["node"]["template"]["spec"]["parallelism"] == 3
    assert tj["spec"]["trainer"]["numNodes"] == 3
    ej = effective_job(pj, tj, rt)
    assert [(ps.role, ps.count) for ps in ej.pod_sets] == [("launcher", 1), ("node", 3)]
    assert ej.gang is not None and ej.gang.min_member == 4


@pytest.mark.parametrize(("as_node", "nodes", "hosts"), [(False, 3, 3), (True, 2, 4)])
def test_the_effective_pods_count_the_launchers_mlpolicy_asks_for(
    as_node: bool, nodes: int, hosts: int
) -> None:
    # A runtime written elsewhere with numNodes 2 (as trainkit's were): two launchers, each
    # running mpirun over the same nodes; with runLauncherAsNode both are in the hostfile.
    rt, tj, pj = rendered(runtime(mpi=RuntimeMPI(launcher_as_node=as_node)), trainjob(nodes=3))
    rt["spec"]["mlPolicy"]["numNodes"] = 2
    ej = effective_job(pj, tj, rt)
    launcher, node = ej.pod_sets
    assert (launcher.count, node.count) == (2, nodes)
    assert ej.world_size == hosts * 4
    assert ej.gang is not None and ej.gang.min_member == 2 + nodes
    assert any("2 launchers" in n for n in ej.notes)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"run_as_user": None}, "run_as_user is not set"),
        ({"run_as_user": 0}, "run_as_user is 0 (root)"),
        ({"fs_group": None}, "fs_group is not set"),
    ],
)
def test_an_mpi_runtime_runs_as_a_user_that_can_use_the_ssh_key(
    fields: dict[str, Any], says: str
) -> None:
    # Trainer mounts the private key with mode 0640 (pkg/constants/constants.go
    # MPISSHPrivateKeyFileMode, applied in plugins/mpi/mpi.go): OpenSSH refuses a key its own
    # uid owns with any group bit (root owns the Secret's files), and without an fsGroup
    # another uid cannot read it at all.
    with pytest.raises(ModelError) as e:
        runtime(**fields)
    message = str(e.value)
    assert says in message
    assert "Trainer mounts the ssh private key with mode 0640" in message
    assert "e.g. run_as_user=1000, fs_group=1000" in message


def test_the_runtime_s_pods_run_as_its_user_and_group() -> None:
    rt, _, _ = rendered(runtime(), trainjob())
    for rjob in jobs_of(rt).values():
        pod = rjob["template"]["spec"]["template"]["spec"]
        assert pod["securityContext"] == {"runAsUser": 1000, "fsGroup": 1000}
    # A torch runtime may say them too; without them nothing is written.
    torch = ClusterTrainingRuntime(name="t", image="img:1", run_as_user=1000)
    assert torch.fs_group is None


@pytest.mark.parametrize("scheduler", ["volcano", "default"])
def test_the_launcher_starts_mpirun_once_the_nodes_accept_ssh(scheduler: str) -> None:
    # Without a gang the launcher job waits for the nodes to be Ready (JobSet dependsOn, as
    # Kubeflow's deepspeed-distributed runtime: manifests/base/runtimes). With Volcano it
    # cannot: Trainer's PodGroup counts every pod (plugins/volcano/volcano.go Build), so a
    # launcher not yet created would keep the gang from ever being admitted; it then waits
    # itself, bounded, for every host of the hostfile to accept ssh.
    rt, _, _ = rendered(runtime(mpi=RuntimeMPI(ssh_dir="/home/u/.ssh")), trainjob(), scheduler)
    launcher = jobs_of(rt)["launcher"]
    pod = launcher["template"]["spec"]["template"]["spec"]
    if scheduler == "default":
        assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]
        assert "initContainers" not in pod
        return
    assert "dependsOn" not in launcher
    (wait,) = pod["initContainers"]
    assert wait["volumeMounts"] == [
        {"mountPath": "/etc/mpi", "name": "mpi-hostfile", "readOnly": True},
        {"mountPath": "/home/u/.ssh", "name": "mpi-ssh-auth", "readOnly": True},
    ]
    assert wait["command"][3:] == ["wait-for-hosts", "/etc/mpi/hostfile", "900"]


@pytest.mark.parametrize("scheduler", ["volcano", "default"])
def test_the_nodes_readiness_check_may_wait(scheduler: str) -> None:
    # Trainer v2.3.0's deepspeed and mlx runtimes (manifests/base/runtimes/
    # {deepspeed,mlx}_distributed.yaml) check sshd on 2222 from 5 s after the node starts.
    rt, tj, pj = rendered(
        runtime(mpi=RuntimeMPI(ssh_port=2222, probe_delay=5)), trainjob(), scheduler
    )
    (nc,) = jobs_of(rt)["node"]["template"]["spec"]["template"]["spec"]["containers"]
    assert nc["readinessProbe"] == {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5}
    # explain shows it on the node pods.
    node = effective_job(pj, tj, rt).pod_sets[1]
    assert node.main["readinessProbe"]["initialDelaySeconds"] == 5
    # Without it nothing is written (the kubelet's default is 0).
    rt, _, _ = rendered(runtime(), trainjob(), scheduler)
    (nc,) = jobs_of(rt)["node"]["template"]["spec"]["template"]["spec"]["containers"]
    assert "initialDelaySeconds" not in nc["readinessProbe"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (-1, "probe_delay: must be at least 0"),
        (301, "probe_delay: must be at most 300"),
        (2.5, "probe_delay: must be a whole number"),
    ],
)
def test_a_bad_probe_delay_is_refused(value: object, says: str) -> None:
    with pytest.raises(ModelError) as e:
        RuntimeMPI(probe_delay=value)
    assert str(e.value).endswith(f"RuntimeMPI: {says}")
