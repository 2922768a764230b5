"""Trainer runtimes: where each exists, and which one a TrainJob's ``runtime=`` names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import Problem
from ..load import Definition
from ..model import Cluster, ClusterTrainingRuntime, NetworkProfile, TrainingRuntime
from ..model.platform import VOLCANO_DEFAULT_QUEUE
from .index import Index
from .problems import known, problem
from .references import check_clusters, on_cluster

__all__ = ["KUBEFLOW_RUNTIMES", "PlannedRuntime", "Runtimes", "collect_runtimes"]

Runtime = ClusterTrainingRuntime | TrainingRuntime

# The ClusterTrainingRuntimes Kubeflow Trainer v2.3 installs (manifests/base/runtimes/):
# the Trainer install and Argo CD would both own one of these names.
KUBEFLOW_RUNTIMES = frozenset(
    {
        "torch-distributed",
        "deepspeed-distributed",
        "mlx-distributed",
        "jax-distributed",
        "xgboost-distributed",
        "torchtune-llama3.2-1b",
        "torchtune-llama3.2-3b",
        "torchtune-qwen2.5-1.5b",
        "torch-distributed-with-cache",
    }
)


@dataclass(frozen=True)
class PlannedRuntime:
    """A runtime placed on one cluster."""

    runtime: Runtime
    definition: Definition
    cluster: Cluster
    namespace: str | None
    """The team's namespace for a TrainingRuntime; None for a ClusterTrainingRuntime."""
    queue: str | None
    """Default Volcano queue, or None (none declared, or no Volcano on the cluster)."""
    network: NetworkProfile | None = None
    """The network profile the runtime names, on this cluster."""

    @property
    def kind(self) -> str:
        return type(self.runtime).__name__

    def describe(self) -> str:
        where = (
            f" (team {self.runtime.team!r})" if isinstance(self.runtime, TrainingRuntime) else ""
        )
        return f"{self.kind} {self.runtime.name!r}{where}"


@dataclass(frozen=True)
class Runtimes:
    """Every runtime placed on every cluster, and the lookup TrainJobs use."""

    placed: tuple[PlannedRuntime, ...]

    def on(self, cluster: str) -> list[PlannedRuntime]:
        return [r for r in self.placed if r.cluster.name == cluster]

    def resolve(self, name: str, team: str, cluster: str) -> PlannedRuntime | str:
        """The runtime a TrainJob of ``team`` means on ``cluster``, or why there is none.

        The team's own TrainingRuntime wins over a ClusterTrainingRuntime of the same
        name (the order the Kubeflow SDK looks them up in).
        """
        here = self.on(cluster)
        for kind in (TrainingRuntime, ClusterTrainingRuntime):
            for r in here:
                if type(r.runtime) is kind and r.runtime.name == name:
                    if isinstance(r.runtime, TrainingRuntime) and r.runtime.team != team:
                        continue
                    return r
        elsewhere = sorted(
            {r.cluster.name for r in self.placed if r.runtime.name == name and _usable(r, team)}
        )
        if elsewhere:
            return (
                f"runtime {name!r} does not exist on cluster {cluster!r} (only on "
                f"{known(elsewhere)}); add the cluster to the runtime's clusters or "
                "choose other clusters"
            )
        foreign = [r for r in self.placed if r.runtime.name == name and not _usable(r, team)]
        if foreign:
            return (
                f"{foreign[0].describe()} belongs to another team; a TrainJob may use its "
                "own team's TrainingRuntimes and every ClusterTrainingRuntime"
            )
        usable = sorted({r.describe() for r in here if _usable(r, team)})
        return (
            f"unknown runtime {name!r} on cluster {cluster!r}; runtimes there: "
            f"{', '.join(usable) if usable else 'none'} (declare runtimes in jobs/platform/)"
        )


def _usable(r: PlannedRuntime, team: str) -> bool:
    return not isinstance(r.runtime, TrainingRuntime) or r.runtime.team == team


def collect_runtimes(
    defs: Sequence[Definition], index: Index, problems: list[Problem], warnings: list[Problem]
) -> Runtimes:
    """Place every runtime on its clusters; duplicates and bad references are problems."""
    from .access import check_access
    from .network import (
        check_extended_grant,
        check_network_grant,
        host_network_runtime,
        resolve_network,
    )

    # One name may be defined more than once on disjoint clusters: the same
    # runtime name with a CUDA image on NVIDIA clusters and a ROCm one on AMD.
    seen: dict[tuple[str, str, str, str], Definition] = {}
    placed: list[PlannedRuntime] = []
    warned: set[int] = set()
    for d in defs:
        rt = d.obj
        if not isinstance(rt, ClusterTrainingRuntime | TrainingRuntime):
            continue
        owner = rt.team if isinstance(rt, TrainingRuntime) else ""
        problems.extend(check_clusters(d, rt.clusters, index))
        if (
            isinstance(rt, ClusterTrainingRuntime)
            and rt.name in KUBEFLOW_RUNTIMES
            and id(d) not in warned
        ):
            warned.add(id(d))
            warnings.append(
                problem(
                    d,
                    f"Kubeflow Trainer's install ships a ClusterTrainingRuntime named "
                    f"{rt.name!r}; Argo CD and that install would both manage it, each "
                    "undoing the other's changes: give yours another name",
                    "name",
                )
            )
        namespace = None
        allowed = set(index.clusters)
        if isinstance(rt, TrainingRuntime):
            if rt.team not in index.teams:
                problems.append(
                    problem(
                        d, f"unknown team {rt.team!r}; declared teams: {known(index.teams)}", "team"
                    )
                )
                continue
            team = index.teams[rt.team]
            problems.extend(check_access(d, team))
            problems.extend(check_network_grant(d, rt.network, team, index))
            problems.extend(check_extended_grant(d, team, index))
            namespace = team.obj.target_namespace
            allowed = {c for c in index.clusters if on_cluster(team.obj, c)}
            for i, c in enumerate(rt.clusters or []):
                if c in index.clusters and c not in allowed:
                    problems.append(
                        problem(
                            d,
                            f"team {rt.team!r} does not run on cluster {c!r} (Team.clusters "
                            f"in {team.file} allows {known(allowed)})",
                            f"clusters[{i}]",
                        )
                    )
        for i, c in enumerate(rt.clusters or []):
            if c in index.clusters and "trainer" not in index.clusters[c].obj.operators:
                problems.append(
                    problem(
                        d,
                        f"cluster {c!r} does not run trainer, which runtimes need; "
                        f"Cluster.operators in {index.cluster_file(c)} lists "
                        f"{known(index.clusters[c].obj.operators)}; remove the cluster",
                        f"clusters[{i}]",
                    )
                )
        for cname in sorted(allowed):
            # Without clusters=, a runtime goes where Trainer runs: elsewhere its CRD is missing
            # and Argo CD could not sync it.
            if not on_cluster(rt, cname) or "trainer" not in index.clusters[cname].obj.operators:
                continue
            key = (type(rt).__name__, owner, rt.name, cname)
            if key in seen:
                first = seen[key]
                problems.append(
                    problem(
                        d,
                        f"{key[0]} {rt.name!r} is already defined for cluster {cname!r} at "
                        f"{first.file}:{first.line}; rename one or give them disjoint clusters",
                        "name",
                    )
                )
                continue
            seen[key] = d
            cluster = index.clusters[cname].obj
            if rt.initializers is not None and cluster.scheduler == "volcano":
                # Trainer's PodGroup counts every pod of every replicated job (trainer v2.3.0
                # plugins/volcano/volcano.go Build), while JobSet creates the node job only
                # once the steps completed (dependsOn): Volcano would wait for pods that wait.
                problems.append(
                    problem(
                        d,
                        f"cluster {cname!r} gangs pods with Volcano: Trainer's PodGroup counts "
                        "the initializer steps and the nodes, and JobSet creates the nodes only "
                        "once the steps completed, so the gang would never gather and the steps "
                        "never start; download in the job's script there, or limit the "
                        "runtime's clusters to ones without Volcano",
                        "initializers",
                    )
                )
                continue
            network = resolve_network(d, rt.network, cluster, index, problems)
            problems.extend(host_network_runtime(d, rt, network))
            queue = _queue(d, rt, cluster, index, problems)
            placed.append(PlannedRuntime(rt, d, cluster, namespace, queue, network))
    placed.sort(key=lambda r: (r.cluster.name, r.kind, r.namespace or "", r.runtime.name))
    return Runtimes(tuple(placed))


def _queue(
    d: Definition, rt: Runtime, cluster: Cluster, index: Index, problems: list[Problem]
) -> str | None:
    if rt.queue is None or cluster.scheduler != "volcano":
        return None
    if rt.queue == VOLCANO_DEFAULT_QUEUE:
        pass  # Volcano's own queue, on every Volcano cluster (see VOLCANO_DEFAULT_QUEUE)
    elif rt.queue not in index.queues:
        problems.append(
            problem(
                d, f"unknown queue {rt.queue!r}; defined queues: {known(index.queues)}", "queue"
            )
        )
    elif not on_cluster(index.queues[rt.queue].obj, cluster.name):
        problems.append(
            problem(
                d,
                f"queue {rt.queue!r} does not exist on cluster {cluster.name!r}; add the "
                "cluster to the Queue's clusters or limit the runtime's clusters",
                "queue",
            )
        )
    return rt.queue
