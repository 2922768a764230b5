"""Reading the deployed tree: a git revision's generated/, or the files on disk."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trainkit.deployed.baseline import baseline_from_dir, baseline_from_git, resolve_baseline
from trainkit.errors import SetupError

JOB = "clusters/east/vision/trainjob-x-r1.yaml"


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """git as on a fresh machine: no user config, no hook variables, no repository above tmp_path."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(repo: Path, files: dict[str, str], message: str = "c") -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on main whose generated/ holds one job and a file whose name has spaces."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, {f"generated/{JOB}": "image: a:1\n", "generated/a b/c d.yaml": "spaced\n"})
    return root


def test_from_git_reads_committed_bytes_not_the_working_tree(repo: Path) -> None:
    (repo / "generated" / JOB).write_text("image: a:2\n")
    head = git(repo, "rev-parse", "HEAD")
    baseline = baseline_from_git(repo, repo / "generated", "main")
    assert baseline.description == f"main ({head[:12]})"
    assert baseline.read_many([JOB, "a b/c d.yaml", "clusters/east/missing.yaml"]) == {
        JOB: b"image: a:1\n",
        "a b/c d.yaml": b"spaced\n",
    }
    assert baseline.read_many([]) == {}


def test_from_git_with_out_dir_relative_to_cwd_and_root_a_subdirectory(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "jobs").mkdir()
    monkeypatch.chdir(repo)
    baseline = baseline_from_git(repo / "jobs", Path("generated"), "main")
    assert baseline.read_many([JOB]) == {JOB: b"image: a:1\n"}


def test_from_git_reads_an_older_commit_by_id(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    commit(repo, {f"generated/{JOB}": "image: a:2\n"})
    baseline = baseline_from_git(repo, repo / "generated", first)
    assert baseline.description == f"{first} ({first[:12]})"
    assert baseline.read_many([JOB]) == {JOB: b"image: a:1\n"}


def test_out_dir_at_the_top_of_the_repository(repo: Path) -> None:
    baseline = baseline_from_git(repo, repo, "main")
    assert baseline.read_many([f"generated/{JOB}", JOB]) == {f"generated/{JOB}": b"image: a:1\n"}


def test_a_submodule_entry_is_no_file(repo: Path) -> None:
    # A gitlink's commit is not in this repository, so cat-file answers "missing".
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},generated/sub")
    git(repo, "commit", "-q", "-m", "submodule")
    baseline = baseline_from_git(repo, repo / "generated", "main")
    assert baseline.read_many(["sub", JOB]) == {JOB: b"image: a:1\n"}


def test_many_files_take_two_git_processes(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"clusters/east/vision/job-{i}.yaml" for i in range(40)]
    commit(repo, {f"generated/{n}": f"n: {i}\n" for i, n in enumerate(names)})
    baseline = baseline_from_git(repo, repo / "generated", "main")
    calls = _counting(monkeypatch)
    found = baseline.read_many(names)
    assert found == {n: f"n: {i}\n".encode() for i, n in enumerate(names)}
    assert [c[3] for c in calls] == ["--literal-pathspecs", "cat-file"]


def test_unknown_revision_is_a_setup_error_naming_it(repo: Path) -> None:
    with pytest.raises(SetupError) as err:
        resolve_baseline(repo, repo / "generated", "origin/mian")
    [problem] = err.value.problems
    assert "'origin/mian' does not exist" in problem.message
    assert "git fetch origin" in problem.message
    assert "--against" in problem.message


def test_revision_that_looks_like_an_option_is_refused(repo: Path) -> None:
    with pytest.raises(SetupError, match="'--output=x' does not exist"):
        baseline_from_git(repo, repo / "generated", "--output=x")


def test_default_prefers_the_remote_tracking_branch(repo: Path) -> None:
    deployed_commit = git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", "refs/remotes/origin/main", deployed_commit)
    commit(repo, {f"generated/{JOB}": "image: a:2\n"})  # committed locally, not pushed yet
    baseline = resolve_baseline(repo, repo / "generated", None)
    assert baseline.description == f"origin/main ({deployed_commit[:12]})"
    assert baseline.read_many([JOB]) == {JOB: b"image: a:1\n"}


def test_default_follows_the_given_revision(repo: Path) -> None:
    prod = git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", "refs/remotes/origin/prod", prod)
    commit(repo, {f"generated/{JOB}": "image: a:2\n"})
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    baseline = resolve_baseline(repo, repo / "generated", None, revision="prod")
    assert baseline.description == f"origin/prod ({prod[:12]})"
    assert baseline.read_many([JOB]) == {JOB: b"image: a:1\n"}


def test_default_without_a_remote_uses_the_local_branch(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    baseline = resolve_baseline(repo, repo / "generated", None)
    assert baseline.description == f"main ({head[:12]})"


def test_default_outside_git_knows_of_nothing_deployed(tmp_path: Path) -> None:
    # Argo CD deploys from git: the files on disk are this run's own output.
    write(tmp_path, {f"generated/{JOB}": "image: a:3\n"})
    baseline = resolve_baseline(tmp_path, tmp_path / "generated", None)
    assert baseline.description == "nothing known to be deployed (not a git repository)"
    assert baseline.read_many([JOB, "nope.yaml"]) == {}
    disk = resolve_baseline(tmp_path, tmp_path / "generated", "disk")
    assert disk.read_many([JOB, "nope.yaml"]) == {JOB: b"image: a:3\n"}


def test_default_in_a_repository_without_commits_knows_of_nothing_deployed(
    tmp_path: Path,
) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    baseline = resolve_baseline(tmp_path, tmp_path / "generated", None)
    assert baseline.description == (
        "nothing known to be deployed (neither origin/main nor main exists in git)"
    )
    assert baseline.read_many([JOB]) == {}


def test_default_with_out_dir_outside_the_repository_uses_the_directory(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    baseline = resolve_baseline(repo, outside, None)
    assert baseline.description == (
        f"nothing known to be deployed (outside the git repository at {repo})"
    )
    with pytest.raises(SetupError, match="outside the git repository"):
        resolve_baseline(repo, outside, "main")


def test_without_git_installed(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    baseline = resolve_baseline(repo, repo / "generated", None)
    assert baseline.description == "nothing known to be deployed (git is not installed)"
    with pytest.raises(SetupError, match="git not found on PATH"):
        resolve_baseline(repo, repo / "generated", "main")


def test_explicit_revision_outside_a_repository_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="needs a git work tree"):
        resolve_baseline(tmp_path, tmp_path / "generated", "main")


def test_disk_reads_the_working_tree(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "generated" / JOB).write_text("image: a:2\n")
    monkeypatch.chdir(repo)
    baseline = resolve_baseline(repo, Path("generated"), "disk")
    assert baseline.description == "generated/ on disk"
    assert baseline.read_many([JOB, "nope.yaml"]) == {JOB: b"image: a:2\n"}
    assert baseline == baseline_from_dir(Path("generated"))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real_run: Callable[..., Any] = subprocess.run

    def counting_run(args: list[str], **kwargs: Any) -> Any:
        calls.append(args)
        return real_run(args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)
    return calls


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_read_changed_reads_only_files_deployed_with_other_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, object_format: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", f"--object-format={object_format}")
    same, edited, spaced = (
        f"generated/{JOB}",
        "generated/clusters/east/x.yaml",
        "generated/a\tb c.yaml",
    )
    commit(root, {same: "image: a:1\n", edited: "image: b:1\n", spaced: "s: 1\n"})
    baseline = baseline_from_git(root, root / "generated", "main")
    calls = _counting(monkeypatch)
    now = {
        JOB: b"image: a:1\n",  # deployed as it is: not read
        "clusters/east/x.yaml": b"image: b:2\n",  # changed: its deployed bytes
        "a\tb c.yaml": b"s: 1\n",
        "clusters/east/new.yaml": b"image: c:1\n",  # not deployed
    }
    assert baseline.read_changed(now) == {"clusters/east/x.yaml": b"image: b:1\n"}
    # One listing (blob ids) and one read of the changed file only.
    assert [c[3] for c in calls] == ["--literal-pathspecs", "cat-file"]
    assert baseline.read_changed({JOB: b"image: a:1\n"}) == {}
    assert [c[3] for c in calls] == ["--literal-pathspecs", "cat-file"]  # listed once
    assert sorted(baseline.paths()) == sorted(["a\tb c.yaml", JOB, "clusters/east/x.yaml"])


def test_read_changed_on_disk_compares_the_bytes(repo: Path) -> None:
    disk = baseline_from_dir(repo / "generated")
    assert disk.read_changed({JOB: b"image: a:1\n", "a b/c d.yaml": b"other\n"}) == {
        "a b/c d.yaml": b"spaced\n"
    }


def test_a_baseline_is_found_with_one_git_process_per_revision_tried(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The top of the work tree, whether it is shallow and the first revision to try come
    from one rev-parse; a fallback revision (main without origin/main) costs one more."""
    head = git(repo, "rev-parse", "HEAD")
    calls = _counting(monkeypatch)
    baseline = resolve_baseline(repo, repo / "generated", None)
    assert baseline.description == f"main ({head[:12]})"
    assert [c[3] for c in calls] == ["rev-parse", "rev-parse"]
    git(repo, "update-ref", "refs/remotes/origin/main", head)
    for against, description in ((None, "origin/main"), ("HEAD~0", "HEAD~0")):
        del calls[:]
        baseline = resolve_baseline(repo, repo / "generated", against)
        assert baseline.description == f"{description} ({head[:12]})"
        assert [c[3] for c in calls] == ["rev-parse"]


def test_a_required_baseline_missing_from_a_shallow_clone_says_it_is_shallow(
    repo: Path, tmp_path: Path
) -> None:
    git(repo, "checkout", "-q", "-b", "pr")
    commit(repo, {f"generated/{JOB}": "image: a:2\n"})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "-b", "pr", f"file://{repo}", str(clone))
    for where, shallow in ((clone, " (a shallow clone)"), (repo, "")):
        with pytest.raises(SetupError) as err:
            resolve_baseline(where, where / "generated", None, require=True)
        [problem] = err.value.problems
        assert f"but origin/main does not exist in git{shallow}; fetch it" in problem.message
    # Without require, the clone's pr is no main either: nothing known to be deployed.
    baseline = resolve_baseline(clone, clone / "generated", None)
    assert baseline.nothing and "neither origin/main nor main exists" in baseline.description


def test_a_revision_without_the_output_directory_is_listed_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing committed below the output directory yet (a repository's first synth): the
    empty listing is remembered like any other, not asked of git again at every use."""
    baseline = resolve_baseline(repo, repo / "nothing-here", "main")
    calls = _counting(monkeypatch)
    assert baseline.paths() == []
    assert baseline.read_changed({JOB: b"image: a:1\n"}) == {}
    assert baseline.read_many([JOB]) == {}
    assert [c[3] for c in calls] == ["--literal-pathspecs"]
