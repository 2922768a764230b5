"""The release workflow's build of this checkout, once per test run, shared by the xdist workers.

`release.yml`'s build job runs `python -m build` (the sdist, then the wheel built from it) and
`twine check --strict` on a checkout. tests/test_workflows.py asserts that those steps pass and
what they produce; tests/test_init_workflows.py installs that wheel, the one a release
publishes, in the repository `trainkit init` writes. Both read the one build made here: the
first worker to ask runs the steps, the others wait for its result (a file lock) and read it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from run_directory import run_directory

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
WORKFLOW = REPO / ".github/workflows/release.yml"


@dataclass(frozen=True)
class StepResult:
    run: str
    returncode: int
    output: str


@dataclass(frozen=True)
class ReleaseBuild:
    steps: list[StepResult]
    """The build job's `run:` steps after the install of build and twine, in order."""
    dist: Path
    """Its `dist/` (empty or missing when a step failed)."""


def build_steps() -> list[str]:
    """The `run:` steps of the build job that run on every push (not the tag's own check)."""
    build = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["build"]
    return [s["run"] for s in build["steps"] if "run" in s and "if" not in s]


def release_build(tmp_path_factory: pytest.TempPathFactory) -> ReleaseBuild:
    """The build job's steps on a copy of this checkout's sources (tracked and new files)."""
    where = run_directory(tmp_path_factory) / "release-build"
    with FileLock(str(where) + ".lock"):
        record = where / "steps.json"
        if not record.is_file():
            _build(where)
        steps = [StepResult(**s) for s in json.loads(record.read_text(encoding="utf-8"))]
    return ReleaseBuild(steps, where / "src/dist")


def sources() -> list[str]:
    """The checkout's files a build sees: tracked and new ones, not those git ignores."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    return [name for name in files if name and (REPO / name).is_file()]


def _build(where: Path) -> None:
    shutil.rmtree(where, ignore_errors=True)
    src = where / "src"
    for name in sources():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes((REPO / name).read_bytes())
    home = where / "home"
    home.mkdir()
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    results = []
    for run in build_steps()[1:]:  # build and twine are dev dependencies here
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", run.replace("python ", f"{BIN}/python ", 1)],
            cwd=src, capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip
        results.append(
            {"run": run, "returncode": done.returncode, "output": done.stdout + done.stderr}
        )
        if done.returncode:
            break
    (where / "steps.json").write_text(json.dumps(results), encoding="utf-8")
