"""Trainer v2.3 runtimes whose ML policy is ``flux``: the policy, what the Flux plugin does to
the pods, the limits its entrypoint sets, and conformance with the CRDs.

Read from kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/flux/flux.go (EnforceMLPolicy,
Build, generateFluxEntrypoint, getOriginalCommand, Validate), its templates/entrypoint.sh and
init.sh, pkg/constants/constants.go (Flux*), plugins/plainml/plainml.go (the node count and
env on a flux runtime). Cases from flux_test.go: "flux mutations are applied correctly" (the
init container, volumes and mounts), TestGetOriginalCommand ("full command and args"),
TestGenerateHostlist, and TestValidate's numProcPerNode >= 1.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import policy_problems
from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    ClusterTrainingRuntime,
    FlavorQuota,
    ModelError,
    Policy,
    Queue,
    ResourceFlavor,
    Resources,
    RuntimeFlux,
    RuntimeMPI,
    Script,
    Team,
    TrainJob,
    Volume,
)
from trainkit.errors import DefinitionError, RehearsalError
from trainkit.load import Definition
from trainkit.model.trainer_flux import (
    flux_command_problem,
    flux_hostlist,
    flux_original_command,
)
from trainkit.policy import check_policy
from trainkit.rehearse.definitions import targets_for
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups
from trainkit.synth.layout import _cluster_objects, rendered_runtimes
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"
VIEW = "registry.example.com/hpc/flux-view-ubuntu:tag-jammy"


def platform(
    flux: RuntimeFlux | None = None, scheduler: str = "volcano", **rt: Any
) -> list[Definition]:
    fields: dict[str, Any] = {
        "name": "rt",
        "image": "registry.example.com/hpc/app:1",
        "flux": flux or RuntimeFlux(view_image=VIEW),
        "nodes": 2,
        "resources": Resources(cpu=8, memory="32Gi"),
    }
    runtime = ClusterTrainingRuntime(**(fields | rt))
    cluster: dict[str, Any] = {"name": "c", "server": "https://c", "gpus_per_node": 8}
    queues: list[Definition] = [
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform")
    ]
    if scheduler == "kueue":
        cluster |= {"scheduler": "kueue", "operators": ["trainer"]}
        quota = Capacity(cpu=64, memory="512Gi", gpu=16)
        queues = [
            Definition(ResourceFlavor(name="f", node_labels={"pool": "f"}), P, "platform"),
            Definition(
                ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]),
                P,
                "platform",
            ),
        ]
    return [
        Definition(Cluster(**cluster), P, "platform"),
        *queues,
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(runtime, P, "platform"),
    ]


def trainjob(**kw: Any) -> TrainJob:
    fields: dict[str, Any] = {"name": "tj", "run": 1, "runtime": "rt"}
    fields.setdefault("script", Script.file("work.py"))
    return TrainJob(**(fields | kw))


def job_def(j: TrainJob) -> Definition:
    return Definition(j, "jobs/t/j.py", "t", line=3, files={"work.py": "x"} if j.script else {})


def rendered(defs: list[Definition]) -> tuple[dict[str, dict[str, Any]], Any]:
    plan = build_plan(defs)
    (cp,) = plan.clusters
    bodies = {r.body["kind"]: r.body for r in _cluster_objects(cp) if r.body["kind"] != "ConfigMap"}
    (ej,) = effective_jobs(render_groups(plan))
    return bodies, ej


def problems_of(defs: list[Definition]) -> list[Any]:
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    return list(e.value.problems)


def test_the_runtime_selects_the_flux_plugin() -> None:
    bodies, _ = rendered(
        [*platform(RuntimeFlux(view_image=VIEW, procs_per_node=4)), job_def(trainjob())]
    )
    rt = bodies["ClusterTrainingRuntime"]
    assert rt["spec"]["mlPolicy"] == {"numNodes": 2, "flux": {"numProcPerNode": 4}}
    assert rt["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "flux"
    (rjob,) = rt["spec"]["template"]["spec"]["replicatedJobs"]
    assert rjob["name"] == "node"  # flux.go acts on the pod set named "node" only
    (node,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
    # flux.go brokerSettingsFromEnvironment reads the view image from the trainer container.
    assert {"name": "FLUX_VIEW_IMAGE", "value": VIEW} in node["env"]
    assert "ports" not in node  # nothing listens on Trainer's 29500 there


def test_the_trainjob_always_says_its_nodes() -> None:
    # flux.go generateFluxEntrypoint and generateInitEntrypoint dereference
    # spec.trainer.numNodes: a TrainJob without it panics the controller's reconcile.
    bodies, ej = rendered([*platform(), job_def(trainjob())])
    trainer = bodies["TrainJob"]["spec"]["trainer"]
    assert trainer["numNodes"] == 2
    assert trainer["command"] == ["python3", "/workspace/work.py"]
    assert "numProcPerNode" not in trainer  # the runtime's numProcPerNode stands
    (node,) = ej.pod_sets
    assert node.count == 2


def test_the_plugin_wraps_the_command_and_adds_its_installer() -> None:
    # flux_test.go "flux mutations are applied correctly": the flux-installer init container,
    # the five volumes and the node container's mounts; getOriginalCommand joins command and
    # args, EnforceMLPolicy replaces them with the entrypoint.
    _, ej = rendered([*platform(), job_def(trainjob(args=["--shards", "64"], nodes=3))])
    (node,) = ej.pod_sets
    assert node.main["command"] == [
        "/bin/bash",
        "/etc/flux-config/entrypoint.sh",
        "python3 /workspace/work.py --shards 64",
    ]
    assert "args" not in node.main
    (installer,) = node.added_init_containers
    assert installer["name"] == "flux-installer"
    assert installer["image"] == VIEW
    assert installer["command"] == ["/bin/bash", "/etc/flux-config/init.sh"]
    mounts = {m["mountPath"]: m for m in node.main["volumeMounts"]}
    assert {p: m["name"] for p, m in mounts.items() if p != "/workspace/work.py"} == {
        "/mnt/flux": "flux-install",
        "/opt/software": "spack-install",
        "/etc/flux-config": "tj-r1-flux-entrypoint",
        "/curve": "flux-curve",
        "/dev/shm": "shared-memory",
    }
    assert mounts["/dev/shm"]["readOnly"] is True
    volumes = {v["name"]: v for v in node.spec["volumes"]}
    assert volumes["shared-memory"]["emptyDir"] == {"medium": "Memory"}
    assert volumes["flux-curve"]["secret"] == {"secretName": "tj-r1-flux-curve", "defaultMode": 256}
    assert volumes["tj-r1-flux-entrypoint"]["configMap"]["name"] == "tj-r1-flux-entrypoint"
    assert (ej.procs_per_node, ej.world_size) == ("1", 3)
    assert any("flux run -N 3 -n 3 python3 /workspace/work.py --shards 64" in n for n in ej.notes)


def test_tasks_and_gpus_as_the_entrypoint_asks_for_them() -> None:
    # generateFluxEntrypoint: -N nodes -n tasks*nodes, and -g GPUs per node when the node
    # has GPUs (resourcesPerNode, else the runtime's).
    _, ej = rendered(
        [
            *platform(RuntimeFlux(view_image=VIEW, procs_per_node=8)),
            job_def(trainjob(procs_per_node=16)),
        ]
    )
    assert (ej.procs_per_node, ej.world_size) == ("16", 32)
    assert any("flux run -N 2 -n 32 python3" in n for n in ej.notes)
    _, ej = rendered(
        [*platform(resources=Resources(cpu=8, memory="32Gi", gpu=8)), job_def(trainjob())]
    )
    assert any("flux run -N 2 -n 2 -g 8 python3" in n for n in ej.notes)


def test_the_hostlist_and_the_command_string_match_the_plugin_s_tests() -> None:
    # TestGenerateHostlist, TestGetOriginalCommand "full command and args".
    assert flux_hostlist("lammps-job", 1) == "lammps-job-node-0-[0]"
    assert flux_hostlist("flux-cluster", 4) == "flux-cluster-node-0-[0-3]"
    assert (
        flux_original_command(["python"], ["train.py", "--epochs", "10"])
        == "python train.py --epochs 10"
    )


def test_the_gang_and_the_kueue_pod_sets_count_the_nodes() -> None:
    # The plugin adds no pod: Volcano's PodGroup and Kueue's pod set count numNodes pods
    # (plainml.go sets the trainer pod set's count from spec.trainer.numNodes).
    _, ej = rendered([*platform(), job_def(trainjob(nodes=3))])
    assert ej.gang is not None and ej.gang.min_member == 3
    _, ej = rendered([*platform(scheduler="kueue"), job_def(trainjob(nodes=3))])
    assert [(p.name, p.count) for p in ej.workload.pod_sets] == [("node", 3)]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: ClusterTrainingRuntime(
                name="r", image="i:1", flux=RuntimeFlux(view_image=VIEW), mpi=RuntimeMPI()
            ),
            "flux= and mpi= are two ML policies; Trainer takes one",
        ),
        (
            lambda: ClusterTrainingRuntime(
                name="r", image="i:1", flux=RuntimeFlux(view_image=VIEW), framework="jax"
            ),
            "framework='jax' and flux= are two ML policies; Trainer takes one",
        ),
        (
            lambda: ClusterTrainingRuntime(
                name="r", image="i:1", flux=RuntimeFlux(view_image=VIEW), shm_size="8Gi"
            ),
            "Trainer's Flux plugin mounts its own /dev/shm over it",
        ),
        (
            lambda: ClusterTrainingRuntime(
                name="r",
                image="i:1",
                flux=RuntimeFlux(view_image=VIEW, procs_per_node=2),
                resources=Resources(cpu=8, memory="8Gi", gpu=4),
            ),
            "asks for every GPU of a node for each task (flux run -g 4)",
        ),
        (
            lambda: RuntimeFlux(view_image=VIEW, procs_per_node=0),
            "procs_per_node: must be at least 1",
        ),
        (
            lambda: RuntimeFlux(view_image=VIEW, network_device="eth0; rm"),
            "network_device",
        ),
        (
            lambda: trainjob(env={"FLUX_VIEW_IMAGE": "x:1"}),
            "FLUX_VIEW_IMAGE may not be set: Kubeflow Trainer's Flux plugin reads it",
        ),
        (
            lambda: ClusterTrainingRuntime(
                name="r", image="i:1", env={"FLUX_NETWORK_DEVICE": "ib0"}
            ),
            "FLUX_NETWORK_DEVICE may not be set: Kubeflow Trainer's Flux plugin reads it",
        ),
    ],
)
def test_bad_definitions_are_refused_with_the_reason(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


@pytest.mark.parametrize(
    ("job", "field", "says"),
    [
        (
            trainjob(script=None),
            "command",
            "Trainer's Flux plugin runs the job's command under flux run; without script= or "
            "command= (or the runtime's command=) its entrypoint starts a Flux instance that "
            "never ends",
        ),
        (
            trainjob(args=["--name", "two words"]),
            "args",
            "'two words' would become 2 words",
        ),
        (
            trainjob(args=["--glob", "data/*.csv"]),
            "args",
            "'data/*.csv' would be expanded as a file pattern",
        ),
        (
            trainjob(script=None, command=["python3", ""]),
            "command",
            "an empty word would vanish",
        ),
        (
            trainjob(procs_per_node=2, resources=Resources(cpu=8, memory="8Gi", gpu=2)),
            "procs_per_node",
            "asks for every GPU of a node for each task (flux run -g 2)",
        ),
        (
            trainjob(volumes=[Volume(claim="data", path="/opt/software")]),
            "volumes",
            "mount path '/opt/software' is where Trainer's Flux plugin mounts spack-install",
        ),
        (
            trainjob(volumes=[Volume(claim="flux-install", path="/mnt/data")]),
            "volumes",
            "claim 'flux-install' has the name of a volume Trainer's Flux plugin adds",
        ),
    ],
)
def test_bad_trainjobs_on_a_flux_runtime_are_refused(job: TrainJob, field: str, says: str) -> None:
    (p,) = problems_of([*platform(), job_def(job)])
    assert p.field == field
    assert says in p.message
    assert "runtime 'rt' is a flux runtime" in p.message


def test_the_view_image_must_come_from_an_allowed_registry() -> None:
    defs = [
        *platform(RuntimeFlux(view_image="ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy")),
        Definition(Policy(registries=["registry.example.com/"]), P, "platform"),
        job_def(trainjob()),
    ]
    found = policy_problems(defs)
    messages = [p.message for p in found]
    assert any(
        "image 'ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy' is not from an allowed "
        "registry" in m
        for m in messages
    )


def test_the_runtime_and_the_trainjob_are_valid_against_the_crds() -> None:
    crdset = shared_crd_set()
    plan = build_plan(
        [
            *platform(RuntimeFlux(view_image=VIEW, procs_per_node=2, network_device="ib0")),
            job_def(trainjob(nodes=3, procs_per_node=4, args=["--x", "1"])),
        ]
    )
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []


def test_a_trainjob_on_a_flux_runtime_is_not_rehearsed_yet() -> None:
    with pytest.raises(RehearsalError) as e:
        targets_for(job_def(trainjob()), platform())
    assert "runtime 'rt' is a flux runtime; rehearsing TrainJobs on it is not available" in str(
        e.value
    )


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


words = st.text(alphabet="abcdefgh-=./ *?[", min_size=0, max_size=6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tasks=st.integers(1, 4),
    job_tasks=st.none() | st.integers(1, 4),
    gpu=st.integers(0, 2),
    nodes=st.none() | st.integers(1, 6),
    args=st.lists(words, max_size=3),
    kueue=st.booleans(),
)
def test_an_accepted_flux_trainjob_is_valid_and_counted_as_the_plugin_runs_it(
    crdset: Any,
    tasks: int,
    job_tasks: int | None,
    gpu: int,
    nodes: int | None,
    args: list[str],
    kueue: bool,
) -> None:
    """Anything the plan accepts validates against the CRDs and runs nodes × tasks tasks;
    anything it refuses is refused for one of the plugin's reasons."""
    flux = RuntimeFlux(view_image=VIEW, procs_per_node=tasks if not gpu else 1)
    job = trainjob(
        procs_per_node=job_tasks,
        nodes=nodes,
        args=args,
        resources=Resources(cpu=4, memory="8Gi", gpu=gpu),
    )
    defs = [*platform(flux, scheduler="kueue" if kueue else "volcano"), job_def(job)]
    try:
        plan = build_plan(defs)
    except DefinitionError as e:
        fields = {p.field for p in e.problems}
        assert fields <= {"args", "procs_per_node"}
        assert ("args" in fields) == (flux_command_problem(args) is not None)
        assert ("procs_per_node" in fields) == (gpu > 0 and (job_tasks or 1) > 1)
        return
    (cp,) = plan.clusters
    for r in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == []
    (ej,) = effective_jobs(render_groups(plan))
    count = nodes or 2
    each = job_tasks or flux.procs_per_node
    assert ej.world_size == count * each
    (node,) = ej.pod_sets
    assert node.count == count
    assert node.main["command"][2] == flux_original_command(["python3", "/workspace/work.py"], args)
    if kueue:
        assert ej.workload is not None and ej.workload.pods == count
    else:
        assert ej.gang is not None and ej.gang.min_member == count


DEFAULT_VIEW = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"


def test_a_runtime_may_leave_the_view_image_to_each_trainjob() -> None:
    # Trainer v2.3.0 examples/flux/flux-runtime.yaml names no view image; its TrainJobs
    # (lammps-train-job.yaml) set FLUX_VIEW_IMAGE in spec.trainer.env, which flux.go
    # brokerSettingsFromEnvironment reads after the runtime's node container.
    rocky = "registry.example.com/hpc/flux-view-rocky:tag-9"
    bodies, ej = rendered([*platform(RuntimeFlux()), job_def(trainjob(flux_view_image=rocky))])
    (rjob,) = bodies["ClusterTrainingRuntime"]["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
    assert "env" not in node
    trainer = bodies["TrainJob"]["spec"]["trainer"]
    assert {"name": "FLUX_VIEW_IMAGE", "value": rocky} in trainer["env"]
    (pods,) = ej.pod_sets
    (installer,) = pods.added_init_containers
    assert installer["image"] == rocky
    # Over the runtime's own, too.
    _, ej = rendered([*platform(), job_def(trainjob(flux_view_image=rocky))])
    assert ej.pod_sets[0].added_init_containers[0]["image"] == rocky
    # Neither: Trainer's default (pkg/constants/constants.go FluxInstallerImage).
    _, ej = rendered([*platform(RuntimeFlux()), job_def(trainjob())])
    assert ej.pod_sets[0].added_init_containers[0]["image"] == DEFAULT_VIEW


def test_a_trainjob_s_view_image_is_per_cluster_and_checked_like_its_image() -> None:
    defs = [
        *platform(RuntimeFlux()),
        Definition(Policy(registries=["registry.example.com/", "ghcr.io/"]), P, "platform"),
        job_def(trainjob(flux_view_image="docker.io/someone/flux-view:1")),
    ]
    plan = build_plan(defs)
    groups = render_groups(plan)
    found = check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    (p,) = [p for p in found if p.field == "flux_view_image"]
    assert "image 'docker.io/someone/flux-view:1' is not from an allowed registry" in p.message
    # With an image of its own too: reported once, at its field.
    defs[-1] = job_def(
        trainjob(image=VIEW.replace("flux-view", "app"), flux_view_image="docker.io/x/v:1")
    )
    found = policy_problems(defs)
    assert [(p.field, "'docker.io/x/v:1' is not from" in p.message) for p in found] == [
        ("flux_view_image", True)
    ]
    # A key for another cluster only: none for this one.
    found = problems_of(
        [*platform(RuntimeFlux()), job_def(trainjob(flux_view_image={"other": VIEW}))]
    )
    assert sorted((p.field, p.message.split(";")[0]) for p in found) == [
        ("flux_view_image", "no flux_view_image for cluster 'c' (it declares no accelerator)"),
        ("flux_view_image.other", "flux_view_image key 'other' is neither a cluster nor an "
         "accelerator"),
    ]  # fmt: skip


def test_the_default_view_image_must_be_allowed_where_the_runtime_names_none() -> None:
    defs = [
        *platform(RuntimeFlux()),
        Definition(Policy(registries=["registry.example.com/"]), P, "platform"),
        job_def(trainjob()),
    ]
    found = policy_problems(defs)
    (p,) = [p for p in found if p.field == "flux.view_image"]
    assert f"image {DEFAULT_VIEW!r} is not from an allowed registry" in p.message


def test_a_view_image_on_another_runtime_is_refused() -> None:
    runtime = ClusterTrainingRuntime(name="torch", image="registry.example.com/t:1")
    defs = [*platform(), Definition(runtime, P, "platform")]
    (p,) = problems_of([*defs, job_def(trainjob(runtime="torch", flux_view_image=VIEW))])
    assert p.field == "flux_view_image"
    assert p.message.endswith(
        "runtime 'torch' is a torch runtime, not a flux one: nothing installs Flux from a view "
        "image there; drop flux_view_image, or name a flux runtime"
    )


def test_flux_view_image_in_env_points_to_the_field() -> None:
    with pytest.raises(ModelError) as e:
        trainjob(env={"FLUX_VIEW_IMAGE": VIEW})
    assert "set flux_view_image= on the TrainJob, or RuntimeFlux(view_image=...)" in str(e.value)
