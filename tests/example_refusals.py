"""What ``trainkit synth`` refuses in an edited copy of the example tree, found in-process.

``refusals(ws)`` runs the steps of the synth that judge the definitions (load, plan, render,
policy: ``synth._pipeline`` up to its files) on ``ws`` (the ``ws`` fixture's copy of the
examples, edited by the test) and returns the error lines the command prints, without
serializing, writing or building anything. Only the definition files that differ from the
repository's run again; the others' objects come from one load of the examples per process
(no example file imports another, so an edit changes only its own file's objects). When
anything else under jobs/ differs (a script, a data file a definition may read), every file
runs again.

Without a git repository nothing is deployed, so the synth's in-place checks, which it adds
to a policy refusal, find nothing there: these lines are all it prints.

Tests of a rule use it; the wiring (that ``synth`` and ``check`` run these steps, print
their problems and exit 1 with generated/ untouched) keeps end-to-end tests of its own
(tests/test_policy.py), which also check that this helper prints what the commands print.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from trainkit.errors import DefinitionError
from trainkit.load import Definition, load_jobs
from trainkit.resolve import build_plan
from trainkit.synth import check_cluster_truth, render_groups

REPO = Path(__file__).resolve().parents[1]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``/jobs by its path relative to ``root``."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in (root / "jobs").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


@functools.cache
def _examples() -> tuple[dict[str, bytes], dict[str, tuple[Definition, ...]]]:
    """The example tree's files and the objects of each definition file."""
    loaded = load_jobs(REPO / "jobs", REPO)
    by_file: dict[str, list[Definition]] = {rel: [] for rel in loaded.files}
    for d in loaded.definitions:
        by_file[d.file].append(d)
    return _tree(REPO), {rel: tuple(ds) for rel, ds in by_file.items()}


def refusals(ws: Any) -> str:
    """The ``error: …`` lines ``trainkit synth`` prints for the tree of ``ws``, or "" when it
    accepts the tree."""
    tree, pristine = _examples()
    now = _tree(ws.root)
    changed = {rel for rel in tree.keys() | now.keys() if tree.get(rel) != now.get(rel)}
    unchanged = [] if changed - pristine.keys() else [r for r in pristine if r not in changed]
    try:
        loaded = load_jobs(ws.jobs, ws.root, skip=unchanged)
        fresh: dict[str, list[Definition]] = {rel: [] for rel in loaded.files}
        for d in loaded.definitions:
            fresh[d.file].append(d)
        plan = build_plan(
            [d for rel in loaded.files for d in (pristine[rel] if rel in unchanged else fresh[rel])]
        )
        check_cluster_truth(plan, render_groups(plan))
    except DefinitionError as e:
        return "\n".join(f"error: {p}" for p in e.problems)
    return ""
