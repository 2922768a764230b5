"""Before the pipeline runs: Node.js for cdk8s, the definitions' origin process, and the
record of the last run that may answer instead."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem, SetupError
from .options import require_baseline
from .printing import report_format

if TYPE_CHECKING:
    from ..load import DefinitionCache
    from ..runcache import Record, RunCache

__all__ = ["definitions_cache", "prestart", "require_node", "run_cache", "unchanged"]


def require_node() -> None:
    """cdk8s writes the manifests and runs on Node.js: say so in one line, not a traceback."""
    node = os.environ.get("JSII_NODE", "node")
    if shutil.which(node) is None:
        raise SetupError(
            [
                Problem(
                    file=node,
                    message="Node.js not found on PATH; trainkit writes manifests with cdk8s, "
                    "which runs on it: install Node.js 18 or newer (https://nodejs.org, "
                    "`apt-get install nodejs`, `brew install node`) and run again",
                )
            ]
        )


def prestart(args: argparse.Namespace, runs: RunCache | None) -> None:
    """Definitions will run: start their origin process while the pipeline is imported.

    Not when every definition file's last payload is in the definitions cache with its inputs
    unchanged (``load.cache``): none will run, and the origin (an interpreter that imports
    the models) cost about 0.8 CPU-s for nothing. A file that changes before the load, or a
    payload that no longer rebuilds, starts it then, as a load without this does."""
    if runs is not None and _all_cached(args, runs):
        return
    from ..load.server import prestart

    prestart()


def _all_cached(args: argparse.Namespace, runs: RunCache) -> bool:
    from ..load.discover import find_definitions

    jobs = Path(args.jobs).resolve()
    files, _ = find_definitions(jobs, jobs.parent)
    cache = _repository_cache(jobs, runs.data_stamp())
    return bool(files) and all(cache.lookup(f) is not None for f in files)


def definitions_cache(jobs: Path, *, no_cache: bool) -> DefinitionCache | None:
    """For a command that loads definitions but records no run (``plan``, ``explain``,
    ``validate``): the definitions cache synth keeps for the repository of ``jobs``
    (``load.cache``), unless caches are off (``cache_dir.cache_enabled``) or ``jobs`` is no
    directory."""
    from ..cache_dir import cache_enabled
    from ..runcache import data_stamp

    if not cache_enabled(no_cache=no_cache) or not jobs.is_dir():
        return None
    return _repository_cache(jobs.resolve(), data_stamp(jobs))


def _repository_cache(jobs: Path, data_stamp: str) -> DefinitionCache:
    """The definitions cache of the repository whose definitions are in ``jobs`` (resolved)."""
    from ..cache_dir import repo_cache_dir
    from ..load.cache import DefinitionCache

    root = jobs.parent  # as synthesize's, and the run cache's
    return DefinitionCache(repo_cache_dir(root), data_stamp, root)


def run_cache(args: argparse.Namespace) -> RunCache | None:
    """The run records for this command line, unless caches are off (see ``cache_dir``).

    Only for text reports: a recorded warning is a line of text, not a located problem.
    """
    from ..cache_dir import cache_enabled

    jobs = Path(args.jobs)
    if not cache_enabled(no_cache=args.no_cache) or not jobs.is_dir():
        return None
    from ..runcache import RunCache, synth_options

    options = synth_options(args.against, require_baseline(args), Path.cwd())
    return RunCache(jobs.resolve().parent, jobs, Path(args.out), options)


def unchanged(
    args: argparse.Namespace, runs: RunCache | None, kind: str, extra: dict[str, object]
) -> Record | None:
    if runs is None or report_format(args) != "text":
        return None
    return runs.unchanged(kind, extra, args.against, require=require_baseline(args))
