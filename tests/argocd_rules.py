"""Argo CD's AppProject checks, as argo-cd v3.5.1 evaluates them, for the tests.

A port of ``pkg/apis/application/v1alpha1/app_project_types.go`` (``IsGroupKindNamePermitted``,
``IsResourcePermitted``, ``IsDestinationPermitted``, ``isDestinationMatched``, ``globMatch``,
``isDenyPattern``) and ``types.go`` (``isResourceInList``, ``isNamedResourceInList``), with the
pattern languages they use: gobwas/glob without separators for destinations
(``util/glob/glob.go``), Go's ``path/filepath.Match`` for group, kind and name. What Argo CD
does with the result: ``controller/sync.go validateSyncPermissions`` refuses an object
whose group/kind is not permitted, and a namespaced one whose namespace is not a permitted
destination; ``IsResourcePermitted`` (live objects, a finalizer's deletions) treats an
object without a namespace as cluster-scoped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = [
    "Cluster",
    "destination_permitted",
    "filepath_match",
    "glob_match",
    "group_kind_permitted",
    "resource_permitted",
]


@dataclass(frozen=True)
class Cluster:
    """A cluster as Argo CD resolves a destination: it always has both a server and a name."""

    server: str
    name: str


@cache
def _gobwas(pattern: str) -> re.Pattern[str]:
    """gobwas/glob without separators: ``*`` any run, ``?`` one character, ``[...]`` and
    ``[!...]`` classes with ranges, ``{a,b}`` alternatives, ``\\`` escapes; an empty
    pattern matches only the empty string."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            out.append("[" + ("^" if neg else "") + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "{":
            end = pattern.index("}", i + 1)
            alts = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_gobwas(a).pattern[:-2] for a in alts) + ")")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def glob_match(pattern: str, value: str, allow_negation: bool = True) -> bool:
    """``globMatch``: a ``!`` pattern (when allowed) matches what its rest does not."""
    if allow_negation and pattern.startswith("!"):
        return not _gobwas(pattern[1:]).match(value)
    if pattern == "*":
        return True
    return bool(_gobwas(pattern).match(value))


@cache
def _filepath(pattern: str) -> re.Pattern[str]:
    """Go's ``filepath.Match`` on Linux: ``*`` and ``?`` never match ``/``; ``[^...]``."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end]
            neg = body.startswith("^")
            body = body[1:] if neg else body
            out.append("[" + ("^/" if neg else "") + body + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def filepath_match(pattern: str, value: str) -> bool:
    return bool(_filepath(pattern).match(value))


def _in_list(group: str, kind: str, items: list[dict[str, Any]]) -> bool:
    """``isResourceInList``."""
    return any(
        filepath_match(item.get("kind", ""), kind) and filepath_match(item.get("group", ""), group)
        for item in items
    )


def _in_named_list(group: str, kind: str, name: str, items: list[dict[str, Any]]) -> bool:
    """``isNamedResourceInList``: an item without a name matches every name."""
    for item in items:
        if not filepath_match(item.get("kind", ""), kind):
            continue
        if not filepath_match(item.get("group", ""), group):
            continue
        if not item.get("name") or filepath_match(item["name"], name):
            return True
    return False


def group_kind_permitted(project: dict[str, Any], obj: dict[str, Any], *, namespaced: bool) -> bool:
    """``IsGroupKindNamePermitted``: an omitted (nil) namespace whitelist permits every
    namespaced kind, an empty cluster whitelist permits no cluster-scoped one."""
    spec = project["spec"]
    group = obj["apiVersion"].rpartition("/")[0]
    kind, name = obj["kind"], obj["metadata"]["name"]
    if namespaced:
        white = spec.get("namespaceResourceWhitelist")
        black = spec.get("namespaceResourceBlacklist") or []
        whitelisted = white is None or (len(white) != 0 and _in_list(group, kind, white))
        return whitelisted and not (black and _in_list(group, kind, black))
    white = spec.get("clusterResourceWhitelist") or []
    black = spec.get("clusterResourceBlacklist") or []
    whitelisted = len(white) != 0 and _in_named_list(group, kind, name, white)
    return whitelisted and not (black and _in_named_list(group, kind, name, black))


def destination_permitted(project: dict[str, Any], cluster: Cluster, namespace: str) -> bool:
    """``IsDestinationPermitted`` → ``isDestinationMatched`` (no project-scoped clusters)."""
    matched_any = False
    for item in project["spec"].get("destinations") or []:
        pat_name, pat_server = item.get("name", ""), item.get("server", "")
        pat_ns = item.get("namespace", "")
        name_ok = cluster.name != "" and glob_match(pat_name, cluster.name)
        server_ok = cluster.server != "" and glob_match(pat_server, cluster.server)
        ns_ok = glob_match(pat_ns, namespace)
        if (server_ok or name_ok) and ns_ok:
            matched_any = True
        elif (
            ((not name_ok) and pat_name.startswith("!"))
            or ((not server_ok) and pat_server.startswith("!") and ns_ok)
            or ((not ns_ok) and pat_ns.startswith("!") and server_ok)
        ):
            return False
    return matched_any


def resource_permitted(
    project: dict[str, Any], cluster: Cluster, obj: dict[str, Any], *, namespaced: bool
) -> bool:
    """``validateSyncPermissions``: the group/kind (by the API's scope), then a namespaced
    object's namespace as a destination."""
    if not group_kind_permitted(project, obj, namespaced=namespaced):
        return False
    if not namespaced:
        return True
    return destination_permitted(project, cluster, obj["metadata"].get("namespace", ""))
