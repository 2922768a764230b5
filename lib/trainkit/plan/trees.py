"""Both sides of the plan as Kubernetes objects per cluster: the new tree and the deployed one.

The new side is what synth renders, read from the rendered dicts (no YAML is
written or parsed). The deployed side is what Argo CD applies from the
baseline: each Application of ``argocd/`` points at ``clusters/<name>/``,
whose ``kustomization.yaml`` lists every file it syncs; a file not listed
there is not deployed, so it is not read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..deployed import Baseline
from ..render.meta import JOB_LABEL, TEAM_LABEL
from ..synth import Groups

__all__ = [
    "JOB_KINDS",
    "Key",
    "Obj",
    "ReadBaseline",
    "Side",
    "application_cluster",
    "deployed_side",
    "new_side",
]

JOB_KINDS = frozenset(
    {
        "PyTorchJob",
        "MPIJob",
        "TFJob",
        "PaddleJob",
        "XGBoostJob",
        "JAXJob",
        "RayJob",
        "RayCluster",
        "TrainJob",
    }
)

Key = tuple[str, str, str]
"""(kind, namespace or "", name): what identifies an object in one cluster."""


@dataclass(frozen=True)
class Obj:
    path: str
    """Relative to the output directory, e.g. ``clusters/gpu-east/vision/pytorchjob-x.yaml``."""
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.body.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return str(self.meta.get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.meta.get("namespace")
        return str(ns) if ns else None

    def label(self, key: str) -> str | None:
        labels = self.meta.get("labels")
        value = labels.get(key) if isinstance(labels, dict) else None
        return str(value) if value is not None else None

    def annotation(self, key: str) -> str | None:
        annotations = self.meta.get("annotations")
        value = annotations.get(key) if isinstance(annotations, dict) else None
        return str(value) if value is not None else None

    @property
    def key(self) -> Key:
        return (self.kind, self.namespace or "", self.name)

    @property
    def team(self) -> str:
        return self.label(TEAM_LABEL) or "platform"

    @property
    def job(self) -> str | None:
        """The job a run or script ConfigMap belongs to (``trainkit.dev/job``)."""
        return self.label(JOB_LABEL)


@dataclass
class Side:
    """The objects of one side: per cluster, and Argo CD's own."""

    clusters: dict[str, dict[Key, Obj]] = field(default_factory=dict)
    argocd: dict[Key, Obj] = field(default_factory=dict)


def _add(objects: dict[Key, Obj], obj: Obj) -> None:
    if obj.kind and obj.name:
        objects[obj.key] = obj


def new_side(groups: Groups, cluster_names: Iterable[str]) -> Side:
    """The rendered objects, where Argo CD will find them."""
    side = Side({name: {} for name in cluster_names})
    for _, items in groups:
        for r in items:
            if r.plain:
                continue  # kustomize's own files
            parts = r.path.split("/")
            if parts[0] == "clusters" and len(parts) > 2:
                _add(side.clusters.setdefault(parts[1], {}), Obj(r.path, r.body))
            elif parts[0] == "argocd" and len(parts) == 2:
                # What argocd/kustomization.yaml lists (the health-check component is an
                # admin's to apply, not synced).
                _add(side.argocd, Obj(r.path, r.body))
    return side


@dataclass(frozen=True)
class ReadBaseline(Baseline):
    """A baseline whose files were read already: the paths asked are answered from memory.

    The plan reads the deployed tree once and hands this to the in-place checks,
    which would otherwise read their files again.
    """

    files: Mapping[str, bytes] = field(default_factory=dict)
    asked: frozenset[str] = frozenset()

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = set(paths)
        if wanted <= self.asked:
            return {p: self.files[p] for p in sorted(wanted) if p in self.files}
        return super().read_many(wanted)


def deployed_side(
    baseline: Baseline, cluster_names: Iterable[str], also: Iterable[str] = ()
) -> tuple[Side, ReadBaseline]:
    """What Argo CD deploys from ``baseline``: every file the kustomizations list.

    Clusters are those the deployed Applications point at, plus ``cluster_names``
    (their directories are read even without an Application). The paths of
    ``also`` are read with the rest; the baseline returned answers them from
    memory. Two rounds of reads whatever the tree's size, four when an
    Application points at a cluster the definitions no longer have.
    """
    names = set(cluster_names)
    argo = "argocd/kustomization.yaml"
    asked = {argo, *(_kustomization(c) for c in names)}
    files = baseline.read_many(asked)
    wanted = _listed(files, names, baseline, asked)
    wanted.update({p: "" for p in also if p not in wanted})
    wanted.update({f"argocd/{r}": "" for r in _resources(files.get(argo))})
    asked |= set(wanted)
    files.update(baseline.read_many(wanted))
    side = Side()
    for path in sorted(p for p in files if p.startswith("argocd/") and p != argo):
        _add_parsed(side.argocd, path, files[path])
    pointed = {c for o in side.argocd.values() if (c := application_cluster(o)) is not None}
    gone = pointed - names
    if gone:
        more = {_kustomization(c) for c in gone}
        asked |= more
        files.update(baseline.read_many(more))
        extra = _listed(files, gone, baseline, asked)
        asked |= set(extra)
        files.update(baseline.read_many(extra))
        wanted.update(extra)
    for path, cluster in sorted(wanted.items()):
        if cluster and path in files:
            _add_parsed(side.clusters.setdefault(cluster, {}), path, files[path])
    for cluster in sorted(set(wanted.values()) - {""}):
        side.clusters.setdefault(cluster, {})
    read = ReadBaseline(
        baseline.description,
        baseline.directory,
        baseline.git,
        baseline.nothing,
        files=files,
        asked=frozenset(asked),
    )
    return side, read


def _kustomization(cluster: str) -> str:
    return f"clusters/{cluster}/kustomization.yaml"


def _listed(
    files: dict[str, bytes], clusters: Iterable[str], baseline: Baseline, asked: set[str]
) -> dict[str, str]:
    """Path → cluster of every file the clusters' kustomizations list, through the
    kustomizations of the directories they list (each Application's); read as needed."""
    out: dict[str, str] = {}
    pending = [(cluster, f"clusters/{cluster}") for cluster in sorted(clusters)]
    while pending:
        need = {f"{d}/kustomization.yaml" for _, d in pending} - set(files)
        if need:
            asked |= need
            files.update(baseline.read_many(need))
        deeper = []
        for cluster, directory in pending:
            for rel in _resources(files.get(f"{directory}/kustomization.yaml")):
                if rel.endswith((".yaml", ".yml")):
                    out[f"{directory}/{rel}"] = cluster
                else:
                    deeper.append((cluster, f"{directory}/{rel}"))
        pending = deeper
    return out


def _add_parsed(objects: dict[Key, Obj], path: str, data: bytes) -> None:
    obj = _parse(path, data)
    if obj is not None:
        _add(objects, obj)


def application_cluster(obj: Obj) -> str | None:
    """The cluster an Argo CD Application syncs to (``<path>/clusters/<name>[/...]``)."""
    if obj.kind != "Application":
        return None
    spec = obj.body.get("spec")
    source = spec.get("source") if isinstance(spec, dict) else None
    path = source.get("path") if isinstance(source, dict) else None
    if not isinstance(path, str):
        return None
    parts = posixpath.normpath(path).split("/")
    found = [i for i, part in enumerate(parts[:-1]) if part == "clusters"]
    return parts[found[0] + 1] if found else None


def _resources(data: bytes | None) -> list[str]:
    """The files a kustomization lists (only plain relative names; nothing outside its dir)."""
    doc = _load(data) if data is not None else None
    listed = doc.get("resources") if isinstance(doc, dict) else None
    if not isinstance(listed, list):
        return []
    out = []
    for item in listed:
        if isinstance(item, str):
            rel = posixpath.normpath(item)
            if not rel.startswith(("../", "/")) and rel not in ("..", "."):
                out.append(rel)
    return out


def _parse(path: str, data: bytes) -> Obj | None:
    doc = _load(data)
    return Obj(path, doc) if isinstance(doc, dict) else None


def _load(data: bytes) -> Any:
    try:
        return yaml.load(data, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None  # an unreadable deployed file is the validator's to report
