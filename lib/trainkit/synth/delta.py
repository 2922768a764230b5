"""What the last run's record lets a synth skip: the job files that did not change.

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
  and after, or a script (or a RayJob's ``working_dir`` file) only such files ship; no
  symbolic link anywhere in ``jobs/``;
- no output file of a changed definition file was also an unchanged one's (see
  ``what_to_skip``).

Then the pipeline (``synth.synthesize``, the same code as a full run) loads, plans,
renders and checks the platform and the changed files only (the platform is small and
decides everything else), keeps the unchanged files' outputs as they are on disk, and
checks the two cross-job rules against the recorded facts (``Skipped.agrees``). Anything
else, or any problem at all, and the pipeline runs again skipping ``NOTHING``, which also
writes every message: a skip only ever proves a tree fine, never refuses one.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..effective import EffectiveJob
from ..load import PLATFORM_DIR, Definition, DefinitionCache, Loaded, definition_files
from ..policy import team_gpus, teams_over_cap
from ..resolve import Plan
from ..runcache import Record, RunCache
from ..write import Snapshot, snapshot
from ..write.swap import leftovers
from .rendered import Groups

__all__ = ["NOTHING", "Skipped", "file_facts", "what_to_skip"]


@dataclass(frozen=True)
class Skipped:
    """What the last run's record lets this run leave out: the job files it does not load,
    their output files (kept as the last run wrote them) and the facts of theirs that the
    two cross-job rules need. ``NOTHING`` leaves nothing out: a full run."""

    files: frozenset[str] = frozenset()
    """Definition files not loaded (``Definition.file``, relative to the root)."""
    kept: Mapping[str, bytes] = field(default_factory=dict)
    """Their output files, as the last run wrote them."""
    facts: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """Every skipped file's facts, as the last run recorded them (``file_facts``)."""
    taken: frozenset[tuple[str, str, str]] = frozenset()
    """(cluster, namespace, object name) of every skipped job."""
    gpus: tuple[tuple[str, str, int], ...] = ()
    """(team, cluster, GPUs) of the skipped jobs."""
    loading: int = 0
    """How many job files this run loads (the changed ones)."""
    unexplained: frozenset[str] = frozenset()
    """Changed files only a loaded definition may explain (its new script)."""
    last: Record | None = None
    """The run whose output is reused."""
    read: Snapshot | None = None
    """The output directory as read (and checked against ``last``), for ``write_tree``."""

    @property
    def anything(self) -> bool:
        return bool(self.files)

    def agrees(
        self,
        plan: Plan,
        groups: Groups,
        effective: list[EffectiveJob],
        facts: Mapping[str, dict[str, Any]],
    ) -> bool:
        """Whether this run's loaded part agrees with what was skipped: no name taken by a
        skipped job, no team over its cap with the skipped jobs' GPUs, no output path of a
        skipped file produced again, and every unexplained change a loaded job's script."""
        if not self.anything:
            return True
        if any((pj.cluster.name, pj.namespace, pj.object_name) in self.taken for pj in plan.jobs()):
            return False
        totals: dict[tuple[str, str], int] = defaultdict(int, team_gpus(effective))
        for team, cluster, n in self.gpus:
            totals[(team, cluster)] += n
        if teams_over_cap(plan.index, totals):
            return False
        if any(r.path in self.kept for _, items in groups for r in items):
            return False
        deps = {dep for f in facts.values() for dep in f.get("deps", ())}
        return self.unexplained <= deps


NOTHING = Skipped()


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
        env = getattr(d.obj, "runtime_env", None)
        if f is not None and f["jobs"] and d.working_dir and env is not None and env.local_dir:
            # Its shipped files (load/working_dir_files.py: inside jobs/, links to files only).
            top = (root / d.file).parent / env.local_dir
            for rel in d.working_dir:
                path = (top / rel).resolve()
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


def what_to_skip(
    jobs_dir: Path,
    out_dir: Path,
    root: Path,
    runs: RunCache,
    definitions: DefinitionCache,
) -> Skipped:
    """What the last run's record lets this run leave out (``NOTHING`` when in doubt).
    A ``Skipped`` with ``read`` holds the output directory open: the caller closes it."""
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
        return NOTHING
    tree = runs.tree
    changed = {rel for rel in last.tree.keys() | tree.keys() if last.tree.get(rel) != tree.get(rel)}
    changes = _dirty(jobs_dir, last, tree, changed)
    if changes is None:
        return NOTHING
    dirty, unexplained = changes
    clean = {rel: f for rel, f in last.files.items() if rel not in dirty}
    if _imports_a_change(jobs_dir, prefix, clean, changed, definitions):
        return NOTHING
    read = _last_output(out_dir, last)
    if read is None:
        return NOTHING
    try:
        existing = read.files
        kept = {path: existing[path] for f in clean.values() if f["jobs"] for path in f["outputs"]}
        rewritten = {
            path for rel in dirty & last.files.keys() for path in last.files[rel]["outputs"]
        }
        taken = frozenset((c, ns, name) for f in clean.values() for c, ns, name in f["names"])
        gpus = tuple((t, c, int(n)) for f in clean.values() for t, c, n in f["gpus"])
    except (KeyError, TypeError, ValueError):
        read.close()
        return NOTHING  # a record this code did not write: the full run replaces it
    if not rewritten.isdisjoint(kept):
        # A file a changed definition wrote too (two runs of a job shipping one script share
        # its ConfigMap): it names the definition that wrote it last, which may now be
        # changed or gone. Only the full run knows which one writes it now.
        read.close()
        return NOTHING
    return Skipped(
        files=frozenset(prefix + rel for rel, f in clean.items() if f["jobs"]),
        kept=kept,
        facts=clean,
        taken=taken,
        gpus=gpus,
        loading=len(dirty),
        unexplained=frozenset(unexplained),
        last=last,
        read=read,
    )


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
