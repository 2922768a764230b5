"""Policy in jobs/platform/: registries, GPU caps, network profiles, and how they render."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
import yaml

from conftest import REPO, Run, Workspace, copy_tree
from example_edits import edit
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import (
    ContainerSecurityContext,
    DefinitionError,
    NetworkProfile,
    Policy,
    PyTorchJob,
    Resources,
    SecurityContext,
)
from trainkit.load import load_jobs
from trainkit.model.rules import image_allowed
from trainkit.resolve import build_plan
from trainkit.validate import PodAllowance, load_crds, validate_paths

POLICY = "jobs/platform/policy.py"
RESNET = "jobs/vision/resnet50_ddp.py"
RUNTIMES = "jobs/platform/runtimes.py"
SFT = "jobs/llm/llama_sft_trainjob.py"
FSDP = "jobs/llm/llama_finetune_fsdp.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
DS_TRAINJOB = "jobs/llm/llama_pretrain_deepspeed_trainjob.py"
TEAMS = "jobs/platform/teams.py"
RESNET_TJ = "jobs/vision/resnet50_trainjob.py"


# (file, old, new) edits of the examples, and the exact error line(s) each must give.
VIOLATIONS = {
    "image from another registry": (
        [(RESNET, "registry.example.com/ml/pytorch:2.5.1-cuda12.4", "docker.io/pytorch/x:1")],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': image: image 'docker.io/pytorch/x:1' is not "
            f"from an allowed registry; Policy.registries in {POLICY} allows "
            "'registry.example.com/ml/'; push the image there or ask the platform team to allow "
            "its registry"
        ],
    ),
    "look-alike registry host": (
        [
            (
                RESNET,
                "registry.example.com/ml/pytorch:2.5.1-cuda",
                "registry.example.com.evil.io/ml/pytorch:2.5.1-cuda",
            )
        ],
        [f"{RESNET}:5: PyTorchJob 'resnet50-ddp': image: image 'registry.example.com.evil.io/"],
    ),
    "runtime image from another registry": (
        [(RUNTIMES, "registry.example.com/ml/pytorch:2.5.1-rocm6.2", "ghcr.io/rocm/pytorch:1")],
        [
            f"{RUNTIMES}:16: ClusterTrainingRuntime 'torch-2-5': image: image "
            "'ghcr.io/rocm/pytorch:1' is not from an allowed registry; Policy.registries in "
            f"{POLICY} allows 'registry.example.com/ml/'"
        ],
    ),
    "trainjob image from another registry": (
        [(SFT, '    runtime="fsdp-a800",', '    runtime="fsdp-a800",\n    image="nvcr.io/x:1",')],
        [f"{SFT}:5: TrainJob 'llama-sft': image: image 'nvcr.io/x:1' is not from an allowed"],
    ),
    "job over the per-job GPU cap": (
        [(RESNET, "    nodes=2,", "    nodes=9,")],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': nodes: 72 GPUs (9 nodes × 8) exceed the "
            f"per-job cap of 64; Policy.max_gpus_per_job in {POLICY}; use fewer nodes or GPUs "
            "per node"
        ],
    ),
    "runtime defaults over the per-job GPU cap": (
        [(RUNTIMES, "    nodes=4,", "    nodes=9,")],
        [
            f"{SFT}:5: TrainJob 'llama-sft': runtime: 72 GPUs (9 nodes × 8, from the runtime) "
            f"exceed the per-job cap of 64; Policy.max_gpus_per_job in {POLICY}"
        ],
    ),
    "team over its GPU cap on a cluster": (
        [(SFT, '    runtime="fsdp-a800",', '    runtime="fsdp-a800",\n    nodes=7,')],
        [
            "jobs/platform/teams.py:21: Team 'llm': max_gpus: the team's jobs on cluster "
            "'a800-north' use 120 GPUs together but Team.max_gpus in jobs/platform/teams.py "
            f"allows 96: MPIJob 'llama-pretrain-deepspeed' 16 ({DEEPSPEED}:5), PyTorchJob "
            f"'llama-finetune-fsdp' 32 ({FSDP}:5), PyTorchJob 'llama-pretrain-dra' 8 "
            "(jobs/llm/llama_pretrain_dra.py:8), PyTorchJob 'llama-pretrain-ib' 8 "
            f"(jobs/llm/llama_pretrain_ib.py:7), TrainJob 'llama-sft' 56 ({SFT}:5); lower the "
            "jobs' nodes or GPUs, or raise max_gpus"
        ],
    ),
    "unknown network profile": (
        [(RESNET, "    nodes=2,", '    nodes=2,\n    network="infiniband",')],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': network: unknown network profile "
            "'infiniband'; defined network profiles: 'ib-multus', 'rdma', 'rdma-dra' (declare "
            "NetworkProfile(name=...) "
            "in jobs/platform/)"
        ],
    ),
    "network profile not on the job's cluster": (
        [(RESNET, "    nodes=2,", '    nodes=2,\n    network="rdma",')],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': network: network profile 'rdma' does not "
            f"exist on cluster 'gpu-east' (NetworkProfile.clusters in {POLICY} allows "
            "'a800-north'); choose other clusters or add the cluster to the profile",
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': network: network profile 'rdma' does not "
            "exist on cluster 'rocm-west'",
        ],
    ),
    "runtime network profile not on its cluster": (
        [
            (
                RUNTIMES,
                '    clusters=["rocm-west"],',
                '    clusters=["rocm-west"],\n    network="rdma",',
            )
        ],
        [
            f"{RUNTIMES}:16: ClusterTrainingRuntime 'torch-2-5': network: network "
            "profile 'rdma' does not exist on cluster 'rocm-west'"
        ],
    ),
    "network profile the team is not granted": (
        [(TEAMS, '    network_profiles=["rdma", "ib-multus", "rdma-dra"],', "")],
        [
            f"{FSDP}:5: PyTorchJob 'llama-finetune-fsdp': network: team 'llm' may not use "
            "network profile 'rdma', which grants capabilities IPC_LOCK; resources rdma/hca; "
            f"variables NCCL_IB_DISABLE ({POLICY}); Team.network_profiles in {TEAMS} allows "
            "none: ask the platform team to add it there, or drop network= or name a granted one",
            f"{DEEPSPEED}:5: MPIJob 'llama-pretrain-deepspeed': network: team 'llm' may not use "
            "network profile 'rdma'",
            f"{RUNTIMES}:16: TrainingRuntime 'fsdp-a800': network: team 'llm' may not use "
            "network profile 'rdma'",
        ],
    ),
    "network profile granted to another team": (
        # The attack: once the platform defines a profile for one team, any team could name it.
        [
            (
                POLICY,
                '    clusters=["a800-north"],',
                '    clusters=["a800-north", "gpu-east", "rocm-west"],',
            ),
            (RESNET, "    nodes=2,", '    nodes=2,\n    network="rdma",'),
        ],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': network: team 'vision' may not use network "
            "profile 'rdma', which grants capabilities IPC_LOCK; resources rdma/hca; variables "
            f"NCCL_IB_DISABLE ({POLICY}); Team.network_profiles in {TEAMS} allows none: ask the "
            "platform team to add it there, or drop network= or name a granted one",
        ],
    ),
    "trainjob given a profile through a cluster runtime": (
        [
            (
                POLICY,
                "rdma = NetworkProfile(",
                'wide = NetworkProfile(name="wide", host_network=True)\nrdma = NetworkProfile(',
            ),
            (
                RUNTIMES,
                '    env={"NCCL_DEBUG": "WARN"},\n    clusters=["gpu-east", "a800-north"],',
                '    env={"NCCL_DEBUG": "WARN"},\n    clusters=["gpu-east", "a800-north"],\n    network="wide",',
            ),
        ],
        [
            f"{RESNET_TJ}:5: TrainJob 'resnet50': runtime: team 'vision' may not use network "
            "profile 'wide' through ClusterTrainingRuntime 'torch-2-5', which grants the host "
            f"network ({POLICY}); Team.network_profiles in {TEAMS} allows none: ask the "
            "platform team to add it there, or choose a runtime without it",
        ],
    ),
    "team granted an unknown network profile": (
        [
            (
                TEAMS,
                'network_profiles=["rdma", "ib-multus", "rdma-dra"]',
                'network_profiles=["rdma", "ib-multus", "rdma-dra", "roce"]',
            )
        ],
        [
            f"{TEAMS}:21: Team 'llm': network_profiles[3]: unknown network profile 'roce'; "
            "defined network profiles: 'ib-multus', 'rdma', 'rdma-dra' (declare "
            "NetworkProfile(name=...) in jobs/platform/ or remove it here)"
        ],
    ),
    "job setting a variable of its network profile": (
        [(FSDP, '"NCCL_DEBUG": "INFO",', '"NCCL_DEBUG": "INFO",\n        "NCCL_IB_DISABLE": "1",')],
        [
            f"{FSDP}:5: PyTorchJob 'llama-finetune-fsdp': env.NCCL_IB_DISABLE: NCCL_IB_DISABLE is "
            f"set by network profile 'rdma' ({POLICY}) to '0' for every pod on that network; "
            "remove it from env"
        ],
    ),
    "runtime setting a variable of its network profile": (
        [(RUNTIMES, '{"CUDA_DEVICE_MAX_CONNECTIONS": "1"}', '{"NCCL_IB_DISABLE": "1"}')],
        [
            f"{RUNTIMES}:16: TrainingRuntime 'fsdp-a800': env.NCCL_IB_DISABLE: NCCL_IB_DISABLE "
            f"is set by network profile 'rdma' ({POLICY}) to '0'"
        ],
    ),
    "trainjob setting a variable of its runtime's network profile": (
        [
            (
                SFT,
                '"OUTPUT_PATH": "/mnt/output"}',
                '"OUTPUT_PATH": "/mnt/output", "NCCL_IB_DISABLE": "1"}',
            )
        ],
        [
            f"{SFT}:5: TrainJob 'llama-sft': env.NCCL_IB_DISABLE: NCCL_IB_DISABLE is set by "
            f"network profile 'rdma' ({POLICY}) to '0' for every pod on that network"
        ],
    ),
    "profile setting a variable the operators set": (
        [
            (
                POLICY,
                '{"NCCL_IB_DISABLE": "0"}',
                '{"NCCL_IB_DISABLE": "0", "MASTER_ADDR": "10.0.0.1"}',
            )
        ],
        [
            f"{POLICY}:9: NetworkProfile 'rdma': env: MASTER_ADDR may not be set: the Training "
            "Operator sets it to the Master pod's service — remove it from env"
        ],
    ),
    "service account the team does not list": (
        [(RESNET, "    nodes=2,", '    nodes=2,\n    service_account="cluster-admin",')],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': service_account: team 'vision' may not use "
            f"ServiceAccount 'cluster-admin'; Team.service_accounts in {TEAMS} allows none; "
            "ask the platform team to add it"
        ],
    ),
    "pull secret the team does not list": (
        [
            (
                SFT,
                '    runtime="fsdp-a800",',
                '    runtime="fsdp-a800",\n    image_pull_secrets=["x"],',
            )
        ],
        [
            f"{SFT}:5: TrainJob 'llama-sft': image_pull_secrets[0]: team 'llm' may not use pull "
            f"Secret 'x'; Team.image_pull_secrets in {TEAMS} allows none"
        ],
    ),
    "priority class the team does not list, on its runtime": (
        [(RUNTIMES, '    network="rdma",', '    network="rdma",\n    priority_class="urgent",')],
        [
            f"{RUNTIMES}:26: TrainingRuntime 'fsdp-a800': priority_class: team 'llm' may not use "
            f"PriorityClass 'urgent'; Team.priority_classes in {TEAMS} allows none"
        ],
    ),
    "priority class on a TrainJob": (
        [(SFT, '    runtime="fsdp-a800",', '    runtime="fsdp-a800",\n    priority_class="high",')],
        [
            f"{SFT}:5: TrainJob 'llama-sft': priority_class: a TrainJob cannot carry this "
            "(Trainer v2.3's runtime patches have no such field); set it on the runtime and give "
            "the job that runtime"
        ],
    ),
    "trainjob toleration the cluster does not allow": (
        [
            (SFT, "from trainkit import", "from trainkit import Toleration,"),
            (
                SFT,
                '    runtime="fsdp-a800",',
                '    runtime="fsdp-a800",\n    tolerations=[Toleration(key="spot", operator="Exists")],',
            ),
        ],
        [
            f"{SFT}:5: TrainJob 'llama-sft': tolerations[0]: toleration 'spot:*' is not allowed on "
            "cluster 'a800-north'"
        ],
    ),
    "secret key the team does not grant": (
        [
            (RESNET, "from trainkit import", "from trainkit import SecretKey,"),
            (
                RESNET,
                "    nodes=2,",
                '    nodes=2,\n    env_refs={"HF_TOKEN": SecretKey(secret="hf-token", key="token")},',
            ),
        ],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': env_refs.HF_TOKEN: team 'vision' may not "
            f"read Secret 'hf-token' key 'token'; Team.secrets in {TEAMS} allows none; ask the "
            "platform team to add it"
        ],
    ),
    "variable from a key the operator sets": (
        [
            (SFT, "from trainkit import", "from trainkit import ConfigMapKey,"),
            (
                SFT,
                '    runtime="fsdp-a800",',
                '    runtime="fsdp-a800",\n    env_refs={"PET_NNODES": '
                'ConfigMapKey(config_map="x", key="n")},',
            ),
        ],
        [
            f"{SFT}:5: TrainJob 'llama-sft': env_refs: PET_NNODES may not be set: Kubeflow "
            "Trainer's torch plugin sets it from nodes — remove it from env_refs"
        ],
    ),
    "variable both in env and env_refs": (
        [
            (SFT, "from trainkit import", "from trainkit import SecretKey,"),
            (
                SFT,
                '    runtime="fsdp-a800",',
                '    runtime="fsdp-a800",\n    env_refs={"OUTPUT_PATH": '
                'SecretKey(secret="x", key="k")},',
            ),
        ],
        [
            f"{SFT}:5: TrainJob 'llama-sft': env_refs: OUTPUT_PATH set both in env and in "
            "env_refs; keep one of them"
        ],
    ),
    "cpu request below the limit": (
        [
            (
                RESNET,
                'Resources(cpu=32, memory="256Gi", gpu=8)',
                'Resources(cpu=32, memory="256Gi", gpu=8, cpu_request=16)',
            )
        ],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': resources.cpu_request: a cpu request below "
            "the limit makes the pods Burstable (throttled and evicted before Guaranteed pods), "
            f"which Policy.burstable in {POLICY} does not allow; remove cpu_request"
        ],
    ),
    "memory request above the limit": (
        [
            (
                RESNET,
                'Resources(cpu=32, memory="256Gi", gpu=8)',
                'Resources(cpu=32, memory="256Gi", gpu=8, memory_request="300Gi")',
            )
        ],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': resources: memory_request 300Gi exceeds "
            "memory 256Gi, the limit; a request may only be lower"
        ],
    ),
    "second policy": (
        [(POLICY, "\n\n# RDMA over", "\nother = Policy()\n\n# RDMA over")],
        [f"{POLICY}:6: Policy: only one Policy is allowed; first at {POLICY}:5"],
    ),
    "profile granting the GPU resource": (
        [(POLICY, '{"rdma/hca": 1}', '{"rdma/hca": 1, "baidu.com/a800_80g_cgpu": 8}')],
        [
            f"{POLICY}:9: NetworkProfile 'rdma': resources.baidu.com/a800_80g_cgpu: "
            "'baidu.com/a800_80g_cgpu' is the GPU resource of cluster 'a800-north'; GPUs come "
            "from each job's resources.gpu, remove it here"
        ],
    ),
    "registry entry without repository": (
        [(POLICY, '["registry.example.com/ml/"]', '["registry.example.com"]')],
        [
            f"{POLICY}:5: Policy: registries[0]: 'registry.example.com' names no repository; to "
            "allow every image of a registry write 'registry.example.com/'"
        ],
    ),
    "privileged is no field of a job": (
        [(RESNET, "    nodes=2,", "    nodes=2,\n    privileged=True,")],
        [f"{RESNET}:5: PyTorchJob 'resnet50-ddp': privileged: unknown field"],
    ),
    "toleration the cluster does not allow": (
        [
            (
                FSDP,
                'key="nvidia.com/gpu", operator="Exists"',
                'key="node-role.kubernetes.io/control-plane", operator="Exists"',
            )
        ],
        [
            f"{FSDP}:5: PyTorchJob 'llama-finetune-fsdp': tolerations[0]: toleration "
            "'node-role.kubernetes.io/control-plane:NoSchedule' is not allowed on cluster "
            "'a800-north'; Cluster.tolerations in jobs/platform/clusters.py allows "
            "'nvidia.com/gpu:NoSchedule'; remove it or ask the platform team to allow it"
        ],
    ),
    "toleration of every taint": (
        [
            (
                FSDP,
                'key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"',
                'operator="Exists"',
            )
        ],
        [
            f"{FSDP}:5: PyTorchJob 'llama-finetune-fsdp': tolerations[0]: toleration '*:*' is not allowed"
        ],
    ),
    "runtime toleration on a cluster that declares none": (
        [
            (
                RUNTIMES,
                '    clusters=["rocm-west"],',
                '    clusters=["rocm-west"],\n    tolerations=[Toleration(key="amd.com/gpu", operator="Exists")],',
            ),
            (
                RUNTIMES,
                "from trainkit import (",
                "from trainkit import (Toleration,",
            ),
        ],
        [
            f"{RUNTIMES}:16: ClusterTrainingRuntime 'torch-2-5': tolerations[0]: "
            "toleration 'amd.com/gpu:*' is not allowed on cluster 'rocm-west'; "
            "Cluster.tolerations in jobs/platform/clusters.py allows none"
        ],
    ),
    "device visibility through env": (
        [(RESNET, "    nodes=2,", '    nodes=2,\n    env={"NVIDIA_VISIBLE_DEVICES": "all"},')],
        [
            f"{RESNET}:5: PyTorchJob 'resnet50-ddp': env: NVIDIA_VISIBLE_DEVICES may not be set: "
            "the container runtime reads it when it creates the container and would expose "
            "devices the scheduler did not assign to the pod; GPUs come from resources.gpu — "
            "remove it from env"
        ],
    ),
    "runtime selecting AMD devices through env": (
        [
            (
                RUNTIMES,
                '{"NCCL_DEBUG": "WARN"},  # RCCL',
                '{"NCCL_DEBUG": "WARN", "ROCR_VISIBLE_DEVICES": "0"},  # RCCL',
            )
        ],
        [
            f"{RUNTIMES}:16: ClusterTrainingRuntime 'torch-2-5': env: ROCR_VISIBLE_DEVICES may not be set"
        ],
    ),
    "capability outside the known names": (
        [(POLICY, '["IPC_LOCK"]', '["IPC_LOCK", "ALL"]')],
        [f"{POLICY}:9: NetworkProfile 'rdma': capabilities[1]: must be one of 'AUDIT_CONTROL'"],
    ),
}


def _assert_says(err: str, expected: list[str]) -> None:
    # Lines are the corpus's business (tests/test_bad_inputs.py finds them by anchor);
    # here: the file, object, field and message of each rule.
    reported = re.sub(r"^(error: [^:]+):\d+: ", r"\1:L: ", err, flags=re.M)
    for line in expected:
        assert "error: " + re.sub(r"^([^:]+):\d+: ", r"\1:L: ", line) in reported, err


# The step that refuses each violation whose edits change no platform file (a platform
# edit changes what every job is judged against), and whose lines are all in the files it
# edits or names: violations of one step whose files differ are refused in one copy of the
# examples (``refused``), as trainkit reports every problem a step finds. A step's problems
# stop the later steps, so violations of different steps never share a copy. Load: each
# definition file runs on its own, a platform file's problems included.
STAGE = {
    "capability outside the known names": "load",
    "device visibility through env": "load",
    "memory request above the limit": "load",
    "priority class on a TrainJob": "load",
    "privileged is no field of a job": "load",
    "profile setting a variable the operators set": "load",
    "registry entry without repository": "load",
    "runtime selecting AMD devices through env": "load",
    "variable both in env and env_refs": "load",
    "variable from a key the operator sets": "load",
    "job setting a variable of its network profile": "plan",
    "network profile not on the job's cluster": "plan",
    "pull secret the team does not list": "plan",
    "secret key the team does not grant": "plan",
    "service account the team does not list": "plan",
    "trainjob setting a variable of its runtime's network profile": "plan",
    "unknown network profile": "plan",
    "cpu request below the limit": "policy",
    "image from another registry": "policy",
    "job over the per-job GPU cap": "policy",
    "look-alike registry host": "policy",
    "team over its GPU cap on a cluster": "policy",
    "toleration of every taint": "policy",
    "toleration the cluster does not allow": "policy",
    "trainjob image from another registry": "policy",
    "trainjob toleration the cluster does not allow": "policy",
}


def _touched(case: str) -> set[str]:
    """The files a violation edits or names in its lines: a batch's violations share none."""
    edits, expected = VIOLATIONS[case]
    return {rel for rel, _, _ in edits} | {line.split(":", 1)[0] for line in expected}


def _violation_batches() -> dict[str, list[str]]:
    """The violations by the copy they are refused in: those of one step in turn into the
    first batch none of whose files they touch; one without a step alone."""
    batches: dict[str, list[str]] = {}
    for case in sorted(VIOLATIONS):
        if case not in STAGE:
            batches[case] = [case]
            continue
        k = 1
        while (name := f"{STAGE[case]}-{k}") in batches and any(
            _touched(case) & _touched(other) for other in batches[name]
        ):
            k += 1
        batches.setdefault(name, []).append(case)
    return batches


VIOLATION_BATCHES = _violation_batches()
BATCH_OF = {case: name for name, cases in VIOLATION_BATCHES.items() for case in cases}


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    """What synth refuses in a copy of the examples with every edit of the batch NAME,
    found once by the first of its tests (``example_refusals``)."""
    done: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in done:
            ws = Workspace(tmp_path_factory.mktemp("refused"))
            copy_tree(REPO / "jobs", ws.jobs)
            for case in VIOLATION_BATCHES[name]:
                for rel, old, new in VIOLATIONS[case][0]:
                    edit(ws, rel, old, new)
            done[name] = refusals(ws)
        return done[name]

    return get


@pytest.mark.parametrize("case", [case for cases in VIOLATION_BATCHES.values() for case in cases])
def test_violation_is_refused_naming_the_rule(refused, case):
    _assert_says(refused(BATCH_OF[case]), VIOLATIONS[case][1])


# One violation of each step that can refuse (the load, the plan, the policy of a job, of a
# runtime and of a team's jobs together) through both commands: they run the steps
# ``refusals`` runs, print every problem as it does, exit 1 and write nothing.
END_TO_END = [
    "privileged is no field of a job",
    "unknown network profile",
    "job over the per-job GPU cap",
    "runtime image from another registry",
    "team over its GPU cap on a cluster",
]


@pytest.mark.parametrize("case", END_TO_END)
@pytest.mark.parametrize("command", ["synth", "check"])
def test_violation_fails_naming_the_rule_and_leaves_generated_untouched(
    synthesized, cli, case, command
):
    ws = synthesized
    before = ws.snapshot()
    edits, expected = VIOLATIONS[case]
    for rel, old, new in edits:
        edit(ws, rel, old, new)
    run = cli(command)
    assert run.code == 1, run.out
    assert "Traceback" not in run.err
    _assert_says(run.err, expected)
    errors = "\n".join(line for line in run.err.splitlines() if line.startswith("error: "))
    assert errors == refusals(ws)
    assert ws.snapshot() == before


def test_the_examples_follow_their_policy(ws):
    # The steps of synth that judge them refuse nothing (and synth of them exits 0: the
    # session's synth, conftest._examples_generated, asserts it for every test that reads it).
    assert refusals(ws) == ""


def test_a_platform_without_policy_allows_any_registry(bare, bare_cli):
    # The bare platform declares no Policy; its job's image is not under registry.example.com/ml/.
    assert bare_cli("synth").code == 0


@pytest.mark.parametrize(
    ("image", "prefixes", "allowed"),
    [
        ("registry.example.com/ml/pytorch:2", ["registry.example.com/ml/"], True),
        ("registry.example.com/mlx/pytorch:2", ["registry.example.com/ml/"], False),
        ("registry.example.com.evil.io/ml/x:1", ["registry.example.com/"], False),
        ("registry.example.com/ml/pytorch:2", ["registry.example.com/ml/pytorch"], True),
        (
            f"registry.example.com/ml/pytorch@sha256:{'ab' * 32}",
            ["registry.example.com/ml/pytorch"],
            True,
        ),
        # Path traversal passes a prefix check of the string, not of the parsed reference.
        ("registry.example.com/ml/../evil/x:1", ["registry.example.com/ml/"], False),
        ("registry.example.com/ml/./x:1", ["registry.example.com/ml/"], False),
        ("registry.example.com/ml//x:1", ["registry.example.com/ml/"], False),
        ("registry.example.com/ml/pytorch-evil:2", ["registry.example.com/ml/pytorch"], False),
        ("registry.example.com/ml/pytorch:2.5", ["registry.example.com/ml/pytorch:"], True),
        ("registry.example.com/ml/pytorch-x:3", ["registry.example.com/ml/pytorch:"], False),
        ("pytorch/pytorch:2.5", ["docker.io/pytorch/"], True),
        ("ubuntu:24.04", ["docker.io/library/ubuntu"], True),
        ("localhost/x:1", ["docker.io/"], False),
        ("anything:1", [], True),
    ],
)
def test_registry_prefixes(image, prefixes, allowed):
    assert image_allowed(image, prefixes) is allowed


def test_an_image_that_is_no_reference_is_refused_with_why(bare, bare_cli):
    bare.write(
        "jobs/platform/policy.py",
        "from trainkit import Policy\npolicy = Policy(registries=['registry.example.com/'])\n",
    )
    bare.write(
        "jobs/vision/ddp.py",
        (REPO_JOB := bare.jobs / "vision" / "ddp.py")
        .read_text()
        .replace("registry.example.com/pytorch:2", "registry.example.com/ml/../evil/miner:1"),
    )
    run = bare_cli("synth")
    assert run.code == 1
    assert (
        "jobs/vision/ddp.py:5: PyTorchJob 'ddp': image: image "
        "'registry.example.com/ml/../evil/miner:1' is not a valid image reference"
    ) in run.err, (REPO_JOB, run.err)


def test_models_offer_no_way_to_privilege():
    for field in ("privileged", "host_path", "host_network", "capabilities", "host_ipc"):
        assert field not in PyTorchJob.model_fields
    # The security contexts only say who runs and what narrows a container.
    for model in (SecurityContext, ContainerSecurityContext):
        for field in ("privileged", "capabilities", "add_capabilities", "proc_mount"):
            assert field not in model.model_fields
    with pytest.raises(DefinitionError, match="unknown field"):
        ContainerSecurityContext(privileged=True)
    with pytest.raises(DefinitionError, match="unknown field"):
        PyTorchJob(
            name="x",
            image="i:1",
            command=["x"],
            resources=Resources(cpu=1, memory="1Gi"),
            host_network=True,
        )
    assert NetworkProfile(name="rdma").host_network is False
    assert Policy().registries == []


def _docs(path):
    # libyaml's parser: the same documents as PyYAML's own, for a fraction of its CPU.
    return list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))


def test_rdma_profile_renders_capability_and_resource_on_every_node(_examples_generated):
    # The session's synth of the examples, read (never written) in place.
    base = _examples_generated / "clusters/a800-north/llm-training"
    (job,) = _docs(base / "pytorchjob-llama-finetune-fsdp-r1.yaml")
    for replica in ("Master", "Worker"):
        pod = job["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]
        (c,) = pod["containers"]
        assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        assert c["resources"]["limits"]["rdma/hca"] == "1"
        assert c["resources"]["requests"]["rdma/hca"] == "1"
        assert "hostNetwork" not in pod and "dnsPolicy" not in pod
    (runtime,) = _docs(base.parent / "platform/llm-training/trainingruntime-fsdp-a800.yaml")
    (rjob,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
    assert node["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert node["resources"]["limits"]["rdma/hca"] == "1"
    # A TrainJob cannot change once created: it inherits the profile through its runtime.
    (trainjob,) = _docs(base / "trainjob-llama-sft-r1.yaml")
    assert "rdma" not in yaml.safe_dump(trainjob) and "IPC_LOCK" not in yaml.safe_dump(trainjob)
    assert "NCCL_IB_DISABLE" not in yaml.safe_dump(trainjob)


def test_profile_env_follows_the_containers_own_and_explain_names_the_profile(
    _examples_generated, cli
):
    base = _examples_generated / "clusters/a800-north/llm-training"
    (job,) = _docs(base / "pytorchjob-llama-finetune-fsdp-r1.yaml")
    for replica in ("Master", "Worker"):
        (c,) = job["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]["containers"]
        assert [e["name"] for e in c["env"]][-2:] == [
            "CUDA_DEVICE_MAX_CONNECTIONS",  # the job's last
            "NCCL_IB_DISABLE",  # the profile's
        ]
        assert c["env"][-1] == {"name": "NCCL_IB_DISABLE", "value": "0"}
    (runtime,) = _docs(base.parent / "platform/llm-training/trainingruntime-fsdp-a800.yaml")
    (rjob,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
    assert node["env"] == [
        {"name": "CUDA_DEVICE_MAX_CONNECTIONS", "value": "1"},
        {"name": "NCCL_IB_DISABLE", "value": "0"},
    ]
    for name, source in (("llama-finetune-fsdp", "job"), ("llama-sft", "runtime 'fsdp-a800'")):
        run = cli("explain", name, "--format", "json")
        assert run.code == 0, run.err
        (explained,) = json.loads(run.out)["jobs"]
        env = {e["name"]: e["source"] for e in explained["pods"][0]["env"]}
        assert env["NCCL_IB_DISABLE"] == "network profile 'rdma'"
        assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == source


def test_jobs_without_a_profile_get_nothing_extra(_examples_generated):
    for path in _examples_generated.rglob("*.yaml"):
        fabric = (
            "llama-finetune-fsdp",
            "fsdp-a800",
            "pretrain-deepspeed",
            "pretrain-ib",
            "pretrain-dra",
        )
        if any(j in path.name for j in fabric):
            continue
        text = path.read_text(encoding="utf-8")
        # A runtime's own run_as_user/fs_group is a securityContext, and a job may drop
        # capabilities, but none adds one.
        for word in ("add:", "IPC_LOCK", "hostNetwork", "rdma/hca", "dnsPolicy"):
            assert word not in text, f"{word} in {path}"


def test_host_network_profile_renders_and_check_grants_it(ws, cli, crds, _examples_generated):
    edit(
        ws,
        POLICY,
        '    clusters=["a800-north"],',
        '    host_network=True,\n    clusters=["a800-north"],',
    )
    # DeepSpeed's mpirun must then be told the nodes' interface (it would pick eth0).
    err = refusals(ws)
    assert "btl_tcp_if_include" in err, err
    edit(
        ws,
        "jobs/llm/llama_pretrain_deepspeed.py",
        '    launch="deepspeed",',
        '    launch="deepspeed",\n    launcher_args=["--mca", "btl_tcp_if_include", "bond0"],',
    )
    assert cli("synth").code == 0
    (job,) = _docs(
        ws.out / "clusters/a800-north/llm-training/pytorchjob-llama-finetune-fsdp-r1.yaml"
    )
    pod = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    (runtime,) = _docs(
        ws.out / "clusters/a800-north/platform/llm-training/trainingruntime-fsdp-a800.yaml"
    )
    (rjob,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert rjob["template"]["spec"]["template"]["spec"]["hostNetwork"] is True

    # Every file the edit changed is on the profile's cluster: the other clusters' files are
    # the examples' own, which every check of the examples validates.
    examples, now = Workspace(_examples_generated.parent).snapshot(), ws.snapshot()
    changed = {p for p in examples.keys() | now.keys() if examples.get(p) != now.get(p)}
    assert changed and all(p.startswith("clusters/a800-north/") for p in changed), changed
    north = [ws.out / "clusters/a800-north"]
    crd_set = load_crds(crds)
    problems = validate_paths(north, crd_set, root=ws.root)
    # Without the platform's profiles the default allowance has no host network (nor the
    # device the ib-multus profile of jobs/platform/fabrics.py mounts).
    assert {p.field.rsplit(".", 1)[-1] for p in problems} == {"hostNetwork", "hostPath"}
    assert all(
        "pod security: the host network is not allowed" in p.message
        for p in problems
        if p.field.endswith("hostNetwork")
    )
    plan = build_plan(load_jobs(ws.jobs, ws.root).definitions)
    allowance = PodAllowance.from_profiles(plan.network_profiles)
    assert validate_paths(north, crd_set, root=ws.root, allowance=allowance) == []


def test_a_trainjobs_node_selector_and_tolerations_ride_its_runtime_patch(ws, cli, granted, crds):
    edit(ws, SFT, "from trainkit import", "from trainkit import Toleration,")
    edit(ws, SFT, '    runtime="fsdp-a800",', f'    runtime="fsdp-a800",\n    {SFT_PLACEMENT}')
    assert cli("synth").code == 0
    base = ws.out / "clusters/a800-north/llm-training"
    (trainjob,) = _docs(base / "trainjob-llama-sft-r1.yaml")
    (patch,) = trainjob["spec"]["runtimePatches"]
    (node_job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node_job["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu.product": "A800"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    # The patch's list replaces the runtime's in Trainer's strategic merge: a runtime
    # toleration is written again, so adding one never drops another (``granted`` gives
    # the runtime one, on a cluster that allows it, and the job the same placement).
    base = granted.ws.out / "clusters/a800-north/llm-training"
    (trainjob,) = _docs(base / "trainjob-llama-sft-r1.yaml")
    pod = trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ][0]["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu.product": "A800"}
    assert [t["key"] for t in pod["tolerations"]] == ["rdma", "nvidia.com/gpu"]
    run = granted.run("check", "--crds", str(crds))
    assert run.code == 0, run.err


def test_naming_the_default_service_account_needs_no_grant(ws, cli):
    edit(ws, RESNET, "    nodes=2,", '    nodes=2,\n    service_account="default",')
    run = cli("synth")
    assert run.code == 0, run.err
    (job,) = _docs(ws.out / "clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml")
    assert job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"][
        "serviceAccountName"
    ] == ("default")


@pytest.mark.parametrize(
    ("grant", "says"),
    [
        ("", "team 'llm' may not read Secret 'wandb'; Team.secrets in jobs/platform/teams.py"),
        (
            '    secrets={"wandb": ["WANDB_API_KEY", "CUDA_VISIBLE_DEVICES"]},\n',
            "Secret 'wandb' holds key 'CUDA_VISIBLE_DEVICES' (Team.secrets in "
            "jobs/platform/teams.py), which env_from would make a variable that may not be set",
        ),
        (
            '    secrets={"wandb": ["NCCL_DEBUG"]},\n',
            "NCCL_DEBUG is set by the job and by Secret 'wandb' (env_from); keep one of them",
        ),
    ],
    ids=["not-granted", "reserved-key", "clash-with-env"],
)
def test_env_from_needs_every_key_granted_and_allowed(ws, grant, says):
    edit(ws, TEAMS, "    max_gpus=96,", f"{grant}    max_gpus=96,")
    edit(ws, DEEPSPEED, "from trainkit import", "from trainkit import SecretEnv,")
    edit(ws, DEEPSPEED, "    nodes=2,", '    nodes=2,\n    env_from=[SecretEnv(secret="wandb")],')
    err = refusals(ws)
    lines = (ws.root / DEEPSPEED).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "env_from=" in text)
    assert f"{DEEPSPEED}:{line}: MPIJob 'llama-pretrain-deepspeed': env_from[0]: {says}" in err


def test_a_trainjob_takes_no_env_from_of_its_own(ws):
    edit(ws, DS_TRAINJOB, "from trainkit import", "from trainkit import SecretEnv,")
    edit(
        ws, DS_TRAINJOB, "    clusters=", '    env_from=[SecretEnv(secret="wandb")],\n    clusters='
    )
    err = refusals(ws)
    lines = (ws.root / DS_TRAINJOB).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "env_from=" in text)
    assert (
        f"{DS_TRAINJOB}:{line}: TrainJob 'llama-pretrain-ds': env_from: a TrainJob cannot carry "
        "this (Trainer v2.3's runtime patches have no such field); set it on the runtime"
    ) in err


def test_a_team_runtime_s_env_from_is_checked_against_its_team(ws):
    edit(ws, RUNTIMES, "from trainkit import (", "from trainkit import (ConfigMapEnv,")
    edit(
        ws, RUNTIMES, '    env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"},',
        '    env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"},\n'
        '    env_from=[ConfigMapEnv(config_map="tuning")],',
    )  # fmt: skip
    edit(
        ws, TEAMS, "    max_gpus=96,",
        '    config_maps={"tuning": ["CUDA_VISIBLE_DEVICES"]},\n    max_gpus=96,',
    )  # fmt: skip
    err = refusals(ws)
    lines = (ws.root / RUNTIMES).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "env_from=" in text)
    assert (
        f"{RUNTIMES}:{line}: TrainingRuntime 'fsdp-a800': env_from[0]: ConfigMap 'tuning' holds "
        f"key 'CUDA_VISIBLE_DEVICES' (Team.config_maps in {TEAMS}), which env_from would make a "
        "variable that may not be set"
    ) in err


# The grants the tests below read, in one copy of the examples (``granted``): each line says
# whose it is. They must not clash: each test asserts its own jobs' output.
REFS = (
    'env_refs={"HF_TOKEN": SecretKey(secret="hf-token", key="token"), '
    '"DATA": ConfigMapKey(config_map="datasets", key="path")},'
)
SFT_PLACEMENT = (
    'node_selector={"gpu.product": "A800"},\n'
    '    tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],'
)


@pytest.fixture(scope="module")
def granted(module_ws: Workspace, module_cli: Callable[..., Run]) -> SharedTree:
    """A copy of the examples whose platform grants what the tests below use, synthesized
    once; ``check --crds`` of it runs once (``SharedTree.run``)."""
    ws = module_ws
    # Team vision: access (test_granted_access_...) and Volcano's own queue
    # (test_volcanos_own_default_queue_...).
    edit(
        ws,
        TEAMS,
        'vision = Team(name="vision", queues=["vision"],',
        'vision = Team(name="vision", service_accounts=["trainer"], image_pull_secrets=["regcred"],'
        ' priority_classes=["batch-high"], queues=["vision", "default"],',
    )
    # Team llm: access (test_granted_access_...), keys (test_granted_secret_and_configmap_...),
    # a whole Secret (test_a_whole_granted_secret_..., test_a_runtime_s_env_from_...).
    edit(
        ws,
        TEAMS,
        "    max_gpus=96,",
        '    service_accounts=["trainer"],\n    image_pull_secrets=["regcred"],\n'
        '    secrets={"hf-token": ["token"], "wandb": ["WANDB_API_KEY"]},\n'
        '    config_maps={"datasets": ["path"]},\n    max_gpus=96,',
    )
    # test_burstable_requests_...
    edit(ws, POLICY, "max_gpus_per_job=64,", "max_gpus_per_job=64, burstable=True,")
    # resnet50-ddp: access (test_granted_access_...), requests (test_burstable_requests_...),
    # Volcano's own queue (test_volcanos_own_default_queue_...).
    edit(
        ws,
        RESNET,
        "    nodes=2,",
        '    nodes=2,\n    service_account="trainer",\n    image_pull_secrets=["regcred"],\n'
        '    image_pull_policy="Always",\n    priority_class="batch-high",',
    )
    edit(
        ws,
        RESNET,
        'Resources(cpu=32, memory="256Gi", gpu=8)',
        'Resources(cpu=32, memory="256Gi", gpu=8, cpu_request=16, memory_request="200Gi")',
    )
    edit(ws, RESNET, 'queue="vision"', 'queue="default"')
    # llama-sft: access (test_granted_access_...), keys (test_granted_secret_and_configmap_...)
    # and placement (test_a_trainjobs_node_selector_...).
    edit(
        ws, SFT, "from trainkit import", "from trainkit import ConfigMapKey, SecretKey, Toleration,"
    )
    edit(
        ws,
        SFT,
        '    runtime="fsdp-a800",',
        '    runtime="fsdp-a800",\n    service_account="trainer",\n    image_pull_secrets=["regcred"],'
        f"\n    {REFS}\n    {SFT_PLACEMENT}",
    )
    # llama-finetune-fsdp: keys (test_granted_secret_and_configmap_...).
    edit(ws, FSDP, "from trainkit import", "from trainkit import ConfigMapKey, SecretKey,")
    edit(ws, FSDP, "    nodes=4,", f"    nodes=4,\n    {REFS}")
    # Runtime fsdp-a800: access (test_granted_access_...) and a toleration
    # (test_a_trainjobs_node_selector_...); deepspeed-0-19: a whole Secret
    # (test_a_runtime_s_env_from_...).
    edit(
        ws,
        RUNTIMES,
        '    network="rdma",',
        '    network="rdma",\n    image_pull_policy="IfNotPresent",\n'
        '    tolerations=[Toleration(key="rdma", operator="Exists")],',
    )
    edit(ws, RUNTIMES, "from trainkit import (", "from trainkit import (SecretEnv, Toleration,")
    # Cluster a800-north allows the runtime's toleration (test_a_trainjobs_node_selector_...).
    edit(
        ws,
        "jobs/platform/clusters.py",
        'Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")',
        'Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"), '
        'Toleration(key="rdma", operator="Exists")',
    )
    edit(
        ws, RUNTIMES, "    mpi=RuntimeMPI(",
        '    env_from=[SecretEnv(secret="wandb")],\n    mpi=RuntimeMPI(',
    )  # fmt: skip
    # llama-pretrain-deepspeed: a whole Secret (test_a_whole_granted_secret_...).
    edit(ws, DEEPSPEED, "from trainkit import", "from trainkit import SecretEnv,")
    edit(ws, DEEPSPEED, "    nodes=2,", '    nodes=2,\n    env_from=[SecretEnv(secret="wandb")],')
    # The jobs the tests read: the other examples would add nothing but their synth and check.
    keep_only(ws, [RESNET, SFT, FSDP, DEEPSPEED, DS_TRAINJOB])
    return SharedTree.synthesized(ws, module_cli)


def test_granted_access_renders_on_the_pods_and_check_accepts_it(granted, crds):
    ws = granted.ws
    (job,) = _docs(ws.out / "clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml")
    for replica in ("Master", "Worker"):
        pod = job["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]
        assert pod["serviceAccountName"] == "trainer"
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
        assert pod["priorityClassName"] == "batch-high"
        assert pod["containers"][0]["imagePullPolicy"] == "Always"
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["priorityClass"] == "batch-high"
    base = ws.out / "clusters/a800-north/llm-training"
    (trainjob,) = _docs(base / "trainjob-llama-sft-r1.yaml")
    (patch,) = trainjob["spec"]["runtimePatches"]
    (node_job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node_job["template"]["spec"]["template"]["spec"]
    assert (pod["serviceAccountName"], pod["imagePullSecrets"]) == (
        "trainer",
        [{"name": "regcred"}],
    )
    (runtime,) = _docs(base.parent / "platform/llm-training/trainingruntime-fsdp-a800.yaml")
    (rjob,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
    assert node["imagePullPolicy"] == "IfNotPresent"
    # The pods Trainer creates carry the job's patch.
    run = granted.run("explain", "llama-sft", "--format", "json")
    assert run.code == 0, run.err
    (explained,) = json.loads(run.out)["jobs"]
    pod = explained["pods"][0]
    assert (pod["service_account"], pod["image_pull_secrets"]) == ("trainer", ["regcred"])
    assert pod["image_pull_policy"] == "IfNotPresent"  # the runtime's
    run = granted.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert run.code == 0, run.err
    assert "(pull policy Always, pull secret regcred)" in run.out
    assert "    runs as    ServiceAccount trainer\n" in run.out
    assert "    priority   PriorityClass batch-high\n" in run.out
    run = granted.run("check", "--crds", str(crds))
    assert run.code == 0, run.err


def test_granted_secret_and_configmap_keys_become_value_from(granted, crds):
    ws = granted.ws
    base = ws.out / "clusters/a800-north/llm-training"
    expected = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
        {"name": "DATA", "valueFrom": {"configMapKeyRef": {"name": "datasets", "key": "path"}}},
    ]
    (job,) = _docs(base / "pytorchjob-llama-finetune-fsdp-r1.yaml")
    (c,) = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert c["env"][-3:-1] == expected  # after the job's own, before the profile's
    (trainjob,) = _docs(base / "trainjob-llama-sft-r1.yaml")
    assert trainjob["spec"]["trainer"]["env"][-2:] == expected
    assert "s3cret" not in granted.synth.out
    for name in ("llama-finetune-fsdp", "llama-sft"):
        run = granted.run("explain", name, "--format", "json")
        assert run.code == 0, run.err
        (explained,) = json.loads(run.out)["jobs"]
        env = {e["name"]: e for e in explained["pods"][0]["env"]}
        assert env["HF_TOKEN"]["from"] == "Secret 'hf-token' key 'token'"
        assert env["HF_TOKEN"]["value"] == "" and env["HF_TOKEN"]["source"] == "job"
        assert env["DATA"]["from"] == "ConfigMap 'datasets' key 'path'"
    run = granted.run("explain", "llama-sft")
    assert "HF_TOKEN                    = <Secret 'hf-token' key 'token'>  (job)" in run.out
    run = granted.run("check", "--crds", str(crds))
    assert run.code == 0, run.err


def test_burstable_requests_where_the_policy_allows_them(granted):
    ws = granted.ws
    (job,) = _docs(ws.out / "clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml")
    (c,) = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert c["resources"]["limits"] == {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}
    assert c["resources"]["requests"] == {"cpu": "16", "memory": "200Gi", "nvidia.com/gpu": "8"}
    # Volcano admits a gang on its requests.
    run = granted.run("explain", "resnet50-ddp", "--cluster", "gpu-east", "--format", "json")
    (explained,) = json.loads(run.out)["jobs"]
    assert explained["podgroup"]["requests"]["cpu"] == "32"


def test_a_whole_granted_secret_becomes_env_from(granted, crds):
    ws = granted.ws
    (job,) = _docs(
        ws.out / "clusters/a800-north/llm-training/mpijob-llama-pretrain-deepspeed-r6.yaml"
    )
    for role in ("Launcher", "Worker"):
        (c,) = job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["containers"]
        assert c["envFrom"] == [{"secretRef": {"name": "wandb"}}]
    # sshd starts the ranks without the worker pod's env: the launcher forwards the keys.
    (launcher,) = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    assert "-x WANDB_API_KEY" in " ".join(launcher["command"])
    run = granted.run("explain", "llama-pretrain-deepspeed")
    assert "env from   every key of Secret 'wandb'  (job)" in run.out
    assert granted.run("check", "--crds", str(crds)).code == 0


def test_a_runtime_s_env_from_reaches_its_trainjobs_when_their_team_may_read_it(ws, granted, crds):
    edit(ws, RUNTIMES, "from trainkit import (", "from trainkit import (SecretEnv,")
    edit(
        ws, RUNTIMES, "    mpi=RuntimeMPI(",
        '    env_from=[SecretEnv(secret="wandb")],\n    mpi=RuntimeMPI(',
    )  # fmt: skip
    # The Secret is read in each TrainJob's namespace, whose keys its team controls.
    err = refusals(ws)
    lines = (ws.root / DS_TRAINJOB).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "runtime=" in text)
    assert (
        f"{DS_TRAINJOB}:{line}: TrainJob 'llama-pretrain-ds': runtime: runtime 'deepspeed-0-19' "
        "takes sources whole (env_from) from the job's namespace: team 'llm' may not read "
        f"Secret 'wandb'; Team.secrets in {TEAMS} allows none; ask the platform team to add it"
    ) in err
    # Granted (in ``granted``, with the same runtime):
    (rt,) = _docs(granted.ws.out / "clusters/gpu-east/platform/runtimes/deepspeed-0-19.yaml")
    for job in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        (c,) = job["template"]["spec"]["template"]["spec"]["containers"]
        assert c["envFrom"] == [{"secretRef": {"name": "wandb"}}]
    (tj,) = _docs(
        granted.ws.out / "clusters/gpu-east/llm-training/trainjob-llama-pretrain-ds-r6.yaml"
    )
    assert "-x WANDB_API_KEY" in " ".join(tj["spec"]["trainer"]["command"])
    run = granted.run("explain", "llama-pretrain-ds")
    assert "every key of Secret 'wandb'" in run.out
    assert granted.run("check", "--crds", str(crds)).code == 0


def test_volcanos_own_default_queue_is_the_platforms_to_grant(granted, crds):
    """Volcano creates and keeps its queue ``default`` (volcano-sh/volcano v1.12.4
    pkg/scheduler/cache/cache.go newDefaultAndRootQueue; its webhook refuses deleting it):
    a team the platform grants it runs there as on any queue, and trainkit never renders it."""
    from trainkit.plan.trees import Obj
    from trainkit.plan.usage import ClusterJobs, queue_usage
    from trainkit.synth import effective_jobs, render_groups

    ws = granted.ws
    (job,) = _docs(ws.out / "clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml")
    assert job["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "default"
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "default"
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        assert spec["template"]["spec"]["schedulerName"] == "volcano"
    queues = [
        d for path in ws.out.rglob("*.yaml") for d in _docs(path) if d and d.get("kind") == "Queue"
    ]
    assert queues and all(q["metadata"]["name"] != "default" for q in queues)
    assert granted.run("check", "--crds", str(crds)).code == 0
    # The plan shows what the queue's jobs ask for, and no quota: none is known.
    plan = build_plan(load_jobs(ws.jobs, ws.root).definitions)
    on_default = [
        ej
        for ej in effective_jobs(render_groups(plan))
        if ej.gang is not None and ej.gang.queue == "default"
    ]
    assert {ej.planned.cluster.name for ej in on_default} == {"gpu-east", "rocm-west"}
    east = [(Obj("j.yaml", {}), ej) for ej in on_default if ej.planned.cluster.name == "gpu-east"]
    (use,) = queue_usage(
        ClusterJobs(jobs=[], queues={}), ClusterJobs(jobs=east, queues={}), "nvidia.com/gpu"
    )
    assert use.queue == "default" and use.kind == "Queue"
    assert use.after is not None and use.after.capability is None
    assert use.after.requests.gpu == 16
