"""Plan → files of ``generated/``: layout, headers, kustomizations, Argo CD.

The layout (relative to the output directory)::

    argocd/                      the root Application (applied once by an admin, then syncing
                                 this directory), the AppProjects, the Applications below;
                                 the argocd-cm health checks (see render/argocd.py)
    clusters/<cluster>/          what Argo CD syncs to <cluster>
        kustomization.yaml       all of the cluster's Applications (for overlays; Argo CD
                                 builds each Application's directory alone)
        kustomize/               a Component every kustomization includes:
            kustomizeconfig.yaml     the CRD fields kustomize must know (name references,
            kustomize-openapi.yaml   images), and which CRD kinds are cluster-scoped
        platform/                the platform's Application
            namespaces/<ns>.yaml, queues/<queue>.yaml, runtimes/<name>.yaml (Cluster-
            TrainingRuntimes), kueue/*.yaml, <ns>/trainingruntime-<name>.yaml,
            <ns>/localqueue-<queue>.yaml
        <namespace>/             a team's Application (part 1): pytorchjob-<name>.yaml,
                                 trainjob-<name>-r<run>.yaml, configmap-<job>-script-<hash>.yaml
            part-<k>/            its further parts (``parts``), at most PART_OBJECTS each

``synthesize`` runs the pipeline and writes: one pipeline, with or without caches;
``layout`` turns a plan into these files; ``parts`` places each team's jobs in its
Applications; ``delta`` reads the last run's record to decide which unchanged job files the
pipeline may skip (their files are kept); ``migration`` guards the move from one Application
per cluster.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache_dir import cache_enabled, repo_cache_dir
from ..deployed.baseline import Baseline, resolve_baseline
from ..deployed.inplace import keep_deployed, refuse_in_place_changes
from ..effective import EffectiveJob
from ..errors import DefinitionError, Problem, TrainkitError
from ..load import Definition, DefinitionCache, LoadOptions, load_jobs
from ..repo_root import synth_command
from ..resolve import Plan, build_plan
from ..runcache import Record, RunCache, baseline_id, synth_options
from ..serialize import YamlCache, prewarm
from ..write import Changes, compare_tree, write_tree
from .delta import NOTHING, Skipped, file_facts, what_to_skip
from .layout import (
    Groups,
    KeptMoved,
    Rendered,
    check_cluster_truth,
    effective_jobs,
    render_files,
    render_groups,
    rendered_runtimes,
)
from .migration import check_migration
from .parts import PLATFORM_DIR, logical_path, team_file

__all__ = [
    "Groups",
    "KeptMoved",
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
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The object rendered for each file of Kubernetes objects, by path: what policy
    judged (with ``incremental``, only this run's)."""
    kept: frozenset[str] = frozenset()
    """Files that hold their deployed bytes instead of the new rendering
    (``deployed.keep_deployed``)."""


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
    rendering: Callable[[], None] | None = None,
) -> Output:
    """Load, plan and render; then write ``out_dir`` atomically (or only compare, with check).

    Nothing is written when a job or runtime would change where the cluster
    forbids it, compared with the deployed tree: git revision ``against``, or
    by default what Argo CD follows (see ``deployed.resolve_baseline``).

    With ``use_cache`` (and unless ``cache_dir.cache_enabled`` says no: CI, a tracked
    cache), a definition file with unchanged inputs is not run again (``load.cache``),
    an unchanged object is not written by cdk8s again (``serialize``), and the run is
    recorded for the command's no-change check (``runcache``; ``runs`` when the caller
    already made it). With ``incremental`` too, the last run's record decides which job
    files the pipeline skips (``synth.delta``): the same pipeline runs either way, and the
    files written and the verdict are those of a full run.

    ``rendering`` is called once the definitions loaded and the plan passed the platform's
    rules, as the files are about to be rendered (``check`` starts its kustomize builds
    there: a run refused before would throw them away).
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
    inputs = _Inputs(
        jobs_dir, out_dir, root, check, against, load_options, require_baseline, runs, directory,
        definitions, rendering,
    )  # fmt: skip
    if incremental and runs is not None and definitions is not None:
        skipped = what_to_skip(jobs_dir, out_dir, root, runs, definitions)
        if skipped.anything:
            try:
                return _pipeline(inputs, skipped)
            except _NotReused:
                pass  # the full run gives the verdict, with every message
            finally:
                if skipped.read is not None:
                    skipped.read.close()
    return _pipeline(inputs, NOTHING)


@dataclass(frozen=True)
class _Inputs:
    jobs_dir: Path
    out_dir: Path
    root: Path
    check: bool
    against: str | None
    load_options: LoadOptions | None
    require_baseline: bool
    runs: RunCache | None
    directory: Path | None
    definitions: DefinitionCache | None
    rendering: Callable[[], None] | None


OBJECTS_PER_FILE = 4
"""About how many objects a job file renders to (a job on two clusters: the job and its
script's ConfigMap on each): how much node a run that loads files will need."""


def _prewarm_for(files: int) -> None:
    # As much node as the files run will need: one more process than that is started for
    # nothing (its start-up alone costs more CPU than a small tree's synth); the synth
    # starts more if the objects turn out more.
    prewarm(files * OBJECTS_PER_FILE)


def _pipeline(i: _Inputs, skipped: Skipped) -> Output:
    """Load → plan → render → check → files → compare with what is deployed → write, for
    every definition file but those ``skipped`` (whose output is kept). With anything
    skipped, a problem or a disagreement with the skipped part raises ``_NotReused``."""
    try:
        if skipped.anything:
            # Node starts now, beside the load: the changed objects will need it, and no
            # definition process is forked from this one (load.server).
            prewarm(skipped.loading * OBJECTS_PER_FILE, background=True)
        # Without a skip, node starts while the definitions run (in processes forked before).
        loaded = load_jobs(
            i.jobs_dir, i.root, skip=skipped.files, options=i.load_options,
            while_loading=None if skipped.anything else _prewarm_for, cache=i.definitions,
        )  # fmt: skip
        plan = build_plan(loaded.definitions)
        revision = plan.argocd.revision if plan.argocd else "main"
        # The parts of the deployed tree are kept (synth.parts).
        baseline = _read_once(
            resolve_baseline(i.root, i.out_dir, i.against, revision, require=i.require_baseline)
        )
        if skipped.last is not None and baseline_id(baseline) != skipped.last.baseline:
            raise _NotReused
        groups = render_groups(plan, deployed=baseline.paths(), kept=skipped.kept)
        try:
            effective = check_cluster_truth(plan, groups)
        except DefinitionError as policy:
            if skipped.anything:
                raise
            # Every error in one run: a job over a cap may also change in place, and the
            # user should not fix one to be told of the other.
            raise DefinitionError(
                [*policy.problems, *_in_place_problems(i, plan, groups, baseline)]
            ) from None
        notices = [*loaded.notices, *check_migration(plan, baseline)]
    except KeptMoved:
        raise _NotReused from None  # a kept file would move: only with a skip
    except DefinitionError:
        if skipped.anything:
            raise _NotReused from None
        raise
    facts = (
        file_facts(i.jobs_dir, i.root, loaded, plan, groups, effective)
        if i.runs is not None
        else {}
    )
    if not skipped.agrees(plan, groups, effective, facts):
        raise _NotReused
    # A skip renders the platform's few objects and the changed ones: none is worth reading
    # (and writing back) the cache of every object's YAML for.
    if i.rendering is not None:
        i.rendering()
    use_yaml = i.directory is not None and not skipped.anything
    cache = YamlCache(i.directory / "yaml.json" if i.directory is not None and use_yaml else None)
    origins: dict[str, Definition] = {}
    files = render_files(plan, cache, origins, groups, synth_command(i.root), skipped.kept)
    last = skipped.last or (i.runs.last("synth") if i.runs else None)
    rendered = {path: _sha(files[path]) for path in origins}
    compare = _to_compare(origins, rendered, baseline, last)
    try:
        kept_deployed = keep_deployed(files, compare, baseline)
        refuse_in_place_changes(files, compare, baseline)
    except DefinitionError:
        if skipped.anything:
            raise _NotReused from None
        raise
    read = skipped.read
    if i.check:
        changes = compare_tree(i.out_dir, files, read.files if read is not None else None)
    else:
        changes = write_tree(i.out_dir, files, display=_display(i.out_dir, i.root), read=read)
    cache.save()
    record = None
    if i.runs is not None:
        imports = i.runs.repository_imports(loaded.imports)
        if skipped.last is not None:
            imports = sorted(set(imports) | set(skipped.last.imports))
            rendered = {
                **{p: h for p, h in skipped.last.rendered.items() if p in skipped.kept},
                **rendered,
            }
        record = Record(
            key=i.runs.key("synth", imports, {}),
            revision=revision,
            baseline=baseline_id(baseline),
            outputs={path: _sha(data) for path, data in files.items()},
            rendered=rendered,
            imports=imports,
            warnings=[str(w) for w in plan.warnings],
            frame=i.runs.frame("synth", {}),
            tree=i.runs.tree,
            # Every file found has fresh facts, the skipped ones empty: theirs are the last run's.
            files={**facts, **skipped.facts},
        )
        i.runs.save("synth", record)
    objects = {r.path: r.body for _, items in groups for r in items if not r.plain}
    return Output(
        files, plan, changes, baseline, notices, effective, i.runs, record,
        len(skipped.kept), objects, frozenset(kept_deployed),
    )  # fmt: skip


class _NotReused(Exception):
    """The part of the tree this run loaded does not agree with the part it skipped (or has a
    problem, or the deployed tree is not the one the skipped run compared with): run the
    pipeline again, skipping nothing."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _in_place_problems(i: _Inputs, plan: Plan, groups: Groups, baseline: Baseline) -> list[Problem]:
    """The in-place changes the render would make, for a run failing on other problems.

    The objects' YAML comes from the repository's cache where caches are on, as a passing
    run's does (each cached text checked, ``serialize``): only the changed objects go to
    cdk8s. The cache file is not written (the run fails)."""
    origins: dict[str, Definition] = {}
    cache = YamlCache(i.directory / "yaml.json" if i.directory is not None else None)
    files = render_files(plan, cache, origins, groups, synth_command(i.root))
    try:
        refuse_in_place_changes(files, origins, baseline)
    except TrainkitError as e:
        return e.problems
    return []


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
    in-place changes and validating transition rules all ask for the same files.

    A file the deployed tree holds at its path before the parts (``platform/`` and
    ``part-<k>/`` came with them: ``synth.parts``) is read from there: the same object,
    compared with its deployed version during the migration too.
    """

    read: dict[str, bytes | None] = field(default_factory=dict, repr=False, compare=False)
    listed: list[list[str]] = field(default_factory=list, repr=False, compare=False)

    def paths(self) -> list[str]:
        if not self.listed:
            self.listed.append(super().paths())
        return self.listed[0]

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = list(paths)
        before = {p: _before_parts(p) for p in wanted}
        asked = set(wanted) | {b for b in before.values() if b is not None}
        unknown = [p for p in asked if p not in self.read]
        if unknown:
            got = super().read_many(unknown)
            self.read.update((p, got.get(p)) for p in unknown)
        out = {}
        for p in wanted:
            data = self.read[p]
            if data is None and (old := before[p]) is not None:
                data = self.read[old]
            if data is not None:
                out[p] = data
        return out


def _before_parts(path: str) -> str | None:
    """Where the layout before parts kept this file, when elsewhere."""
    parts = path.split("/")
    if len(parts) > 3 and parts[0] == "clusters" and parts[2] == PLATFORM_DIR:
        return "/".join(parts[:2] + parts[3:])
    if team_file(path) is not None and (old := logical_path(path)) != path:
        return old
    return None


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
