"""Which Application of its team each job goes to: parts of at most ``PART_OBJECTS`` objects.

``kubectl kustomize`` compares each resource it adds with the ones before it, so one build
grows with the square of its objects (kubernetes-sigs/kustomize#5084), and Argo CD's repo
server runs that build on every manifest generation, cut at its exec timeout (90 s by
default, ``ARGOCD_EXEC_TIMEOUT``). So a team's jobs on a cluster are split into parts, one
Application each, of at most ``PART_OBJECTS`` objects:

    clusters/<cluster>/<namespace>/                 part 1
    clusters/<cluster>/<namespace>/part-<k>/        part k (2, 3, ...)

A job and its script ConfigMap stay together (kustomize rewrites the ConfigMap's name in
the job only within one build). A deployed job never moves: moving it to another
Application would let the old one prune it (its tracking annotation still names the old
Application) while the new one creates it, so a running job would be deleted and started
again. So every job whose files the deployed tree holds in a part stays in that part, and
only the others are placed, in name order, into the first part with room. Parts only
grow past ``PART_OBJECTS`` when two pull requests built against the same deployed commit
fill the same room.

A deployed tree of the layout before parts (one Application per cluster) places nothing:
moving from it is a migration, whose steps keep every job (see ``render.argocd``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "COMPONENT_DIR",
    "PART_OBJECTS",
    "PLATFORM_DIR",
    "AppDir",
    "Placement",
    "app_dirs",
    "logical_path",
    "place",
    "team_file",
    "unit_key",
]

PART_OBJECTS = 200
"""Most objects of one team Application. Measured with kubectl 1.32 (kustomize v5.5) on the
bench's jobs: a build costs 0.8 ms of CPU per object up to 200 objects, 1.4 ms at 250, 2.5 ms
at 500 and 3.6 ms at 1,000, plus 60 ms to start; 200 is the largest part before the square
term shows (tests/bench.py prints the largest build of its trees)."""

PLATFORM_DIR = "platform"
"""A cluster's platform Application: namespaces, queues, runtimes, Kueue's objects."""
COMPONENT_DIR = "kustomize"
"""The kustomize Component of a cluster (CRD fields, scopes): its kustomization includes it,
so overlays of the cluster directory know the CRD fields; no Application's build does (it
changes nothing there and costs kustomize more than half again, see ``render.kustomize``)."""
_PART = re.compile(r"part-([1-9][0-9]*)")
_JOB_LABEL = re.compile(rb"^    trainkit\.dev/job: ['\"]?([^'\"\n]+)['\"]?$", re.MULTILINE)
# The label sits in metadata, within the first lines of every file trainkit writes.
_HEAD = 2048


@dataclass(frozen=True, order=True)
class AppDir:
    """One Application's directory below ``clusters/``: a cluster's platform, or one part
    of a team's jobs on a cluster."""

    cluster: str
    namespace: str | None
    """The team's namespace; None for the platform."""
    part: int = 1

    @property
    def path(self) -> str:
        """Relative to the output directory."""
        base = f"clusters/{self.cluster}"
        if self.namespace is None:
            return f"{base}/{PLATFORM_DIR}"
        if self.part == 1:
            return f"{base}/{self.namespace}"
        return f"{base}/{self.namespace}/part-{self.part}"


def team_file(path: str) -> tuple[str, str, int, str] | None:
    """``(cluster, namespace, part, file name)`` of a team's job or ConfigMap file; None for
    any other file of the tree."""
    parts = path.split("/")
    if len(parts) < 4 or parts[0] != "clusters" or parts[2] in (PLATFORM_DIR, COMPONENT_DIR):
        return None
    if len(parts) == 4 and parts[3] != "kustomization.yaml":
        return parts[1], parts[2], 1, parts[3]
    if len(parts) == 5 and (m := _PART.fullmatch(parts[3])) and parts[4] != "kustomization.yaml":
        return parts[1], parts[2], int(m.group(1)), parts[4]
    return None


def logical_path(path: str) -> str:
    """A team file's path without its part (part 1's path); other paths as they are."""
    found = team_file(path)
    if found is None:
        return path
    cluster, namespace, _, name = found
    return f"clusters/{cluster}/{namespace}/{name}"


@dataclass(frozen=True)
class Placement:
    """The part of every team file, by its logical path."""

    parts: Mapping[str, int]

    def path(self, logical: str) -> str:
        """Where the file with this logical path goes."""
        part = self.parts.get(logical, 1)
        if part == 1:
            return logical
        top, name = logical.rsplit("/", 1)
        return f"{top}/part-{part}/{name}"


def unit_key(path: str, data: bytes) -> str:
    """What keeps a written team file with the others of its job: the job's label
    (``trainkit.dev/job``, on the job and its script ConfigMap), else the file itself."""
    label = _JOB_LABEL.search(data, 0, _HEAD)
    return label.group(1).decode("utf-8", "replace") if label else "\0" + path


def place(keys: Mapping[str, str], deployed: Iterable[str] = ()) -> Placement:
    """The part of each team file: ``keys`` maps its logical path to its job (files of one
    job stay together); the parts of ``deployed`` (the deployed tree's paths) are kept."""
    sticky = _deployed_parts(deployed)
    units: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for path, key in keys.items():
        found = team_file(path)
        if found is not None:
            units[(found[0], found[1], key)].append(path)
    parts: dict[str, int] = {}
    used: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    fresh = []
    for (cluster, namespace, _), paths in sorted(units.items()):
        kept = sorted(sticky[p] for p in paths if p in sticky)
        if kept:
            part = kept[0]
            used[cluster, namespace][part] += len(paths)
            parts.update((p, part) for p in paths)
        else:
            fresh.append((cluster, namespace, paths))
    for cluster, namespace, paths in fresh:
        room = used[cluster, namespace]
        part = 1
        while room[part] and room[part] + len(paths) > PART_OBJECTS:
            part += 1
        room[part] += len(paths)
        parts.update((p, part) for p in paths)
    return Placement(parts)


def _deployed_parts(deployed: Iterable[str]) -> dict[str, int]:
    """Logical path → part of every deployed team file, in clusters deployed with parts (a
    ``platform/`` directory); a cluster of the layout before keeps nothing."""
    listed = list(deployed)
    with_parts = {
        p.split("/")[1]
        for p in listed
        if p.startswith("clusters/") and p.endswith(f"/{PLATFORM_DIR}/kustomization.yaml")
    }
    out: dict[str, int] = {}
    for path in listed:
        found = team_file(path)
        if found is not None and found[0] in with_parts:
            cluster, namespace, part, name = found
            out[f"clusters/{cluster}/{namespace}/{name}"] = part
    return out


def app_dirs(paths: Iterable[str]) -> list[AppDir]:
    """The Application directories holding these (physical) paths: each cluster's platform,
    and every part of a team with files."""
    found: set[AppDir] = set()
    for path in paths:
        parts = path.split("/")
        if len(parts) < 3 or parts[0] != "clusters":
            continue
        if parts[2] == PLATFORM_DIR:
            found.add(AppDir(parts[1], None))
            continue
        team = team_file(path)
        if team is not None:
            found.add(AppDir(team[0], team[1], team[2]))
    return sorted(found, key=lambda d: (d.cluster, d.namespace or "", d.part))
