"""Adoption: the package, `trainkit init`, the README walkthrough, CI and pre-commit as shipped."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from trainkit import __version__
from trainkit.cli import main, parser
from trainkit.repo_root import synth_command
from trainkit.scaffold import scaffold_files
from trainkit.synth import synthesize

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

SCAFFOLD = [
    ".github/workflows/plan-comment.yml",
    ".github/workflows/plan.yml",
    ".github/workflows/trainkit.yml",
    ".gitignore",
    ".pre-commit-config.yaml",
    "CODEOWNERS",
    "README.md",
    "jobs/platform/clusters.py",
    "jobs/platform/policy.py",
    "jobs/platform/teams.py",
    "jobs/research/example_ddp.py",
    "jobs/research/scripts/train.py",
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- the package -------------------------------------------------------------------------


def test_the_distribution_is_installable_under_a_free_name() -> None:
    project = PYPROJECT["project"]
    # "trainkit" on the public index is an unrelated project (0.0.1, 0.0.2).
    assert project["name"] == "trainkit-gitops"
    assert project["scripts"] == {"trainkit": "trainkit.cli:main"}
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert not any("torch" in dep for dep in project["dependencies"])
    assert any(dep.startswith("torch") for dep in project["optional-dependencies"]["rehearse"])
    assert "## Unreleased" in (REPO / "CHANGELOG.md").read_text()
    # The whole package directory, its data (upstream/*.toml, the templates) with it: what the
    # built wheel holds is tests/test_workflows.py's.
    wheel = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["lib/trainkit"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"trainkit {__version__}\n"


def test_make_synth_installs_neither_torch_nor_the_dev_tools(tmp_path: Path) -> None:
    # Under `make test` the parent's MAKEFLAGS would make this make print directories.
    quiet = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def dry(target: str) -> str:
        return subprocess.run(
            ["make", "--no-print-directory", "-n", target, f"VENV={tmp_path}/venv"],
            cwd=REPO, capture_output=True, text=True, check=True, env=quiet,
        ).stdout  # fmt: skip

    synth = dry("synth")
    assert f"{tmp_path}/venv/bin/pip install -q -e .\n" in synth
    assert "torch" not in synth and "[dev" not in synth
    assert synth.rstrip().endswith("bin/trainkit synth")
    setup = dry("setup")
    assert "torch==" in setup and ".[dev,rehearse,deepspeed,ray,mpi,xgboost,jax]" in setup
    assert "build_shm_op()" in setup  # DeepSpeed's CPU op, built once
    assert "trainkit crds --fetch .trainkit/crds --all" in dry("crds")


# --- trainkit init -----------------------------------------------------------------------


def test_init_writes_a_repository_that_synthesizes_and_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], crds: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "init", "ml-jobs")
    assert code == 0
    assert [
        line.removeprefix("created ml-jobs/") for line in out.splitlines()[: len(SCAFFOLD)]
    ] == SCAFFOLD
    assert "cd ml-jobs && trainkit synth && trainkit check" in out
    root = tmp_path / "ml-jobs"
    assert (
        sorted(
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts
        )
        == SCAFFOLD
    )
    assert (root / ".git").is_dir()  # git init: not a repository before
    gitignore = (root / ".gitignore").read_text().splitlines()
    assert ".trainkit/" in gitignore and ".*.trainkit-*" in gitignore

    monkeypatch.chdir(root)
    code, out, err = run(capsys, "synth")
    assert code == 0, err
    assert out == "generated/: 20 added, 0 changed, 0 removed, 0 unchanged\n"
    code, out, err = run(capsys, "check", "--require-crds", "--crds", str(crds))
    assert code == 0, err
    header = (root / "generated/clusters/gpu/research/pytorchjob-example-ddp.yaml").read_text()
    assert header.splitlines()[1] == "# Regenerate with: trainkit synth"

    # Messages name the trainkit command too.
    job = root / "jobs/research/example_ddp.py"
    job.write_text(job.read_text().replace('"20"', '"30"'))
    code, _, err = run(capsys, "check", "--crds", str(crds))
    assert code == 1
    assert "pytorchjob-example-ddp.yaml: is out of date; run `trainkit synth` and commit" in err
    assert "make" not in err


def test_init_never_overwrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# ours\n")
    (tmp_path / ".gitignore").write_text("*.pyc\n.venv/")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n")
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / ".github/workflows/trainkit.yml").write_text("on: push\n")
    code, _, err = run(capsys, "init")
    assert code == 1
    assert err.splitlines() == [
        "error: .github/workflows/trainkit.yml: exists already; move it away or run trainkit "
        "init in another directory",
        "error: .pre-commit-config.yaml: exists already; move it away or run trainkit init in "
        "another directory",
        "trainkit init: 2 error(s)",
    ]
    assert not (tmp_path / "jobs").exists()

    (tmp_path / ".pre-commit-config.yaml").unlink()
    (tmp_path / ".github/workflows/trainkit.yml").unlink()
    code, out, _ = run(capsys, "init", ".")
    assert code == 0
    assert "kept ./README.md" in out and "extended ./.gitignore" in out
    assert (tmp_path / "README.md").read_text() == "# ours\n"
    assert (tmp_path / ".gitignore").read_text() == (
        "*.pyc\n.venv/\n# trainkit: fetched CRDs and the temporaries of `trainkit synth`\n"
        ".trainkit/\n.*.trainkit-*\n__pycache__/\n"
    )
    code, _, err = run(capsys, "init", ".")
    assert code == 1
    assert "jobs/platform: exists already: this repository has a platform" in err


def test_the_scaffolded_ci_pins_this_release_and_requires_the_crds() -> None:
    files = scaffold_files()
    workflow = yaml.safe_load(files[".github/workflows/trainkit.yml"])
    assert workflow["permissions"] == {"contents": "read"}
    job = workflow["jobs"]["trainkit"]
    steps = job["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # origin/main is required when CI is set
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[1:] == [
        f"python -m pip install trainkit-gitops=={__version__}",
        "trainkit crds --fetch",  # outside the work tree ($RUNNER_TEMP), where check finds them
        "trainkit check --require-crds --format github",
    ]
    assert "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in runs[0]
    assert "env" not in job  # no TRAINKIT_CRDS into the workspace
    for command in runs[2:]:
        parser().parse_args(shlex.split(command)[1:])
    hooks = yaml.safe_load(files[".pre-commit-config.yaml"])["repos"][0]["hooks"]
    assert [(h["id"], h["entry"]) for h in hooks] == [
        ("trainkit-synth", "trainkit synth"),
        ("trainkit-check", "trainkit check"),
    ]
    assert (
        f"python -m pip install trainkit-gitops=={__version__}"
        in (files[".pre-commit-config.yaml"])
    )


PINNED_USES = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def installs(files: dict[str, str]) -> set[str]:
    """The pip install lines of every workflow (and the pre-commit advice), as written."""
    lines = {
        line.strip().removeprefix("- run: ").removeprefix("#").strip()
        for text in files.values()
        for line in text.splitlines()
        if "pip install" in line
    }
    return lines


@pytest.mark.parametrize(
    ("options", "line"),
    [
        ({}, f"python -m pip install trainkit-gitops=={__version__}"),
        (
            {"index_url": "https://pypi.internal.example/simple"},
            "python -m pip install --index-url https://pypi.internal.example/simple "
            f"trainkit-gitops=={__version__}",
        ),
        (
            {"git": "https://github.com/acme/trainkit@0123456789abcdef0123456789abcdef01234567"},
            "python -m pip install 'trainkit-gitops @ git+https://github.com/acme/trainkit"
            "@0123456789abcdef0123456789abcdef01234567'",
        ),
    ],
)
def test_every_scaffolded_workflow_installs_the_same_pin(
    options: dict[str, str], line: str
) -> None:
    from trainkit.scaffold import trainkit_install

    files = scaffold_files(install=trainkit_install(__version__, **options))
    assert installs(files) == {line}
    workflows = {k: v for k, v in files.items() if k.startswith(".github/workflows/")}
    assert sorted(workflows) == [
        ".github/workflows/plan-comment.yml",
        ".github/workflows/plan.yml",
        ".github/workflows/trainkit.yml",
    ]
    for path, text in workflows.items():
        steps = [s for job in yaml.safe_load(text)["jobs"].values() for s in job["steps"]]
        for uses in (s["uses"] for s in steps if "uses" in s):
            assert PINNED_USES.match(uses), f"{path}: {uses} is not pinned by commit SHA"
        runs = [s["run"] for s in steps if "run" in s]
        assert "pip install ." not in "\n".join(runs), path
        if path != ".github/workflows/plan-comment.yml":
            # AppArmor's restriction lifted, then installed, before any job file runs.
            assert "kernel.apparmor_restrict_unprivileged_userns=0" in runs[0], path
            assert runs[1] == line, path
    plan = yaml.safe_load(workflows[".github/workflows/plan.yml"])
    assert plan["permissions"] == {"contents": "read"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--git", "https://github.com/acme/trainkit"],
            "error: --git: 'https://github.com/acme/trainkit' is not URL@REF: give the "
            "repository and a tag or commit",
        ),
        (
            ["--git", "https://github.com/acme/trainkit@v1;curl x|sh"],
            "is not URL@REF",
        ),
        (
            ["--index-url", "https://pypi.example/${{ github.token }}"],
            "error: --index-url: 'https://pypi.example/${{ github.token }}' is not a URL "
            "trainkit writes into a workflow",
        ),
    ],
)
def test_init_refuses_a_pin_it_cannot_write_safely(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "init", "repo", *argv)
    assert code == 1 and message in err
    assert not (tmp_path / "repo").exists()


def test_init_in_a_repository_does_not_init_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    monkeypatch.chdir(tmp_path / "repo")
    code, out, _ = run(capsys, "init", "sub")
    assert code == 0 and "initialized a git repository" not in out
    assert not (tmp_path / "repo/sub/.git").exists()
    code, out, _ = run(capsys, "init", str(tmp_path / "fresh"))
    assert "initialized a git repository (branch main)" in out
    head = (tmp_path / "fresh/.git/HEAD").read_text()
    assert head == "ref: refs/heads/main\n"


# --- the command that regenerates -----------------------------------------------------------


def test_a_repository_names_its_own_regenerate_command(bare, monkeypatch) -> None:
    assert synth_command(bare.root) == "trainkit synth"
    bare.write("pyproject.toml", '[tool.trainkit]\nsynth-command = "make synth"\n')
    out = synthesize(bare.jobs, bare.out)
    assert all(b"\n# Regenerate with: make synth\n" in data for data in out.files.values())
    monkeypatch.setenv("TRAINKIT_SYNTH_COMMAND", "just synth")
    assert synth_command(bare.root) == "just synth"
    bare.write("pyproject.toml", "[tool.trainkit\n")  # unreadable: the default, no traceback
    monkeypatch.delenv("TRAINKIT_SYNTH_COMMAND")
    assert synth_command(bare.root) == "trainkit synth"


def test_this_repository_regenerates_with_make() -> None:
    assert synth_command(REPO) == "make synth"
    job = REPO / "generated/clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml"
    assert job.read_text().splitlines()[1] == "# Regenerate with: make synth"


# --- the README walkthrough is what .ci/adopt runs ------------------------------------------

MARKER = "<!-- adoption walkthrough"


def walkthrough() -> list[str]:
    """The lines of the sh block after the marker (what .ci/adopt extracts with awk)."""
    after = README.split(MARKER, 1)[1]
    block = after.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_ci_adopt_runs_the_readme_walkthrough() -> None:
    adopt = (REPO / ".ci/adopt").read_text()
    assert "/<!-- adoption walkthrough/" in adopt and '"$walkthrough"' in adopt
    assert "bash .ci/adopt" in (REPO / ".ci/run").read_text()
    extracted = subprocess.run(
        ["awk", re.search(r"awk '(.*?)' \"\$repo/README.md\"", adopt, re.S)[1], "README.md"],  # type: ignore[index]
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert [line.split("  #", 1)[0].strip() for line in extracted.splitlines()] == walkthrough()
    commands = " ; ".join(walkthrough())
    for step in (
        "trainkit init",
        "trainkit synth",
        "trainkit crds --fetch",
        "check --require-crds",
    ):
        assert step in commands


def test_the_walkthrough_passes_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], crds: Path
) -> None:
    """The same lines through ``main`` (the wheel-installed run is .ci/adopt, outside pytest)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    monkeypatch.setenv("TRAINKIT_CRDS_MIRROR", str(crds))
    # The fetched CRDs go to the cache directory, outside the work tree: this test's own.
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(tmp_path / "cache"))
    for line in walkthrough():
        for command in line.split("&&"):
            argv = shlex.split(command)
            if argv[0] == "cd":
                monkeypatch.chdir(Path.cwd() / argv[1])
                continue
            assert argv[0] == "trainkit", line
            code, _, err = run(capsys, *argv[1:])
            assert code == 0, f"{command}: {err}"
    assert (tmp_path / "cache/crds/volcano/scheduling.volcano.sh_queues.yaml").is_file()
    assert not (tmp_path / "ml-jobs/.trainkit").exists()


# --- CI and pre-commit as shipped ----------------------------------------------------------


def test_the_github_workflow_fetches_the_crds_it_validates_against() -> None:
    workflow = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text())
    job = workflow["jobs"]["trainkit"]
    steps = job["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[1:] == ['make crds CRDS="$RUNNER_TEMP/trainkit-crds"', "bash .ci/run"]
    # Outside the work tree: no pull request can add a CRD there.
    assert steps[-1]["env"]["TRAINKIT_CRDS"] == "${{ runner.temp }}/trainkit-crds"
    # With CI set, make check requires the CRDs.
    makefile = (REPO / "Makefile").read_text()
    assert "CHECK_FLAGS ?= $(if $(CI),--require-crds)" in makefile
    assert "$(TK) check $(CHECK_FLAGS)" in makefile


def test_pre_commit_hooks_run_real_commands() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["trainkit-synth", "trainkit-check"]
    for hook in hooks:
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        argv = shlex.split(hook["entry"])
        assert argv[0] == "trainkit"
        assert parser().parse_args(argv[1:]).command == argv[1]
