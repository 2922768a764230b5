"""KubeRay v1.7 head Service and a RayJob's own submitter pod (issue 28): the model, the grants
an exposed head Service needs, the rendering, the policy the submitter pod goes through, and
what `explain` shows.

Controller expectations come from ray-project/kuberay v1.7.0's own tests:
ray-operator/controllers/ray/common/service_test.go (TestBuildServiceForHeadPodDefaultPorts:
a head container with a port of its own gives the Service only that one and ``metrics``),
rayjob_controller_unit_test.go (TestGetSubmitterTemplate: a submitter command given is kept;
the entrypoint with quotes), utils/validation_test.go (SidecarMode refuses a submitter template
and a submitter config).
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, policy_problems, render
from trainkit import (
    Capacity,
    Cluster,
    HeadService,
    ModelError,
    Policy,
    Queue,
    RayCluster,
    RayJob,
    RayStart,
    Resources,
    Role,
    RuntimeEnv,
    Team,
    Toleration,
    WorkerGroup,
)
from trainkit.effective import effective_job
from trainkit.errors import DefinitionError
from trainkit.explain import format_text
from trainkit.load import Definition
from trainkit.render.kuberay import entrypoint, submitter_args
from trainkit.resolve import build_plan
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

KUBERAY = {"operators": ["kuberay"]}
HEAD = Resources(cpu=2, memory="8Gi")
CPU = Resources(cpu=4, memory="16Gi")
P = "jobs/platform/p.py"
SUBMITTER = Role(image="registry.example.com/ml/submitter:v1.5.1", command=["/submitter"])


def rj(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "sweep",
        "image": "registry.example.com/ml/ray:2.60.0",
        "command": ["python", "-m", "sweep"],
        "head": HEAD,
        "workers": [WorkerGroup(name="cpu", nodes=2, resources=CPU)],
    }
    return RayJob(**(fields | kw))


def rc(**kw: Any) -> RayCluster:
    fields: dict[str, Any] = {
        "name": "pool",
        "image": "registry.example.com/ml/ray:2.60.0",
        "head": HEAD,
        "workers": [WorkerGroup(name="cpu", nodes=2, resources=CPU)],
    }
    return RayCluster(**(fields | kw))


def head_of(body: dict[str, Any]) -> dict[str, Any]:
    spec = body["spec"]
    cluster: dict[str, Any] = spec.get("rayClusterSpec", spec)
    head: dict[str, Any] = cluster["headGroupSpec"]
    return head


def service_ports(body: dict[str, Any]) -> dict[str, int]:
    """The head Service's ports as KubeRay v1.7.0 builds them from the rendered head
    container (common/service.go getServicePorts: the container's ports, else the defaults,
    and ``metrics`` always)."""
    container = head_of(body)["template"]["spec"]["containers"][0]
    ports = {
        p.get("name") or f"{p['containerPort']}-port": p["containerPort"]
        for p in container.get("ports", [])
    }
    if not ports:
        ports = {
            "client": 10001,
            "gcs-server": 6379,
            "dashboard": 8265,
            "metrics": 8080,
            "serve": 8000,
        }
    ports.setdefault("metrics", 8080)
    return ports


def problems_of(job: Any, team: dict[str, Any] | None = None, **cluster: Any) -> list[str]:
    with pytest.raises(DefinitionError) as e:
        planned(job, team, **KUBERAY, **cluster)
    return [f"{p.field}: {p.message}" for p in e.value.problems]


def policy(job: Any, *platform: Any, **cluster: Any) -> list[str]:
    c = Cluster(name="c", server="https://c", gpus_per_node=8, **KUBERAY, **cluster)
    defs = [
        Definition(c, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        *(Definition(o, P, "platform") for o in platform),
        Definition(job, "jobs/t/j.py", "t"),
    ]
    found = policy_problems(defs)
    return [f"{p.field}: {p.message}" for p in found]


# --- bad values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"head_service": {"name": "Head_Svc"}}, "head_service.name"),
        ({"head_service": {"name": "a" * 64}}, "head_service.name"),
        ({"head_service": {"type": "ExternalName"}}, "head_service.type"),
        ({"head_service": {"ports": [80]}}, "head_service.ports"),
        (
            {"ray_cluster": "pool", "head": None, "workers": [], "head_service": HeadService()},
            "head_service shapes the Ray cluster's pods, which are RayCluster 'pool''s",
        ),
        # validation_test.go: "SidecarMode doesn't support SubmitterPodTemplate"
        (
            {"submission_mode": "SidecarMode", "submitter": SUBMITTER},
            "submitter shape the submitter Job of K8sJobMode, but submission_mode is "
            "'SidecarMode', which has none",
        ),
        # ... "SidecarMode doesn't support SubmitterConfig"
        (
            {"submission_mode": "SidecarMode", "submitter_backoff_limit": 1},
            "submitter_backoff_limit shape the submitter Job of K8sJobMode, but submission_mode "
            "is 'SidecarMode'",
        ),
        ({"submission_mode": "HTTPMode", "submitter": SUBMITTER}, "'HTTPMode', which has none"),
        ({"submitter_backoff_limit": -1}, "submitter_backoff_limit"),
        ({"submitter_backoff_limit": 11}, "submitter_backoff_limit"),
        (
            {"submitter": Role(replicas=2)},
            "submitter.replicas is 2; KubeRay runs one submitter pod at a time",
        ),
        (
            {"submitter": Role(restart_policy="ExitCode")},
            "submitter.restart_policy 'ExitCode' is the Training Operator's",
        ),
        ({"submitter": {"restart_policy": "Always"}}, "'Always' restarts the role"),
        (
            {"submitter": Role(command=["/submitter"], args=["--", "python", "x.py"])},
            "submitter.args: trainkit writes the submitter's arguments from the job's script or "
            "command, runtime_env and entrypoint resources",
        ),
        (
            {
                "submitter": Role(resources=Resources(cpu=1, memory="1Gi")),
                "submitter_resources": Resources(cpu=1, memory="1Gi"),
            },
            "submitter.resources and submitter_resources both size the submitter pod",
        ),
        (
            {"submitter": Role(resources=Resources(cpu=1, memory="1Gi", gpu=1))},
            "submitter.resources.gpu: the submitter only submits the job",
        ),
        (
            {"submitter": Role(env={"RAY_DASHBOARD_ADDRESS": "evil:8265"})},
            "submitter.env: RAY_DASHBOARD_ADDRESS may not be set: KubeRay sets it on the "
            "submitter to the head's dashboard",
        ),
        (
            {"submitter": Role(env={"RAY_JOB_SUBMISSION_ID": "x"})},
            "RAY_JOB_SUBMISSION_ID may not be set: KubeRay sets it on the submitter",
        ),
        (
            {"submitter": Role(env={"PYTHONUNBUFFERED": "0"})},
            "PYTHONUNBUFFERED may not be set: KubeRay sets it on the submitter, after the env "
            "given (1) — remove it from the submitter's env",
        ),
    ],
)
def test_each_bad_value_is_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        rj(**fields)
    assert says in str(e.value)


def test_a_raycluster_s_bad_head_service_is_refused() -> None:
    with pytest.raises(ModelError) as e:
        rc(head_service={"type": "ExternalName"})
    assert "head_service.type" in str(e.value)


# --- grants: what an exposed head Service widens ---------------------------------------------------


@pytest.mark.parametrize("make", [rj, rc])
@pytest.mark.parametrize("kind", ["NodePort", "LoadBalancer"])
def test_an_exposed_head_service_needs_the_team_s_grant(make: Any, kind: str) -> None:
    job = make(head_service=HeadService(type=kind))
    (msg,) = problems_of(job)
    assert msg.startswith(
        f"head_service.type: head_service type {kind!r} opens the Ray head beyond the cluster: "
        "its dashboard runs any job submitted to it, as this job (its service account, Secrets "
        "and GPUs); team 't' is not granted it (Team.ray_head_service_types in "
        "jobs/platform/p.py allows none): use type='ClusterIP'"
    ), msg
    other = "LoadBalancer" if kind == "NodePort" else "NodePort"
    assert problems_of(job, {"ray_head_service_types": [other]})
    body, _ = render(job, {"ray_head_service_types": [kind]}, **KUBERAY)
    assert head_of(body)["serviceType"] == kind


def test_the_job_s_own_ports_on_an_exposed_head_service_need_their_grant() -> None:
    job = rj(head_service=HeadService(type="NodePort"), ports={"serve": 8000, "status": 8081})
    found = problems_of(job, {"ray_head_service_types": ["NodePort"]})
    assert found == [
        f"ports.{name}: port {name!r} would be reachable on the NodePort head Service (KubeRay "
        "puts every port of the head's container on it); team 't' may expose none there "
        "(Team.ray_head_service_ports in jobs/platform/p.py): drop the port, keep the Service "
        "a ClusterIP one, or ask the platform team to grant it"
        for name in ("serve", "status")
    ]
    grants = {"ray_head_service_types": ["NodePort"], "ray_head_service_ports": ["serve"]}
    assert [m.split(":")[0] for m in problems_of(job, grants)] == ["ports.status"]
    grants["ray_head_service_ports"] = ["serve", "status"]
    body, _ = render(job, grants, **KUBERAY)
    assert set(service_ports(body)) == {
        "gcs-server", "dashboard", "client", "serve", "status", "metrics"
    }  # fmt: skip


def test_clusterip_needs_no_grant_even_with_ports_or_a_name() -> None:
    for job in (
        rj(head_service=HeadService(), ports={"serve": 8000}),
        rj(head_service=HeadService(name="sweep-dash"), ports={"serve": 8000}),
        rc(head_service=HeadService(name="pool-dash")),
    ):
        body, _ = render(job, **KUBERAY)
        assert "serviceType" not in head_of(body)


@pytest.mark.parametrize(
    ("first", "second", "whose"),
    [
        (
            rj(name="a", head_service=HeadService(name="dash")),
            rj(name="b", head_service=HeadService(name="dash")),
            "the head Service of RayJob 'a'",
        ),
        # utils/util.go GenerateHeadServiceName: a RayJob's own Service is <name>-head-svc,
        # as is a RayCluster's by default.
        (rj(name="a"), rj(name="b", head_service=HeadService(name="a-head-svc")), "KubeRay's head Service of RayJob 'a'"),
        (rc(name="pool"), rj(name="b", head_service=HeadService(name="pool-head-svc")), "KubeRay's head Service of RayCluster 'pool'"),
    ],
)  # fmt: skip
def test_a_head_service_name_taken_in_the_namespace_is_refused(
    first: Any, second: Any, whose: str
) -> None:
    c = Cluster(name="c", server="https://c", gpus_per_node=8, **KUBERAY)
    defs = [
        Definition(c, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(first, "jobs/t/a.py", "t"),
        Definition(second, "jobs/t/b.py", "t"),
    ]
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    (p,) = e.value.problems
    assert p.field == "head_service.name"
    assert p.message.startswith(
        f"head_service name {second.head_service.name!r} is already {whose} (jobs/t/a.py"
    ), p.message
    assert "in namespace 't' on cluster 'c'; KubeRay would not create a second" in p.message


def test_the_same_head_service_name_in_another_team_s_namespace_is_fine() -> None:
    c = Cluster(name="c", server="https://c", gpus_per_node=8, **KUBERAY)
    defs = [
        Definition(c, P, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), P, "platform"),
        Definition(Team(name="t", queues=["q"]), P, "platform"),
        Definition(Team(name="u", queues=["q"]), P, "platform"),
        Definition(rj(name="a", head_service=HeadService(name="dash")), "jobs/t/a.py", "t"),
        Definition(rj(name="a", head_service=HeadService(name="dash")), "jobs/u/a.py", "u"),
    ]
    assert len(build_plan(defs).clusters[0].jobs) == 2


# --- rendering ---------------------------------------------------------------------------------------


def test_by_default_no_head_service_is_written() -> None:
    for job in (rj(), rc()):
        body, _ = render(job, **KUBERAY)
        assert "headService" not in head_of(body) and "serviceType" not in head_of(body)


def test_a_named_head_service_and_the_workers_reach_the_head_by_it() -> None:
    body, pj = render(rc(head_service=HeadService(name="pool-dash")), **KUBERAY)
    assert head_of(body)["headService"] == {"metadata": {"name": "pool-dash"}}
    ej = effective_job(pj, body)
    worker = next(ps for ps in ej.pod_sets if ps.role == "cpu")
    env = {e.name: e.value for e in worker.env}
    # utils/util.go GenerateFQDNServiceName: the head Service's own name.
    assert env["FQ_RAY_IP"] == "pool-dash.<namespace>.svc.cluster.local"
    assert env["RAY_ADDRESS"] == "pool-dash.<namespace>.svc.cluster.local:6379"
    assert any("Service pool-dash is a ClusterIP one with a cluster IP" in n for n in ej.notes)


@pytest.mark.parametrize("make", [rj, rc])
@pytest.mark.parametrize("ports", [{}, {"serve": 8000}, {"status": 8081, "debug": 5678}])
def test_the_head_service_always_carries_ray_s_ports(make: Any, ports: dict[str, int]) -> None:
    """service_test.go TestBuildServiceForHeadPodDefaultPorts: with a port of its own on the
    head container, KubeRay's Service carries that port and metrics only; the RayJob controller
    then finds no dashboard port (utils/util.go FetchHeadServiceURL) and never submits.
    trainkit writes Ray's ports beside the job's."""
    body, _ = render(make(ports=ports), **KUBERAY)
    carried = service_ports(body)
    assert {"gcs-server": 6379, "dashboard": 8265, "client": 10001}.items() <= carried.items()
    assert ports.items() <= carried.items()


def test_a_custom_submitter_command_gets_the_entrypoint_as_arguments() -> None:
    # rayjob_controller_unit_test.go TestGetSubmitterTemplate: an entrypoint with quotes.
    job = rj(
        command=["echo", "no", "quote", "single quote", '"double quote"'],
        runtime_env=RuntimeEnv(pip=["requests==2.26.0"], env_vars={"counter_name": "c"}),
        entrypoint_cpus=2,
        entrypoint_resources={"slot": 1},
        workers=[WorkerGroup(name="cpu", resources=CPU, ray_start=RayStart(resources={"slot": 2}))],
        submitter=SUBMITTER,
    )
    body, _ = render(
        job, policy=Policy(package_indexes=["https://pypi.example.com/simple/"]), **KUBERAY
    )
    spec = body["spec"]
    # KubeRay reads none of them with a submitter command (configureSubmitterContainer).
    for key in ("entrypoint", "runtimeEnvYAML", "entrypointNumCpus", "entrypointResources"):
        assert key not in spec
    (c,) = spec["submitterPodTemplate"]["spec"]["containers"]
    assert c["image"] == "registry.example.com/ml/submitter:v1.5.1"
    assert c["command"] == ["/submitter"]
    args = c["args"]
    cut = args.index("--")
    flags = dict(zip(args[:cut:2], args[1:cut:2], strict=True))
    assert yaml.safe_load(flags["--runtime-env-json"]) == {
        "env_vars": {"counter_name": "c"},
        "pip": {
            "packages": ["requests==2.26.0"],
            "pip_install_options": [
                "--disable-pip-version-check",
                "--no-cache-dir",
                "--index-url",
                "https://pypi.example.com/simple/",
            ],
        },
    }
    assert flags["--entrypoint-num-cpus"] == "2"
    assert flags["--entrypoint-resources"] == '{"slot":1}'
    # rayjob-submitter/cmd/main.go joins the words after -- with spaces: the same shell line
    # `ray job submit` would get.
    words = args[cut + 1 :]
    assert " ".join(words) == entrypoint(job)
    assert shlex.split(" ".join(words)) == job.command


def test_the_default_submitter_command_keeps_the_spec_s_entrypoint() -> None:
    body, _ = render(rj(submitter=Role(image="registry.example.com/ml/ray-cli:2.60.0")), **KUBERAY)
    spec = body["spec"]
    assert spec["entrypoint"] == "python -m sweep"
    (c,) = spec["submitterPodTemplate"]["spec"]["containers"]
    # TestGetSubmitterTemplate: KubeRay fills in `ray job submit` where no command is given.
    assert "command" not in c and "args" not in c
    assert c["image"] == "registry.example.com/ml/ray-cli:2.60.0"


def test_the_submitter_s_settings_replace_the_job_s_on_its_pod() -> None:
    gpu = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
    cpu = Toleration(key="pool", operator="Equal", value="cpu", effect="NoSchedule")
    job = rj(
        tolerations=[gpu],
        submitter=Role(
            resources=Resources(cpu=1, memory="256Mi"),
            env={"HTTPS_PROXY": "http://proxy:3128"},
            restart_policy="OnFailure",
            node_selector={"pool": "cpu"},
            tolerations=[cpu],
        ),
        submitter_backoff_limit=1,
    )
    body, _ = render(job, tolerations=[gpu, cpu], **KUBERAY)
    spec = body["spec"]
    assert spec["submitterConfig"] == {"backoffLimit": 1}
    pod = spec["submitterPodTemplate"]["spec"]
    assert pod["restartPolicy"] == "OnFailure"
    assert pod["nodeSelector"] == {"pool": "cpu"}
    assert pod["tolerations"] == [
        {"key": "pool", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}
    ]
    (c,) = pod["containers"]
    assert c["image"] == "registry.example.com/ml/ray:2.60.0"  # the head's, as KubeRay's
    assert c["resources"]["limits"] == {"cpu": "1", "memory": "256Mi"}
    assert {"name": "HTTPS_PROXY", "value": "http://proxy:3128"} in c["env"]


def test_on_an_existing_raycluster_the_submitter_may_run_its_own_command() -> None:
    pool = rc(name="pool")
    job = RayJob(
        name="eval",
        image="registry.example.com/ml/ray:2.60.0",
        ray_cluster="pool",
        command=["python", "-m", "evals.bleu"],
        submitter=SUBMITTER,
    )
    c = Cluster(name="c", server="https://c", gpus_per_node=8, scheduler="default", **KUBERAY)
    defs = [
        Definition(c, P, "platform"),
        Definition(Team(name="t"), P, "platform"),
        Definition(pool, "jobs/t/pool.py", "t"),
        Definition(job, "jobs/t/eval.py", "t"),
    ]
    (cp,) = build_plan(defs).clusters
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == "RayJob"]
    assert "entrypoint" not in body["spec"]
    (sub,) = body["spec"]["submitterPodTemplate"]["spec"]["containers"]
    assert sub["args"] == ["--", "python", "-m", "evals.bleu"]
    pj = next(p for p in cp.jobs if p.kind == "RayJob")
    assert "the entrypoint `python -m evals.bleu` is submitted" in effective_job(pj, body).notes[0]


@pytest.fixture(scope="module")
def crdset() -> Any:
    return shared_crd_set()


def test_what_is_rendered_passes_kuberay_s_crds(crdset: Any) -> None:
    grants = {"ray_head_service_types": ["LoadBalancer"], "ray_head_service_ports": ["serve"]}
    for job in (
        rj(
            head_service=HeadService(name="dash", type="LoadBalancer"),
            ports={"serve": 8000},
            submitter=SUBMITTER,
            submitter_backoff_limit=0,
        ),
        rc(head_service=HeadService(name="pool-dash", type="LoadBalancer")),
    ):
        (cp,) = planned(job, grants, **KUBERAY).clusters
        for rendered in _cluster_objects(cp):
            assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []


# --- policy: the submitter pod is one of the job's pods -----------------------------------------


def test_a_submitter_image_from_another_registry_is_refused() -> None:
    job = rj(submitter=Role(image="docker.io/evil/miner:1", command=["/miner"]))
    found = policy(job, Policy(registries=["registry.example.com/ml/"]))
    assert found and found[0].startswith("submitter.image: image 'docker.io/evil/miner:1'"), found
    assert "is not from an allowed registry" in found[0]


def test_a_submitter_image_for_another_accelerator_is_refused() -> None:
    job = rj(submitter=Role(image="registry.example.com/ml/ray:2.60.0-rocm6.2"))
    (msg,) = policy(job, accelerator="cuda")
    assert msg.startswith(
        "submitter.image: image 'registry.example.com/ml/ray:2.60.0-rocm6.2' is built for rocm "
        "but cluster 'c' runs cuda"
    ), msg


def test_a_submitter_image_per_cluster_needs_this_cluster_s() -> None:
    job = rj(submitter=Role(image={"other": "registry.example.com/ml/s:1"}))
    found = problems_of(job)
    assert any(
        m.startswith("submitter.image: no submitter.image for cluster 'c'") for m in found
    ), found


def test_a_submitter_toleration_the_cluster_does_not_allow_is_refused() -> None:
    cpu = Toleration(key="pool", operator="Equal", value="cpu", effect="NoSchedule")
    job = rj(submitter=Role(tolerations=[cpu]))
    (msg,) = policy(job)
    assert msg.startswith(
        "submitter.tolerations[0]: toleration 'pool=cpu:NoSchedule' is not allowed on cluster 'c'"
    ), msg
    assert policy(job, tolerations=[cpu]) == []


def test_a_submitter_node_label_no_node_has_is_refused() -> None:
    job = rj(submitter=Role(node_selector={"pool": "cpu"}))
    found = policy(job, node_labels={"rack": []})
    assert any(m.startswith("submitter.node_selector.pool: ") for m in found), found
    assert policy(job, node_labels={"pool": ["cpu"]}) == []


def test_explain_shows_the_submitter_and_the_head_service() -> None:
    job = rj(
        submitter=SUBMITTER,
        head_service=HeadService(name="dash", type="LoadBalancer"),
    )
    body, pj = render(job, {"ray_head_service_types": ["LoadBalancer"]}, **KUBERAY)
    text = format_text([effective_job(pj, body)])
    assert "image      registry.example.com/ml/submitter:v1.5.1" in text
    assert "command    /submitter\n    args       -- python -m sweep\n" in text
    assert (
        "note: the head's Service dash (and the RayJob's own sweep-head-svc) is a LoadBalancer "
        "one: its ports (client, dashboard, gcs-server, serve, metrics) are reachable at the load "
        "balancer's address, and its dashboard runs any job submitted to it as this job"
    ) in text, text


def test_rehearse_takes_the_entrypoint_a_custom_submitter_is_given() -> None:
    """With a submitter command the RayJob's spec holds no entrypoint or runtime env (the
    submitter's arguments do): the rehearsal runs what the submitter submits."""
    from trainkit.rehearse.definitions import targets_for

    job = rj(
        command=["python", "-c", "print('a b')"],
        runtime_env=RuntimeEnv(env_vars={"FROM_RUNTIME_ENV": "1"}),
        submitter=SUBMITTER,
    )
    c = Cluster(name="c", server="https://c", gpus_per_node=8, scheduler="default", **KUBERAY)
    platform = [Definition(c, P, "platform"), Definition(Team(name="t"), P, "platform")]
    (target,) = targets_for(Definition(job, "jobs/t/j.py", "t"), platform)
    assert target.entrypoint == "python -c 'print('\"'\"'a b'\"'\"')'"
    assert target.entrypoint == entrypoint(job)
    assert dict(target.runtime_env_vars) == {"FROM_RUNTIME_ENV": "1"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(
        st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=12),
        min_size=1,
        max_size=6,
    )
)
def test_a_submitter_submits_exactly_the_entrypoint(words: list[str]) -> None:
    """rayjob-submitter/cmd/main.go joins the words after ``--`` with spaces and Ray's job
    supervisor runs that line with a shell: for any command, the line is the one the RayJob's
    own ``entrypoint`` would be, and the shell splits it back into the command."""
    try:
        job = rj(command=words, submitter=SUBMITTER)
    except ModelError:
        assume(False)
    args = submitter_args(job, ())
    line = " ".join(args[args.index("--") + 1 :])
    assert line == entrypoint(job)
    assert shlex.split(line) == words


def test_a_deployed_raycluster_s_head_service_is_not_changed_in_place() -> None:
    """raycluster_controller.go reconcileHeadService creates the head Service once, when none
    exists, and never updates it: a changed name or type would not reach the running cluster,
    so the edit is refused in place (raise ``run``)."""
    from trainkit.deployed.immutable import in_place_changes

    old, _ = render(rc(), **KUBERAY)
    grant = {"ray_head_service_types": ["NodePort"]}
    for service, path in (
        (HeadService(name="pool-dash"), "headService"),
        (HeadService(type="NodePort"), "serviceType"),
    ):
        new, _ = render(rc(head_service=service), grant, **KUBERAY)
        assert in_place_changes(old, new) == [f"spec.headGroupSpec.{path}"]


@pytest.mark.parametrize(
    ("job", "field"),
    [
        (
            lambda: rj(submitter=Role(resources=Resources(cpu=1, memory="1Gi", memory_request="200Mi"))),
            "submitter.resources.memory_request",
        ),
        (
            lambda: rj(submitter_resources=Resources(cpu=1, memory="1Gi", memory_request="200Mi")),
            "submitter_resources.memory_request",
        ),
        (lambda: rj(head=Resources(cpu=2, memory="8Gi", memory_request="2Gi")), "head.memory_request"),
        (
            lambda: rc(workers=[WorkerGroup(name="w", resources=Resources(cpu=2, memory="8Gi", cpu_request="1"))]),
            "workers[0].resources.cpu_request",
        ),
    ],
)  # fmt: skip
def test_ray_pods_below_their_limits_need_policy_burstable(job: Any, field: str) -> None:
    """The submitter pod, the head and each worker group are held to Policy.burstable like
    every other pod (they were not checked at all before: the check skipped kinds without a
    job-wide ``resources``)."""
    (msg,) = policy(job())
    assert msg.startswith(f"{field}: a ") and "makes the pods Burstable" in msg, msg
    assert policy(job(), Policy(burstable=True)) == []
