"""Hostile definitions: each attack is refused with a clear error or is harmless.

A definition is code from a pull request. These tests play the attacker: they
patch trainkit in memory, spoof kinds, write and delete files, leave processes
behind, hang, eat memory and talk to the loader's pipes. After each, the gate
must hold: the errors name the file, nothing else changes, and no process
survives the load.
"""

from __future__ import annotations

import os
import socket
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Workspace
from run_directory import package_watch
from trainkit import DefinitionError, PyTorchJob, Team
from trainkit.load import LoadInterrupted, LoadOptions, load_jobs, server
from trainkit.synth import synthesize

UNCONFINED = LoadOptions(sandbox=False)
WRITES_INTO_TRAINKIT = {"test_writing_into_the_repository_or_trainkit_is_refused"}
"""Tests whose definition writes into trainkit's own package (see ``_package_watch``)."""


@pytest.fixture(autouse=True)
def _package_watch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Loads without the sandbox here watch trainkit's package (``package_watch``)."""
    writes = request.node.originalname in WRITES_INTO_TRAINKIT
    with package_watch(tmp_path_factory, writes=writes):
        yield


def load(ws: Workspace, options: LoadOptions | None = None) -> list[object]:
    return [d.obj for d in load_jobs(ws.jobs, ws.root, options=options).definitions]


def problems(ws: Workspace, options: LoadOptions | None = None) -> list[str]:
    with pytest.raises(DefinitionError) as exc:
        load_jobs(ws.jobs, ws.root, options=options)
    return [str(p) for p in exc.value.problems]


def survivors(marker: str) -> list[int]:
    """Processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def sleep_forever(marker: str) -> str:
    """A statement that replaces the process with one sleeping an hour, ``marker`` on its
    command line: the interpreter, which the sandbox holds (``/bin/sleep`` it does not)."""
    code = "import time; time.sleep(3600)"
    return f"os.execv({sys.executable!r}, ['python', '-c', {code!r}, {marker!r}])"


def job(name: str, **fields: str) -> str:
    """A valid PyTorchJob definition spanning lines 1-7; ``fields`` replace or add keywords."""
    args = {
        "name": repr(name),
        "image": "'registry.example.com/pytorch:2'",
        "command": "['python', 'x.py']",
        "resources": "Resources(cpu=1, memory='1Gi')",
        **fields,
    }
    body = "".join(f"    {k}={v},\n" for k, v in args.items())
    return f"from trainkit import PyTorchJob, Resources, Script\njob = PyTorchJob(\n{body})\n"


def test_patching_trainkit_in_memory_changes_nothing_outside_the_file(bare: Workspace) -> None:
    # The attacker disables the registry allowlist, GPU caps and queue checks in
    # its own interpreter, then asks for what the platform forbids.
    bare.write(
        "jobs/platform/policy.py",
        "from trainkit import Policy\npolicy = Policy(registries=['registry.example.com/'],"
        " max_gpus_per_job=8)\n",
    )
    bare.write(
        "jobs/vision/evil.py",
        textwrap.dedent(
            """\
            # What the checks call, patched where they look it up; in one shared
            # interpreter these patches would disable the registry and GPU caps.
            import trainkit.effective.podsets as em
            import trainkit.policy.images as pi
            pi.image_allowed = lambda image, prefixes: True
            em.EffectiveJob.gpus = lambda self: 0
            assert pi.image_allowed('x', ['y'])
            from trainkit import PyTorchJob, Resources
            job = PyTorchJob(name='evil', image='docker.io/evil/miner:1', command=['x'],
                             nodes=100, resources=Resources(cpu=1, memory='1Gi', gpu=8))
            """
        ),
    )
    with pytest.raises(DefinitionError) as exc:
        synthesize(bare.jobs, bare.out, root=bare.root, use_cache=False, against="disk")
    text = str(exc.value)
    assert "image 'docker.io/evil/miner:1' is not from an allowed registry" in text
    assert "exceed the per-job cap of 8" in text
    assert not bare.out.exists()


def test_a_team_cannot_see_or_change_another_teams_or_the_platforms_objects(
    bare: Workspace,
) -> None:
    bare.write(
        "jobs/platform/teams.py",
        "from trainkit import Team\nllm = Team(name='llm', queues=['research'])\n",
    )
    # Runs first (alphabetical): tampers with trainkit.
    bare.write("jobs/llm/a.py", "import trainkit\ntrainkit.TAMPERED = True\n")
    # Runs after the platform's files: looks for their objects.
    bare.write(
        "jobs/vision/b.py",
        textwrap.dedent(
            """\
            import gc, trainkit
            from trainkit import Team
            assert not hasattr(trainkit, 'TAMPERED'), 'tampered'
            assert not [o for o in gc.get_objects() if isinstance(o, Team)], 'saw Teams'
            """
        )
        + job("b"),
    )
    objs = load(bare)
    assert [o.name for o in objs if isinstance(o, PyTorchJob)] == ["b", "ddp"]
    assert {o.name for o in objs if isinstance(o, Team)} == {"vision", "llm"}


def test_files_of_one_team_run_apart_with_isolation_per_file(bare: Workspace) -> None:
    bare.write("jobs/vision/a.py", "import trainkit\ntrainkit.TAMPERED = True\n")
    bare.write("jobs/vision/b.py", "import trainkit\nassert not hasattr(trainkit, 'TAMPERED')\n")
    load(bare, LoadOptions(isolation="file"))
    # In one process per team, the second file sees the first one's change.
    assert any("b.py:2: AssertionError" in p for p in problems(bare))


def test_a_subclass_named_like_another_kind_is_its_real_kind(bare: Workspace) -> None:
    bare.write(
        "jobs/vision/spoof.py",
        textwrap.dedent(
            """\
            from trainkit import PyTorchJob, Resources
            class TrainJob(PyTorchJob):
                kind = 'TrainJob'
                def describe(self):
                    return "TrainJob 'ddp'"
            job = TrainJob(name='spoof', image='registry.example.com/pytorch:2',
                           command=['x'], resources=Resources(cpu=1, memory='1Gi'))
            """
        ),
    )
    (spoof,) = [o for o in load(bare) if getattr(o, "name", "") == "spoof"]
    assert type(spoof) is PyTorchJob


def test_a_platform_kind_in_disguise_is_still_refused_outside_the_platform(
    bare: Workspace,
) -> None:
    bare.write(
        "jobs/vision/q.py",
        "from trainkit import Queue\nclass Job(Queue):\n    pass\nq = Job(name='mine')\n",
    )
    assert any(
        p.startswith("jobs/vision/q.py:4: Queue 'mine': platform objects belong in jobs/platform/")
        for p in problems(bare)
    )


def test_data_that_does_not_validate_is_refused_even_when_built_around_the_models(
    bare: Workspace,
) -> None:
    bare.write(
        "jobs/vision/construct.py",
        "from trainkit import PyTorchJob\n"
        "job = PyTorchJob.model_construct(name='X' * 80, image='i', command=['x'], nodes=-3)\n",
    )
    found = problems(bare)
    assert any(
        p.startswith("jobs/vision/construct.py: PyTorchJob") and ": name: " in p for p in found
    ), found
    assert any(": nodes: must be at least 1" in p for p in found), found


@pytest.mark.parametrize("options", [None, UNCONFINED], ids=["confined", "unconfined"])
def test_deleting_another_teams_file_is_refused_or_caught(
    bare: Workspace, options: LoadOptions | None
) -> None:
    victim = bare.write("jobs/llm/victim.py", "x = 1\n")
    bare.write("jobs/platform/teams.py", "from trainkit import Team\nllm = Team(name='llm')\n")
    bare.write("jobs/vision/evil.py", f"import os\nos.remove({str(victim)!r})\n")
    found = problems(bare, options)
    assert any(p.startswith("jobs/vision/evil.py") for p in found), found
    if options is None:
        assert any("Read-only file system" in p for p in found), found
    else:
        assert any("jobs/llm/victim.py changed while this definition ran" in p for p in found)


@pytest.mark.parametrize("options", [None, UNCONFINED], ids=["confined", "unconfined"])
def test_writing_into_the_repository_or_trainkit_is_refused(
    bare: Workspace, options: LoadOptions | None
) -> None:
    import trainkit

    target = Path(trainkit.__file__).parent / f"planted-{uuid.uuid4().hex}.txt"
    bare.write(
        "jobs/vision/evil.py",
        textwrap.dedent(
            f"""\
            try:
                open({str(target)!r}, 'w').write('import os')
            except OSError:
                pass
            open('{bare.root}/generated-by-evil.yaml', 'w').write('kind: Secret')
            """
        ),
    )
    try:
        found = problems(bare, options)
        assert any(p.startswith("jobs/vision/evil.py") for p in found), found
        if options is None:
            assert not target.exists()
            assert not (bare.root / "generated-by-evil.yaml").exists()
        else:
            assert any("generated-by-evil.yaml changed while" in p for p in found), found
    finally:
        target.unlink(missing_ok=True)


def test_work_left_behind_cannot_change_the_result(bare: Workspace) -> None:
    """atexit handlers never run, threads and detached processes are gone when the load returns."""
    marker = f"trainkit-leftover-{uuid.uuid4().hex}"
    bare.write(
        "jobs/vision/evil.py",
        textwrap.dedent(
            f"""\
            import atexit, os, threading, time
            atexit.register(lambda: open('{bare.root}/atexit.txt', 'w').write('x'))
            threading.Thread(target=lambda: time.sleep(3600), daemon=False).start()
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    {sleep_forever(marker)}
                os._exit(0)
            """
        ),
    )
    for options in (None, UNCONFINED):
        load(bare, options)
        assert survivors(marker) == []
        assert not (bare.root / "atexit.txt").exists()


def test_no_network_and_no_secrets(bare: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINKIT_TEST_SECRET", "hunter2")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        bare.write(
            "jobs/vision/evil.py",
            textwrap.dedent(
                f"""\
                import os, socket
                assert 'TRAINKIT_TEST_SECRET' not in os.environ, 'secret visible'
                socket.create_connection(('127.0.0.1', {port}), timeout=5)
                """
            ),
        )
        found = problems(bare)
    assert any(p.startswith("jobs/vision/evil.py:3: OSError") for p in found), found


@pytest.mark.long
def test_a_hanging_file_is_named_and_the_others_load(bare: Workspace) -> None:
    """Two teams' processes hang at once, so the test waits out one timeout, not two. In
    vision the hanging file runs after ddp.py, which loads; in nlp it runs first and stops
    its process, so the file after it is named as not loaded. The hanging files sleep: the
    supervisor kills by its own clock (server.py ``_deadline``) whatever a file does, and an
    endless ``while True: pass`` would only burn the timeout's CPU."""
    bare.write("jobs/vision/hang.py", "import time\ntime.sleep(3600)\n")
    bare.write("jobs/nlp/a_hang.py", "import time\ntime.sleep(3600)\n")
    bare.write("jobs/nlp/ddp.py", (bare.jobs / "vision/ddp.py").read_text())
    found = problems(bare, LoadOptions(timeout=3, jobs=3))
    assert len(found) == 3, found
    hung, stopped, other = sorted(found)
    assert hung.startswith("jobs/nlp/a_hang.py: took longer than 3 s (--load-timeout)")
    assert stopped.startswith(
        "jobs/nlp/ddp.py: not loaded: jobs/nlp/a_hang.py, which runs before it in the "
        "same process, stopped that process"
    )
    assert other.startswith("jobs/vision/hang.py: took longer than 3 s (--load-timeout)")


def test_memory_is_bounded(bare: Workspace) -> None:
    bare.write("jobs/vision/hog.py", "x = bytearray(4 << 30)\n")
    (found,) = problems(bare, LoadOptions(memory=512 << 20))
    assert found.startswith(
        "jobs/vision/hog.py:1: used more than the 512 MiB of memory a definition may use"
    )


def test_garbage_on_the_loaders_pipe_is_refused(bare: Workspace) -> None:
    # The worker's pipe is the only descriptor left besides 0-2 and its output file.
    bare.write(
        "jobs/vision/evil.py",
        textwrap.dedent(
            """\
            import os
            for fd in range(3, 64):
                try:
                    os.write(fd, b'Q' * 64)
                except OSError:
                    pass
            """
        ),
    )
    (found,) = problems(bare)
    assert found.startswith("jobs/vision/evil.py: its process sent data trainkit cannot read")


def test_forged_frames_cannot_speak_for_another_file(bare: Workspace) -> None:
    """A worker claims to load the platform file and returns a Cluster for it."""
    bare.write(
        "jobs/vision/evil.py",
        textwrap.dedent(
            """\
            import json, os, stat, struct
            payload = json.dumps({'objects': [{'kind': 'Cluster', 'line': 1, 'data': {
                'name': 'evil', 'server': 'https://evil', 'gpus_per_node': 64}}],
                'problems': [], 'imports': []}).encode()
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode):
                        os.write(fd, struct.pack('>cI', b'S', 1) + b'0')
                        os.write(fd, struct.pack('>cI', b'R', len(payload)) + payload)
                except OSError:
                    pass
            """
        ),
    )
    found = problems(bare)
    assert found == [
        "jobs/vision/evil.py:1: Cluster 'evil': platform objects belong in jobs/platform/; "
        "move it there"
    ]


def test_ctrl_c_names_the_file_being_loaded_and_stops_it(
    bare: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"trainkit-ctrlc-{uuid.uuid4().hex}"
    bare.write("jobs/vision/slow.py", f"import os\n{sleep_forever(marker)}\n")
    real_run = server.run

    def interrupted(
        groups: list[list[tuple[int, str]]], limits: server.Limits, **where: str
    ) -> Iterator[server.Event]:
        run = real_run(groups, limits, **where)
        try:
            for event in run:
                yield event
                if event.kind == "start" and groups[event.group][0][1].endswith("slow.py"):
                    # Ctrl-C once slow.py runs: an event, not a race with the clock.
                    raise KeyboardInterrupt
        finally:
            run.close()

    monkeypatch.setattr(server, "run", interrupted)
    # One process at a time: the others have ended when slow.py starts, however loaded
    # the machine (two at once may both be running, and both are named then).
    with pytest.raises(LoadInterrupted, match=r"interrupted while running jobs/vision/slow\.py$"):
        load_jobs(bare.jobs, bare.root, options=LoadOptions(isolation="file", jobs=1))
    assert survivors(marker) == []


def test_definitions_built_but_not_bound_are_errors(bare: Workspace) -> None:
    bare.write(
        "jobs/vision/dropped.py",
        job("kept") + "PyTorchJob(name='lost', image='i', command=['x'], resources=Resources(cpu=1,"
        " memory='1Gi'))\n"
        "_copy = job.model_copy(update={'args': ['--x']})\n",
    )
    (found,) = problems(bare)
    assert found == (
        "jobs/vision/dropped.py:8: PyTorchJob 'lost': built but not bound to a module-level "
        "name, so it would not be generated (and Argo CD would delete what it replaces); "
        "assign it (job = ...), put it in a module-level list, or delete it"
    )


def test_symlinks_out_of_jobs_are_refused_with_where_they_lead(bare: Workspace) -> None:
    script = bare.root / "jobs/vision/scripts/train.py"
    script.unlink()
    script.symlink_to("/etc/passwd")
    git = bare.write(".git/config", "[core]\n")
    (bare.root / "jobs/vision/scripts/config.py").symlink_to(git)
    bare.write(
        "jobs/vision/git.py", job("git", script="Script.file('scripts/config.py')", command="None")
    )
    outside = bare.write("elsewhere/team/job.py", job("x"))
    (bare.jobs / "stolen").symlink_to(outside.parent, target_is_directory=True)
    found = problems(bare)
    assert any(
        "jobs/vision/ddp.py:6: PyTorchJob 'ddp': script.path: 'scripts/train.py' resolves to "
        "/etc/passwd, outside jobs/" in p
        for p in found
    ), found
    assert any(
        f"git.py:7: PyTorchJob 'git': script.path: 'scripts/config.py' resolves to {git}, outside"
        in p
        for p in found
    ), found
    assert any(
        p.startswith(
            f"jobs/stolen: is a symbolic link to {outside.parent.as_posix()}, outside jobs/"
        )
        for p in found
    ), found


def test_a_symlinked_team_directory_inside_jobs_is_followed(bare: Workspace) -> None:
    bare.write("jobs/_shared/vision2/two.py", job("two"))
    (bare.jobs / "llm").symlink_to(bare.jobs / "_shared/vision2", target_is_directory=True)
    bare.write("jobs/platform/teams.py", "from trainkit import Team\nllm = Team(name='llm')\n")
    loaded = load_jobs(bare.jobs, bare.root).definitions
    (two,) = [d for d in loaded if getattr(d.obj, "name", "") == "two"]
    assert (two.file, two.team) == ("jobs/llm/two.py", "llm")


def test_the_same_file_through_two_paths_is_refused(bare: Workspace) -> None:
    (bare.jobs / "llm").symlink_to(bare.jobs / "vision", target_is_directory=True)
    found = problems(bare)
    assert any(
        p.startswith("jobs/vision/ddp.py: is the same file as jobs/llm/ddp.py") for p in found
    ), found


def test_a_symlink_loop_is_refused(bare: Workspace) -> None:
    (bare.jobs / "vision/loop").symlink_to(bare.jobs, target_is_directory=True)
    found = problems(bare)
    assert any(p.startswith("jobs/vision/loop: is a symbolic link to jobs, one of") for p in found)


def test_a_team_cannot_declare_a_cluster_queue_that_wins_the_fair_share(
    bare: Workspace,
) -> None:
    """A ClusterQueue's fair-sharing weight and admission checks decide who gets what a cohort
    lends: only the platform declares them."""
    bare.write(
        "jobs/vision/q.py",
        "from trainkit import Capacity, ClusterQueue, FlavorQuota\n"
        "q = ClusterQueue(name='vision', cohort='all', fair_sharing_weight=1000,\n"
        "    flavors=[FlavorQuota(flavor='h100', quota=Capacity(gpu=8))])\n",
    )
    assert any(
        p.startswith(
            "jobs/vision/q.py:2: ClusterQueue 'vision': platform objects belong in jobs/platform/"
        )
        for p in problems(bare)
    ), problems(bare)
