"""Generated manifests are what the cluster accepts: CRD schemas (unknown fields are
errors), CEL rules, names, labels, quantities. Property test: anything the models
accept renders to manifests that validate."""

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    PyTorchJob,
    Queue,
    Resources,
    Script,
    Team,
    Toleration,
    TrainingRuntime,
    TrainJob,
    Volume,
)
from trainkit.effective import effective_job
from trainkit.injected_env import refused_env_reason
from trainkit.kube.text import YAML_UNPRINTABLE, text_value_problem
from trainkit.load import PLATFORM_DIR, Definition, load_jobs
from trainkit.render.training_operator import nproc_per_node
from trainkit.resolve import build_plan
from trainkit.synth import synthesize
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_paths, validate_text
from trainkit.validate.pod_security import PodAllowance
from validate_fixtures import shared_crd_set

REPO = Path(__file__).resolve().parents[1]
# Any UTF-8 text the models accept: no NUL (no container runtime can pass it to a process)
# and nothing kustomize cannot write back (DEL, C1, NEL/LS/PS).
env_values = st.text(st.characters(codec="utf-8"), max_size=8).filter(
    lambda v: text_value_problem(v) is None
)


@pytest.fixture(scope="module")
def crdset():
    return shared_crd_set()


def test_examples_validate_against_the_upstream_crds(crdset, _examples_generated):
    # The examples' generated/ as synth writes it (the session's, conftest; only read here).
    # As `trainkit check` judges them: with what the examples' network profiles grant (the
    # ib-multus profile mounts the nodes' /dev/infiniband). The platform declares every
    # profile (Plan.network_profiles): only its definitions need to run.
    plan = build_plan(load_jobs(REPO / "jobs", REPO, only={PLATFORM_DIR}).definitions)
    assert plan.network_profiles
    allowance = PodAllowance.from_profiles(plan.network_profiles)
    out = _examples_generated
    problems = validate_paths([out], crdset, root=out.parent, allowance=allowance)
    assert problems == []
    files = [p.read_bytes() for p in out.rglob("*.yaml")]
    # libyaml's parser: the same documents as PyYAML's own, for a fraction of its CPU.
    kinds = {yaml.load(d, Loader=yaml.CSafeLoader)["kind"] for d in files if b"\nkind: " in d}
    assert {"PyTorchJob", "Queue", "Application", "AppProject"} <= kinds


def test_bare_repository_validates(bare, crdset):
    synthesize(bare.jobs, bare.out)
    assert validate_paths([bare.out], crdset, root=bare.root) == []


def test_a_misspelt_field_is_reported_with_its_path(bare, crdset):
    synthesize(bare.jobs, bare.out)
    path = bare.out / "clusters/east/vision/pytorchjob-ddp.yaml"
    path.write_text(path.read_text().replace("minAvailable", "minAvailible"))
    (problem,) = validate_paths([path], crdset, root=bare.root)
    assert problem.field == "spec.runPolicy.schedulingPolicy.minAvailible"
    assert "unknown field" in problem.message


def test_check_command_validates_and_builds(bare, bare_cli, crds):
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err
    assert "valid against the CRDs" in run.out and "6 kustomize builds" in run.out


def test_check_fails_on_a_hand_edited_manifest(bare, bare_cli, crds):
    assert bare_cli("synth").code == 0
    path = bare.out / "clusters/east/platform/queues/research.yaml"
    path.write_text(path.read_text().replace("weight: 1", "weight: 0"))
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 1
    assert "clusters/east/platform/queues/research.yaml: is out of date" in run.err


def test_validate_command_formats(bare, bare_cli, crds):
    assert bare_cli("synth").code == 0
    assert bare_cli("validate", "--crds", str(crds)).code == 0
    path = bare.out / "clusters/west/vision/pytorchjob-ddp.yaml"
    path.write_text(path.read_text().replace("replicas: 1", "replicas: one", 1))
    run = bare_cli("validate", "--crds", str(crds), "--format", "json")
    assert run.code == 1
    (row,) = yaml.safe_load(run.out)
    assert row["file"] == "generated/clusters/west/vision/pytorchjob-ddp.yaml"
    assert row["field"] == "spec.pytorchReplicaSpecs.Master.replicas"


def test_missing_crds_directory_is_an_error_not_a_skip(bare_cli, monkeypatch):
    monkeypatch.setenv("TRAINKIT_CRDS", "/nonexistent/crds")
    assert bare_cli("synth").code == 0
    run = bare_cli("check")
    assert run.code == 1
    assert "/nonexistent/crds: TRAINKIT_CRDS: no such directory or file" in run.err


# --- property: whatever the models accept renders to valid manifests -------------------

names = st.from_regex(r"[a-z][a-z0-9]{0,10}(-[a-z0-9]{1,5})?", fullmatch=True)
quantities = st.one_of(st.integers(1, 512).map(str), st.sampled_from(["500m", "1.5", "64"]))
memory = st.sampled_from(["1Gi", "512Mi", "2Ti", "64Gi", "100M"])


@st.composite
def jobs(draw):
    gpu = draw(st.integers(0, 8))
    script = draw(st.booleans())
    return PyTorchJob(
        name=draw(names),
        image=draw(st.sampled_from(["img:1", "registry.example.com/a/b@sha256:" + "0" * 64])),
        script=Script.file("train.py") if script else None,
        command=None
        if script
        else draw(st.lists(st.text("abc -", min_size=1), min_size=1, max_size=3)),
        args=draw(st.lists(env_values, max_size=3)),
        env=draw(
            st.dictionaries(
                st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True).filter(
                    lambda k: refused_env_reason(k, "PyTorchJob") is None
                ),
                env_values,
                max_size=3,
            )
        ),
        nodes=draw(st.integers(1, 64)),
        procs_per_node=draw(st.none() | st.just("auto") | st.integers(1, max(gpu, 1))),
        resources=Resources(cpu=draw(quantities), memory=draw(memory), gpu=gpu),
        shm_size=draw(st.none() | memory),
        volumes=draw(
            st.lists(
                st.builds(
                    Volume,
                    claim=names,
                    path=st.sampled_from(["/mnt/a", "/mnt/b", "/data"]),
                    read_only=st.booleans(),
                ),
                max_size=2,
                unique_by=(lambda v: v.path, lambda v: v.claim),
            )
        ),
        node_selector=draw(
            st.dictionaries(st.sampled_from(["gpu", "zone", "example.com/pool"]), names, max_size=2)
        ),
        tolerations=draw(
            st.lists(
                st.builds(
                    Toleration,
                    key=st.sampled_from(["gpu", "spot"]),
                    operator=st.just("Exists"),
                    effect=st.sampled_from([None, "NoSchedule"]),
                ),
                max_size=2,
            )
        ),
        restart_policy=draw(st.sampled_from(["OnFailure", "Never", "ExitCode"])),
        backoff_limit=draw(st.integers(0, 10)),
        clean_pods=draw(st.sampled_from(["Running", "All", "None"])),
        run=draw(st.none() | st.integers(1, 9999)),
        deadline_seconds=draw(st.none() | st.integers(1, 10**7)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    job=jobs(),
    volcano=st.booleans(),
    # What the loader accepts in a script (see load/rebuild.py).
    script=st.text(max_size=50).filter(
        lambda t: not YAML_UNPRINTABLE.search(t) and text_value_problem(t) is None
    ),
)
def test_anything_the_models_accept_renders_valid_manifests(crdset, job, volcano, script):
    cluster = Cluster(
        name="c",
        server="https://c",
        gpus_per_node=8,
        gpu_resource="amd.com/gpu",
        scheduler="volcano" if volcano else "default",
        tolerations=[Toleration(operator="Exists")],
    )
    defs = [
        Definition(cluster, "jobs/platform/p.py", "platform"),
        Definition(
            Queue(name="q", capability=Capacity(gpu=8, cpu=8)), "jobs/platform/p.py", "platform"
        ),
        Definition(Team(name="t", queues=["q"]), "jobs/platform/p.py", "platform"),
        Definition(job, "jobs/t/j.py", "t", files={"train.py": script} if job.script else {}),
    ]
    (cp,) = build_plan(defs).clusters
    for rendered in _cluster_objects(cp):
        text = yaml.dump(rendered.body, Dumper=yaml.CSafeDumper)  # safe_dump, in C
        assert validate_text(text, rendered.path, crdset) == [], rendered.body
    (rendered,) = [r for r in _cluster_objects(cp) if r.body["kind"] == "PyTorchJob"]
    pj = rendered.body
    specs = pj["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1
    assert specs.get("Worker", {"replicas": 0})["replicas"] == job.nodes - 1
    assert pj["spec"].get("nprocPerNode") == nproc_per_node(job)
    # What the operator tells each pod: WORLD_SIZE = nodes × a numeric nprocPerNode, else nodes.
    ej = effective_job(cp.jobs[0], pj)
    nproc = pj["spec"].get("nprocPerNode", "auto")
    expected = job.nodes * (int(nproc) if nproc.isdigit() else 1)
    for ps in ej.pod_sets:
        env = {e.name: e.value for e in ps.env}
        assert env["WORLD_SIZE"] == str(expected)
        assert env["RANK"] == str(ps.first_rank)


env_names = st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: (
        not k.startswith("PET_")
        and k not in {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}
    )
)
resources = st.builds(Resources, cpu=quantities, memory=memory, gpu=st.integers(0, 8))


@st.composite
def runtimes(draw, name: str):
    kind = draw(st.sampled_from([ClusterTrainingRuntime, TrainingRuntime]))
    extra = {"team": "t"} if kind is TrainingRuntime else {}
    return kind(
        name=name,
        image=draw(st.sampled_from(["img:1", "registry.example.com/a/b:2"])),
        nodes=draw(st.integers(1, 16)),
        resources=draw(st.none() | resources),
        shm_size=draw(st.none() | memory),
        env=draw(st.dictionaries(env_names, env_values, max_size=2)),
        queue=draw(st.none() | st.just("q")),
        **extra,
    )


@st.composite
def trainjobs(draw, runtime: str):
    script = draw(st.booleans())
    res = draw(st.none() | resources)
    gpu = res.gpu if res else 0
    return TrainJob(
        name=draw(names),
        run=draw(st.integers(1, 99)),
        runtime=runtime,
        image=draw(st.none() | st.just("img:3")),
        script=Script.file("train.py") if script else None,
        command=None if script else draw(st.none() | st.just(["python", "-m", "x"])),
        args=draw(st.lists(env_values, max_size=3)),
        env=draw(st.dictionaries(env_names, env_values, max_size=3)),
        nodes=draw(st.none() | st.integers(1, 32)),
        procs_per_node=draw(st.none() | st.integers(1, max(gpu, 1))),
        resources=res,
        volumes=draw(
            st.lists(
                st.builds(Volume, claim=names, path=st.sampled_from(["/mnt/a", "/data"])),
                max_size=2,
                unique_by=(lambda v: v.path, lambda v: v.claim),
            )
        ),
        deadline_seconds=draw(st.none() | st.integers(1, 10**7)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runtime=runtimes("rt"),
    job=trainjobs("rt"),
    volcano=st.booleans(),
)
def test_any_accepted_trainjob_and_runtime_render_valid_manifests(crdset, runtime, job, volcano):
    cluster = Cluster(
        name="c",
        server="https://c",
        gpus_per_node=8,
        scheduler="volcano" if volcano else "default",
    )
    p = "jobs/platform/p.py"
    defs = [
        Definition(cluster, p, "platform"),
        Definition(Queue(name="q"), p, "platform"),
        Definition(Team(name="t", queues=["q"]), p, "platform"),
        Definition(runtime, p, "platform"),
        Definition(job, "jobs/t/j.py", "t", files={"train.py": "print(1)"} if job.script else {}),
    ]
    (cp,) = build_plan(defs).clusters
    kinds = set()
    for rendered in _cluster_objects(cp):
        kinds.add(rendered.body["kind"])
        text = yaml.dump(rendered.body, Dumper=yaml.CSafeDumper)  # safe_dump, in C
        assert validate_text(text, rendered.path, crdset) == [], rendered.body
    assert {"TrainJob", type(runtime).__name__} <= kinds


def test_a_warm_check_builds_only_the_applications_whose_files_changed(
    bare, bare_cli, crds, monkeypatch
):
    import trainkit.validate.tree as tree

    monkeypatch.delenv("CI", raising=False)  # caches on, as on a developer's machine
    started: list[str] = []

    class Spy(tree.Build):
        def __init__(self, directory, *args):
            started.append(directory.as_posix().split("generated/", 1)[1])
            super().__init__(directory, *args)

    monkeypatch.setattr(tree, "Build", Spy)
    assert bare_cli("synth").code == 0
    assert bare_cli("check", "--crds", str(crds)).code == 0
    assert sorted(started) == [
        "argocd",
        "clusters/east/platform",
        "clusters/east/vision",
        "clusters/plain/platform",
        "clusters/west/platform",
        "clusters/west/vision",
    ]
    started.clear()
    job = bare.root / "jobs/vision/ddp.py"
    job.write_text(
        job.read_text().replace("    nodes=2,", '    args=["--lr", "0.1"],\n    nodes=2,')
    )
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err
    assert "6 kustomize builds" in run.out
    # The job is on east and west: only its two Applications' builds run again.
    assert sorted(started) == ["clusters/east/vision", "clusters/west/vision"]
