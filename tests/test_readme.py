"""The README is a tested program: its code blocks are the real files, its output is real."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from trainkit.cli import main

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    """Bodies of the fenced blocks whose info string is ``lang`` ("" for plain fences)."""
    out, current, info = [], None, ""
    for line in README.splitlines(keepends=True):
        if line.startswith("```"):
            if current is None:
                current, info = [], line[3:].strip()
            else:
                if info == lang:
                    out.append("".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return out


def test_readme_opens_with_the_setup_and_test_commands():
    first = blocks("sh")[0].splitlines()
    assert first[0].startswith("make setup synth")
    assert first[1].startswith("make test")
    makefile = (REPO / "Makefile").read_text()
    for target in ("setup", "synth", "test", "check", "schemas", "bench"):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in (REPO / ".ci/run").read_text()


def test_python_examples_are_the_files_in_jobs():
    examples = blocks("python")
    assert len(examples) >= 2
    for code in examples:
        header, body = code.split("\n", 1)
        path = REPO / header.removeprefix("# ").strip()
        assert path.read_text(encoding="utf-8") == body, f"README block differs from {path}"


def test_error_example_is_what_synth_prints(tmp_path, monkeypatch, capsys):
    shutil.copytree(REPO / "jobs", tmp_path / "jobs")
    job = tmp_path / "jobs/vision/resnet50_ddp.py"
    job.write_text(job.read_text().replace("gpu=8", "gpu=12"))
    monkeypatch.chdir(tmp_path)
    assert main(["synth"]) == 1
    err = capsys.readouterr().err
    (example,) = [b for b in blocks("") if b.startswith("error:")]
    assert err == example
    assert not (tmp_path / "generated").exists()


def test_every_command_is_in_the_table():
    import argparse

    from trainkit.cli import parser

    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    table = re.findall(r"^\| `trainkit (\w+)", README, flags=re.M)
    assert sorted(table) == sorted(sub.choices)


def test_commands_in_the_table_exist(capsys):
    for command in re.findall(r"^\| `trainkit (\w+)", README, flags=re.M):
        try:
            main([command, "--help"])
        except SystemExit as e:
            assert e.code == 0
        assert f"usage: trainkit {command}" in capsys.readouterr().out


@pytest.mark.long
def test_rehearse_example_runs(monkeypatch, capsys):
    # The one real training run of the suite: torchrun on 2 nodes × 1 process, DDP on gloo
    # (test_rehearse runs 2 × 2 ranks without torch in the workers: each import costs 2 s).
    (line,) = [b.strip() for b in blocks("sh") if b.startswith("trainkit rehearse")]
    monkeypatch.chdir(REPO)
    assert main(line.split()[1:]) == 0
    out = capsys.readouterr().out
    found = re.findall(
        r"^\[node(\d)/rank(\d)\] checksum=(-?\d+\.\d{6}) rank=(\d) world=(\d)$", out, re.M
    )
    assert sorted((int(n), int(r)) for n, r, *_ in found) == [(0, 0), (1, 1)], out
    assert all(r == rank and w == "2" for _, r, _, rank, w in found)  # prefix is the real rank
    assert len({c for _, _, c, _, _ in found}) == 1, out  # every rank has the same model
    assert "[node0/rank0] epoch 10/10 loss=" in out
    assert "[rehearse] pods of cluster 'gpu-east': image " in out  # as the README says
    assert "[rehearse]   - procs_per_node 8 → 1 (--procs-per-node)" in out
    assert "[rehearse]   - resources.gpu 8 → 0 (CPU rehearsal" in out
    assert "[rehearse] succeeded: 2 node(s) × 1 process(es)" in out


def test_in_place_change_example_is_what_synth_prints(tmp_path, monkeypatch, capsys):
    shutil.copytree(REPO / "jobs", tmp_path / "jobs")
    monkeypatch.chdir(tmp_path)
    assert main(["synth"]) == 0
    env = {
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **env}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "deployed"],
        ["update-ref", "refs/remotes/origin/main", "HEAD"],
    ):
        subprocess.run(["git", *args], env=env, check=True, capture_output=True)
    capsys.readouterr()
    job = tmp_path / "jobs/vision/resnet50_trainjob.py"
    job.write_text(job.read_text().replace('"10"', '"20"'))
    assert main(["synth"]) == 1
    err = capsys.readouterr().err
    (example,) = blocks("text")
    first = re.sub(r"origin/main \([0-9a-f]+\)", "origin/main (…)", err.splitlines()[0])
    assert first == example.strip()


def test_explain_example_is_what_explain_prints(monkeypatch, capsys):
    (block,) = [b for b in blocks("console") if b.startswith("$ trainkit explain ")]
    command, expected = block.split("\n", 1)
    monkeypatch.chdir(REPO)
    assert main(command.removeprefix("$ trainkit ").split()) == 0
    assert capsys.readouterr().out == expected
