"""write_tree: whole trees only, whatever step a kill strikes; one writer at a time."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trainkit.write as write_mod
from trainkit import SetupError
from trainkit.write import HEADER_PREFIX, read_tree, swap, write_tree
from trainkit.write import lock as lock_mod

H = HEADER_PREFIX + b" from tests. Do not edit.\n"
OLD = {"a.yaml": H + b"a: 1\n", "keep/b.yaml": H + b"b: 1\n", "gone/c.yaml": H + b"c: 1\n"}
NEW = {"a.yaml": H + b"a: 2\n", "keep/b.yaml": H + b"b: 1\n", "added/d/e.yaml": H + b"e: 1\n"}
LIB = Path(__file__).resolve().parents[1] / "lib"


class Killed(BaseException):
    """A SIGKILL, as far as write_tree can tell: no `except Exception` cleanup runs."""


def _kill_at(k: int, error: BaseException | None = None) -> Callable[[str], None]:
    """A hook that raises ``error`` (a kill by default) at the k-th step."""
    calls: list[str] = []

    def hook(name: str) -> None:
        calls.append(name)
        if len(calls) == k + 1:
            raise error or Killed(name)

    return hook


def _refuse_exchange(a: Path, b: Path) -> None:
    raise OSError(errno.EINVAL, "exchange refused by this filesystem")


def _steps(out: Path, before: dict[str, bytes], after: dict[str, bytes], monkeypatch) -> list[str]:
    """Every step of writing ``after`` over ``before``, recorded on a scratch copy."""
    write_tree(out, before, "generated/")
    seen: list[str] = []
    monkeypatch.setattr(swap, "_hook", seen.append)
    write_tree(out, after, "generated/")
    monkeypatch.setattr(swap, "_hook", None)
    shutil.rmtree(out.parent)
    return seen


def _state(out: Path, old: dict[str, bytes], new: dict[str, bytes], exchange: bool) -> str:
    """'old' or 'new' when the output holds one of them whole; 'gap' inside the fallback's gap."""
    if out.exists():
        tree = read_tree(out)
        assert tree in (old, new), sorted(tree)
        return "old" if tree == old else "new"
    # Only two plain renames leave a moment without the output directory, and then
    # a complete new tree waits beside it for the next run.
    assert not exchange
    ready = [p for p in swap.leftovers(out) if ".trainkit-ready-" in p.name]
    assert len(ready) == 1 and read_tree(ready[0]) == new
    return "gap"


def _assert_only(out: Path, files: dict[str, bytes]) -> None:
    assert read_tree(out) == files
    assert os.listdir(out.parent) == [out.name]


@pytest.fixture(params=[True, False], ids=["exchange", "two-renames"])
def exchange(request, monkeypatch) -> bool:
    if not request.param:
        monkeypatch.setattr(swap, "exchange", _refuse_exchange)
    return bool(request.param)


def test_a_kill_at_any_step_leaves_a_whole_tree_and_the_next_run_finishes(
    tmp_path, monkeypatch, exchange
):
    steps = _steps(tmp_path / "record" / "generated", OLD, NEW, monkeypatch)
    assert ("exchange" in steps, "set aside" in steps) == (True, not exchange)
    assert sum(s.startswith("file ") for s in steps) == len(NEW)
    outcomes = []
    for k, name in enumerate(steps):
        out = tmp_path / f"k{k}" / "generated"
        write_tree(out, OLD, "generated/")
        monkeypatch.setattr(swap, "_hook", _kill_at(k))
        with pytest.raises(Killed):
            write_tree(out, NEW, "generated/")
        monkeypatch.setattr(swap, "_hook", None)
        state = _state(out, OLD, NEW, exchange)
        outcomes.append((name, state))
        # The next run finishes a swap cut short (in the gap too): nothing left to change.
        assert write_tree(out, NEW, "generated/").any == (state == "old"), name
        _assert_only(out, NEW)
    # The old tree until the one step that swaps, the new one after it.
    first_new = steps.index("remove old tree")
    expected = ["old"] * first_new + ["new"] * (len(steps) - first_new)
    if not exchange:
        assert steps[first_new - 1] == "move in"
        expected[first_new - 1] = "gap"
    assert [o for _, o in outcomes] == expected, outcomes


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "disk full"), KeyboardInterrupt()], ids=["error", "ctrl-c"]
)
def test_an_error_or_ctrl_c_at_any_step_is_cleaned_up_at_once(
    tmp_path, monkeypatch, exchange, error
):
    steps = _steps(tmp_path / "record" / "generated", OLD, NEW, monkeypatch)
    # Only an error while releasing the lock leaves its file, for the next run to remove.
    for k in range(steps.index("unlock")):
        out = tmp_path / f"k{k}" / "generated"
        write_tree(out, OLD, "generated/")
        monkeypatch.setattr(swap, "_hook", _kill_at(k, error))
        with pytest.raises(type(error)):
            write_tree(out, NEW, "generated/")
        monkeypatch.setattr(swap, "_hook", None)
        assert os.listdir(out.parent) == ["generated"], steps[k]
        assert read_tree(out) == (OLD if k < steps.index("remove old tree") else NEW), steps[k]


def test_a_kill_while_recovering_from_a_kill_loses_nothing_either(tmp_path, monkeypatch, exchange):
    steps = _steps(tmp_path / "record" / "generated", OLD, NEW, monkeypatch)
    runs = 0
    for k in range(len(steps)):
        first = tmp_path / f"k{k}"
        write_tree(first / "generated", OLD, "generated/")
        monkeypatch.setattr(swap, "_hook", _kill_at(k))
        with pytest.raises(Killed):
            write_tree(first / "generated", NEW, "generated/")
        seen: list[str] = []
        shutil.copytree(first, tmp_path / "probe")
        monkeypatch.setattr(swap, "_hook", seen.append)
        write_tree(tmp_path / "probe" / "generated", NEW, "generated/")
        shutil.rmtree(tmp_path / "probe")
        for j in range(len(seen)):
            out = tmp_path / f"k{k}-{j}" / "generated"
            shutil.copytree(first, out.parent)
            monkeypatch.setattr(swap, "_hook", _kill_at(j))
            with pytest.raises(Killed):
                write_tree(out, NEW, "generated/")
            monkeypatch.setattr(swap, "_hook", None)
            _state(out, OLD, NEW, exchange)
            write_tree(out, NEW, "generated/")
            _assert_only(out, NEW)
            runs += 1
    assert runs > len(steps)


names = st.sampled_from(["a", "b", "c/d", "c/e", "f/g/h"])
bodies = st.sampled_from([b"x: 1\n", b"x: 2\n", b""])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    old=st.dictionaries(names, bodies, min_size=1),
    new=st.dictionaries(names, bodies),
    pick=st.integers(min_value=0),
    use_exchange=st.booleans(),
)
def test_any_trees_killed_anywhere_come_out_whole(monkeypatch, old, new, pick, use_exchange):
    old = {f"{k}.yaml": H + v for k, v in old.items()}
    new = {f"{k}.yaml": H + v for k, v in new.items()}
    with monkeypatch.context() as m, tempfile.TemporaryDirectory() as tmp:
        if not use_exchange:
            m.setattr(swap, "exchange", _refuse_exchange)
        steps = _steps(Path(tmp) / "record" / "generated", old, new, m)
        out = Path(tmp) / "repo" / "generated"
        write_tree(out, old, "generated/")
        if steps:
            m.setattr(swap, "_hook", _kill_at(pick % len(steps)))
            with pytest.raises(Killed):
                write_tree(out, new, "generated/")
            m.setattr(swap, "_hook", None)
            _state(out, old, new, use_exchange)
        write_tree(out, new, "generated/")
        _assert_only(out, new)


def test_a_first_write_is_one_rename(tmp_path, monkeypatch):
    out = tmp_path / "repo" / "generated"
    steps = _steps(out, {}, NEW, monkeypatch)
    assert "exchange" not in steps and steps.count("move in") == 1
    for k in range(len(steps)):
        out = tmp_path / f"k{k}" / "generated"
        monkeypatch.setattr(swap, "_hook", _kill_at(k))
        with pytest.raises(Killed):
            write_tree(out, NEW, "generated/")
        monkeypatch.setattr(swap, "_hook", None)
        assert read_tree(out) == (NEW if out.exists() else {})
        write_tree(out, NEW, "generated/")
        _assert_only(out, NEW)


def test_unchanged_files_keep_inode_and_mtime(tmp_path, exchange):
    out = tmp_path / "generated"
    write_tree(out, OLD, "generated/")
    kept, changed = os.stat(out / "keep/b.yaml"), os.stat(out / "a.yaml")
    write_tree(out, NEW, "generated/")
    now = os.stat(out / "keep/b.yaml")
    assert (now.st_ino, now.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)
    assert os.stat(out / "a.yaml").st_ino != changed.st_ino
    _assert_only(out, NEW)


def test_where_links_fail_unchanged_files_are_copied_with_their_mtime(tmp_path, monkeypatch):
    out = tmp_path / "generated"
    write_tree(out, OLD, "generated/")
    kept = os.stat(out / "keep/b.yaml")

    def no_link(*a, **k):
        raise OSError(errno.EPERM, "no hard links here")

    monkeypatch.setattr(os, "link", no_link)
    write_tree(out, NEW, "generated/")
    now = os.stat(out / "keep/b.yaml")
    assert now.st_ino != kept.st_ino and now.st_mtime_ns == kept.st_mtime_ns
    _assert_only(out, NEW)


def test_a_run_that_changes_nothing_writes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "generated"
    write_tree(out, NEW, "generated/")
    before = {p: os.stat(p).st_mtime_ns for p in (tmp_path, out, out / "keep")}
    seen: list[str] = []
    monkeypatch.setattr(swap, "_hook", seen.append)
    assert not write_tree(out, NEW, "generated/").any
    assert seen == []
    assert {p: os.stat(p).st_mtime_ns for p in before} == before


def test_a_run_that_changes_nothing_still_clears_a_killed_runs_leftovers(
    tmp_path, monkeypatch, exchange
):
    steps = _steps(tmp_path / "record" / "generated", OLD, NEW, monkeypatch)
    out = tmp_path / "repo" / "generated"
    write_tree(out, OLD, "generated/")
    monkeypatch.setattr(swap, "_hook", _kill_at(steps.index("remove old tree")))
    with pytest.raises(Killed):
        write_tree(out, NEW, "generated/")
    monkeypatch.setattr(swap, "_hook", None)
    assert read_tree(out) == NEW
    kinds = sorted(p.name.split(".trainkit-")[1].split("-")[0] for p in swap.leftovers(out))
    assert kinds == (["lock", "new"] if exchange else ["lock", "old"])
    assert not write_tree(out, NEW, "generated/").any
    _assert_only(out, NEW)


def test_a_legacy_gap_is_rolled_back_so_foreign_files_are_not_lost(tmp_path):
    # An older trainkit killed between its two renames: no generated/, the old tree set aside.
    out = tmp_path / "generated"
    old = tmp_path / ".generated.trainkit-old-999"
    (old / "clusters").mkdir(parents=True)
    (old / "notes.md").write_bytes(b"mine\n")
    (tmp_path / ".generated.trainkit-new-999" / "half").mkdir(parents=True)
    with pytest.raises(
        SetupError, match=r"generated/: holds files trainkit did not generate \(notes\.md\)"
    ):
        write_tree(out, NEW, "generated/")
    assert read_tree(out) == {"notes.md": b"mine\n"}
    assert os.listdir(tmp_path) == ["generated"]


def test_foreign_files_are_refused_and_nothing_is_left_beside(tmp_path):
    out = tmp_path / "generated"
    write_tree(out, OLD, "generated/")
    (out / "keep/notes.md").write_bytes(b"mine\n")
    with pytest.raises(SetupError, match=r"\(keep/notes\.md\); refusing to replace the directory"):
        write_tree(out, NEW, "generated/")
    _assert_only(out, {**OLD, "keep/notes.md": b"mine\n"})


@pytest.mark.parametrize("inside", [True, False], ids=["inside-repo", "outside-repo"])
def test_a_symlinked_output_directory_is_refused(tmp_path, inside):
    repo = tmp_path / "repo"
    target = (repo / "real") if inside else (tmp_path / "elsewhere")
    write_tree(target, OLD, "x/")
    repo.mkdir(exist_ok=True)
    (repo / "generated").symlink_to(target, target_is_directory=True)
    with pytest.raises(SetupError) as e:
        write_tree(repo / "generated", NEW, "generated/")
    assert str(e.value) == (
        f"generated/: is a symbolic link (to {target}); trainkit writes the output as a real "
        "directory of the repository and does not follow links. Remove the link "
        "(rm generated) or pass --out with the directory itself"
    )
    assert (repo / "generated").is_symlink() and read_tree(target) == OLD
    assert sorted(os.listdir(repo)) == (["generated", "real"] if inside else ["generated"])


def test_synth_names_a_symlinked_output_by_its_own_name(bare, bare_cli):
    (bare.root / "real").mkdir()
    bare.out.symlink_to("real", target_is_directory=True)
    run = bare_cli("synth")
    assert (run.code, run.err.splitlines()[0]) == (
        1,
        "error: generated/: is a symbolic link (to real); trainkit writes the output as a real "
        "directory of the repository and does not follow links. Remove the link (rm generated) "
        "or pass --out with the directory itself",
    )
    assert os.listdir(bare.root / "real") == []


def test_an_output_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "generated").write_bytes(b"x\n")
    with pytest.raises(SetupError, match=r"^generated/: is a file, not a directory; move it away"):
        write_tree(tmp_path / "generated", NEW, "generated/")
    assert (tmp_path / "generated").read_bytes() == b"x\n"


def test_the_system_exchange_swaps_two_directories(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    write_tree(a, {"one": b"1"}, "a/")
    write_tree(b, {"two": b"2"}, "b/")
    routes = [swap._exchange_call()]
    machine = os.uname().machine
    if sys.platform.startswith("linux") and machine in swap._SYSCALL:
        # The route for a C library without the renameat2 wrapper (glibc < 2.28).
        routes.append(
            swap._syscall_exchange(ctypes.CDLL(None, use_errno=True), swap._SYSCALL[machine])
        )
    expected = [{"one": b"1"}, {"two": b"2"}]
    for route in routes:
        assert route is not None, f"no atomic exchange on {sys.platform} {machine}"
        monkeypatch.setattr(swap, "_exchange_call", lambda route=route: route)
        swap.exchange(a, b)
        expected.reverse()
        assert [read_tree(a), read_tree(b)] == expected
        with pytest.raises(FileNotFoundError):
            swap.exchange(a, tmp_path / "missing")


WRITER = """\
import errno, json, sys
from pathlib import Path
from trainkit.write import swap, write_tree

out, files, stop_at, mode, timeout = sys.argv[1:]

def hook(name):
    if stop_at and name.startswith(stop_at):
        print(name, flush=True)  # tell the test we are here,
        sys.stdin.read()  # and wait until it closes our stdin, or kills us

def refuse(a, b):
    raise OSError(errno.EINVAL, "exchange refused by this filesystem")

if mode == "two-renames":
    swap.exchange = refuse
swap._hook = hook
data = {k: v.encode() for k, v in json.loads(Path(files).read_text()).items()}
write_tree(Path(out), data, "generated/", lock_timeout=float(timeout))
"""


@contextmanager
def _writer(
    here: Path, out: Path, files: dict[str, bytes], stop_at: str, mode: str = "exchange"
) -> Iterator[subprocess.Popen[str]]:
    """A real process writing ``files`` to ``out``, stopped just before step ``stop_at``."""
    here.mkdir(exist_ok=True)
    script = here / "writer.py"
    script.write_text(WRITER)
    data = here / f"files-{len(list(here.glob('files-*')))}.json"
    data.write_text(json.dumps({k: v.decode() for k, v in files.items()}))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(LIB), os.environ.get("PYTHONPATH", "")]),
    }
    with subprocess.Popen(
        [sys.executable, script.name, str(out), data.name, stop_at, mode, "60"],
        cwd=here,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()


def _reached(proc: subprocess.Popen[str], step: str) -> None:
    """Block until the writer reports that it waits before ``step`` (an event, not a sleep)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith(step), (line, proc.stderr.read() if proc.stderr else "")


@pytest.mark.parametrize(
    ("stop_at", "mode"),
    [
        ("file added/", "exchange"),
        ("exchange", "exchange"),
        ("remove old tree", "exchange"),
        ("set aside", "two-renames"),
        ("move in", "two-renames"),
        ("unlock", "two-renames"),
    ],
)
def test_a_real_sigkill_mid_write_loses_nothing(tmp_path, stop_at, mode):
    out = tmp_path / "repo" / "generated"
    write_tree(out, OLD, "generated/")
    with _writer(tmp_path / "writers", out, NEW, stop_at, mode) as proc:
        _reached(proc, stop_at)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    state = _state(out, OLD, NEW, exchange=mode == "exchange")
    assert state == {
        "file added/": "old",
        "exchange": "old",
        "set aside": "old",
        "move in": "gap",
    }.get(stop_at, "new")
    # The kill freed the lock: the next run need not wait at all.
    write_tree(out, NEW, "generated/", lock_timeout=0)
    _assert_only(out, NEW)


def test_a_second_run_waits_for_the_first_then_writes(tmp_path):
    out = tmp_path / "repo" / "generated"
    write_tree(out, OLD, "generated/")
    # The second run reads OLD before it waits; the first then changes keep/b.yaml. Linking
    # keep/b.yaml as "unchanged since OLD" would put the first run's content in place.
    first_files = {**NEW, "keep/b.yaml": H + b"b: 2\n"}
    other = {"keep/b.yaml": OLD["keep/b.yaml"], "z.yaml": H + b"z: 1\n"}
    with _writer(tmp_path / "writers", out, first_files, "build") as first:
        _reached(first, "build")
        lock = out.parent / ".generated.trainkit-lock"
        assert lock.read_text().startswith(f"{first.pid}\nwriter.py {out} files-0.json build")
        with _writer(tmp_path / "writers", out, other, "build") as second:
            assert second.stderr is not None
            said = second.stderr.readline()
            assert said == (
                f"waiting for pid {first.pid} (`writer.py {out} files-0.json build exchange 60`) "
                "to finish writing generated/\n"
            )
            assert read_tree(out) == OLD
            first.communicate("go")
            assert first.returncode == 0
            # The first run removed the lock file the second was waiting on; the second
            # must hold the lock of the file now there, or a third run would not wait.
            _reached(second, "build")
            assert lock.read_text().startswith(f"{second.pid}\n")
            with pytest.raises(SetupError, match=rf"^generated/: pid {second.pid} \(`writer"):
                write_tree(out, NEW, "generated/", lock_timeout=0)
            assert second.communicate("go") == ("", "")
            assert second.returncode == 0
    _assert_only(out, other)


def test_a_run_that_cannot_get_the_lock_names_the_holder_without_a_traceback(
    bare, bare_cli, monkeypatch, tmp_path_factory
):
    monkeypatch.setattr(write_mod, "LOCK_TIMEOUT", 0)
    with _writer(tmp_path_factory.mktemp("writers"), bare.out, OLD, "build") as holder:
        _reached(holder, "build")
        run = bare_cli("synth")
        assert run.code == 1
        assert run.err.splitlines() == [
            f"error: generated/: pid {holder.pid} (`writer.py {bare.out} files-0.json build "
            "exchange 60`) is writing it; gave up after waiting 0 s. Let that run finish (or stop "
            "it) and run again (lock file: .generated.trainkit-lock beside generated/)",
            "trainkit synth: 1 error(s)",
        ]
        holder.communicate("go")
        assert holder.returncode == 0
    assert read_tree(bare.out) == OLD
    assert bare_cli("synth").code == 0
    assert sorted(os.listdir(bare.root)) == ["generated", "jobs"]


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (
            ["/venv/lib/trainkit/__main__.py", "synth", "--out", "my out"],
            "trainkit synth --out 'my out'",
        ),
        (["/venv/bin/trainkit", "synth"], "trainkit synth"),
    ],
)
def test_the_lock_holder_is_named_by_the_command_a_person_typed(monkeypatch, argv, shown):
    monkeypatch.setattr(sys, "argv", argv)
    assert lock_mod._command() == shown
