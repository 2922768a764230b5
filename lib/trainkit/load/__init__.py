"""Find definition files under ``jobs/``, run each where it cannot harm the gate, collect objects.

Definitions are code from pull requests. None of it runs in this process:
each team directory (or each file, with ``isolation="file"``) runs in a
process of its own, forked from a pristine one that has imported trainkit
and nothing else, confined where the OS allows (``sandbox``), limited in
time and memory. What comes back is plain data, rebuilt here through
trainkit's own models (``rebuild``). So a definition can neither weaken a
check nor change another team's or the platform's objects.

Every module-level value that is a definition object (or a list/tuple of
them) is collected; nothing is registered behind the user's back. The team is
the first directory under ``jobs/``; platform objects live in
``jobs/platform/``. Directories named ``scripts`` (and ``_*``/``.*``) hold
training code and data, and files named ``_*.py`` are helpers: none of them
is run as a definition.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import DefinitionError, Problem, SetupError
from . import sandbox, server, watch
from .cache import DefinitionCache
from .discover import PLATFORM_DIR, DefinitionFile, find_definitions, shown

if TYPE_CHECKING:
    from .rebuild import Definition, Rebuilt

__all__ = [
    "PLATFORM_DIR",
    "Definition",
    "DefinitionCache",
    "LoadInterrupted",
    "LoadOptions",
    "Loaded",
    "definition_files",
    "load_file",
    "load_jobs",
]


def __getattr__(name: str) -> Any:
    # The models load with ``rebuild``, on first use: starting the definitions' origin
    # process (``server.prestart``) must not wait for them in this process.
    if name == "Definition":
        from .rebuild import Definition

        return Definition
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class LoadOptions:
    """How definitions are run."""

    timeout: float = 60.0
    """Seconds a file may take."""
    memory: int = 2 << 30
    """Bytes of memory a definition process may use."""
    isolation: Literal["team", "file"] = "team"
    """One process per team directory (teams and the platform never share one), or per file."""
    sandbox: bool = True
    """Confine definitions (read-only file system, no network) where the OS allows it."""
    require_sandbox: bool = False
    """Refuse to run any definition where the OS cannot confine it (CI, the gate): a
    ``SetupError`` naming the cause and the fix instead of a notice."""
    jobs: int = 0
    """Processes at a time; 0 means one per CPU."""


@dataclass(frozen=True)
class Loaded:
    definitions: list[Definition]
    notices: list[str]
    """Things the user should know once per run (e.g. confinement unavailable)."""
    imports: list[str] = field(default_factory=list)
    """Every file the definitions' processes imported, as they reported it (cache keys)."""
    files: list[str] = field(default_factory=list)
    """Every definition file found (``DefinitionFile.rel``), the skipped ones included
    (``load_jobs``); the files loaded, the one asked for first (``load_file``)."""


class LoadInterrupted(KeyboardInterrupt):
    """Ctrl-C while definitions were running; the message names them."""


def definition_files(jobs_dir: Path) -> list[Path]:
    """Every definition file under ``jobs_dir``, in a stable order."""
    jobs_dir = jobs_dir.resolve()
    files, _ = find_definitions(jobs_dir, jobs_dir.parent)
    return [f.path for f in files]


def load_jobs(
    jobs_dir: Path,
    root: Path | None = None,
    *,
    only: Collection[str] | None = None,
    skip: Collection[str] = (),
    options: LoadOptions | None = None,
    while_loading: Callable[[int], None] | None = None,
    cache: DefinitionCache | None = None,
) -> Loaded:
    """Load every definition under ``jobs_dir``; raise one DefinitionError with all problems.

    Paths in messages and manifests are relative to ``root``, by default the
    directory holding ``jobs/`` (the repository), so they never depend on the
    working directory. ``only`` limits the load to those directories under
    ``jobs_dir`` (e.g. ``{PLATFORM_DIR}``); ``skip`` names definition files (by ``rel``)
    not to load, whose objects the caller already has. ``while_loading`` is called once the
    definition processes exist, with the number of files they run, to overlap other
    start-up work with them (it may start threads: nothing forks from this process after
    that); it is not called when no definition runs. With ``cache``, a file whose inputs are unchanged is not run: its
    last payload is rebuilt like a fresh one (see ``load.cache``).
    """
    jobs_dir = jobs_dir.resolve()
    root = (root or jobs_dir.parent).resolve()
    if not jobs_dir.is_dir():
        raise DefinitionError(
            [Problem(file=shown(jobs_dir, root), message="directory not found; pass --jobs DIR")]
        )
    files, problems = find_definitions(jobs_dir, root)
    if only is not None:
        if cache is not None:
            # A load of some directories keeps what the cache holds of the others.
            cache.carry(f.rel for f in files if f.team not in only)
        files = [f for f in files if f.team in only]
    found = [f.rel for f in files]
    if skip:
        files = [f for f in files if f.rel not in skip]
        if cache is not None:
            cache.carry(skip)
    loaded = _run(files, problems, jobs_dir, root, options or LoadOptions(), while_loading, cache)
    return replace(loaded, files=found)


def load_file(
    path: Path,
    root: Path | None = None,
    *,
    jobs_dir: Path | None = None,
    options: LoadOptions | None = None,
    with_dirs: Collection[str] = (),
) -> Loaded:
    """Load one definition file (placement rules checked), in its own process like any other.

    With ``with_dirs`` (directories under ``jobs_dir``, e.g. ``{PLATFORM_DIR}``) their files
    are loaded in the same run, as ``load_jobs(only=with_dirs)`` would load them (with what the
    walk refused anywhere under ``jobs_dir``). ``files`` of the result lists the files loaded,
    ``path``'s first.
    """
    path = path.absolute()
    jobs_dir = (jobs_dir or _guess_jobs_dir(path)).resolve()
    root = (root or jobs_dir.parent).resolve()
    files, problems = find_definitions(jobs_dir, root)
    real = path.resolve()
    chosen = [f for f in files if f.path.resolve() == real]
    if not chosen:
        problems = [p for p in problems if p.file == shown(path, root)] or [
            Problem(
                file=shown(path, root),
                message=f"not a definition file under {shown(jobs_dir, root)}/ (definitions are "
                "*.py files in a team directory, not in scripts/ or _private/ paths)",
            )
        ]
        raise DefinitionError(problems)
    others = [f for f in files if f.team in with_dirs and f not in chosen]
    loaded = _run(
        [*chosen, *others], problems if with_dirs else [], jobs_dir, root,
        options or LoadOptions(), None, None,
    )  # fmt: skip
    return replace(loaded, files=[f.rel for f in (*chosen, *others)])


def _guess_jobs_dir(path: Path) -> Path:
    for parent in path.resolve().parents:
        if parent.name == "jobs":
            return parent
    raise DefinitionError([Problem(file=str(path), message="not inside a jobs/ directory")])


def _groups(
    files: Sequence[tuple[int, DefinitionFile]], isolation: str
) -> list[list[tuple[int, str]]]:
    if isolation == "file":
        return [[(i, str(f.path))] for i, f in files]
    by_team: dict[str, list[tuple[int, str]]] = {}
    for i, f in files:
        by_team.setdefault(f.team, []).append((i, str(f.path)))
    return list(by_team.values())


@dataclass
class _Exit:
    file: int | None
    reason: str
    status: int
    output: str
    started: int
    ended: int


def _run(
    files: list[DefinitionFile],
    problems: list[Problem],
    jobs_dir: Path,
    root: Path,
    options: LoadOptions,
    while_loading: Callable[[int], None] | None,
    cache: DefinitionCache | None,
) -> Loaded:
    problems = list(problems)
    if not files:
        if problems:
            raise DefinitionError(problems)
        return Loaded([], [])
    from .rebuild import rebuild

    hits: dict[int, bytes] = {}
    digests: dict[int, str] = {}
    if cache is not None:
        for i, df in enumerate(files):
            hit = cache.lookup(df)
            if hit is not None:
                hits[i] = hit
            elif (sha := cache.digest(str(df.path))) is not None:
                digests[i] = sha
    done: dict[int, Rebuilt] = {}

    def use_hits() -> None:
        # A stored payload is rebuilt like a fresh one, and only once the definition
        # processes are forked: no rebuilt object is ever in their memory. One that does
        # not rebuild cleanly (corrupt, or a script it names is gone) is a miss.
        for i, payload in hits.items():
            got = rebuild(payload, files[i], jobs_dir, root, options.memory)
            if got.problems:
                if cache is not None and (sha := cache.digest(str(files[i].path))):
                    digests[i] = sha
            else:
                done[i] = got

    # Unconfined, a definition could also write the caches the next run trusts.
    watched = [root] if cache is None else [root, cache.path.parent]
    runs: list[_Ran] = []
    pending = [(i, f) for i, f in enumerate(files) if i not in hits]
    if pending:
        ready = [use_hits]
        if while_loading is not None:
            ready.insert(0, functools.partial(while_loading, len(pending)))
        runs.append(
            _execute(
                _groups(pending, options.isolation), files, jobs_dir, root, watched, options, ready
            )
        )
    else:
        use_hits()
    again = [(i, files[i]) for i in hits if i not in done]
    if again:
        runs.append(
            _execute(_groups(again, options.isolation), files, jobs_dir, root, watched, options, [])
        )
    payloads = {i: data for ran in runs for i, data in ran.payloads.items()}
    ended = {i: e for ran in runs for i, e in ran.exits.items()}
    definitions: list[Definition] = []
    imported: dict[int, list[str]] = {}
    for index, df in enumerate(files):
        got = done.get(index)
        if got is None and index in payloads:
            got = rebuild(payloads[index], df, jobs_dir, root, options.memory)
        if got is not None:
            definitions.extend(got.definitions)
            problems.extend(got.problems)
            imported[index] = got.imports
        else:
            problems.append(_unloaded(df, files, ended.get(index), options))
    problems.extend(p for ran in runs for p in ran.problems)
    if problems:
        raise DefinitionError(list(dict.fromkeys(problems)))
    if cache is not None:
        for ran in runs:
            _remember(cache, files, ran.groups, payloads, digests, imported)
        cache.save()
    imports = sorted({path for paths in imported.values() for path in paths})
    notices = list(dict.fromkeys(n for ran in runs for n in ran.notices))
    return Loaded(definitions, notices, imports)


@dataclass
class _Ran:
    """What one run of the definition server returned."""

    groups: list[list[tuple[int, str]]]
    payloads: dict[int, bytes]
    exits: dict[int, _Exit]
    """How the process of each file (by index) ended."""
    notices: list[str]
    problems: list[Problem]
    """Files changed while definitions ran unconfined."""


def _execute(
    groups: list[list[tuple[int, str]]],
    files: list[DefinitionFile],
    jobs_dir: Path,
    root: Path,
    watched_roots: list[Path],
    options: LoadOptions,
    on_ready: list[Callable[[], None]],
) -> _Ran:
    """Run ``groups`` in the definition server; ``on_ready`` once its processes exist."""
    limits = server.Limits(
        timeout=options.timeout, memory=options.memory, jobs=options.jobs, sandbox=options.sandbox
    )
    payloads: dict[int, bytes] = {}
    exits: dict[int, _Exit] = {}
    current: dict[int, int] = {}
    started: dict[int, int] = {}
    notices: list[str] = []
    before: watch.Snapshot | None = None
    window_start = 0
    watched: tuple[list[Path], list[str]] = (watched_roots, [])
    run = server.run(groups, limits, jobs=str(jobs_dir), root=str(root))
    try:
        for event in run:
            if event.kind == "ready":
                if not event.confined and options.require_sandbox:
                    run.close()  # no definition has run: stop them all before any does
                    raise SetupError([_sandbox_required(event, jobs_dir, root)])
                for call in on_ready:
                    call()
                if not event.confined:
                    notices.append(
                        "definitions ran without a read-only file system or network isolation "
                        f"({event.text}; to confine them: {event.fix}); trainkit compared the "
                        "repository and its own files before and after instead"
                    )
                    sandbox.make_undumpable()
                    # Nothing a definition may plant runs here later: every module
                    # trainkit will need is in memory before the first definition runs.
                    watch.import_everything()
                    watched = (watched_roots, watch.imported_files())
                    before = watch.snapshot(*watched)
                    # The kernel's file times run up to a tick behind the clock.
                    window_start = time.time_ns() - 50_000_000
            elif event.kind == "start" and event.file is not None:
                if event.file in dict(groups[event.group]):
                    current[event.group] = event.file
                    started.setdefault(event.group, time.time_ns())
            elif event.kind == "result":
                index = current.get(event.group)
                if index is not None and index not in payloads:
                    payloads[index] = event.data
            elif event.kind == "exit":
                exits[event.group] = _Exit(
                    event.file, event.reason, event.status, event.text,
                    started.get(event.group, 0), time.time_ns(),
                )  # fmt: skip
    except KeyboardInterrupt:
        run.close()
        busy = sorted(
            files[i].rel for g, i in current.items() if g not in exits and i not in payloads
        )
        raise LoadInterrupted(
            "interrupted while running " + (", ".join(busy) if busy else "definitions")
        ) from None
    problems = []
    if before is not None:
        problems = _changes(before, watch.snapshot(*watched), groups, files, exits, root)
        watch.guard_imports(window_start, time.time_ns())
    by_file = {i: exits[g] for g, group in enumerate(groups) if g in exits for i, _ in group}
    return _Ran(groups, payloads, by_file, notices, problems)


def _sandbox_required(event: server.Event, jobs_dir: Path, root: Path) -> Problem:
    return Problem(
        file=shown(jobs_dir, root) + "/",
        message=f"definitions cannot be confined on this machine: {event.text}. The sandbox is "
        "required (--require-sandbox, or the CI environment variable is set), so no definition "
        f"ran; to confine them: {event.fix}",
    )


def _remember(
    cache: DefinitionCache,
    files: list[DefinitionFile],
    groups: list[list[tuple[int, str]]],
    payloads: dict[int, bytes],
    digests: dict[int, str],
    imported: dict[int, list[str]],
) -> None:
    """Store the payloads that ran; each file's imports are those of its whole process."""
    for group in groups:
        imports = {path for index, _ in group for path in imported.get(index, ())}
        for index, _ in group:
            if index in payloads and index in digests:
                cache.store(files[index], digests[index], payloads[index], imports)


def _unloaded(
    df: DefinitionFile, files: list[DefinitionFile], ended: _Exit | None, options: LoadOptions
) -> Problem:
    if ended is None or ended.file is None:
        return Problem(file=df.rel, message="its process ended before running it")
    culprit = files[ended.file]
    if culprit is not df:
        return Problem(
            file=df.rel,
            message=f"not loaded: {culprit.rel}, which runs before it in the same process, "
            "stopped that process; fix it first",
        )
    if ended.reason == "timeout":
        message = (
            f"took longer than {options.timeout:g} s (--load-timeout); a definition only builds "
            "objects: look for a loop, a sleep or a network call"
        )
    elif ended.reason == "output":
        message = "returned or printed more than 64 MiB; a definition only builds objects"
    elif ended.reason == "protocol":
        message = (
            "its process sent data trainkit cannot read (it may have replaced trainkit's own "
            "code); define objects with trainkit's classes only"
        )
    else:
        how = f"signal {-ended.status}" if ended.status < 0 else f"exit status {ended.status}"
        message = (
            f"its process ended ({how}) before returning its objects; it may have used more "
            f"than the {options.memory >> 20} MiB a definition may use (--load-memory)"
        )
    tail = ended.output.strip().splitlines()[-5:]
    if tail:
        message += "; it printed: " + " | ".join(tail)
    return Problem(file=df.rel, message=message)


def _changes(
    before: watch.Snapshot,
    after: watch.Snapshot,
    groups: list[list[tuple[int, str]]],
    files: list[DefinitionFile],
    exits: dict[int, _Exit],
    root: Path,
) -> list[Problem]:
    problems = []
    for path, when in watch.changed(before, after):
        suspects = [
            g for g, e in exits.items() if when == 0 or e.started - 50_000_000 <= when <= e.ended
        ] or list(range(len(groups)))
        for g in suspects:
            for index, _ in groups[g]:
                problems.append(
                    Problem(
                        file=files[index].rel,
                        message=f"{shown(Path(path), root)} changed while this definition ran "
                        "(definitions must not write files); nothing was generated",
                    )
                )
    return problems
