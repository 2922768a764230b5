"""KubeRay v1.7 RayCluster as a long-lived object: the model, its rendering, its pods, Volcano
and Kueue, autoscaling only where granted, and the edits a running cluster accepts.

The controller-expectation cases come from ray-project/kuberay v1.7.0's own tests
(ray-operator/controllers/ray/utils/validation_test.go TestValidateRayClusterSpecNames,
utils/util_test.go TestGetWorkerGroupDesiredReplicas) and kueue v0.19.2's RayCluster webhook
(pkg/controller/jobs/raycluster/raycluster_webhook.go validateCreate).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, render
from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    FlavorQuota,
    ModelError,
    RayCluster,
    ResourceFlavor,
    Resources,
    Script,
    Team,
    WorkerGroup,
)
from trainkit.deployed.immutable import in_place_changes
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

GPU = Resources(cpu=16, memory="128Gi", gpu=4)
KUBERAY = {"operators": ["kuberay"]}


def rc(**kw: Any) -> RayCluster:
    fields: dict[str, Any] = {
        "name": "pool",
        "image": "img:1",
        "head": Resources(cpu=4, memory="16Gi"),
        "workers": [WorkerGroup(name="gpu", nodes=2, resources=GPU)],
    }
    return RayCluster(**(fields | kw))


# --- bad inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"script": Script.file("train.py")},
            "a RayCluster runs no program of its own (script given): KubeRay starts Ray in each "
            "pod; submit code with a RayJob that names the cluster",
        ),
        ({"command": ["python", "x.py"]}, "a RayCluster runs no program of its own (command"),
        ({"args": ["--x"]}, "(args given)"),
        # validation_test.go TestValidateRayClusterSpecNames: more than 53 characters.
        ({"name": "a" * 54}, "KubeRay takes at most 53 for a RayCluster"),
        ({"name": "a" * 50, "run": 12}, "(with its run) is 54 characters"),
        # ... and not a DNS-1035 label.
        ({"name": "1" * 53}, "name"),
        ({"head": Resources(cpu="500m", memory="1Gi")}, "head has cpu '500m': Ray schedules"),
        (
            {
                "workers": [
                    WorkerGroup(name="a", resources=GPU),
                    WorkerGroup(name="a", resources=GPU),
                ]
            },
            "worker groups share the name 'a'",
        ),
        (
            {"workers": [WorkerGroup(nodes=3, min_nodes=1, max_nodes=4, resources=GPU)]},
            "worker group 'workers' autoscales (1..4) and starts with min_nodes workers, then the "
            "autoscaler sets the count; nodes=3 would not be kept: drop nodes or set it to 1",
        ),
        (
            {
                "workers": [WorkerGroup(min_nodes=1, max_nodes=4, resources=GPU)],
                "service_account": "sa",
            },
            "autoscaler ServiceAccount, which would replace service_account",
        ),
        ({"env": {"RAY_ADDRESS": "x:1"}}, "RAY_ADDRESS may not be set: KubeRay sets it"),
    ],
)
def test_bad_fields_are_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        rc(**fields)
    assert says in str(e.value)


def test_a_cluster_without_kuberay_refuses_it() -> None:
    with pytest.raises(DefinitionError) as e:
        planned(rc(), operators=["trainer"])
    assert any("kuberay" in p.message for p in e.value.problems)


def test_autoscaling_needs_the_team_s_grant() -> None:
    scaled = rc(workers=[WorkerGroup(name="gpu", min_nodes=0, max_nodes=4, resources=GPU)])
    with pytest.raises(DefinitionError) as e:
        planned(scaled, **KUBERAY)
    (p,) = e.value.problems
    assert p.field == "workers[0]"
    assert (
        "worker group 'gpu' autoscales (0..4 nodes), which runs the head (and the job's code) as "
        "KubeRay's autoscaler ServiceAccount, allowed to patch the RayCluster and its pods; team "
        "'t' is not granted ray_autoscaling"
    ) in p.message
    body, _ = render(scaled, {"ray_autoscaling": True}, **KUBERAY)
    assert body["spec"]["enableInTreeAutoscaling"] is True


# --- rendering and the pods KubeRay makes ---------------------------------------------------------


def test_renders_a_raycluster_with_its_volcano_queue() -> None:
    body, pj = render(rc(), **KUBERAY)
    assert body["apiVersion"] == "ray.io/v1"
    assert body["metadata"]["name"] == "pool"
    # volcano_scheduler.go handleRayCluster reads the RayCluster's own label.
    assert body["metadata"]["labels"]["volcano.sh/queue-name"] == "q"
    (group,) = body["spec"]["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (2, 2, 2)
    assert "entrypoint" not in body["spec"]
    ej = effective_job(pj, body)
    assert [(ps.role, ps.count) for ps in ej.pod_sets] == [("Head", 1), ("gpu", 2)]
    assert ej.gang is not None
    assert (ej.gang.podgroup, ej.gang.min_member) == ("ray-pool-pg", 3)
    assert ej.gang.requests["nvidia.com/gpu"] == 8
    head_env = {e.name: e.value for e in ej.pod_sets[0].env}
    assert head_env["RAY_CLUSTER_NAME"] == "pool"
    assert head_env["RAY_USAGE_STATS_EXTRA_TAGS"] == "kuberay_version=v1.7.0;kuberay_crd=RayCluster"


def test_an_autoscaled_group_leaves_its_count_to_the_autoscaler() -> None:
    # util_test.go TestGetWorkerGroupDesiredReplicas, test 1: without replicas KubeRay starts
    # minReplicas. Git carries no count, so Argo CD's self-heal does not undo the autoscaler's.
    scaled = rc(workers=[WorkerGroup(name="gpu", min_nodes=1, max_nodes=5, resources=GPU)])
    body, pj = render(scaled, {"ray_autoscaling": True}, **KUBERAY)
    (group,) = body["spec"]["workerGroupSpecs"]
    assert "replicas" not in group
    assert (group["minReplicas"], group["maxReplicas"]) == (1, 5)
    ej = effective_job(pj, body)
    # It starts with 2 pods; quota, caps and the plan count the 5 workers the autoscaler may
    # start (utils/util.go CalculateMaxReplicas).
    assert scaled.nodes == 2
    assert [(ps.role, ps.count) for ps in ej.pod_sets] == [("Head", 1), ("gpu", 5)]
    assert any("quota, caps and the plan count its maxReplicas" in n for n in ej.notes)
    assert ej.notes[0].startswith("a long-lived Ray cluster of up to 6 Ray node(s)")


@pytest.mark.parametrize(
    ("replicas", "low", "high", "hosts", "pods"),
    [
        # util_test.go TestGetWorkerGroupDesiredReplicas, tests 2, 3, 4 and 6.
        (3, 1, 5, 1, 3),
        (6, 1, 5, 1, 5),
        (0, 1, 5, 1, 1),
        (5, 1, 5, 4, 20),
    ],
)
def test_desired_workers_as_kuberay_counts_them(
    replicas: int, low: int, high: int, hosts: int, pods: int
) -> None:
    body, pj = render(rc(), **KUBERAY)
    (group,) = body["spec"]["workerGroupSpecs"]
    group.update(replicas=replicas, minReplicas=low, maxReplicas=high, numOfHosts=hosts)
    ej = effective_job(pj, body)
    assert ej.pod_sets[1].count == pods


# --- Kueue -------------------------------------------------------------------------------------


def _kueue(j: RayCluster, frameworks: list[str] | None = None) -> list[Definition]:
    P = "jobs/platform/p.py"
    c = Cluster(
        name="k",
        server="https://k",
        gpus_per_node=8,
        scheduler="kueue",
        operators=["kuberay"],
        kueue_frameworks=frameworks,  # type: ignore[arg-type]
    )
    quota = Capacity(cpu=64, memory="512Gi", gpu=16)
    return [
        Definition(c, P, "platform"),
        Definition(ResourceFlavor(name="f"), P, "platform"),
        Definition(
            ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]), P, "platform"
        ),
        Definition(Team(name="t", queues=["q"], ray_autoscaling=True), P, "platform"),
        Definition(j, "jobs/t/j.py", "t"),
    ]


def test_on_kueue_the_cluster_itself_is_queued_and_counted() -> None:
    (cp,) = build_plan(_kueue(rc())).clusters
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayCluster"]
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
    assert "volcano.sh/queue-name" not in body["metadata"]["labels"]
    ej = effective_job(cp.jobs[0], body)
    assert ej.workload is not None
    # raycluster/common.go BuildPodSets: "head", then one pod set per group.
    assert [(ps.name, ps.count) for ps in ej.workload.pod_sets] == [("head", 1), ("gpu", 2)]


@pytest.mark.parametrize(
    ("j", "says"),
    [
        (
            rc(workers=[WorkerGroup(name="gpu", min_nodes=1, max_nodes=3, resources=GPU)]),
            "Kueue refuses a queued RayCluster that autoscales",
        ),
        (
            rc(workers=[WorkerGroup(name="head", resources=GPU)]),
            "a worker group named 'head' clashes with Kueue's head pod set",
        ),
        (
            rc(workers=[WorkerGroup(name=f"g{i}", resources=GPU) for i in range(18)]),
            "18 worker groups; Kueue admits at most 17 (18 pod sets with the head)",
        ),
    ],
)
def test_what_kueue_refuses_of_a_raycluster(j: RayCluster, says: str) -> None:
    with pytest.raises(DefinitionError) as e:
        build_plan(_kueue(j))
    assert any(says in p.message for p in e.value.problems), e.value.problems


def test_kueue_without_the_raycluster_integration_refuses_it() -> None:
    with pytest.raises(DefinitionError) as e:
        build_plan(_kueue(rc(), ["ray.io/rayjob"]))
    assert any(
        "Kueue does not manage RayClusters here ('ray.io/raycluster' is not in" in p.message
        for p in e.value.problems
    )


# --- edits of a running cluster ----------------------------------------------------------------


def _rendered(j: RayCluster) -> dict[str, Any]:
    body, _ = render(j, {"ray_autoscaling": True}, **KUBERAY)
    return body


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        # reconcilePods scales each listed group to its desired count.
        ({"workers": [WorkerGroup(name="gpu", nodes=4, resources=GPU)]}, []),
        # A new group's pods are made; the old group is untouched.
        (
            {
                "workers": [
                    WorkerGroup(name="gpu", nodes=2, resources=GPU),
                    WorkerGroup(name="cpu", nodes=1, resources=Resources(cpu=8, memory="8Gi")),
                ]
            },
            [],
        ),
        # Templates are read once per pod (createWorkerPod): refused.
        (
            {
                "workers": [
                    WorkerGroup(
                        name="gpu", nodes=2, resources=Resources(cpu=16, memory="64Gi", gpu=4)
                    )
                ]
            },
            ["spec.workerGroupSpecs[gpu].template.spec"],
        ),
        (
            {"image": "img:2"},
            ["spec.headGroupSpec.template", "spec.workerGroupSpecs[gpu].template.spec"],
        ),
        # A group taken out keeps its pods: no loop of reconcilePods visits it.
        (
            {"workers": [WorkerGroup(name="big", nodes=2, resources=GPU)]},
            ["spec.workerGroupSpecs[gpu]"],
        ),
        (
            {
                "workers": [
                    WorkerGroup(name="gpu", nodes=2, min_nodes=2, max_nodes=4, resources=GPU)
                ]
            },
            ["spec.enableInTreeAutoscaling"],
        ),
    ],
)
def test_edits_kuberay_applies_in_place_and_those_it_does_not(
    edit: dict[str, Any], changed: list[str]
) -> None:
    assert in_place_changes(_rendered(rc()), _rendered(rc(**edit))) == changed


def test_kueue_s_suspend_is_no_edit() -> None:
    old = _rendered(rc())
    new = yaml.safe_load(yaml.safe_dump(old))
    new["spec"]["suspend"] = True
    assert in_place_changes(old, new) == []


# --- conformance -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@st.composite
def rayclusters(draw: Any) -> RayCluster:
    groups = []
    for i in range(draw(st.integers(0, 3))):
        low = draw(st.integers(0, 1))
        high = draw(st.integers(low, 5))
        scaled = low != high
        groups.append(
            WorkerGroup(
                name=f"g{i}",
                **({"min_nodes": low, "max_nodes": high} if scaled else {}),
                **({} if scaled else {"nodes": draw(st.integers(1, 4))}),
                resources=Resources(cpu=2, memory="4Gi", gpu=draw(st.integers(0, 8))),
            )
        )
    return RayCluster(
        name=draw(st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)),
        run=draw(st.none() | st.integers(1, 99)),
        image="img:1",
        head=Resources(cpu=draw(st.integers(1, 8)), memory="8Gi"),
        workers=groups,
        shm_size=draw(st.none() | st.just("8Gi")),
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(j=rayclusters(), volcano=st.booleans())
def test_anything_the_model_accepts_renders_a_valid_raycluster_kuberay_accepts(
    crdset: Any, j: RayCluster, volcano: bool
) -> None:
    (cp,) = planned(
        j, {"ray_autoscaling": True}, scheduler="volcano" if volcano else "default", **KUBERAY
    ).clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayCluster"]
    spec = body["spec"]
    # validation.go ValidateRayClusterSpec: containers in every group; without autoscaling,
    # min and max on each group, min ≤ max.
    assert spec["headGroupSpec"]["template"]["spec"]["containers"]
    for g in spec.get("workerGroupSpecs", []):
        assert g["template"]["spec"]["containers"]
        assert g["minReplicas"] <= g["maxReplicas"]
    ej = effective_job(cp.jobs[0], body)
    # Each group at the most it may have; the gang at what it starts with, every pod beyond
    # in at_most (utils/util.go CalculateMaxReplicas, CalculateMinReplicas).
    assert ej.nodes == 1 + sum(g.scaling[1] * g.hosts for g in j.workers)
    if volcano:
        assert ej.gang is not None and ej.gang.min_member == j.nodes
        assert ej.gang.at_most == (ej.requests() if j.autoscaled else None)
    else:
        assert ej.gang is None


# --- policy: what a long-lived cluster holds counts --------------------------------------------


def test_its_gpus_count_against_the_team_s_cap_and_the_per_job_cap() -> None:
    from trainkit import Policy
    from trainkit.policy import check_policy
    from trainkit.synth import effective_jobs, render_groups, rendered_runtimes

    big = rc(workers=[WorkerGroup(name="gpu", nodes=3, resources=GPU)])  # 12 GPUs
    plan = planned(big, {"max_gpus": 8}, Policy(max_gpus_per_job=10), **KUBERAY)
    groups = render_groups(plan)
    found = [
        p.message for p in check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    ]
    assert any("12 GPUs (gpu 3 × 4) exceed the per-job cap of 10" in m for m in found), found
    assert any("allows 8: RayCluster 'pool' 12" in m for m in found), found


def test_rehearse_refuses_a_raycluster_by_name() -> None:
    from trainkit.errors import RehearsalError
    from trainkit.rehearse.definitions import choose_job

    d = Definition(rc(), "jobs/t/j.py", "t")
    with pytest.raises(RehearsalError) as e:
        choose_job([d], None, "jobs/t/j.py")
    assert "trainkit cannot rehearse a RayCluster" in str(e.value.problems[0].message)


# --- RayJobs on a RayCluster (clusterSelector) -----------------------------------------------

from trainkit import RayJob  # noqa: E402


def on_pool(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "ev",
        "image": "img:1",
        "ray_cluster": "pool",
        "command": ["python", "-m", "ev"],
    }
    return RayJob(**(fields | kw))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"head": Resources(cpu=2, memory="4Gi")},
            "head shapes the Ray cluster's pods, which are RayCluster 'pool''s: set them there",
        ),
        (
            {"script": Script.file("x.py"), "command": None},
            "script shapes the Ray cluster's pods",
        ),
        ({"env": {"A": "1"}}, "env shapes the Ray cluster's pods"),
        (
            {"command": None},
            "a RayJob on RayCluster 'pool' needs command=[...]: the entrypoint runs on the "
            "RayCluster's head, in its image",
        ),
        (
            {"queue": "q"},
            "queue with ray_cluster: the RayJob is not queued: its RayCluster is (Kueue does not "
            "manage a RayJob on an existing cluster, and would suspend it forever)",
        ),
        ({"ttl_seconds": 60}, "ttl_seconds with ray_cluster: KubeRay never deletes a RayCluster"),
        # validation_test.go TestValidateRayJobSpec "BackoffLimit is incompatible with
        # ClusterSelector mode" and "SidecarMode doesn't support ClusterSelector".
        ({"backoff_limit": 2}, "BackoffLimit is incompatible with ClusterSelector mode"),
        ({"submission_mode": "SidecarMode"}, "ClusterSelector is not supported in SidecarMode"),
        # ... and "one of RayClusterSpec or ClusterSelector must be set".
        (
            {"ray_cluster": None},
            "a RayJob needs head=Resources(...) for the Ray cluster it starts, or "
            "ray_cluster='<name>'",
        ),
        ({"ray_cluster": "Pool"}, "ray_cluster"),
    ],
)
def test_a_rayjob_on_a_raycluster_refuses_what_is_the_cluster_s(
    fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(ModelError) as e:
        on_pool(**fields)
    assert says in str(e.value)


def _platform(scheduler: str = "kueue") -> list[Definition]:
    P = "jobs/platform/p.py"
    quota = Capacity(cpu=64, memory="512Gi", gpu=16)
    return [
        Definition(
            Cluster(
                name="k", server="https://k", gpus_per_node=8, scheduler=scheduler,  # type: ignore[arg-type]
                operators=["kuberay"],
            ),
            P,
            "platform",
        ),
        Definition(ResourceFlavor(name="f"), P, "platform"),
        Definition(
            ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]), P, "platform"
        ),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(Team(name="u", namespace="other", queues=["q"]), P, "platform"),
    ]  # fmt: skip


def test_on_kueue_the_rayjob_is_not_queued_and_its_cluster_is() -> None:
    plan = build_plan(
        [
            *_platform(),
            Definition(rc(run=2), "jobs/t/pool.py", "t"),
            Definition(on_pool(), "jobs/t/ev.py", "t"),
        ]
    )
    (cp,) = plan.clusters
    bodies = {
        r.body["kind"]: r.body for r in _cluster_objects(cp) if r.body["kind"].startswith("Ray")
    }
    job, cluster = bodies["RayJob"], bodies["RayCluster"]
    # KubeRay finds the cluster by this one key, as named in the namespace (run included).
    assert job["spec"]["clusterSelector"] == {"ray.io/cluster": "pool-r2"}
    assert cluster["metadata"]["name"] == "pool-r2"
    assert "rayClusterSpec" not in job["spec"]
    # kueue rayjob_controller.go Skip: never admitted; its webhook would suspend one with a
    # queue name, and KubeRay refuses suspend with a clusterSelector.
    assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]
    assert cluster["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
    assert job["spec"]["shutdownAfterJobFinishes"] is False
    by_kind = {pj.kind: pj for pj in cp.jobs}
    ej = effective_job(by_kind["RayJob"], job)
    assert ej.workload is None and ej.gang is None
    assert [ps.role for ps in ej.pod_sets] == ["Submitter"]
    assert effective_job(by_kind["RayCluster"], cluster).workload is not None


def test_it_runs_where_its_raycluster_does_unless_told() -> None:
    plan = build_plan(
        [
            *_platform(),
            Definition(rc(clusters=["k"]), "jobs/t/pool.py", "t"),
            Definition(on_pool(), "jobs/t/ev.py", "t"),
        ]
    )
    assert sorted((pj.kind, pj.cluster.name) for pj in plan.jobs()) == [
        ("RayCluster", "k"),
        ("RayJob", "k"),
    ]


@pytest.mark.parametrize(
    ("pool_team", "says"),
    [
        (
            "u",
            "ray_cluster 'pool': team 't' defines no RayCluster of that name on cluster 'k'; a "
            "RayCluster of that name belongs to team 'u', whose pods and quota are not this "
            "team's; KubeRay would wait for it forever. The team's RayClusters there: none: "
            "name one, or define RayCluster(name='pool', ...) on the same clusters",
        ),
        (
            None,
            "ray_cluster 'pool': team 't' defines no RayCluster of that name on cluster 'k'; "
            "KubeRay would wait for it forever. The team's RayClusters there: none: name one, "
            "or define RayCluster(name='pool', ...) on the same clusters",
        ),
    ],
)
def test_a_raycluster_of_another_team_or_none_is_refused(pool_team: str | None, says: str) -> None:
    theirs = [Definition(rc(), f"jobs/{pool_team}/pool.py", pool_team)] if pool_team else []
    with pytest.raises(DefinitionError) as e:
        build_plan(
            [*_platform(), *theirs, Definition(on_pool(clusters=["k"]), "jobs/t/ev.py", "t")]
        )
    (p,) = e.value.problems
    assert (p.file, p.field) == ("jobs/t/ev.py", "ray_cluster")
    assert p.message == says


def test_on_volcano_kuberay_refuses_it() -> None:
    with pytest.raises(DefinitionError) as e:
        build_plan(
            [
                *_platform("volcano")[:1],
                Definition(
                    __import__("trainkit").Queue(name="q", capability=Capacity(gpu=64)),
                    "jobs/platform/p.py",
                    "platform",
                ),
                Definition(Team(name="t", queues=["q"]), "jobs/platform/p.py", "platform"),
                Definition(rc(), "jobs/t/pool.py", "t"),
                Definition(on_pool(), "jobs/t/ev.py", "t"),
            ]
        )
    (p,) = e.value.problems
    assert "refuses a RayJob on an existing RayCluster and keeps it Initializing forever" in (
        p.message
    )
    assert p.field == "ray_cluster"


def test_rehearse_refuses_a_rayjob_on_a_raycluster(tmp_path: Any) -> None:
    from trainkit.errors import RehearsalError
    from trainkit.rehearse.definitions import rehearse_file

    jobs = tmp_path / "jobs"
    (jobs / "platform").mkdir(parents=True)
    (jobs / "t").mkdir()
    (jobs / "t" / "ev.py").write_text(
        "from trainkit import RayJob\n"
        "job = RayJob(name='ev', image='img:1', ray_cluster='pool', command=['python', 'x'])\n"
    )
    with pytest.raises(RehearsalError) as e:
        rehearse_file(jobs / "t" / "ev.py", root=tmp_path)
    assert (
        "trainkit cannot rehearse a job on an existing Ray cluster" in e.value.problems[0].message
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    run=st.none() | st.integers(1, 99),
    mode=st.sampled_from(["K8sJobMode", "HTTPMode"]),
    deadline=st.none() | st.integers(1, 10**6),
)
def test_a_rayjob_on_a_raycluster_is_a_valid_rayjob_kuberay_accepts(
    crdset: Any, run: int | None, mode: str, deadline: int | None
) -> None:
    plan = build_plan(
        [
            *_platform(),
            Definition(rc(run=run), "jobs/t/pool.py", "t"),
            Definition(
                on_pool(submission_mode=mode, deadline_seconds=deadline), "jobs/t/ev.py", "t"
            ),
        ]
    )
    (cp,) = plan.clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (job,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayJob"]
    spec = job["spec"]
    # validation.go ValidateRayJobSpec in clusterSelector mode: a non-empty ray.io/cluster,
    # no suspend, no SidecarMode, no retries.
    assert spec["clusterSelector"]["ray.io/cluster"]
    assert not spec.get("suspend")
    assert spec["submissionMode"] != "SidecarMode"
    assert spec["backoffLimit"] == 0


# --- Ray fields: rayStartParams, numOfHosts, entrypoint resources (issue 28) -------------------

from trainkit import RayStart  # noqa: E402

HEAD = Resources(cpu=4, memory="16Gi")


def own(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "rj",
        "image": "img:1",
        "command": ["python", "-m", "x"],
        "head": HEAD,
        "workers": [WorkerGroup(name="gpu", nodes=2, resources=GPU)],
    }
    return RayJob(**(fields | kw))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: RayStart(resources={"CPU": 2}),
            "'CPU' is Ray's own resource: give RayStart(cpus=...)",
        ),
        (lambda: RayStart(resources={"memory": 2}), "'memory' is Ray's own resource"),
        (
            lambda: RayStart(resources={"a'b": 1}),
            '"a\'b" is not a Ray resource name trainkit writes',
        ),
        (lambda: RayStart(resources={"slot": 0}), "resources.slot: must be more than 0"),
        (lambda: RayStart(cpus=-1), "cpus"),
        (
            lambda: WorkerGroup(resources=GPU, ray_start=RayStart(gpus=8)),
            "worker group 'workers' tells Ray it has 8 GPU(s) but its pod has 4: Ray would "
            "place GPU tasks where no GPU is visible",
        ),
        (
            lambda: own(head_ray_start=RayStart(gpus=1)),
            "the head tells Ray it has 1 GPU(s) but its pod has 0",
        ),
        (lambda: WorkerGroup(resources=GPU, hosts=0), "hosts"),
        (
            lambda: own(entrypoint_gpus=1, workers=[]),
            "the entrypoint reserves GPU 1, which no Ray node has (the head: CPU 4): Ray would "
            "wait for such a node for ever",
        ),
        (
            lambda: own(entrypoint_resources={"eval_slot": 1}),
            "the entrypoint reserves eval_slot 1, which no Ray node has (the head: CPU 4; "
            "worker group 'gpu': CPU 16, GPU 4)",
        ),
        (
            lambda: own(entrypoint_cpus=2, head_ray_start=RayStart(cpus=0), workers=[]),
            "the entrypoint reserves CPU 2, which no Ray node has (the head: none)",
        ),
        (
            lambda: own(ray_cluster="pool", head=None, workers=[], head_ray_start=RayStart(cpus=0)),
            "head_ray_start shapes the Ray cluster's pods",
        ),
    ],
)
def test_ray_fields_refuse_bad_values(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


def test_ray_start_params_reach_ray_start_as_kuberay_builds_it() -> None:
    j = own(
        head_ray_start=RayStart(cpus=0),
        workers=[
            WorkerGroup(
                name="gpu",
                nodes=2,
                resources=GPU,
                ray_start=RayStart(gpus=2, resources={"eval_slot": 4, "accelerator_type:A100": 1}),
            )
        ],
        entrypoint_cpus=1,
        entrypoint_gpus=1,
        entrypoint_resources={"eval_slot": 1},
    )
    body, pj = render(j, **KUBERAY)
    cluster = body["spec"]["rayClusterSpec"]
    assert cluster["headGroupSpec"]["rayStartParams"] == {"num-cpus": "0", "num-gpus": "0"}
    (group,) = cluster["workerGroupSpecs"]
    # KubeRay's own quoting of --resources (common/pod.go: '%s', getResourcesMap trims it).
    assert group["rayStartParams"] == {
        "num-gpus": "2",
        "resources": '\'{"accelerator_type:A100":1,"eval_slot":4}\'',
    }
    # common/job.go GetK8sJobCommand: --entrypoint-num-cpus, -gpus, -resources.
    assert body["spec"]["entrypointNumCpus"] == 1
    assert body["spec"]["entrypointNumGpus"] == 1
    assert body["spec"]["entrypointResources"] == '{"eval_slot":1}'
    ej = effective_job(pj, body)
    starts = [
        {e.name: e.value for e in ps.env}["KUBERAY_GEN_RAY_START_CMD"] for ps in ej.pod_sets[:2]
    ]
    assert "--num-cpus=0" in starts[0] and "--num-gpus=0" in starts[0]
    # The params given win; the CPUs still come from the limit (convertParamMap sorts them).
    assert starts[1].startswith(
        "ray start --memory=137438953472 --num-cpus=16 --num-gpus=2 "
        '--resources=\'{"accelerator_type:A100":1,"eval_slot":4}\''
    )


def test_multi_host_workers_count_every_pod() -> None:
    # util_test.go TestGetWorkerGroupDesiredReplicas test 6: replicas × numOfHosts pods.
    j = own(workers=[WorkerGroup(name="tpu", nodes=2, hosts=4, resources=GPU)])
    assert j.nodes == 1 + 8
    body, pj = render(j, scheduler="volcano", **KUBERAY)
    (group,) = body["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert (group["replicas"], group["numOfHosts"]) == (2, 4)
    ej = effective_job(pj, body)
    assert [(ps.role, ps.count) for ps in ej.pod_sets if ps.runs_ranks] == [("Head", 1), ("tpu", 8)]
    # volcano_scheduler.go calculatePodGroupParams: the head and replicas × numOfHosts.
    assert ej.gang is not None and ej.gang.min_member == 9
    assert ej.gang.requests["nvidia.com/gpu"] == 32


def test_hosts_multiply_what_the_team_s_cap_counts() -> None:
    from trainkit.policy import check_policy
    from trainkit.synth import effective_jobs, render_groups, rendered_runtimes

    j = own(workers=[WorkerGroup(name="tpu", nodes=2, hosts=4, resources=GPU)])  # 32 GPUs
    plan = planned(j, {"max_gpus": 16}, **KUBERAY)
    groups = render_groups(plan)
    found = [
        p.message for p in check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    ]
    assert any("allows 16: RayJob 'rj' 32" in m for m in found), found


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hosts=st.integers(1, 4),
    cpus=st.none() | st.integers(0, 16),
    gpus=st.none() | st.integers(0, 4),
    slots=st.dictionaries(
        st.sampled_from(["eval_slot", "a:b", "x.y/z"]), st.integers(1, 8), max_size=2
    ),
    head_cpus=st.none() | st.integers(0, 4),
)
def test_ray_fields_render_valid_rayjobs(
    crdset: Any,
    hosts: int,
    cpus: int | None,
    gpus: int | None,
    slots: dict[str, int],
    head_cpus: int | None,
) -> None:
    start = RayStart(cpus=cpus, gpus=gpus, resources=dict(slots))
    j = own(
        workers=[WorkerGroup(name="g", nodes=1, hosts=hosts, resources=GPU, ray_start=start)],
        head_ray_start=RayStart(cpus=head_cpus),
        entrypoint_resources=dict(slots),
    )
    (cp,) = planned(j, **KUBERAY).clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayJob"]
    ej = effective_job(cp.jobs[0], body)
    assert ej.nodes == j.nodes == 1 + hosts


def test_a_rayjob_on_a_raycluster_must_fit_its_entrypoint_there() -> None:
    with pytest.raises(DefinitionError) as e:
        build_plan(
            [
                *_platform(),
                Definition(rc(head_ray_start=RayStart(cpus=0)), "jobs/t/pool.py", "t"),
                Definition(on_pool(entrypoint_resources={"eval_slot": 1}), "jobs/t/ev.py", "t"),
            ]
        )
    (p,) = e.value.problems
    assert p.field == "entrypoint_resources"
    assert p.message.startswith(
        "on RayCluster 'pool' (jobs/t/pool.py): the entrypoint reserves eval_slot 1, which no "
        "Ray node has (the head: none; worker group 'gpu': CPU 16, GPU 4)"
    )
    plan = build_plan(
        [
            *_platform(),
            Definition(
                rc(head_ray_start=RayStart(resources={"eval_slot": 2})), "jobs/t/pool.py", "t"
            ),
            Definition(on_pool(entrypoint_resources={"eval_slot": 1}), "jobs/t/ev.py", "t"),
        ]
    )
    assert len(plan.jobs()) == 2


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"submitter_resources": Resources(cpu=2, memory="2Gi"), "submission_mode": "HTTPMode"},
            "submitter_resources size the submitter pod of K8sJobMode, but submission_mode is "
            "'HTTPMode', which has none",
        ),
        (
            {"submitter_resources": Resources(cpu=2, memory="2Gi", gpu=1)},
            "submitter_resources.gpu: the submitter only runs `ray job submit`",
        ),
    ],
)
def test_submitter_resources_refuse_bad_values(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        own(**fields)
    assert says in str(e.value)


def test_submitter_resources_are_counted_where_the_schedulers_count_the_submitter() -> None:
    j = own(submitter_resources=Resources(cpu=2, memory="4Gi"))
    body, pj = render(j, scheduler="volcano", **KUBERAY)
    (c,) = body["spec"]["submitterPodTemplate"]["spec"]["containers"]
    assert c["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}
    ej = effective_job(pj, body)
    # volcano_scheduler.go handleRayJob getSubmitterResource: its template's requests.
    assert ej.gang is not None
    assert ej.gang.requests["cpu"] == 4 + 2 * 16 + 2
    # kueue rayjob_controller.go PodSets: the submitter pod set from the template.
    plan = build_plan([*_platform(), Definition(j, "jobs/t/j.py", "t")])
    (cp,) = plan.clusters
    (kbody,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayJob"]
    workload = effective_job(cp.jobs[0], kbody).workload
    assert workload is not None
    (sub,) = [ps for ps in workload.pod_sets if ps.name == "submitter"]
    assert sub.requests["cpu"] == 2


# --- the gate, end to end: a deployed RayCluster ----------------------------------------------

POOL = """\
from trainkit import RayCluster, Resources, WorkerGroup

pool = RayCluster(
    name="pool",
    image="registry.example.com/ray:2",
    head=Resources(cpu=4, memory="16Gi"),
    workers=[WorkerGroup(name="gpu", nodes=2, resources=Resources(cpu=8, memory="32Gi", gpu=2))],
    clusters=["plain"],
)
"""


def test_a_deployed_raycluster_scales_in_place_and_asks_a_run_for_anything_else(
    bare: Any, bare_cli: Any
) -> None:
    platform = (bare.jobs / "platform/platform.py").read_text()
    bare.write(
        "jobs/platform/platform.py",
        platform.replace('scheduler="default")', 'scheduler="default", operators=["kuberay"])'),
    )
    bare.write("jobs/vision/pool.py", POOL)
    assert bare_cli("synth").code == 0
    # raycluster_controller.go reconcilePods scales a listed group: accepted.
    bare.write("jobs/vision/pool.py", POOL.replace("nodes=2", "nodes=3"))
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 0, r.err
    # A template KubeRay reads only when it makes a pod: refused, with the way out.
    bare.write("jobs/vision/pool.py", POOL.replace("ray:2", "ray:3"))
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 1
    assert (
        "RayCluster 'pool' on cluster 'plain' is deployed from generated/ on disk and would "
        "change in place (spec.headGroupSpec.template, spec.workerGroupSpecs[gpu].template.spec): "
        "KubeRay makes a RayCluster's pods once from its template and never updates them"
    ) in r.err
    assert "set run=1 to start the edited job as pool-r1 (Argo CD prunes 'pool')" in r.err


def test_a_topology_request_on_a_rayjob_on_a_raycluster_is_refused() -> None:
    """Kueue queues the RayCluster, never such a RayJob (kueue v0.19.2 rayjob_controller.go
    Skip): its kueue_topology would be read by nobody."""
    from trainkit import KueueTopology
    from trainkit.policy import check_policy
    from trainkit.synth import effective_jobs, render_groups, rendered_runtimes

    plan = build_plan(
        [
            *_platform(),
            Definition(rc(run=2), "jobs/t/pool.py", "t"),
            Definition(on_pool(kueue_topology=KueueTopology(level="a/rack")), "jobs/t/ev.py", "t"),
        ]
    )
    groups = render_groups(plan)
    messages = [
        p.message for p in check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    ]
    assert any(
        "kueue_topology on a RayJob that runs on RayCluster 'pool-r2': Kueue queues the "
        "RayCluster, not the RayJob" in m
        for m in messages
    ), messages


def test_a_raycluster_mounts_head_volumes_on_the_head_and_checks_them() -> None:
    from trainkit import EmptyDir

    logs = EmptyDir(name="ray-logs", path="/tmp/ray", size="10Gi")
    body, pj = render(rc(head_volumes=[logs]), **KUBERAY)
    head, workers = effective_job(pj, body).pod_sets[:2]
    assert {"name": "ray-logs", "emptyDir": {"sizeLimit": "10Gi"}} in head.spec["volumes"]
    assert "ray-logs" not in {v["name"] for v in workers.spec.get("volumes") or []}
    with pytest.raises(ModelError) as e:
        rc(volumes=[logs], head_volumes=[logs])
    assert "on the head, with the job's volumes and head_volumes: volumes mount more than once" in (
        str(e.value)
    )


# --- the gate, end to end: an autoscaled group counts at its maximum --------------------------

SCALED_POOL = """\
from trainkit import RayCluster, Resources, WorkerGroup

pool = RayCluster(
    name="pool",
    image="registry.example.com/ray:2",
    head=Resources(cpu=4, memory="16Gi"),
    workers=[
        WorkerGroup(name="cpu", nodes=1, resources=Resources(cpu=8, memory="32Gi")),
        WorkerGroup(
            name="gpu", min_nodes=1, max_nodes=MAX, resources=Resources(cpu=8, memory="32Gi", gpu=4)
        ),
    ],
    clusters=["east"],
)
"""


def _scaled_pool(bare: Any, most: int, team: str = "") -> None:
    platform = (bare.jobs / "platform/platform.py").read_text()
    platform = platform.replace("gpus_per_node=8)", 'gpus_per_node=8, operators=["kuberay"])', 1)
    platform = platform.replace(
        'queues=["research"])', f'queues=["research"], ray_autoscaling=True{team})'
    )
    bare.write("jobs/platform/platform.py", platform)
    bare.write("jobs/vision/ddp.py", "")
    bare.write("jobs/vision/pool.py", SCALED_POOL.replace("MAX", str(most)))


def test_team_and_job_caps_count_an_autoscaled_group_at_its_maximum(
    bare: Any, bare_cli: Any
) -> None:
    # KubeRay v1.7.0: the autoscaler may scale group 'gpu' from 1 to 4 workers of 4 GPUs
    # (utils/util.go GetWorkerGroupDesiredReplicas keeps replicas within min..max); 4 GPUs at
    # the start fit Team.max_gpus 8, the 16 it may hold do not.
    _scaled_pool(bare, 4, ", max_gpus=8")
    run = bare_cli("synth")
    assert run.code == 1
    assert "the team's jobs on cluster 'east' use 16 GPUs together but Team.max_gpus" in run.err
    assert "RayCluster 'pool' 16 (jobs/vision/pool.py:" in run.err
    _scaled_pool(bare, 4)
    platform = (bare.jobs / "platform/platform.py").read_text()
    bare.write(
        "jobs/platform/platform.py",
        platform + "\nfrom trainkit import Policy\npolicy = Policy(max_gpus_per_job=10)\n",
    )
    run = bare_cli("synth")
    assert run.code == 1
    assert (
        "RayCluster 'pool': workers[1].max_nodes: 16 GPUs (gpu up to 4 (workers[1].max_nodes) "
        "× 4) exceed the per-job cap of 10"
    ) in run.err
    assert "Traceback" not in run.err


def test_the_queue_must_hold_every_worker_an_autoscaled_group_may_start(
    bare: Any, bare_cli: Any
) -> None:
    # research holds 16 GPUs: the gang (head, 1 cpu and 1 gpu worker: 4 GPUs) fits, the 5 gpu
    # workers the autoscaler may start (20 GPUs) do not.
    _scaled_pool(bare, 5)
    run = bare_cli("synth")
    assert run.code == 1
    assert (
        "RayCluster 'pool': workers[1].max_nodes: at its most, 7 Ray nodes, the job needs 20 "
        "nvidia.com/gpu on cluster 'east', but queue 'research' can hold at most 16 "
        "nvidia.com/gpu"
    ) in run.err
    assert "lower workers[1].max_nodes, or use another queue" in run.err
    # At 4 it fits: synthesized, and explained at the gang's minimum and the group's maximum.
    _scaled_pool(bare, 4)
    run = bare_cli("synth")
    assert run.code == 0, run.err
    run = bare_cli("explain", "pool", "--format", "json")
    assert run.code == 0, run.err
    (explained,) = json.loads(run.out)["jobs"]
    # volcano_scheduler.go calculatePodGroupParams: minMember is the head and each group's
    # minReplicas × numOfHosts when autoscaling.
    assert explained["podgroup"]["min_member"] == 3
    assert [(p["role"], p["count"]) for p in explained["pods"]] == [
        ("Head", 1),
        ("cpu", 1),
        ("gpu", 4),
    ]
    assert explained["gpus"] == 16
    # The plan's queue demand counts the same 16 GPUs, not the gang's 4.
    run = bare_cli("plan", "--format", "json")
    assert run.code == 0, run.err
    (east,) = [c for c in json.loads(run.out)["clusters"] if c["cluster"] == "east"]
    (row,) = [r for r in east["changes"] if r["kind"] == "RayCluster"]
    assert row["after"]["gpus"] == 16
    assert row["after"]["pods"] == [
        {"role": "Head", "count": 1},
        {"role": "cpu", "count": 1},
        {"role": "gpu", "count": 4},
    ]
    (research,) = east["queues"]
    assert research["after"]["requests"]["gpu"] == 16
