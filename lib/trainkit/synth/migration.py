"""Moving from one Application per cluster (trainkit up to 0.2) to one per team, keeping
every job.

Up to 0.2 each cluster had one Application, ``trainkit-<cluster>``, syncing
``clusters/<cluster>/`` with ``resources-finalizer.argocd.argoproj.io``. Removing it from
``generated/argocd/`` lets the root prune it, and its finalizer deletes every live object
still tracked to it (controller/appcontroller.go finalizeApplicationDeletion), every
running job included, which the new Applications would then create from scratch. So the
switch takes three steps:

1. ``ArgoCD(retire_cluster_applications=True)``: the root applies each old Application
   without its finalizer and without automated sync (it then neither applies, prunes nor
   deletes; ``Delete=false`` too, which Argo CD >= 3.4 reads from an Application's own sync
   options), and creates the platform's and the teams' Applications. They apply every
   object as it is (the same objects, so nothing changes or restarts), which moves its
   tracking annotation to them.
2. Wait until the old Applications have no finalizer and every object is tracked by a new
   Application (``trainkit plan`` prints the commands).
3. ``retire_cluster_applications=False``: the root prunes the old Applications; without
   the finalizer nothing they synced is deleted. There is nothing else to undo.

``check_migration`` refuses the switch without step 1, from what the deployed tree holds.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ..deployed.baseline import Baseline
from ..errors import DefinitionError
from ..render.argocd import RESOURCES_FINALIZER, retired_application_name
from ..resolve import Plan, problem

__all__ = ["ClusterApplication", "check_migration", "cluster_applications", "migration_steps"]

_ARGO = "argocd/kustomization.yaml"
_CLUSTER_PATH = re.compile(r"(?:^|/)clusters/([^/]+)/?$")


@dataclass(frozen=True)
class ClusterApplication:
    """A deployed Application of the layout up to 0.2: it syncs a whole cluster directory."""

    name: str
    cluster: str
    file: str
    """Its file, relative to the output directory (``argocd/application-<cluster>.yaml``)."""
    finalizer: bool
    """It carries the resources finalizer: deleting it deletes what it synced."""
    automated: bool
    """Automated sync: it applies and prunes on its own."""

    @property
    def retired(self) -> bool:
        return not (self.finalizer or self.automated)


def cluster_applications(
    baseline: Baseline, files: Mapping[str, bytes] | None = None
) -> list[ClusterApplication]:
    """The deployed Applications that sync a whole ``clusters/<name>/`` directory (what the
    root's kustomization lists). ``files``, when given, are the baseline's files already read."""
    read = dict(files or {})
    if _ARGO not in read:
        read.update(baseline.read_many([_ARGO]))
    listed = [f"argocd/{r}" for r in _resources(read.get(_ARGO))]
    missing = [p for p in listed if p not in read]
    if missing:
        read.update(baseline.read_many(missing))
    found = []
    for path in listed:
        doc = _load(read.get(path))
        if not isinstance(doc, dict) or doc.get("kind") != "Application":
            continue
        spec = _dict(doc.get("spec"))
        source = _dict(spec.get("source"))
        match = _CLUSTER_PATH.search(str(source.get("path", "")))
        meta = _dict(doc.get("metadata"))
        if match is None or not isinstance(meta.get("name"), str):
            continue
        policy = _dict(spec.get("syncPolicy"))
        found.append(
            ClusterApplication(
                name=meta["name"],
                cluster=match.group(1),
                file=path,
                finalizer=RESOURCES_FINALIZER in (meta.get("finalizers") or []),
                automated=bool(policy.get("automated")),
            )
        )
    return found


def check_migration(plan: Plan, baseline: Baseline) -> list[str]:
    """Refuse a tree that drops (or re-points) a deployed per-cluster Application that still
    deletes what it synced; the notices worth printing otherwise."""
    cfg, cdef = plan.argocd, plan.argocd_definition
    if cfg is None or cdef is None or baseline.nothing:
        return []
    deployed = cluster_applications(baseline)
    clusters = {cp.cluster.name for cp in plan.clusters}
    problems = []
    for app in deployed:
        if app.retired or app.cluster not in clusters or cfg.retire_cluster_applications:
            continue  # a removed cluster's Application is pruned with its objects, as meant
        if app.name != retired_application_name(app.cluster):
            continue  # not trainkit's
        problems.append(
            problem(
                cdef,
                f"the deployed Application {app.name!r} ({baseline.description}, {app.file}) "
                f"syncs every object of cluster {app.cluster!r} and carries Argo CD's "
                "resources finalizer: dropping it for the per-team Applications would let the "
                "root prune it and delete every job it synced, running ones included. Set "
                "retire_cluster_applications=True first (step 1 of 3; `trainkit plan` shows "
                "the steps)",
                "retire_cluster_applications",
            )
        )
    if problems:
        raise DefinitionError(problems)
    if cfg.retire_cluster_applications and not any(
        app.name == retired_application_name(app.cluster) and app.cluster in clusters
        for app in deployed
    ):
        return [
            f"{cdef.file}: ArgoCD.retire_cluster_applications: {baseline.description} deploys "
            "no per-cluster Application to retire; set it to False"
        ]
    return []


def migration_steps(plan: Plan, baseline: Baseline) -> list[str]:
    """Each step of the move, marked done, this change, waiting or next; none when the
    deployed tree has no per-cluster Application and this change retires none."""
    cfg = plan.argocd
    if cfg is None:
        return []
    deployed = [
        a for a in cluster_applications(baseline) if a.name == retired_application_name(a.cluster)
    ]
    if not deployed and not cfg.retire_cluster_applications:
        return []
    names = ", ".join(sorted(a.name for a in deployed)) or "none deployed"
    retired = bool(deployed) and all(a.retired for a in deployed)
    active = [a for a in deployed if not a.retired]
    ns = cfg.namespace
    if active and cfg.retire_cluster_applications:
        status = ("this change", "after merging", "next")
    elif retired and cfg.retire_cluster_applications:
        status = ("done", "now", "next")
    elif retired:
        status = ("done", "done", "this change")
    else:
        status = ("this change", "after merging", "next")
    old = " ".join(sorted(a.name for a in deployed)) or "<old Applications>"
    return [
        f"1 ({status[0]}): ArgoCD(retire_cluster_applications=True): the root removes the "
        f"resources finalizer and automated sync of {names} (Delete=false too) and creates "
        "the platform's and the teams' Applications, which apply every object as it is: "
        "nothing is deleted, changed or restarted, each object's tracking annotation moves "
        "to its new Application",
        f"2 ({status[1]}): wait until the root has synced and the new Applications are "
        f"Synced: `kubectl get applications.argoproj.io -n {ns} {old} -o "
        "jsonpath='{range .items[*]}{.metadata.name} {.metadata.finalizers}{\"\\n\"}{end}'` "
        "shows no finalizer, and `argocd app get` of each old Application lists no object "
        "as Synced (every object is tracked by a new Application). Never delete an old "
        "Application by hand: `argocd app delete` cascades by default",
        f"3 ({status[2]}): remove retire_cluster_applications: the root prunes {names}; "
        "without their finalizer nothing they synced is deleted",
    ]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resources(data: bytes | None) -> list[str]:
    doc = _load(data)
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


def _load(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return yaml.load(data, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None
