import pytest

from trainkit.cli import main

BROKEN = {
    "syntax error": (
        "jobs/vision/ddp.py",
        "job = PyTorchJob(\n",
        ["jobs/vision/ddp.py:1: syntax error"],
    ),
    "exception at import": (
        "jobs/vision/ddp.py",
        "import os\nos.environ['NO_SUCH_VAR']\n",
        ["jobs/vision/ddp.py:2: KeyError while importing the definition"],
    ),
    "invalid field": (
        "jobs/vision/ddp.py",
        "from trainkit import PyTorchJob, Resources\n"
        "job = PyTorchJob(name='ddp', image='i', command=['x'], nodes=-1,\n"
        "                 resources=Resources(cpu=1, memory='1Gi'))\n",
        ["jobs/vision/ddp.py:2: PyTorchJob 'ddp': nodes: must be at least 1"],
    ),
    "unknown queue": (
        "jobs/vision/ddp.py",
        "from trainkit import PyTorchJob, Resources\n"
        "job = PyTorchJob(name='ddp', image='i', command=['x'], queue='gpu-hogs',\n"
        "                 resources=Resources(cpu=1, memory='1Gi'))\n",
        [
            "jobs/vision/ddp.py:2: PyTorchJob 'ddp': queue: team 'vision' may not use queue 'gpu-hogs'"
        ],
    ),
    "too many GPUs": (
        "jobs/vision/ddp.py",
        "from trainkit import PyTorchJob, Resources\n"
        "job = PyTorchJob(name='ddp', image='i', command=['x'], clusters=['west'],\n"
        "                 resources=Resources(cpu=1, memory='1Gi', gpu=6))\n",
        [
            # On the line of the keyword (resources=), not of the call.
            "jobs/vision/ddp.py:3: PyTorchJob 'ddp': resources.gpu: 6 exceeds the 4 GPUs per node of cluster 'west'"
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_definition_leaves_generated_untouched(bare, bare_cli, case):
    assert bare_cli("synth").code == 0
    before = bare.snapshot()
    rel, source, expected = BROKEN[case]
    bare.write(rel, source)
    run = bare_cli("synth")
    assert run.code == 1
    assert "Traceback" not in run.err
    for line in expected:
        assert f"error: {line}" in run.err, run.err
    assert run.err.rstrip().endswith("error(s)")
    assert bare.snapshot() == before


def test_several_errors_are_all_printed(bare, bare_cli):
    bare.write("jobs/vision/a.py", "raise ValueError('first')\n")
    bare.write("jobs/vision/b.py", "raise ValueError('second')\n")
    run = bare_cli("synth")
    assert run.code == 1
    assert "first" in run.err and "second" in run.err
    assert "trainkit synth: 2 error(s)" in run.err


@pytest.mark.parametrize("case", ["exception at import", "too many GPUs"])
def test_a_check_refused_before_rendering_starts_no_kustomize_build(
    bare, bare_cli, monkeypatch, case
):
    """A definition that fails, or a plan the platform refuses: the check says so and has
    started no build (each would only have been killed)."""
    from trainkit.validate import build

    assert bare_cli("synth").code == 0
    started = []
    real = build.Build.__init__

    def counted(self, directory, kubectl):  # type: ignore[no-untyped-def]
        started.append(directory)
        real(self, directory, kubectl)

    monkeypatch.setattr(build.Build, "__init__", counted)
    # Without caches: a check after a passing one would not run the builds again (runcache).
    assert bare_cli("check", "--no-cache").code == 0
    assert started, "the passing check ran no build: this test would prove nothing"
    started.clear()
    rel, source, expected = BROKEN[case]
    bare.write(rel, source)
    run = bare_cli("check", "--no-cache")
    assert run.code == 1
    assert f"error: {expected[0]}" in run.err, run.err
    assert started == []


def test_synth_then_check(bare, bare_cli):
    run = bare_cli("synth")
    assert run.code == 0 and "added" in run.out
    assert bare_cli("check").code == 0
    bare.write("jobs/vision/scripts/train.py", "print('changed')\n")
    run = bare_cli("check")
    assert run.code == 1
    assert "run `trainkit synth` and commit the result" in run.err
    assert "pytorchjob-ddp.yaml: is out of date" in run.err
    assert "would be added" in run.err and "would be removed" in run.err
    run = bare_cli("synth", "--check")
    assert run.code == 1


def test_schema_command(bare, bare_cli, monkeypatch):
    from trainkit import schema

    # The schemas' text is test_golden's (it compares it with schemas/): here the command's
    # writing and checking, on that text rendered once instead of once per command.
    rendered = schema.render_schemas()
    monkeypatch.setattr(schema, "render_schemas", lambda: dict(rendered))
    run = bare_cli("schema", "--out", "schemas")
    assert run.code == 0
    assert (bare.root / "schemas/PyTorchJob.json").is_file()
    assert bare_cli("schema", "--out", "schemas", "--check").code == 0
    (bare.root / "schemas/PyTorchJob.json").write_text("{}\n")
    assert bare_cli("schema", "--out", "schemas", "--check").code == 1


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("synth", "--out"),
        ("check", "--crds"),
        ("schema", "--out"),
        ("validate", "--format"),
        ("rehearse", "--procs-per-node"),
    ],
)
def test_every_command_explains_itself(command, option, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: trainkit {command}" in out
    assert option in out


def test_top_level_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("synth", "check", "schema", "validate", "rehearse"):
        assert command in out
