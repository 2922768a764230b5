"""A RayJob's ``runtime_env.working_dir``: a directory of the repository shipped to the
submitter (KubeRay v1.7.0 common/job.go BuildJobSubmitCommand: ``ray job submit
--runtime-env-json``, which uploads it), or an archive a Team grant allows.

The directory is untrusted input: it must stay inside ``jobs/``, follow no link out or to a
directory, and stay within the ConfigMap's bounds; what is shipped is the same bytes wherever
it is read."""

from __future__ import annotations

import dataclasses
import io
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pathspec import PathSpec

from conftest import Workspace
from kind_fixtures import planned, render
from trainkit import ModelError, RayJob, Resources, RuntimeEnv, Team, WorkerGroup
from trainkit.errors import DefinitionError
from trainkit.load import load_jobs
from trainkit.load.working_dir_files import MAX_BYTES, MAX_FILES, WorkingDirError, read_working_dir
from trainkit.model.working_dir import excluded
from trainkit.render.kuberay import WORKING_DIR_MOUNT
from trainkit.synth.layout import _cluster_objects, check_cluster_truth, render_groups

if TYPE_CHECKING:  # imported by pytest as a plugin, first: its asserts are rewritten
    from ray_fixtures import SharedRay

pytest_plugins = ["ray_fixtures"]  # one shared Ray cluster for the whole session

KUBERAY = {"operators": ["kuberay"]}
ARCHIVE = "s3://ml-code/eval/suite-v3.zip"
FILES = {"run.py": "import suite\n", "suite/__init__.py": "", "suite/data.txt": "1\t2\n"}


def job(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "rj",
        "image": "rayproject/ray:2.60.0",
        "command": ["python", "run.py"],
        "head": Resources(cpu=4, memory="16Gi"),
        "workers": [WorkerGroup(name="cpu", nodes=1, resources=Resources(cpu=4, memory="8Gi"))],
        "runtime_env": RuntimeEnv(working_dir="scripts/suite"),
    }
    return RayJob(**(fields | kw))


def problems(j: RayJob, team: dict[str, Any] | None = None) -> list[str]:
    try:
        plan = planned(j, team, None, FILES, **KUBERAY)
        check_cluster_truth(plan, render_groups(plan))
    except DefinitionError as e:
        return [str(p) for p in e.problems]
    return []


# -- the model: what a working_dir may be ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("/abs/code", "must be a directory relative to the definition file, inside jobs/"),
        ("../other-team/code", "must be a directory relative to the definition file"),
        ("scripts/../../x", "must be a directory relative to the definition file"),
        ("scripts\\code", "must be a directory relative to the definition file"),
        ("scripts/co\nde", "holds a control character"),
        ("", "must not be empty"),
        ("http://code.example.com/x.zip", "uses http://, which is not offered"),
        ("file:///srv/code.zip", "uses file://, which is not offered"),
        ("local:///srv/code", "uses local://, which is not offered"),
        ("gcs://ray-pkgs/abc.zip", "uses gcs://, which is not offered"),
        ("s3://ml-code/suite", "is not an archive Ray unpacks (.zip, .tar.gz, .tgz, .tar.xz"),
        ("s3://ml-code/suite.tar.bz2", "is not an archive Ray unpacks"),
        ("https://user:pw@code.example.com/x.zip", "names a user or password before the host"),
        ("https://code.example.com/a/../b.zip", "has an empty, '.' or '..' path segment"),
        ("https://code.example.com//b.zip", "is not a URI trainkit reads"),
        ("https://code.example.com/x.zip?X-Amz-Signature=1", "no query or fragment"),
        ("https://code.example.com/%2e%2e/x.zip", "is not a URI trainkit reads"),
    ],
)
def test_a_working_dir_that_is_neither_a_repository_directory_nor_an_archive_is_refused(
    value: str, says: str
) -> None:
    with pytest.raises(ModelError) as e:
        RuntimeEnv(working_dir=value)
    message = str(e.value)
    assert "RuntimeEnv: working_dir: " in message
    assert says in message, message


@pytest.mark.parametrize(
    "pattern",
    ["!keep.py", "**/*.ipynb", "a/../b", "", "/", "a//b", "a\\b", "x\ty", "#x", " a", "a ", "[^a]"],
)
def test_an_exclude_trainkit_cannot_read_as_written_is_refused(pattern: str) -> None:
    with pytest.raises(ModelError) as e:
        RuntimeEnv(working_dir="scripts/x", excludes=[pattern])
    message = str(e.value)
    assert "RuntimeEnv: excludes[0]: " in message
    assert "is not an exclude pattern trainkit reads" in message, message


def test_excludes_belong_to_a_repository_directory() -> None:
    for env in ({}, {"working_dir": ARCHIVE}):
        with pytest.raises(ModelError, match="excludes choose the files of a repository"):
            RuntimeEnv(excludes=["*.md"], **env)


@pytest.mark.parametrize("mode", ["HTTPMode", "SidecarMode"])
def test_a_repository_directory_needs_the_submitter_pod_trainkit_writes(mode: str) -> None:
    with pytest.raises(ModelError) as e:
        job(submission_mode=mode)
    message = str(e.value)
    assert f"submission_mode {mode!r} submits from where it is not" in message, message
    assert "use submission_mode='K8sJobMode', or an archive URI" in message
    job(submission_mode=mode, runtime_env=RuntimeEnv(working_dir=ARCHIVE))  # an archive: any


@pytest.mark.parametrize(
    "prefix",
    ["s3://ml-code", "http://a.example/", "https://u@a.example/", "s3://b/../c/", "ftp://a/"],
)
def test_a_team_grant_is_a_plain_prefix_of_archives(prefix: str) -> None:
    with pytest.raises(ModelError) as e:
        Team(name="t", working_dir_sources=[prefix])
    assert "is not a source prefix for archives" in str(e.value)


@pytest.mark.parametrize(
    ("rel", "is_dir", "patterns", "hit"),
    [
        ("a/b/x.ipynb", False, ["*.ipynb"], True),
        ("x.ipynb", False, ["*.ipynb"], True),
        ("data", True, ["data/"], True),
        ("data", False, ["data/"], False),
        ("sub/data", True, ["/data/"], False),
        ("notebooks/a.py", False, ["/notebooks/*"], True),
        ("notebooks/deep/a.py", False, ["/notebooks/*"], False),  # * stays in a segment
        ("a/notebooks/a.py", False, ["notebooks/*"], False),  # a '/' anchors
        ("run.py", False, ["*.md"], False),
    ],
)
def test_excludes_match_as_documented(
    rel: str, is_dir: bool, patterns: list[str], hit: bool
) -> None:
    assert excluded(rel, is_dir, patterns) is hit


# -- reading the directory (untrusted) ------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """jobs/t/scripts/suite with FILES, beside a definition in jobs/t/."""
    top = tmp_path / "jobs/t/scripts/suite"
    for rel, text in FILES.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    return top


def read(
    tree: Path, excludes: list[str] | None = None, given: str = "scripts/suite"
) -> dict[str, str]:
    root = tree.parents[3]
    return read_working_dir(tree.parents[1] / given, given, root / "jobs", root, excludes or [])


def refused(tree: Path, says: str, **kw: Any) -> None:
    with pytest.raises(WorkingDirError) as e:
        read(tree, **kw)
    assert says in str(e.value), str(e.value)
    assert str(e.value).startswith("working_dir 'scripts/suite"), str(e.value)


def test_the_directory_is_read_in_path_order_without_python_caches(tree: Path) -> None:
    (tree / "suite/__pycache__").mkdir()
    (tree / "suite/__pycache__/x.cpython-311.pyc").write_bytes(b"\x00\xff")
    (tree / "stale.pyc").write_bytes(b"\x00\xff")
    (tree / "NOTES.md").write_text("notes")
    got = read(tree, excludes=["*.md"])
    assert list(got) == sorted(FILES) and got == FILES


def test_a_directory_outside_jobs_is_refused(tree: Path) -> None:
    outside = tree.parents[3] / "elsewhere"
    outside.mkdir()
    (outside / "x.py").write_text("x")
    (tree.parents[1] / "linked").symlink_to(outside)
    with pytest.raises(WorkingDirError, match=r"resolves to .*/elsewhere, outside jobs/"):
        read(tree, given="linked")


def test_a_link_out_of_jobs_is_refused(tree: Path) -> None:
    (tree / "passwd").symlink_to("/etc/passwd")
    refused(tree, "passwd is a symbolic link to /etc/passwd, outside jobs/")


def test_a_link_to_a_directory_is_refused(tree: Path) -> None:
    (tree / "loop").symlink_to(tree)
    refused(tree, "loop is a symbolic link to a directory")


def test_a_link_to_a_file_inside_jobs_is_shipped_as_the_file(tree: Path) -> None:
    (tree.parents[1] / "shared.txt").write_text("shared\n")
    (tree / "shared.txt").symlink_to(tree.parents[1] / "shared.txt")
    assert read(tree)["shared.txt"] == "shared\n"


def test_a_missing_or_empty_directory_is_refused(tree: Path) -> None:
    with pytest.raises(WorkingDirError, match="is not a directory next to the definition"):
        read(tree, given="scripts/nope")
    refused(tree, "holds no file to ship", excludes=["*"])


def test_too_many_files_are_refused(tree: Path) -> None:
    for i in range(MAX_FILES):
        (tree / f"f{i:04d}.txt").write_text("x")
    refused(tree, f"has more than {MAX_FILES} files; ship fewer (excludes=[...])")


def test_too_many_bytes_are_refused(tree: Path) -> None:
    (tree / "big.txt").write_text("x" * (MAX_BYTES - 40))
    refused(tree, f"is over {MAX_BYTES} bytes with suite/")


def test_binary_control_characters_and_volume_names_are_refused(tree: Path) -> None:
    (tree / "model.bin").write_bytes(b"\xff\xfe")
    refused(tree, "model.bin is not UTF-8 text; exclude it")
    (tree / "model.bin").unlink()
    (tree / "bell.txt").write_text("ding\x07")
    refused(tree, "bell.txt contains control characters")
    (tree / "bell.txt").unlink()
    (tree / "..data").write_text("x")
    refused(tree, "..data begins with '..', as the ConfigMap volume's own entries do")
    (tree / "..data").unlink()
    (tree / "a\nb.txt").write_text("x")
    refused(tree, "holds a control character or a backslash")


def test_special_files_and_deep_trees_are_refused(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    refused(tree, "pipe is not a regular file")
    (tree / "pipe").unlink()
    deep = tree.joinpath(*["d"] * 17)
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("x")
    refused(tree, "nests deeper than 16 directories")


def test_code_the_loader_would_run_as_a_definition_is_refused(tree: Path) -> None:
    code = tree.parents[1] / "code"
    code.mkdir()
    (code / "run.py").write_text("x")
    with pytest.raises(WorkingDirError, match=r"holds run\.py, which the loader would run as a"):
        read(tree, given="code")
    (code / "run.py").rename(code / "data.txt")
    assert read(tree, given="code") == {"data.txt": "x"}


RAYJOB = """\
from trainkit import RayJob, Resources, RuntimeEnv

job = RayJob(
    name="rj",
    image="rayproject/ray:2.60.0",
    command=["python", "run.py"],
    head=Resources(cpu=4, memory="16Gi"),
    runtime_env=RuntimeEnv(working_dir={where!r}),
)
"""


def test_the_loader_names_the_definition_and_field(bare: Workspace) -> None:
    bare.write("jobs/vision/rj.py", RAYJOB.format(where="scripts/nope"))
    with pytest.raises(DefinitionError) as e:
        load_jobs(bare.jobs, bare.root)
    (message,) = [str(p) for p in e.value.problems]
    assert message.startswith(
        "jobs/vision/rj.py:8: RayJob 'rj': runtime_env.working_dir: working_dir "
        "'scripts/nope' is not a directory next to the definition"
    ), message
    bare.write("jobs/vision/scripts/suite/run.py", "print('hi')\n")
    bare.write("jobs/vision/rj.py", RAYJOB.format(where="scripts/suite"))
    (rj,) = [d for d in load_jobs(bare.jobs, bare.root).definitions if d.file.endswith("rj.py")]
    assert dict(rj.working_dir) == {"run.py": "print('hi')\n"}


# -- rendering and the grant --------------------------------------------------------------


def test_the_directory_is_a_configmap_mounted_on_the_submitter() -> None:
    body, _ = render(job(), None, None, FILES, **KUBERAY)
    env = yaml.safe_load(body["spec"]["runtimeEnvYAML"])
    assert env == {"working_dir": WORKING_DIR_MOUNT, "excludes": ["/..*"]}
    pod = body["spec"]["submitterPodTemplate"]["spec"]
    (cm_volume, tmp) = pod["volumes"]
    (cp,) = planned(job(), None, None, FILES, **KUBERAY).clusters
    (cm,) = [
        r.body
        for r in _cluster_objects(cp)
        if r.body["kind"] == "ConfigMap" and "-workdir-" in r.body["metadata"]["name"]
    ]
    assert cm_volume["configMap"]["name"] == cm["metadata"]["name"]
    items = cm_volume["configMap"]["items"]
    assert [i["path"] for i in items] == sorted(FILES)
    assert {i["path"]: cm["data"][i["key"]] for i in items} == FILES
    assert tmp == {"name": "working-dir-tmp", "emptyDir": {"sizeLimit": "64Mi"}}
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "working-dir", "mountPath": WORKING_DIR_MOUNT, "readOnly": True} in mounts
    # The Ray pods do not get it: Ray hands every node its own copy.
    head = body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert "working-dir" not in str(head.get("volumes"))


def test_an_edited_file_makes_a_new_configmap_and_job_hash() -> None:
    a, _ = render(job(), None, None, FILES, **KUBERAY)
    b, _ = render(job(), None, None, FILES | {"run.py": "import suite  # v2\n"}, **KUBERAY)
    name = lambda body: body["spec"]["submitterPodTemplate"]["spec"]["volumes"][0]  # noqa: E731
    assert name(a) != name(b)
    assert a["metadata"]["annotations"] != b["metadata"]["annotations"]


def test_an_archive_needs_the_teams_grant() -> None:
    j = job(runtime_env=RuntimeEnv(working_dir=ARCHIVE))
    (message,) = problems(j)
    assert (
        f"runtime_env.working_dir: team 't' may not run code from {ARCHIVE!r}; "
        "Team.working_dir_sources in jobs/platform/p.py allows none: ship the directory from "
        "the repository"
    ) in message, message
    (message,) = problems(j, {"working_dir_sources": ["s3://ml-code/train/"]})
    assert "allows 's3://ml-code/train/'" in message
    # A prefix is a prefix of the path: a bucket named like the granted one is not it.
    evil = job(runtime_env=RuntimeEnv(working_dir="s3://ml-code-evil/x.zip"))
    assert problems(evil, {"working_dir_sources": ["s3://ml-code/"]})
    assert problems(j, {"working_dir_sources": ["s3://ml-code/"]}) == []
    body, _ = render(j, {"working_dir_sources": ["s3://ml-code/"]}, **KUBERAY)
    assert yaml.safe_load(body["spec"]["runtimeEnvYAML"]) == {"working_dir": ARCHIVE}
    assert "volumes" not in body["spec"]["submitterPodTemplate"]["spec"]


def test_a_job_on_a_raycluster_ships_its_directory_through_its_submitter() -> None:
    j = RayJob(
        name="rj",
        image="rayproject/ray:2.60.0",
        ray_cluster="pool",
        command=["python", "run.py"],
        runtime_env=RuntimeEnv(working_dir="scripts/suite"),
    )
    assert j.runtime_env is not None and j.runtime_env.local_dir == "scripts/suite"


def test_explain_shows_the_working_dir(cli: Any) -> None:
    run = cli("explain", "eval-suite-ray")
    assert run.code == 0, run.err
    assert (
        "Ray working_dir: scripts/eval_suite (5 file(s), " in run.out
        and "mounted on the submitter at /trainkit/working_dir; `ray job submit` uploads it"
        in run.out
        and "(excluded: *.md)" in run.out
    ), run.out


@pytest.mark.long
def test_the_example_rehearses_in_its_working_dir_on_a_running_ray_cluster(
    ws: Workspace, cli: Any, shared_ray: SharedRay
) -> None:
    """The driver starts in the directory and ray.init() uploads it, so a task, in a worker
    the cluster started before the job, imports the suite and reads its prompts from its own
    copy (on the session's Ray cluster: this tests the working_dir, not the cluster). One of
    its two tasks: each runs in a worker of its own (about 1 CPU-s), and reads its prompts the
    same way."""
    source = ws.jobs / "llm" / "eval_suite_ray.py"
    text = source.read_text(encoding="utf-8")
    one = text.replace('args=["--tasks", "arith,arith_hard"]', 'args=["--tasks", "arith_hard"]')
    assert one != text
    source.write_text(one, encoding="utf-8")
    run = cli(
        "rehearse", "jobs/llm/eval_suite_ray.py", "--timeout", "240",
        "--ray-address", shared_ray.address,
    )  # fmt: skip
    assert run.code == 0, run.out + run.err
    assert "[rehearse]   - runtime_env working_dir → " in run.out, run.out
    assert "(5 file(s), written from its ConfigMap): the entrypoint starts in it" in run.out
    assert "[entrypoint] eval arith_hard: 0.750\n" in run.out, run.out
    assert "KubeRay would mark the RayJob SUCCEEDED" in run.out


def test_a_rehearsal_does_not_download_an_archive(ws: Workspace) -> None:
    from trainkit.errors import RehearsalError
    from trainkit.rehearse.definitions import plan_job
    from trainkit.rehearse.ray import rehearse_ray

    (d,) = [
        d for d in load_jobs(ws.jobs, ws.root).definitions if d.file.endswith("eval_suite_ray.py")
    ]
    (target, *_) = plan_job(d, ws.jobs, ws.root)
    archive = dataclasses.replace(target, working_dir={}, working_dir_uri=ARCHIVE)
    with pytest.raises(RehearsalError) as e:
        rehearse_ray(archive, file=d.file, nodes=1, procs_per_node=1, timeout=60, out=io.StringIO())
    (message,) = [str(p) for p in e.value.problems]
    assert message == (
        "jobs/llm/eval_suite_ray.py: RayJob 'eval-suite-ray': runtime_env.working_dir: "
        f"RayJob 'eval-suite-ray' runs the archive {ARCHIVE} (runtime_env working_dir), which "
        "a rehearsal does not download; rehearse it with the archive's directory in the "
        "repository (working_dir='scripts/<dir>')"
    ), message


# -- excludes read as .gitignore lines are read -------------------------------------------

_SEGMENTS = ["a", "b", "data", "x.py", "n.ipynb", "a.b", "ab"]
_GLOBS = ["*", "a*", "*.py", "?", "data", "[ab]", "[!a]*", "x.py", "*.ipynb", "a?b", "b"]


def _pattern() -> st.SearchStrategy[str]:
    """One to three globs joined by ``/``, maybe led and ended by one (a mapped tuple: a
    third less of the test's CPU than the same draws in an ``st.composite``)."""
    return st.tuples(
        st.booleans(), st.lists(st.sampled_from(_GLOBS), min_size=1, max_size=3), st.booleans()
    ).map(lambda t: ("/" if t[0] else "") + "/".join(t[1]) + ("/" if t[2] else ""))


@settings(max_examples=300)
@given(
    files=st.lists(
        st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4).map("/".join),
        min_size=1,
        max_size=8,
    ),
    patterns=st.lists(_pattern(), min_size=1, max_size=3),
)
@example(files=["notebooks/deep/a.py"], patterns=["/notebooks/*"])
def test_a_file_is_left_out_exactly_when_gitignore_would_leave_it_out(
    files: list[str], patterns: list[str]
) -> None:
    """The oracle is pathspec's ``gitwildmatch``, with which Ray reads ``excludes`` and
    ``.gitignore`` (Ray 2.60.0 packaging.py ``_get_excludes``)."""
    for p in patterns:
        RuntimeEnv(working_dir="scripts/x", excludes=[p])  # each is one trainkit reads
    with warnings.catch_warnings():
        # Ray 2.60.0 reads them as "gitwildmatch", which this pathspec deprecates.
        warnings.simplefilter("ignore", DeprecationWarning)
        spec = PathSpec.from_lines("gitwildmatch", patterns)
    for path in files:
        parts = path.split("/")
        ours = any(
            excluded("/".join(parts[:i]), i < len(parts), patterns)
            for i in range(1, len(parts) + 1)
        )
        assert ours is spec.match_file(path), (path, patterns)


# -- an incremental synth --------------------------------------------------------------------

DELTA_PLATFORM = """\
from trainkit import ArgoCD, Capacity, Cluster, Queue, Team

argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")
east = Cluster(name="east", server="https://east.example.com", gpus_per_node=8,
               operators=["kuberay", "training-operator"])
q = Queue(name="q", capability=Capacity(gpu=64))
a = Team(name="a", queues=["q"])
"""

DELTA_JOB = """\
from trainkit import RayJob, Resources, RuntimeEnv

job = RayJob(
    name={name!r},
    image="rayproject/ray:2.60.0",
    command=["python", "run.py"],
    head=Resources(cpu=2, memory="8Gi"),
    runtime_env=RuntimeEnv(working_dir="scripts/{name}"),
)
"""


def delta_tree(tmp_path: Path) -> Path:
    """Two RayJobs shipping their own working_dir, synthesized once (the record to reuse)."""
    from test_synth_delta import outcome, write

    root = tmp_path / "repo"
    write(root, "jobs/platform/platform.py", DELTA_PLATFORM)
    for name in ("r0", "r1"):
        write(root, f"jobs/a/{name}.py", DELTA_JOB.format(name=name))
        write(root, f"jobs/a/scripts/{name}/run.py", f"print({name!r})\n")
        write(root, f"jobs/a/scripts/{name}/lib/util.py", "X = 1\n")
    assert outcome(root, incremental=True)[0] == "ok"
    return root


@pytest.mark.parametrize("change", ["edit", "add", "remove"])
def test_an_incremental_synth_follows_the_working_dir_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    from test_caches import count_runs
    from test_synth_delta import full, outcome, write

    root = delta_tree(tmp_path)
    if change == "edit":
        write(root, "jobs/a/scripts/r1/lib/util.py", "X = 2\n")
    elif change == "add":
        write(root, "jobs/a/scripts/r1/lib/more.py", "Y = 1\n")
    else:
        (root / "jobs/a/scripts/r1/lib/util.py").unlink()
    runs = count_runs(monkeypatch)
    kind, files, reused = outcome(root, incremental=True)
    ran = [f for call in runs for group in call for f in group]
    assert (kind, files) == full(root, tmp_path / "full")
    assert isinstance(files, dict)
    (cm,) = [p for p in files if "r1-workdir-" in p]
    assert (b"Y = 1" in files[cm]) is (change == "add")
    assert (b"X = 2" in files[cm]) is (change == "edit")
    if change == "edit":
        # A shipped file is the job's own: only its job is planned again, nothing is run.
        assert reused > 0
        assert ran == []


def test_a_file_added_to_a_skipped_rayjobs_working_dir_is_shipped(tmp_path: Path) -> None:
    """r0.py changed, and r1's working_dir gained a file: the record does not know it (no
    file's dependency yet) and no loaded job ships it (``Skipped.unexplained``), so r1.py,
    though unchanged, is not skipped: its ConfigMap ships the file, as a full synth's does."""
    from test_synth_delta import full, outcome, write

    root = delta_tree(tmp_path)
    write(root, "jobs/a/r0.py", DELTA_JOB.format(name="r0").replace('"run.py"', '"run.py", "-v"'))
    write(root, "jobs/a/scripts/r1/lib/more.py", "Y = 1\n")
    kind, files, reused = outcome(root, incremental=True)
    assert isinstance(files, dict)
    (cm,) = [p for p in files if "r1-workdir-" in p]
    assert b"Y = 1" in files[cm]
    assert (kind, files) == full(root, tmp_path / "full")
    assert reused == 0


def test_ray_zips_exactly_the_shipped_files_from_the_configmap_volume(tmp_path: Path) -> None:
    """The submitter's volume laid out as the kubelet writes a ConfigMap with ``items``
    (pkg/volume/util/atomic_writer.go: the files in a ``..<timestamp>`` directory, ``..data``
    linking to it, each top-level entry linking through ``..data``), packed by Ray's own
    ``create_package`` (what ``ray job submit`` uploads) with the rendered ``excludes``."""
    from zipfile import ZipFile

    from ray._private.runtime_env.packaging import create_package

    body, _ = render(job(), None, None, FILES, **KUBERAY)
    env = yaml.safe_load(body["spec"]["runtimeEnvYAML"])
    (volume, _tmp) = body["spec"]["submitterPodTemplate"]["spec"]["volumes"]
    mount = tmp_path / "working_dir"
    stamp = mount / "..2026_11_26_12_00_00.000000001"
    for item in volume["configMap"]["items"]:
        path = stamp / item["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FILES[item["path"]])
    (mount / "..data").symlink_to(stamp.name)
    for top in sorted({i["path"].split("/")[0] for i in volume["configMap"]["items"]}):
        (mount / top).symlink_to(f"..data/{top}")
    package = tmp_path / "pkg.zip"
    create_package(str(mount), package, include_gitignore=True, excludes=env["excludes"])
    with ZipFile(package) as z:
        shipped = {n: z.read(n).decode() for n in z.namelist() if not n.endswith("/")}
    assert shipped == FILES
