"""The GitHub workflows, this project's and those `trainkit init` writes: zizmor (security
audits, offline) and GitHub's workflow schema (vendored in check-jsonschema) find nothing."""

from __future__ import annotations

import contextlib
import email
import io
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

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
    """``check-jsonschema --builtin-schema vendor.github-workflows PATHS``, in this process:
    its command as its entry point runs it (a process of its own only repeated the
    interpreter's start and the imports, about 0.3 CPU-s each time)."""
    from check_jsonschema.cli.main_command import main as check_jsonschema

    args = ["--builtin-schema", "vendor.github-workflows", *map(str, paths)]
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = check_jsonschema.main(args, prog_name="check-jsonschema", standalone_mode=False)
    assert isinstance(code, int), code  # its exit status (click returns what ctx.exit got)
    return subprocess.CompletedProcess(["check-jsonschema", *args], code, said.getvalue(), "")


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


# The releases of the publish action release.yml may pin, each with the newest core metadata
# the twine it bundles uploads (the action's requirements/runtime.txt at the tag: v1.8.14 has
# twine 5.0.0, which refuses 2.4, so setuptools 77's and hatchling's builds would not publish;
# v1.12.4 bundles twine 6.1, the first that reads 2.4; twine 7 reads 2.5). A pin not listed
# here is one nobody checked against what the build writes.
PUBLISH_ACTION_READS = {
    "76f52bc884231f62b9a034ebfe128415bbaabdfc": ("v1.12.4", "2.4"),
}


@pytest.mark.long
def test_the_publish_action_uploads_the_metadata_version_the_build_writes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    import yaml
    from packaging.version import Version

    publish = yaml.safe_load(release_build.WORKFLOW.read_text())["jobs"]["publish"]
    action, _, sha = publish["steps"][-1]["uses"].partition("@")
    assert action == "pypa/gh-action-pypi-publish"
    assert sha in PUBLISH_ACTION_READS, f"{sha}: a publish action release nobody checked"
    tag, newest = PUBLISH_ACTION_READS[sha]
    built = release_build.release_build(tmp_path_factory)
    for dist in sorted(built.dist.iterdir()):
        if dist.suffix == ".whl":
            with zipfile.ZipFile(dist) as z:
                name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
                text = z.read(name).decode("utf-8")
        else:
            with tarfile.open(dist) as t:
                read = t.extractfile(f"{dist.name.removesuffix('.tar.gz')}/PKG-INFO")
                assert read is not None
                text = read.read().decode("utf-8")
        written = email.message_from_string(text)["Metadata-Version"]
        assert Version(written) <= Version(newest), f"{dist.name}: {written}; {tag} reads {newest}"


@pytest.mark.long
def test_the_sdist_and_the_wheel_hold_the_package_as_checked_out_and_its_metadata(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Whatever the build backend: the wheel holds every file of lib/trainkit as checked out
    (modules, py.typed, the health scripts, the CRD pins, the templates) and its dist-info;
    the sdist the same files, the test modules and the project's, with PKG-INFO; both carry
    core metadata 2.4 (what publishing tools before twine 7 read) of the pyproject."""
    built = release_build.release_build(tmp_path_factory)
    assert not [s.run for s in built.steps if s.returncode]
    files = release_build.sources()
    package = {n for n in files if n.startswith("lib/trainkit/")}
    assert {"lib/trainkit/py.typed", "lib/trainkit/upstream/crds.toml"} <= package
    info = f"trainkit_gitops-{__version__}.dist-info/"
    (wheel,) = built.dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        inside = {n: z.read(n) for n in z.namelist()}
    assert {n for n in inside if not n.startswith(info)} == {n[4:] for n in package}
    assert [n for n in package if inside[n[4:]] != (REPO / n).read_bytes()] == []
    assert inside[f"{info}licenses/LICENSE"] == (REPO / "LICENSE").read_bytes()
    assert (
        "[console_scripts]\ntrainkit = trainkit.cli:main\n"
        in inside[f"{info}entry_points.txt"].decode()
    )

    top = f"trainkit_gitops-{__version__}/"
    (sdist,) = built.dist.glob("*.tar.gz")
    held = {}
    with tarfile.open(sdist) as t:
        for member in filter(tarfile.TarInfo.isfile, t.getmembers()):
            read = t.extractfile(member)
            assert read is not None and member.name.startswith(top), member.name
            held[member.name.removeprefix(top)] = read.read()
    tests = {n for n in files if re.fullmatch(r"tests/test_\w+\.py", n)}
    project = {"pyproject.toml", "README.md", "LICENSE", ".gitignore"}
    assert set(held) - {"PKG-INFO"} == package | tests | project
    assert [n for n in set(held) - {"PKG-INFO"} if held[n] != (REPO / n).read_bytes()] == []

    want = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for text in (inside[f"{info}METADATA"], held["PKG-INFO"]):
        meta = email.message_from_string(text.decode("utf-8"))
        assert meta["Metadata-Version"] == "2.4"
        assert (meta["Name"], meta["Version"]) == (want["name"], __version__)
        assert meta["License-Expression"] == want["license"]
        assert meta.get_all("License-File") == want["license-files"]
        assert meta["Requires-Python"] == want["requires-python"]
        needs = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
        assert {str(r) for r in needs if r.marker is None or "extra" not in str(r.marker)} == {
            str(Requirement(d)) for d in want["dependencies"]
        }
        assert set(meta.get_all("Provides-Extra") or []) == set(want["optional-dependencies"])
        readme = (REPO / "README.md").read_text(encoding="utf-8")
        assert str(meta.get_payload()).strip() == readme.strip()
