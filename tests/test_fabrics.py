"""Fabrics through network profiles (issue 28): Multus networks, the host's IPC namespace and
the node's devices, on every pod that runs the job's code, only where the team is granted the
profile; the gate allows them only as a profile declares them."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from example_edits import edit
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import HostDevice, NetworkProfile
from trainkit.kube.pods import pod_specs
from trainkit.validate.findings import Finding
from trainkit.validate.pod_security import PodAllowance, check_pod_security

POLICY = "jobs/platform/policy.py"
TEAMS = "jobs/platform/teams.py"
RUNTIMES = "jobs/platform/runtimes.py"
RESNET = "jobs/vision/resnet50_ddp.py"
FSDP = "jobs/llm/llama_finetune_fsdp.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
MULTUS = "k8s.v1.cni.cncf.io/networks"
# One example job of every kind that has pods: (file, generated file name).
KINDS = {
    "PyTorchJob": (RESNET, "pytorchjob-resnet50-ddp.yaml"),
    "TFJob": ("jobs/vision/mobilenet_ps.py", "tfjob-mobilenet-ps-r1.yaml"),
    "PaddleJob": ("jobs/vision/resnet_paddle.py", "paddlejob-resnet-paddle.yaml"),
    "XGBoostJob": ("jobs/vision/photo_quality_xgboost.py", "xgboostjob-photo-quality-xgb-r3.yaml"),
    "JAXJob": ("jobs/llm/bigram_jax.py", "jaxjob-bigram-jax.yaml"),
    "MPIJob": (DEEPSPEED, "mpijob-llama-pretrain-deepspeed-r6.yaml"),
    "RayJob": ("jobs/llm/lr_sweep_ray.py", "rayjob-lr-sweep-ray-r3.yaml"),
    "RayCluster": ("jobs/llm/eval_pool_ray.py", "raycluster-eval-pool.yaml"),
}
FABRIC = (
    "\nfrom trainkit import HostDevice\n"
    '\nfab = NetworkProfile(name="fab", networks=["ib-a", "fabric/ib-b@net2"], host_ipc=True, '
    'devices=[HostDevice(path="/dev/infiniband", directory=True), '
    'HostDevice(path="/dev/nvidia-fs0")])\n'
)
DEVICE_VOLUMES = [
    {"hostPath": {"path": "/dev/infiniband", "type": "Directory"}, "name": "fabric-device-0"},
    {"hostPath": {"path": "/dev/nvidia-fs0", "type": "CharDevice"}, "name": "fabric-device-1"},
]
DEVICE_MOUNTS = [
    {"mountPath": "/dev/infiniband", "name": "fabric-device-0"},
    {"mountPath": "/dev/nvidia-fs0", "name": "fabric-device-1"},
]


def use_profile(ws, rel: str, name: str) -> None:
    """``network=name`` on the job of ``rel`` (replacing its own profile)."""
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    if "network=" in text:
        text = re.sub(r'network="[^"]+"', f'network="{name}"', text, count=1)
    else:
        text = re.sub(
            r'(\n    name="[^"]+",\n)',
            lambda m: m.group(1) + f'    network="{name}",\n',
            text,
            count=1,
        )
    path.write_text(text, encoding="utf-8")


def declare_fabric(ws, grant_vision: bool = True) -> None:
    text = (ws.root / POLICY).read_text(encoding="utf-8")
    (ws.root / POLICY).write_text(text + FABRIC, encoding="utf-8")
    edit(
        ws,
        TEAMS,
        'network_profiles=["rdma", "ib-multus", "rdma-dra"]',
        'network_profiles=["rdma", "ib-multus", "rdma-dra", "fab"]',
    )
    if grant_vision:
        edit(
            ws,
            TEAMS,
            'vision = Team(name="vision",',
            'vision = Team(network_profiles=["fab"], name="vision",',
        )


def _template_of(doc: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    """The pod template holding the spec at ``path``."""
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    return node


def _docs(ws, name: str) -> list[dict[str, Any]]:
    paths = sorted(ws.out.rglob(name))
    assert paths, name
    return [yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader) for p in paths]


@pytest.fixture(scope="module")
def tree(module_ws, module_cli) -> SharedTree:
    """The fabric profile on one job of every kind and on the FSDP runtime (the fabric and
    launcher tests); FSDP asks for huge pages and, granted the efa profile, for an extended
    resource (the tests of each): synthesized once, each test reads its own."""
    ws = module_ws
    keep_only(ws, [*(rel for rel, _ in KINDS.values()), FSDP])
    declare_fabric(ws)
    for rel, _ in KINDS.values():
        use_profile(ws, rel, "fab")
    # A TrainJob's pods get the profile of its runtime.
    edit(ws, RUNTIMES, 'network="rdma",', 'network="fab",')
    text = (ws.root / POLICY).read_text(encoding="utf-8")
    (ws.root / POLICY).write_text(text + EFA, encoding="utf-8")
    edit(ws, TEAMS, '"rdma-dra", "fab"]', '"rdma-dra", "fab", "efa"]')
    # The job's own profile (rdma) lists rdma/hca: the job's count replaces it.
    edit(
        ws,
        FSDP,
        'resources=Resources(cpu=64, memory="512Gi", gpu=8),',
        'resources=Resources(cpu=64, memory="512Gi", gpu=8, '
        'extended={"vpc.amazonaws.com/efa": 2}, hugepages={"2Mi": "1Gi"}),',
    )
    return SharedTree.synthesized(ws, module_cli)


def test_every_kind_gets_the_fabric_on_the_pods_that_run_its_code(tree, crds) -> None:
    kinds = {**KINDS, "TrainingRuntime": (RUNTIMES, "trainingruntime-fsdp-a800.yaml")}
    for kind, (_, name) in kinds.items():
        for doc in tree.docs(name):
            checked = 0
            for path, spec in pod_specs(doc):
                meta = _template_of(doc, path).get("metadata") or {}
                annotations = meta.get("annotations") or {}
                if (kind, path[-3]) == ("MPIJob", "Launcher") or "submitterPodTemplate" in path:
                    # A launcher that runs no ranks, and KubeRay's submitter: no fabric.
                    assert MULTUS not in annotations and "hostIPC" not in spec, (kind, path)
                    assert not any(
                        v["name"].startswith("fabric-") for v in spec.get("volumes") or []
                    )
                    continue
                assert annotations[MULTUS] == "ib-a,fabric/ib-b@net2", (kind, path)
                assert spec["hostIPC"] is True, (kind, path)
                assert [v for v in spec["volumes"] if v in DEVICE_VOLUMES] == DEVICE_VOLUMES
                mounts = spec["containers"][0]["volumeMounts"]
                assert [m for m in mounts if m in DEVICE_MOUNTS] == DEVICE_MOUNTS, (kind, path)
                checked += 1
            assert checked, kind
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert run.code == 0, run.err
    assert (
        "  network profile fab: the host IPC namespace; Multus networks ib-a, fabric/ib-b@net2; "
        "devices /dev/infiniband, /dev/nvidia-fs0"
    ) in run.out
    assert "    host       the node's IPC" in run.out
    assert "    volume     /dev/nvidia-fs0 ← the node's device /dev/nvidia-fs0" in run.out
    # CRD conformance and the gate's pod security: what the profile declares is allowed.
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err


def test_a_profile_granted_to_another_team_is_refused(ws) -> None:
    declare_fabric(ws, grant_vision=False)
    use_profile(ws, RESNET, "fab")
    err = refusals(ws)
    assert (
        f"{RESNET}:7: PyTorchJob 'resnet50-ddp': network: team 'vision' may not use network "
        "profile 'fab', which grants the host IPC namespace; Multus networks ib-a, "
        "fabric/ib-b@net2; devices /dev/infiniband, /dev/nvidia-fs0 "
        f"({POLICY}); Team.network_profiles in {TEAMS} allows none: ask the platform team to add "
        "it there, or drop network= or name a granted one"
    ) in err, err


def test_an_unknown_profile_is_refused(ws) -> None:
    use_profile(ws, RESNET, "ib-everywhere")
    err = refusals(ws)
    assert (
        f"{RESNET}:7: PyTorchJob 'resnet50-ddp': network: unknown network profile "
        "'ib-everywhere'; defined network profiles: 'ib-multus', 'rdma', 'rdma-dra' (declare "
        "NetworkProfile(name=...) in jobs/platform/)"
    ) in err, err


def test_a_job_may_not_replace_the_profiles_networks_or_mount_over_its_devices(ws) -> None:
    declare_fabric(ws)
    use_profile(ws, RESNET, "fab")
    edit(
        ws,
        TEAMS,
        'vision = Team(network_profiles=["fab"],',
        'vision = Team(network_profiles=["fab"], pod_metadata_keys=["k8s.v1.cni.cncf.io/"],',
    )
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', pod_annotations={'k8s.v1.cni.cncf.io/networks': 'other-net'}, "
        "volumes=[__import__('trainkit').EmptyDir(name='ib', path='/dev/infiniband/x', size='1Gi'), "
        "__import__('trainkit').EmptyDir(name='fabric-device-1', path='/scratch', size='1Gi')],",
    )  # fmt: skip
    err = refusals(ws)
    where = f"network profile 'fab' ({POLICY})"
    for line in (
        "PyTorchJob 'resnet50-ddp': pod_annotations.k8s.v1.cni.cncf.io/networks: "
        f"k8s.v1.cni.cncf.io/networks is set by {where} to 'ib-a,fabric/ib-b@net2', the pods' "
        "Multus networks; remove it from pod_annotations (the platform adds networks to the "
        "profile)",
        "PyTorchJob 'resnet50-ddp': volumes[0]: volume 'ib' at /dev/infiniband/x "
        f"clashes with device /dev/infiniband that {where} mounts (volume 'fabric-device-0'); "
        "mount it elsewhere, under another name",
        "PyTorchJob 'resnet50-ddp': volumes[1]: volume 'fabric-device-1' at "
        f"/scratch clashes with device /dev/nvidia-fs0 that {where} mounts (volume "
        "'fabric-device-1')",
    ):
        assert line in err, err


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"networks": ["IB"]},
            "'IB' is not a NetworkAttachmentDefinition reference as Multus reads it: "
            "'[namespace/]name[@interface]', the names DNS-1123 labels, the interface at most 15 "
            "letters, digits, '-', '_' or '.' (e.g. 'ib-net', 'fabric/ib-net@net1')",
        ),
        ({"networks": ["a/b/c"]}, "'a/b/c' is not a NetworkAttachmentDefinition reference"),
        ({"networks": ["ib,eth"]}, "'ib,eth' is not a NetworkAttachmentDefinition reference"),
        ({"networks": ['[{"name":"ib"}]']}, "is not a NetworkAttachmentDefinition reference"),
        (
            {"networks": ["ib@averyveryverylongif"]},
            "'ib@averyveryverylongif' is not a NetworkAttachmentDefinition reference",
        ),
        ({"networks": ["ib", "ib"]}, "ib listed twice; name each once"),
        (
            {"devices": [HostDevice(path="/dev/infiniband"), HostDevice(path="/dev/infiniband")]},
            "/dev/infiniband listed twice; name each once",
        ),
    ],
)
def test_bad_fabric_profiles_are_refused_with_why(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        NetworkProfile(name="bad", **fields)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "'/etc/passwd' is not a device path: '/dev/' and plain names"),
        ("/dev", "'/dev' is not a device path"),
        ("/dev/../etc", "'/dev/../etc' is not a device path"),
        ("/dev/infiniband/", "'/dev/infiniband/' is not a device path"),
        ("dev/null", "'dev/null' is not a device path"),
        (
            "/dev/shm",
            "'/dev/shm' is the pods' shared memory, which jobs size with shm_size; it is no device",
        ),
    ],
)
def test_bad_device_paths_are_refused_with_why(path: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        HostDevice(path=path)


def test_a_bad_profile_in_a_definition_names_the_file(ws) -> None:
    text = (ws.root / POLICY).read_text(encoding="utf-8")
    (ws.root / POLICY).write_text(
        text + '\nbad = NetworkProfile(name="bad", networks=["Bad_Net"])\n', encoding="utf-8"
    )
    err = refusals(ws)
    assert "NetworkProfile" in err and "'Bad_Net' is not a NetworkAttachmentDefinition" in err


def _pod(**spec: Any) -> list[tuple[Any, dict[str, Any]]]:
    return [(("spec",), {"containers": [{"name": "c", "image": "x"}], **spec})]


def _messages(pods: list[tuple[Any, dict[str, Any]]], allow: PodAllowance) -> list[str]:
    out: list[Finding] = []
    check_pod_security(pods, out, allow)
    return [f.message for f in out]


def test_the_gate_allows_host_ipc_and_devices_only_as_a_profile_declares_them() -> None:
    fab = NetworkProfile(
        name="fab", host_ipc=True, devices=[HostDevice(path="/dev/infiniband", directory=True)]
    )
    plain = PodAllowance.from_profiles([NetworkProfile(name="rdma", capabilities=["IPC_LOCK"])])
    granted = PodAllowance.from_profiles([fab])
    ipc = _pod(hostIPC=True)
    assert _messages(ipc, plain) == [
        "pod security: hostIPC shares the node's IPC namespace and is not allowed "
        "(NetworkProfiles 'rdma'); remove it, or ask the platform team for a NetworkProfile with "
        "host_ipc=True"
    ]
    assert _messages(ipc, granted) == []
    device = {"name": "d", "hostPath": {"path": "/dev/infiniband", "type": "Directory"}}
    assert _messages(_pod(volumes=[device]), granted) == []
    assert len(_messages(_pod(volumes=[device]), plain)) == 1
    # Another type, a path below, or no type is not what the profile declares.
    for source in (
        {"path": "/dev/infiniband", "type": "CharDevice"},
        {"path": "/dev/infiniband/uverbs0", "type": "CharDevice"},
        {"path": "/dev/infiniband"},
        {"path": "/dev", "type": "Directory"},
    ):
        (message,) = _messages(_pod(volumes=[{"name": "d", "hostPath": source}]), granted)
        assert "mounts a directory of the node (hostPath)" in message


def test_the_launcher_of_a_job_that_is_no_host_gets_no_fabric(tree) -> None:
    (doc,) = tree.docs("mpijob-llama-pretrain-deepspeed-r6.yaml")
    launcher = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    assert "annotations" not in launcher["metadata"]
    assert "hostIPC" not in launcher["spec"]
    # The profile's env still reaches the ranks through mpirun -x (none here beyond the job's).
    worker = doc["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"]["annotations"] == {MULTUS: "ib-a,fabric/ib-b@net2"}


DRA = '\ndra = NetworkProfile(name="dra", claims={"nics": "rdma-nics", "gpus": "a100-pair"})\n'
CLAIMS = [
    {"name": "gpus", "resourceClaimTemplateName": "a100-pair"},
    {"name": "nics", "resourceClaimTemplateName": "rdma-nics"},
]


def declare_dra(ws) -> None:
    text = (ws.root / POLICY).read_text(encoding="utf-8")
    (ws.root / POLICY).write_text(text + DRA, encoding="utf-8")
    edit(
        ws,
        TEAMS,
        'network_profiles=["rdma", "ib-multus", "rdma-dra"]',
        'network_profiles=["rdma", "ib-multus", "rdma-dra", "dra"]',
    )
    edit(
        ws,
        TEAMS,
        'vision = Team(name="vision",',
        'vision = Team(network_profiles=["dra"], name="vision",',
    )


def test_dra_claims_reach_every_kind_s_pods_and_their_training_container(ws, cli, crds) -> None:
    # The platform, one job of each kind and the TrainJob explained: the other examples
    # would add nothing here but their synth and check.
    keep_only(ws, [*(rel for rel, _ in KINDS.values()), "jobs/llm/llama_sft_trainjob.py"])
    declare_dra(ws)
    kinds = dict(KINDS)  # the Training Operator's PaddleJob; paddle-operator's: below
    for rel, _ in kinds.values():
        use_profile(ws, rel, "dra")
    edit(ws, RUNTIMES, 'network="rdma",', 'network="dra",')
    run = cli("synth")
    assert run.code == 0, run.err
    kinds["TrainingRuntime"] = (RUNTIMES, "trainingruntime-fsdp-a800.yaml")
    for kind, (_, name) in kinds.items():
        for doc in _docs(ws, name):
            checked = 0
            for path, spec in pod_specs(doc):
                if (kind, path[-3]) == ("MPIJob", "Launcher") or "submitterPodTemplate" in path:
                    assert "resourceClaims" not in spec, (kind, path)
                    continue
                assert spec["resourceClaims"] == CLAIMS, (kind, path)
                resources = spec["containers"][0]["resources"]
                assert resources["claims"] == [{"name": "gpus"}, {"name": "nics"}], (kind, path)
                checked += 1
            assert checked, kind
    # A TrainJob's resourcesPerNode merge keeps the runtime's claims (Trainer v2.3.0
    # MergeResourceRequirements merges claims by name).
    run = cli("explain", "llama-sft", "--cluster", "a800-north")
    assert run.code == 0, run.err
    assert (
        "    claim      nics ← a ResourceClaim per pod from ResourceClaimTemplate rdma-nics"
    ) in run.out
    assert "  network profile dra: ResourceClaimTemplates a100-pair, rdma-nics" in run.out
    # The pinned CRDs hold resourceClaims (1.32+ shape) and container claims.
    run = cli("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err


def test_dra_claims_are_refused_on_paddle_operator(ws) -> None:
    declare_dra(ws)
    use_profile(ws, KINDS["PaddleJob"][0], "dra")
    edit(ws, KINDS["PaddleJob"][0], 'clusters=["gpu-east"]', 'clusters=["rocm-west"]')
    err = refusals(ws)
    assert (
        "PaddleJob 'resnet-paddle': network: on cluster 'rocm-west' (paddle-operator): network "
        "profile 'dra' gives each pod Dynamic Resource Allocation claims, which paddle-operator's "
        "PaddleJob CRD cannot hold (the API server would drop them and the pods would start "
        "without the devices): use a profile without claims, or the Training Operator's "
        "PaddleJob on a cluster without paddle-operator"
    ) in err, err


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"NICs": "rdma-nics"}, "NICs"),
        ({"nics": "Bad_Template"}, "Bad_Template"),
    ],
)
def test_bad_claims_are_refused(claims: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        NetworkProfile(name="bad", claims=claims)


# Extended resources a job asks for itself (Resources.extended), granted through profiles.
EFA = '\nefa = NetworkProfile(name="efa", resources={"vpc.amazonaws.com/efa": 4})\n'


def _grant_efa(ws) -> None:
    text = (ws.root / POLICY).read_text(encoding="utf-8")
    (ws.root / POLICY).write_text(text + EFA, encoding="utf-8")
    edit(
        ws,
        TEAMS,
        'network_profiles=["rdma", "ib-multus", "rdma-dra"]',
        'network_profiles=["rdma", "ib-multus", "rdma-dra", "efa"]',
    )


def _containers(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for doc in docs for _, spec in pod_specs(doc) for c in spec["containers"]]


def test_a_job_asks_for_granted_extended_resources_and_they_are_rendered(tree) -> None:
    containers = _containers(tree.docs("pytorchjob-llama-finetune-fsdp-r*.yaml"))
    assert len(containers) == 2  # Master and Worker
    for container in containers:
        res = container["resources"]
        assert res["limits"]["vpc.amazonaws.com/efa"] == "2"
        assert res["requests"]["vpc.amazonaws.com/efa"] == "2"
        assert res["limits"]["rdma/hca"] == res["requests"]["rdma/hca"] == "1"
    run = tree.run("explain", "llama-finetune-fsdp", "--cluster", "a800-north")
    assert run.code == 0, run.err
    assert "vpc.amazonaws.com/efa" in run.out, run.out


def test_extended_resources_count_against_volcano_and_kueue_queues(ws) -> None:
    _grant_efa(ws)
    # Volcano: the gang of FSDP's 4 pods asks for 4 × 2; the llm queue caps it at 3.
    edit(ws, TEAMS, "gpu=96),\n", 'gpu=96, extended={"vpc.amazonaws.com/efa": 3}),\n')
    edit(
        ws,
        FSDP,
        'resources=Resources(cpu=64, memory="512Gi", gpu=8),',
        'resources=Resources(cpu=64, memory="512Gi", gpu=8, '
        'extended={"vpc.amazonaws.com/efa": 2}),',
    )
    # Kueue: the llm ClusterQueue has no quota for it at all.
    edit(
        ws,
        "jobs/llm/lr_sweep_ray.py",
        'resources=Resources(cpu=32, memory="256Gi", gpu=8)',
        'resources=Resources(cpu=32, memory="256Gi", gpu=8, extended={"vpc.amazonaws.com/efa": 1})',
    )
    err = refusals(ws)
    assert (
        f"{FSDP}:28: PyTorchJob 'llama-finetune-fsdp': queue: the gang of 4 pods needs 8 "
        "vpc.amazonaws.com/efa on cluster 'a800-north', but queue 'llm' can hold at most 3 "
        "vpc.amazonaws.com/efa (Queue.capability in jobs/platform/teams.py)"
    ) in err, err
    assert (
        "RayJob 'lr-sweep-ray': queue: the job requests vpc.amazonaws.com/efa, which "
        "ClusterQueue 'llm' (jobs/platform/kueue.py) has no quota for: Kueue never admits it "
        "('resource unavailable in ClusterQueue'); add the resource to the queue's flavors or "
        "drop it from the job"
    ) in err, err


@pytest.mark.parametrize(
    ("extended", "message"),
    [
        # Listed by no profile at all.
        (
            '{"rdma/roce": 1}',
            "resources.extended.rdma/roce: extended resource 'rdma/roce' is not listed by any "
            "network profile team 'llm' is granted on cluster 'a800-north' "
            f"(Team.network_profiles in {TEAMS}: 'efa', 'ib-multus', 'rdma', 'rdma-dra'); ask the "
            "platform team for a profile listing it in NetworkProfile.resources, or drop it",
        ),
        # More than the granted profile lists per pod.
        (
            '{"vpc.amazonaws.com/efa": 8}',
            "resources.extended.vpc.amazonaws.com/efa: 8 of 'vpc.amazonaws.com/efa' per pod is "
            f"more than the 4 network profile 'efa' ({POLICY}) grants team 'llm'; ask for at "
            "most 4",
        ),
        # The cluster's GPUs.
        (
            '{"baidu.com/a800_80g_cgpu": 1}',
            "resources.extended.baidu.com/a800_80g_cgpu: 'baidu.com/a800_80g_cgpu' is the GPU "
            "resource of "
            "cluster 'a800-north'; ask for GPUs with resources.gpu instead",
        ),
    ],
)
def test_extended_resources_beyond_the_grant_are_refused(ws, extended: str, message: str) -> None:
    _grant_efa(ws)
    edit(
        ws,
        FSDP,
        'resources=Resources(cpu=64, memory="512Gi", gpu=8),',
        f'resources=Resources(cpu=64, memory="512Gi", gpu=8, extended={extended}),',
    )
    err = refusals(ws)
    assert f"PyTorchJob 'llama-finetune-fsdp': {message}" in err, err


def test_an_extended_resource_of_another_teams_profile_is_refused(ws) -> None:
    _grant_efa(ws)  # granted to llm, not to vision
    edit(
        ws,
        RESNET,
        'resources=Resources(cpu=32, memory="256Gi", gpu=8),',
        'resources=Resources(cpu=32, memory="256Gi", gpu=8, extended={"vpc.amazonaws.com/efa": 1}),',
    )
    err = refusals(ws)
    assert (
        f"{RESNET}:15: PyTorchJob 'resnet50-ddp': resources.extended.vpc.amazonaws.com/efa: "
        "extended resource 'vpc.amazonaws.com/efa' is not listed by any network profile team "
        f"'vision' is granted on cluster 'gpu-east' (Team.network_profiles in {TEAMS}: none); "
        "ask the platform team for a profile listing it in NetworkProfile.resources, or drop it"
    ) in err, err


@pytest.mark.parametrize(
    ("extended", "message"),
    [
        ({"kubernetes.io/batch": 1}, "kubernetes.io/batch is not an extended resource"),
        ({"example.kubernetes.io/x": 1}, "example.kubernetes.io/x is not an extended resource"),
        ({"requests.example.com/x": 1}, "requests.example.com/x is not an extended resource"),
        (
            {"efa": 1},
            "extended.efa.[key]: 'efa' is not an extended resource name: use '<domain>/<name>'",
        ),
        ({"example.com/x": 0}, "extended.example.com/x: must be at least 1"),
    ],
)
def test_bad_extended_resources_are_refused(extended: dict[str, int], message: str) -> None:
    from trainkit import Resources
    from trainkit.model.messages import ModelError

    with pytest.raises(ModelError, match=re.escape(message)):
        Resources(cpu=1, memory="1Gi", extended=extended)


# Huge pages a job asks for (Resources.hugepages).
def test_hugepages_are_rendered_counted_and_explained(tree, crds) -> None:
    containers = _containers(tree.docs("pytorchjob-llama-finetune-fsdp-r*.yaml"))
    assert len(containers) == 2  # Master and Worker
    for container in containers:
        res = container["resources"]
        assert res["limits"]["hugepages-2Mi"] == res["requests"]["hugepages-2Mi"] == "1Gi"
        assert res["requests"]["memory"] == "512Gi"
    run = tree.run("explain", "llama-finetune-fsdp", "--cluster", "a800-north")
    assert run.code == 0, run.err
    assert "hugepages-2Mi" in run.out, run.out
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err


def test_hugepages_count_against_volcano_and_kueue_queues(ws) -> None:
    # Volcano: the gang of FSDP's 4 pods asks for 4 × 1Gi; the llm queue caps it at 2Gi.
    edit(ws, TEAMS, "gpu=96),\n", 'gpu=96, hugepages={"2Mi": "2Gi"}),\n')
    edit(
        ws,
        FSDP,
        'resources=Resources(cpu=64, memory="512Gi", gpu=8),',
        'resources=Resources(cpu=64, memory="512Gi", gpu=8, hugepages={"2Mi": "1Gi"}),',
    )
    # Kueue: the llm ClusterQueue has no quota for them at all.
    edit(
        ws,
        "jobs/llm/lr_sweep_ray.py",
        'resources=Resources(cpu=32, memory="256Gi", gpu=8)',
        'resources=Resources(cpu=32, memory="256Gi", gpu=8, hugepages={"1Gi": "8Gi"})',
    )
    err = refusals(ws)
    assert (
        f"{FSDP}:28: PyTorchJob 'llama-finetune-fsdp': queue: the gang of 4 pods needs 4Gi "
        "hugepages-2Mi on cluster 'a800-north', but queue 'llm' can hold at most 2Gi "
        "hugepages-2Mi (Queue.capability in jobs/platform/teams.py)"
    ) in err, err
    assert (
        "RayJob 'lr-sweep-ray': queue: the job requests hugepages-1Gi, which ClusterQueue "
        "'llm' (jobs/platform/kueue.py) has no quota for: Kueue never admits it"
    ) in err, err
    # With quota for them, the RayJob passes.
    edit(ws, TEAMS, 'gpu=96, hugepages={"2Mi": "2Gi"}),\n', "gpu=96),\n")
    edit(
        ws,
        FSDP,
        ', hugepages={"2Mi": "1Gi"}),',
        "),",
    )
    edit(
        ws,
        "jobs/platform/kueue.py",
        'quota=Capacity(cpu=128, memory="1Ti", gpu=16),',
        'quota=Capacity(cpu=128, memory="1Ti", gpu=16, hugepages={"1Gi": "64Gi"}),',
    )
    edit(
        ws,
        "jobs/platform/kueue.py",
        'quota=Capacity(cpu=384, memory="3Ti", gpu=48)',
        'quota=Capacity(cpu=384, memory="3Ti", gpu=48, hugepages={"1Gi": "0Gi"})',
    )
    assert refusals(ws) == ""


@pytest.mark.parametrize(
    ("hugepages", "message"),
    [
        (
            {"2Mi": "3Mi"},
            "hugepages: 2Mi: 3Mi is not a whole number of 2Mi pages; ask for a positive "
            "multiple of 2Mi, e.g. 4Mi",
        ),
        (
            {"1Gi": "1536Mi"},
            "hugepages: 1Gi: 1536Mi is not a whole number of 1Gi pages; ask for a positive "
            "multiple of 1Gi, e.g. 2Gi",
        ),
        (
            {"2Mi": "0Gi"},
            "hugepages: 2Mi: 0Gi is not a whole number of 2Mi pages; ask for a positive "
            "multiple of 2Mi, e.g. 2Mi",
        ),
        (
            {"0": "1Gi"},
            "hugepages.0.[key]: '0' is not a huge page size: use the node's page size with a "
            "unit, e.g. '2Mi' or '1Gi'",
        ),
        (
            {"big": "1Gi"},
            "hugepages.big.[key]: 'big' is not a huge page size: use the node's page size with "
            "a unit, e.g. '2Mi' or '1Gi'",
        ),
        ({"2Mi": "-2Mi"}, "hugepages.2Mi: '-2Mi' is not a Kubernetes quantity"),
    ],
)
def test_bad_hugepages_are_refused(hugepages: dict[str, str], message: str) -> None:
    from trainkit import Resources
    from trainkit.model.messages import ModelError

    with pytest.raises(ModelError, match=re.escape(message)):
        Resources(cpu=1, memory="1Gi", hugepages=hugepages)


def test_extended_resources_of_a_team_runtime_and_a_worker_group_are_checked(ws) -> None:
    # A team's TrainingRuntime is held to its team's grants; a Ray worker group's resources
    # are checked under their own field.
    edit(
        ws,
        RUNTIMES,
        'resources=Resources(cpu=64, memory="512Gi", gpu=8),',
        'resources=Resources(cpu=64, memory="512Gi", gpu=8, extended={"example.com/fpga": 1}),',
    )
    edit(
        ws,
        "jobs/llm/lr_sweep_ray.py",
        'resources=Resources(cpu=32, memory="256Gi", gpu=8)',
        'resources=Resources(cpu=32, memory="256Gi", gpu=8, extended={"rdma/hca": 1})',
    )
    err = refusals(ws)
    assert (
        "TrainingRuntime 'fsdp-a800': resources.extended.example.com/fpga: extended resource "
        "'example.com/fpga' is not listed by any network profile team 'llm' is granted "
        f"(Team.network_profiles in {TEAMS}: 'ib-multus', 'rdma', 'rdma-dra')"
    ) in err, err
    # rdma (rdma/hca) is granted to llm, but exists on a800-north only.
    for cluster in ("gpu-east", "h100-south"):
        assert (
            "RayJob 'lr-sweep-ray': workers[0].resources.extended.rdma/hca: extended resource "
            f"'rdma/hca' is not listed by any network profile team 'llm' is granted on cluster "
            f"'{cluster}'"
        ) in err, err
