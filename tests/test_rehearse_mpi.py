"""MPIJob rehearsal: the launcher's mpirun against a hostfile of this machine (Open MPI from
the system packages; `make setup` and CI install it, and these tests never skip)."""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from trainkit import Cluster, MPIJob, RehearsalError, Resources, Script, Team
from trainkit.load import Definition
from trainkit.rehearse import ReadOnly, rehearse, targets_for
from trainkit.rehearse.mpi import plan_mpi_rehearsal
from trainkit.rehearse.target import MPIJobTarget

FIXTURES = Path(__file__).resolve().parent / "data" / "rehearse"
PLATFORM = [
    Definition(
        Cluster(
            name="local", server="https://l", gpus_per_node=8, scheduler="default",
            operators=["mpi-operator"],
        ),
        "jobs/platform/p.py", "platform",
    ),
    Definition(Team(name="team", clusters=["local"]), "jobs/platform/p.py", "platform"),
]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _target(script: str = "mpi_allreduce.py", **kw: Any) -> MPIJobTarget:
    fields: dict[str, Any] = {
        "name": "mpi",
        "image": "img:1",
        "script": Script.file(script),
        "nodes": 3,
        "resources": Resources(cpu=4, memory="8Gi", gpu=2),
        "env": {"RENDEZVOUS_PORT": str(_free_port()), "FORWARDED": "yes"},
    }
    job = MPIJob(**(fields | kw))
    text = (FIXTURES / script).read_text(encoding="utf-8")
    d = Definition(job, "jobs/team/mpi.py", "team", line=3, files={script: text})
    (target,) = targets_for(d, PLATFORM)
    assert isinstance(target, MPIJobTarget)
    return target


def test_the_plan_caps_the_hosts_and_points_open_mpi_at_a_local_hostfile(tmp_path: Path) -> None:
    plan = plan_mpi_rehearsal(
        _target(), workspace=tmp_path / "ws", log_dir=tmp_path / "logs", master_port=0,
        nodes=None, procs_per_node=None, inherited={"PATH": os.environ["PATH"]},
        python="python3", file="jobs/team/mpi.py", read_only=ReadOnly(),
    )  # fmt: skip
    # 3 workers × 2 slots on the cluster, capped to 2 × 2 here: 4 ranks on this machine.
    assert (plan.nodes, plan.procs_per_node) == (2, 2)
    (launch,) = plan.launches
    assert launch.argv == (
        "mpirun", "--allow-run-as-root", "-np", "4", "-x", "RENDEZVOUS_PORT", "-x", "FORWARDED",
        "python3", str(tmp_path / "ws" / "mpi_allreduce.py"),
    )  # fmt: skip
    hostfile = Path(launch.env["OMPI_MCA_orte_default_hostfile"])
    assert hostfile.read_text(encoding="utf-8") == "localhost slots=4\n"
    assert launch.env["K_MPI_JOB_ROLE"] == "launcher"
    assert launch.env["FORWARDED"] == "yes"
    changes = "\n".join(plan.changes)
    assert "hostfile: the 2 host(s) of 2 slot(s) are this machine (localhost slots=4)" in changes
    assert "resources.gpu 2 → 0" in changes


def test_mpirun_runs_every_rank_here_with_the_job_s_env_forwarded() -> None:
    out = io.StringIO()
    report = rehearse(_target(), nodes=2, procs_per_node=1, timeout=120, out=out)
    assert (report.nodes, report.procs_per_node, report.world_size) == (2, 1, 2)
    text = out.getvalue()
    for rank in range(2):
        assert f"rank {rank}/2 sum 3 forwarded yes" in text


def test_a_failing_rank_fails_the_rehearsal() -> None:
    target = _target("mpi_fail.py")
    with pytest.raises(RehearsalError) as e:
        rehearse(target, nodes=1, procs_per_node=1, timeout=120, out=io.StringIO())
    message = str(e.value)
    assert "MPIJob 'mpi': node 0 (pod mpi-launcher) exited with code 3; mpi-operator would" in (
        message
    )
    assert "rank 0 fails" in message


@pytest.mark.parametrize(
    ("launch", "why"),
    [
        ("horovodrun", "Horovod's last release predates the torch a rehearsal runs"),
        ("deepspeed", "DeepSpeed finds its ranks through mpi4py"),
    ],
)
def test_horovod_and_deepspeed_launches_are_expressible_but_not_rehearsed(
    launch: str, why: str
) -> None:
    job = MPIJob(
        name="j", image="img:1", script=Script.file("t.py"), launch=launch,
        resources=Resources(cpu=1, memory="1Gi"),
    )  # fmt: skip
    d = Definition(job, "jobs/team/j.py", "team", line=3, files={"t.py": "pass\n"})
    with pytest.raises(RehearsalError) as e:
        targets_for(d, PLATFORM)
    assert f"a {launch} job is not rehearsed yet: {why}" in str(e.value)
    assert "rehearse it with launch='mpirun'" in str(e.value)
