"""Plan → files of ``generated/``: layout, headers, kustomizations, Argo CD.

The layout (relative to the output directory)::

    argocd/                      the root Application (applied once by an admin, then syncing
                                 this directory), the AppProjects, one Application per cluster;
                                 the argocd-cm health checks (see render/argocd.py)
    clusters/<cluster>/          what Argo CD syncs to <cluster>
        kustomization.yaml       lists every file below; teaches kustomize the CRD fields
        kustomizeconfig.yaml
        kustomize-openapi.yaml   tells kustomize which CRD kinds are cluster-scoped
        namespaces/<ns>.yaml
        queues/<queue>.yaml
        runtimes/<name>.yaml     ClusterTrainingRuntimes
        <namespace>/pytorchjob-<name>.yaml, trainjob-<name>-r<run>.yaml,
                    trainingruntime-<name>.yaml, configmap-<job>-script-<hash>.yaml

``synthesize`` runs the pipeline and writes; ``layout`` turns a plan into these files;
``delta`` reuses the last run's files of unchanged job definitions.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache_dir import cache_enabled, repo_cache_dir
from ..deployed.baseline import Baseline, resolve_baseline
from ..deployed.inplace import keep_deployed, refuse_in_place_changes
from ..effective import EffectiveJob
from ..errors import DefinitionError
from ..load import Definition, DefinitionCache, LoadOptions, load_jobs
from ..repo_root import synth_command
from ..resolve import Plan, build_plan
from ..runcache import Record, RunCache, baseline_id, synth_options
from ..serialize import YamlCache, prewarm
from ..write import Changes, compare_tree, write_tree
from .delta import file_facts, reuse_last
from .layout import (
    Groups,
    Rendered,
    check_cluster_truth,
    effective_jobs,
    render_files,
    render_groups,
    rendered_runtimes,
)

__all__ = [
    "Groups",
    "Output",
    "Rendered",
    "check_cluster_truth",
    "effective_jobs",
    "render_files",
    "render_groups",
    "render_objects",
    "rendered_runtimes",
    "synthesize",
]


@dataclass(frozen=True)
class Output:
    files: dict[str, bytes]
    plan: Plan
    changes: Changes
    baseline: Baseline
    """What the jobs and runtimes were compared with (the deployed tree)."""
    notices: list[str]
    """What the user should know once (e.g. definitions ran unconfined)."""
    jobs: list[EffectiveJob]
    """Every job's pods as the controllers will create them (with ``incremental``, the
    plan and these hold only what this run loaded: the platform and the changed files)."""
    runs: RunCache | None = None
    """The run records of this output directory (None without caches)."""
    record: Record | None = None
    """What this run recorded (None without caches)."""
    reused: int = 0
    """Output files kept from the last run without loading their definitions
    (``incremental``; see ``synth.delta``)."""


def render_objects(
    jobs_dir: Path, *, root: Path | None = None, load_options: LoadOptions | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], list[str], dict[str, tuple[str, ...]]]:
    """Every object of the tree by path, the load's notices, and each cluster's operators.

    Rendered but not serialized or compared with the deployed tree: what the tree
    holds is known without node or git (``trainkit crds``). The operators
    (``Cluster.operators``) decide which upstream CRD a kind comes from there.
    """
    root = root or jobs_dir.resolve().parent
    loaded = load_jobs(jobs_dir, root, options=load_options)
    plan = build_plan(loaded.definitions)
    objects = [(r.path, r.body) for _, items in render_groups(plan) for r in items]
    operators = {cp.cluster.name: tuple[str, ...](cp.cluster.operators) for cp in plan.clusters}
    return objects, loaded.notices, operators


def synthesize(
    jobs_dir: Path,
    out_dir: Path,
    *,
    root: Path | None = None,
    check: bool = False,
    use_cache: bool = True,
    against: str | None = None,
    load_options: LoadOptions | None = None,
    require_baseline: bool = False,
    runs: RunCache | None = None,
    incremental: bool = False,
) -> Output:
    """Load, plan and render; then write ``out_dir`` atomically (or only compare, with check).

    Nothing is written when a job or runtime would change where the cluster
    forbids it, compared with the deployed tree: git revision ``against``, or
    by default what Argo CD follows (see ``deployed.resolve_baseline``).

    With ``use_cache`` (and unless ``cache_dir.cache_enabled`` says no: CI, a tracked
    cache), a definition file with unchanged inputs is not run again (``load.cache``),
    an unchanged object is not written by cdk8s again (``serialize``), and the run is
    recorded for the command's no-change check (``runcache``; ``runs`` when the caller
    already made it). With ``incremental`` too, the outputs of unchanged job files are
    reused when the last run's record allows it (``synth.delta``); the files written and
    the verdict are those of a full run.
    """
    root = root or jobs_dir.resolve().parent
    if not (use_cache and cache_enabled()):
        runs = None
    elif runs is None:
        runs = RunCache(root, jobs_dir, out_dir, synth_options(against, require_baseline, root))
    directory = repo_cache_dir(root) if runs is not None else None
    definitions = (
        DefinitionCache(directory, runs.data_stamp(), root.resolve())
        if directory is not None and runs is not None
        else None
    )
    reuse = None
    if incremental and runs is not None and definitions is not None:
        reuse = reuse_last(jobs_dir, out_dir, root, runs, definitions, load_options)
    if reuse is not None:
        loaded, plan, groups, effective = reuse.loaded, reuse.plan, reuse.groups, reuse.effective
    else:
        # Node starts while the definitions run (in processes forked before it exists).
        loaded = load_jobs(
            jobs_dir, root, options=load_options, while_loading=prewarm, cache=definitions
        )
        plan = build_plan(loaded.definitions)
        groups = render_groups(plan)
        effective = check_cluster_truth(plan, groups)
    # A reuse renders the platform's few objects and the changed ones: none is worth reading
    # (and writing back) the cache of every object's YAML for.
    cache = YamlCache(directory / "yaml.json" if directory is not None and reuse is None else None)
    origins: dict[str, Definition] = {}
    kept = reuse.kept if reuse is not None else None
    files = render_files(plan, cache, origins, groups, synth_command(root), kept)
    revision = plan.argocd.revision if plan.argocd else "main"
    baseline = _read_once(
        resolve_baseline(root, out_dir, against, revision, require=require_baseline)
    )
    last = reuse.last if reuse is not None else runs.last("synth") if runs else None
    rendered = {path: _sha(files[path]) for path in origins}
    compare = _to_compare(origins, rendered, baseline, last)
    try:
        if reuse is not None and baseline_id(baseline) != reuse.last.baseline:
            raise _NotReused
        keep_deployed(files, compare, baseline)
        refuse_in_place_changes(files, compare, baseline)
    except (_NotReused, DefinitionError):
        if reuse is None:
            raise
        reuse.read.close()
        # The full run gives the verdict, with every message.
        return synthesize(
            jobs_dir, out_dir, root=root, check=check, against=against,
            load_options=load_options, require_baseline=require_baseline, runs=runs,
        )  # fmt: skip
    read = reuse.read if reuse is not None else None
    if check:
        changes = compare_tree(out_dir, files, read.files if read is not None else None)
        if read is not None:
            read.close()
    else:
        changes = write_tree(out_dir, files, display=_display(out_dir, root), read=read)
    cache.save()
    record = None
    if runs is not None:
        imports = runs.repository_imports(loaded.imports)
        if reuse is None:
            facts = file_facts(jobs_dir, root, loaded, plan, groups, effective)
        else:
            imports = sorted(set(imports) | set(reuse.last.imports))
            facts = reuse.facts
            rendered = {
                **{p: h for p, h in reuse.last.rendered.items() if p in reuse.kept},
                **rendered,
            }
        record = Record(
            key=runs.key("synth", imports, {}),
            revision=revision,
            baseline=baseline_id(baseline),
            outputs={path: _sha(data) for path, data in files.items()},
            rendered=rendered,
            imports=imports,
            warnings=[str(w) for w in plan.warnings],
            frame=runs.frame("synth", {}),
            tree=runs.tree,
            files=facts,
        )
        runs.save("synth", record)
    reused = len(reuse.kept) if reuse is not None else 0
    return Output(files, plan, changes, baseline, loaded.notices, effective, runs, record, reused)


class _NotReused(Exception):
    """The deployed tree is not the one the reused run compared with."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _to_compare(
    origins: dict[str, Definition],
    rendered: dict[str, str],
    baseline: Baseline,
    last: Record | None,
) -> dict[str, Definition]:
    """The job and runtime files to compare with their deployed versions.

    Keeping deployed bytes and refusing in-place changes depend only on a file's rendered
    bytes and its deployed bytes. So against the same commit as the last run, a file
    rendered exactly as then, which then kept its own bytes, gets the same verdict (none,
    or the run would have failed) without reading git; every other file is compared.
    """
    if last is None or baseline.git is None or last.baseline != baseline_id(baseline):
        return origins
    return {
        path: d
        for path, d in origins.items()
        if not (last.rendered.get(path) == rendered[path] == last.outputs.get(path))
    }


@dataclass(frozen=True)
class _ReadOnce(Baseline):
    """A git baseline whose files are read once per run: keeping deployed bytes, refusing
    in-place changes and validating transition rules all ask for the same files."""

    read: dict[str, bytes | None] = field(default_factory=dict, repr=False, compare=False)

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = list(paths)
        unknown = [p for p in wanted if p not in self.read]
        if unknown:
            got = super().read_many(unknown)
            self.read.update((p, got.get(p)) for p in unknown)
        return {p: data for p in wanted if (data := self.read[p]) is not None}


def _read_once(baseline: Baseline) -> Baseline:
    if baseline.git is None:
        return baseline  # the files on disk, or nothing
    return _ReadOnce(baseline.description, baseline.directory, baseline.git, baseline.nothing)


def _display(path: Path, root: Path) -> str:
    # The parent resolved, not the directory: a symlinked output is named as the user wrote it.
    full = Path(os.path.abspath(path))
    try:
        return (full.parent.resolve() / full.name).relative_to(root.resolve()).as_posix() + "/"
    except ValueError:
        return path.as_posix()
