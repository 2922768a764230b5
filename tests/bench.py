"""`make bench`: how fast trainkit is, as ratios measured in one run (issues 10 and 12).

Not a test: numbers vary by machine and load, so they are printed, compared only with
each other, never asserted. The yardstick (the "floor") is PyYAML's ``CSafeDumper``
writing the same manifests to the same number of files, in the same run.

The tree: N jobs (default 1,000) in ten teams, each job on two clusters, so 4 files per
job (a PyTorchJob and a script ConfigMap per cluster). The repository is committed and
cloned, so the clone has ``origin/main`` as CI has, and every trainkit command runs in
its own process, definition isolation included:

- cold: ``CI=1`` (no cache is read or written) in the fresh clone, as CI runs;
- warm: caches in a directory outside the clone, filled by an earlier run.

``--jobs 1000 10000`` measures cold synth and check at each size and how time and peak
memory grow against the output; ``--shape`` chooses how the jobs spread: ``default`` (ten
teams, two clusters, each job on both), ``one-team`` (one team, one cluster) and ``spread``
(twenty teams over four clusters). Each size also builds its largest Application with
``kubectl kustomize``, as Argo CD's repo server does, against Argo CD's default exec timeout
(90 s, ``ARGOCD_EXEC_TIMEOUT``). Peak RSS is the largest process of a run (node and the
definition processes included), from ``wait4``.

trainkit's bytecode is compiled first, as ``pip install`` does for an installed package
(an editable install under ``PYTHONDONTWRITEBYTECODE`` would compile every module on
every run, which users do not pay).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

PLATFORM = """\
from trainkit import ArgoCD, Capacity, Cluster, Queue, Team

argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")
clusters = [
    Cluster(name=name, server=f"https://{{name}}.example.com", gpus_per_node=8)
    for name in {clusters!r}
]
queues = [Queue(name=f"q{{i}}", capability=Capacity(gpu=64)) for i in range({teams})]
teams = [Team(name=f"team{{i}}", queues=[f"q{{i}}"]) for i in range({teams})]
"""

JOB = """\
from trainkit import PyTorchJob, Resources, Script

job = PyTorchJob(
    name="job-{n}",
    image="registry.example.com/pytorch:2.5.1",
    script=Script.file("scripts/train_{n}.py"),
    args=["--epochs", "{n}"],
    env={{"NCCL_DEBUG": "INFO"}},
    nodes=4,
    resources=Resources(cpu=32, memory="256Gi", gpu=8),
    shm_size="16Gi",
    clusters={on!r},{run}
)
"""

SHAPES = {
    # teams, clusters, clusters per job
    "default": (10, ("east", "west"), 2),
    "one-team": (1, ("east",), 1),
    "spread": (20, ("east", "west", "north", "south"), 1),
}
_shape: list[str] = ["default"]


def _on(n: int) -> list[str]:
    teams, clusters, per_job = SHAPES[_shape[0]]
    if per_job == len(clusters):
        return list(clusters)
    return [clusters[(n // teams) % len(clusters)]]


def make_tree(root: Path, jobs: int) -> None:
    teams, clusters, _ = SHAPES[_shape[0]]
    (root / "jobs/platform").mkdir(parents=True)
    (root / "jobs/platform/platform.py").write_text(
        PLATFORM.format(clusters=list(clusters), teams=teams)
    )
    for n in range(jobs):
        team = root / f"jobs/team{n % teams}"
        (team / "scripts").mkdir(parents=True, exist_ok=True)
        (team / f"job_{n}.py").write_text(JOB.format(n=n, run="", on=_on(n)))
        (team / f"scripts/train_{n}.py").write_text(f"print('training {n}')\n" * 20)


def edit_job(root: Path, n: int) -> None:
    """Edit job ``n`` the legal way: new arguments and a new run (a deployed job never
    changes in place)."""
    teams = SHAPES[_shape[0]][0]
    path = root / f"jobs/team{n % teams}/job_{n}.py"
    text = JOB.format(n=n, run="\n    run=2,", on=_on(n)).replace(
        f'"--epochs", "{n}"', '"--epochs", "99"'
    )
    path.write_text(text)


@dataclass
class Timing:
    seconds: float
    rss: float
    """Peak resident memory of the largest process, MiB."""


def trainkit(cwd: Path, env: dict[str, str], *args: str) -> Timing:
    """Run ``trainkit ARGS`` in its own process; fail loudly if it fails."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "trainkit", *args], cwd=cwd, env=env, stdout=out, stderr=out
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"trainkit {' '.join(args)} failed ({proc.returncode}):\n{text}")
    return Timing(seconds, usage.ru_maxrss / 1024)


def median(runs: list[Timing]) -> Timing:
    return Timing(statistics.median(r.seconds for r in runs), max(r.rss for r in runs))


def repeat(times: int, measure: Callable[[int], Timing]) -> Timing:
    return median([measure(i) for i in range(times)])


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def dumper_floor(generated: Path, out: Path) -> float:
    """CSafeDumper writing the same manifests to the same number of files."""
    bodies = [
        (p.relative_to(generated), yaml.load(p.read_text(), Loader=yaml.CSafeLoader))
        for p in sorted(generated.rglob("*.yaml"))
    ]
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    for rel, body in bodies:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False))
    return time.perf_counter() - start


def _measure_validate(generated: Path, crds: Path, mode: str) -> None:
    """In a fresh process: load the CRDs and validate ``generated``; print JSON numbers.

    ``mode``: ``cold`` (no cache), ``warm`` (the cache in $TRAINKIT_CACHE_DIR) or
    ``memory`` (cold, under tracemalloc: the peak of what validation allocates).
    """
    import tracemalloc

    from trainkit.validate import load_crds, validate_paths

    if mode == "memory":
        tracemalloc.start()
    start = time.perf_counter()
    crd_set = load_crds(crds, no_cache=mode != "warm")
    problems = validate_paths([generated], crd_set, root=generated.parent)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] if mode == "memory" else 0
    if problems:
        raise SystemExit(f"generated manifests do not validate: {problems[:3]}")
    files = list(generated.rglob("*.y*ml"))
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak": peak,
                "input": sum(p.stat().st_size for p in files),
                "manifests": sum(1 for p in files if not p.name.startswith("kustomiz")),
            }
        )
    )


def _measure_load(root: Path, isolation: str, mode: str) -> None:
    """In a fresh process: the load step alone (definitions run and rebuilt), as synth runs
    it; ``warm`` with the definition cache (and the hashing it takes). Prints seconds."""
    from trainkit.cache_dir import repo_cache_dir
    from trainkit.load import DefinitionCache, LoadOptions, load_jobs
    from trainkit.runcache import RunCache, synth_options

    jobs = root / "jobs"
    start = time.perf_counter()
    cache = None
    if mode == "warm":
        runs = RunCache(root, jobs, root / "generated", synth_options(None, False, root))
        cache = DefinitionCache(repo_cache_dir(root), runs.data_stamp(), root.resolve())
    options = LoadOptions(isolation=isolation)  # type: ignore[arg-type]
    loaded = load_jobs(jobs, root, options=options, cache=cache)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "definitions": len(loaded.definitions)}))


def helper(env: dict[str, str], *args: str) -> dict[str, float]:
    """Run one of this file's measurements in a fresh process; its JSON result."""
    result = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True, env=env
    )
    data: dict[str, float] = json.loads(result.stdout)
    return data


@dataclass
class Row:
    what: str
    timing: Timing | None
    ratio: float
    base: str
    target: float | None

    def line(self) -> str:
        seconds = f"{self.timing.seconds:8.2f}" if self.timing else " " * 8
        rss = f"{self.timing.rss:8.0f}" if self.timing and self.timing.rss else " " * 8
        if self.target is None:
            verdict = ""
        else:
            verdict = f"≤ {self.target:g}×  " + ("met" if self.ratio <= self.target else "NOT met")
        return f"{self.what:<54}{seconds} {rss} {self.ratio:6.2f}× {self.base:<14}{verdict}"


def bench(jobs: int, full: bool, repeats: int) -> tuple[list[Row], dict[str, float]]:
    """Measure one tree size; ``full`` adds check, validate and isolation."""
    work = Path(tempfile.mkdtemp(prefix="trainkit-bench-"))
    try:
        return _bench(work, jobs, full, repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _bench(work: Path, jobs: int, full: bool, repeats: int) -> tuple[list[Row], dict[str, float]]:
    base_env = {k: v for k, v in os.environ.items() if k != "CI"}
    cold_env = {**base_env, "CI": "1"}
    warm_env = {**base_env, "TRAINKIT_CACHE_DIR": str(work / "cache")}
    origin, clone = work / "origin", work / "clone"
    make_tree(origin, jobs)
    trainkit(origin, base_env, "synth", "--no-cache")
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "0")
    git(work, "clone", "-q", str(origin), str(clone))
    generated = clone / "generated"
    files = sorted(generated.rglob("*.yaml"))
    size = sum(p.stat().st_size for p in files)
    floor = statistics.median(dumper_floor(generated, work / "floor") for _ in range(3))
    facts = {"files": len(files), "bytes": size, "floor": floor}
    rows = [Row("CSafeDumper writing the same manifests", Timing(floor, 0), 1.0, "", None)]

    def row(what: str, t: Timing, base: float, name: str, target: float | None) -> Timing:
        rows.append(Row(what, t, t.seconds / base, name, target))
        return t

    cold = row(
        "cold synth (CI=1, fresh clone)",
        repeat(repeats, lambda _: trainkit(clone, cold_env, "synth")),
        floor, "of floor", 3.0,
    )  # fmt: skip
    crds = os.environ.get("TRAINKIT_CRDS")
    if crds:
        check = row(
            "cold check (CI=1, fresh clone)",
            repeat(repeats, lambda _: trainkit(clone, cold_env, "check")),
            cold.seconds, "of cold synth", 1.3,
        )  # fmt: skip
        facts["check"] = check.seconds
        facts["check_rss"] = check.rss
    facts["synth"] = cold.seconds
    facts["synth_rss"] = cold.rss
    largest, objects = _largest_build(generated)
    facts["largest"] = largest
    rows.append(Row(f"largest Application build ({objects} objects), kubectl kustomize",
                    Timing(largest, 0), largest / 90, "of 90 s", 0.1))  # fmt: skip
    if full:
        _isolation(clone, warm_env, floor, rows)
    trainkit(clone, warm_env, "synth")  # fills the caches
    noop = row(
        "warm synth, nothing changed",
        repeat(max(3, repeats), lambda _: trainkit(clone, warm_env, "synth")),
        floor, "of floor", 0.25,
    )  # fmt: skip
    if full and crds:
        trainkit(clone, warm_env, "check")  # validates once and records it
        row(
            "warm check, nothing changed",
            repeat(max(3, repeats), lambda _: trainkit(clone, warm_env, "check")),
            noop.seconds, "of warm synth", 1.5,
        )  # fmt: skip

    def one_change(i: int) -> Timing:
        edit_job(clone, 3 + i)
        return trainkit(clone, warm_env, "synth")

    row("warm synth, one job changed", repeat(max(3, repeats), one_change), floor, "of floor", 0.5)
    if full and crds:
        _validate(generated, Path(crds), work / "crd-cache", base_env, floor, rows)
    return rows, facts


def _largest_build(generated: Path) -> tuple[float, int]:
    """The build time of the Application with the most objects, as Argo CD runs it."""
    sizes = []
    for kustomization in generated.rglob("kustomization.yaml"):
        doc = yaml.load(kustomization.read_text(), Loader=yaml.CSafeLoader)
        listed = doc.get("resources") or []
        if doc.get("kind") == "Component" or any(not r.endswith(".yaml") for r in listed):
            continue
        sizes.append((len(listed), kustomization.parent))
    objects, directory = max(sizes)
    start = time.perf_counter()
    subprocess.run(["kubectl", "kustomize", str(directory)], check=True, capture_output=True)
    return time.perf_counter() - start, objects


def _isolation(clone: Path, env: dict[str, str], floor: float, rows: list[Row]) -> None:
    """The load step alone: a process per team (the default) against one per file."""
    got: dict[tuple[str, str], float] = {}
    for mode in ("cold", "warm"):
        for isolation in ("team", "file"):
            if mode == "warm":
                helper(env, "--measure-load", str(clone), isolation, "warm")  # fill
            got[mode, isolation] = helper(env, "--measure-load", str(clone), isolation, mode)[
                "seconds"
            ]
    for mode in ("cold", "warm"):
        team, file = got[mode, "team"], got[mode, "file"]
        rows.append(Row(f"load step, {mode}, process per team", Timing(team, 0), team / floor,
                        "of floor", None))  # fmt: skip
        rows.append(Row(f"load step, {mode}, process per file",
                        Timing(file, 0), file / team, "of per team", None))  # fmt: skip


def _validate(
    generated: Path, crds: Path, cache: Path, env: dict[str, str], floor: float, rows: list[Row]
) -> None:
    env = {**env, "TRAINKIT_CACHE_DIR": str(cache)}
    out = {}
    for mode in ("cold", "warm", "warm", "memory"):  # the first warm run fills the cache
        out[mode] = helper(env, "--measure-validate", str(generated), str(crds), mode)
    n = int(out["cold"]["manifests"])
    for mode in ("cold", "warm"):
        t = out[mode]["seconds"]
        rows.append(Row(f"validate {n} manifests, CRDs {mode} (loading incl.)", Timing(t, 0),
                        t / floor, "of floor", 1.0))  # fmt: skip
    mem = out["memory"]
    rows.append(
        Row(f"validate peak allocation, {mem['peak'] / 2**20:.1f} MiB", None,
            mem["peak"] / mem["input"], "of input", 3.0)
    )  # fmt: skip


def load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobs", type=int, nargs="+", default=[1000], help="tree sizes (default 1000)")
    p.add_argument("--repeat", type=int, default=1, help="runs per cold measurement (median)")
    p.add_argument("--shape", choices=sorted(SHAPES), nargs="+", default=["default"],
                   help="how the jobs spread (default: ten teams, two clusters)")  # fmt: skip
    p.add_argument("--measure-validate", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--measure-load", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.measure_validate:
        generated, crds, mode = args.measure_validate
        _measure_validate(Path(generated), Path(crds), mode)
        return
    if args.measure_load:
        root, isolation, mode = args.measure_load
        _measure_load(Path(root), isolation, mode)
        return
    import compileall

    import trainkit

    compileall.compile_dir(Path(trainkit.__file__).parent, quiet=1)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {cpus} CPUs, {sys.platform}, Python {sys.version.split()[0]}; "
          f"load average before: {load_average()}")  # fmt: skip
    if not os.environ.get("TRAINKIT_CRDS"):
        print("(set TRAINKIT_CRDS to a CRD directory to measure check and validate)")
    sizes: list[tuple[int, list[Row], dict[str, float]]] = []
    runs = [
        (shape, jobs)
        for jobs in args.jobs
        for shape in (args.shape if jobs != args.jobs[0] else ["default"])
    ]
    for i, (shape, jobs) in enumerate(runs):
        _shape[0] = shape
        rows, facts = bench(jobs, full=i == 0, repeats=args.repeat)
        sizes.append((jobs, rows, facts))
        teams, clusters, _ = SHAPES[shape]
        print(
            f"\n{jobs} jobs, {teams} team(s) on {len(clusters)} cluster(s) ({shape}): "
            f"{facts['files']:.0f} files, {facts['bytes'] / 2**20:.1f} MiB; "
            f"load average now: {load_average()}"
        )
        print(f"{'':<54}{'seconds':>8} {'RSS MiB':>8} {'ratio':>7}")
        for row in rows:
            print(row.line())
    if len(sizes) > 1:
        (n0, rows0, facts0), *rest = sizes
        print(f"\ngrowth against {n0} jobs (linear: time and memory grow like the output)")
        for (shape, _), (n, rows, facts) in zip(runs[1:], rest, strict=True):
            output = facts["bytes"] / facts0["bytes"]
            print(f"  {n} jobs ({shape}): output ×{output:.1f}")
            for what, key, bound in (("cold synth", "synth", 12), ("cold check", "check", 12)):
                if key in facts and key in facts0:
                    ratio = facts[key] / facts0[key]
                    verdict = "met" if ratio <= bound else "NOT met"
                    print(f"    {what} time ×{ratio:.1f} ≤ {bound}×  {verdict}")
                    rss = facts[key + "_rss"] / facts0[key + "_rss"]
                    verdict = "met" if rss <= output else "NOT met"
                    print(f"    {what} peak RSS ×{rss:.1f} ≤ output ×{output:.1f}  {verdict}")
            before = {r.what: r.timing for r in rows0 if r.timing}
            for r in rows:
                was = before.get(r.what)
                if r.timing and was and was.seconds:
                    rss = f", peak RSS ×{r.timing.rss / was.rss:.1f}" if was.rss else ""
                    print(f"    {r.what:<52} time ×{r.timing.seconds / was.seconds:.1f}{rss}")


if __name__ == "__main__":
    main()
