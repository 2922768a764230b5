"""Platform references: teams' queues and clusters, queue parents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..errors import Problem
from ..load import Definition
from ..model import Queue, Team, TrainkitModel
from .problems import known, problem

__all__ = ["by_name", "check_clusters", "check_queues", "check_teams", "on_cluster"]

M = TypeVar("M", bound=TrainkitModel)


def by_name(
    defs: Sequence[Definition], kind: type[M], problems: list[Problem]
) -> dict[str, tuple[M, Definition]]:
    """Objects of ``kind`` by name; a second object of the same name is a problem."""
    out: dict[str, tuple[M, Definition]] = {}
    for d in defs:
        obj = d.obj
        if type(obj) is not kind:
            continue
        name = str(getattr(obj, "name"))  # noqa: B009 - every named kind has .name
        if name in out:
            first = out[name][1]
            problems.append(
                problem(
                    d,
                    f"duplicate {kind.__name__} name; first defined at {first.file}:{first.line}",
                    "name",
                )
            )
            continue
        out[name] = (obj, d)
    return out


def on_cluster(obj: object, cluster: str) -> bool:
    """Whether an object with an optional ``clusters`` list exists on ``cluster``."""
    clusters = getattr(obj, "clusters", None)
    return clusters is None or cluster in clusters


def check_clusters(d: Definition, names: list[str] | None, clusters: set[str]) -> list[Problem]:
    return [
        problem(d, f"unknown cluster {c!r}; defined clusters: {known(clusters)}", f"clusters[{i}]")
        for i, c in enumerate(names or [])
        if c not in clusters
    ]


def check_teams(
    teams: dict[str, tuple[Team, Definition]],
    queues: dict[str, tuple[Queue, Definition]],
    clusters: set[str],
    problems: list[Problem],
) -> None:
    seen_ns: dict[str, tuple[str, Definition]] = {}
    for name, (team, d) in teams.items():
        ns = team.target_namespace
        if ns in seen_ns:
            other, od = seen_ns[ns]
            problems.append(
                problem(
                    d,
                    f"namespace {ns!r} already belongs to team {other!r} ({od.file}:{od.line}); "
                    "each team needs its own namespace",
                    "namespace",
                )
            )
        seen_ns.setdefault(ns, (name, d))
        for i, q in enumerate(team.queues):
            if q not in queues:
                problems.append(
                    problem(
                        d, f"unknown queue {q!r}; defined queues: {known(queues)}", f"queues[{i}]"
                    )
                )
        problems.extend(check_clusters(d, team.clusters, clusters))


def check_queues(
    queues: dict[str, tuple[Queue, Definition]], clusters: set[str], problems: list[Problem]
) -> dict[str, int]:
    """Problems of queue parents; returns each queue's depth below Volcano's root."""
    depths: dict[str, int] = {}
    for name, (queue, d) in queues.items():
        problems.extend(check_clusters(d, queue.clusters, clusters))
        depth, chain, parent = 0, [name], queue.parent
        while parent is not None:
            if parent not in queues:
                problems.append(
                    problem(
                        d,
                        f"unknown parent queue {parent!r}; defined queues: {known(queues)}",
                        "parent",
                    )
                )
                break
            if parent in chain:
                problems.append(
                    problem(
                        d, "queue parents form a cycle: " + " → ".join([*chain, parent]), "parent"
                    )
                )
                break
            pq = queues[parent][0]
            if chain == [name]:
                missing = _missing_clusters(queue, pq, clusters)
                if missing:
                    problems.append(
                        problem(
                            d,
                            f"parent queue {parent!r} does not exist on "
                            f"cluster(s) {known(missing)}",
                            "parent",
                        )
                    )
            chain.append(parent)
            depth += 1
            parent = pq.parent
        depths[name] = depth
    return depths


def _missing_clusters(child: Queue, parent: Queue, clusters: set[str]) -> set[str]:
    child_on = set(child.clusters) if child.clusters is not None else clusters
    parent_on = set(parent.clusters) if parent.clusters is not None else clusters
    return child_on - parent_on
