"""Elastic PyTorchJobs that would meet in one rendezvous: the same server and run id."""

from __future__ import annotations

from ..errors import Problem
from ..model import PyTorchJob
from .jobs import PlannedJob
from .problems import problem

# torch/distributed/run.py: --rdzv-id defaults to "none"; training-operator v1.9.4
# pkg/controller.v1/pytorch/elastic.go sets PET_RDZV_ID only when rdzvId is given.
TORCHRUN_DEFAULT_ID = "none"
_IN_CLUSTER_SUFFIXES = (".svc.cluster.local", ".svc")


def _server(p: PlannedJob, host: str, port: int) -> tuple[str, str, int]:
    """Where a Worker's ``host`` leads: a Service name resolves in the job's own namespace
    (the pod's DNS search list), ``svc.namespace`` and ``….svc`` in its cluster; any other
    name is one server for every cluster that reaches it."""
    for suffix in _IN_CLUSTER_SUFFIXES:
        if host.endswith(suffix):
            return (p.cluster.name, host.removesuffix(suffix), port)
    labels = host.split(".")
    if len(labels) == 1:
        return (p.cluster.name, f"{host}.{p.namespace}", port)
    if len(labels) == 2:
        return (p.cluster.name, host, port)
    return ("", host, port)


def check_rendezvous(placed: list[PlannedJob], problems: list[Problem]) -> None:
    """Two elastic jobs whose Workers rendezvous at one server (``rdzv_host``) under one run
    id would join each other's worker group (torchrun's etcd and c10d rendezvous key the
    group by the run id alone), so one team's job could stop or feed another's. Each pair
    must differ in server or ``rdzv_id``; a job placed on several clusters that reach one
    server also meets itself there."""
    seen: dict[tuple[str, str, int, str], PlannedJob] = {}
    for p in placed:
        job = p.job
        if not isinstance(job, PyTorchJob) or job.elastic is None:
            continue
        elastic = job.elastic
        if elastic.rdzv_host is None or elastic.rdzv_port is None:
            continue  # the store is on the job's own first Worker
        run_id = elastic.rdzv_id or TORCHRUN_DEFAULT_ID
        key = (*_server(p, elastic.rdzv_host, elastic.rdzv_port), run_id)
        first = seen.setdefault(key, p)
        if first is p:
            continue
        fd = first.definition
        if fd is p.definition:
            message = (
                f"rdzv_host {elastic.rdzv_host}:{elastic.rdzv_port} is one server for clusters "
                f"{first.cluster.name!r} and {p.cluster.name!r}, where the job runs twice: both "
                "copies' Workers would join one worker group; give an rdzv_host inside each "
                "cluster (a Service name), or place the job on one cluster"
            )
            problems.append(problem(p.definition, message, "elastic.rdzv_host"))
            continue
        given = (
            f"rdzv_id {run_id!r}"
            if elastic.rdzv_id
            else f"no rdzv_id (torchrun's default id {run_id!r})"
        )
        problems.append(
            problem(
                p.definition,
                f"rdzv_host {elastic.rdzv_host}:{elastic.rdzv_port} with {given} is the "
                f"rendezvous of {first.kind} {first.object_name!r} ({fd.file}:{fd.line}) of team "
                f"{fd.team!r} too: their Workers would join one worker group; give this job an "
                "rdzv_id no other job uses at that server (e.g. its own name and run)",
                "elastic.rdzv_id",
            )
        )
