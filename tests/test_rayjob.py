"""RayJob (ray.io/v1, KubeRay v1.7): the model's refusals, what is rendered, the pods and gang
KubeRay makes of it, conformance with KubeRay's CRD."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, render
from trainkit import (
    DeletionRule,
    EmptyDir,
    ModelError,
    RayJob,
    Resources,
    Role,
    RuntimeEnv,
    Script,
    SecurityContext,
    Toleration,
    WorkerGroup,
)
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

KUBERAY = {"operators": ["kuberay"]}
HEAD = Resources(cpu=4, memory="16Gi")
GPU = Resources(cpu=16, memory="64Gi", gpu=4)


def job(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "rj",
        "image": "rayproject/ray:2.60.0",
        "script": Script.file("train.py"),
        "head": HEAD,
        "workers": [WorkerGroup(name="gpu", nodes=2, resources=GPU)],
    }
    return RayJob(**(fields | kw))


def group(**kw: Any) -> WorkerGroup:
    return WorkerGroup(**({"name": "gpu", "resources": GPU} | kw))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: group(nodes=2, min_nodes=3, max_nodes=2),
            "min_nodes 3 is greater than max_nodes 2",
        ),
        (
            lambda: group(nodes=5, min_nodes=1, max_nodes=4),
            "nodes 5 is outside min_nodes..max_nodes",
        ),
        (
            lambda: group(resources=Resources(cpu="1500m", memory="4Gi")),
            "worker group 'gpu' has cpu '1500m': Ray schedules whole CPUs",
        ),
        (lambda: job(head=Resources(cpu="0.5", memory="1Gi")), "head has cpu '0.5'"),
        (
            lambda: DeletionRule(delete="self", when="succeeded"),
            "delete='self' deletes the RayJob, which Argo CD's self-heal then creates again",
        ),
        (lambda: job(ttl_seconds=60, shutdown_after_finish=False), "ttl_seconds keeps the Ray"),
        (
            lambda: job(
                ttl_seconds=60, deletion_rules=[DeletionRule(delete="cluster", when="failed")]
            ),
            "deletion_rules replace shutdown_after_finish and ttl_seconds",
        ),
        (
            lambda: job(
                deletion_rules=[
                    DeletionRule(delete="cluster", when="failed"),
                    DeletionRule(delete="cluster", when="failed", after_seconds=5),
                ]
            ),
            "two deletion rules delete 'cluster' when 'failed'",
        ),
        (
            lambda: job(
                deletion_rules=[
                    DeletionRule(delete="workers", when="succeeded", after_seconds=60),
                    DeletionRule(delete="cluster", when="succeeded", after_seconds=10),
                ]
            ),
            "the cluster would be deleted (10 s) before its workers (60 s)",
        ),
        (
            lambda: job(
                workers=[group(nodes=1, max_nodes=4)],
                deletion_rules=[DeletionRule(delete="workers", when="failed")],
            ),
            "delete='workers' is refused by KubeRay when a group autoscales",
        ),
        (lambda: job(name="r" * 48), "name is 48 characters; KubeRay takes at most 47"),
        (lambda: job(name="r" * 45, run=12), "(with its run) is 49 characters"),
        (
            lambda: job(env={"RAY_ADDRESS": "auto"}),
            "RAY_ADDRESS may not be set: KubeRay sets it to the head's GCS address",
        ),
        (
            lambda: job(runtime_env=RuntimeEnv(env_vars={"CUDA_VISIBLE_DEVICES": "0"})),
            "CUDA_VISIBLE_DEVICES may not be set",
        ),
        (lambda: job(script=None), "a RayJob submits one entrypoint"),
        (lambda: job(command=["python", "x.py"]), "a RayJob submits one entrypoint"),
        (
            lambda: job(workers=[group(), group(resources=HEAD)]),
            "worker groups share the name 'gpu'",
        ),
        (
            lambda: job(workers=[group(nodes=1, max_nodes=3)], service_account="runner"),
            "runs under KubeRay's autoscaler ServiceAccount, which would replace service_account",
        ),
        (lambda: job(submission_mode="InteractiveMode"), "submission_mode"),
        (
            lambda: job(submitter=Role(volumes=[EmptyDir(name="x", path="/x", size="1Gi")])),
            "submitter.volumes: the submitter pod runs with the job's security contexts and "
            "mounts no volume",
        ),
        (
            lambda: job(submitter=Role(security_context=SecurityContext(run_as_user=1000))),
            "submitter.security_context: the submitter pod runs with the job's security contexts",
        ),
        (
            lambda: job(args=["--rank=$(NODE_RANK)"]),
            "args: $(NODE_RANK) in '--rank=$(NODE_RANK)': a RayJob's entrypoint is no "
            "container's command, so the kubelet does not expand it with the job's variables: "
            "KubeRay hands it to Ray as text, and Ray runs it in a shell on the head, where "
            "$(NODE_RANK) runs 'NODE_RANK' as a command; write $NODE_RANK (or ${NODE_RANK}) "
            "to read the variable there (the job's env and runtime_env.env_vars are set for it)",
        ),
        (
            lambda: job(script=None, command=["python", "$(APP)/train.py"]),
            "command: $(APP) in '$(APP)/train.py': a RayJob's entrypoint is no container's",
        ),
        (
            lambda: RayJob(name="rj", image="img:1", ray_cluster="pool", command=["$(X)"]),
            "command: $(X) in '$(X)'",
        ),
    ],
)
def test_bad_fields_are_refused_with_the_reason(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


def test_the_script_is_the_entrypoint_and_kuberay_starts_ray() -> None:
    body, _ = render(job(args=["--tag", "a b"]), **KUBERAY)
    spec = body["spec"]
    assert spec["entrypoint"] == "python /workspace/train.py --tag 'a b'"
    assert spec["submissionMode"] == "K8sJobMode"
    assert spec["shutdownAfterJobFinishes"] is True
    assert spec["backoffLimit"] == 0
    assert "suspend" not in spec  # Kueue's to write, never trainkit's
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    (c,) = head["containers"]
    # No command: KubeRay writes `ulimit …; ray start --head …` itself (common/pod.go BuildPod).
    assert c["name"] == "ray-head" and "command" not in c and "args" not in c
    assert c["volumeMounts"][0]["mountPath"] == "/workspace/train.py"
    (workers,) = spec["rayClusterSpec"]["workerGroupSpecs"]
    assert (workers["groupName"], workers["replicas"]) == ("gpu", 2)
    assert (workers["minReplicas"], workers["maxReplicas"]) == (2, 2)
    assert "enableInTreeAutoscaling" not in spec["rayClusterSpec"]


def test_a_command_from_the_image_is_the_entrypoint() -> None:
    body, _ = render(
        job(script=None, command=["python", "-m", "pkg.train"], args=["--x"]), **KUBERAY
    )
    assert body["spec"]["entrypoint"] == "python -m pkg.train --x"
    (c,) = body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]
    assert "workingDir" not in c and "volumeMounts" not in c


def test_the_entrypoint_s_shell_variables_reach_the_head_as_written() -> None:
    # The head's shell reads $VAR and ${VAR}; KubeRay's submitter bash line (common/job.go
    # BuildJobSubmitCommand) gets them single-quoted, so it passes them on unexpanded.
    j = job(script=None, command=["python", "-m", "pkg.train"], args=["--rank=$RANK", "${OUT}"])
    body, _ = render(j, **KUBERAY)
    assert body["spec"]["entrypoint"] == "python -m pkg.train '--rank=$RANK' '${OUT}'"


def test_volcano_reads_the_queue_and_priority_from_labels() -> None:
    body, pj = render(job(priority_class="high"), {"priority_classes": ["high"]}, **KUBERAY)
    labels = body["metadata"]["labels"]
    assert labels["volcano.sh/queue-name"] == "q"
    assert labels["ray.io/priority-class-name"] == "high"
    assert "ray.io/scheduler-name" not in labels  # unused since KubeRay 1.6
    ej = effective_job(pj, body)
    assert ej.gang is not None
    assert (ej.gang.podgroup, ej.gang.queue, ej.gang.min_member) == ("ray-rj-pg", "q", 3)
    # Head, two workers and the submitter's own request (volcano_scheduler.go handleRayJob).
    assert ej.gang.requests["cpu"] == 4 + 2 * 16 + 1
    assert ej.gang.requests["nvidia.com/gpu"] == 8


def test_without_volcano_nothing_names_a_queue() -> None:
    body, pj = render(job(), scheduler="default", **KUBERAY)
    assert "volcano.sh/queue-name" not in body["metadata"]["labels"]
    assert effective_job(pj, body).gang is None


def test_an_autoscaled_group_is_admitted_at_its_minimum() -> None:
    autoscaled = job(workers=[group(nodes=2, min_nodes=1, max_nodes=6)])
    body, pj = render(autoscaled, {"ray_autoscaling": True}, **KUBERAY)
    cluster = body["spec"]["rayClusterSpec"]
    assert cluster["enableInTreeAutoscaling"] is True
    (g,) = cluster["workerGroupSpecs"]
    assert (g["replicas"], g["minReplicas"], g["maxReplicas"]) == (2, 1, 6)
    ej = effective_job(pj, body)
    # volcano_scheduler.go calculatePodGroupParams: minMember and minResources are the head
    # and each group's minReplicas (CalculateMinReplicas, CalculateMinResources), with the
    # submitter's requests (getSubmitterResource).
    assert ej.gang is not None and ej.gang.min_member == 2  # the head and one worker
    assert ej.gang.requests["nvidia.com/gpu"] == 4
    assert ej.gang.requests["cpu"] == 4 + 16 + 1  # the head, a worker, the submitter
    # The autoscaler may start 6 workers (utils/util.go CalculateMaxReplicas): quota, caps,
    # the queue's fit and the plan count them all, beside the head and the submitter.
    assert [(ps.role, ps.count) for ps in ej.pod_sets] == [
        ("Head", 1),
        ("gpu", 6),
        ("Submitter", 1),
    ]
    assert ej.gpus() == 24
    assert ej.gang.at_most is not None
    assert ej.gang.at_most["nvidia.com/gpu"] == 24
    assert ej.gang.at_most["cpu"] == 4 + 6 * 16 + 1
    assert any("quota, caps and the plan count its maxReplicas" in n for n in ej.notes)
    assert "on the up to 7 Ray node(s)" in ej.notes[0]


def test_the_submitter_gets_the_job_s_access_and_tolerations() -> None:
    tol = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
    cluster = {**KUBERAY, "tolerations": [tol]}
    grants = {"image_pull_secrets": ["regcred"], "service_accounts": ["runner"]}
    body, pj = render(
        job(tolerations=[tol], image_pull_secrets=["regcred"], service_account="runner"),
        grants,
        **cluster,
    )
    pod = body["spec"]["submitterPodTemplate"]["spec"]
    (c,) = pod["containers"]
    assert c["name"] == "ray-job-submitter" and "command" not in c  # KubeRay fills it in
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["serviceAccountName"] == "runner"
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert pod["restartPolicy"] == "Never"
    submitter = effective_job(pj, body).pod_sets[-1]
    assert (submitter.role, submitter.runs_ranks) == ("Submitter", False)
    assert {e.name for e in submitter.env} >= {"RAY_DASHBOARD_ADDRESS", "RAY_JOB_SUBMISSION_ID"}


def test_http_and_sidecar_modes_have_no_submitter_template() -> None:
    for mode in ("HTTPMode", "SidecarMode"):
        body, pj = render(job(submission_mode=mode), **KUBERAY)
        assert "submitterPodTemplate" not in body["spec"]
        assert [ps.role for ps in effective_job(pj, body).pod_sets] == ["Head", "gpu"]


def test_deletion_rules_replace_the_shutdown() -> None:
    rules = [
        DeletionRule(delete="workers", when="succeeded"),
        DeletionRule(delete="cluster", when="succeeded", after_seconds=300),
        DeletionRule(delete="cluster", when="not-submitted"),
    ]
    body, _ = render(job(deletion_rules=rules), **KUBERAY)
    spec = body["spec"]
    assert spec["shutdownAfterJobFinishes"] is False
    assert "ttlSecondsAfterFinished" not in spec
    assert spec["deletionStrategy"]["deletionRules"] == [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED"}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 300}},
        {"policy": "DeleteCluster", "condition": {"jobDeploymentStatus": "Failed"}},
    ]


def test_kuberay_s_env_is_shown_and_its_shm_mounted() -> None:
    body, pj = render(job(), **KUBERAY)
    head, workers, _ = effective_job(pj, body).pod_sets
    head_env = {e.name: e.value for e in head.env}
    assert head_env["RAY_ADDRESS"] == "127.0.0.1:6379"
    # KubeRay sorts the parameters by name (common/pod.go convertParamMap); trainkit's
    # rayStartParams keep a GPU-less head's num-gpus at 0.
    start = head_env["KUBERAY_GEN_RAY_START_CMD"]
    assert start.startswith("ray start --head --memory=")
    assert {"--num-cpus=4", "--num-gpus=0"} <= set(start.split())
    worker_env = {e.name: e.value for e in workers.env}
    assert worker_env["RAY_ADDRESS"].endswith("-head-svc.<namespace>.svc.cluster.local:6379")
    assert "--num-gpus=4" in worker_env["KUBERAY_GEN_RAY_START_CMD"]
    mounts = [m["mountPath"] for m in workers.main["volumeMounts"]]
    assert "/dev/shm" in mounts


def test_a_job_s_own_shm_size_keeps_kuberay_s_out() -> None:
    body, pj = render(job(shm_size="8Gi"), **KUBERAY)
    head = effective_job(pj, body).pod_sets[0]
    assert [v["name"] for v in head.spec["volumes"]].count("shared-mem") == 0
    assert [m["mountPath"] for m in head.main["volumeMounts"]].count("/dev/shm") == 1


def test_runtime_env_is_yaml_for_ray() -> None:
    env = RuntimeEnv(pip=["datasets==3.0.1"], env_vars={"B": "2", "A": "1"})
    body, _ = render(job(runtime_env=env), **KUBERAY)
    assert yaml.safe_load(body["spec"]["runtimeEnvYAML"]) == {
        "pip": ["datasets==3.0.1"],
        "env_vars": {"A": "1", "B": "2"},
    }


def test_a_cluster_without_kuberay_refuses_it() -> None:
    with pytest.raises(DefinitionError) as e:
        planned(job())
    (p,) = e.value.problems
    assert "cluster 'c' does not run kuberay, which RayJobs need" in p.message


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


@st.composite
def rayjobs(draw: Any) -> RayJob:
    groups = []
    for i in range(draw(st.integers(0, 3))):
        nodes = draw(st.integers(1, 4))
        scale = draw(st.booleans())
        groups.append(
            WorkerGroup(
                name=f"g{i}",
                nodes=nodes,
                min_nodes=draw(st.integers(0, nodes)) if scale else None,
                max_nodes=draw(st.integers(nodes, 8)) if scale else None,
                resources=Resources(
                    cpu=draw(st.integers(1, 8)), memory="8Gi", gpu=draw(st.integers(0, 8))
                ),
                node_selector=draw(st.none() | st.just({"pool": "gpu"})),
            )
        )
    autoscaled = any(g.scaling[0] != g.scaling[1] for g in groups)
    rules = draw(
        st.just([])
        | st.just([DeletionRule(delete="cluster", when="failed", after_seconds=60)])
        | st.just([DeletionRule(delete="nothing", when="succeeded")])
    )
    shutdown = draw(st.booleans())
    return RayJob(
        name=draw(st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)),
        run=draw(st.none() | st.integers(1, 99)),
        image="rayproject/ray:2.60.0",
        script=Script.file("train.py"),
        args=draw(st.lists(st.sampled_from(["--x", "a b", "'q'"]), max_size=3)),
        head=Resources(cpu=draw(st.integers(1, 8)), memory="8Gi"),
        workers=groups,
        runtime_env=draw(st.none() | st.just(RuntimeEnv(pip=["x==1"], env_vars={"K": "v"}))),
        submission_mode=draw(st.sampled_from(["K8sJobMode", "HTTPMode", "SidecarMode"])),
        deletion_rules=rules,
        **({} if rules else {"shutdown_after_finish": shutdown}),
        **({"ttl_seconds": draw(st.integers(0, 600))} if shutdown and not rules else {}),
        backoff_limit=draw(st.integers(0, 3)),
        deadline_seconds=draw(st.none() | st.integers(1, 3600)),
        shm_size=draw(st.none() | st.just("4Gi")),
        service_account=None if autoscaled else draw(st.none() | st.just("runner")),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(j=rayjobs(), volcano=st.booleans())
def test_anything_the_model_accepts_renders_a_valid_rayjob(
    crdset: Any, j: RayJob, volcano: bool
) -> None:
    grants = {"service_accounts": ["runner"], "ray_autoscaling": True}
    sched = "volcano" if volcano else "default"
    (cp,) = planned(j, grants, scheduler=sched, **KUBERAY).clusters
    for rendered in _cluster_objects(cp):
        assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayJob"]
    spec = body["spec"]
    groups = spec["rayClusterSpec"].get("workerGroupSpecs", [])
    assert [g["groupName"] for g in groups] == [g.name for g in j.workers]
    # KubeRay's own rules (validation.go): min ≤ max, both set without autoscaling, TTL only
    # with the shutdown, rules never with it.
    for g in groups:
        assert g["minReplicas"] <= g["replicas"] <= g["maxReplicas"]
    if spec.get("ttlSecondsAfterFinished"):
        assert spec["shutdownAfterJobFinishes"] is True
    if "deletionStrategy" in spec:
        assert spec["shutdownAfterJobFinishes"] is False
    ej = effective_job(cp.jobs[0], body)
    # Each group at the most its autoscaler may start (utils/util.go CalculateMaxReplicas).
    assert ej.nodes == 1 + sum(g.scaling[1] * g.hosts for g in j.workers)
    if volcano:
        assert ej.gang is not None
        assert ej.gang.min_member == 1 + sum(
            g.scaling[0] if j.autoscaled else g.nodes for g in j.workers
        )


def test_runtime_env_may_not_override_the_network_profile_s_env() -> None:
    from trainkit import Capacity, Cluster, NetworkProfile, Queue, Team
    from trainkit.load import Definition
    from trainkit.resolve import build_plan

    p = "jobs/platform/p.py"
    defs = [
        Definition(Cluster(name="c", server="https://c", gpus_per_node=8, **KUBERAY), p, "p"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), p, "p"),
        Definition(Team(name="t", queues=["q"], network_profiles=["ib"]), p, "p"),
        Definition(NetworkProfile(name="ib", env={"NCCL_IB_DISABLE": "0"}), p, "p"),
        Definition(
            job(network="ib", runtime_env=RuntimeEnv(env_vars={"NCCL_IB_DISABLE": "1"})),
            "jobs/t/j.py",
            "t",
            files={"train.py": "x"},
        ),
    ]
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    (problem,) = e.value.problems
    assert problem.field == "runtime_env"
    assert "NCCL_IB_DISABLE is set by network profile 'ib'" in problem.message
    assert "remove it from runtime_env.env_vars" in problem.message


def test_autoscaling_needs_the_team_s_grant() -> None:
    # KubeRay runs an autoscaled head as its autoscaler's ServiceAccount, whose Role may patch
    # pods and rayclusters (ray-operator/controllers/ray/common/rbac.go): the job's own code
    # could rewrite its pod templates after every check. Granted per team, not platform-wide.
    scaled = job(workers=[group(name="fixed", nodes=2), group(nodes=1, max_nodes=3)])
    with pytest.raises(DefinitionError) as e:
        planned(scaled, **KUBERAY)
    (p,) = e.value.problems
    assert (p.file, p.obj, p.field) == ("jobs/t/j.py", "RayJob 'rj'", "workers[1]")
    assert p.message == (
        "worker group 'gpu' autoscales (1..3 nodes), which runs the head (and the job's code) "
        "as KubeRay's autoscaler ServiceAccount, allowed to patch the RayCluster and its "
        "pods; team 't' is not granted ray_autoscaling (Team.ray_autoscaling in "
        "jobs/platform/p.py is False): give each group equal min_nodes and max_nodes, or ask "
        "the platform team to set ray_autoscaling=True on the team"
    )
    planned(scaled, {"ray_autoscaling": True}, **KUBERAY)
    # A group of fixed size needs no grant.
    planned(job(workers=[group(nodes=2, min_nodes=2, max_nodes=2)]), **KUBERAY)


@pytest.mark.parametrize(("head_gpu", "problems"), [(0, 0), (12, 1)])
def test_a_head_only_rayjob_passes_the_gpu_caps(head_gpu: int, problems: int) -> None:
    # The model accepts a RayJob without worker groups (everything runs on the head); the GPU
    # caps named the field with the most GPUs by max() over the groups, none here.
    from trainkit.synth.layout import check_cluster_truth, render_groups

    head = Resources(cpu=4, memory="16Gi", gpu=head_gpu)
    plan = planned(job(workers=[], head=head), **KUBERAY)
    if not problems:
        (ej,) = check_cluster_truth(plan, render_groups(plan))
        assert [(ps.role, ps.count) for ps in ej.pod_sets] == [("Head", 1), ("Submitter", 1)]
        return
    with pytest.raises(DefinitionError) as e:
        check_cluster_truth(plan, render_groups(plan))
    (p,) = e.value.problems
    assert (p.field, p.message) == ("head.gpu", "12 exceeds the 8 GPUs per node of cluster 'c'")


from trainkit import ConfigMapVolume, Volume  # noqa: E402

LOGS = EmptyDir(name="ray-logs", path="/tmp/ray", size="10Gi")


def test_head_and_group_volumes_are_mounted_on_their_pods_only() -> None:
    j = job(
        volumes=[Volume(claim="data", path="/data")],
        head_volumes=[LOGS],
        workers=[
            group(volumes=[ConfigMapVolume(name="cfg", config_map="cfg", path="/etc/cfg")]),
            group(name="cpu", resources=HEAD),
        ],
    )
    body, pj = render(j, {"config_maps": {"cfg": ["a"]}}, **KUBERAY)
    head, gpu, cpu, _ = effective_job(pj, body).pod_sets

    def mounted(ps: Any) -> dict[str, str]:
        names = {v["name"] for v in ps.spec["volumes"]}
        mounts = {m["name"]: m["mountPath"] for m in ps.main["volumeMounts"]}
        assert set(mounts) <= names
        return {n: p for n, p in mounts.items() if n in ("data", "ray-logs", "cfg")}

    # The job's claim on every pod, each group's own after it, nowhere else.
    assert mounted(head) == {"data": "/data", "ray-logs": "/tmp/ray"}
    assert mounted(gpu) == {"data": "/data", "cfg": "/etc/cfg"}
    assert mounted(cpu) == {"data": "/data"}
    logs = next(v for v in head.spec["volumes"] if v["name"] == "ray-logs")
    assert logs["emptyDir"] == {"sizeLimit": "10Gi"}


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: job(
                volumes=[EmptyDir(name="ray-logs", path="/scratch", size="1Gi")],
                head_volumes=[LOGS],
            ),
            "on the head, with the job's volumes and head_volumes: two volumes are named "
            "'ray-logs'",
        ),
        (
            lambda: job(
                volumes=[EmptyDir(name="scratch", path="/tmp/ray", size="1Gi")],
                workers=[group(volumes=[LOGS])],
            ),
            "on worker group 'gpu', with the job's volumes and workers[0].volumes: volumes "
            "mount more than once at /tmp/ray",
        ),
        (
            lambda: job(head_volumes=[EmptyDir(name="dshm", path="/x", size="1Gi")]),
            "has the name of a volume trainkit generates",
        ),
        (
            lambda: job(head_volumes=[EmptyDir(name="w", path="/workspace", size="1Gi")]),
            "head_volumes[0] at '/workspace' would hide the script",
        ),
        (
            lambda: job(workers=[group(volumes=[EmptyDir(name="w", path="/workspace/train.py",
                                                         size="1Gi")])]),
            "workers[0].volumes[0] at '/workspace/train.py' would hide the script",
        ),
        (
            lambda: job(ray_cluster="shared", command=["python", "x.py"], head=None,
                        workers=[], head_volumes=[LOGS]),
            "head_volumes",
        ),
    ],
)  # fmt: skip
def test_bad_group_volumes_are_refused_with_the_reason(make: Any, says: str) -> None:
    with pytest.raises(ModelError) as e:
        make()
    assert says in str(e.value)


def test_the_same_volume_on_two_groups_is_fine() -> None:
    # Names are unique within each pod: the head's and a group's never meet.
    j = job(head_volumes=[LOGS], workers=[group(volumes=[LOGS])])
    assert j.head_volumes == j.workers[0].volumes
