"""Volumes besides claims: scratch space, Secret and ConfigMap files, service-account tokens and
CSI volumes, on every pod that runs the job's code; keys and drivers only where the platform
grants them."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from example_edits import edit, generated_docs
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import (
    ConfigMapVolume,
    CsiVolume,
    DefinitionError,
    EmptyDir,
    MPIJob,
    PyTorchJob,
    Resources,
    SecretVolume,
    ServiceAccountToken,
    Volume,
)
from trainkit.kube.pods import pod_specs

TEAMS = "jobs/platform/teams.py"
CLUSTERS = "jobs/platform/clusters.py"
RESNET = "jobs/vision/resnet50_ddp.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
DS_TRAINJOB = "jobs/llm/llama_pretrain_deepspeed_trainjob.py"
ELASTIC = "jobs/vision/resnet50_elastic.py"  # a PyTorchJob of vision, beside RESNET
RES = Resources(cpu=1, memory="1Gi")

VOLUMES = (
    "volumes=[EmptyDir(name='scratch', path='/scratch', size='100Gi'), "
    "EmptyDir(name='fast', path='/fast', size='4Gi', memory=True), "
    "SecretVolume(name='gcs', secret='gcs-reader', path='/etc/gcs', items={'key.json': 'k.json'}), "
    "ConfigMapVolume(name='cfg', config_map='train-config', path='/etc/train', "
    "sub_path='base.yaml', optional=True), "
    "ServiceAccountToken(name='vault', path='/var/run/secrets/vault', audience='vault', "
    "expiration_seconds=1800), "
    "CsiVolume(name='store', driver='secrets-store.csi.k8s.io', path='/mnt/store', "
    "attributes={'secretProviderClass': 'ml'})],"
)
IMPORT = (
    "from trainkit import ConfigMapVolume, CsiVolume, EmptyDir, SecretVolume, ServiceAccountToken\n"
)
POD_VOLUMES = [
    {"name": "scratch", "emptyDir": {"sizeLimit": "100Gi"}},
    {"name": "fast", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}},
    {"name": "gcs", "secret": {"secretName": "gcs-reader", "items": [{"key": "key.json", "path": "k.json"}]}},
    {"name": "cfg", "configMap": {"name": "train-config", "optional": True}},
    {
        "name": "vault",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 1800, "path": "token"}}
            ]
        },
    },
    {
        "name": "store",
        "csi": {
            "driver": "secrets-store.csi.k8s.io",
            "readOnly": True,
            "volumeAttributes": {"secretProviderClass": "ml"},
        },
    },
]  # fmt: skip
MOUNTS = [
    {"mountPath": "/scratch", "name": "scratch"},
    {"mountPath": "/fast", "name": "fast"},
    {"mountPath": "/etc/gcs", "name": "gcs", "readOnly": True},
    {"mountPath": "/etc/train", "name": "cfg", "readOnly": True, "subPath": "base.yaml"},
    {"mountPath": "/var/run/secrets/vault", "name": "vault", "readOnly": True},
    {"mountPath": "/mnt/store", "name": "store", "readOnly": True},
]
GRANTS = "secrets={'gcs-reader': ['key.json']}, config_maps={'train-config': ['base.yaml']}, "
# One example job of every kind that has pods: (file, generated file name, team's line).
KINDS = {
    "PyTorchJob": ("jobs/vision/resnet50_ddp.py", "pytorchjob-resnet50-ddp.yaml"),
    "TFJob": ("jobs/vision/mobilenet_ps.py", "tfjob-mobilenet-ps-r1.yaml"),
    "PaddleJob": ("jobs/vision/resnet_paddle.py", "paddlejob-resnet-paddle.yaml"),
    "XGBoostJob": ("jobs/vision/photo_quality_xgboost.py", "xgboostjob-photo-quality-xgb-r3.yaml"),
    "JAXJob": ("jobs/llm/bigram_jax.py", "jaxjob-bigram-jax.yaml"),
    "MPIJob": (DEEPSPEED, "mpijob-llama-pretrain-deepspeed-r6.yaml"),
    "RayJob": ("jobs/llm/lr_sweep_ray.py", "rayjob-lr-sweep-ray-r3.yaml"),
    "TrainJob": ("jobs/llm/llama_sft_trainjob.py", "trainjob-llama-sft-r1.yaml"),
}


def add_fields(ws, rel: str, fields: str) -> None:
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    if "    volumes=[" in text:  # the job's own claims come after these
        text = text.replace("    volumes=[", "    " + fields.removesuffix("],") + ", ", 1)
    else:
        text = re.sub(
            r'(\n    name="[^"]+",\n)', lambda m: m.group(1) + f"    {fields}\n", text, count=1
        )
    path.write_text(IMPORT + text, encoding="utf-8")


def grant_everything(ws) -> None:
    """Both teams get the keys, every cluster the CSI driver."""
    edit(ws, TEAMS, 'vision = Team(name="vision",', f'vision = Team({GRANTS}name="vision",')
    edit(ws, TEAMS, "    max_gpus=96,", f"    {GRANTS}max_gpus=96,")
    text = (ws.root / CLUSTERS).read_text(encoding="utf-8")
    text = text.replace(
        "    gpus_per_node=8,\n", "    gpus_per_node=8, csi_drivers=['secrets-store.csi.k8s.io'],\n"
    )
    (ws.root / CLUSTERS).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def tree(module_ws, module_cli) -> SharedTree:
    """The volumes on one job of every kind, granted (the every-kind test), and a host path
    on ELASTIC, granted to its team (the host path test): synthesized once, each test reads
    its own."""
    ws = module_ws
    keep_only(ws, [*(rel for rel, _ in KINDS.values()), ELASTIC])
    for rel, _ in KINDS.values():
        add_fields(ws, rel, VOLUMES)
    grant_everything(ws)
    edit(
        ws, ELASTIC, 'queue="vision",',
        "queue='vision', volumes=[__import__('trainkit').HostPath(name='nvme', "
        "host_path='/mnt/nvme/cache', path='/cache')],",
    )  # fmt: skip
    edit(ws, TEAMS, "vision = Team(", 'vision = Team(host_paths=["/mnt/nvme"], ')
    return SharedTree.synthesized(ws, module_cli)


def test_every_kind_mounts_them_on_the_pods_that_run_its_code(tree, crds) -> None:
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            checked = 0
            for path, spec in pod_specs(doc):
                if (kind, path[-3]) == ("MPIJob", "Launcher") or "submitterPodTemplate" in path:
                    # A launcher that runs no ranks, and KubeRay's submitter, get no volumes.
                    assert not any(v["name"] == "scratch" for v in spec.get("volumes") or [])
                    continue
                own = [v for v in spec["volumes"] if v["name"] in {m["name"] for m in MOUNTS}]
                assert own == POD_VOLUMES, (kind, path)
                mounts = spec["containers"][0]["volumeMounts"]
                assert [m for m in mounts if m in MOUNTS] == MOUNTS, (kind, path)
                checked += 1
            assert checked, kind
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east", "--format", "json")
    assert run.code == 0, run.err
    (job,) = json.loads(run.out)["jobs"]
    sources = {v["path"]: v["source"] for v in job["pods"][0]["volumes"]}
    assert sources == {
        "/workspace/train_resnet.py": "ConfigMap resnet50-ddp-script-"
        + sources["/workspace/train_resnet.py"].split("-script-")[1],
        "/dev/shm": "memory (16Gi)",
        "/scratch": "the node's disk (100Gi)",
        "/fast": "memory (4Gi)",
        "/etc/gcs": "Secret gcs-reader keys key.json→k.json",
        "/etc/train": "ConfigMap train-config [base.yaml]",
        "/var/run/secrets/vault": "ServiceAccount token for 'vault' (token)",
        "/mnt/store": "CSI driver secrets-store.csi.k8s.io",
    }
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err


def test_secret_and_configmap_keys_need_the_teams_grant(ws) -> None:
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', volumes=[__import__('trainkit').SecretVolume(name='gcs', "
        "secret='gcs-reader', path='/etc/gcs', items={'key.json': 'k', 'admin.json': 'a'}), "
        "__import__('trainkit').ConfigMapVolume(name='cfg', config_map='train-config', "
        "path='/etc/train')],",
    )  # fmt: skip
    err = refusals(ws)
    for field, message in (
        (
            "volumes[0]",
            "team 'vision' may not mount Secret 'gcs-reader'; Team.secrets in "
            f"{TEAMS} allows none; list only granted keys in items, or ask the platform team",
        ),
        (
            "volumes[1]",
            "team 'vision' may not mount ConfigMap 'train-config'; Team.config_maps in "
            f"{TEAMS} allows none",
        ),
    ):
        assert f"PyTorchJob 'resnet50-ddp': {field}: {message}" in err, err
    # One key granted: the other is named.
    edit(
        ws, TEAMS, 'vision = Team(name="vision",',
        "vision = Team(secrets={'gcs-reader': ['key.json']}, "
        "config_maps={'train-config': ['a', 'b']}, name=\"vision\",",
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "volumes[0]: team 'vision' may not mount key 'admin.json' of Secret 'gcs-reader'; "
        f"Team.secrets in {TEAMS} allows keys 'key.json' of it"
    ) in err, err
    assert "volumes[1]" not in err  # the whole ConfigMap: the grant lists every key
    edit(ws, RESNET, ", 'admin.json': 'a'", "")
    assert refusals(ws) == ""


def test_a_csi_driver_must_be_one_the_cluster_lists(ws) -> None:
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', volumes=[__import__('trainkit').CsiVolume(name='s', "
        "driver='evil.example.com', path='/mnt/s')],",
    )  # fmt: skip
    err = refusals(ws)
    for cluster in ("gpu-east", "rocm-west"):
        assert (
            f"PyTorchJob 'resnet50-ddp': volumes[0]: on cluster {cluster!r}: CSI driver "
            "'evil.example.com' is not one the cluster lists (Cluster.csi_drivers: none); use a "
            "listed driver, or ask the platform team"
        ) in err, err


def test_a_trainjob_on_an_mpi_runtime_leaves_the_plugins_volume_names(ws) -> None:
    edit(
        ws, DS_TRAINJOB, 'runtime="deepspeed-0-19",',
        "runtime='deepspeed-0-19', volumes=[__import__('trainkit').EmptyDir(name='mpi-hostfile', "
        "path='/x', size='1Gi')],",
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "TrainJob 'llama-pretrain-ds': volumes[0]: volume 'mpi-hostfile' has the name of a volume "
        "Trainer's MPI plugin adds (mpi-hostfile, mpi-ssh-auth); rename it"
    ) in err, err


def _job(*volumes: object) -> PyTorchJob:
    return PyTorchJob(name="j", image="i:1", command=["true"], resources=RES, volumes=list(volumes))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: EmptyDir(name="s", path="/s"),
            "size: required",
        ),
        (
            lambda: EmptyDir(name="s", path="/s", size="lots"),
            "'lots' is not a Kubernetes quantity",
        ),
        (
            lambda: EmptyDir(name="s", path="/dev/shm/x", size="1Gi"),
            "mount path '/dev/shm/x' is used by trainkit (/dev/shm); choose another path",
        ),
        (
            lambda: EmptyDir(name="S", path="/s", size="1Gi"),
            "'S' is not a valid name",
        ),
        (
            lambda: ConfigMapVolume(name="c", config_map="c", path="/c", sub_path="/etc/x"),
            "'/etc/x' is not a relative path inside the volume: no leading '/', no '..'",
        ),
        (
            lambda: SecretVolume(name="c", secret="c", path="/c", items={"k": "../k"}),
            "'../k' is not a relative path inside the volume",
        ),
        (
            lambda: SecretVolume(name="c", secret="c", path="/c", items={"bad key": "k"}),
            "'bad key' is not a valid key",
        ),
        (
            lambda: ServiceAccountToken(name="t", path="/t", audience="vault", expiration_seconds=60),
            "expiration_seconds: must be at least 600",
        ),
        (
            lambda: ServiceAccountToken(name="t", path="/t", audience=""),
            "audience",
        ),
        (
            lambda: CsiVolume(name="c", driver="Not A Driver", path="/c"),
            "'Not A Driver' is not a valid object name",
        ),
        (
            lambda: _job(EmptyDir(name="dshm", path="/s", size="1Gi")),
            "volume 'dshm' has the name of a volume trainkit generates (dshm, script); rename "
            "the volume",
        ),
        (
            lambda: _job(
                EmptyDir(name="data", path="/s", size="1Gi"), Volume(claim="data", path="/d")
            ),
            "two volumes are named 'data' (a claim's volume takes the claim's name); give each "
            "a name of its own",
        ),
        (
            lambda: _job(
                EmptyDir(name="a", path="/s", size="1Gi"), EmptyDir(name="b", path="/s", size="1Gi")
            ),
            "volumes mount more than once at /s",
        ),
        (
            lambda: MPIJob(
                name="m", image="i:1", command=["true"], resources=RES,
                volumes=[EmptyDir(name="ssh-auth", path="/s", size="1Gi")],
            ),
            "volume 'ssh-auth' has the name of a volume mpi-operator adds (mpi-job-config, "
            "ssh-auth); rename the volume",
        ),
        (
            lambda: MPIJob(
                name="m", image="i:1", command=["true"], resources=RES,
                volumes=[SecretVolume(name="k", secret="k", path="/root/.ssh/extra")],
            ),
            "volume 'k' mounts at /root/.ssh/extra, where mpi-operator mounts the ssh keys",
        ),
    ],
)  # fmt: skip
def test_bad_volumes_are_refused_with_why(make, message: str) -> None:
    with pytest.raises(DefinitionError) as e:
        make()
    assert message in str(e.value), str(e.value)


def test_ephemeral_storage_is_requested_and_counted_against_the_queue(ws, cli) -> None:
    edit(ws, RESNET, "gpu=8)", 'gpu=8, ephemeral_storage="300Gi")')
    edit(
        ws, "jobs/llm/lr_sweep_ray.py", 'head=Resources(cpu=8, memory="32Gi")',
        'head=Resources(cpu=8, memory="32Gi", ephemeral_storage="10Gi")',
    )  # fmt: skip
    # Volcano counts it (volcano v1.12 pkg/scheduler/api/resource_info.go NewResource): the
    # vision queue may hold 500Gi, the gang of two nodes needs 600Gi.
    edit(
        ws,
        TEAMS,
        "capability=Capacity(cpu=256,",
        'capability=Capacity(ephemeral_storage="500Gi", cpu=256,',
    )
    err = refusals(ws)
    for cluster in ("gpu-east", "rocm-west"):
        assert (
            f"PyTorchJob 'resnet50-ddp': queue: the gang of 2 pods needs 600Gi ephemeral-storage "
            f"on cluster {cluster!r}, but queue 'vision' can hold at most 500Gi ephemeral-storage"
        ) in err, err
    # Kueue admits only what a ClusterQueue quotes: the RayJob on h100-south never would.
    assert (
        "RayJob 'lr-sweep-ray': queue: the job requests ephemeral-storage, which ClusterQueue "
        "'llm' (jobs/platform/kueue.py) has no quota for"
    ) in err, err
    edit(ws, TEAMS, 'ephemeral_storage="500Gi"', 'ephemeral_storage="1Ti"')
    edit(ws, "jobs/llm/lr_sweep_ray.py", ', ephemeral_storage="10Gi"', "")
    run = cli("synth")
    assert run.code == 0, run.err
    (job, *_) = generated_docs(ws, "pytorchjob-resnet50-ddp.yaml")
    res = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert res["resources"]["limits"]["ephemeral-storage"] == "300Gi"
    assert res["resources"]["requests"]["ephemeral-storage"] == "300Gi"
    queue = yaml.safe_load(
        (ws.out / "clusters/gpu-east/platform/queues/vision.yaml").read_text(encoding="utf-8")
    )
    assert queue["spec"]["capability"]["ephemeral-storage"] == "1Ti"


def test_a_host_path_needs_the_teams_grant_and_check_allows_only_granted_ones(ws, tree, crds):
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', volumes=[__import__('trainkit').HostPath(name='nvme', "
        "host_path='/mnt/nvme/cache', path='/cache')],",
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "PyTorchJob 'resnet50-ddp': volumes[0]: team 'vision' may not mount the node's "
        f"/mnt/nvme/cache; Team.host_paths in {TEAMS} allows none; use a claim or an EmptyDir, "
        "or ask the platform team"
    ) in err, err
    # A look-alike directory is not below the grant.
    edit(
        ws,
        TEAMS,
        'vision = Team(name="vision",',
        'vision = Team(host_paths=["/mnt/nvme/cache2"], name="vision",',
    )
    assert "may not mount the node's /mnt/nvme/cache; Team.host_paths" in refusals(ws)
    edit(ws, TEAMS, '"/mnt/nvme/cache2"', '"/mnt/nvme"')
    assert refusals(ws) == ""
    # The same volume, granted the same way, synthesized (on ELASTIC, in the module's tree).
    (job,) = tree.docs("pytorchjob-resnet50-elastic-r1.yaml")
    spec = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert {"name": "nvme", "hostPath": {"path": "/mnt/nvme/cache", "type": "Directory"}} in spec[
        "volumes"
    ]
    assert {"mountPath": "/cache", "name": "nvme", "readOnly": True} in spec["containers"][0][
        "volumeMounts"
    ]
    # The gate grants what the platform's Teams grant, and nothing else.
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err
    clusters = str(tree.ws.out / "clusters")
    run = tree.run("validate", "--format", "json", "--crds", str(crds), clusters)
    assert run.code == 0, run.out


@pytest.mark.parametrize(
    ("path", "grant", "allowed"),
    [
        ("/mnt/nvme/cache", "/mnt/nvme", True),
        ("/mnt/nvme", "/mnt/nvme", True),
        ("/mnt/nvme2", "/mnt/nvme", False),
        ("/mnt/nvme/../../etc", "/mnt/nvme", False),
        ("/etc", "/mnt/nvme", False),
        ("relative", "/mnt/nvme", False),
    ],
)
def test_pod_security_allows_a_host_path_only_below_a_grant(path, grant, allowed) -> None:
    from trainkit.validate.findings import Finding
    from trainkit.validate.pod_security import PodAllowance, check_pod_security

    allow = PodAllowance.from_profiles([], host_paths=[grant])
    spec = {"containers": [], "volumes": [{"name": "n", "hostPath": {"path": path}}]}
    out: list[Finding] = []
    check_pod_security([(("spec",), spec)], out, allow)
    assert (not out) is allowed
    if out:
        assert (
            "mounts a directory of the node (hostPath), which is not below a directory the "
            "platform grants (Team.host_paths: /mnt/nvme)"
        ) in out[0].message


def test_a_host_path_is_a_plain_absolute_path() -> None:
    from trainkit import HostPath

    with pytest.raises(
        DefinitionError, match=re.escape("host_path '/mnt/../etc' must be a plain absolute")
    ):
        HostPath(name="h", host_path="/mnt/../etc", path="/h")
    with pytest.raises(DefinitionError, match="host_path"):
        HostPath(name="h", host_path="mnt", path="/h")


RAY = "jobs/llm/lr_sweep_ray.py"


def test_ray_head_and_group_volumes_need_the_grants_and_show_on_their_pods(ws, cli) -> None:
    edit(
        ws, RAY, 'head=Resources(cpu=8, memory="32Gi"),',
        "head=Resources(cpu=8, memory='32Gi'), head_volumes=[__import__('trainkit')."
        "ConfigMapVolume(name='cfg', config_map='train-config', path='/etc/train')],",
    )  # fmt: skip
    edit(
        ws, RAY, 'WorkerGroup(name="gpu", nodes=2,',
        "WorkerGroup(name='gpu', nodes=2, volumes=[__import__('trainkit').SecretVolume("
        "name='gcs', secret='gcs-reader', path='/etc/gcs', items={'key.json': 'k.json'}), "
        "__import__('trainkit').CsiVolume(name='store', driver='secrets-store.csi.k8s.io', "
        "path='/mnt/store')],",
    )  # fmt: skip
    err = refusals(ws)
    for field, message in (
        ("head_volumes[0]", "team 'llm' may not mount ConfigMap 'train-config'; Team.config_maps"),
        ("workers[0].volumes[0]", "team 'llm' may not mount Secret 'gcs-reader'; Team.secrets"),
        (
            "workers[0].volumes[1]",
            "CSI driver 'secrets-store.csi.k8s.io' is not one the cluster lists",
        ),
    ):
        assert f"RayJob 'lr-sweep-ray': {field}: " in err, err
        line = next(x for x in err.splitlines() if f": {field}: " in x and message[:20] in x)
        assert message in line, err
    grant_everything(ws)
    run = cli("synth")
    assert run.code == 0, run.err
    run = cli("explain", "lr-sweep-ray", "--cluster", "gpu-east", "--format", "json")
    assert run.code == 0, run.err
    (job,) = json.loads(run.out)["jobs"]
    paths = {p["role"]: {v["path"] for v in p["volumes"]} for p in job["pods"]}
    head, worker = paths["Head"], paths["gpu"]
    assert "/etc/train" in head and not {"/etc/gcs", "/mnt/store"} & head
    assert {"/etc/gcs", "/mnt/store"} <= worker and "/etc/train" not in worker
