"""CLI conventions: any subdirectory, exit codes, output formats, node, progress."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from trainkit.cli import main
from trainkit.errors import Problem
from trainkit.progress import Progress
from trainkit.repo_root import find_root, rebase
from trainkit.validate import format_github


def run_in(
    where: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    monkeypatch.chdir(where)
    code = main(list(args))
    captured = capsys.readouterr()
    assert Path.cwd() == where  # main returns to where it started
    return code, captured.out, captured.err


# --- the repository root -----------------------------------------------------------------


def test_commands_run_from_any_subdirectory(bare, monkeypatch, capsys, crds) -> None:
    sub = bare.root / "jobs/vision/scripts"
    code, out, err = run_in(sub, monkeypatch, capsys, "synth")
    assert code == 0, err
    assert out.startswith("generated/: ")
    assert (bare.out / "clusters/east/vision/pytorchjob-ddp.yaml").is_file()
    code, out, err = run_in(sub, monkeypatch, capsys, "check", "--crds", os.path.relpath(crds, sub))
    assert code == 0, err
    assert out.startswith("generated/ is up to date")
    code, out, _ = run_in(sub, monkeypatch, capsys, "validate", "--crds", str(crds))
    assert code == 0 and out.startswith("valid: generated against")
    # Paths given are relative to where the command started; messages name them from the root.
    bare.write("jobs/vision/bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad}\n")
    code, out, _ = run_in(sub, monkeypatch, capsys, "validate", "../bad.yaml")
    assert code == 1
    assert out.startswith("jobs/vision/bad.yaml\n  line 3: ConfigMap 'Bad': metadata.name: ")
    code, out, _ = run_in(sub, monkeypatch, capsys, "synth", "--out", "../../../elsewhere")
    assert code == 0 and out.startswith("elsewhere/: ")
    assert (bare.root / "elsewhere/argocd/kustomization.yaml").is_file()


def test_the_root_is_the_nearest_directory_holding_jobs_within_git(tmp_path: Path) -> None:
    (tmp_path / "repo/.git").mkdir(parents=True)
    (tmp_path / "repo/deep/er").mkdir(parents=True)
    (tmp_path / "jobs").mkdir()  # above the git work tree: someone else's
    assert find_root(tmp_path / "repo/deep/er") == tmp_path / "repo"
    (tmp_path / "repo/deep/jobs").mkdir()
    assert find_root(tmp_path / "repo/deep/er") == tmp_path / "repo/deep"
    (tmp_path / "plain/a").mkdir(parents=True)
    assert find_root(tmp_path / "plain/a") == tmp_path  # no git: the jobs/ above
    assert rebase("../x.yaml", tmp_path / "repo/deep/er", tmp_path / "repo") == "deep/x.yaml"
    assert rebase("../../../y", tmp_path / "repo/deep/er", tmp_path / "repo") == str(tmp_path / "y")
    assert rebase(".", tmp_path / "repo", tmp_path / "repo") == "."


# --- exit codes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["deploy"],
        ["synth", "--bogus"],
        ["check", "--format", "xml"],
        ["rehearse"],
        ["rehearse", "job.py", "--nodes", "0"],
        ["rehearse", "job.py", "--timeout", "soon"],
        ["synth", "--load-timeout", "-1"],
        ["crds", "--all", "--format", "github"],
        ["init", "a", "b"],
    ],
    ids=lambda a: " ".join(a) or "nothing",
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: trainkit")
    assert "error: " in err.splitlines()[-1]


def test_a_missing_node_is_one_line(bare, monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JSII_NODE", raising=False)
    for command in ("synth", "check"):
        code, out, err = run_in(bare.root, monkeypatch, capsys, command)
        assert code == 1 and out == ""
        assert err.splitlines() == [
            "error: node: Node.js not found on PATH; trainkit writes manifests with cdk8s, which "
            "runs on it: install Node.js 18 or newer (https://nodejs.org, `apt-get install "
            "nodejs`, `brew install node`) and run again",
            f"trainkit {command}: 1 error(s)",
        ]
    assert not bare.out.exists()


# --- output formats ----------------------------------------------------------------------

BAD_JOB = (
    "from trainkit import PyTorchJob, Resources\n"
    "job = PyTorchJob(name='ddp', image='i', command=['x'], clusters=['west'],\n"
    "                 resources=Resources(cpu=1, memory='1Gi', gpu=6))\n"
)
GPU_MESSAGE = "resources.gpu: 6 exceeds the 4 GPUs per node of cluster 'west'"


def test_synth_reports_as_github_annotations_and_json(bare, bare_cli) -> None:
    bare.write("jobs/vision/ddp.py", BAD_JOB)
    run = bare_cli("synth", "--format", "github")
    assert run.code == 1
    assert run.out == (
        "::error file=jobs/vision/ddp.py,line=3,title=trainkit synth::PyTorchJob 'ddp': "
        f"{GPU_MESSAGE}\n"
    )
    assert run.err == "trainkit synth: 1 error(s)\n"
    run = bare_cli("synth", "--format", "json")
    assert run.code == 1
    (row,) = json.loads(run.out)
    assert row == {
        "file": "jobs/vision/ddp.py",
        "line": 3,
        "obj": "PyTorchJob 'ddp'",
        "field": "resources.gpu",
        "message": "6 exceeds the 4 GPUs per node of cluster 'west'",
    }


def test_success_in_json_is_an_empty_list(bare_cli, crds) -> None:
    run = bare_cli("synth", "--format", "json")
    assert run.code == 0 and json.loads(run.out) == []
    assert run.err.startswith("generated/: ")
    run = bare_cli("check", "--crds", str(crds), "--format", "json")
    assert run.code == 0 and json.loads(run.out) == []
    assert "is up to date" in run.err


def test_check_and_validate_annotate_the_manifest_line(bare, bare_cli, crds, monkeypatch) -> None:
    assert bare_cli("synth").code == 0
    path = bare.out / "clusters/west/vision/pytorchjob-ddp.yaml"
    text = path.read_text()
    line = text.splitlines().index("      replicas: 1") + 1
    path.write_text(text.replace("replicas: 1", "replicas: one", 1))
    run = bare_cli("validate", "--crds", str(crds), "--format", "github")
    assert run.code == 1
    assert run.out.startswith(
        f"::error file=generated/clusters/west/vision/pytorchjob-ddp.yaml,line={line},"
        "title=trainkit validate::PyTorchJob 'ddp': spec.pytorchReplicaSpecs.Master.replicas: "
    )
    run = bare_cli("check", "--crds", str(crds), "--format", "github")
    assert run.code == 1
    assert run.out == (
        "::error file=generated/clusters/west/vision/pytorchjob-ddp.yaml,title=trainkit check::"
        "is out of date; run `trainkit synth` and commit the result\n"
    )
    # Warnings become warning annotations.
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    path.write_text(text)
    run = bare_cli("check", "--format", "github")
    assert run.code == 0
    assert run.out.startswith(
        "::warning file=generated/,title=trainkit check::not validated against CRDs"
    )


def test_annotations_escape_what_the_runner_would_split_on() -> None:
    problem = Problem(file="a,b:c.yaml", message="100% wrong\nsee: x", obj="Q 'q'", line=3)
    assert format_github([problem], title="t:1") == (
        "::error file=a%2Cb%3Ac.yaml,line=3,title=t%3A1::Q 'q': 100%25 wrong%0Asee: x\n"
    )
    assert (
        format_github([Problem(file="f", message="m")], level="warning") == "::warning file=f::m\n"
    )


# --- progress ----------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_appears_on_a_terminal_after_the_delay_and_is_cleared() -> None:
    stream = Terminal()
    with Progress(stream, "trainkit check", delay=0.0) as progress:
        progress.step("kustomize build generated/clusters/east")
        assert progress.drawn.wait(30)
        progress.clear()  # before other output on the same terminal
        assert stream.getvalue().endswith("\r\x1b[K")
        progress.step("validating")
    text = stream.getvalue()
    assert "\r\x1b[Ktrainkit check: " in text
    assert text.endswith("\r\x1b[K")


def test_progress_never_shows_on_a_pipe_or_before_the_delay() -> None:
    pipe = io.StringIO()
    with Progress(pipe, "trainkit check", delay=0.0) as progress:
        progress.step("loading")
        assert not progress.drawn.wait(0.05)
    assert pipe.getvalue() == ""
    terminal = Terminal()
    with Progress(terminal, "trainkit check", delay=3600.0) as progress:
        progress.step("loading")
    assert terminal.getvalue() == "" and not progress.drawn.is_set()


def test_check_prints_no_progress_when_not_on_a_terminal(bare_cli, crds) -> None:
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0
    assert "\r" not in run.err + run.out


def test_user_facing_text_names_user_commands_not_a_checkouts() -> None:
    """Messages and help reach users of the package: `pip install 'trainkit-gitops[…]'`, never
    `make setup` or `pip install -e .` (this repository's own developer commands)."""
    import ast

    lib = Path(__file__).resolve().parents[1] / "lib" / "trainkit"
    found = []
    for path in sorted(lib.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        # Such a string spells out "make" and "setup", or "install" and "-e", in the source
        # (however its parts are joined): only the modules that do are parsed, one in fifteen.
        make_setup = "make" in text and "setup" in text
        if not make_setup and not ("install" in text and "-e" in text):
            continue
        tree = ast.parse(text)
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in docstrings:
                    continue
                if "make setup" in node.value or "install -e" in node.value:
                    found.append(f"{path.relative_to(lib)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_check_outside_a_git_repository_says_so_in_a_sentence(
    bare, bare_cli, crds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No "no in-place change of what nothing known to be deployed (…) deploys"."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(bare.root.parent))
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err
    assert run.out.rstrip().endswith(
        "nothing known to be deployed (not a git repository), so every object is new"
    ), run.out
    assert "what nothing" not in run.out


def test_a_foreign_file_in_generated_gets_advice_that_does_not_circle(bare, bare_cli, crds):
    """check must not say "run synth" when synth would refuse: it says to move the file."""
    assert bare_cli("synth").code == 0
    bare.write("generated/clusters/east/vision/notes.yaml", "kind: ConfigMap\n")
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 1
    assert (
        "error: generated/clusters/east/vision/notes.yaml: was not generated by trainkit (it has "
        "no generated header), and `trainkit synth` does not replace a directory holding such a "
        "file: move it out of generated/ (or delete it), then run `trainkit synth`"
    ) in run.err
    assert "would be removed" not in run.err
    synth = bare_cli("synth")
    assert synth.code == 1
    assert "Move them elsewhere (or delete them) and run this again" in synth.err
    (bare.root / "generated/clusters/east/vision/notes.yaml").unlink()
    assert bare_cli("check", "--crds", str(crds)).code == 0
