"""Pod security of hand-written or overlaid manifests (``trainkit validate``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainkit import NetworkProfile
from trainkit.kube.pods import pod_specs
from trainkit.validate import check_object
from trainkit.validate.findings import Finding, format_path
from trainkit.validate.pod_security import BASELINE, PodAllowance, check_pod_security

REPO = Path(__file__).resolve().parents[1]
LLM = REPO / "generated/clusters/a800-north/llm-training"
MASTER = "spec.pytorchReplicaSpecs.Master.template.spec"
WORKER = "spec.pytorchReplicaSpecs.Worker.template.spec"
RUNTIME_POD = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"
PATCH_POD = (
    "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
    ".template.spec.template.spec"
)


def load(name: str) -> dict[str, Any]:
    where = LLM.parent / "platform" / LLM.name if name.startswith("trainingruntime-") else LLM
    doc = yaml.safe_load((where / name).read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def pytorchjob() -> dict[str, Any]:
    return load("pytorchjob-llama-finetune-fsdp-r1.yaml")


def pod(doc: dict[str, Any], replica: str) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]
    return spec


def privileged(doc: dict[str, Any]) -> None:
    pod(doc, "Master")["containers"][0]["securityContext"]["privileged"] = True


def host_path(doc: dict[str, Any]) -> None:
    pod(doc, "Worker")["volumes"].append({"name": "node-root", "hostPath": {"path": "/"}})


def host_network(doc: dict[str, Any]) -> None:
    pod(doc, "Master")["hostNetwork"] = True


def sys_admin(doc: dict[str, Any]) -> None:
    pod(doc, "Worker")["containers"][0]["securityContext"]["capabilities"]["add"].append(
        "SYS_ADMIN"
    )


HAND_EDITS = {
    "privileged pod": (
        privileged,
        f"{MASTER}.containers[0].securityContext.privileged",
        "pod security: container 'pytorch' is privileged, which is never allowed; remove "
        "privileged (a NetworkProfile grants the capabilities RDMA needs)",
    ),
    "hostPath volume": (
        host_path,
        f"{WORKER}.volumes[4].hostPath",
        "pod security: volume 'node-root' mounts a directory of the node (hostPath), which is "
        "never allowed without a Team.host_paths grant; use a PersistentVolumeClaim or an emptyDir",
    ),
    "host network": (
        host_network,
        f"{MASTER}.hostNetwork",
        # In the repository's tree the platform's profiles decide, as in `trainkit check`.
        "pod security: the host network is not allowed (NetworkProfiles 'ib-multus', 'rdma', "
        "'rdma-dra'); remove hostNetwork, or ask the platform team for a NetworkProfile with "
        "host_network=True",
    ),
    "capability SYS_ADMIN": (
        sys_admin,
        f"{WORKER}.containers[0].securityContext.capabilities.add[1]",
        "pod security: capability 'SYS_ADMIN' of container 'pytorch' is not allowed; allowed: "
        "'IPC_LOCK' (NetworkProfiles 'ib-multus', 'rdma', 'rdma-dra'); remove it",
    ),
}


def write(root: Path, docs: list[dict[str, Any]]) -> str:
    (root / "hand.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return "hand.yaml"


@pytest.mark.parametrize("case", sorted(HAND_EDITS))
@pytest.mark.parametrize("with_crds", [True, False], ids=["crds", "object-rules"])
def test_hand_edited_pytorchjob_is_refused_with_its_json_path(ws, cli, crds, case, with_crds):
    change, field, message = HAND_EDITS[case]
    doc = pytorchjob()
    change(doc)
    args = ["validate", "--format", "json", write(ws.root, [doc])]
    if with_crds:
        args += ["--crds", str(crds)]
    run = cli(*args)
    assert run.code == 1
    (problem,) = json.loads(run.out)
    assert problem["file"] == "hand.yaml"
    assert problem["obj"] == "PyTorchJob 'llama-finetune-fsdp-r1'"
    assert (problem["field"], problem["message"]) == (field, message)
    assert isinstance(problem["line"], int)


def test_text_report_names_file_line_object_and_path(ws, cli, crds):
    doc = pytorchjob()
    host_network(doc)
    run = cli("validate", "--crds", str(crds), write(ws.root, [doc]))
    assert run.code == 1
    text = yaml.safe_dump_all([doc], sort_keys=False).splitlines()
    line = next(i for i, t in enumerate(text, 1) if t.strip() == "hostNetwork: true")
    assert run.out.splitlines() == [
        "hand.yaml",
        f"  line {line}: PyTorchJob 'llama-finetune-fsdp-r1': {MASTER}.hostNetwork: "
        + HAND_EDITS["host network"][2],
    ]


def test_the_generated_rdma_manifests_pass(ws, cli, crds):
    docs = [
        pytorchjob(),
        load("trainingruntime-fsdp-a800.yaml"),
        load("trainjob-llama-sft-r1.yaml"),
    ]
    run = cli("validate", "--crds", str(crds), write(ws.root, docs))
    assert run.code == 0, run.out


def test_cap_prefix_and_false_flags_are_fine(ws, cli, crds):
    doc = pytorchjob()
    master = pod(doc, "Master")
    master["containers"][0]["securityContext"] = {
        "capabilities": {"add": ["CAP_IPC_LOCK"]},
        "privileged": False,
    }
    master["hostNetwork"] = False
    assert cli("validate", "--crds", str(crds), write(ws.root, [doc])).code == 0


def test_trainer_kinds_are_checked(ws, cli, crds):
    runtime = load("trainingruntime-fsdp-a800.yaml")
    (rjob,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    rjob["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {
        "privileged": True
    }
    trainjob = load("trainjob-llama-sft-r1.yaml")
    patch_pod = trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
    patch_pod["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"].append(
        {"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}
    )
    run = cli(
        "validate", "--format", "json", "--crds", str(crds), write(ws.root, [runtime, trainjob])
    )
    assert run.code == 1
    found = {(p["obj"], p["field"]) for p in json.loads(run.out)}
    assert found == {
        ("TrainingRuntime 'fsdp-a800'", f"{RUNTIME_POD}.containers[0].securityContext.privileged"),
        ("TrainJob 'llama-sft-r1'", f"{PATCH_POD}.volumes[3].hostPath"),
    }


BUILTIN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostPID: true
      containers: [{name: web, image: registry.example.com/ml/web:1}]
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: ml}
spec:
  hostIPC: true
  containers: [{name: sh, image: registry.example.com/ml/sh:1}]
  volumes: [{name: root, hostPath: {path: /}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: clean, namespace: ml}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          initContainers:
            - {name: init, image: registry.example.com/ml/x:1, securityContext: {privileged: true}}
          containers: [{name: main, image: registry.example.com/ml/x:1}]
"""


@pytest.mark.parametrize("with_crds", [True, False], ids=["crds", "object-rules"])
def test_builtin_workloads_are_checked(ws, cli, crds, with_crds):
    (ws.root / "builtin.yaml").write_text(BUILTIN, encoding="utf-8")
    args = ["validate", "--format", "json", "builtin.yaml"]
    if with_crds:
        args += ["--crds", str(crds)]
    run = cli(*args)
    assert run.code == 1
    found = {(p["obj"], p["field"], p["message"].split(" and ")[0]) for p in json.loads(run.out)}
    assert found == {
        (
            "Deployment 'web'",
            "spec.template.spec.hostPID",
            "pod security: hostPID shares the node's process namespace",
        ),
        ("Pod 'debug'", "spec.hostIPC", "pod security: hostIPC shares the node's IPC namespace"),
        (
            "Pod 'debug'",
            "spec.volumes[0].hostPath",
            "pod security: volume 'root' mounts a directory of the node (hostPath), which is "
            "never allowed without a Team.host_paths grant; use a PersistentVolumeClaim or an emptyDir",
        ),
        (
            "CronJob 'clean'",
            "spec.jobTemplate.spec.template.spec.initContainers[0].securityContext.privileged",
            "pod security: container 'init' is privileged, which is never allowed; remove "
            "privileged (a NetworkProfile grants the capabilities RDMA needs)",
        ),
    }


def findings(doc: dict[str, Any], allow: PodAllowance = BASELINE) -> list[tuple[str, str]]:
    out: list[Finding] = []
    check_pod_security(list(pod_specs(doc)), out, allow)
    return [(format_path(f.path), f.message) for f in out]


def test_the_platforms_profiles_decide_what_is_granted():
    doc = pytorchjob()
    host_network(doc)
    sys_admin(doc)
    assert [p for p, _ in findings(doc)] == [
        f"{MASTER}.hostNetwork",
        f"{WORKER}.containers[0].securityContext.capabilities.add[1]",
    ]
    wide = NetworkProfile(name="wide", capabilities=["IPC_LOCK", "SYS_ADMIN"], host_network=True)
    assert findings(doc, PodAllowance.from_profiles([wide])) == []
    rdma = NetworkProfile(name="rdma", capabilities=["IPC_LOCK"])
    nothing = findings(doc, PodAllowance.from_profiles([]))
    # With no profile declared even the generated IPC_LOCK is refused: 2 nodes + hostNetwork.
    assert len(nothing) == 4
    assert all("(no NetworkProfile is declared)" in m for _, m in nothing)
    messages = [m for _, m in findings(doc, PodAllowance.from_profiles([rdma]))]
    assert len(messages) == 2
    assert "allowed: 'IPC_LOCK' (NetworkProfiles 'rdma')" in messages[1]


def test_the_allowance_is_an_argument_of_check_object():
    doc = pytorchjob()
    host_network(doc)
    hostnet = PodAllowance.from_profiles([NetworkProfile(name="hostnet", host_network=True)])
    refused = [format_path(f.path) for f in check_object(doc, BASELINE)]
    assert refused == [f"{MASTER}.hostNetwork"]
    # The generated IPC_LOCK is refused by a platform granting only the host network.
    granted = [format_path(f.path) for f in check_object(doc, hostnet)]
    assert f"{MASTER}.hostNetwork" not in granted
    assert all(p.endswith("capabilities.add[0]") for p in granted) and granted


def test_validate_in_a_trainkit_repository_honours_the_platform_s_profiles(ws, cli, crds):
    # `trainkit check` grants what the platform's NetworkProfiles grant; `trainkit validate`
    # run inside the same repository must give the same verdict on the same manifest.
    policy = ws.root / "jobs/platform/policy.py"
    policy.write_text(
        policy.read_text(encoding="utf-8")
        + '\nhostnet = NetworkProfile(name="hostnet", host_network=True, clusters=["gpu-east"])\n',
        encoding="utf-8",
    )
    doc = pytorchjob()
    host_network(doc)
    run = cli("validate", "--crds", str(crds), write(ws.root, [doc]))
    assert run.code == 0, run.out
    sys_admin(doc)
    run = cli("validate", "--format", "json", "--crds", str(crds), write(ws.root, [doc]))
    (problem,) = json.loads(run.out)
    assert problem["message"] == (
        "pod security: capability 'SYS_ADMIN' of container 'pytorch' is not allowed; allowed: "
        "'IPC_LOCK' (NetworkProfiles 'hostnet', 'ib-multus', 'rdma', 'rdma-dra'); remove it"
    )


def test_a_rayjobs_submitter_pod_is_checked_too():
    # KubeRay v1.7 RayJobSpec.SubmitterPodTemplate is a PodTemplateSpec under its own key
    # (ray-operator/apis/ray/v1/rayjob_types.go), not under `template`.
    path = REPO / "generated/clusters/gpu-east/llm-training/rayjob-lr-sweep-ray-r3.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    submitter = doc["spec"]["submitterPodTemplate"]["spec"]
    submitter["containers"][0]["securityContext"] = {"privileged": True}
    submitter["hostPID"] = True
    assert [p for p, _ in findings(doc)] == [
        "spec.submitterPodTemplate.spec.hostPID",
        "spec.submitterPodTemplate.spec.containers[0].securityContext.privileged",
    ]
