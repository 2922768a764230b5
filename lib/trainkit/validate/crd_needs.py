"""Which CRDs a generated tree needs, and where: per cluster, and for Argo CD.

``trainkit crds`` lists them, and ``trainkit check`` without CRDs names them:
every kind listed here is checked against its schema and CEL rules only when
its CRD is given, and the cluster rejects (or silently prunes) what breaks them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from trainkit.validate.crd_cache import Kind
from trainkit.validate.crds import is_crd_group
from trainkit.validate.documents import load_all
from trainkit.validate.files import NOT_MANIFEST_GROUPS

__all__ = ["NeededCrd", "crd_needs", "describe_kind"]


@dataclass(frozen=True)
class NeededCrd:
    """One (group, version, kind) the tree uses, and where it is applied."""

    group: str
    version: str
    kind: str
    clusters: tuple[str, ...] = ()
    """The clusters whose directory (``clusters/<name>/``) holds such an object; sorted."""
    argocd: bool = False
    """Whether ``argocd/`` holds one (applied to the cluster Argo CD runs in)."""
    elsewhere: tuple[str, ...] = field(default=())
    """Other files holding one (trees not laid out by trainkit); sorted."""

    @property
    def key(self) -> Kind:
        return (self.group, self.version, self.kind)


def describe_kind(key: Kind) -> str:
    """``("kubeflow.org", "v1", "PyTorchJob")`` -> ``kubeflow.org/v1 PyTorchJob``."""
    group, version, kind = key
    return f"{group}/{version} {kind}"


def crd_needs(items: Iterable[tuple[str, Any]]) -> list[NeededCrd]:
    """The CRD kinds of a tree, sorted by group, kind and version.

    ``items`` are (path relative to the tree's root, object or file bytes). A path
    ``clusters/<name>/…`` is applied to that cluster, ``argocd/…`` where Argo CD
    runs. Bytes that are not YAML are skipped: the validator reports them.
    """
    clusters: dict[Kind, set[str]] = {}
    argocd: set[Kind] = set()
    elsewhere: dict[Kind, set[str]] = {}
    for path, value in items:
        docs: list[Any]
        if isinstance(value, bytes | str):
            try:
                docs = load_all(value)
            except (yaml.YAMLError, UnicodeDecodeError):
                continue
        else:
            docs = [value]
        parts = path.split("/")
        for key in _kinds(docs):
            if parts[0] == "clusters" and len(parts) > 2:
                clusters.setdefault(key, set()).add(parts[1])
            elif parts[0] == "argocd":
                argocd.add(key)
            else:
                elsewhere.setdefault(key, set()).add(path)
    keys = sorted({*clusters, *argocd, *elsewhere}, key=lambda k: (k[0], k[2], k[1]))
    return [
        NeededCrd(
            *key,
            clusters=tuple(sorted(clusters.get(key, ()))),
            argocd=key in argocd,
            elsewhere=tuple(sorted(elsewhere.get(key, ()))),
        )
        for key in keys
    ]


def _kinds(docs: Iterable[Any]) -> set[Kind]:
    found: set[Kind] = set()
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            found |= _kinds(doc["items"])
            continue
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        if not (isinstance(api_version, str) and isinstance(kind, str)):
            continue
        group, _, version = api_version.rpartition("/")
        if is_crd_group(group) and group not in NOT_MANIFEST_GROUPS:
            found.add((group, version, kind))
    return found
