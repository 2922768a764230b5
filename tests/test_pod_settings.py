"""working_dir, termination_grace_period and host_aliases: rendered on every kind that takes them,
shown by explain, each bad value refused with what to do, the grace period capped by Policy."""

from __future__ import annotations

import json
import re

import pytest

from example_edits import edit
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import (
    EmptyDir,
    JAXJob,
    MPIJob,
    PaddleJob,
    PodAffinity,
    Probe,
    PyTorchJob,
    RayJob,
    Resources,
    Script,
    TFJob,
    TrainJob,
    Volume,
    XGBoostJob,
)
from trainkit.kube.pods import pod_specs
from trainkit.model.messages import ModelError

POLICY = "jobs/platform/policy.py"
RESNET = "jobs/vision/resnet50_ddp.py"
SFT = "jobs/llm/llama_sft_trainjob.py"
RES = Resources(cpu=1, memory="1Gi")
KINDS = {
    "PyTorchJob": (RESNET, "pytorchjob-resnet50-ddp.yaml"),
    "TFJob": ("jobs/vision/mobilenet_ps.py", "tfjob-mobilenet-ps-r1.yaml"),
    "PaddleJob": ("jobs/vision/resnet_paddle.py", "paddlejob-resnet-paddle.yaml"),
    "JAXJob": ("jobs/llm/bigram_jax.py", "jaxjob-bigram-jax.yaml"),
    "MPIJob": ("jobs/llm/llama_pretrain_deepspeed.py", "mpijob-llama-pretrain-deepspeed-r6.yaml"),
    "RayJob": ("jobs/llm/lr_sweep_ray.py", "rayjob-lr-sweep-ray-r3.yaml"),
}
FIELDS = (
    'working_dir="/mnt/code", termination_grace_period=90, '
    'host_aliases={"10.0.0.5": ["minio.lab.internal", "minio"], "fd00::5": ["v6.lab.internal"]},'
)


def add_fields(ws, rel: str, fields: str) -> None:
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    text = re.sub(
        r'(\n    name="[^"]+",\n)', lambda m: m.group(1) + f"    {fields}\n", text, count=1
    )
    path.write_text(text, encoding="utf-8")


ELASTIC = "jobs/vision/resnet50_elastic.py"  # a PyTorchJob with a script, beside RESNET
LIVE = 'liveness_probe=Probe(http_get="/healthz", port="status", period=20),'
AFFINITY = (
    'pod_labels={"example.com/shard": "a"}, pod_affinity=['
    'PodAffinity(labels={"example.com/shard": "a"}, anti=True), '
    'PodAffinity(labels={"example.com/shard": "a"}, topology_key="topology.kubernetes.io/zone", '
    "weight=20)],"
)


@pytest.fixture(scope="module")
def tree(module_ws, module_cli) -> SharedTree:
    """The fields of this module's end-to-end tests, each on one job of every kind (the
    grace period also on a TrainJob, the mount beside the script on ELASTIC), synthesized
    once: each test reads its own."""
    ws = module_ws
    keep_only(ws, [*(rel for rel, _ in KINDS.values()), SFT, ELASTIC])
    for rel, _ in KINDS.values():
        add_fields(ws, rel, FIELDS)  # test_every_kind_with_pods_renders_them_…
        add_fields(ws, rel, 'ports={"status": 8081},')  # test_ports_…, and the probes' port
        # test_probes_…
        add_fields(ws, rel, 'startup_probe=Probe(exec=["test", "-f", "/tmp/up"], '
                   "failure_threshold=30), " + LIVE)  # fmt: skip
        add_fields(ws, rel, AFFINITY)  # test_pod_affinity_…
        edit(ws, rel, "from trainkit import", "from trainkit import PodAffinity, Probe,")
    edit(
        ws,
        KINDS["RayJob"][0],
        "startup_probe=",
        "readiness_probe=Probe(tcp_socket=True, port=8081), startup_probe=",
    )
    add_fields(ws, SFT, "termination_grace_period=90,")
    # test_a_mount_beside_the_script_…
    edit(
        ws,
        ELASTIC,
        "    shm_size=",
        '    volumes=[Volume(claim="ckpt", path="/workspace/ckpt")],\n    shm_size=',
    )
    edit(ws, ELASTIC, "from trainkit import", "from trainkit import Volume,")
    return SharedTree.synthesized(ws, module_cli)


def test_every_kind_with_pods_renders_them_and_explain_shows_them(tree, crds) -> None:
    aliases = [
        {"ip": "10.0.0.5", "hostnames": ["minio.lab.internal", "minio"]},
        {"ip": "fd00::5", "hostnames": ["v6.lab.internal"]},
    ]
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            checked = 0
            for path, spec in pod_specs(doc):
                if "submitterPodTemplate" in path:
                    continue  # KubeRay's submitter runs `ray job submit`, not the job's code
                assert spec["terminationGracePeriodSeconds"] == 90, (kind, path)
                assert spec["hostAliases"] == aliases, (kind, path)
                assert spec["containers"][0]["workingDir"] == "/mnt/code", (kind, path)
                checked += 1
            assert checked, kind
    (trainjob,) = tree.docs("trainjob-llama-sft-r1.yaml")
    (patch,) = trainjob["spec"]["runtimePatches"]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]
    assert pod["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 90
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert run.code == 0, run.err
    assert (
        "    workdir    /mnt/code\n"
        "    stopping   90 s after SIGTERM, then killed\n"
        "    /etc/hosts 10.0.0.5 minio.lab.internal minio\n"
        "    /etc/hosts fd00::5 v6.lab.internal\n"
    ) in run.out, run.out
    run = tree.run("explain", "llama-sft", "--format", "json")
    (explained,) = json.loads(run.out)["jobs"]
    assert explained["pods"][0]["termination_grace_period"] == 90
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.err


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"working_dir": "code"}, "'code' must be an absolute path inside the container"),
        ({"termination_grace_period": -1}, "termination_grace_period: must be at least 0"),
        ({"termination_grace_period": 86401}, "termination_grace_period: must be at most 86400"),
        ({"host_aliases": {"10.0.0.256": ["a"]}}, "'10.0.0.256' is not an IP address"),
        ({"host_aliases": {"010.0.0.1": ["a"]}}, "'010.0.0.1' is not an IP address"),
        ({"host_aliases": {"minio": ["a"]}}, "'minio' is not an IP address; give an IPv4"),
        ({"host_aliases": {"10.0.0.5": ["Minio_1"]}}, "'Minio_1' is not a host name: use at most"),
        ({"host_aliases": {"10.0.0.5": []}}, "host_aliases['10.0.0.5'] lists no host name"),
        (
            {"host_aliases": {"10.0.0.5": ["a"], "10.0.0.6": ["a"]}},
            "host name 'a' is listed for 10.0.0.5 and 10.0.0.6 in host_aliases; give each name "
            "one address, once",
        ),
        ({"host_aliases": {"10.0.0.5": ["a", "a"]}}, "host name 'a' is listed twice"),
    ],
)
def test_each_bad_value_is_refused_with_what_to_do(fields, says) -> None:
    with pytest.raises(ModelError) as err:
        PyTorchJob(name="x", image="i", command=["python"], resources=RES, **fields)
    assert says in str(err.value), str(err.value)


@pytest.mark.parametrize("field", ["working_dir", "host_aliases"])
def test_a_trainjob_has_no_field_its_runtime_patch_cannot_carry(field) -> None:
    # Trainer v2.3's runtime patches take neither workingDir nor hostAliases (the CRD).
    value = "/x" if field == "working_dir" else {"10.0.0.5": ["a"]}
    with pytest.raises(ModelError) as err:
        TrainJob(name="x", runtime="r", **{field: value})
    assert field in str(err.value)


def test_the_grace_period_is_capped_by_the_policy(ws) -> None:
    # A pod keeps its GPUs until it has stopped: a long grace period holds them past preemption.
    add_fields(ws, RESNET, "termination_grace_period=900,")
    err = refusals(ws)
    assert (
        "PyTorchJob 'resnet50-ddp': termination_grace_period: the Master pods may take 900 s to "
        "stop after SIGTERM, holding their GPUs while a preempting job waits; "
        f"Policy.max_termination_grace_period in {POLICY} allows at most 300 s: checkpoint "
        "sooner, or ask the platform team"
    ) in err, err
    edit(
        ws, POLICY, "max_gpus_per_job=64,", "max_gpus_per_job=64, max_termination_grace_period=900,"
    )
    assert refusals(ws) == ""


def test_a_runtime_s_grace_period_reaches_its_trainjobs_and_is_capped(ws) -> None:
    add_fields(ws, SFT, "termination_grace_period=301,")
    err = refusals(ws)
    assert "TrainJob 'llama-sft': termination_grace_period: the node pods may take 301 s" in err


# --- mounts under /workspace --------------------------------------------------------------


def test_a_mount_beside_the_script_and_anywhere_in_a_command_job_s_workspace(tree, crds):
    (job,) = tree.docs("pytorchjob-resnet50-elastic-r1.yaml")
    (c,) = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert c["workingDir"] == "/workspace"
    assert [m["mountPath"] for m in c["volumeMounts"]] == [
        "/workspace/train_resnet.py",
        "/dev/shm",
        "/workspace/ckpt",
    ]
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.err
    # A job running its own command ships nothing there: /workspace itself is the job's.
    job = PyTorchJob(
        name="x", image="i", command=["python", "/workspace/train.py"], resources=RES,
        volumes=[Volume(claim="code", path="/workspace", read_only=True)],
    )  # fmt: skip
    assert job.volumes[0].path == "/workspace"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (
            "/workspace",
            "volumes[0] at '/workspace' would hide the script, which trainkit mounts at "
            "/workspace/train.py (the directory /workspace stays the image's, writable); mount "
            "beside it, e.g. /workspace/data, or elsewhere",
        ),
        ("/workspace/train.py", "volumes[0] at '/workspace/train.py' would hide the script"),
        ("/workspace/train.py/x", "volumes[0] at '/workspace/train.py/x' would hide the script"),
    ],
)
def test_a_mount_that_would_hide_the_script_is_refused(path, says) -> None:
    with pytest.raises(ModelError) as err:
        PyTorchJob(
            name="x", image="i", script=Script.file("train.py"), resources=RES,
            volumes=[EmptyDir(name="s", path=path, size="1Gi")],
        )  # fmt: skip
    assert says in str(err.value), str(err.value)


@pytest.mark.parametrize("path", ["/workspace/dataset", "/workspace/model/x"])
def test_a_trainjob_keeps_trainer_s_initializer_directories(path) -> None:
    with pytest.raises(ModelError) as err:
        TrainJob(name="x", runtime="r", volumes=[Volume(claim="c", path=path)])
    assert "where Kubeflow Trainer's initializers put the dataset and the model" in str(err.value)
    assert TrainJob(name="x", runtime="r", volumes=[Volume(claim="c", path="/workspace/data")])


# --- container ports ----------------------------------------------------------------------


def test_ports_follow_the_operator_s_on_every_kind_and_explain_lists_them(tree, crds):
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            for path, spec in pod_specs(doc):
                if "submitterPodTemplate" in path or (kind, path[-3]) == ("MPIJob", "Launcher"):
                    continue  # neither runs the job's program
                ports = spec["containers"][0]["ports"]
                assert ports[-1] == {"containerPort": 8081, "name": "status", "protocol": "TCP"}, (
                    kind
                )
    (job, *_) = tree.docs(KINDS["PyTorchJob"][1])
    (c,) = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert [p["name"] for p in c["ports"]] == ["pytorchjob-port", "status"]
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert "    ports      pytorchjob-port 23456, status 8081\n" in run.out, run.out
    assert tree.run("check", "--crds", str(crds)).code == 0


def test_on_the_host_network_a_port_is_the_node_s_too() -> None:
    # The API server makes every containerPort of a host-network pod a hostPort: say so.
    from trainkit.model import NetworkProfile
    from trainkit.render.pod import job_ports

    job = PyTorchJob(name="x", image="i", command=["p"], resources=RES, ports={"status": 8081})
    host = NetworkProfile(name="h", host_network=True)
    assert job_ports(job, host) == [
        {"containerPort": 8081, "name": "status", "protocol": "TCP", "hostPort": 8081}
    ]
    assert "hostPort" not in job_ports(job, None)[0]


@pytest.mark.parametrize(
    ("kind", "ports", "says"),
    [
        (PyTorchJob, {"status": 0}, "ports.status: must be at least 1"),
        (PyTorchJob, {"status": 65536}, "ports.status: must be at most 65535"),
        (PyTorchJob, {"prometheus-metrics": 9090}, "'prometheus-metrics' is not a port name "
         "(IANA_SVC_NAME): at most 15 characters, e.g. 'metrics'"),
        (PyTorchJob, {"Metrics": 9090}, "only lowercase letters, digits and '-'"),
        (PyTorchJob, {"9090": 9090}, "at least one letter"),
        (PyTorchJob, {"a--b": 9090}, "no '-' at either end or twice in a row"),
        (PyTorchJob, {"a": 9090, "b": 9090}, "ports 'a' and 'b' are both 9090; give each port "
         "one name"),
        (PyTorchJob, {"rdzv": 23456}, "port 'rdzv' is 23456, which the Training Operator's "
         "rendezvous (MASTER_PORT, pytorchjob-port) uses in a PyTorchJob's pods: the program "
         "could not listen there; choose another number"),
        (PyTorchJob, {"pytorchjob-port": 9000}, "port name 'pytorchjob-port' is the one the "
         "Training Operator's rendezvous (MASTER_PORT, pytorchjob-port) has in a PyTorchJob's "
         "pods; choose another name"),
        (TFJob, {"x": 2222}, "which TF_CONFIG's cluster, at tfjob-port uses"),
        (XGBoostJob, {"x": 9999}, "which XGBoost's tracker, at xgboostjob-port uses"),
        (JAXJob, {"x": 6666}, "which JAX's coordinator, at jaxjob-port uses"),
        (PaddleJob, {"x": 40000}, "paddle-operator's endpoints (a random port in 36000-55999"),
        (MPIJob, {"x": 22}, "which sshd, which mpi-operator's launcher reaches"),
        (RayJob, {"x": 8265}, "which KubeRay's Ray pods: the dashboard uses"),
        (RayJob, {"metrics": 9000}, "port name 'metrics' is the one KubeRay's Ray pods' port"),
    ],
)  # fmt: skip
def test_each_bad_port_is_refused_with_what_to_do(kind, ports, says) -> None:
    fields: dict = {"name": "x", "image": "i", "command": ["python"], "ports": ports}
    if kind is RayJob:
        fields |= {"head": Resources(cpu=1, memory="1Gi")}
    else:
        fields |= {"resources": RES}
    with pytest.raises(ModelError) as err:
        kind(**fields)
    assert says in str(err.value), str(err.value)


def test_the_operator_port_table_matches_the_renderers() -> None:
    from trainkit.injected_env.operator_ports import operator_ports
    from trainkit.model.mpijob import HOST_NETWORK_SSH_PORT
    from trainkit.render import jax, paddle, tensorflow, training_operator, xgboost

    for kind, module in (
        ("PyTorchJob", training_operator), ("TFJob", tensorflow), ("XGBoostJob", xgboost),
        ("JAXJob", jax), ("PaddleJob", paddle),
    ):  # fmt: skip
        assert operator_ports(kind).name_reason(module.PORT_NAME), kind
    assert operator_ports("MPIJob").number_reason(HOST_NETWORK_SSH_PORT)


# --- probes -------------------------------------------------------------------------------


def test_probes_reach_the_job_s_container_on_every_kind_and_explain_shows_them(tree, crds):
    live = {
        "httpGet": {"path": "/healthz", "port": "status"}, "initialDelaySeconds": 0,
        "periodSeconds": 20, "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1,
    }  # fmt: skip
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            for path, spec in pod_specs(doc):
                if "submitterPodTemplate" in path or (kind, path[-3]) == ("MPIJob", "Launcher"):
                    assert "livenessProbe" not in spec["containers"][0], (kind, path)
                    continue
                c = spec["containers"][0]
                assert c["livenessProbe"] == live, (kind, path)
                assert c["startupProbe"]["exec"] == {"command": ["test", "-f", "/tmp/up"]}
                assert ("readinessProbe" in c) == (kind == "RayJob"), (kind, path)
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert (
        "    liveness   GET :status/healthz every 20 s from 0 s, failing after 3 misses\n"
        "    startup    runs test -f /tmp/up every 10 s from 0 s, failing after 30 misses\n"
    ) in run.out, run.out
    assert tree.run("check", "--crds", str(crds)).code == 0


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"liveness_probe": Probe(exec=["true"], period=5)},
         "liveness_probe kills the container after 15 s of failed checks (3 × 5 s): a "
         "PyTorchJob's rank that is busy (a long collective, a checkpoint) would be killed, and "
         "a killed rank fails or hangs the whole job; make failure_threshold × period at least "
         "60 s, or use a readiness probe, which kills nothing"),
        ({"readiness_probe": Probe(exec=["true"])},
         "readiness_probe: the Training Operator's headless Services give a PyTorchJob's pod a "
         "DNS name only once it is ready"),
        ({"startup_probe": Probe(tcp_socket=True, port="web")},
         "startup_probe checks port 'web', which ports does not name (it names none); add it "
         "to ports, or give the number"),
        ({"startup_probe": Probe(exec=["true"], success_threshold=2)},
         "startup_probe.success_threshold must be 1 (the API server refuses another)"),
    ],
)  # fmt: skip
def test_each_bad_probe_use_is_refused(fields, says) -> None:
    with pytest.raises(ModelError) as err:
        PyTorchJob(name="x", image="i", command=["python"], resources=RES, **fields)
    assert says in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({}, "a probe checks one way, and this one gives none; give exactly one of exec=[…], "
         "http_get='/path', tcp_socket=True, grpc=True"),
        ({"exec": ["x"], "tcp_socket": True, "port": 1}, "this one gives exec, tcp_socket"),
        ({"exec": []}, "exec is empty"),
        ({"exec": ["x"], "port": 80}, "an exec probe takes no port"),
        ({"http_get": "/"}, "a http_get probe needs port=, a number or a name of ports"),
        ({"http_get": "healthz", "port": 80}, "'healthz' is not an HTTP path: start with '/'"),
        ({"grpc": True, "port": "status"}, "a grpc probe's port is a number, not 'status'"),
        ({"exec": ["x"], "period": 5, "timeout": 10}, "timeout 10 s is longer than the period"),
        ({"exec": ["x"], "period": 0}, "period: must be at least 1"),
        ({"tcp_socket": True, "port": 70000}, "port"),
    ],
)  # fmt: skip
def test_each_bad_probe_is_refused(fields, says) -> None:
    with pytest.raises(ModelError) as err:
        Probe(**fields)
    assert says in str(err.value), str(err.value)


# --- pod affinity -------------------------------------------------------------------------


def test_pod_affinity_on_every_kind_and_explain_shows_it(tree, crds) -> None:
    term = {"labelSelector": {"matchLabels": {"example.com/shard": "a"}}}
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            for path, spec in pod_specs(doc):
                if "submitterPodTemplate" in path:
                    continue
                affinity = spec["affinity"]
                anti = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                assert anti[-1] == {**term, "topologyKey": "kubernetes.io/hostname"}, (kind, path)
                near = affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
                assert near[-1] == {
                    "podAffinityTerm": {**term, "topologyKey": "topology.kubernetes.io/zone"},
                    "weight": 20,
                }
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert (
        "    placed     near pods with example.com/shard=a, per topology.kubernetes.io/zone "
        "(preferred, weight 20)\n"
        "    placed     away from pods with example.com/shard=a, per kubernetes.io/hostname "
        "(required)\n"
    ) in run.out, run.out
    assert tree.run("check", "--crds", str(crds)).code == 0


def test_host_network_mpi_keeps_its_one_host_per_node_beside_the_job_s_terms() -> None:
    from trainkit.render.pod import one_per_node, pod_affinity

    spec: dict = {}
    pod_affinity(spec, [PodAffinity(labels={"a": "b"}, anti=True)])
    one_per_node(spec, {"job": "x"})
    required = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert [t["labelSelector"]["matchLabels"] for t in required] == [{"job": "x"}, {"a": "b"}]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"pod_affinity": [PodAffinity(labels={"app": "db"}, anti=True)]},
         "pod_affinity[0] selects by app=db, which the job does not set in pod_labels; pod "
         "affinity may use only the job's own labels (a required anti-affinity would also keep "
         "other pods away)"),
        ({"pod_labels": {"app": "x"}, "pod_affinity": [PodAffinity(labels={"app": "y"})]},
         "selects by app=y, which the job does not set"),
    ],
)  # fmt: skip
def test_pod_affinity_only_on_the_job_s_own_labels(fields, says) -> None:
    # The policy side: matching another workload's labels could steer where its pods go.
    with pytest.raises(ModelError) as err:
        PyTorchJob(name="x", image="i", command=["python"], resources=RES, **fields)
    assert says in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"labels": {}}, "labels is empty, which would match every pod of the namespace"),
        ({"labels": {"a": "b"}, "weight": 0}, "weight: must be at least 1"),
        ({"labels": {"a": "b"}, "weight": 101}, "weight: must be at most 100"),
        ({"labels": {"a": "b"}, "topology_key": "not a key"}, "topology_key"),
    ],
)
def test_each_bad_pod_affinity_is_refused(fields, says) -> None:
    with pytest.raises(ModelError) as err:
        PodAffinity(**fields)
    assert says in str(err.value), str(err.value)


# --- node labels the cluster lists --------------------------------------------------------

CLUSTERS = "jobs/platform/clusters.py"


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ('node_selector={"gpu.product": "A100"},', "node_selector.gpu.product",
         "no node of cluster 'gpu-east' has label 'gpu.product' (Cluster.node_labels in "
         f"{CLUSTERS} lists 'node.example.com/pool', 'nvidia.com/gpu.product', "
         "'topology.kubernetes.io/zone'): pods that need it would never be placed; use a "
         "listed label, or ask the platform team to list it"),
        ('node_affinity=[NodeLabel(key="nvidia.com/gpu.product", values=["H200"])],',
         "node_affinity[0]", "no node of cluster 'gpu-east' has nvidia.com/gpu.product=H200"),
        ('topology=Topology(key="rack", layout="pack"),', "topology",
         "no node of cluster 'gpu-east' has label 'rack'"),
        ('pod_labels={"a": "b"}, pod_affinity=[PodAffinity(labels={"a": "b"}, '
         'topology_key="rack")],', "pod_affinity[0]",
         "no node of cluster 'gpu-east' has label 'rack'"),
    ],
)  # fmt: skip
def test_a_node_rule_on_a_label_the_cluster_lacks_is_refused(ws, fields, field, says):
    add_fields(ws, RESNET, fields)
    edit(
        ws, RESNET, "from trainkit import", "from trainkit import NodeLabel, PodAffinity, Topology,"
    )
    err = refusals(ws)
    assert f"PyTorchJob 'resnet50-ddp': {field}: {says}" in err, err
    # Only where the cluster lists labels: rocm-west lists none, so nothing is said of it.
    assert "cluster 'rocm-west'" not in err


def test_listed_labels_any_value_and_the_kubelet_s_own_pass(ws) -> None:
    add_fields(
        ws, RESNET,
        'node_selector={"kubernetes.io/arch": "amd64"}, node_affinity=[NodeLabel('
        'key="topology.kubernetes.io/zone", values=["east-1a"]), NodeLabel('
        'key="nvidia.com/gpu.product", operator="NotIn", values=["T4"])],',
    )  # fmt: skip
    edit(ws, RESNET, "from trainkit import", "from trainkit import NodeLabel,")
    assert refusals(ws) == ""
