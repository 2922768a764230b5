"""Shared fixtures: the repository, a copy of the examples to break, the CRDs, the CLI."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import build_cache
from run_directory import run_directory
from trainkit.cache_dir import read_json, repo_cache_dir, write_json
from trainkit.cli import main
from trainkit.validate import kustomize_build
from trainkit.validate.tree import build_directories
from trainkit.write import read_tree

REPO = Path(__file__).resolve().parents[1]

# Tests run commands from scratch directories: a relative TRAINKIT_CRDS (as in
# `TRAINKIT_CRDS=../shared/crds make test`) means relative to the repository.
if os.environ.get("TRAINKIT_CRDS") and not Path(os.environ["TRAINKIT_CRDS"]).is_absolute():
    os.environ["TRAINKIT_CRDS"] = str((REPO / os.environ["TRAINKIT_CRDS"]).resolve())

_DONT_WRITE_BYTECODE = sys.dont_write_bytecode


def pytest_configure(config: pytest.Config) -> None:
    """pytest keeps each test module's assert-rewritten code in ``__pycache__``, but not when
    bytecode may not be written (``PYTHONDONTWRITEBYTECODE``, set in CI): then every worker
    rewrote every test module again, about 4 CPU-s each run. It may be written while the
    test modules are collected (as ``make test`` compiles ``lib``); the tests themselves, and
    every process they start, run with the setting as it was.

    The same holds for hypothesis: pytest rewrites every module of a plugin's distribution,
    so hypothesis is imported here, not at the top of this file (before this hook), where
    each process rewrote its 75 modules again, about 1 CPU-s."""
    sys.dont_write_bytecode = False
    gc.disable()  # until the collection ends (see pytest_collection)
    from hypothesis import HealthCheck, settings

    # Hypothesis times each example (200 ms deadline) and its data generation: on a loaded
    # machine a slow example fails as "Unreliable test timings" though the property holds.
    # No test races the clock, so neither limit applies; every other health check stays on.
    settings.register_profile(
        "trainkit", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("trainkit")


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Iterator[object]:
    """No cycle collection while hypothesis and the test modules are imported and the tests
    collected (from ``pytest_configure`` on): the collector walked, again and again, the
    modules, models and parametrizations being built, nearly none of them garbage (0.35
    CPU-s of a worker's collection, 550 collections, which found about 30,000 objects).

    What collection left (modules, test items, parametrizations) lives until the process
    ends: it is moved out of the collector's sight (``gc.freeze``), so that the collections
    during the tests, and pytest's at exit, no longer walk it each time (about half the
    collector's time in a worker); collection's few MB of garbage with it (a full collection
    first would cost about as much as the collections it saved). The collector is on again
    for the tests (what they leave alive is frozen later: ``pytest_runtest_logfinish``)."""
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()
        gc.callbacks.append(_count_full_collections)


_FULL_COLLECTIONS = [0]


def _count_full_collections(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and info["generation"] == 2:
        _FULL_COLLECTIONS[0] += 1


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish() -> None:
    """What a full collection found alive (the session's caches, CRD sets, built models,
    modules imported since) is frozen too, between tests, after the young garbage is freed
    (``gc.collect(1)``): each later full collection walked it again, though nearly all of it
    lives until the process ends (three quarters of the full collections' CPU, which grows
    with the heap). What dies later is freed as before, unless in a reference cycle (a module
    fixture's, garbage that reached the oldest generation since): that stays, as collection's
    does (the workers' peak memory is the same)."""
    if _FULL_COLLECTIONS[0]:
        _FULL_COLLECTIONS[0] = 0
        gc.collect(1)
        gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Bytecode is written as the caller said again (see ``pytest_configure``)."""
    sys.dont_write_bytecode = _DONT_WRITE_BYTECODE


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` run first, shared among the parallel workers, so the workers end
    together instead of one finishing a long test alone.

    ``make test`` runs ``-n auto --dist worksteal``: xdist gives each of the N workers one
    contiguous part of the collection (part i holds ``rest // (N - i)`` of the tests not yet
    given, xdist/scheduler/worksteal.py ``check_schedule``), and an idle worker steals from
    the end of another's part. The long tests are dealt in turn to the start of each part:
    every worker begins with its share of them, and what is stolen last is short."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    long = [item for item in items if item.get_closest_marker("long") is not None]
    rest = [item for item in items if item.get_closest_marker("long") is None]
    ordered: list[pytest.Item] = []
    for i in range(workers):
        size = (len(items) - len(ordered)) // (workers - i)
        part = long[i::workers]
        fill = max(0, size - len(part))
        ordered += part + rest[:fill]
        del rest[:fill]
    items[:] = ordered + rest


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands behave as on a developer's machine unless a test says otherwise: with CI set,
    they require the deployed baseline (origin/main) and never read caches."""
    monkeypatch.delenv("CI", raising=False)
    # GitHub Actions' temporary directory holds the CRDs CI fetched: a test that wants them
    # says so (TRAINKIT_CRDS), one that wants none must not find them there.
    monkeypatch.delenv("RUNNER_TEMP", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _kustomize_builds_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each distinct kustomize build runs once per test run (see build_cache.py)."""
    with pytest.MonkeyPatch.context() as mp:
        build_cache.install(mp, run_directory(tmp_path_factory) / "kustomize-builds")
        yield


_SESSION_CACHE: list[Path] = []


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test run's cache directory, one for all its xdist workers (as the kustomize builds'
    are): a CRD file one worker parsed, the other reads back (entries are keyed by content and
    written atomically, ``crd_cache``). A repository's caches are keyed by its path, and each
    worker's temporary directories are its own. A test asserting what a cache holds or a cold
    run makes its own cache directory."""
    path = run_directory(tmp_path_factory) / "trainkit-cache"
    path.mkdir(exist_ok=True)
    _SESSION_CACHE[:] = [path]
    return path


def session_cache() -> Path:
    """``_session_cache``, for code that is not a fixture (``validate_fixtures``); every test
    has it (``_own_cache``), and sets it up before any module-scoped fixture."""
    assert _SESSION_CACHE, "session_cache() outside a test"
    return _SESSION_CACHE[0]


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch: pytest.MonkeyPatch, _session_cache: Path) -> None:
    """Caches go to a directory of the test run, never the developer's: parsed CRDs are
    shared by the tests (keyed by content), a repository's caches are its own (keyed by its
    path, a fresh temporary directory per test)."""
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(_session_cache))


def crds_dir() -> Path:
    """CRDs from TRAINKIT_CRDS, else ../shared/crds; missing is a failure, never a skip."""
    raw = os.environ.get("TRAINKIT_CRDS")
    path = Path(raw) if raw else REPO.parent / "shared" / "crds"
    if not path.is_absolute():
        path = (REPO / path).resolve()
    if not path.is_dir():
        pytest.fail(
            f"CRD directory {path} not found: set TRAINKIT_CRDS to a directory of "
            "CustomResourceDefinitions (e.g. ../shared/crds)"
        )
    return path


@pytest.fixture(scope="session")
def crds() -> Path:
    return crds_dir()


def copy_tree(source: Path, dest: Path, *, link: bool = False) -> None:
    """A copy of the directory ``source`` at ``dest`` (made with its parents; it must not
    exist yet): the bytes of its regular files, its symbolic links as links, no
    ``__pycache__``. Unlike ``shutil.copytree`` it copies no times, modes or extended
    attributes (no test reads them; a copy's files are new inodes either way): about 40 %
    less CPU per copy of the examples, which most tests make. With ``link``, the files are
    hard links to ``source``'s (copies where the file system has none): for a tree the test
    never writes in place."""
    os.makedirs(dest)
    _copy_entries(os.fspath(source), os.fspath(dest), link)


def _copy_entries(source: str, dest: str, link: bool) -> None:
    with os.scandir(source) as entries:
        for entry in entries:
            target = f"{dest}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    os.mkdir(target)
                    _copy_entries(entry.path, target, link)
            elif entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            else:
                if link:
                    try:
                        os.link(entry.path, target)
                        continue
                    except OSError:
                        pass  # a file system without hard links
                with open(entry.path, "rb") as f:
                    data = f.read()
                with open(target, "xb") as f:
                    f.write(data)


@dataclass
class Run:
    code: int
    out: str
    err: str


@dataclass
class Workspace:
    """A scratch repository holding a copy of the example jobs/."""

    root: Path

    @property
    def jobs(self) -> Path:
        return self.root / "jobs"

    @property
    def out(self) -> Path:
        return self.root / "generated"

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def snapshot(self) -> dict[str, bytes]:
        """Every file under generated/ → its bytes (trainkit's own reader: one ``open`` per
        file, half the cost of ``rglob`` and ``read_bytes``)."""
        return dict(sorted(read_tree(self.out).items()))


@pytest.fixture
def ws(tmp_path: Path, _examples_caches: RepoCaches) -> Workspace:
    """A copy of the example jobs/, with the repository caches a developer's machine holds
    after an earlier ``trainkit synth`` of it (``RepoCaches``)."""
    copy_tree(REPO / "jobs", tmp_path / "jobs")
    _examples_caches.seed(tmp_path)
    return Workspace(tmp_path)


@dataclass(frozen=True)
class RepoCaches:
    """The definition and YAML caches (``load.cache``, ``serialize.YamlCache``) that the
    session's synth of the examples left in its repository's cache directory.

    ``seed`` puts them into another copy's cache directory, as an earlier synth of that
    copy would have: the payload of each definition file whose inputs are unchanged is
    not run again, and an object rendered before is not serialized by cdk8s again. A
    cache is never trusted: each entry is checked against the copy's own files (a test's
    edit is a miss), each payload is rebuilt through the models, each YAML text checked
    (see those modules). Commands run cold where caches are off (CI, ``--no-cache``).
    """

    home: Path
    """The session's cache directory (``TRAINKIT_CACHE_DIR``)."""
    root: str
    """The real path of the repository that synth ran in."""
    definitions: dict[str, Any]
    yaml: bytes

    @classmethod
    def of(cls, home: Path, root: Path) -> RepoCaches:
        directory = cache_dir_of(home, root)
        definitions = read_json(directory / "definitions.json")
        assert definitions is not None, f"synth left no definitions.json in {directory}"
        yaml = (directory / "yaml.json").read_bytes()
        return cls(home, os.path.realpath(root), definitions, yaml)

    def seed(self, root: Path) -> None:
        """The caches, as if synth had run in ``root``: a definition's imports are keyed by
        their real path, which names the repository (``load.cache.DefinitionCache.store``)."""
        mine, theirs = os.path.realpath(root) + os.sep, self.root + os.sep
        entries = {
            rel: {
                **entry,
                "deps": {
                    mine + path.removeprefix(theirs) if path.startswith(theirs) else path: sha
                    for path, sha in entry["deps"].items()
                },
            }
            for rel, entry in self.definitions["entries"].items()
        }
        directory = cache_dir_of(self.home, root)
        directory.mkdir(parents=True)
        write_json(directory / "definitions.json", {**self.definitions, "entries": entries})
        (directory / "yaml.json").write_bytes(self.yaml)


def cache_dir_of(home: Path, root: Path) -> Path:
    """``repo_cache_dir(root)`` under the cache directory ``home``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINKIT_CACHE_DIR", str(home))
        return repo_cache_dir(root)


@pytest.fixture(scope="session")
def _examples_caches(_examples_generated: Path, _session_cache: Path) -> RepoCaches:
    return RepoCaches.of(_session_cache, _examples_generated.parent)


@pytest.fixture(scope="session")
def _examples_generated(tmp_path_factory: pytest.TempPathFactory, _session_cache: Path) -> Path:
    """generated/ of the examples, synthesized as a developer would and its kustomize builds
    stored in the build cache: once per test run, shared by the xdist workers (as the
    caches are). The first worker to ask does it; the others wait for it (a file lock) and
    read its tree, which no test changes (each copies it, ``synthesized``)."""
    shared = run_directory(tmp_path_factory)
    root, done = shared / "examples", shared / "examples.done"
    with open(shared / "examples.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_file():
            _synthesize_examples(root, _session_cache)
            done.touch()
    return root / "generated"


def _synthesize_examples(root: Path, cache: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)  # a worker that failed halfway
    copy_tree(REPO / "jobs", root / "jobs")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("CI", raising=False)
        mp.setenv("TRAINKIT_CACHE_DIR", str(cache))
        mp.chdir(root)
        assert main(["synth"]) == 0
        # Into the build cache (build_cache.py) now: a check of a copy that fails before it
        # reads its builds (a policy error in the synth) kills them half-run, so none was
        # ever stored, and each such test ran kubectl again.
        for directory in build_directories(root / "generated"):
            kustomize_build(directory)


@pytest.fixture
def synthesized(ws: Workspace, _examples_generated: Path) -> Workspace:
    """``ws`` as ``trainkit synth`` leaves it: the session's generated/, copied (each test
    breaks its own copy)."""
    copy_tree(_examples_generated, ws.out)
    return ws


@pytest.fixture(scope="module")
def module_ws(tmp_path_factory: pytest.TempPathFactory, _examples_caches: RepoCaches) -> Workspace:
    """``ws`` shared by the tests of one module: a module whose tests each read their own
    field from one edited tree edits, synthesizes and checks it once (in a module fixture
    of its own, with ``module_cli``), and its tests only read it."""
    root = tmp_path_factory.mktemp("module-ws")
    copy_tree(REPO / "jobs", root / "jobs")
    _examples_caches.seed(root)
    return Workspace(root)


@pytest.fixture(scope="module")
def module_cli(module_ws: Workspace, _session_cache: Path) -> Callable[..., Run]:
    """``cli`` for ``module_ws``: ``trainkit ARGS`` inside it, as a test's commands run (no CI,
    the session's caches), exit code and output captured."""

    def run(*args: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("CI", raising=False)
            mp.delenv("RUNNER_TEMP", raising=False)
            mp.setenv("TRAINKIT_CACHE_DIR", str(_session_cache))
            mp.chdir(module_ws.root)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
        return Run(code, out.getvalue(), err.getvalue())

    return run


def _runner(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path
) -> Callable[..., Run]:
    """Run ``trainkit ARGS`` inside ``root``, capturing exit code, stdout and stderr."""

    def run(*args: str) -> Run:
        monkeypatch.chdir(root)
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], ws: Workspace
) -> Callable[..., Run]:
    return _runner(monkeypatch, capsys, ws.root)


PLATFORM = """\
from trainkit import ArgoCD, Capacity, Cluster, Queue, Team

argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")
east = Cluster(name="east", server="https://east.example.com", gpus_per_node=8)
west = Cluster(name="west", destination_name="west", gpu_resource="amd.com/gpu", gpus_per_node=4)
plain = Cluster(name="plain", server="https://plain.example.com", gpus_per_node=2,
                scheduler="default")
research = Queue(name="research", capability=Capacity(gpu=16))
vision = Team(name="vision", queues=["research"])
"""

JOB = """\
from trainkit import PyTorchJob, Resources, Script

job = PyTorchJob(
    name="ddp",
    image="registry.example.com/pytorch:2",
    script=Script.file("scripts/train.py"),
    nodes=2,
    resources=Resources(cpu=4, memory="16Gi", gpu=4),
    clusters=["east", "west"],
)
"""


BARE = {
    "jobs/platform/platform.py": PLATFORM,
    "jobs/vision/ddp.py": JOB,
    "jobs/vision/scripts/train.py": "print('training')\n",
}
"""The files of ``bare``."""


@pytest.fixture
def bare(tmp_path: Path) -> Workspace:
    """A minimal repository: three clusters, one queue, one team, one job."""
    w = Workspace(tmp_path)
    for rel, text in BARE.items():
        w.write(rel, text)
    return w


@pytest.fixture
def bare_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bare: Workspace
) -> Callable[..., Run]:
    return _runner(monkeypatch, capsys, bare.root)


RUNTIMES = """\
from trainkit import ClusterTrainingRuntime, Resources, TrainingRuntime

torch = ClusterTrainingRuntime(
    name="torch",
    image="registry.example.com/pytorch:2",
    resources=Resources(cpu=8, memory="32Gi", gpu=2),
    shm_size="8Gi",
    env={"NCCL_DEBUG": "WARN"},
    clusters=["east", "plain"],
)
own = TrainingRuntime(name="own", team="vision", image="registry.example.com/own:1", nodes=3)
"""

TRAINJOB = """\
from trainkit import Script, TrainJob

tj = TrainJob(
    name="tj",
    runtime="torch",
    script=Script.file("scripts/train.py"),
    args=["--epochs", "1"],
    nodes=2,
    clusters=["east"],
)
"""


@pytest.fixture
def tw(bare: Workspace) -> Workspace:
    """The bare repository plus two runtimes and a TrainJob."""
    bare.write("jobs/platform/runtimes.py", RUNTIMES)
    bare.write("jobs/vision/tj.py", TRAINJOB)
    return bare


class ClockFrozenUntil:
    """``time`` for a rehearsal whose clock stands still until ``ready()``: a timeout then
    passes at once, however long the processes (or the cluster) took to get there."""

    def __init__(self, ready: Callable[[], bool], timeout: float, bound: float = 240) -> None:
        self.ready = ready
        self.timeout = timeout
        self.bound = bound
        self.start = time.monotonic()
        self.since: float | None = None
        self.sleep = time.sleep

    def monotonic(self) -> float:
        now = time.monotonic()
        # A bound on waiting, so a rehearsal that never gets ready fails rather than hangs.
        if self.since is None and (self.ready() or now - self.start > self.bound):
            self.since = now
        return self.start if self.since is None else self.start + self.timeout + now - self.since
