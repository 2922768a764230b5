"""MPI on a host-network profile (issue 24): the pods share their node's network namespace,
where the node's own sshd listens on port 22. sshd, every ssh that reaches it (mpirun's,
DeepSpeed's, horovodrun's, the launcher's wait) and the readiness probe use another port, and
at most one of a job's MPI hosts runs on a node; shapes that cannot be pointed at the port are
refused."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    MPIJob,
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
from trainkit.explain import as_data
from trainkit.injected_env.mpi_operator_env import MPI_HOSTFILE
from trainkit.load import Definition
from trainkit.model.mpijob import HOST_NETWORK_SSH_PORT
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from trainkit.validate.pod_security import PodAllowance
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"
HOST = NetworkProfile(name="host", host_network=True, env={"NCCL_SOCKET_IFNAME": "bond0"})
PORT = HOST_NETWORK_SSH_PORT
HOSTNAME = "kubernetes.io/hostname"


def _objects(obj: Any, scheduler: str = "volcano", *platform: Any) -> dict[str, dict[str, Any]]:
    c = Cluster(
        name="c",
        server="https://c",
        gpus_per_node=8,
        scheduler=scheduler,
        operators=["training-operator", "mpi-operator", "trainer"],
    )
    defs = [
        Definition(c, P, "platform"),
        Definition(HOST, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"], network_profiles=[HOST.name]), P, "platform"),
        *(Definition(o, P, "platform") for o in platform),
        Definition(obj, "jobs/t/j.py", "t", files={"train.py": "x"} if obj.script else {}),
    ]
    (cp,) = build_plan(defs).clusters
    out = {r.body["kind"]: r.body for r in _cluster_objects(cp)}
    out["_planned"] = cp.jobs[0]
    return out


def _refused(obj: Any, *platform: Any) -> str:
    with pytest.raises(DefinitionError) as e:
        _objects(obj, "volcano", *platform)
    return "\n".join(str(p) for p in e.value.problems)


# --- MPIJob (mpi-operator v2beta1) ------------------------------------------------------------


# DeepSpeed's mpirun needs the nodes' interface named on the host network.
IFACE = ["--mca", "btl_tcp_if_include", "bond0"]


def mpijob(**kw: Any) -> MPIJob:
    fields: dict[str, Any] = {
        "name": "mj",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 3,
        "resources": Resources(cpu=8, memory="64Gi", gpu=8),
        "network": "host",
    }
    return MPIJob(**(fields | kw))


def _role(body: dict[str, Any], role: str) -> dict[str, Any]:
    spec: dict[str, Any] = body["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]
    return spec


def test_mpijob_workers_run_sshd_on_another_port_of_the_node() -> None:
    body = _objects(mpijob())["MPIJob"]
    worker = _role(body, "Worker")
    assert worker["hostNetwork"] is True
    c = worker["containers"][0]
    # sshd -p overrides the Port of any sshd_config the image has.
    assert c["command"] == ["/usr/sbin/sshd", "-De", "-p", str(PORT)]
    # Declared as a host port: no second pod using it lands on the node, of any job.
    assert c["ports"] == [
        {"name": "ssh", "containerPort": PORT, "hostPort": PORT, "protocol": "TCP"}
    ]


def test_mpijob_keeps_one_worker_per_node() -> None:
    worker = _role(_objects(mpijob())["MPIJob"], "Worker")
    (term,) = worker["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term == {
        "labelSelector": {
            "matchLabels": {
                "training.kubeflow.org/job-name": "mj",
                "training.kubeflow.org/job-role": "worker",
            }
        },
        "topologyKey": HOSTNAME,
    }


def test_mpijob_mpirun_ssh_reaches_the_port() -> None:
    body = _objects(mpijob())["MPIJob"]
    launcher = _role(body, "Launcher")
    cmd = launcher["containers"][0]["command"]
    # The operator's OMPI_MCA_plm_rsh_args env comes after the job's (it wins there), and
    # Open MPI 5 reads only the command line's: the port goes on the command line.
    i = cmd.index("plm_rsh_args")
    assert cmd[i - 1 : i + 2] == ["--mca", "plm_rsh_args", f"-p {PORT}"]
    # The launcher runs no sshd and stays off the host network.
    assert "hostNetwork" not in launcher
    (wait,) = launcher["initContainers"]
    assert f"ssh -p {PORT} " in wait["command"][2]


def test_mpijob_deepspeed_passes_the_port_to_its_mpirun() -> None:
    body = _objects(mpijob(launch="deepspeed", launcher_args=IFACE))["MPIJob"]
    cmd = _role(body, "Launcher")["containers"][0]["command"]
    launcher_args = shlex.split(cmd[cmd.index("--launcher_args") + 1])
    i = launcher_args.index("plm_rsh_args")
    assert launcher_args[i - 1 : i + 2] == ["--mca", "plm_rsh_args", f"-p {PORT}"]


def test_mpijob_horovodrun_gets_the_ssh_port() -> None:
    body = _objects(mpijob(launch="horovodrun"))["MPIJob"]
    cmd = _role(body, "Launcher")["containers"][0]["command"]
    assert cmd[cmd.index("--ssh-port") + 1] == str(PORT)


def test_mpijob_without_host_network_keeps_port_22_and_no_anti_affinity() -> None:
    body = _objects(mpijob(network=None))["MPIJob"]
    worker = _role(body, "Worker")
    assert "command" not in worker["containers"][0]
    assert "affinity" not in worker
    assert "plm_rsh_args" not in _role(body, "Launcher")["containers"][0]["command"]


def test_mpijob_effective_pods_and_explain_show_the_port() -> None:
    objs = _objects(mpijob())
    ej = effective_job(objs["_planned"], objs["MPIJob"])
    worker = next(ps for ps in ej.pod_sets if ps.role == "Worker")
    assert worker.main["command"] == ["/usr/sbin/sshd", "-De", "-p", str(PORT)]
    data = as_data(ej)
    (w,) = [p for p in data["pods"] if p["role"] == "Worker"]
    assert w["command"] == ["/usr/sbin/sshd", "-De", "-p", str(PORT)]
    assert any(f"port {PORT}" in n and "one per node" in n for n in data["notes"]), data["notes"]


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"mpi": "Intel"}, "mpi='Intel'"),
        ({"mpi": "MPICH"}, "mpi='MPICH'"),
        ({"script": None, "command": ["mpirun", "python3", "x.py"]}, "command"),
        ({"launcher_as_worker": True}, "launcher_as_worker"),
    ],
)
def test_mpijob_shapes_that_cannot_reach_the_port_are_refused(
    fields: dict[str, Any], text: str
) -> None:
    msg = _refused(mpijob(**fields))
    assert "host network" in msg and text in msg, msg
    assert "port 22" in msg, msg


def test_deepspeed_on_the_host_network_must_name_the_nodes_interface() -> None:
    """DeepSpeed's OpenMPIRunner adds `--mca btl_tcp_if_include eth0` unless launcher_args
    set it (deepspeed/launcher/multinode_runner.py); a node's interface need not be eth0."""
    msg = _refused(mpijob(launch="deepspeed"))
    assert "launcher_args" in msg and "eth0" in msg and "btl_tcp_if_include" in msg, msg
    body = _objects(mpijob(launch="deepspeed", launcher_args=["-mca", *IFACE[1:]]))["MPIJob"]
    cmd = _role(body, "Launcher")["containers"][0]["command"]
    launcher_args = shlex.split(cmd[cmd.index("--launcher_args") + 1])
    assert launcher_args[-3:] == ["-mca", "btl_tcp_if_include", "bond0"]


# --- Trainer v2.3 MPI runtimes ----------------------------------------------------------------


def runtime(**kw: Any) -> ClusterTrainingRuntime:
    mpi = kw.pop("mpi", RuntimeMPI(ssh_port=2222))
    fields: dict[str, Any] = {
        "name": "ds",
        "image": "img:1",
        "nodes": 2,
        "resources": Resources(cpu=8, memory="64Gi", gpu=4),
        "mpi": mpi,
        "run_as_user": 1000,
        "fs_group": 1000,
        "network": "host",
    }
    return ClusterTrainingRuntime(**(fields | kw))


def trainjob(**kw: Any) -> TrainJob:
    fields: dict[str, Any] = {"name": "tj", "runtime": "ds", "script": Script.file("train.py")}
    return TrainJob(**(fields | kw))


def _jobs(body: dict[str, Any]) -> dict[str, Any]:
    return {r["name"]: r for r in body["spec"]["template"]["spec"]["replicatedJobs"]}


def _pod(rjob: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = rjob["template"]["spec"]["template"]["spec"]
    return pod


def test_trainer_nodes_run_sshd_and_the_probe_on_the_runtime_port() -> None:
    rt = _objects(trainjob(), "volcano", runtime())["ClusterTrainingRuntime"]
    node = _pod(_jobs(rt)["node"])
    assert node["hostNetwork"] is True
    c = node["containers"][0]
    assert c["command"] == ["/usr/sbin/sshd", "-De", "-p", "2222"]
    assert c["readinessProbe"] == {"tcpSocket": {"port": 2222}}
    assert c["ports"] == [
        {"name": "ssh", "containerPort": 2222, "hostPort": 2222, "protocol": "TCP"}
    ]


def test_trainer_port_22_on_the_host_network_is_refused() -> None:
    msg = _refused(trainjob(), runtime(mpi=RuntimeMPI()))
    assert "ssh_port" in msg and "port 22" in msg and "host network" in msg, msg


def test_trainer_mpirun_and_the_wait_reach_the_port() -> None:
    tj = _objects(trainjob(), "volcano", runtime())
    cmd = tj["TrainJob"]["spec"]["trainer"]["command"]
    i = cmd.index("plm_rsh_args")
    assert cmd[i - 1 : i + 2] == ["--mca", "plm_rsh_args", "-p 2222"]
    launcher = _pod(_jobs(tj["ClusterTrainingRuntime"])["launcher"])
    (wait,) = launcher["initContainers"]
    assert "ssh -p 2222 " in wait["command"][2]


def test_trainer_keeps_one_node_of_a_trainjob_per_node() -> None:
    tj = _objects(trainjob(), "volcano", runtime())["TrainJob"]
    patch = tj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
    jobs = {r["name"]: r for r in patch["replicatedJobs"]}
    node = jobs["node"]["template"]["spec"]["template"]["spec"]
    (term,) = node["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {
        "labelSelector": {
            "matchLabels": {
                "jobset.sigs.k8s.io/jobset-name": tj["metadata"]["name"],
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
            }
        },
        "topologyKey": HOSTNAME,
    }
    # The launcher runs no ranks and stays off the host network: no rule for it.
    assert "affinity" not in jobs["launcher"]["template"]["spec"]["template"]["spec"]


def test_trainer_without_host_network_is_unchanged() -> None:
    objs = _objects(trainjob(), "volcano", runtime(network=None, mpi=RuntimeMPI()))
    node = _pod(_jobs(objs["ClusterTrainingRuntime"])["node"])
    assert node["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    assert "ports" not in node["containers"][0]
    assert "plm_rsh_args" not in objs["TrainJob"]["spec"]["trainer"]["command"]


@pytest.mark.parametrize(
    ("rt", "tj", "text"),
    [
        ({"mpi": RuntimeMPI(ssh_port=2222, launcher_as_node=True)}, {}, "launcher_as_node"),
        ({}, {"script": None, "command": ["mpirun", "python3", "x.py"]}, "command"),
    ],
)
def test_trainer_shapes_that_cannot_reach_the_port_are_refused(
    rt: dict[str, Any], tj: dict[str, Any], text: str
) -> None:
    msg = _refused(trainjob(**tj), runtime(**rt))
    assert "host network" in msg and text in msg, msg


# --- what Open MPI's mpirun does with the rendered command -------------------------------------


def test_the_rendered_mpirun_reaches_the_workers_sshd_port(tmp_path: Path) -> None:
    """The launcher's command as rendered, with the env effective/ says the launcher has (the
    operator's OMPI_* variables included), run by the Open MPI beside trainkit: its ssh (a
    stand-in that records its arguments) is asked for the hostfile's first worker on the
    port. Open MPI 5 reads neither OMPI_MCA_orte_default_hostfile nor OMPI_MCA_plm_rsh_args
    from the env, so both must be on the command line."""
    objs = _objects(mpijob(nodes=2))
    ej = effective_job(objs["_planned"], objs["MPIJob"])
    launcher = next(ps for ps in ej.pod_sets if ps.role == "Launcher")
    assert ej.hostfile is not None
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(ej.hostfile, encoding="utf-8")
    log = tmp_path / "ssh.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ssh = bin_dir / "ssh"
    ssh.write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(str(log))}\nexit 1\n')
    ssh.chmod(0o755)
    here = str(hostfile)
    env = {e.name: e.value.replace(MPI_HOSTFILE, here) for e in launcher.env if not e.value_from}
    env |= {"PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    cmd = [a.replace(MPI_HOSTFILE, here) for a in launcher.main["command"]]
    program = cmd.index("python3")
    argv = [*cmd[:program], "true"]
    # mpirun fails once ssh does; the bound only keeps a broken mpirun from hanging the suite.
    subprocess.run(argv, env=env, capture_output=True, timeout=300, check=False)
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    assert calls, "mpirun ran no ssh: it did not read the hostfile"
    # mpirun starts its daemons in parallel and stops at the first failure: every ssh it ran
    # went to a host of the hostfile, on the port.
    hosts = {line.split()[0] for line in ej.hostfile.splitlines()}
    for call in calls:
        args = shlex.split(call)
        assert args[args.index("-p") + 1] == str(PORT), call
        assert hosts & set(args), call


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(mpijob(), id="mpirun"),
        pytest.param(mpijob(launch="deepspeed", launcher_args=IFACE), id="deepspeed"),
        pytest.param(mpijob(launch="horovodrun"), id="horovodrun"),
        pytest.param(trainjob(), id="trainjob"),
    ],
)
@pytest.mark.parametrize("scheduler", ["volcano", "default"])
def test_host_network_objects_validate_against_their_crds(obj: Any, scheduler: str) -> None:
    c = Cluster(
        name="c",
        server="https://c",
        gpus_per_node=8,
        scheduler=scheduler,
        operators=["training-operator", "mpi-operator", "trainer"],
    )
    queues = ["q"] if scheduler == "volcano" else []
    defs = [
        Definition(c, P, "platform"),
        Definition(HOST, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=queues, network_profiles=[HOST.name]), P, "platform"),
        Definition(runtime(), P, "platform"),
        Definition(obj, "jobs/t/j.py", "t", files={"train.py": "x"}),
    ]
    (cp,) = build_plan(defs).clusters
    crdset = shared_crd_set()
    allowance = PodAllowance.from_profiles([HOST])
    for r in _cluster_objects(cp):
        found = validate_text(yaml.safe_dump(r.body), r.path, crdset, allowance=allowance)
        assert found == [], found
