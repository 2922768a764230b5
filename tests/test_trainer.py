"""Trainer v2.3: runtimes and TrainJobs from definition to manifest."""

from __future__ import annotations

import pytest
import yaml

from conftest import TRAINJOB
from trainkit import ClusterTrainingRuntime, DefinitionError, Resources, TrainJob
from trainkit.load import load_jobs
from trainkit.resolve import build_plan
from trainkit.synth import check_cluster_truth, render_groups, synthesize


def problems(ws) -> list[str]:
    with pytest.raises(DefinitionError) as exc:
        plan = build_plan(load_jobs(ws.jobs, ws.root).definitions)
        check_cluster_truth(plan, render_groups(plan))
    return [str(p) for p in exc.value.problems]


def docs(ws, rel: str) -> dict:
    return yaml.safe_load((ws.out / rel).read_text())


def test_trainjob_renders_what_the_controller_expects(tw):
    synthesize(tw.jobs, tw.out)
    tj = docs(tw, "clusters/east/vision/trainjob-tj-r1.yaml")
    assert tj["metadata"]["name"] == "tj-r1"
    assert tj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "0"
    spec = tj["spec"]
    assert spec["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "torch",
    }
    # Only what the job says: the runtime's image and resources stay in the runtime.
    assert spec["trainer"] == {
        "command": ["torchrun", "/workspace/train.py"],
        "args": ["--epochs", "1"],
        "numNodes": 2,
    }
    (patch,) = spec["runtimePatches"]
    assert patch["manager"] == "trainkit.dev/synth"
    template = patch["trainingRuntimeSpec"]["template"]
    assert template["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "research"}
    (node,) = template["spec"]["replicatedJobs"]
    assert node["name"] == "node"
    pod = node["template"]["spec"]["template"]["spec"]
    # Each script file read-only in the image's own (writable) working directory.
    assert pod["containers"] == [
        {
            "name": "node",
            "volumeMounts": [
                {
                    "mountPath": "/workspace/train.py",
                    "name": "script",
                    "readOnly": True,
                    "subPath": "train.py",
                }
            ],
        }
    ]
    (volume,) = pod["volumes"]
    cm = volume["configMap"]["name"]
    assert (tw.out / f"clusters/east/vision/configmap-{cm}.yaml").is_file()


def test_runtime_renders_the_trainer_job_with_gang_scheduling(tw):
    synthesize(tw.jobs, tw.out)
    rt = docs(tw, "clusters/east/platform/runtimes/torch.yaml")
    assert "namespace" not in rt["metadata"]
    assert rt["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    assert rt["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-10"
    spec = rt["spec"]
    assert spec["mlPolicy"] == {"numNodes": 1, "torch": {}}
    assert spec["podGroupPolicy"] == {"volcano": {}}
    (job,) = spec["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    assert job["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
    }
    pod = job["template"]["spec"]["template"]["spec"]
    assert pod["schedulerName"] == "volcano"
    (node,) = pod["containers"]
    assert node["name"] == "node"
    assert node["resources"]["limits"] == {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}
    assert node["env"] == [{"name": "NCCL_DEBUG", "value": "WARN"}]
    assert {"mountPath": "/dev/shm", "name": "dshm"} in node["volumeMounts"]
    # Without Volcano there is no PodGroup and no scheduler name.
    plain = docs(tw, "clusters/plain/platform/runtimes/torch.yaml")["spec"]
    assert "podGroupPolicy" not in plain
    assert "schedulerName" not in str(plain)


def test_training_runtime_lives_in_the_team_namespace(tw):
    synthesize(tw.jobs, tw.out)
    rt = docs(tw, "clusters/west/platform/vision/trainingruntime-own.yaml")
    assert rt["kind"] == "TrainingRuntime"
    assert rt["metadata"]["namespace"] == "vision"
    assert rt["spec"]["mlPolicy"]["numNodes"] == 3


def test_team_runtime_wins_over_cluster_runtime_of_the_same_name(tw):
    tw.write(
        "jobs/platform/more.py",
        "from trainkit import TrainingRuntime\n"
        "t = TrainingRuntime(name='torch', team='vision', image='registry.example.com/x:1')\n",
    )
    plan = build_plan(load_jobs(tw.jobs, tw.root).definitions)
    (east,) = [cp for cp in plan.clusters if cp.cluster.name == "east"]
    (tj,) = [j for j in east.jobs if j.kind == "TrainJob"]
    assert tj.runtime is not None and tj.runtime.kind == "TrainingRuntime"


def test_resources_and_procs_become_numprocpernode(tw):
    tw.write(
        "jobs/vision/tj.py",
        TRAINJOB.replace(
            "nodes=2,", "nodes=2, resources=Resources(cpu=4, memory='8Gi', gpu=1),"
        ).replace("import Script", "import Resources, Script"),
    )
    synthesize(tw.jobs, tw.out)
    trainer = docs(tw, "clusters/east/vision/trainjob-tj-r1.yaml")["spec"]["trainer"]
    assert trainer["numProcPerNode"] == 1
    assert trainer["resourcesPerNode"]["requests"]["nvidia.com/gpu"] == "1"


def test_effective_values_come_from_the_runtime(tw):
    plan = build_plan(load_jobs(tw.jobs, tw.root).definitions)
    (east,) = [cp for cp in plan.clusters if cp.cluster.name == "east"]
    (tj,) = [j for j in east.jobs if j.kind == "TrainJob"]
    assert (tj.nodes, tj.trainer_procs(), tj.object_name) == (2, 2, "tj-r1")
    assert tj.resources is not None
    assert tj.resources.model_dump() == Resources(cpu=8, memory="32Gi", gpu=2).model_dump()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ('runtime="torch"', 'runtime="torhc"'),
            "jobs/vision/tj.py:5: TrainJob 'tj': runtime: unknown runtime 'torhc' on cluster "
            "'east'; runtimes there: ClusterTrainingRuntime 'torch', TrainingRuntime 'own' "
            "(team 'vision') (declare runtimes in jobs/platform/)",
        ),
        (
            ('clusters=["east"]', 'clusters=["west"]'),
            "TrainJob 'tj': runtime: runtime 'torch' does not exist on cluster 'west' (only on "
            "'east', 'plain'); add the cluster to the runtime's clusters or choose other clusters",
        ),
        (
            ("nodes=2,", "nodes=2, resources=Resources(cpu=1, memory='1Gi', gpu=16),"),
            "TrainJob 'tj': resources.gpu: 16 exceeds the 8 GPUs per node of cluster 'east'",
        ),
        (
            ("nodes=2,", "nodes=2, procs_per_node=6,"),
            "TrainJob 'tj': procs_per_node: 6 processes per node but only 2 GPUs",
        ),
        (
            ('name="tj"', 'name="t' + "x" * 51 + '"'),
            "would exceed 63 characters; shorten the name by 1 characters",
        ),
    ],
)
def test_bad_trainjob_references(tw, edit, expected):
    old, new = edit
    text = TRAINJOB.replace(old, new).replace("import Script", "import Resources, Script")
    tw.write("jobs/vision/tj.py", text)
    found = problems(tw)
    assert any(expected in p for p in found), found


def test_another_teams_training_runtime_is_refused(tw):
    tw.write(
        "jobs/platform/other.py",
        "from trainkit import Team, TrainingRuntime\n"
        "nlp = Team(name='nlp', queues=['research'])\n"
        "x = TrainingRuntime(name='theirs', team='nlp', image='registry.example.com/x:1')\n",
    )
    tw.write("jobs/vision/tj.py", TRAINJOB.replace('runtime="torch"', 'runtime="theirs"'))
    (p,) = problems(tw)
    assert "TrainingRuntime 'theirs' (team 'nlp') belongs to another team" in p


def test_runtime_names_repeat_only_on_disjoint_clusters(tw):
    tw.write(
        "jobs/platform/zz_more.py",
        "from trainkit import ClusterTrainingRuntime\n"
        "again = ClusterTrainingRuntime(name='torch', image='registry.example.com/r:1',\n"
        "                               clusters=['west', 'east'])\n",
    )
    (p,) = problems(tw)
    assert p.startswith("jobs/platform/zz_more.py:2: ClusterTrainingRuntime 'torch': name: ")
    assert "already defined for cluster 'east' at jobs/platform/runtimes.py:3" in p


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env": {"PET_NNODES": "2"}}, "PET_NNODES may not be set: Kubeflow Trainer's torch"),
        ({"env": {"WORLD_SIZE": "2"}}, "WORLD_SIZE may not be set: torchrun sets it"),
        ({"nodes": 0}, "must be at least 1"),
        ({"procs_per_node": 0}, "must be at least 1"),
        ({"run": 0}, "must be at least 1"),
        ({"command": []}, "command is empty"),
        ({"name": "Bad_Name"}, "name"),
    ],
)
def test_trainjob_model_refuses(kwargs, message):
    base = {"name": "tj", "runtime": "torch", "command": ["python", "x.py"]}
    with pytest.raises(DefinitionError) as exc:
        TrainJob(**{**base, **kwargs})
    assert any(message in str(p) for p in exc.value.problems), exc.value.problems


def test_runtime_model_refuses_reserved_env():
    with pytest.raises(DefinitionError, match="PET_MASTER_PORT may not be set"):
        ClusterTrainingRuntime(name="t", image="i:1", env={"PET_MASTER_PORT": "1"})


def test_rendered_trainer_objects_round_trip_through_the_sdk_models(tw):
    """kubeflow-trainer-api mirrors the v2.3 API and drops fields it does not know: a
    rendered object that survives the round trip unchanged uses only v2.3 fields."""
    from kubeflow_trainer_api.models.trainer_v1alpha1_cluster_training_runtime import (
        TrainerV1alpha1ClusterTrainingRuntime,
    )
    from kubeflow_trainer_api.models.trainer_v1alpha1_train_job import TrainerV1alpha1TrainJob
    from kubeflow_trainer_api.models.trainer_v1alpha1_training_runtime import (
        TrainerV1alpha1TrainingRuntime,
    )

    models = {
        "TrainJob": TrainerV1alpha1TrainJob,
        "ClusterTrainingRuntime": TrainerV1alpha1ClusterTrainingRuntime,
        "TrainingRuntime": TrainerV1alpha1TrainingRuntime,
    }
    synthesize(tw.jobs, tw.out)
    seen = set()
    for path in sorted(tw.out.rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        model = models.get(doc.get("kind"))
        if model is None:
            continue
        seen.add(doc["kind"])
        assert model.from_dict(doc).to_dict() == doc, path
    assert seen == set(models)


def test_another_teams_runtime_on_another_cluster_is_named_as_such(ws):
    job = ws.jobs / "vision/resnet50_trainjob.py"
    job.write_text(job.read_text().replace('runtime="torch-2-5"', 'runtime="fsdp-a800"'))
    found = problems(ws)
    assert found == [
        "jobs/vision/resnet50_trainjob.py:8: TrainJob 'resnet50': runtime: TrainingRuntime "
        "'fsdp-a800' (team 'llm') belongs to another team; a TrainJob may use its own team's "
        "TrainingRuntimes and every ClusterTrainingRuntime"
    ]


@pytest.mark.parametrize(
    ("cpu", "cpu_request", "procs"),
    [("4", "2", 2), ("4", "1500m", 2), ("500m", None, 1), ("2", "500m", 1), ("3", None, 3)],
)
def test_auto_processes_without_gpus_follow_the_cpu_request(cpu, cpu_request, procs):
    # Trainer's "auto" without GPUs is getNumCPUPerNode: the CPU request, else the limit,
    # Quantity.Value() rounding up (trainer v2.3.0 pkg/runtime/framework/plugins/torch/torch.go).
    from trainkit import Capacity, Cluster, Policy, Queue, Script, Team
    from trainkit.effective import effective_job
    from trainkit.load import Definition
    from trainkit.synth.layout import _cluster_objects

    p = "jobs/platform/p.py"
    res = Resources(cpu=cpu, memory="4Gi", **({"cpu_request": cpu_request} if cpu_request else {}))
    defs = [
        Definition(Policy(burstable=True), p, "platform"),
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8), p, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=8)), p, "platform"),
        Definition(Team(name="t", queues=["q"]), p, "platform"),
        Definition(ClusterTrainingRuntime(name="rt", image="img:1"), p, "platform"),
        Definition(
            TrainJob(name="tj", runtime="rt", script=Script.file("t.py"), nodes=2, resources=res),
            "jobs/t/j.py",
            "t",
            files={"t.py": "x"},
        ),
    ]
    (cp,) = build_plan(defs).clusters
    objs = {r.body["kind"]: r.body for r in _cluster_objects(cp)}
    assert objs["TrainJob"]["spec"]["trainer"]["numProcPerNode"] == procs
    ej = effective_job(cp.jobs[0], objs["TrainJob"], objs["ClusterTrainingRuntime"])
    assert (ej.procs_per_node, ej.world_size) == (str(procs), 2 * procs)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("init_containers", [], "a TrainJob cannot add a container: Trainer v2.3's runtime "
         "patches only change the env, mounts and security context of containers the runtime "
         "has, and its webhook refuses any other"),
        ("readiness_probe", None, "a TrainJob cannot set this on its container"),
        ("liveness_probe", None, "a TrainJob cannot set this on its container"),
        ("startup_probe", None, "a TrainJob cannot set this on its container"),
        ("ports", {"metrics": 9090}, "a TrainJob cannot set this on its container"),
        ("pre_stop", None, "a TrainJob cannot set this on its container"),
        ("post_start", None, "a TrainJob cannot set this on its container"),
        ("host_aliases", {}, "a TrainJob cannot set this: Trainer v2.3's runtime patches have "
         "no hostAliases"),
    ],
)  # fmt: skip
def test_container_settings_a_runtime_patch_cannot_carry_are_refused(field, value, says):
    # trainer v2.3.0 trainjob_types.go ContainerPatch (name, env, volumeMounts,
    # securityContext) and plugins/jobset/jobset.go Validate (no container the runtime lacks).
    with pytest.raises(DefinitionError) as exc:
        TrainJob(name="tj", runtime="torch", command=["true"], **{field: value})
    message = str(exc.value)
    assert f"TrainJob 'tj': {field}: {says}" in message, message
    assert "use a PyTorchJob, which takes it" in message
    if field != "host_aliases":  # the runtime takes the rest (test_trainer_runtime_containers)
        assert "ClusterTrainingRuntime or TrainingRuntime, which the platform owns" in message
