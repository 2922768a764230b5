"""The documentation site (docs/, mkdocs.yml) builds with --strict, its generated pages are
current, and every code block in it (and in the README) is run or compared by a test."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from doc_blocks import KINDS, REPO, all_blocks, blocks_of, of_kind
from trainkit.cli import main
from trainkit.scaffold import scaffold_files

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "tools/gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- every block is checked ------------------------------------------------------------------


def test_every_block_is_checked():
    unclaimed, twice = [], []
    for block in all_blocks():
        kinds = [kind for kind, (claims, _) in KINDS.items() if claims(block)]
        if not kinds:
            unclaimed.append(str(block))
        elif len(kinds) > 1:
            twice.append(f"{block}: {kinds}")
    assert not unclaimed, f"blocks no test runs (add a kind to tests/doc_blocks.py): {unclaimed}"
    assert not twice, twice
    # Every kind still has a block (a kind without one checks nothing).
    for kind in KINDS:
        assert of_kind(kind), kind


# --- the site ------------------------------------------------------------------------------------


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_site_builds_strict_offline(tmp_path: Path):
    done = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]

    def listed(entries: list[object]) -> set[str]:
        found: set[str] = set()
        for entry in entries:
            (value,) = entry.values()  # type: ignore[attr-defined]
            found |= listed(value) if isinstance(value, list) else {value}
        return found

    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert listed(nav) == pages
    for page in pages:
        html = page.removesuffix(".md") + "/index.html" if page != "index.md" else "index.html"
        assert (tmp_path / "site" / html).is_file(), html


BROKEN_LINKS = [
    ("jobs.md", "[gone](nowhere.md)"),
    ("jobs.md", "[gone](platform.md#no-such-section)"),
]


def test_a_broken_link_fails_the_build(tmp_path: Path):
    """Each broken link fails the build and is named. One build holds them all: a strict
    build warns of every one before it aborts, so each must be named by its own warning."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    for page, broken in BROKEN_LINKS:
        with (tmp_path / "docs" / page).open("a", encoding="utf-8") as f:
            f.write(f"\nSee {broken}.\n")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 1, done.stderr
    for _, broken in BROKEN_LINKS:
        assert broken.split("(")[1].rstrip(")").split("#")[-1] in done.stderr, done.stderr


def test_the_generated_reference_pages_are_current(tmp_path: Path, monkeypatch):
    gen = _generator()
    assert gen.stale() == [], "run `make reference` and commit docs/reference/"
    assert gen.main(["--check"]) == 0
    # The check can fail: a page edited by hand, or one missing, is stale.
    for rel in gen.PAGES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text(encoding="utf-8") + "edited\n")
    assert gen.stale(tmp_path) == list(gen.PAGES)
    (tmp_path / "docs/reference/cli.md").unlink()
    assert "docs/reference/cli.md" in gen.stale(tmp_path)


def test_the_command_reference_is_every_command_s_help(capsys):
    import argparse

    from trainkit.cli import parser

    page = (REPO / "docs/reference/cli.md").read_text(encoding="utf-8")
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert re.findall(r"^## `trainkit (\w+)`", page, flags=re.M) == list(sub.choices)
    helps = [b.body for b in blocks_of(REPO / "docs/reference/cli.md")]
    for name, body in zip(sub.choices, helps[1:], strict=True):
        assert body.startswith(f"usage: trainkit {name}"), name
        # What the page shows is what `trainkit NAME --help` prints (at the page's width).
        os.environ["COLUMNS"] = _generator().WIDTH
        try:
            with pytest.raises(SystemExit):
                main([name, "--help"])
        finally:
            del os.environ["COLUMNS"]
        assert capsys.readouterr().out == body, name


def test_the_prefix_list_is_the_code_s():
    from trainkit.model.pod_metadata import STEERING_DOMAINS, steering_domain

    page = (REPO / "docs/reference/pod-metadata.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([^`]+)/` \|", page, flags=re.M)
    assert listed == list(STEERING_DOMAINS)
    for domain in listed:
        assert steering_domain(f"{domain}/x") == domain
        assert steering_domain(f"sub.{domain}/x") is not None
    assert steering_domain("example.com/cost-center") is None
    assert steering_domain("app.kubernetes.io/instance") == "argocd.argoproj.io"
    assert "`app.kubernetes.io/instance`" in page


def test_troubleshooting_quotes_trainkit_s_messages():
    page = (REPO / "docs/troubleshooting.md").read_text(encoding="utf-8")
    quoted = re.findall(r"^\*\*Message:\*\* `([^`]+)`", page, flags=re.M)
    assert len(quoted) >= 10
    source = " ".join(
        re.sub(r'"\s*\n\s*f?"', "", p.read_text(encoding="utf-8"))
        for p in (REPO / "lib/trainkit").rglob("*.py")
    )
    for message in quoted:
        assert message in source, message


# --- the examples --------------------------------------------------------------------------


def test_the_walkthrough_is_the_same_everywhere():
    readme = [b for b in of_kind("walkthrough") if b.page == "README.md"]
    assert len(readme) == 1
    assert {b.body for b in of_kind("walkthrough")} == {readme[0].body}
    assert any(b.page == "docs/getting-started.md" for b in of_kind("walkthrough"))


def test_install_commands_name_this_distribution_and_its_extras():
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    seen = set()
    for block in of_kind("install"):
        for line in block.body.splitlines():
            argv = shlex.split(line, comments=True)
            assert argv[:2] in (["pip", "install"], ["pipx", "install"]), line
            (spec,) = argv[2:]
            requirement = Requirement(spec)
            assert requirement.name == PYPROJECT["project"]["name"], line
            assert requirement.extras <= extras, line
            seen |= requirement.extras
    assert "rehearse" in seen


def test_python_examples_are_the_files_in_jobs():
    examples = of_kind("job file")
    assert len(examples) >= 8
    for block in examples:
        header, body = block.body.split("\n", 1)
        path = REPO / header.removeprefix("# ").strip()
        assert path.read_text(encoding="utf-8") == body, f"{block} differs from {path}"


def test_the_patch_example_patches_the_example_job(tmp_path, monkeypatch, capsys):
    (block,) = of_kind("platform patch")
    shutil.copytree(REPO / "jobs", tmp_path / "jobs")
    (tmp_path / "jobs/platform/admission.py").write_text(block.body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["synth"]) == 0, capsys.readouterr().err
    job = yaml.safe_load(
        (tmp_path / "generated/clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml").read_text()
    )
    meta = job["metadata"]
    assert meta["annotations"]["example.com/admission"] == "fast"
    assert meta["annotations"]["trainkit.dev/patched-by"] == "admission-hint"
    other = tmp_path / "generated/clusters/rocm-west/vision/pytorchjob-resnet50-ddp.yaml"
    assert "example.com/admission" not in other.read_text()


def test_error_example_is_what_synth_prints(tmp_path, monkeypatch, capsys):
    shutil.copytree(REPO / "jobs", tmp_path / "jobs")
    job = tmp_path / "jobs/vision/resnet50_ddp.py"
    job.write_text(job.read_text().replace("gpu=8", "gpu=12"))
    monkeypatch.chdir(tmp_path)
    assert main(["synth"]) == 1
    err = capsys.readouterr().err
    (example,) = of_kind("synth error")
    assert err == example.body
    assert not (tmp_path / "generated").exists()


def test_generated_paths_are_files_synth_writes():
    for block in of_kind("generated paths"):
        for line in block.body.splitlines():
            pattern = line.replace("<hash>", "*")
            assert sorted(REPO.glob(pattern)), f"{block}: {line}"


@pytest.mark.long
def test_rehearse_example_runs(monkeypatch, capsys):
    # The one real training run of the suite: torchrun on 2 nodes × 1 process, DDP on gloo
    # (test_rehearse runs 2 × 2 ranks without torch in the workers: each import costs 2 s).
    # The page's --args '--epochs 1' shortens the job's ten epochs: the ranks' agreement on the
    # model needs one, and every epoch more costs each rank ~0.1 CPU-s.
    (block,) = of_kind("rehearse")
    line = block.body.strip()
    monkeypatch.chdir(REPO)
    assert main(shlex.split(line)[1:]) == 0
    out = capsys.readouterr().out
    found = re.findall(
        r"^\[node(\d)/rank(\d)\] checksum=(-?\d+\.\d{6}) rank=(\d) world=(\d)$", out, re.M
    )
    assert sorted((int(n), int(r)) for n, r, *_ in found) == [(0, 0), (1, 1)], out
    assert all(r == rank and w == "2" for _, r, _, rank, w in found)  # prefix is the real rank
    assert len({c for _, _, c, _, _ in found}) == 1, out  # every rank has the same model
    # The job's args, then the page's: the script's argparse takes the last --epochs.
    assert "[node0/rank0] epoch 1/1 loss=" in out
    assert "epoch 2/" not in out
    assert "[rehearse]   - args: --epochs 1 appended to the pods' (--args)" in out
    assert out.count("/train_resnet.py --epochs 10 --epochs 1\n") == 2  # each node's command
    assert "[rehearse] pods of cluster 'gpu-east': image " in out  # as the page says
    assert "[rehearse]   - procs_per_node 8 → 1 (--procs-per-node)" in out
    assert "[rehearse]   - resources.gpu 8 → 0 (CPU rehearsal" in out
    assert "[rehearse] succeeded: 2 node(s) × 1 process(es)" in out


def test_in_place_change_example_is_what_synth_prints(synthesized, monkeypatch, capsys):
    root = synthesized.root  # the examples as synth leaves them (the session's, conftest)
    monkeypatch.chdir(root)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **GIT_ENV}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "deployed"],
        ["update-ref", "refs/remotes/origin/main", "HEAD"],
    ):
        subprocess.run(["git", *args], env=env, check=True, capture_output=True)
    capsys.readouterr()
    job = root / "jobs/vision/resnet50_trainjob.py"
    job.write_text(job.read_text().replace('"10"', '"20"'))
    assert main(["synth"]) == 1
    err = capsys.readouterr().err
    (example,) = of_kind("in-place error")
    first = re.sub(r"origin/main \([0-9a-f]+\)", "origin/main (…)", err.splitlines()[0])
    assert first == example.body.strip()


def test_explain_example_is_what_explain_prints(monkeypatch, capsys):
    (block,) = of_kind("explain")
    command, expected = block.body.split("\n", 1)
    monkeypatch.chdir(REPO)
    assert main(command.removeprefix("$ trainkit ").split()) == 0
    assert capsys.readouterr().out == expected


def test_toml_examples_are_this_repository_s_settings():
    for block in of_kind("pyproject"):
        example = tomllib.loads(block.body)
        assert set(example) == {"tool"}, block
        for table, settings in example["tool"].items():
            assert settings.items() <= PYPROJECT["tool"][table].items(), block


def test_the_workflow_step_is_in_every_workflow_that_runs_definitions():
    workflows = {
        path.name: path.read_text() for path in (REPO / ".github/workflows").glob("*.yml")
    } | {
        f"init:{path}": text
        for path, text in scaffold_files().items()
        if path.startswith(".github/workflows/")
    }
    running = {name for name, text in workflows.items() if "trainkit " in text or ".ci/run" in text}
    assert {"ci.yml", "plan.yml", "init:.github/workflows/trainkit.yml"} <= running
    for block in of_kind("workflow step"):
        (step,) = yaml.safe_load(block.body)
        for name in running:
            steps = [
                s for job in yaml.safe_load(workflows[name])["jobs"].values() for s in job["steps"]
            ]
            assert step in steps, f"{block}: not in {name}"


def test_bench_outputs_have_the_rows_bench_prints():
    source = (REPO / "tests/bench.py").read_text(encoding="utf-8")
    labels = [
        re.escape(re.sub(r"\{[^}]*\}", "\0", text)).replace("\0", ".+")
        for text in re.findall(r'\b[Rr]ow\(\s*f?"([^"]+)"', source)
    ]
    assert len(labels) >= 8
    for block in of_kind("bench output"):
        rows = block.body.splitlines()
        assert re.match(r"\d+ jobs.*: \d+ files, [\d.]+ MiB; load average now: ", rows[0]), block
        assert rows[1].split() == ["seconds", "RSS", "MiB", "ratio"], block
        for row in rows[2:]:
            label = re.split(r"\s{2,}", row.strip())[0]
            assert any(re.fullmatch(p, label) for p in labels), f"{block}: {label!r}"
