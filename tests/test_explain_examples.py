"""What `trainkit explain` shows for each example job in jobs/: its pods (role, count, whether
they run ranks), the GPUs each pod sees, the world size and the deadline. A controller
reading that changes one of these changes a line here, on purpose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainkit.effective import EffectiveJob
from trainkit.explain import as_data, format_text
from trainkit.load import load_jobs
from trainkit.resolve import build_plan
from trainkit.synth.layout import effective_jobs, render_groups

REPO = Path(__file__).resolve().parents[1]
BLANK = "none (NVIDIA_VISIBLE_DEVICES is blank)"
ROCM_NONE = "none (ROCm exposes only the devices a pod requests)"
A800 = "its 8 baidu.com/a800_80g_cgpu"
A800_4 = "its 4 baidu.com/a800_80g_cgpu"
NV8 = "its 8 nvidia.com/gpu"
AMD8 = "its 8 amd.com/gpu"
CREATION_VOLCANO = "from the TrainJob's creation: time queued in Volcano counts"

# (kind object-name, cluster) -> (world size, [(role, pods, runs ranks, GPUs seen)], deadline)
EXPECTED: dict[tuple[str, str], tuple[int, list[tuple[str, int, bool, str]], str]] = {
    ("MPIJob llama-pretrain-deepspeed-r6", "a800-north"): (
        16,
        [("Launcher", 1, False, BLANK), ("Worker", 2, True, A800)],
        "none",
    ),
    ("PyTorchJob llama-finetune-fsdp-r1", "a800-north"): (
        32,
        [("Master", 1, True, A800), ("Worker", 3, True, A800)],
        "604800 s, from when the operator creates the pods, once Volcano admits the gang: time "
        "queued does not count",
    ),
    ("PyTorchJob llama-pretrain-dra", "a800-north"): (
        8,
        [("Master", 1, True, A800_4), ("Worker", 1, True, A800_4)],
        "none",
    ),
    ("PyTorchJob llama-pretrain-ib-r1", "a800-north"): (
        8,
        [("Master", 1, True, A800_4), ("Worker", 1, True, A800_4)],
        "none",
    ),
    ("TrainJob llama-sft-r1", "a800-north"): (
        32,
        [("node", 4, True, A800)],
        f"604800 s, {CREATION_VOLCANO}",
    ),
    ("TrainJob llama-pretrain-ds-r6", "gpu-east"): (
        16,
        # One launcher (mlPolicy.numNodes 1), two sshd nodes of 8 slots.
        [("launcher", 1, False, BLANK), ("node", 2, True, NV8)],
        "none",
    ),
    # A long-lived RayCluster: no submitter; its deadline is none by nature.
    ("RayCluster eval-pool", "gpu-east"): (
        3,
        [("Head", 1, True, BLANK), ("gpu", 2, True, "its 4 nvidia.com/gpu")],
        "none (a long-lived RayCluster has no deadline: it runs until removed)",
    ),
    ("RayCluster eval-pool", "h100-south"): (
        3,
        [("Head", 1, True, BLANK), ("gpu", 2, True, "its 4 nvidia.com/gpu")],
        "none (a long-lived RayCluster has no deadline: it runs until removed)",
    ),
    # On the RayCluster: no Ray pods of its own, only the submitter.
    ("RayJob eval-bleu", "h100-south"): (0, [("Submitter", 1, False, BLANK)], "none"),
    # Its code a working_dir shipped to the submitter; CPU workers only.
    ("RayJob eval-suite-ray", "gpu-east"): (
        3,
        [("Head", 1, True, BLANK), ("cpu", 2, True, BLANK), ("Submitter", 1, False, BLANK)],
        "none",
    ),
    ("RayJob lr-sweep-ray-r3", "gpu-east"): (
        3,
        [("Head", 1, True, BLANK), ("gpu", 2, True, NV8), ("Submitter", 1, False, BLANK)],
        "none",
    ),
    ("RayJob lr-sweep-ray-r3", "h100-south"): (
        3,
        [("Head", 1, True, BLANK), ("gpu", 2, True, NV8), ("Submitter", 1, False, BLANK)],
        "none",
    ),
    # KubeRay's light-weight submitter (its own image), CPU workers only.
    ("RayJob tokenize-ray-r1", "gpu-east"): (
        3,
        [("Head", 1, True, BLANK), ("cpu", 2, True, BLANK), ("Submitter", 1, False, BLANK)],
        "none",
    ),
    # The dataset step (no GPU, no rank) runs before the node, in the same Kueue workload.
    ("TrainJob wiki-sft-r3", "h100-south"): (
        8,
        [("dataset-initializer", 1, False, BLANK), ("node", 1, True, NV8)],
        "none",
    ),
    ("PaddleJob resnet-paddle", "gpu-east"): (
        2,
        [("Worker", 2, True, "its 1 nvidia.com/gpu")],
        "none",
    ),
    ("PyTorchJob resnet50-ddp", "gpu-east"): (
        16,
        [("Master", 1, True, NV8), ("Worker", 1, True, NV8)],
        "none",
    ),
    ("PyTorchJob resnet50-ddp", "rocm-west"): (
        16,
        [("Master", 1, True, AMD8), ("Worker", 1, True, AMD8)],
        "none",
    ),
    # Counted at max_nodes, all its autoscaler may start (it starts with 2).
    ("PyTorchJob resnet50-elastic-r1", "gpu-east"): (
        8,
        [("Worker", 4, True, "its 2 nvidia.com/gpu")],
        "none",
    ),
    ("TFJob mobilenet-ps-r1", "gpu-east"): (
        5,
        [
            ("Chief", 1, True, BLANK),
            ("PS", 2, True, BLANK),
            ("Worker", 2, True, "its 2 nvidia.com/gpu"),
        ],
        "none",
    ),
    ("TrainJob resnet50-r1", "gpu-east"): (16, [("node", 2, True, NV8)], "none"),
    ("JAXJob bigram-jax", "gpu-east"): (2, [("Worker", 2, True, NV8)], "none"),
    ("TrainJob bigram-jax-tj-r1", "gpu-east"): (2, [("node", 2, True, NV8)], "none"),
    # Flux: 16 tasks on each of 4 nodes, started by flux run from the first.
    ("TrainJob dedup-flux-r2", "gpu-east"): (64, [("node", 4, True, BLANK)], "none"),
    ("XGBoostJob photo-quality-xgb-r3", "gpu-east"): (
        3,
        [("Master", 1, True, BLANK), ("Worker", 2, True, BLANK)],
        "21600 s, from when the operator creates the pods, once Volcano admits the gang: time "
        "queued does not count",
    ),
    ("TrainJob resnet50-r1", "rocm-west"): (16, [("node", 2, True, AMD8)], "none"),
    # Roles with settings of their own (jobs/vision/mobilenet_ps_roles.py, jobs/llm/pi_mpi.py).
    ("TFJob mobilenet-ps-roles", "gpu-east"): (
        5,
        [
            ("Chief", 1, True, BLANK),
            ("PS", 2, True, BLANK),
            ("Worker", 2, True, "its 1 nvidia.com/gpu"),
        ],
        "none",
    ),
    ("MPIJob pi-r1", "a800-north"): (
        2,
        [("Launcher", 1, False, BLANK), ("Worker", 2, True, BLANK)],
        "none",
    ),
    ("PaddleJob wide-deep-ps-r1", "rocm-west"): (
        4,
        [("ps", 2, True, ROCM_NONE), ("worker", 2, True, ROCM_NONE)],
        "none",
    ),
}


@pytest.fixture(scope="module")
def effective() -> dict[tuple[str, str], EffectiveJob]:
    plan = build_plan(load_jobs(REPO / "jobs").definitions)
    return {
        (f"{ej.kind} {ej.name}", ej.planned.cluster.name): ej
        for ej in effective_jobs(render_groups(plan))
    }


@pytest.fixture(scope="module")
def shown(effective: dict[tuple[str, str], EffectiveJob]) -> dict[tuple[str, str], dict[str, Any]]:
    return {key: as_data(ej) for key, ej in effective.items()}


def test_every_example_job_is_listed(shown: dict[tuple[str, str], dict[str, Any]]) -> None:
    assert sorted(shown) == sorted(EXPECTED)


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: f"{k[0]}@{k[1]}")
def test_explain_shows_the_example_s_pods(
    shown: dict[tuple[str, str], dict[str, Any]], key: tuple[str, str]
) -> None:
    world, pods, deadline = EXPECTED[key]
    d = shown[key]
    assert d["world_size"] == world
    got = [(p["role"], p["count"], p["runs_ranks"], p["gpus_seen"]) for p in d["pods"]]
    assert got == pods
    assert d["deadline"] == deadline
    # An MPI job (an MPIJob, a TrainJob on an MPI runtime) has exactly one launcher pod.
    launchers = [p["count"] for p in d["pods"] if p["role"].lower() == "launcher"]
    assert launchers in ([], [1])


def test_explain_shows_what_each_role_sets_itself(
    shown: dict[tuple[str, str], dict[str, Any]],
) -> None:
    pods = {p["role"]: p for p in shown[("TFJob mobilenet-ps-roles", "gpu-east")]["pods"]}
    cpu_image = "registry.example.com/ml/tensorflow:2.18.0"
    assert [pods[r]["image"] for r in ("Chief", "PS", "Worker")] == [
        cpu_image,
        cpu_image,
        cpu_image + "-gpu",
    ]
    # ExitCode is the operator's: its pods restart Never, and it decides from the exit code.
    assert pods["Chief"]["restart_policy"] == "Never"
    assert pods["PS"]["restart_policy"] == "OnFailure"
    assert pods["PS"]["node_selector"] == {"node.example.com/pool": "cpu"}
    assert pods["Worker"]["node_selector"] == {}
    (threads,) = [e for e in pods["PS"]["env"] if e["name"] == "TF_NUM_INTEROP_THREADS"]
    assert threads["source"] == "role ps"
    assert not [e for e in pods["Worker"]["env"] if e["name"] == "TF_NUM_INTEROP_THREADS"]
    mpi = {p["role"]: p for p in shown[("MPIJob pi-r1", "a800-north")]["pods"]}
    assert mpi["Worker"]["restart_policy"] == "Never"
    assert mpi["Launcher"]["restart_policy"] == "OnFailure"
    assert mpi["Worker"]["command"] == ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]


def test_explain_shows_the_fabric_hook_and_ttl_examples(
    effective: dict[tuple[str, str], EffectiveJob],
) -> None:
    # The examples that carry DRA claims, huge pages, lifecycle hooks, an extended resource
    # and an MPIJob's ttl_seconds: each setting is in what `trainkit explain` prints.
    dra = format_text([effective[("PyTorchJob llama-pretrain-dra", "a800-north")]])
    assert "claim      nics ← a ResourceClaim per pod from ResourceClaimTemplate rdma-nics" in dra
    assert "started    runs /bin/sh -c ibv_devinfo | grep -q PORT_ACTIVE" in dra
    assert "pre-stop   runs /bin/sh -c ibv_devinfo > /proc/1/fd/1" in dra
    assert "baidu.com/a800_80g_cgpu 4, hugepages-2Mi 1Gi" in dra
    # The gang's sum in the unit of its parts (2 pods × 1Gi), not in bytes.
    assert "cpu 32, hugepages-2Mi 2Gi, memory 256Gi" in dra
    ib = format_text([effective[("PyTorchJob llama-pretrain-ib-r1", "a800-north")]])
    assert "baidu.com/a800_80g_cgpu 4, rdma/hca 1" in ib
    pi = format_text([effective[("MPIJob pi-r1", "a800-north")]])
    assert "the launcher's Job, its pod and logs are deleted 86400 s after the job ends" in pi
