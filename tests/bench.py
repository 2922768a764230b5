"""`make bench`: synth and validation speed on generated job trees, as ratios of one run.

Not a test: numbers vary by machine, so they are printed, compared only with
each other (CSafeDumper writing the same manifests is the yardstick), never asserted.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PLATFORM = """\
from trainkit import ArgoCD, Capacity, Cluster, Queue, Team

argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")
east = Cluster(name="east", server="https://east.example.com", gpus_per_node=8)
queues = [Queue(name=f"q{i}", capability=Capacity(gpu=64)) for i in range(10)]
teams = [Team(name=f"team{i}", queues=[f"q{i}"]) for i in range(10)]
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
)
"""


def make_tree(root: Path, jobs: int) -> None:
    (root / "jobs/platform").mkdir(parents=True)
    (root / "jobs/platform/platform.py").write_text(PLATFORM)
    for n in range(jobs):
        team = root / f"jobs/team{n % 10}"
        (team / "scripts").mkdir(parents=True, exist_ok=True)
        (team / f"job_{n}.py").write_text(JOB.format(n=n))
        (team / f"scripts/train_{n}.py").write_text(f"print('training {n}')\n" * 20)


def timed_cli(root: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "trainkit", *args], cwd=root, check=True, capture_output=True
    )
    return time.perf_counter() - start


def _measure_validate(generated: Path, crds: Path, mode: str) -> None:
    """In a fresh process: load the CRDs and validate ``generated``; print JSON numbers.

    ``mode``: ``cold`` (no cache), ``warm`` (the cache in $TRAINKIT_CACHE_DIR) or
    ``memory`` (cold, under tracemalloc: the peak of what validation allocates).
    """
    import json
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


def timed_validate(generated: Path, cache: Path) -> dict[str, dict[str, float]] | None:
    """Cold, warm and memory runs, each in its own process (nothing carried over in memory)."""
    import json
    import os

    raw = os.environ.get("TRAINKIT_CRDS")
    if not raw:
        return None
    env = {**os.environ, "TRAINKIT_CACHE_DIR": str(cache)}
    env.pop("CI", None)
    out = {}
    for mode in ("cold", "warm", "warm", "memory"):  # the first warm run fills the cache
        result = subprocess.run(
            [sys.executable, __file__, "--measure-validate", str(generated), raw, mode],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        out[mode] = json.loads(result.stdout)
    return out


def dumper_baseline(generated: Path, out: Path) -> float:
    """Plain CSafeDumper writing the same manifests to the same number of files."""
    bodies = [
        (p.relative_to(generated), yaml.load(p.read_text(), Loader=yaml.CSafeLoader))
        for p in sorted(generated.rglob("*.yaml"))
    ]
    start = time.perf_counter()
    for rel, body in bodies:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False))
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument(
        "--measure-validate", nargs=3, metavar=("GENERATED", "CRDS", "MODE"), help=argparse.SUPPRESS
    )
    args = p.parse_args()
    if args.measure_validate:
        generated, crds, mode = args.measure_validate
        _measure_validate(Path(generated), Path(crds), mode)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, args.jobs)
        cold = timed_cli(root, "synth")
        files = sum(1 for _ in (root / "generated").rglob("*.yaml"))
        noop = timed_cli(root, "synth")
        job = root / "jobs/team3/job_3.py"
        job.write_text(job.read_text().replace('"--epochs", "3"', '"--epochs", "30"'))
        one = timed_cli(root, "synth")
        validate = timed_validate(root / "generated", root / "cache")
        shutil.rmtree(root / ".trainkit")
        (root / "generated/clusters/east/kustomization.yaml").touch()
        base = dumper_baseline(root / "generated", root / "baseline")
        print(f"{args.jobs} jobs, {files} files")
        print(f"CSafeDumper writing the same manifests : {base:6.2f} s  (1.0×)")
        print(
            f"cold synth (process, node, cdk8s)       : {cold:6.2f} s  ({cold / base:.1f}×; target ≤ 4×)"
        )
        print(
            f"no-change re-run                        : {noop:6.2f} s  ({noop / base:.1f}×; target < 0.5 s)"
        )
        print(
            f"one changed job                         : {one:6.2f} s  ({one / base:.1f}×; target < 1 s)"
        )
        if validate is not None:
            n = validate["cold"]["manifests"]
            for mode in ("cold", "warm"):
                t = validate[mode]["seconds"]
                print(
                    f"validate {n} manifests, {mode} CRDs{' ' * (5 - len(mode))}: {t:6.2f} s  "
                    f"({t / base:.2f}×; CRD loading included; target ≤ 1×)"
                )
            mem = validate["memory"]
            print(
                f"validate peak memory                    : {mem['peak'] / 2**20:6.1f} MiB "
                f"({mem['peak'] / mem['input']:.1f}× the input of {mem['input'] / 2**20:.1f} MiB; "
                "target ≤ 3×)"
            )
        else:
            print("validate: set TRAINKIT_CRDS to a CRD directory to measure validation")


if __name__ == "__main__":
    main()
