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


def timed_validate(generated: Path) -> tuple[float, float, int] | None:
    import os

    from trainkit.validate import load_crds, validate_paths

    raw = os.environ.get("TRAINKIT_CRDS")
    if not raw:
        return None
    start = time.perf_counter()
    crds = load_crds(Path(raw))
    loaded = time.perf_counter()
    problems = validate_paths([generated], crds, root=generated.parent)
    done = time.perf_counter()
    if problems:
        raise SystemExit(f"generated manifests do not validate: {problems[:3]}")
    n = sum(
        1
        for p in generated.rglob("*.yaml")
        if p.name not in ("kustomization.yaml", "kustomizeconfig.yaml")
    )
    return loaded - start, done - loaded, n


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
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, args.jobs)
        cold = timed_cli(root, "synth")
        files = sum(1 for _ in (root / "generated").rglob("*.yaml"))
        noop = timed_cli(root, "synth")
        job = root / "jobs/team3/job_3.py"
        job.write_text(job.read_text().replace('"--epochs", "3"', '"--epochs", "30"'))
        one = timed_cli(root, "synth")
        validate = timed_validate(root / "generated")
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
            load, check, n = validate
            print(
                f"validate {n} manifests against the CRDs : {check:6.2f} s  (target < 2 s; "
                f"loading the CRDs once: {load:.2f} s)"
            )
        else:
            print("validate: set TRAINKIT_CRDS to a CRD directory to measure validation")


if __name__ == "__main__":
    main()
