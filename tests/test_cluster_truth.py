"""What the controllers do with what trainkit writes: each defect found by reading their
source has a test here, run through the effective-pod model or the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import Workspace
from trainkit import DefinitionError, SetupError
from trainkit.load import load_jobs
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups, synthesize


def synth(ws: Workspace, **kw: object) -> dict[str, bytes]:
    return synthesize(ws.jobs, ws.out, root=ws.root, use_cache=False, **kw).files  # type: ignore[arg-type]


def problems(ws: Workspace, **kw: object) -> list[str]:
    with pytest.raises(DefinitionError) as exc:
        synth(ws, **kw)
    return [str(p) for p in exc.value.problems]


def effective(ws: Workspace):  # type: ignore[no-untyped-def]
    plan = build_plan(load_jobs(ws.jobs, ws.root).definitions)
    return {(ej.name, ej.planned.cluster.name): ej for ej in effective_jobs(render_groups(plan))}


def body(files: dict[str, bytes], path: str) -> dict[str, object]:
    data = yaml.safe_load(files[path])
    assert isinstance(data, dict)
    return data


TJ_CPU_ONLY = """\
from trainkit import Resources, Script, TrainJob

tj = TrainJob(
    name="tj",
    runtime="torch",
    script=Script.file("scripts/train.py"),
    resources=Resources(cpu=4, memory="8Gi"),
    clusters=["east"],
)
"""


# --- GPU caps: count from the pods Trainer creates ------------------------------------


def test_a_trainjob_asking_for_no_gpus_writes_zero_and_gets_none(tw: Workspace) -> None:
    tw.write("jobs/vision/tj.py", TJ_CPU_ONLY)
    files = synth(tw)
    spec = body(files, "clusters/east/vision/trainjob-tj-r1.yaml")["spec"]
    assert spec["trainer"]["resourcesPerNode"]["limits"] == {  # type: ignore[index]
        "cpu": "4",
        "memory": "8Gi",
        "nvidia.com/gpu": "0",
    }
    (ej,) = [ej for (name, _), ej in effective(tw).items() if name == "tj-r1"]
    assert ej.gpus() == 0


def test_a_trainjob_without_resources_counts_its_runtimes_gpus(tw: Workspace) -> None:
    tw.write(
        "jobs/platform/policy.py", "from trainkit import Policy\np = Policy(max_gpus_per_job=2)\n"
    )
    found = problems(tw)
    assert (
        "jobs/vision/tj.py:3: TrainJob 'tj': resources.gpu: 4 GPUs (2 nodes × 2, from the runtime) "
        "exceed the per-job cap of 2" in "\n".join(found)
    ), found


# --- Queues: a gang that can never be admitted, jobs in parent queues -------------------


def test_a_gang_larger_than_its_queue_is_refused(bare: Workspace) -> None:
    (bare.jobs / "vision/ddp.py").write_text(
        (bare.jobs / "vision/ddp.py").read_text().replace("nodes=2", "nodes=5")
    )
    found = problems(bare)
    assert any(
        p.startswith(
            "jobs/vision/ddp.py:7: PyTorchJob 'ddp': nodes: the gang of 5 pods needs "
            "20 nvidia.com/gpu on cluster 'east', but queue 'research' can hold at most "
            "16 nvidia.com/gpu (Queue.capability in jobs/platform/platform.py)"
        )
        for p in found
    ), found


def test_an_ancestors_capability_bounds_the_gang(bare: Workspace) -> None:
    bare.write(
        "jobs/platform/tree.py",
        "from trainkit import Capacity, Queue\n"
        "org = Queue(name='org', capability=Capacity(gpu=4), deserved=Capacity(gpu=4))\n"
        "leaf = Queue(name='leaf', parent='org', deserved=Capacity(gpu=4))\n",
    )
    text = (bare.jobs / "platform/platform.py").read_text()
    (bare.jobs / "platform/platform.py").write_text(
        text.replace('queues=["research"]', 'queues=["leaf"]')
    )
    found = problems(bare)
    assert any(
        "queue 'org' (an ancestor of 'leaf') can hold at most 4 nvidia.com/gpu" in p for p in found
    ), found


def test_jobs_may_not_use_a_parent_queue_and_hierarchies_need_deserved(bare: Workspace) -> None:
    bare.write(
        "jobs/platform/tree.py",
        "from trainkit import Queue\nkid = Queue(name='kid', parent='research')\n",
    )
    found = problems(bare)
    assert any(
        "Team 'vision': queues[0]: queue 'research' is the parent of 'kid'; Volcano runs jobs "
        "only in leaf queues" in p
        for p in found
    ), found
    assert any(
        "Queue 'kid': deserved: a queue in a hierarchy is scheduled by Volcano's capacity plugin"
        in p
        for p in found
    )


# --- Namespaces ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "team",
    [
        "Team(name='kube-system')",
        "Team(name='x', namespace='default')",
        "Team(name='x', namespace='volcano-system')",
    ],
)
def test_system_namespaces_are_refused(bare: Workspace, team: str) -> None:
    bare.write("jobs/platform/teams.py", f"from trainkit import Team\nt = {team}\n")
    with pytest.raises(DefinitionError, match="belongs to Kubernetes or an operator"):
        load_jobs(bare.jobs, bare.root)


# --- Deployed jobs: never changed in place, kept across upgrades, baseline in CI --------


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        text=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@x",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@x",
            "PATH": "/usr/bin:/bin",
        },
    ).stdout


def deployed(ws: Workspace) -> None:
    """Synthesize, commit, and make that commit what Argo CD deploys (origin/main)."""
    synth(ws, against="disk")
    git(ws.root, "init", "-q", "-b", "main")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "deployed")
    git(ws.root, "update-ref", "refs/remotes/origin/main", "HEAD")


def test_an_edited_pytorchjob_is_refused_in_place_and_runs_again_with_run(bare: Workspace) -> None:
    deployed(bare)
    job = bare.jobs / "vision/ddp.py"
    job.write_text(job.read_text().replace("nodes=2,", "nodes=2,\n    args=['--lr', '0.1'],"))
    found = problems(bare)
    assert found[0].startswith(
        "jobs/vision/ddp.py:3: PyTorchJob 'ddp': run: PyTorchJob 'ddp' on clusters 'east', "
        "'west' is deployed from origin/main"
    )
    assert len(found) == 1  # one message for the job, not one per cluster
    assert "set run=1 to start the edited job as ddp-r1 (Argo CD prunes 'ddp')" in found[0]
    job.write_text(job.read_text().replace("nodes=2,", "nodes=2,\n    run=1,"))
    files = synth(bare)
    assert "clusters/east/vision/pytorchjob-ddp-r1.yaml" in files
    assert "clusters/east/vision/pytorchjob-ddp.yaml" not in files


def test_an_unchanged_job_keeps_its_deployed_bytes_when_trainkit_renders_it_differently(
    tw: Workspace,
) -> None:
    deployed(tw)
    path = "clusters/east/vision/trainjob-tj-r1.yaml"
    # What an older trainkit wrote for the same definition: same hash, other bytes.
    older = (tw.out / path).read_text().replace("  trainer:\n", "  trainer:\n    numNodes: 2\n", 1)
    (tw.out / path).write_text(older)
    git(tw.root, "commit", "-qam", "older rendering")
    git(tw.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    files = synth(tw)
    assert files[path].decode() == older


def test_ci_requires_the_deployed_baseline(bare: Workspace) -> None:
    synth(bare, against="disk")
    git(bare.root, "init", "-q", "-b", "main")
    git(bare.root, "add", "-A")
    git(bare.root, "commit", "-q", "-m", "x")
    # No origin/main: a developer's clone compares with main, CI must not.
    synth(bare)
    with pytest.raises(SetupError, match=r"what Argo CD deploys \(origin/main\) is needed"):
        synth(bare, require_baseline=True)


def test_ci_env_turns_the_requirement_on(bare: Workspace, bare_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CI", "true")
    run = bare_cli("synth")
    assert run.code == 1
    assert "what Argo CD deploys (origin/main) is needed" in run.err
    assert "fetch-depth: 0" in run.err


# --- Retries, the working directory, images, world size ----------------------------------


def test_pytorchjobs_retry_finitely_clean_up_and_mount_scripts_file_by_file(
    bare: Workspace,
) -> None:
    files = synth(bare)
    spec = body(files, "clusters/east/vision/pytorchjob-ddp.yaml")["spec"]
    assert spec["runPolicy"]["backoffLimit"] == 3  # type: ignore[index]
    assert spec["runPolicy"]["cleanPodPolicy"] == "Running"  # type: ignore[index]
    master = spec["pytorchReplicaSpecs"]["Master"]["template"]["spec"]  # type: ignore[index]
    (container,) = master["containers"]
    assert container["workingDir"] == "/workspace"
    assert {
        "mountPath": "/workspace/train.py",
        "name": "script",
        "readOnly": True,
        "subPath": "train.py",
    } in container["volumeMounts"]
    assert all(m["mountPath"] != "/workspace" for m in container["volumeMounts"])


def test_always_is_refused(bare: Workspace) -> None:
    job = bare.jobs / "vision/ddp.py"
    job.write_text(job.read_text().replace("nodes=2,", "nodes=2,\n    restart_policy='Always',"))
    with pytest.raises(DefinitionError, match="'Always' restarts the Master even after it exits 0"):
        load_jobs(bare.jobs, bare.root)


def test_an_image_built_for_another_accelerator_is_refused(bare: Workspace) -> None:
    platform = bare.jobs / "platform/platform.py"
    platform.write_text(
        platform.read_text().replace(
            'gpu_resource="amd.com/gpu",', 'gpu_resource="amd.com/gpu", accelerator="rocm",'
        )
    )
    job = bare.jobs / "vision/ddp.py"
    job.write_text(
        job.read_text().replace(
            '"registry.example.com/pytorch:2"', '"registry.example.com/pytorch:2-cuda12"'
        )
    )
    found = problems(bare)
    assert any(
        "image: image 'registry.example.com/pytorch:2-cuda12' is built for cuda but cluster "
        "'west' runs rocm" in p
        for p in found
    ), found
    job.write_text(
        job.read_text().replace(
            '"registry.example.com/pytorch:2-cuda12"',
            '{"east": "registry.example.com/pytorch:2-cuda12", "rocm": "registry.example.com/pytorch:2-rocm6"}',
        )
    )
    files = synth(bare)
    west = body(files, "clusters/west/vision/pytorchjob-ddp.yaml")
    assert "2-rocm6" in json.dumps(west)


def test_a_command_job_keeps_the_operators_auto_and_explain_says_world_size(
    bare: Workspace, bare_cli
) -> None:  # type: ignore[no-untyped-def]
    job = bare.jobs / "vision/ddp.py"
    job.write_text(
        job.read_text().replace(
            'script=Script.file("scripts/train.py"),',
            'command=["accelerate", "launch", "train.py"],',
        )
    )
    files = synth(bare)
    assert "nprocPerNode" not in body(files, "clusters/east/vision/pytorchjob-ddp.yaml")["spec"]  # type: ignore[operator]
    run = bare_cli("explain", "ddp", "--cluster", "east", "--format", "json")
    assert run.code == 0, run.err
    (doc,) = json.loads(run.out)["jobs"]
    assert doc["world_size_env"] == "2"
    env = {e["name"]: e["value"] for e in doc["pods"][0]["env"]}
    assert env["WORLD_SIZE"] == "2" and env["PET_NPROC_PER_NODE"] == "auto"


# --- Names the controllers derive -----------------------------------------------------------


def test_a_pytorchjob_and_a_trainjob_may_not_share_a_podgroup(tw: Workspace) -> None:
    job = tw.jobs / "vision/ddp.py"
    job.write_text(
        job.read_text()
        .replace('name="ddp",', 'name="tj-r1",')
        .replace('"west"]', '"west"], queue="research"')
    )
    found = problems(tw)
    assert any("both would own Volcano PodGroup 'tj-r1'" in p for p in found), found


def test_a_claim_named_like_a_generated_volume_is_refused(bare: Workspace) -> None:
    job = bare.jobs / "vision/ddp.py"
    job.write_text(
        job.read_text()
        .replace("from trainkit import", "from trainkit import Volume,")
        .replace("nodes=2,", "nodes=2,\n    volumes=[Volume(claim='dshm', path='/mnt/x')],")
    )
    with pytest.raises(
        DefinitionError, match="claim 'dshm' has the name of a volume trainkit generates"
    ):
        load_jobs(bare.jobs, bare.root)


# --- Trainer details -------------------------------------------------------------------------


def test_a_trainjob_that_sets_nothing_still_writes_spec_trainer(tw: Workspace) -> None:
    tw.write(
        "jobs/vision/tj.py",
        "from trainkit import TrainJob\ntj = TrainJob(name='tj', runtime='torch', clusters=['east'])\n",
    )
    files = synth(tw)
    assert body(files, "clusters/east/vision/trainjob-tj-r1.yaml")["spec"]["trainer"] == {}  # type: ignore[index]
    (ej,) = [ej for (name, _), ej in effective(tw).items() if name == "tj-r1"]
    assert {e.name for e in ej.pod_sets[0].env} >= {"PET_NNODES", "PET_NPROC_PER_NODE"}


def test_gpu_names_without_gpu_get_an_explicit_process_count(tw: Workspace) -> None:
    platform = tw.jobs / "platform/platform.py"
    platform.write_text(
        platform.read_text().replace(
            "gpus_per_node=8)",
            'gpus_per_node=8,\n                gpu_resource="nvidia.com/mig-1g.10gb")',
        )
    )
    files = synth(tw)
    trainer = body(files, "clusters/east/vision/trainjob-tj-r1.yaml")["spec"]["trainer"]  # type: ignore[index]
    assert trainer["numProcPerNode"] == 2  # type: ignore[index]


def test_a_runtime_named_like_kubeflows_own_is_a_warning(tw: Workspace, bare_cli) -> None:  # type: ignore[no-untyped-def]
    runtimes = tw.jobs / "platform/runtimes.py"
    runtimes.write_text(runtimes.read_text().replace('name="torch",', 'name="torch-distributed",'))
    tj = tw.jobs / "vision/tj.py"
    tj.write_text(tj.read_text().replace('runtime="torch"', 'runtime="torch-distributed"'))
    run = bare_cli("synth")
    assert run.code == 0, run.err
    assert (
        "warning: jobs/platform/runtimes.py:4: ClusterTrainingRuntime 'torch-distributed': name: "
        "Kubeflow Trainer's install ships a ClusterTrainingRuntime named 'torch-distributed'"
    ) in run.err


# --- explain -----------------------------------------------------------------------------------


def test_explain_prints_the_pods_of_each_cluster(tw: Workspace, bare_cli) -> None:  # type: ignore[no-untyped-def]
    run = bare_cli("explain", "tj")
    assert run.code == 0, run.err
    assert run.out.startswith(
        "TrainJob tj-r1 on cluster east, namespace vision (jobs/vision/tj.py:3)\n"
    )
    assert "  PodGroup tj-r1 in queue research: 2 pods at once, requesting" in run.out
    assert "env        NCCL_DEBUG         = WARN  (runtime 'torch')" in run.out
    assert "PET_NODE_RANK      = 0  (Kubeflow Trainer, the pod's completion index)" in run.out


def test_explain_names_what_exists_when_the_job_does_not(tw: Workspace, bare_cli) -> None:  # type: ignore[no-untyped-def]
    run = bare_cli("explain", "nope")
    assert run.code == 1
    assert "no job 'nope'; jobs: PyTorchJob/ddp, TrainJob/tj" in run.err
    run = bare_cli("explain", "tj", "--cluster", "west")
    assert run.code == 1
    assert "'tj' does not run on cluster 'west'; it runs on 'east'" in run.err
