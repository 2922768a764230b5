"""A runtime's own command, names with dots and the whole workspace volume: what Trainer
v2.3.0's torchtune runtimes say (manifests/base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml:
``torchtune-llama3.2-1b``, ``tune run …`` as the node's command, ``initializer`` mounted at
``/workspace``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from trainkit import (
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    Initializer,
    ModelError,
    Queue,
    Resources,
    RuntimeFlux,
    RuntimeInitializers,
    RuntimeMPI,
    Script,
    Team,
    TrainJob,
)
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"
TUNE = ["tune", "run", "--rdzv_endpoint=localhost:29500", "full_finetune_distributed",
        "--config", "llama3_2/1B_full", "output_dir=/workspace/output"]  # fmt: skip


def runtime(**kw: Any) -> ClusterTrainingRuntime:
    fields: dict[str, Any] = {
        "name": "tune-llama3.2-1b",
        "image": "registry.example.com/tune:1",
        "framework": "torchtune",
        "resources": Resources(cpu=8, memory="64Gi", gpu=2),
        "command": TUNE,
    }
    return ClusterTrainingRuntime(**(fields | kw))


def trainjob(**kw: Any) -> TrainJob:
    return TrainJob(**({"name": "tj", "runtime": "tune-llama3.2-1b"} | kw))


def planned(rt: ClusterTrainingRuntime, tj: TrainJob) -> Any:
    defs = [
        Definition(
            Cluster(name="c", server="https://c", gpus_per_node=8, scheduler="default"),
            P,
            "platform",
        ),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(rt, P, "platform"),
        Definition(tj, "jobs/t/j.py", "t", files={"train.py": "x"} if tj.script else {}),
    ]
    return build_plan(defs)


def rendered(rt: ClusterTrainingRuntime, tj: TrainJob) -> tuple[dict[str, Any], Any]:
    plan = planned(rt, tj)
    (cp,) = plan.clusters
    bodies = {r.body["kind"]: r for r in _cluster_objects(cp) if r.body["kind"] != "ConfigMap"}
    (ej,) = effective_jobs(render_groups(plan))
    return bodies, ej


def node_of(body: dict[str, Any]) -> dict[str, Any]:
    rjobs = body["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = [j for j in rjobs if j["name"] == "node"]
    return node["template"]["spec"]["template"]["spec"]


def test_the_runtime_s_command_runs_unless_the_trainjob_gives_one() -> None:
    bodies, ej = rendered(runtime(), trainjob(args=["epochs=1"]))
    rt = bodies["ClusterTrainingRuntime"]
    # A dotted name is a valid object name (a DNS subdomain) and names its file.
    assert rt.path.endswith("platform/runtimes/tune-llama3.2-1b.yaml")
    assert rt.body["metadata"]["name"] == "tune-llama3.2-1b"
    assert bodies["TrainJob"].body["spec"]["runtimeRef"]["name"] == "tune-llama3.2-1b"
    (container,) = node_of(rt.body)["containers"]
    assert container["command"] == TUNE
    assert "command" not in bodies["TrainJob"].body["spec"]["trainer"]
    # explain: the runtime's command with the job's args (plugins/jobset/builder.go Trainer
    # sets spec.trainer's command and args on the node container when given).
    (node,) = ej.pod_sets
    assert node.main["command"] == TUNE
    assert node.main["args"] == ["epochs=1"]
    # The job's own command replaces it.
    _, ej = rendered(runtime(), trainjob(command=["python3", "-m", "x"]))
    assert ej.pod_sets[0].main["command"] == ["python3", "-m", "x"]
    _, ej = rendered(runtime(), trainjob(script=Script.file("train.py")))
    assert ej.pod_sets[0].main["command"] == ["torchrun", "/workspace/train.py"]


def test_the_whole_workspace_may_be_the_volume() -> None:
    steps = RuntimeInitializers(
        model=Initializer(image="registry.example.com/model-initializer:1", storage_uri="hf://m/m"),
        size="20Gi",
        access_mode="ReadWriteOnce",
        mount_workspace=True,
    )
    bodies, ej = rendered(runtime(initializers=steps), trainjob(script=Script.file("train.py")))
    (container,) = node_of(bodies["ClusterTrainingRuntime"].body)["containers"]
    assert container["volumeMounts"] == [{"name": "initializer", "mountPath": "/workspace"}]
    node = ej.pod_sets[-1]
    mounts = {m["mountPath"]: m["name"] for m in node.main["volumeMounts"]}
    # The script is still mounted into it, over the volume.
    assert mounts["/workspace"] == "initializer"
    assert mounts["/workspace/train.py"] == "script"
    # By default, the steps' sub-directories only.
    bodies, _ = rendered(
        runtime(initializers=steps.model_copy(update={"mount_workspace": False})), trainjob()
    )
    (container,) = node_of(bodies["ClusterTrainingRuntime"].body)["containers"]
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/workspace/model"]


def test_runtime_and_trainjob_are_valid_against_the_crds() -> None:
    crdset = shared_crd_set()
    steps = RuntimeInitializers(
        dataset=Initializer(
            image="registry.example.com/dataset-initializer:1", storage_uri="hf://d/d"
        ),
        size="20Gi",
        mount_workspace=True,
    )
    (cp,) = planned(runtime(initializers=steps), trainjob(args=["epochs=1"])).clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == [], r.body


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: runtime(name="Tune.Llama"),
            "name: 'Tune.Llama' is not a valid object name: use at most 253 lowercase letters",
        ),
        (
            lambda: runtime(name="a" * 201),
            "has 201 characters; a runtime name has at most 200 (its file under generated/ is "
            "named after it): shorten it",
        ),
        (lambda: runtime(command=[]), "command: "),
        (
            lambda: runtime(
                framework="deepspeed", mpi=RuntimeMPI(), run_as_user=1000, fs_group=1000
            ),
            "command= on an MPI runtime has no place: its nodes run sshd (mpi.sshd) and the "
            "launcher runs each TrainJob's mpirun",
        ),
        (
            lambda: runtime(
                framework="torch",
                resources=None,
                flux=RuntimeFlux(),
                command=["run", "two words"],
            ),
            "command: Trainer's Flux plugin joins the command with spaces and its entrypoint "
            "splits it again unquoted: 'two words' would become 2 words",
        ),
        (
            lambda: RuntimeInitializers(
                model=Initializer(image="i:1"), size="1Gi", mount_workspace="maybe"
            ),
            "mount_workspace: must be True or False",
        ),
        (
            lambda: trainjob(command=["tune", "run"]),
            "command ['tune', 'run'] alone is rewritten by Trainer (recipe and config picked "
            "from the runtime's name and GPUs), which trainkit cannot show or check",
        ),
        (lambda: trainjob(runtime="Bad_Name"), "runtime: 'Bad_Name' is not a valid object name"),
    ],
)
def test_bad_values_are_refused(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value), str(e.value)


def test_a_flux_trainjob_may_run_the_runtime_s_command() -> None:
    flux = runtime(framework="torch", resources=None, flux=RuntimeFlux(), command=["hostname"])
    _, ej = rendered(flux, trainjob())
    assert ej.pod_sets[0].main["command"][2] == "hostname"
    # Without one on either side, refused as before.
    with pytest.raises(DefinitionError) as e:
        planned(flux.model_copy(update={"command": None}), trainjob())
    assert "(or the runtime's command=) its entrypoint starts a Flux instance" in str(e.value)
