"""MPIJob rehearsal: the launcher's mpirun against a hostfile of this machine (Open MPI from
the system packages; `make setup` and CI install it, and these tests never skip)."""

from __future__ import annotations

import io
import socket
from pathlib import Path
from typing import Any

import pytest

from trainkit import Cluster, MPIJob, RehearsalError, Resources, Script, Team
from trainkit.load import Definition
from trainkit.rehearse import rehearse, targets_for
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


def _target(**kw: Any) -> MPIJobTarget:
    fields: dict[str, Any] = {
        "name": "mpi",
        "image": "img:1",
        "script": Script.file("mpi_allreduce.py"),
        "nodes": 3,
        "resources": Resources(cpu=4, memory="8Gi", gpu=2),
        "env": {"RENDEZVOUS_PORT": str(_free_port()), "FORWARDED": "yes"},
    }
    job = MPIJob(**(fields | kw))
    script = (FIXTURES / "mpi_allreduce.py").read_text(encoding="utf-8")
    d = Definition(job, "jobs/team/mpi.py", "team", line=3, files={"mpi_allreduce.py": script})
    (target,) = targets_for(d, PLATFORM)
    assert isinstance(target, MPIJobTarget)
    return target


def test_mpirun_runs_every_rank_here_with_the_job_s_env_forwarded() -> None:
    out = io.StringIO()
    report = rehearse(_target(), timeout=120, out=out)
    text = out.getvalue()
    # 3 workers × 2 slots on the cluster, capped to 2 × 2 here: 4 ranks, sum 1+2+3+4.
    assert (report.nodes, report.procs_per_node) == (2, 2)
    for rank in range(4):
        assert f"rank {rank}/4 sum 10 forwarded yes" in text
    (command,) = report.commands
    assert command.startswith("mpirun --allow-run-as-root -np 4 -x RENDEZVOUS_PORT -x FORWARDED ")
    changes = "\n".join(report.changes)
    assert "hostfile: the 2 host(s) of 2 slot(s) are this machine (localhost slots=4)" in changes
    assert "resources.gpu 2 → 0" in changes


def test_a_failing_rank_fails_the_rehearsal() -> None:
    target = _target(env={"RENDEZVOUS_PORT": "not-a-port"})
    with pytest.raises(RehearsalError) as e:
        rehearse(target, timeout=120, out=io.StringIO())
    message = str(e.value)
    assert "MPIJob 'mpi': node 0 (pod mpi-launcher) exited with code 1; mpi-operator would" in (
        message
    )
    assert "ValueError: Port could not be cast to integer value as 'not-a-port'" in message


def test_horovodrun_is_expressible_but_not_rehearsed() -> None:
    job = MPIJob(
        name="hvd", image="img:1", script=Script.file("t.py"), launch="horovodrun",
        resources=Resources(cpu=1, memory="1Gi"),
    )  # fmt: skip
    d = Definition(job, "jobs/team/hvd.py", "team", line=3, files={"t.py": "pass\n"})
    with pytest.raises(RehearsalError, match="Horovod's last release predates the torch"):
        targets_for(d, PLATFORM)
