"""Security contexts: who a job's pods run as, on every pod of every kind; profiles that lift a
confinement only where the platform grants them; nothing that privileges a container."""

from __future__ import annotations

import json
import re

import pytest

from example_edits import edit
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import (
    ContainerSecurityContext,
    DefinitionError,
    MPIJob,
    PyTorchJob,
    Resources,
    SecurityContext,
    Team,
)
from trainkit.kube.pods import pod_specs

TEAMS = "jobs/platform/teams.py"
RESNET = "jobs/vision/resnet50_ddp.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
DS_TRAINJOB = "jobs/llm/llama_pretrain_deepspeed_trainjob.py"
ELASTIC = "jobs/vision/resnet50_elastic.py"  # a PyTorchJob of vision, beside RESNET
FSDP = "jobs/llm/llama_finetune_fsdp.py"
RES = Resources(cpu=1, memory="1Gi")

POD = (
    "security_context=SecurityContext(run_as_user=1000, run_as_group=1000, fs_group=1000, "
    'supplemental_groups=[2000], run_as_non_root=True, seccomp="RuntimeDefault", '
    'app_armor="RuntimeDefault"), '
    "container_security_context=ContainerSecurityContext(allow_privilege_escalation=False, "
    'read_only_root_filesystem=True, drop_capabilities=["ALL"]),'
)
POD_CONTEXT = {
    "runAsUser": 1000,
    "runAsGroup": 1000,
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
    "appArmorProfile": {"type": "RuntimeDefault"},
    "fsGroup": 1000,
    "supplementalGroups": [2000],
}
CONTAINER_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}

# One example job of every kind that has pods: (file, generated file name pattern).
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
    """Give the job in ``rel`` ``fields`` (after its name) and import the context classes."""
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    text = re.sub(
        r'(\n    name="[^"]+",\n)', lambda m: m.group(1) + f"    {fields}\n", text, count=1
    )
    text = "from trainkit import ContainerSecurityContext, SecurityContext\n" + text
    path.write_text(text, encoding="utf-8")


PROFILES = (
    'security_context=__import__("trainkit").SecurityContext('
    'seccomp="Unconfined", app_armor="localhost/ml-training"), '
    'container_security_context=__import__("trainkit").ContainerSecurityContext('
    'seccomp="localhost/profiles/nccl.json"),'
)
GRANT = (
    'vision = Team(seccomp_profiles=["Unconfined", "localhost/profiles/nccl.json"], '
    'app_armor_profiles=["localhost/ml-training"], name="vision",'
)


@pytest.fixture(scope="module")
def tree(module_ws, module_cli) -> SharedTree:
    """The contexts on one job of every kind (the every-pod test), dropped capabilities on
    FSDP, whose profile adds one (the capabilities' test), and profiles its team is granted
    on ELASTIC (the grant's test): synthesized once, each test reads its own."""
    ws = module_ws
    keep_only(ws, [*(rel for rel, _ in KINDS.values()), FSDP, ELASTIC])
    for rel, _ in KINDS.values():
        add_fields(ws, rel, POD)
    # The DeepSpeed MPIJob's user is no longer root: its keys go to that user's ~/.ssh.
    edit(ws, DEEPSPEED, 'launch="deepspeed",', 'launch="deepspeed", ssh_dir="/home/mpiuser/.ssh",')
    edit(
        ws, FSDP, 'name="llama-finetune-fsdp",',
        'name="llama-finetune-fsdp", container_security_context=__import__("trainkit")'
        '.ContainerSecurityContext(drop_capabilities=["ALL", "NET_RAW"]),',
    )  # fmt: skip
    edit(ws, ELASTIC, 'queue="vision",', 'queue="vision", ' + PROFILES)
    edit(ws, TEAMS, 'vision = Team(name="vision",', GRANT)
    return SharedTree.synthesized(ws, module_cli)


def test_every_pod_of_every_kind_runs_as_the_job_says(tree, crds) -> None:
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            pods = list(pod_specs(doc))
            assert pods, kind
            for path, spec in pods:
                assert spec["securityContext"] == POD_CONTEXT, (kind, path)
                main = spec["containers"][0]
                expected = CONTAINER_CONTEXT
                if kind == "MPIJob" and path[-3] == "Worker":
                    # The job's RDMA profile adds its capability after the dropped ones.
                    expected = {**expected, "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}}
                assert main["securityContext"] == expected, (kind, path)
                if kind == "MPIJob" and path[-3] == "Launcher":
                    # The launcher's ssh check runs as mpirun will.
                    (wait,) = spec["initContainers"]
                    assert wait["securityContext"] == CONTAINER_CONTEXT
    # RayJob: the head, each worker group and the submitter pod.
    (ray, *_) = tree.docs(KINDS["RayJob"][1])
    assert len(list(pod_specs(ray))) == 3
    # The TrainJob's contexts are in its runtime patch, merged into the runtime's by Trainer.
    run = tree.run("explain", "llama-sft", "--format", "json")
    assert run.code == 0, run.err
    (explained,) = json.loads(run.out)["jobs"]
    (node,) = explained["pods"]
    assert node["security_context"] == POD_CONTEXT
    assert node["container_security_context"] == {
        **CONTAINER_CONTEXT,
        # The runtime's network profile adds its capability after the job's dropped ones.
        "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
    }
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert run.code == 0, run.err
    assert (
        "    security   pod: runAsUser 1000; runAsGroup 1000; runAsNonRoot true; seccompProfile "
        "RuntimeDefault; appArmorProfile RuntimeDefault; fsGroup 1000; supplementalGroups 2000\n"
        "    security   container: allowPrivilegeEscalation false; readOnlyRootFilesystem true; "
        "drop capabilities ALL\n"
    ) in run.out
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err


def test_a_network_profiles_capabilities_follow_the_dropped_ones(tree) -> None:
    (job,) = tree.docs("pytorchjob-llama-finetune-fsdp-r1.yaml")
    for role in ("Master", "Worker"):
        (c,) = job["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]["containers"]
        assert c["securityContext"] == {
            "capabilities": {"drop": ["ALL", "NET_RAW"], "add": ["IPC_LOCK"]}
        }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"security_context": {"run_as_user": 0, "run_as_non_root": True}},
            "run_as_non_root=True with run_as_user=0 (root): the kubelet refuses to start the "
            "container; give a non-root run_as_user or drop one of them",
        ),
        (
            {
                "security_context": {"run_as_user": 0},
                "container_security_context": {"run_as_non_root": True},
            },
            "run_as_non_root=True while the containers run as run_as_user=0 (root, from the "
            "other security context): the kubelet refuses to start them",
        ),
        (
            {"security_context": {"run_as_user": -1}},
            "security_context.run_as_user: must be at least 0",
        ),
        (
            {"security_context": {"fs_group": 2147483648}},
            "security_context.fs_group: must be at most 2147483647",
        ),
        (
            {"security_context": {"supplemental_groups": [1, -2]}},
            "security_context.supplemental_groups[1]: must be at least 0",
        ),
        (
            {"security_context": {"seccomp": "unconfined"}},
            "'unconfined' is not a profile: use 'RuntimeDefault' (the container runtime's), "
            "'Unconfined' or 'localhost/<profile>' (a relative path the nodes hold, no '..')",
        ),
        (
            {"container_security_context": {"app_armor": "localhost/../../etc/x"}},
            "'localhost/../../etc/x' is not a profile",
        ),
        (
            {"container_security_context": {"seccomp": "localhost//abs.json"}},
            "'localhost//abs.json' is not a profile",
        ),
        (
            {"container_security_context": {"drop_capabilities": ["net_raw"]}},
            "'net_raw' is not a capability name: use 'ALL' or one such as 'NET_RAW' (upper case)",
        ),
        (
            {"container_security_context": {"privileged": True}},
            "container_security_context.privileged: unknown field",
        ),
        (
            {"security_context": {"capabilities": {"add": ["SYS_ADMIN"]}}},
            "security_context.capabilities: unknown field",
        ),
    ],
)
def test_bad_contexts_are_refused_with_why(fields: dict, message: str) -> None:
    with pytest.raises(DefinitionError) as e:
        PyTorchJob(name="j", image="i:1", command=["true"], resources=RES, **fields)
    assert message in str(e.value), str(e.value)


def test_profiles_besides_runtime_default_need_the_teams_grant(ws, tree) -> None:
    edit(ws, RESNET, 'queue="vision",', 'queue="vision", ' + PROFILES)
    err = refusals(ws)
    for field, kind, profile, grant in (
        ("security_context.seccomp", "seccomp", "Unconfined", "seccomp_profiles"),
        ("security_context.app_armor", "app_armor", "localhost/ml-training", "app_armor_profiles"),
        (
            "container_security_context.seccomp", "seccomp", "localhost/profiles/nccl.json",
            "seccomp_profiles",
        ),
    ):  # fmt: skip
        assert (
            f"PyTorchJob 'resnet50-ddp': {field}: team 'vision' may not use the {kind} profile "
            f"{profile!r}; Team.{grant} in {TEAMS} allows none besides 'RuntimeDefault'; use "
            "'RuntimeDefault', or ask the platform team"
        ) in err, err
    edit(ws, TEAMS, 'vision = Team(name="vision",', GRANT)
    assert refusals(ws) == ""
    # Rendered (on ELASTIC, in the module's tree, granted the same way).
    (job,) = tree.docs("pytorchjob-resnet50-elastic-r1.yaml")
    spec = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert spec["securityContext"] == {
        "seccompProfile": {"type": "Unconfined"},
        "appArmorProfile": {"type": "Localhost", "localhostProfile": "ml-training"},
    }
    assert spec["containers"][0]["securityContext"] == {
        "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/nccl.json"}
    }


def test_runtime_default_needs_no_grant() -> None:
    Team(name="t", seccomp_profiles=["Unconfined"])  # a grant is plain data
    with pytest.raises(DefinitionError, match="'none' is not a profile"):
        Team(name="t", app_armor_profiles=["none"])


def _mpi(**fields: object) -> MPIJob:
    return MPIJob(name="m", image="i:1", command=["true"], resources=RES, **fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"security_context": SecurityContext(run_as_user=1000)},
            "run_as_user=1000 with ssh_dir '/root/.ssh': mpi-operator mounts the ssh key there "
            "with mode 0600, owned by root, which another user cannot read; set ssh_dir to the "
            ".ssh of the image's user, e.g. ssh_dir='/home/mpiuser/.ssh'",
        ),
        (
            {"container_security_context": ContainerSecurityContext(run_as_non_root=True)},
            "run_as_non_root=True with ssh_dir '/root/.ssh': mpi-operator mounts the ssh key",
        ),
        (
            {
                "security_context": SecurityContext(run_as_user=0),
                "ssh_dir": "/home/mpiuser/.ssh",
            },
            "run_as_user=0 (root) with ssh_dir '/home/mpiuser/.ssh': mpi-operator mounts the "
            "ssh key there readable by everyone (0644), owned by root, and OpenSSH refuses a key "
            "its own user owns that others can read; use ssh_dir='/root/.ssh' for root, or the "
            "image's non-root user",
        ),
    ],
)
def test_an_mpijobs_user_must_read_its_ssh_key(fields: dict, message: str) -> None:
    with pytest.raises(DefinitionError) as e:
        _mpi(**fields)
    assert message in str(e.value), str(e.value)


def test_an_mpijobs_user_and_ssh_dir_that_match_pass() -> None:
    _mpi(security_context=SecurityContext(run_as_user=0))
    _mpi(security_context=SecurityContext(run_as_user=1000), ssh_dir="/home/mpiuser/.ssh/")
    # The container's user wins over the pod's, as in the kubelet.
    _mpi(
        security_context=SecurityContext(run_as_user=1000),
        container_security_context=ContainerSecurityContext(run_as_user=0),
    )


def test_a_trainjob_on_an_mpi_runtime_keeps_the_runtimes_user(ws) -> None:
    edit(
        ws, DS_TRAINJOB, 'runtime="deepspeed-0-19",',
        'runtime="deepspeed-0-19", security_context=__import__("trainkit").SecurityContext('
        'fs_group=2000, run_as_non_root=True), container_security_context=__import__("trainkit")'
        '.ContainerSecurityContext(run_as_user=1001),',
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "container_security_context.run_as_user: run_as_user=1001 differs from the run_as_user "
        "1000 of MPI runtime 'deepspeed-0-19', whose ssh keys (mode 0640 at /home/mpiuser/.ssh) only "
        "that user and group can use; leave run_as_user out"
    ) in err, err
    assert (
        "security_context.fs_group: fs_group=2000 differs from the fs_group 1000 of MPI runtime "
        "'deepspeed-0-19'"
    ) in err, err
    # The same values, or none, pass; run_as_non_root only narrows.
    edit(ws, DS_TRAINJOB, "fs_group=2000", "fs_group=1000")
    edit(ws, DS_TRAINJOB, "run_as_user=1001", "run_as_user=1000")
    assert refusals(ws) == ""
