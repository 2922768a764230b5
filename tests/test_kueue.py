"""Kueue (v0.19) as a cluster's admission: ResourceFlavors, ClusterQueues, the teams'
LocalQueues, the queue-name label, what Kueue cannot manage, quota fit, conformance."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainkit import (
    AdmissionCheckRule,
    Capacity,
    Cluster,
    ClusterQueue,
    FlavorQuota,
    KueueTopology,
    ModelError,
    MPIJob,
    NetworkProfile,
    PaddleJob,
    PyTorchJob,
    Queue,
    RayJob,
    ResourceFlavor,
    Resources,
    Script,
    Team,
    WorkerGroup,
    WorkloadPriorityClass,
)
from trainkit.errors import DefinitionError
from trainkit.load import Definition
from trainkit.policy import check_policy
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups, rendered_runtimes
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

P = "jobs/platform/p.py"
QUOTA = Capacity(cpu=64, memory="512Gi", gpu=16)


def cluster(**kw: Any) -> Cluster:
    fields: dict[str, Any] = {
        "name": "k",
        "server": "https://k",
        "gpus_per_node": 8,
        "scheduler": "kueue",
        "operators": ["training-operator", "mpi-operator", "kuberay", "trainer"],
    }
    return Cluster(**(fields | kw))


def platform(*extra: Any, c: Cluster | None = None, quota: Capacity = QUOTA) -> list[Definition]:
    return [
        Definition(c or cluster(), P, "platform"),
        Definition(ResourceFlavor(name="h100", node_labels={"gpu": "h100"}), P, "platform"),
        Definition(
            ClusterQueue(name="q", flavors=[FlavorQuota(flavor="h100", quota=quota)]), P, "platform"
        ),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        *extra,
    ]


def job_def(j: Any) -> Definition:
    return Definition(j, "jobs/t/j.py", "t", files={"train.py": "x"} if j.script else {})


def rayjob(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "rj",
        "image": "img:1",
        "script": Script.file("train.py"),
        "head": Resources(cpu=4, memory="16Gi"),
        "workers": [
            WorkerGroup(name="gpu", nodes=1, resources=Resources(cpu=8, memory="64Gi", gpu=8))
        ],
    }
    return RayJob(**(fields | kw))


def mpijob(**kw: Any) -> MPIJob:
    fields: dict[str, Any] = {
        "name": "mj",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": Resources(cpu=8, memory="64Gi", gpu=8),
    }
    return MPIJob(**(fields | kw))


def objects(defs: list[Definition]) -> dict[tuple[str, str], dict[str, Any]]:
    (cp,) = build_plan(defs).clusters
    return {(r.body["kind"], r.body["metadata"]["name"]): r.body for r in _cluster_objects(cp)}


def problems_of(defs: list[Definition]) -> list[str]:
    """Plan and policy problems, as messages."""
    try:
        plan = build_plan(defs)
    except DefinitionError as e:
        return [p.message for p in e.problems]
    groups = render_groups(plan)
    found = check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    return [p.message for p in found]


def test_a_kueue_cluster_gets_flavors_queues_and_the_team_s_local_queue() -> None:
    objs = objects(platform(job_def(rayjob())))
    flavor = objs[("ResourceFlavor", "h100")]
    assert flavor["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert flavor["spec"] == {"nodeLabels": {"gpu": "h100"}}
    cq = objs[("ClusterQueue", "q")]["spec"]
    # No selector would admit no namespace: exactly the teams that list the queue.
    assert cq["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["t"]}
    ]
    (group,) = cq["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert [r["name"] for r in group["flavors"][0]["resources"]] == group["coveredResources"]
    lq = objs[("LocalQueue", "q")]
    assert (lq["metadata"]["namespace"], lq["spec"]) == ("t", {"clusterQueue": "q"})
    waves = {
        k: int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        for k, o in objs.items()
    }
    assert (
        waves[("ResourceFlavor", "h100")]
        < waves[("ClusterQueue", "q")]
        < waves[("LocalQueue", "q")]
    )
    assert waves[("LocalQueue", "q")] < waves[("RayJob", "rj")]


@pytest.mark.parametrize("make", [rayjob, mpijob], ids=["rayjob", "mpijob"])
def test_jobs_carry_the_queue_label_and_never_suspend(make: Any) -> None:
    j = make()
    objs = objects(platform(job_def(j)))
    body = objs[(type(j).__name__, j.name)]
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
    text = yaml.safe_dump(body)
    # Kueue's webhook suspends the job at creation and unsuspends it on admission; a value in
    # git would fight that on every sync. Nothing Volcano's either.
    assert "suspend" not in text
    assert "volcano" not in text


def _three_way_patch(original: Any, modified: Any, current: Any) -> Any:
    """kubectl's three-way JSON merge patch (apimachinery jsonmergepatch): what modified
    changes against current, and what it deletes against original."""
    if not (
        isinstance(original, dict) and isinstance(modified, dict) and isinstance(current, dict)
    ):
        return None if modified == current else modified
    patch: dict[str, Any] = {}
    for key, value in modified.items():
        sub = _three_way_patch(original.get(key, {}), value, current.get(key))
        if sub not in (None, {}):
            patch[key] = sub
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch


def test_re_applying_an_admitted_job_leaves_it_running() -> None:
    j = rayjob()
    body = objects(platform(job_def(j)))[("RayJob", "rj")]
    # Live: Kueue admitted it (spec.suspend false) and injected the flavor's node labels.
    live = yaml.safe_load(yaml.safe_dump(body))
    live["spec"]["suspend"] = False
    template = live["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    template["nodeSelector"] = {"gpu": "h100"}
    assert _three_way_patch(body, body, live) == {}


def test_kueue_cannot_manage_these_and_says_why() -> None:
    refused = problems_of(
        platform(
            job_def(
                PyTorchJob(
                    name="pt",
                    image="i:1",
                    script=Script.file("train.py"),
                    nodes=2,
                    resources=Resources(cpu=2, memory="4Gi"),
                )
            )
        )
    )
    assert any(
        "Kueue does not manage PyTorchJobs here ('kubeflow.org/pytorchjob'" in m for m in refused
    )
    # With the integration enabled, it is managed.
    enabled = cluster(kueue_frameworks=["kubeflow.org/pytorchjob"])
    pt = PyTorchJob(
        name="pt",
        image="i:1",
        script=Script.file("train.py"),
        nodes=2,
        resources=Resources(cpu=2, memory="4Gi"),
    )
    assert problems_of(platform(job_def(pt), c=enabled)) == []
    paddle_cluster = cluster(
        operators=["paddle-operator"], kueue_frameworks=["kubeflow.org/paddlejob"]
    )
    pd = PaddleJob(
        name="pd",
        image="i:1",
        script=Script.file("train.py"),
        resources=Resources(cpu=2, memory="4Gi"),
    )
    assert any(
        "paddle-operator's batch.paddlepaddle.org PaddleJob is no Kueue integration" in m
        for m in problems_of(platform(job_def(pd), c=paddle_cluster))
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {
                "workers": [
                    WorkerGroup(
                        name="gpu", nodes=1, max_nodes=3, resources=Resources(cpu=8, memory="8Gi")
                    )
                ]
            },
            "Kueue refuses RayJobs whose cluster autoscales",
        ),
        (
            {"shutdown_after_finish": False},
            "Kueue manages only RayJobs that delete their Ray cluster",
        ),
        # Kueue finishes the workload (frees its quota) when the RayJob's deployment is
        # Complete or Failed (pkg/controller/jobs/rayjob/rayjob_controller.go Finished);
        # KubeRay deletes the cluster only ttlSecondsAfterFinished later.
        (
            {"ttl_seconds": 600},
            "Kueue frees the job's quota when the Ray job ends, while its pods keep their GPUs "
            "for ttl_seconds (600 s) more",
        ),
        # Kueue adds its own pod set "submitter" in K8sJobMode (addSubmitterPodSet); a
        # Workload's pod sets are keyed by name.
        (
            {"workers": [WorkerGroup(name="submitter", resources=Resources(cpu=8, memory="8Gi"))]},
            "a worker group named 'submitter' clashes with Kueue's submitter pod set",
        ),
    ],
)
def test_rayjobs_kueue_refuses(fields: dict[str, Any], says: str) -> None:
    assert any(says in m for m in problems_of(platform(job_def(rayjob(**fields)))))


def test_a_submitter_group_is_fine_without_kueue_s_submitter_pod_set() -> None:
    group = WorkerGroup(name="submitter", resources=Resources(cpu=8, memory="8Gi"))
    assert problems_of(platform(job_def(rayjob(workers=[group], submission_mode="HTTPMode")))) == []


def test_a_job_beyond_every_flavor_s_quota_is_refused() -> None:
    big = mpijob(nodes=3)  # 24 GPUs against a quota of 16
    (message,) = problems_of(platform(job_def(big)))
    assert "all its pods together need 24 nvidia.com/gpu in flavor 'h100' (at most 16)" in message
    assert "Kueue would leave it pending forever" in message
    # Borrowing from a cohort up to a limit makes room, when the cohort has it to lend.
    roomy = ClusterQueue(
        name="q",
        cohort="all",
        flavors=[FlavorQuota(flavor="h100", quota=QUOTA, borrowing_limit=Capacity(gpu=8))],
    )
    defs = [
        d if not isinstance(d.obj, ClusterQueue) else Definition(roomy, P, "platform")
        for d in platform(job_def(big))
    ]
    # Alone in its cohort, nothing is lent (resource_node.go potentialAvailable): refused.
    (message,) = problems_of(defs)
    assert "all its pods together need 24 nvidia.com/gpu in flavor 'h100' (at most 16)" in message
    lender = ClusterQueue(
        name="spare",
        cohort="all",
        flavors=[FlavorQuota(flavor="h100", quota=QUOTA, lending_limit=Capacity(gpu=4))],
    )
    (message,) = problems_of([*defs, Definition(lender, P, "platform")])
    assert "(at most 20)" in message  # it lends only 4 of its 16
    lender = lender.model_copy(update={"flavors": [FlavorQuota(flavor="h100", quota=QUOTA)]})
    assert problems_of([*defs, Definition(lender, P, "platform")]) == []
    # Its borrowing limit still bounds it: 8 of the 16 lent.
    bigger = [
        d if not isinstance(d.obj, ClusterQueue) else Definition(roomy, P, "platform")
        for d in platform(job_def(mpijob(nodes=4)))
    ]
    (message,) = problems_of([*bigger, Definition(lender, P, "platform")])
    assert "all its pods together need 32 nvidia.com/gpu in flavor 'h100' (at most 24)" in message


def test_a_resource_the_queue_does_not_cover_is_refused() -> None:
    (message,) = problems_of(platform(job_def(mpijob()), quota=Capacity(cpu=64, memory="512Gi")))
    assert "the job requests nvidia.com/gpu, which ClusterQueue 'q'" in message
    assert "resource unavailable in ClusterQueue" in message


EFA = "vpc.amazonaws.com/efa"


def efa_platform(quota: Capacity, borrow: Capacity | None = None) -> list[Definition]:
    cq = ClusterQueue(
        name="q",
        cohort="all" if borrow is not None else None,
        flavors=[FlavorQuota(flavor="h100", quota=quota, borrowing_limit=borrow)],
    )
    efa = NetworkProfile(name="efa", resources={EFA: 4})
    team = Team(name="t", queues=["q"], network_profiles=["efa"])
    swap = {ClusterQueue: cq, Team: team}
    # A queue of the cohort that lends what the other borrows.
    lender = ClusterQueue(
        name="spare", cohort="all", flavors=[FlavorQuota(flavor="h100", quota=quota)]
    )
    return [
        Definition(swap[type(d.obj)], P, "platform") if type(d.obj) in swap else d
        for d in platform(Definition(efa, P, "platform"))
    ] + ([Definition(lender, P, "platform")] if borrow is not None else [])


def test_a_queue_quotes_extended_resources_and_ephemeral_storage() -> None:
    quota = Capacity(
        cpu=64, memory="512Gi", gpu=16, ephemeral_storage="2Ti", extended={EFA: 32, "rdma/hca": 2}
    )
    body = objects(efa_platform(quota))[("ClusterQueue", "q")]
    (group,) = body["spec"]["resourceGroups"]
    assert group["coveredResources"] == [
        "cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "rdma/hca", EFA,
    ]  # fmt: skip
    (flavor,) = group["flavors"]
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]} == {
        "cpu": "64", "memory": "512Gi", "ephemeral-storage": "2Ti",
        "nvidia.com/gpu": "16", "rdma/hca": "2", EFA: "32",
    }  # fmt: skip


def test_a_job_on_a_network_profile_needs_its_resources_quoted() -> None:
    j = mpijob(network="efa")  # 2 pods × 4 EFA interfaces
    (message,) = problems_of([*efa_platform(QUOTA), job_def(j)])
    assert f"the job requests {EFA}, which ClusterQueue 'q' (jobs/platform/p.py)" in message
    assert "add the resource to the queue's flavors" in message
    covered = QUOTA.model_copy(update={"extended": {EFA: 8}})
    assert problems_of([*efa_platform(covered), job_def(j)]) == []
    (message,) = problems_of(
        [*efa_platform(QUOTA.model_copy(update={"extended": {EFA: 4}})), job_def(j)]
    )
    assert f"8 {EFA} in flavor 'h100' (at most 4)" in message
    # Borrowing an extended resource from the cohort makes room.
    short = QUOTA.model_copy(update={"extended": {EFA: 4}})
    assert problems_of([*efa_platform(short, Capacity(extended={EFA: 4})), job_def(j)]) == []


def test_a_queue_s_preemption_and_queueing_strategy_are_rendered() -> None:
    cq = ClusterQueue(
        name="q",
        cohort="all",
        flavors=[FlavorQuota(flavor="h100", quota=QUOTA)],
        reclaim_within_cohort="Any",
        borrow_within_cohort="LowerPriority",
        borrow_max_priority=100,
        within_queue="LowerPriority",
        queueing_strategy="StrictFIFO",
    )
    defs = [
        d if not isinstance(d.obj, ClusterQueue) else Definition(cq, P, "platform")
        for d in platform()
    ]
    spec = objects(defs)[("ClusterQueue", "q")]["spec"]
    assert spec["queueingStrategy"] == "StrictFIFO"
    assert spec["preemption"] == {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
        "withinClusterQueue": "LowerPriority",
    }
    default = objects(platform())[("ClusterQueue", "q")]["spec"]
    assert default["queueingStrategy"] == "BestEffortFIFO"
    assert "borrowWithinCohort" not in default["preemption"]


def test_a_queue_may_not_quote_the_gpus_twice() -> None:
    cq = ClusterQueue(
        name="q",
        flavors=[FlavorQuota(flavor="h100", quota=Capacity(gpu=8, extended={"nvidia.com/gpu": 8}))],
    )
    defs = [
        d if not isinstance(d.obj, ClusterQueue) else Definition(cq, P, "platform")
        for d in platform()
    ]
    (message,) = problems_of(defs)
    assert "quotes 'nvidia.com/gpu' in extended, the GPU resource of cluster 'k'" in message
    assert "use gpu=" in message


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: ClusterQueue(
                name="q",
                flavors=[FlavorQuota(flavor="a", quota=QUOTA, borrowing_limit=Capacity(gpu=1))],
            ),
            "flavor 'a' has a borrowing_limit, which needs a cohort",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                flavors=[FlavorQuota(flavor="a", quota=QUOTA, lending_limit=Capacity(gpu=32))],
            ),
            "flavor 'a' lends more gpu (32) than its quota (16)",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                flavors=[
                    FlavorQuota(
                        flavor="a",
                        quota=Capacity(cpu=1, extended={EFA: 4}),
                        lending_limit=Capacity(extended={EFA: 8}),
                    )
                ],
            ),
            f"flavor 'a' lends more {EFA} (8) than its quota (4)",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                flavors=[
                    FlavorQuota(
                        flavor="a", quota=QUOTA, lending_limit=Capacity(ephemeral_storage="1Gi")
                    )
                ],
            ),
            "flavor 'a' lends more ephemeral-storage (1Gi) than its quota (none)",
        ),
        (
            lambda: Capacity(extended={"efa": 1}),
            "'efa' is not an extended resource name",
        ),
        (
            lambda: Capacity(extended={EFA: -1}),
            "extended.vpc.amazonaws.com/efa: must be at least 0",
        ),
        (
            lambda: Capacity(ephemeral_storage="100"),
            "'100' is 100 bytes",
        ),
        (
            lambda: ClusterQueue(name="q", flavors=[FlavorQuota(flavor="a", quota=QUOTA)] * 2),
            "flavor 'a' is listed twice",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                reclaim_within_cohort="Any",
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "reclaim_within_cohort needs a cohort",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                borrow_within_cohort="LowerPriority",
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "borrow_within_cohort='LowerPriority' needs reclaim_within_cohort other than 'Never'",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                reclaim_within_cohort="Any",
                borrow_max_priority=10,
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "borrow_max_priority limits borrow_within_cohort, which is 'Never'",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                queueing_strategy="FIFO",  # type: ignore[arg-type]
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "queueing_strategy: must be one of 'BestEffortFIFO' or 'StrictFIFO'",
        ),
        (
            lambda: Cluster(
                name="v", server="https://v", gpus_per_node=8, kueue_frameworks=["ray.io/rayjob"]
            ),
            "kueue_frameworks is a Kueue setting, but the cluster schedules with 'volcano'",
        ),
        # Fair sharing: kueue v0.19.2 pkg/webhooks/common.go validateFairSharing (and its
        # cases in clusterqueue_webhook_test.go / cohort_webhook_test.go).
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                fair_sharing_weight=-1,
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "fair_sharing_weight: must be at least 0",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                cohort="c",
                fair_sharing_weight="0.000000001",
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "fair_sharing_weight 0.000000001 is above 0 but not above 10^-9, which Kueue refuses",
        ),
        (
            lambda: ClusterQueue(
                name="q", fair_sharing_weight=2, flavors=[FlavorQuota(flavor="a", quota=QUOTA)]
            ),
            "fair_sharing_weight shares what a cohort lends, but the queue has no cohort",
        ),
        # Admission checks: clusterqueue_webhook.go validateAdmissionCheckOnFlavors
        # ("admissionCheckStrategy refers to a flavor that is not in quota") and the list's
        # map key (the CRD's x-kubernetes-list-map-keys: name).
        (
            lambda: ClusterQueue(
                name="q",
                admission_checks=[AdmissionCheckRule(check="ac1", on_flavors=["flavor1"])],
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "admission check 'ac1' applies on flavor 'flavor1', which the queue has no quota of "
            "(Kueue refuses it); its flavors: 'a'",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                admission_checks=["ac1", AdmissionCheckRule(check="ac1", on_flavors=["a"])],
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "admission check 'ac1' is listed twice (Kueue keys the list by name)",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                admission_checks=[AdmissionCheckRule(check="ac1", on_flavors=["a", "a"])],
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "admission check 'ac1' lists flavor 'a' twice",
        ),
        (
            lambda: ClusterQueue(
                name="q",
                admission_checks=["Not_A_Name"],
                flavors=[FlavorQuota(flavor="a", quota=QUOTA)],
            ),
            "admission_checks[0]: 'Not_A_Name' is not a valid object name",
        ),
        (
            lambda: Cluster(
                name="v", server="https://v", gpus_per_node=8, kueue_admission_checks=["prov"]
            ),
            "kueue_admission_checks is a Kueue setting, but the cluster schedules with 'volcano'",
        ),
        (
            lambda: cluster(kueue_admission_checks=["prov", "prov"]),
            "kueue_admission_checks lists a check twice; name each once",
        ),
    ],
)
def test_bad_kueue_objects_are_refused(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


def test_each_admission_system_s_objects_stay_on_its_clusters() -> None:
    volcano = Cluster(name="v", server="https://v", gpus_per_node=8)
    defs = [
        Definition(cluster(), P, "platform"),
        Definition(volcano, P, "platform"),
        Definition(ResourceFlavor(name="h100", clusters=["v"]), P, "platform"),
        Definition(
            ClusterQueue(
                name="q", flavors=[FlavorQuota(flavor="nope", quota=QUOTA)], clusters=["k", "v"]
            ),
            P,
            "platform",
        ),
        Definition(Queue(name="vq", clusters=["k"]), P, "platform"),
        Definition(Team(name="t", queues=["q", "vq"]), P, "platform"),
    ]
    messages = problems_of(defs)
    assert any(
        "cluster 'v' has no Kueue (scheduler='volcano'), so a ClusterQueue there means nothing" in m
        for m in messages
    )
    assert any(
        "cluster 'v' has no Kueue (scheduler='volcano'), so a ResourceFlavor there" in m
        for m in messages
    )
    assert any(
        "cluster 'k' admits jobs through Kueue (scheduler='kueue'), which reads no Volcano Queue"
        in m
        for m in messages
    )
    assert any("unknown ResourceFlavor 'nope'" in m for m in messages)


def test_a_team_without_a_cluster_queue_there_is_told() -> None:
    defs = [
        Definition(cluster(), P, "platform"),
        Definition(Queue(name="vq"), P, "platform"),
        Definition(Team(name="t", queues=["vq"]), P, "platform"),
        job_def(rayjob()),
    ]
    assert any(
        "cluster 'k' admits jobs through Kueue but team 't' lists no ClusterQueue there" in m
        for m in problems_of(defs)
    )


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@st.composite
def cluster_queues(draw: Any) -> ClusterQueue:
    cohort = draw(st.none() | st.just("all"))
    flavors = []
    for i in range(draw(st.integers(1, 3))):
        quota = Capacity(
            cpu=draw(st.integers(0, 512)) if i == 0 else draw(st.none() | st.integers(0, 512)),
            memory=draw(st.none() | st.just("64Gi")),
            gpu=draw(st.none() | st.integers(0, 64)),
            ephemeral_storage=draw(st.none() | st.just("1Ti")),
            extended=draw(
                st.dictionaries(
                    st.sampled_from([EFA, "rdma/hca", "example.com/nic"]), st.integers(0, 64)
                )
            ),
        )
        flavors.append(
            FlavorQuota(
                flavor=f"f{i}",
                quota=quota,
                borrowing_limit=draw(st.none() | st.just(Capacity(cpu=8))) if cohort else None,
                lending_limit=(
                    Capacity(cpu=0)
                    if cohort and quota.cpu is not None and draw(st.booleans())
                    else None
                ),
            )
        )
    cq = ClusterQueue(
        name="q",
        flavors=flavors,
        cohort=cohort,
        reclaim_within_cohort=draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        if cohort
        else "Never",
        within_queue=draw(st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])),
        queueing_strategy=draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
        fair_sharing_weight=draw(
            st.none() | st.decimals(min_value="0.000000002", max_value=1000, places=9) | st.just(0)
        )
        if cohort
        else None,
        admission_checks=draw(
            st.lists(
                st.sampled_from(["prov", "multikueue.example.com"])
                | st.builds(
                    AdmissionCheckRule,
                    check=st.just("on-some"),
                    on_flavors=st.lists(
                        st.sampled_from([f.flavor for f in flavors]), max_size=2, unique=True
                    ),
                ),
                max_size=3,
                unique_by=lambda a: a if isinstance(a, str) else a.check,
            )
        ),
    )
    if cq.reclaim_within_cohort != "Never" and draw(st.booleans()):
        cq = ClusterQueue(
            **(
                cq.model_dump()
                | {
                    "borrow_within_cohort": "LowerPriority",
                    "borrow_max_priority": draw(st.none() | st.integers(-(2**31), 2**31 - 1)),
                }
            )
        )
    return cq


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cq=cluster_queues(), teams=st.integers(0, 2))
def test_anything_the_models_accept_renders_valid_kueue_objects(
    crdset: Any, cq: ClusterQueue, teams: int
) -> None:
    checks = [r.check for r in cq.check_rules()]
    defs = [
        Definition(cluster(kueue_admission_checks=checks), P, "platform"),
        *(Definition(ResourceFlavor(name=f.flavor), P, "platform") for f in cq.flavors),
        Definition(cq, P, "platform"),
        *(Definition(Team(name=f"t{i}", queues=["q"]), P, "platform") for i in range(teams)),
    ]
    (cp,) = build_plan(defs).clusters
    rendered = list(_cluster_objects(cp))
    assert {r.body["kind"] for r in rendered} >= {"ResourceFlavor", "ClusterQueue"}
    for r in rendered:
        assert validate_text(yaml.safe_dump(r.body), r.path, crdset) == [], r.path
    (body,) = [r.body for r in rendered if r.body["kind"] == "ClusterQueue"]
    (group,) = body["spec"]["resourceGroups"]
    for flavor in group["flavors"]:
        # Kueue's webhook: every flavor quotes the covered resources, in their order.
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    rendered_checks = body["spec"].get("admissionChecksStrategy", {}).get("admissionChecks", [])
    assert [c["name"] for c in rendered_checks] == checks
    names = {f["name"] for f in group["flavors"]}
    assert all(set(c.get("onFlavors", [])) <= names for c in rendered_checks)


def test_explain_says_kueue_admits_the_whole_workload() -> None:
    from trainkit.explain import as_data, format_text

    plan = build_plan(platform(job_def(rayjob())))
    (ej,) = effective_jobs(render_groups(plan))
    assert as_data(ej)["kueue_queue"] == "q"
    text = format_text([ej])
    # The head, the worker and the submitter.
    assert "Kueue admits all 3 pods as one workload (LocalQueue q → ClusterQueue q)" in text
    assert "no gang" not in text


def test_a_node_selector_against_every_flavor_is_refused() -> None:
    j = mpijob(node_selector={"gpu": "a100"})  # the flavor's nodes have gpu=h100
    (message,) = problems_of(platform(job_def(j)))
    assert "the pods' node_selector rules out every flavor of ClusterQueue 'q'" in message
    # One that agrees with the flavor is fine.
    assert problems_of(platform(job_def(mpijob(node_selector={"gpu": "h100"})))) == []


def test_a_trainjob_and_its_runtime_on_kueue_carry_nothing_of_volcano() -> None:
    from trainkit import ClusterTrainingRuntime, TrainJob

    rt = Definition(
        ClusterTrainingRuntime(
            name="rt", image="img:1", resources=Resources(cpu=8, memory="64Gi", gpu=8)
        ),
        P,
        "platform",
    )
    tj = TrainJob(name="tj", run=1, runtime="rt", script=Script.file("train.py"), nodes=2)
    objs = objects(platform(rt, job_def(tj)))
    job = objs[("TrainJob", "tj-r1")]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
    runtime = objs[("ClusterTrainingRuntime", "rt")]
    for body in (job, runtime):
        text = yaml.safe_dump(body)
        assert "volcano" not in text and "suspend" not in text
    # Kueue's webhook refuses a TrainJob whose runtime does not exist yet: it syncs first.
    waves = [
        int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) for o in (runtime, job)
    ]
    assert waves[0] < waves[1]
    assert problems_of(platform(rt, job_def(tj))) == []


def test_the_plan_counts_extended_resources_against_the_queue() -> None:
    from trainkit.plan.trees import Obj
    from trainkit.plan.usage import ClusterJobs, queue_usage

    quota = QUOTA.model_copy(update={"extended": {EFA: 8}, "ephemeral_storage": "1Ti"})
    defs = [*efa_platform(quota), job_def(mpijob(network="efa"))]
    plan = build_plan(defs)
    (ej,) = effective_jobs(render_groups(plan))
    cq = objects(defs)[("ClusterQueue", "q")]
    now = ClusterJobs(jobs=[(Obj("j.yaml", {}), ej)], queues={"q": Obj("q.yaml", cq)})
    (use,) = queue_usage(ClusterJobs(jobs=[], queues={}), now, "nvidia.com/gpu")
    assert use.after is not None and use.after.capability is not None
    assert use.after.requests.other == {EFA: "8"}
    assert use.after.capability.other == {"ephemeral-storage": "1Ti", EFA: "8"}
    assert use.after.over_capability == []
    tight = ClusterJobs(
        jobs=now.jobs,
        queues={
            "q": Obj(
                "q.yaml",
                objects(efa_platform(QUOTA.model_copy(update={"extended": {EFA: 4}})))[
                    ("ClusterQueue", "q")
                ],
            )
        },
    )
    (use,) = queue_usage(ClusterJobs(jobs=[], queues={}), tight, "nvidia.com/gpu")
    assert use.after is not None and use.after.over_capability == [EFA]


def wpc_platform(*extra: Any, granted: list[str]) -> list[Definition]:
    return [
        d
        if not isinstance(d.obj, Team)
        else Definition(
            Team(name="t", queues=["q"], workload_priority_classes=granted), P, "platform"
        )
        for d in platform(
            Definition(WorkloadPriorityClass(name="urgent", value=1000), P, "platform"),
            *extra,
        )
    ]


def test_a_job_names_a_workload_priority_class_its_team_is_granted() -> None:
    defs = wpc_platform(job_def(mpijob(workload_priority="urgent")), granted=["urgent"])
    assert problems_of(defs) == []
    objs = objects(defs)
    assert objs[("WorkloadPriorityClass", "urgent")]["value"] == 1000
    assert objs[("WorkloadPriorityClass", "urgent")]["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    wpc = objs[("WorkloadPriorityClass", "urgent")]
    assert validate_text(yaml.safe_dump(wpc), "wpc.yaml", shared_crd_set()) == []
    labels = objs[("MPIJob", "mj")]["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/priority-class"] == "urgent"


def test_a_workload_priority_class_not_granted_or_not_declared_is_refused() -> None:
    (message,) = problems_of(wpc_platform(job_def(mpijob(workload_priority="urgent")), granted=[]))
    assert "team 't' may not use WorkloadPriorityClass 'urgent'" in message
    (message,) = problems_of(
        wpc_platform(job_def(mpijob(workload_priority="nope")), granted=["nope"])
    )
    assert "unknown WorkloadPriorityClass 'nope'; defined: 'urgent'" in message


def test_a_workload_priority_off_kueue_is_refused() -> None:
    volcano = Cluster(name="v", server="https://v", gpus_per_node=8, operators=["mpi-operator"])
    defs = [
        Definition(volcano, P, "platform"),
        Definition(Queue(name="vq"), P, "platform"),
        Definition(WorkloadPriorityClass(name="urgent", value=1), P, "platform"),
        Definition(
            Team(name="t", queues=["vq"], workload_priority_classes=["urgent"]), P, "platform"
        ),
        job_def(mpijob(workload_priority="urgent")),
    ]
    messages = problems_of(defs)
    assert any(
        "workload_priority is read by Kueue only, but cluster 'v' schedules with 'volcano'" in m
        for m in messages
    ), messages


def test_a_workload_priority_class_missing_on_the_job_s_cluster_is_refused() -> None:
    other = cluster(name="k2", server="https://k2")
    only_k2 = WorkloadPriorityClass(name="urgent", value=1, clusters=["k2"])
    defs = [
        *(d for d in platform() if not isinstance(d.obj, Team)),
        Definition(other, P, "platform"),
        Definition(only_k2, P, "platform"),
        Definition(
            Team(name="t", queues=["q"], workload_priority_classes=["urgent"]), P, "platform"
        ),
        job_def(mpijob(workload_priority="urgent", clusters=["k"])),
    ]
    (message,) = problems_of(defs)
    assert (
        "WorkloadPriorityClass 'urgent' (jobs/platform/p.py) does not exist on cluster 'k'"
        in message
    )
    assert "Kueue would not create the job's Workload" in message


def test_a_workload_priority_class_on_a_volcano_cluster_is_refused() -> None:
    volcano = Cluster(name="v", server="https://v", gpus_per_node=8)
    defs = [
        *platform(),
        Definition(volcano, P, "platform"),
        Definition(WorkloadPriorityClass(name="urgent", value=1, clusters=["v"]), P, "platform"),
    ]
    assert any(
        "cluster 'v' has no Kueue (scheduler='volcano'), so a WorkloadPriorityClass there" in m
        for m in problems_of(defs)
    ), problems_of(defs)


def _trainjob_defs(granted: list[str], **kw: Any) -> list[Definition]:
    from trainkit import ClusterTrainingRuntime, TrainJob

    rt = Definition(
        ClusterTrainingRuntime(
            name="rt", image="img:1", resources=Resources(cpu=8, memory="64Gi", gpu=8)
        ),
        P,
        "platform",
    )
    tj = TrainJob(name="tj", run=1, runtime="rt", script=Script.file("train.py"), nodes=2, **kw)
    return wpc_platform(rt, job_def(tj), granted=granted)


def test_a_trainjob_names_a_workload_priority_class() -> None:
    """Kueue's TrainJob integration builds its Workload through jobframework, which takes the
    priority from the job's own kueue.x-k8s.io/priority-class label before any PriorityClass
    (kueue v0.19.2 pkg/controller/jobframework/reconciler.go ExtractPriority, utils.go
    WorkloadPriorityClassName; trainjob_webhook.go applies the default class the same way)."""
    from trainkit.explain import as_data, format_text

    defs = _trainjob_defs(["urgent"], workload_priority="urgent")
    assert problems_of(defs) == []
    job = objects(defs)[("TrainJob", "tj-r1")]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "urgent"
    (ej,) = effective_jobs(render_groups(build_plan(defs)))
    assert ej.workload is not None and ej.workload.workload_priority == "urgent"
    assert as_data(ej)["kueue_priority"] == "urgent"
    assert "  Kueue orders and preempts it by WorkloadPriorityClass urgent\n" in format_text([ej])
    # Without one, no label and no line.
    plain = _trainjob_defs(["urgent"])
    assert (
        "kueue.x-k8s.io/priority-class"
        not in objects(plain)[("TrainJob", "tj-r1")]["metadata"]["labels"]
    )
    (ej,) = effective_jobs(render_groups(build_plan(plain)))
    assert "WorkloadPriorityClass" not in format_text([ej])


def test_a_trainjob_s_workload_priority_needs_the_team_s_grant() -> None:
    (message,) = problems_of(_trainjob_defs([], workload_priority="urgent"))
    assert "team 't' may not use WorkloadPriorityClass 'urgent'" in message
    assert "Team.workload_priority_classes" in message


def test_a_trainjob_s_workload_priority_off_kueue_is_refused() -> None:
    from trainkit import ClusterTrainingRuntime, TrainJob

    volcano = Cluster(name="v", server="https://v", gpus_per_node=8, operators=["trainer"])
    defs = [
        Definition(volcano, P, "platform"),
        Definition(Queue(name="vq"), P, "platform"),
        Definition(
            Team(name="t", queues=["vq"], workload_priority_classes=["urgent"]), P, "platform"
        ),
        Definition(WorkloadPriorityClass(name="urgent", value=1000), P, "platform"),
        Definition(
            ClusterTrainingRuntime(
                name="rt", image="img:1", resources=Resources(cpu=8, memory="64Gi", gpu=8)
            ),
            P,
            "platform",
        ),
        job_def(
            TrainJob(
                name="tj",
                run=1,
                runtime="rt",
                script=Script.file("train.py"),
                nodes=2,
                workload_priority="urgent",
            )
        ),
    ]
    assert any(
        "workload_priority is read by Kueue only, but cluster 'v' schedules with 'volcano'" in m
        for m in problems_of(defs)
    ), problems_of(defs)


def test_a_queue_s_admission_checks_and_fair_sharing_weight_are_rendered() -> None:
    cq = ClusterQueue(
        name="q",
        cohort="c",
        fair_sharing_weight="0.5",
        admission_checks=["prov", AdmissionCheckRule(check="mk", on_flavors=["h100"])],
        flavors=[FlavorQuota(flavor="h100", quota=QUOTA)],
    )
    defs = [
        Definition(cluster(kueue_admission_checks=["prov", "mk"]), P, "platform")
        if isinstance(d.obj, Cluster)
        else Definition(cq, P, "platform")
        if isinstance(d.obj, ClusterQueue)
        else d
        for d in platform()
    ]
    assert problems_of(defs) == []
    spec = objects(defs)[("ClusterQueue", "q")]["spec"]
    assert spec["fairSharing"] == {"weight": "0.5"}
    assert spec["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "prov"}, {"name": "mk", "onFlavors": ["h100"]}]
    }
    assert "fairSharing" not in objects(platform())[("ClusterQueue", "q")]["spec"]
    # A float is the decimal it is written as; an int stays whole.
    for weight, written in ((0.1, "0.1"), (3, "3"), ("2.50", "2.5"), (0, "0")):
        weighted = ClusterQueue(**(cq.model_dump() | {"fair_sharing_weight": weight}))
        redefs = [
            Definition(weighted, P, "platform") if isinstance(d.obj, ClusterQueue) else d
            for d in defs
        ]
        assert objects(redefs)[("ClusterQueue", "q")]["spec"]["fairSharing"] == {"weight": written}


def test_an_admission_check_the_cluster_lacks_is_refused() -> None:
    """A ClusterQueue naming a missing AdmissionCheck is inactive: AdmissionCheckNotFound
    (kueue v0.19.2 pkg/cache/scheduler/clusterqueue.go; clusterqueue_test.go)."""
    cq = ClusterQueue(
        name="q", admission_checks=["prov"], flavors=[FlavorQuota(flavor="h100", quota=QUOTA)]
    )
    defs = [
        Definition(cq, P, "platform") if isinstance(d.obj, ClusterQueue) else d for d in platform()
    ]
    (message,) = problems_of(defs)
    assert (
        "admission check 'prov' is not installed on cluster 'k' (Cluster.kueue_admission_checks: "
        "none); Kueue would leave the queue inactive, admitting nothing" in message
    )
    assert "admission_checks[0]" in str(build_plan_problems(defs))


def build_plan_problems(defs: list[Definition]) -> list[Any]:
    try:
        build_plan(defs)
    except DefinitionError as e:
        return [f"{p.field}: {p.message}" for p in e.problems]
    return []


def test_explain_names_the_cohort_weight_and_admission_checks_of_the_job_s_queue() -> None:
    from trainkit.explain import as_data, format_text

    cq = ClusterQueue(
        name="q",
        cohort="c",
        fair_sharing_weight=2,
        admission_checks=["prov", AdmissionCheckRule(check="mk", on_flavors=["h100"])],
        flavors=[FlavorQuota(flavor="h100", quota=QUOTA)],
    )
    defs = [
        Definition(cluster(kueue_admission_checks=["prov", "mk"]), P, "platform")
        if isinstance(d.obj, Cluster)
        else Definition(cq, P, "platform")
        if isinstance(d.obj, ClusterQueue)
        else d
        for d in platform(job_def(rayjob()))
    ]
    (ej,) = effective_jobs(render_groups(build_plan(defs)))
    assert as_data(ej)["kueue_cluster_queue"] == {
        "cohort": "c",
        "fair_sharing_weight": "2",
        "admission_checks": [
            {"check": "prov", "on_flavors": []},
            {"check": "mk", "on_flavors": ["h100"]},
        ],
    }
    text = format_text([ej])
    assert (
        "  ClusterQueue q is in cohort c: beyond its nominal quota it borrows what the cohort's "
        "other queues leave unused, fair-sharing weight 2 when the cohort's queues compete for "
        "what is lent\n"
    ) in text
    assert "  admitted only once these AdmissionChecks pass: prov, mk (on flavors h100)\n" in text
    # A queue without a cohort or checks adds neither line.
    (ej,) = effective_jobs(render_groups(build_plan(platform(job_def(rayjob())))))
    assert "cohort" not in format_text([ej]) and "AdmissionChecks" not in format_text([ej])


# --- topology-aware scheduling (kueue v0.19.2 apis/kueue/v1beta2/topology_types.go,
# pkg/controller/jobframework/tas.go and tas_validation.go) ------------------------------

LEVELS = ["example.com/block", "example.com/rack", "kubernetes.io/hostname"]


def tas_platform(
    *extra: Any, levels: list[str] | None = None, topology: str = "fabric"
) -> list[Definition]:
    c = cluster(kueue_topologies={"fabric": levels or LEVELS})
    flavor = ResourceFlavor(name="h100", node_labels={"gpu": "h100"}, topology_name=topology)
    return [
        Definition(c, P, "platform")
        if isinstance(d.obj, Cluster)
        else Definition(flavor, P, "platform")
        if isinstance(d.obj, ResourceFlavor)
        else d
        for d in platform(*extra)
    ]


def test_a_job_s_topology_request_is_on_every_pod_template(crdset: Any) -> None:
    from trainkit.explain import as_data, format_text

    defs = tas_platform(job_def(mpijob(kueue_topology=KueueTopology(level="example.com/rack"))))
    assert problems_of(defs) == []
    objs = objects(defs)
    flavor = objs[("ResourceFlavor", "h100")]
    assert flavor["spec"] == {"nodeLabels": {"gpu": "h100"}, "topologyName": "fabric"}
    assert validate_text(yaml.safe_dump(flavor), "rf.yaml", crdset) == []
    specs = objs[("MPIJob", "mj")]["spec"]["mpiReplicaSpecs"]
    for role in ("Launcher", "Worker"):
        annotations = specs[role]["template"]["metadata"]["annotations"]
        assert annotations == {"kueue.x-k8s.io/podset-preferred-topology": "example.com/rack"}
    (ej,) = effective_jobs(render_groups(build_plan(defs)))
    assert as_data(ej)["kueue_topology"] == {"level": "example.com/rack", "required": False}
    assert (
        "  Kueue places each pod set by topology level example.com/rack: in as few domains of "
        "it as Kueue finds room in\n"
    ) in format_text([ej])
    required = KueueTopology(level="kubernetes.io/hostname", required=True)
    defs = tas_platform(job_def(rayjob(kueue_topology=required)))
    assert problems_of(defs) == []
    spec = objects(defs)[("RayJob", "rj")]["spec"]["rayClusterSpec"]
    for template in (spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]):
        assert template["metadata"]["annotations"] == {
            "kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"
        }


def test_a_trainjob_s_topology_request_is_in_its_runtime_patch() -> None:
    """Kueue reads a TrainJob's pod sets from the JobSet Trainer builds, whose templates carry
    the TrainJob's runtime patch (kueue v0.19.2 pkg/controller/jobs/trainjob/
    trainjob_controller.go podSets → jobset PodSets)."""
    rack = KueueTopology(level="example.com/rack")
    defs = tas_platform(
        *[d for d in _trainjob_defs(["urgent"], kueue_topology=rack) if d.team != "platform"],
        *[d for d in _trainjob_defs([]) if type(d.obj).__name__ == "ClusterTrainingRuntime"],
    )
    assert problems_of(defs) == []
    text = yaml.safe_dump(objects(defs)[("TrainJob", "tj-r1")])
    assert "kueue.x-k8s.io/podset-preferred-topology: example.com/rack" in text


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: cluster(kueue_topologies={"t": []}),
            "Topology 't' has 0 levels; Kueue takes 1 to 16 node labels",
        ),
        (
            lambda: cluster(kueue_topologies={"t": [f"example.com/l{i}" for i in range(17)]}),
            "Topology 't' has 17 levels; Kueue takes 1 to 16 node labels",
        ),
        (
            lambda: cluster(kueue_topologies={"t": ["a/rack", "a/rack"]}),
            "Topology 't' lists level 'a/rack' twice; Kueue wants each once",
        ),
        (
            lambda: cluster(kueue_topologies={"t": ["kubernetes.io/hostname", "a/rack"]}),
            "Topology 't' has 'kubernetes.io/hostname' above another level; Kueue allows it "
            "only as the lowest (last) level",
        ),
        (
            lambda: cluster(kueue_topologies={"t": ["a/Not A Label"]}),
            "kueue_topologies.t[0]",
        ),
        (
            lambda: Cluster(
                name="v", server="https://v", gpus_per_node=8, kueue_topologies={"t": ["a/b"]}
            ),
            "kueue_topologies is a Kueue setting, but the cluster schedules with 'volcano'",
        ),
        (
            lambda: ResourceFlavor(name="h100", topology_name="fabric"),
            "topology_name needs node_labels (Kueue refuses a flavor with a topology and no node "
            "label)",
        ),
        (
            lambda: mpijob(
                kueue_topology=KueueTopology(level="a/rack"),
                pod_annotations={"kueue.x-k8s.io/podset-unconstrained-topology": "true"},
            ),
            "pod_annotations sets 'kueue.x-k8s.io/podset-unconstrained-topology' beside "
            "kueue_topology, and Kueue refuses a pod template with more than one topology "
            "annotation",
        ),
        (
            lambda: KueueTopology(level="not a label"),
            "level",
        ),
    ],
)
def test_bad_topology_settings_are_refused(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


def test_a_topology_request_kueue_could_never_meet_is_refused() -> None:
    rack = KueueTopology(level="example.com/rack")
    # The level is not one of the flavor's Topology.
    (message,) = problems_of(
        tas_platform(job_def(mpijob(kueue_topology=KueueTopology(level="example.com/zone"))))
    )
    assert (
        "kueue_topology level 'example.com/zone' is no level of the Topology of any flavor of "
        "ClusterQueue 'q' (flavor 'h100': example.com/block, example.com/rack, "
        "kubernetes.io/hostname): Kueue would never admit the job ('no requested topology "
        "level'); use one of those levels"
    ) in message
    # No flavor of the queue has a Topology.
    (message,) = problems_of(platform(job_def(mpijob(kueue_topology=rack))))
    assert (
        "kueue_topology asks for topology-aware scheduling, but no flavor of ClusterQueue 'q' "
        "on cluster 'k' has a Topology (ResourceFlavor.topology_name): Kueue would never admit "
        "the job"
    ) in message
    # The flavor's Topology is not installed on the cluster.
    messages = problems_of(tas_platform(job_def(mpijob()), topology="elsewhere"))
    assert any(
        "Topology 'elsewhere' is not installed on cluster 'k' (Cluster.kueue_topologies: "
        "'fabric'); Kueue would leave the flavor's queues inactive" in m
        for m in messages
    ), messages


def test_a_topology_request_off_kueue_is_refused() -> None:
    volcano = Cluster(name="v", server="https://v", gpus_per_node=8, operators=["mpi-operator"])
    defs = [
        Definition(volcano, P, "platform"),
        Definition(Queue(name="vq"), P, "platform"),
        Definition(Team(name="t", queues=["vq"]), P, "platform"),
        job_def(mpijob(kueue_topology=KueueTopology(level="a/rack"))),
    ]
    assert any(
        "kueue_topology is read by Kueue only, but cluster 'v' schedules with 'volcano'" in m
        for m in problems_of(defs)
    ), problems_of(defs)
