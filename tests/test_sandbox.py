"""The definitions' sandbox fails closed and holds only what a definition needs.

Each test plays one attack a hostile team member tried (issue 23), or one way the OS
refuses the sandbox. The refusals are reproduced in a process the test starts
(``denials.py``): a seccomp filter, a user namespace whose limit is 0, a refused mount.
Mostly that process is the origin of the definition processes (``denied_origin``, one per
refusal for the module), where the sandbox is entered, and trainkit runs in the test's own
process; where what trainkit's process has imported is the point, it is a whole
``trainkit`` run (``denied``).
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, Run, Workspace
from run_directory import package_watch
from trainkit import DefinitionError
from trainkit.load import LoadOptions, load_jobs, sandbox, server
from trainkit.scaffold import scaffold_files

UNCONFINED = LoadOptions(sandbox=False)


@pytest.fixture(autouse=True)
def _package_watch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Loads without the sandbox here watch trainkit's package (``package_watch``)."""
    with package_watch(tmp_path_factory, writes=False):
        yield


DENIALS = Path(__file__).with_name("denials.py")
GITHUB_ROUTE = "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"


def problems(ws: Workspace, options: LoadOptions | None = None) -> list[str]:
    with pytest.raises(DefinitionError) as exc:
        load_jobs(ws.jobs, ws.root, options=options)
    return [str(p) for p in exc.value.problems]


def denied(mode: str, root: Path, *args: str, **env: str) -> Run:
    """``trainkit ARGS`` in ``root``, in a process the OS refuses the sandbox in ``mode``."""
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run(
        [sys.executable, str(DENIALS), mode, *args],
        cwd=root, env={**environ, **env}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def fresh_origin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The next load starts the origin of definition processes anew, from this process as it
    is then (its environment included); it is ended after the test."""
    monkeypatch.setattr(server, "_ORIGIN", None)
    yield
    if server._ORIGIN is not None:
        server._ORIGIN.close()


ORIGIN = ["-c", "from trainkit.load.server import main; main()"]


@pytest.fixture(scope="module")
def _denied_origins() -> Iterator[dict[str, server._Origin]]:
    """The origin refused in each mode, started on first use and shared by this module's
    tests (starting one costs about a CPU-second): each load forks its own server from it,
    where the sandbox is entered, and the refusal (a seccomp filter, a user namespace)
    holds the origin for its whole life, so every test meets it as the first did."""
    origins: dict[str, server._Origin] = {}
    yield origins
    for origin in origins.values():
        origin.close()


@pytest.fixture
def denied_origin(
    monkeypatch: pytest.MonkeyPatch, _denied_origins: dict[str, server._Origin]
) -> Callable[[str], None]:
    """``denied_origin(MODE)``: the next load forks its server from an origin of definition
    processes started as trainkit starts it (its environment, its socket), but in
    ``denials.py``, where the OS refuses the sandbox in ``MODE`` to it and to every process
    it forks (the sandbox is entered there, never in trainkit's own process)."""
    real = subprocess.Popen

    def popen(mode: str) -> Callable[..., Any]:
        def start(args: Any, *rest: Any, **kwargs: Any) -> Any:
            if list(args[1:3]) == ORIGIN:
                args = [args[0], str(DENIALS), mode, "--origin", *args[3:]]
            return real(args, *rest, **kwargs)

        return start

    def refuse(mode: str) -> None:
        if mode not in _denied_origins:
            with monkeypatch.context() as m:
                m.setattr(subprocess, "Popen", popen(mode))
                _denied_origins[mode] = server._Origin()
        monkeypatch.setattr(server, "_ORIGIN", _denied_origins[mode])

    return refuse


REFUSALS = {
    # mode: (the cause trainkit names, the fix it gives)
    "seccomp": (
        "creating a user namespace (unshare) failed: Operation not permitted (a seccomp "
        "profile forbids it",
        "whose seccomp profile allows unshare",
    ),
    "max-userns": (
        "creating a user namespace (unshare) failed: No space left on device "
        "(user.max_user_namespaces is 0 here",
        "sudo sysctl -w user.max_user_namespaces=15000",
    ),
    "mount": (
        "mounting in the new user namespace failed: Permission denied",
        GITHUB_ROUTE,
    ),
}


@pytest.mark.parametrize("required_by", ["flag", "CI"])
@pytest.mark.parametrize("mode", sorted(REFUSALS))
def test_a_refused_sandbox_is_an_error_where_it_is_required(
    bare: Workspace,
    bare_cli: Callable[..., Run],
    denied_origin: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    required_by: str,
) -> None:
    bare.write("jobs/vision/ran.py", "raise RuntimeError('THE DEFINITION RAN')\n")
    denied_origin(mode)
    if required_by == "flag":
        got = bare_cli("synth", "--against", "disk", "--require-sandbox")
    else:
        monkeypatch.setenv("CI", "true")
        got = bare_cli("synth", "--against", "disk")
    cause, fix = REFUSALS[mode]
    assert got.code == 1, got
    (line,) = [x for x in got.err.splitlines() if x.startswith("error: ")]
    assert line.startswith("error: jobs/: definitions cannot be confined on this machine: ")
    assert cause in line and fix in line, line
    assert (
        "(--require-sandbox, or the CI environment variable is set), so no definition ran" in line
    )
    assert "THE DEFINITION RAN" not in got.out + got.err
    assert not bare.out.exists()


def test_on_a_laptop_an_unconfined_run_says_why_and_how_to_confine(
    bare_cli: Callable[..., Run], denied_origin: Callable[[str], None]
) -> None:
    denied_origin("mount")
    got = bare_cli("synth", "--against", "disk")
    assert got.code == 0, got
    cause, fix = REFUSALS["mount"]
    (note,) = [x for x in got.err.splitlines() if x.startswith("note: ")]
    assert note.startswith("note: definitions ran without a read-only file system")
    assert cause in note and f"to confine them: on Ubuntu 23.10 and later run `{fix}`" in note


def test_apparmors_restriction_is_named_with_the_route_for_github_runners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ubuntu 24.04 (GitHub's ubuntu-latest): unshare works, then AppArmor's
    # unprivileged_userns profile refuses the uid map or the first mount.
    setting = tmp_path / "apparmor_restrict_unprivileged_userns"
    setting.write_text("1\n")
    monkeypatch.setattr(sandbox, "_APPARMOR_USERNS", str(setting))
    for step in ("map", "mount"):
        why = sandbox.diagnose(step, errno.EACCES)
        assert "kernel.apparmor_restrict_unprivileged_userns=1" in why.cause
        assert why.fix.startswith(f"run `{GITHUB_ROUTE}` before trainkit")


def test_this_machine_confines_definitions_as_ci_requires(bare: Workspace) -> None:
    """CI here runs with the sandbox required: every refusal above would fail this."""
    loaded = load_jobs(bare.jobs, bare.root, options=LoadOptions(require_sandbox=True))
    assert loaded.notices == []


def test_a_non_root_user_enters_the_sandbox_from_an_undumpable_process() -> None:
    """GitHub's runners are uid 1001: the sandbox must work for a user without privileges.

    Processes that serve definitions are undumpable (no other process of the user may trace
    them), which makes their ``/proc/self`` files root's: writing the new namespace's uid map
    then fails with EACCES for anyone but root, and every CI run as a user failed closed.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            os.close(read)
            if os.geteuid() == 0:  # as the tests' root: become GitHub's runner user
                # Root's interpreter may keep its standard library where the user cannot
                # read: load the codec enter() writes with while still root.
                codecs.lookup("ascii")
                os.setgroups([])
                os.setgid(1001)
                os.setuid(1001)
            sandbox.make_undumpable()
            new_pid_ns, why = sandbox.enter()
            os.write(write, f"{os.geteuid()} {new_pid_ns} {why}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        said = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    uid, new_pid_ns, why = said.split(" ", 2)
    assert uid != "0"
    assert (new_pid_ns, why) == ("True", "None")


# --- what a confined definition can see ---------------------------------------------------


def test_definitions_see_jobs_and_the_interpreter_and_nothing_else(
    bare: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("home")
    secrets = {
        bare.write("secret.txt", "REPO-SECRET\n"): "REPO-SECRET",
        bare.write(".git/config", "[http] extraheader = AUTHORIZATION: basic GIT-SECRET\n"): (
            "GIT-SECRET"
        ),
        home / ".kube" / "config": "KUBE-SECRET",
    }
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text("token: KUBE-SECRET\n")
    paths = [str(p) for p in secrets] + ["/etc/passwd", "/etc/hostname"]
    bare.write("jobs/vision/data.txt", "JOBS-DATA\n")
    bare.write(
        "jobs/vision/snoop.py",
        textwrap.dedent(
            f"""\
            import os, trainkit
            seen = []
            for path in {paths!r}:
                try:
                    seen.append(open(path).read())
                except OSError as e:
                    seen.append(type(e).__name__)
            seen.append(open(os.path.join(os.path.dirname(__file__), 'data.txt')).read())
            raise RuntimeError('SEEN ' + repr(seen))
            """
        ),
    )
    (found,) = [p for p in problems(bare) if "SEEN" in p]
    for secret in secrets.values():
        assert secret not in found
    assert "root:" not in found  # /etc/passwd
    assert found.count("FileNotFoundError") == len(paths)
    assert "JOBS-DATA" in found  # what the definition may read, it reads


def test_no_secret_in_any_process_a_definition_can_see(
    bare: Workspace, monkeypatch: pytest.MonkeyPatch, fresh_origin: None
) -> None:
    """The long-lived origin and every process below it start without the caller's
    environment, and a fresh /proc shows only the definitions' own processes."""
    token = f"tk-token-{uuid.uuid4().hex}"
    monkeypatch.setenv("GITHUB_TOKEN", token)  # the caller's: this process, as trainkit
    bare.write(
        "jobs/vision/snoop.py",
        textwrap.dedent(
            f"""\
            import os
            leaks, others = [], []
            for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
                for what in ('environ', 'cmdline'):
                    try:
                        text = open(f'/proc/{{pid}}/{{what}}', 'rb').read()
                    except OSError:
                        continue
                    if {token!r}.encode() in text:
                        leaks.append((pid, what))
                    # (a process that has ended and is not yet reaped has no command line)
                    if what == 'cmdline' and text and b'trainkit.load.server' not in text:
                        others.append(text[:60])
            raise RuntimeError(f'LEAKS {{leaks}} OTHERS {{others}}')
            """
        ),
    )
    (line,) = [x for x in problems(bare) if "LEAKS" in x]
    # Only the definitions' own processes, none holding the token: no host process.
    assert line.endswith("LEAKS [] OTHERS []"), line


def test_host_unix_sockets_are_out_of_reach(
    bare: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A read-only file system does not stop connect(): a runner user in the docker
    group could reach /var/run/docker.sock. The socket is not in the definitions' tree."""
    path = tmp_path_factory.mktemp("run") / "daemon.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        bare.write(
            "jobs/vision/dial.py",
            textwrap.dedent(
                f"""\
                import socket
                s = socket.socket(socket.AF_UNIX)
                s.connect({str(path)!r})
                raise RuntimeError('CONNECTED')
                """
            ),
        )
        found = problems(bare)
    assert not any("CONNECTED" in p for p in found), found
    assert any(p.startswith("jobs/vision/dial.py:3: FileNotFoundError") for p in found), found


@pytest.mark.parametrize("options", [None, UNCONFINED], ids=["confined", "unconfined"])
def test_no_definition_gains_privileges(bare: Workspace, options: LoadOptions | None) -> None:
    """no_new_privs: hosted runners give their user passwordless sudo."""
    bare.write(
        "jobs/vision/sudo.py",
        "status = open('/proc/self/status').read()\n"
        "raise RuntimeError('NNP ' + status.split('NoNewPrivs:')[1].split()[0])\n",
    )
    assert any(
        "RuntimeError while importing the definition: NNP 1" in p for p in problems(bare, options)
    )


# --- where a laptop runs them unconfined ----------------------------------------------------


def test_a_rewrite_keeping_size_inode_and_mtime_is_caught(bare: Workspace) -> None:
    victim = bare.write("jobs/llm/victim.py", "x = 1\n")
    bare.write("jobs/platform/teams.py", "from trainkit import Team\nllm = Team(name='llm')\n")
    bare.write(
        "jobs/vision/evil.py",
        textwrap.dedent(
            f"""\
            import os
            st = os.stat({str(victim)!r})
            with open({str(victim)!r}, 'r+') as f:
                f.write('y')
            os.utime({str(victim)!r}, ns=(st.st_atime_ns, st.st_mtime_ns))
            """
        ),
    )
    found = problems(bare, UNCONFINED)
    assert any(
        p.startswith("jobs/vision/evil.py: jobs/llm/victim.py changed while this definition ran")
        for p in found
    ), found


def alive(name: str) -> list[int]:
    """Processes named ``name`` (their comm)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                comm = Path(f"/proc/{entry}/comm").read_text().strip()
            except OSError:
                continue
            if comm == name:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("options", [None, UNCONFINED], ids=["confined", "unconfined"])
def test_a_deep_process_chain_dies_with_the_run(
    bare: Workspace, options: LoadOptions | None
) -> None:
    """Each link leaves the worker's process group and session; the chain is deeper than
    any number of passes that kill direct children only."""
    name = f"tk{uuid.uuid4().hex[:10]}"
    bare.write(
        "jobs/vision/chain.py",
        textwrap.dedent(
            f"""\
            import ctypes, os, time
            if os.fork() == 0:
                ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)  # PR_SET_NAME
                for _ in range(150):
                    os.setsid()
                    if os.fork() != 0:
                        time.sleep(3600)
                        os._exit(0)
                time.sleep(3600)
                os._exit(0)
            """
        ),
    )
    load_jobs(bare.jobs, bare.root, options=options)
    assert alive(name) == []


def test_a_module_trainkit_imports_later_cannot_be_planted(
    bare: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Unconfined, a definition appends an exit hook to a standard-library module the
    parent has not imported yet: the parent must never run it (a failing check would exit
    0), and the change is an error."""
    shadow = tmp_path_factory.mktemp("stdlib")
    shutil.copytree(Path(os.__file__).parent / "email", shadow / "email",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    marker = shadow / "hook-ran"
    hook = (
        f"\nimport atexit, os\natexit.register(lambda: (open({str(marker)!r}, 'w'), os._exit(0)))\n"
    )
    bare.write(
        "jobs/vision/plant.py",
        f"for name in ('feedparser', 'parser'):\n"
        f"    open({str(shadow / 'email')!r} + f'/{{name}}.py', 'a').write({hook!r})\n",
    )
    # generated/ is missing: check fails, unless the planted hook turns it into exit 0.
    got = denied("seccomp", bare.root, "check", "--against", "disk", PYTHONPATH=str(shadow))
    assert not marker.exists()
    assert got.code == 1, got
    assert "email/feedparser.py changed while this definition ran" in got.err, got.err


def test_a_module_of_a_package_not_imported_yet_is_refused_after_a_change(
    bare: Workspace, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path_factory.mktemp("site")
    package = f"tkplanted_{uuid.uuid4().hex[:8]}"
    (where / package).mkdir()
    (where / package / "__init__.py").write_text("")
    (where / package / "sub.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(where))
    target = where / package / "sub.py"
    bare.write(
        "jobs/vision/plant.py", f"open({str(target)!r}, 'a').write('raise SystemExit(7)\\n')\n"
    )
    load_jobs(bare.jobs, bare.root, options=UNCONFINED)  # nothing under the watched roots
    with pytest.raises(DefinitionError, match=r"changed while definitions ran without the sandbox"):
        __import__(f"{package}.sub")


# --- what CI runs ------------------------------------------------------------------------


def _steps(workflow: str) -> list[str]:
    doc = yaml.safe_load(workflow)
    (job,) = doc["jobs"].values()
    return [str(step.get("run", step.get("uses", ""))) for step in job["steps"]]


@pytest.mark.parametrize("where", ["ci.yml", "plan.yml", "init: trainkit.yml", "init: plan.yml"])
def test_workflows_lift_apparmors_restriction_before_any_definition_runs(where: str) -> None:
    if where.startswith("init: "):
        workflow = scaffold_files()[".github/workflows/" + where.removeprefix("init: ")]
    else:
        workflow = (REPO / ".github/workflows" / where).read_text()
    steps = _steps(workflow)
    lift = next(i for i, s in enumerate(steps) if GITHUB_ROUTE in s)
    runs = [i for i, s in enumerate(steps) if "trainkit " in s or "make " in s or ".ci/run" in s]
    assert runs and lift < min(runs), steps


def owners(codeowners: str, path: str) -> list[str]:
    """The owners GitHub gives ``path``: the last matching pattern wins (gitignore-style
    patterns as CODEOWNERS uses them: ``*`` one path segment, a trailing ``/`` a directory
    and everything below it, a leading ``/`` the repository root)."""
    found: list[str] = []
    for line in codeowners.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pattern, *who = line.split()
        regex = re.escape(pattern.strip("/")).replace(r"\*", "[^/]*")
        if pattern == "*":
            regex = ".*"
        elif pattern.endswith("/"):
            regex += "/.*"
        if not pattern.startswith("/") and pattern != "*":
            regex = "(?:.*/)?" + regex
        if re.fullmatch(regex, path):
            found = who
    return found


def test_codeowners_cover_everything_ci_runs_and_the_platform() -> None:
    text = (REPO / "CODEOWNERS").read_text()
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    team = re.compile(
        r"jobs/(?!platform/)[^/]+/.+|generated/clusters/[^/]+/(vision|llm-training)/.+"
    )
    for path in [*tracked, "new-script.sh", "tests/planted.py", "jobs/planted.py"]:
        assert bool(owners(text, path)) != bool(team.fullmatch(path)), path
    for path in (".ci/run", "Makefile", "README.md", "docs/platform.md", "mkdocs.yml",
                 "tools/gen_reference.py", "lib/trainkit/load/sandbox.py",
                 "tests/conftest.py", "jobs/platform/policy.py", "generated/argocd/appproject.yaml",
                 "generated/clusters/gpu-east/kustomization.yaml", "CODEOWNERS"):  # fmt: skip
        assert owners(text, path) == ["@trainkit-gitops/maintainers"], path


def test_trainkit_init_writes_codeowners_for_the_platform() -> None:
    text = scaffold_files()["CODEOWNERS"]
    for path in (".github/workflows/trainkit.yml", "CODEOWNERS", "jobs/platform/teams.py",
                 "generated/argocd/root-application.yaml",
                 "generated/clusters/east/platform/queue-x.yaml", "any/new/file.sh"):  # fmt: skip
        assert owners(text, path) == ["@your-org/platform-team"], path
    for path in ("jobs/research/example_ddp.py", "generated/clusters/east/research/job.yaml"):
        assert owners(text, path) == [], path
