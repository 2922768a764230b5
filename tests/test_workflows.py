"""The GitHub workflows, this project's and those `trainkit init` writes: zizmor (security
audits, offline) and GitHub's workflow schema (vendored in check-jsonschema) find nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import release_build
from trainkit import __version__
from trainkit.scaffold import scaffold, trainkit_install

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def project_workflows() -> list[Path]:
    return sorted((REPO / ".github/workflows").glob("*.yml"))


@pytest.fixture(params=["index", "internal-index", "git"])
def scaffolded(request: pytest.FixtureRequest, tmp_path: Path) -> list[Path]:
    options = {
        "index": {},
        "internal-index": {"index_url": "https://pypi.internal.example/simple"},
        "git": {"git": "https://github.com/acme/trainkit@v0.2.0"},
    }[request.param]
    scaffold(tmp_path / "repo", trainkit_install(__version__, **options))
    return sorted((tmp_path / "repo/.github/workflows").glob("*.yml"))


def zizmor(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    # --offline: no GitHub API (the audits that need it are skipped, the rest run).
    return subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--no-progress", "--format", "plain", *map(str, paths)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def schema_check(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
         *map(str, paths)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_project_has_the_workflows_it_runs() -> None:
    names = [p.name for p in project_workflows()]
    assert {"ci.yml", "plan.yml", "plan-comment.yml", "release.yml"} <= set(names)


def test_zizmor_finds_nothing_in_this_projects_workflows() -> None:
    done = zizmor(project_workflows())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_zizmor_finds_nothing_in_the_workflows_init_writes(scaffolded: list[Path]) -> None:
    assert [p.name for p in scaffolded] == ["plan-comment.yml", "plan.yml", "trainkit.yml"]
    done = zizmor(scaffolded)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflows_follow_githubs_schema(scaffolded: list[Path]) -> None:
    done = schema_check(project_workflows() + scaffolded)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_does_report_an_unpinned_action(tmp_path: Path) -> None:
    """The check can fail: an action by tag instead of commit SHA is a finding."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "name: bad\non: push\npermissions: {}\njobs:\n  j:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n        with:\n"
        "          persist-credentials: false\n"
    )
    done = zizmor([bad])
    assert done.returncode != 0 and "unpinned-uses" in done.stdout + done.stderr
    bad.write_text("name: bad\non: push\njobs:\n  j:\n    steps: []\n")
    assert schema_check([bad]).returncode != 0  # runs-on is required


@pytest.mark.long
def test_the_release_workflow_builds_checks_and_publishes_without_a_token(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Its build job's `run:` steps, in order, on a copy of the sources (release_build.py, the
    build tests/test_init_workflows.py installs); publish is trusted."""
    import yaml

    workflow = yaml.safe_load(release_build.WORKFLOW.read_text())
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["needs"] == "build"
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert "with" not in publish["steps"][-1]  # no password: trusted publishing
    runs = release_build.build_steps()
    assert runs[1:] == ["python -m build", "python -m twine check --strict dist/*"]
    built = release_build.release_build(tmp_path_factory)
    for step in built.steps:
        assert step.returncode == 0, f"{step.run}: {step.output}"
    assert [s.run for s in built.steps] == runs[1:]
    dist = sorted(p.name for p in built.dist.iterdir())
    assert dist == [
        f"trainkit_gitops-{__version__}-py3-none-any.whl",
        f"trainkit_gitops-{__version__}.tar.gz",
    ]
