"""Every platform object by name, with the definition that declared it.

One index is built per plan and handed to each step, so a check names what
exists (``defined queues: 'llm', 'vision'``) and the file that declares a rule
without threading seven dictionaries through every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..errors import Problem
from ..load import Definition
from ..model import (
    ArgoCD,
    Cluster,
    ClusterQueue,
    NetworkProfile,
    PlatformPatch,
    Policy,
    Queue,
    ResourceFlavor,
    Team,
    TrainkitModel,
    WorkloadPriorityClass,
)
from .problems import problem

__all__ = ["Declared", "Index", "build_index"]

M = TypeVar("M", bound=TrainkitModel)


@dataclass(frozen=True)
class Declared(Generic[M]):
    """A platform object and where it was declared."""

    obj: M
    definition: Definition

    @property
    def file(self) -> str:
        return self.definition.file


@dataclass(frozen=True)
class Index:
    clusters: dict[str, Declared[Cluster]]
    teams: dict[str, Declared[Team]]
    queues: dict[str, Declared[Queue]]
    profiles: dict[str, Declared[NetworkProfile]]
    policy: Declared[Policy] | None
    argocd: Declared[ArgoCD] | None
    children: dict[str, list[str]] = field(default_factory=dict)
    """Queue name → names of the queues whose parent it is."""
    cluster_queues: dict[str, Declared[ClusterQueue]] = field(default_factory=dict)
    """Kueue's queues, by name."""
    flavors: dict[str, Declared[ResourceFlavor]] = field(default_factory=dict)
    """Kueue's ResourceFlavors, by name."""
    patches: dict[str, Declared[PlatformPatch]] = field(default_factory=dict)
    """The platform's JSON patches of planned objects, by name."""
    workload_priorities: dict[str, Declared[WorkloadPriorityClass]] = field(default_factory=dict)
    """Kueue's WorkloadPriorityClasses, by name."""

    @property
    def rules(self) -> Policy:
        return self.policy.obj if self.policy is not None else Policy()

    def cluster_file(self, name: str) -> str:
        return self.clusters[name].file


def _by_name(
    defs: Sequence[Definition], kind: type[M], problems: list[Problem]
) -> dict[str, Declared[M]]:
    """Objects of ``kind`` by name; a second object of the same name is a problem."""
    out: dict[str, Declared[M]] = {}
    for d in defs:
        obj = d.obj
        if type(obj) is not kind:
            continue
        name = str(getattr(obj, "name"))  # noqa: B009 - every named kind has .name
        if name in out:
            first = out[name].definition
            problems.append(
                problem(
                    d,
                    f"duplicate {kind.__name__} name; first defined at {first.file}:{first.line}",
                    "name",
                )
            )
            continue
        out[name] = Declared(obj, d)
    return out


def _single(
    defs: Sequence[Definition], kind: type[M], problems: list[Problem]
) -> Declared[M] | None:
    found = [Declared(d.obj, d) for d in defs if type(d.obj) is kind]
    for extra in found[1:]:
        first = found[0].definition
        problems.append(
            problem(
                extra.definition,
                f"only one {kind.__name__} is allowed; first at {first.file}:{first.line}",
            )
        )
    return found[0] if found else None


def _reaches_root(name: str, queues: dict[str, Declared[Queue]]) -> bool:
    seen = set()
    while name in queues and name not in seen:
        seen.add(name)
        parent = queues[name].obj.parent
        if parent is None:
            return True
        name = parent
    return False


def build_index(defs: Sequence[Definition], problems: list[Problem]) -> Index:
    queues = _by_name(defs, Queue, problems)
    children: dict[str, list[str]] = {}
    for name, q in sorted(queues.items()):
        # Broken hierarchies (unknown parent, cycle) are reported once by check_queues,
        # not again as parents of whatever points at them.
        if q.obj.parent is not None and _reaches_root(name, queues):
            children.setdefault(q.obj.parent, []).append(name)
    return Index(
        clusters=_by_name(defs, Cluster, problems),
        teams=_by_name(defs, Team, problems),
        queues=queues,
        profiles=_by_name(defs, NetworkProfile, problems),
        policy=_single(defs, Policy, problems),
        argocd=_single(defs, ArgoCD, problems),
        children=children,
        cluster_queues=_by_name(defs, ClusterQueue, problems),
        flavors=_by_name(defs, ResourceFlavor, problems),
        patches=_by_name(defs, PlatformPatch, problems),
        workload_priorities=_by_name(defs, WorkloadPriorityClass, problems),
    )
