"""A synth that reuses the last run's output for the job files that did not change.

Editing one job of a thousand should not run, check and render the other 999 again.
Every job check is a function of the job's own definition, the platform and trainkit
itself, except two that look across jobs: names unique per namespace and cluster
(``plan.jobs.check_unique``) and a team's GPUs on a cluster together under
``Team.max_gpus`` (``policy.caps``). So the last successful synth records, per
definition file, what those two need and which output files it produced
(``file_facts``), and the next run reuses them when it may:

- the same trainkit, options and output directory (the record's frame), the same
  imported repository files, and the output directory exactly as that run left it
  (every file's SHA-256);
- every changed path under ``jobs/`` is a definition file that held only jobs, before
  and after, or a script only such files ship; no symbolic link anywhere in ``jobs/``.

Then only the platform and the changed files are loaded, planned, rendered and checked
(the platform is small and decides everything else), the unchanged files' outputs are
kept as they are on disk, and the two cross-job rules are checked against the recorded
facts. Anything else, or any problem at all, and the caller runs the full synth, which
also writes every message: this path only ever proves a tree fine, never refuses one.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..effective import EffectiveJob
from ..errors import DefinitionError
from ..load import (
    PLATFORM_DIR,
    Definition,
    DefinitionCache,
    Loaded,
    LoadOptions,
    definition_files,
    load_jobs,
)
from ..policy import team_gpus, teams_over_cap
from ..resolve import Plan, build_plan
from ..runcache import Record, RunCache
from ..serialize import prewarm
from ..write import Snapshot, snapshot
from ..write.swap import leftovers
from .layout import Groups, KeptMoved, check_cluster_truth, render_groups

__all__ = ["Reuse", "file_facts", "reuse_last"]


@dataclass(frozen=True)
class Reuse:
    """The changed part of the tree, checked, and what is kept of the last run."""

    last: Record
    loaded: Loaded
    """The platform and the changed definition files only."""
    plan: Plan
    groups: Groups
    effective: list[EffectiveJob]
    kept: dict[str, bytes]
    """The output files of the unchanged job files, as the last run wrote them."""
    read: Snapshot
    """The output directory as read (and checked), for ``write_tree``."""
    facts: dict[str, dict[str, Any]]
    """Every definition file's facts for this run's record: the loaded files' fresh ones,
    the unchanged job files' as the last run recorded them."""


def file_facts(
    jobs_dir: Path,
    root: Path,
    loaded: Loaded,
    plan: Plan,
    groups: Groups,
    effective: list[EffectiveJob],
) -> dict[str, dict[str, Any]]:
    """Per definition file (relative to ``jobs_dir``): whether it holds only jobs, the
    scripts it ships, its output files, its jobs' names and their GPUs per team and
    cluster. Empty when ``jobs_dir`` is not inside ``root``."""
    prefix = _prefix(jobs_dir, root)
    if prefix is None:
        return {}
    # A team directory holds jobs only; every other kind lives in the platform's (the
    # loader refuses it elsewhere: load.rebuild).
    facts: dict[str, dict[str, Any]] = {
        rel.removeprefix(prefix): {
            "jobs": not rel.removeprefix(prefix).startswith(PLATFORM_DIR + "/"),
            "deps": [],
            "outputs": [],
            "names": [],
            "gpus": [],
        }
        for rel in loaded.files
        if rel.startswith(prefix)
    }

    def of(d: Definition) -> dict[str, Any] | None:
        return facts.get(d.file.removeprefix(prefix)) if d.file.startswith(prefix) else None

    jobs_real = jobs_dir.resolve()
    for d in loaded.definitions:
        f = of(d)
        script = getattr(d.obj, "script", None)
        if f is not None and f["jobs"] and script is not None:
            path = ((root / d.file).parent / script.path).resolve()
            f["deps"].append(path.relative_to(jobs_real).as_posix())
    by_source = {prefix + rel: f for rel, f in facts.items()}
    for _, items in groups:
        for r in items:
            if r.source in by_source:
                by_source[r.source]["outputs"].append(r.path)
    per_file: dict[str, list[EffectiveJob]] = defaultdict(list)
    for ej in effective:
        per_file[ej.planned.definition.file].append(ej)
    for pj in plan.jobs():
        f = of(pj.definition)
        if f is not None:
            f["names"].append([pj.cluster.name, pj.namespace, pj.object_name])
    for file, ejs in per_file.items():
        f = by_source.get(file)
        if f is not None:
            f["gpus"] = [[t, c, n] for (t, c), n in sorted(team_gpus(ejs).items())]
    return facts


def reuse_last(
    jobs_dir: Path,
    out_dir: Path,
    root: Path,
    runs: RunCache,
    definitions: DefinitionCache,
    load_options: LoadOptions | None,
    deployed: list[str],
) -> Reuse | None:
    """The changed part of the tree, proven fine, or None: run the full synth. ``deployed``
    are the deployed tree's paths, which the last run placed the jobs against too."""
    last = runs.last("synth")
    prefix = _prefix(jobs_dir, root)
    if (
        last is None
        or prefix is None
        or not last.files
        or last.frame != runs.frame("synth", {})
        or not runs.imports_unchanged(last)
        or any(not _plain(token) for token in runs.tree.values())
    ):
        return None
    tree = runs.tree
    changed = {rel for rel in last.tree.keys() | tree.keys() if last.tree.get(rel) != tree.get(rel)}
    changes = _dirty(jobs_dir, last, tree, changed)
    if changes is None:
        return None
    dirty, unexplained = changes
    clean = {rel: f for rel, f in last.files.items() if rel not in dirty}
    if _imports_a_change(jobs_dir, prefix, clean, changed, definitions):
        return None
    read = _last_output(out_dir, last)
    if read is None:
        return None
    try:
        reuse = _reuse(
            jobs_dir, root, last, prefix, (dirty, unexplained), clean, read, definitions,
            load_options, deployed,
        )  # fmt: skip
    except BaseException:
        read.close()
        raise
    if reuse is None:
        read.close()
    return reuse


def _reuse(
    jobs_dir: Path,
    root: Path,
    last: Record,
    prefix: str,
    changes: tuple[set[str], set[str]],
    clean: dict[str, dict[str, Any]],
    read: Snapshot,
    definitions: DefinitionCache,
    load_options: LoadOptions | None,
    deployed: list[str],
) -> Reuse | None:
    """Load, plan, render and check the platform and the changed files; check the cross-job
    rules against the ``clean`` files' facts. None when a kept file would move to another
    part (``synth.parts``)."""
    dirty, unexplained = changes
    existing = read.files
    try:
        kept = {path: existing[path] for f in clean.values() if f["jobs"] for path in f["outputs"]}
        taken = {(c, ns, name) for f in clean.values() for c, ns, name in f["names"]}
        clean_gpus = [(t, c, int(n)) for f in clean.values() for t, c, n in f["gpus"]]
    except (KeyError, TypeError, ValueError):
        return None  # a record this code did not write: the full run replaces it
    skip = {prefix + rel for rel, f in clean.items() if f["jobs"]}
    # Node starts now (if the caller has not started it), beside the load: the changed
    # objects will need it, and no definition process is forked from this one (load.server).
    prewarm(len(dirty) * 4, background=True)
    try:
        loaded = load_jobs(jobs_dir, root, skip=skip, options=load_options, cache=definitions)
        plan = build_plan(loaded.definitions)
        if any((pj.cluster.name, pj.namespace, pj.object_name) in taken for pj in plan.jobs()):
            return None  # a name clash with an unchanged job: the full run names both
        groups = render_groups(plan, deployed=deployed, kept=kept)
        effective = check_cluster_truth(plan, groups)
    except (DefinitionError, KeptMoved):
        return None
    totals: dict[tuple[str, str], int] = defaultdict(int, team_gpus(effective))
    for team, cluster, n in clean_gpus:
        totals[(team, cluster)] += n
    if teams_over_cap(plan.index, totals):
        return None
    if any(r.path in kept for _, items in groups for r in items):
        return None
    # Each new file is the script of a changed job, or it may be anything a definition read.
    facts = file_facts(jobs_dir, root, loaded, plan, groups, effective)
    if not unexplained <= {dep for rel in dirty for dep in facts.get(rel, {}).get("deps", ())}:
        return None
    # Every file found has fresh facts, the skipped ones empty: theirs are the last run's.
    return Reuse(last, loaded, plan, groups, effective, kept, read, {**facts, **clean})


def _dirty(
    jobs_dir: Path, last: Record, tree: Mapping[str, str], changed: set[str]
) -> tuple[set[str], set[str]] | None:
    """The definition files (relative to ``jobs_dir``) to load again, and the ``changed``
    files that only a changed definition may explain (a new script); None when a change is
    not a job file's own."""
    old = last.tree
    real = jobs_dir.resolve()
    found: list[set[str]] = []

    def now() -> set[str]:  # walked only when a changed file is not a known one
        if not found:
            found.append(
                {p.resolve().relative_to(real).as_posix() for p in definition_files(jobs_dir)}
            )
        return found[0]

    users: dict[str, set[str]] = defaultdict(set)
    for rel, f in last.files.items():
        for dep in f.get("deps", ()):
            users[dep].add(rel)
    dirty: set[str] = set()
    unexplained: set[str] = set()
    for rel in sorted(changed):
        known = last.files.get(rel)
        if known is not None:
            if not known.get("jobs"):
                return None  # the platform's
            dirty.add(rel)
        elif rel not in old and rel in now():
            dirty.add(rel)  # a new definition file
        elif rel in users:
            dirty |= users[rel]
        elif rel in tree:
            unexplained.add(rel)  # a new script of a changed job, or a helper, or data
        else:
            return None  # gone, and nobody's script: it may have been read
    return (dirty, unexplained) if dirty else None


def _imports_a_change(
    jobs_dir: Path,
    prefix: str,
    clean: Mapping[str, dict[str, Any]],
    changed: set[str],
    definitions: DefinitionCache,
) -> bool:
    """Whether an unchanged job file imported a ``changed`` file under ``jobs/`` (another
    definition file, say), or its imports are unknown: its objects may have changed."""
    real = str(jobs_dir.resolve())
    paths = {os.path.join(real, rel) for rel in changed}
    for rel, f in clean.items():
        if not f.get("jobs"):
            continue
        imported = definitions.imports(prefix + rel)
        if imported is None or not paths.isdisjoint(imported):
            return True
    return False


def _last_output(out_dir: Path, last: Record) -> Snapshot | None:
    """The output directory if its files are exactly those the last run recorded."""
    if leftovers(out_dir) or out_dir.is_symlink():
        return None
    read = snapshot(out_dir)
    hashes = {path: hashlib.sha256(data).hexdigest() for path, data in read.files.items()}
    if hashes != last.outputs:
        read.close()
        return None
    return read


def _plain(token: str) -> bool:
    return not token.startswith(("link:", "unreadable", "special"))


def _prefix(jobs_dir: Path, root: Path) -> str | None:
    try:
        rel = jobs_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    return None if rel == "." else rel + "/"
