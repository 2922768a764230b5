"""The pods Kubeflow Trainer v2.3 creates for a TrainJob, from it and its runtime.

Sources (kubeflow/trainer v2.3.0): runtimePatches are strategic-merged onto the
runtime's JobSet spec in order, and their template labels and annotations merged
onto the runtime's (pkg/runtime/core/trainingruntime.go); ``resourcesPerNode`` is
merged key by key onto container ``node`` (MergeResourceRequirements,
pkg/util/trainingruntime/trainingruntime.go); image, command and args replace
the runtime's and env is upserted by name (pkg/runtime/framework/plugins/jobset/
builder.go); the torch plugin adds PET_* only when spec.trainer is set and
resolves ``auto`` (plugins/torch/torch.go); Volcano's PodGroup is named after
the TrainJob and counts every pod (plugins/volcano/volcano.go).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ..injected_env.kubeflow_trainer_env import TRAINER_MASTER_PORT, trainer_framework_env
from ..kube.quantities import parse_quantity
from ..render.kubeflow_trainer import (
    ANCESTOR_LABEL,
    DATASET_INITIALIZER,
    FLUX_INSTALLER,
    FLUX_MOUNTS,
    FLUX_VOLUMES,
    FRAMEWORK_LABEL,
    INITIALIZER_VOLUME,
    MODEL_INITIALIZER,
    NODE,
    STORAGE_URI,
    flux_configmap,
    flux_curve_secret,
    flux_original_command,
    flux_run,
)
from ..render.meta import VOLCANO_QUEUE_ANNOTATION
from ..resolve import PlannedJob
from .admission import pod_set_workload
from .merge import strategic_merge
from .podsets import EffectiveJob, EnvVar, Gang, PodSet, env_source, waits_for_hosts

__all__ = ["effective_trainjob"]

_TRAINER = "Kubeflow Trainer"


def _framework_note(runtime: dict[str, Any], policy: str) -> list[str]:
    """The runtime's framework label where it names more than its ML policy (deepspeed or mlx
    on mpi, torchtune on torch): the Kubeflow SDK picks its trainer by it."""
    label = (runtime["metadata"].get("labels") or {}).get(FRAMEWORK_LABEL)
    if label is None or label == policy:
        return []
    return [
        f"runtime {runtime['metadata']['name']!r} runs {label} on Trainer's {policy} policy "
        f"(label {FRAMEWORK_LABEL}: {label}, by which the Kubeflow SDK picks its trainer)"
    ]


def effective_trainjob(
    pj: PlannedJob, body: dict[str, Any], runtime: dict[str, Any]
) -> EffectiveJob:
    spec = body["spec"]
    rt_spec = runtime["spec"]
    jobset = rt_spec["template"]["spec"]
    annotations = dict((rt_spec["template"].get("metadata") or {}).get("annotations") or {})
    for patch in spec.get("runtimePatches") or []:
        template = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
        annotations.update((template.get("metadata") or {}).get("annotations") or {})
        if template.get("spec") is not None:
            jobset = strategic_merge(jobset, template["spec"])
    jobset = _claims(jobset, pj.object_name)
    trainer = spec.get("trainer")
    runtime_name = f"runtime {runtime['metadata']['name']!r}"
    if "mpi" in (rt_spec.get("mlPolicy") or {}):
        sets, slots, ranks, told = _mpi_pods(pj, jobset, rt_spec["mlPolicy"], spec, runtime_name)
        told.extend(_framework_note(runtime, "mpi"))
        gang = _gang(pj, rt_spec, sets, annotations)
        # Kueue's pod sets follow the JobSet's replicated jobs.
        order = [r["name"] for r in jobset["replicatedJobs"]]
        in_order = sorted(sets, key=lambda ps: order.index(ps.role))
        return EffectiveJob(
            pj,
            tuple(sets),
            slots,
            ranks,
            None,
            gang,
            tuple(told),
            workload=_workload(body, in_order),
        )
    pod_sets: list[PodSet] = []
    notes: list[str] = []
    procs = "1"
    world = 0
    # A policy without a framework is plainml: counts and spec.trainer only, no variables
    # (trainer v2.3.0 plugins/plainml/plainml.go).
    policy = rt_spec.get("mlPolicy")
    frameworks = ("torch", "jax", "xgboost", "flux")
    framework = next((f for f in frameworks if f in (policy or {})), "plainml")
    notes.extend(_framework_note(runtime, framework))
    for rjob in jobset["replicatedJobs"]:
        labels = (rjob["template"].get("metadata") or {}).get("labels") or {}
        pod = rjob["template"]["spec"]["template"]["spec"]
        count = _parallelism(rjob)
        added: tuple[dict[str, Any], ...] = ()
        if labels.get(ANCESTOR_LABEL) == "trainer":
            # mlPolicy.numNodes (1 when not given), the job's parallelism without an mlPolicy
            # (trainingruntime.go newRuntimeInfo); the TrainJob's numNodes over either.
            base = int(policy.get("numNodes", 1)) if policy is not None else count
            count = int((trainer or {}).get("numNodes") or base)
            if framework == "flux" and rjob["name"] == NODE:
                pod, env, procs, added = _flux_pod(
                    pod, runtime_name, trainer, pj, count, (policy or {})["flux"], notes
                )
                world = count * int(procs)
            elif framework == "torch":
                pod, env, procs = _trainer_pod(pod, runtime_name, trainer, pj, count, notes)
                world = count * _procs(procs, pod)
            elif framework in ("plainml", "flux"):
                pod, env = _plain_pod(pod, runtime_name, trainer, pj)
                world = count
            else:
                pod, env, procs = _framework_pod(
                    pod, runtime_name, trainer, pj, count, framework, notes
                )
                world = count * int(procs)
        elif labels.get(ANCESTOR_LABEL) in (DATASET_INITIALIZER, MODEL_INITIALIZER):
            pod_sets.append(_initializer_set(rjob, spec, runtime_name, pj))
            continue
        else:
            env = ()
        pod_sets.append(PodSet(rjob["name"], count, 0, pod, NODE, env, added_init_containers=added))
        after = [x["name"] for x in rjob.get("dependsOn") or [] if x.get("status") == "Complete"]
        if after:
            notes.append(
                f"the nodes start once {' and '.join(after)} completed (JobSet dependsOn); "
                f"the workspace claim {INITIALIZER_VOLUME}-{pj.object_name} is JobSet's, "
                "deleted with the TrainJob"
            )
    gang = _gang(pj, rt_spec, pod_sets, annotations)
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        procs,
        world,
        None,
        gang,
        tuple(notes),
        workload=_workload(body, pod_sets),
    )


def _claims(jobset: dict[str, Any], trainjob: str) -> dict[str, Any]:
    """JobSet's volumeClaimPolicies: one PVC ``<template>-<jobset>`` per template, added as a
    volume to every replicated job whose containers mount it by name (jobset v0.12.0
    pkg/controllers/volume_claim_policy.go addVolumes; the JobSet is named after the TrainJob)."""
    names = [
        t["metadata"]["name"]
        for policy in jobset.get("volumeClaimPolicies") or []
        for t in policy.get("templates") or []
    ]
    if not names:
        return jobset
    rjobs = []
    for rjob in jobset["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
        mounted = {m.get("name") for c in containers for m in c.get("volumeMounts") or []}
        added = [
            {"name": n, "persistentVolumeClaim": {"claimName": f"{n}-{trainjob}"}}
            for n in names
            if n in mounted
        ]
        if added:
            pod = {**pod, "volumes": [*(pod.get("volumes") or []), *added]}
            template = {**rjob["template"]["spec"]["template"], "spec": pod}
            rjob = {
                **rjob,
                "template": {
                    **rjob["template"],
                    "spec": {**rjob["template"]["spec"], "template": template},
                },
            }
        rjobs.append(rjob)
    return {**jobset, "replicatedJobs": rjobs}


def _runtime_node_resources(jobset: dict[str, Any]) -> dict[str, Any]:
    """Container ``node``'s resources in the first replicated job named ``node`` or labelled
    the trainer's that has any (runtime.go ExtractResourcePerNodeFromRuntime)."""
    for rjob in jobset["replicatedJobs"]:
        labels = (rjob["template"].get("metadata") or {}).get("labels") or {}
        if rjob["name"] != NODE and labels.get(ANCESTOR_LABEL) != "trainer":
            continue
        for c in rjob["template"]["spec"]["template"]["spec"].get("containers") or []:
            if c.get("name") == NODE and c.get("resources") is not None:
                return dict(c["resources"])
    return {}


# The ssh keys and hostfile Trainer mounts (trainer v2.3.0 plugins/mpi/mpi.go
# EnforceMLPolicy; the names and modes of pkg/constants/constants.go).
_SSH_ITEMS = [
    {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
    {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
    {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
]


def _mpi_volumes(pod: dict[str, Any], job: str, ssh_dir: str, *, launcher: bool) -> dict[str, Any]:
    """``pod`` with the ssh Secret mounted at ``ssh_dir`` in container ``node``, and on the
    launcher the hostfile ConfigMap at /etc/mpi; each upserted by volume name."""
    ssh = {
        "name": "mpi-ssh-auth",
        "secret": {"secretName": f"{job}-mpi-ssh-auth", "defaultMode": 0o400, "items": _SSH_ITEMS},
    }
    hostfile = {
        "name": "mpi-hostfile",
        "configMap": {
            "name": f"{job}-mpi-hostfile",
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }
    added = [ssh, hostfile] if launcher else [ssh]
    mounts = [{"name": "mpi-ssh-auth", "mountPath": ssh_dir}]
    if launcher:
        mounts.append({"name": "mpi-hostfile", "mountPath": "/etc/mpi"})
    names = {v["name"] for v in added}
    volumes = [v for v in pod.get("volumes") or [] if v.get("name") not in names] + added
    containers = []
    for c in pod.get("containers") or []:
        if c.get("name") == NODE:
            own = [m for m in c.get("volumeMounts") or [] if m.get("name") not in names]
            c = {**c, "volumeMounts": own + mounts}
        containers.append(c)
    return {**pod, "volumes": volumes, "containers": containers}


def _parallelism(rjob: dict[str, Any]) -> int:
    """Pods of a replicated job that is not the trainer's: its Job's parallelism, at least 1
    (trainer v2.3.0 pkg/runtime/core/trainingruntime.go newRuntimeInfo; pkg/runtime/runtime.go
    WithPodSet)."""
    return max(int(rjob["template"]["spec"].get("parallelism", 1)), 1)


def _plain_pod(
    pod: dict[str, Any], runtime_name: str, trainer: dict[str, Any] | None, pj: PlannedJob
) -> tuple[dict[str, Any], tuple[EnvVar, ...]]:
    """Container ``node`` of a plainml runtime's trainer job: spec.trainer written into it
    (jobset/builder.go), nothing injected."""
    containers: list[dict[str, Any]] = []
    env: list[EnvVar] = []
    for c in pod.get("containers") or []:
        if c.get("name") == NODE:
            c, env = apply_trainer(c, trainer, runtime_name, pj)
            c["env"] = [e.entry() for e in env]
        containers.append(c)
    return {**pod, "containers": containers}, tuple(env)


def _workload(body: dict[str, Any], pod_sets: list[PodSet]) -> Any:
    """Kueue v0.19.2 makes a TrainJob's pod sets from its JobSet, one per replicated job
    counting its pods (pkg/controller/jobs/trainjob/trainjob_controller.go podSets,
    jobset/jobset_controller.go PodSets)."""
    return pod_set_workload(body, [(ps.role, ps.count, ps.spec) for ps in pod_sets])


def _gang(
    pj: PlannedJob, rt_spec: dict[str, Any], pod_sets: list[PodSet], annotations: dict[str, str]
) -> Gang | None:
    """Trainer's PodGroup counts every pod of every replicated job (plugins/volcano/volcano.go)."""
    if "volcano" not in (rt_spec.get("podGroupPolicy") or {}):
        return None
    members = sum(ps.count for ps in pod_sets)
    requests: dict[str, Decimal] = {}
    priority = None
    for ps in pod_sets:
        for name, value in ps.requests().items():
            requests[name] = requests.get(name, Decimal(0)) + value * ps.count
        # The last replicated job's pod priorityClassName (volcano.go Build).
        priority = ps.spec.get("priorityClassName") or priority
    queue = annotations.get(VOLCANO_QUEUE_ANNOTATION)
    return Gang(pj.object_name, queue, members, requests, priority_class=priority)


def _mpi_pods(
    pj: PlannedJob,
    jobset: dict[str, Any],
    policy: dict[str, Any],
    spec: dict[str, Any],
    runtime_name: str,
) -> tuple[list[PodSet], str, int, list[str]]:
    """Trainer v2.3.0 plugins/mpi/mpi.go: the launcher (the trainer job, where spec.trainer
    goes) gets the hostfile and OMPI_*; ``node`` has the TrainJob's numNodes pods, one less
    when the launcher is a node, which then also gets spec.trainer's env. The launcher job
    has mlPolicy.numNodes pods (pkg/runtime/core/trainingruntime.go newRuntimeInfo: the
    count of the trainer ancestor), each running the command."""
    trainer = spec.get("trainer")
    mpi = policy["mpi"]
    as_node = bool(mpi.get("runLauncherAsNode", False))
    by_name = {r["name"]: r for r in jobset["replicatedJobs"]}
    launchers = int(policy.get("numNodes", 1))
    nodes = int(by_name["node"]["template"]["spec"].get("parallelism", 1))
    num_nodes = (trainer or {}).get("numNodes")
    if num_nodes is not None:
        nodes = max(int(num_nodes) - 1, 1) if as_node else int(num_nodes)
    slots = int((trainer or {}).get("numProcPerNode") or mpi.get("numProcPerNode", 1))
    if slots == 1 and (trainer or {}).get("numProcPerNode") is None:
        # One slot per GPU of resourcesPerNode, else of the runtime's node (mpi.go
        # EnforceMLPolicy, runtime.go ExtractResourcePerNodeFromRuntime).
        resources = (trainer or {}).get("resourcesPerNode") or _runtime_node_resources(jobset)
        slots = max(1, gpus_of(resources))
    ssh_dir = str(mpi.get("sshAuthMountPath") or "/root/.ssh")
    counts = {"launcher": launchers, "node": nodes}
    pod_sets: list[PodSet] = []
    # The launcher and the nodes first, then any other replicated job (an initializer):
    # its parallelism, nothing injected.
    others = [r for r in jobset["replicatedJobs"] if r["name"] not in counts]
    for rjob in [by_name["launcher"], by_name["node"], *others]:
        name = rjob["name"]
        pod = rjob["template"]["spec"]["template"]["spec"]
        if name not in counts:
            step = ((rjob["template"].get("metadata") or {}).get("labels") or {}).get(
                ANCESTOR_LABEL
            )
            if step in (DATASET_INITIALIZER, MODEL_INITIALIZER):
                pod_sets.append(_initializer_set(rjob, spec, runtime_name, pj))
            else:
                pod_sets.append(PodSet(name, _parallelism(rjob), 0, pod, NODE, (), False))
            continue
        count = counts[name]
        pod = _mpi_volumes(pod, pj.object_name, ssh_dir, launcher=name == "launcher")
        gets_trainer = name == "launcher" or as_node
        containers: list[dict[str, Any]] = []
        env: tuple[EnvVar, ...] = ()
        for c in pod.get("containers") or []:
            if c.get("name") != NODE:
                containers.append(c)
                continue
            # The launcher takes spec.trainer whole; a node (with the launcher as a node) its
            # env and resourcesPerNode only (jobset/builder.go Trainer; trainingruntime.go).
            merged, found = apply_trainer(
                c, trainer if gets_trainer else None, runtime_name, pj, program=name == "launcher"
            )
            if name == "launcher":
                found += [
                    EnvVar(k, v, _TRAINER)
                    for k, v in {
                        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
                        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                        "OMPI_MCA_orte_set_default_slots": str(slots),
                        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
                    }.items()
                ]
            merged["env"] = [e.entry() for e in found]
            containers.append(merged)
            env = tuple(found)
        runs = name == "node" or as_node
        pod_sets.append(PodSet(name, count, 0, {**pod, "containers": containers}, NODE, env, runs))
    # The hostfile lists every node pod, and every launcher pod when it is a node (mpi.go
    # buildHostFileConfigMap, isNode).
    hosts = nodes + (launchers if as_node else 0)
    command = pod_sets[0].main.get("command") or ["the image's ENTRYPOINT"]
    notes = [
        f"MPI runtime: {hosts} hosts × {slots} slots = {hosts * slots} ranks, started by the "
        f"launcher's {command[0]}; the nodes run sshd"
    ]
    depends = by_name["launcher"].get("dependsOn") or []
    wait = waits_for_hosts(by_name["launcher"]["template"]["spec"]["template"]["spec"])
    if any(d.get("name") == "node" and d.get("status") == "Ready" for d in depends):
        notes.append("the launcher job starts once every node pod is ready (JobSet dependsOn)")
    elif wait is not None:
        notes.append(wait)
    else:
        notes.append(
            "nothing makes the launcher wait for the nodes: mpirun may start before their sshd "
            "listens, and fail"
        )
    if launchers > 1:
        notes.append(
            f"the runtime's mlPolicy.numNodes is {launchers}: Trainer starts {launchers} "
            "launchers, each running the command over the same hosts"
        )
    return pod_sets, str(slots), hosts * slots, notes


def _trainer_pod(
    pod: dict[str, Any],
    runtime_name: str,
    trainer: dict[str, Any] | None,
    pj: PlannedJob,
    count: int,
    notes: list[str],
) -> tuple[dict[str, Any], tuple[EnvVar, ...], str]:
    containers = []
    env: list[EnvVar] = []
    procs = "1"
    for c in pod.get("containers") or []:
        if c.get("name") != NODE:
            containers.append(c)
            continue
        c, env = apply_trainer(c, trainer, runtime_name, pj)
        if trainer is not None:
            procs = _resolve_procs(trainer, c, pj, notes)
            injected = {
                "PET_NNODES": str(count),
                "PET_NPROC_PER_NODE": procs,
                "PET_NODE_RANK": "0",
                "PET_MASTER_ADDR": f"{pj.object_name}-node-0-0.{pj.object_name}",
                "PET_MASTER_PORT": str(TRAINER_MASTER_PORT),
            }
            env = [x for x in env if x.name not in injected]
            env += [_injected(k, v, k == "PET_NODE_RANK") for k, v in injected.items()]
            # torch.go: the headless Service's port on the container, upserted.
            ports = list(c.get("ports") or [])
            if not any(p.get("containerPort") == _PORT for p in ports):
                c["ports"] = [*ports, {"containerPort": _PORT}]
        else:
            notes.append(
                "spec.trainer is not set: Trainer injects no PET_* variables, torchrun runs alone"
            )
        c["env"] = [e.entry() for e in env]
        containers.append(c)
    return {**pod, "containers": containers}, tuple(env), procs


def _framework_pod(
    pod: dict[str, Any],
    runtime_name: str,
    trainer: dict[str, Any] | None,
    pj: PlannedJob,
    count: int,
    framework: str,
    notes: list[str],
) -> tuple[dict[str, Any], tuple[EnvVar, ...], str]:
    """Container ``node`` of a jax or xgboost runtime's trainer job (trainer v2.3.0
    plugins/jax/jax.go, plugins/xgboost/xgboost.go EnforceMLPolicy): the plugin's variables
    upserted when spec.trainer is set; one process per node, XGBoost's tracker expecting one
    worker per GPU (resourcesPerNode, else the runtime's)."""
    containers = []
    env: list[EnvVar] = []
    procs = "1"
    names = {"jax": "JAX_*", "xgboost": "DMLC_*"}
    for c in pod.get("containers") or []:
        if c.get("name") != NODE:
            containers.append(c)
            continue
        c, env = apply_trainer(c, trainer, runtime_name, pj)
        if trainer is None:
            notes.append(
                f"spec.trainer is not set: Trainer injects no {names[framework]} variables"
            )
        else:
            gpus = gpus_of(c.get("resources") or {})
            injected = trainer_framework_env(
                framework=framework, trainjob=pj.object_name, nodes=count, gpus=gpus
            )
            env = [x for x in env if x.name not in injected]
            per_pod = {"JAX_PROCESS_ID", "DMLC_TASK_ID"}
            env += [_injected(k, v, k in per_pod) for k, v in injected.items()]
            if framework == "xgboost":
                procs = str(max(1, gpus))
                notes.append(
                    f"the tracker on the first node waits for DMLC_NUM_WORKER="
                    f"{injected['DMLC_NUM_WORKER']} workers: one per node, or with GPUs one per "
                    "GPU, which the script starts itself"
                )
            else:
                notes.append(
                    "one JAX process per node; jax.distributed.initialize() meets the others "
                    "at JAX_COORDINATOR_ADDRESS"
                )
        c["env"] = [e.entry() for e in env]
        containers.append(c)
    return {**pod, "containers": containers}, tuple(env), procs


def _initializer_set(
    rjob: dict[str, Any], spec: dict[str, Any], runtime_name: str, pj: PlannedJob
) -> PodSet:
    """An initializer step's replicated job: one pod set of its Job's parallelism (counted
    once, like any replicated job that is not the trainer's: trainingruntime.go
    newRuntimeInfo), with spec.initializer written into its container."""
    step = rjob["template"]["metadata"]["labels"][ANCESTOR_LABEL]
    pod = rjob["template"]["spec"]["template"]["spec"]
    pod, env = _initializer_pod(pod, step, spec.get("initializer"), runtime_name, pj)
    where = "/workspace/dataset" if step == DATASET_INITIALIZER else "/workspace/model"
    return PodSet(
        rjob["name"], _parallelism(rjob), 0, pod, step, env, runs_ranks=False,
        duty=f"downloads to {where} of the nodes, then completes",
    )  # fmt: skip


def _initializer_pod(
    pod: dict[str, Any],
    step: str,
    initializer: dict[str, Any] | None,
    runtime_name: str,
    pj: PlannedJob,
) -> tuple[dict[str, Any], tuple[EnvVar, ...]]:
    """Container ``step`` of an initializer job with the TrainJob's section written into it
    (trainer v2.3.0 plugins/jobset/builder.go Initializer): STORAGE_URI and env upserted,
    the Secret appended as envFrom."""
    source = (initializer or {}).get(step.removesuffix("-initializer"))
    containers = []
    env: list[EnvVar] = []
    for c in pod.get("containers") or []:
        if c.get("name") != step:
            containers.append(c)
            continue
        c = dict(c)
        env = [EnvVar.of(e, env_source(pj, e["name"], runtime_name)) for e in c.get("env") or []]
        if source is not None:
            given = list(source.get("env") or [])
            if source.get("storageUri") is not None:
                given.insert(0, {"name": STORAGE_URI, "value": source["storageUri"]})
            for e in given:
                env = [x for x in env if x.name != e["name"]]
                env.append(EnvVar.of(e, "job"))
            if source.get("secretRef") is not None:
                c["envFrom"] = [*(c.get("envFrom") or []), {"secretRef": source["secretRef"]}]
        c["env"] = [e.entry() for e in env]
        containers.append(c)
    return {**pod, "containers": containers}, tuple(env)


def _flux_pod(
    pod: dict[str, Any],
    runtime_name: str,
    trainer: dict[str, Any] | None,
    pj: PlannedJob,
    count: int,
    policy: dict[str, Any],
    notes: list[str],
) -> tuple[dict[str, Any], tuple[EnvVar, ...], str, tuple[dict[str, Any], ...]]:
    """The trainer job ``node`` of a flux runtime (trainer v2.3.0 plugins/flux/flux.go
    EnforceMLPolicy; plugins/plainml/plainml.go upserts spec.trainer's env and sizes it):
    the command wrapped by the entrypoint, args dropped, the plugin's volumes (by name) and
    mounts (by path), and its flux-installer init container."""
    name = pj.object_name
    containers = []
    env: list[EnvVar] = []
    tasks = int((trainer or {}).get("numProcPerNode") or policy.get("numProcPerNode") or 1)
    installer: dict[str, Any] = {}
    for c in pod.get("containers") or []:
        if c.get("name") != NODE:
            containers.append(c)
            continue
        settings = {
            "FLUX_VIEW_IMAGE": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
            "FLUX_NETWORK_DEVICE": "eth0",
            "FLUX_QUEUE_POLICY": "fcfs",
        }  # pkg/constants/constants.go Flux*; the runtime's values, then the TrainJob's
        for source in (c.get("env") or [], (trainer or {}).get("env") or []):
            for e in source:
                if e.get("name") in settings:
                    settings[e["name"]] = str(e.get("value", ""))
        original = flux_original_command(
            list((trainer or {}).get("command") or c.get("command") or []),
            list((trainer or {}).get("args") or []),
        )
        c, env = apply_trainer(c, trainer, runtime_name, pj)
        if trainer is None:
            notes.append(
                "spec.trainer is not set: Trainer's Flux plugin cannot run (it rewrites "
                "spec.trainer's command)"
            )
            c["env"] = [e.entry() for e in env]
            containers.append(c)
            continue
        c.pop("args", None)
        c["command"] = ["/bin/bash", "/etc/flux-config/entrypoint.sh", original]
        mounts = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") not in FLUX_MOUNTS]
        for path, volume in FLUX_MOUNTS.items():
            mount: dict[str, Any] = {"name": volume.replace("<trainjob>", name), "mountPath": path}
            if path not in ("/mnt/flux", "/opt/software"):
                mount["readOnly"] = True
            mounts.append(mount)
        c["volumeMounts"] = mounts
        c["env"] = [e.entry() for e in env]
        containers.append(c)
        installer = {
            "name": FLUX_INSTALLER,
            "image": settings["FLUX_VIEW_IMAGE"],
            "command": ["/bin/bash", "/etc/flux-config/init.sh"],
            "volumeMounts": [
                {"name": "flux-install", "mountPath": "/mnt/flux"},
                {"name": flux_configmap(name), "mountPath": "/etc/flux-config", "readOnly": True},
            ],
        }
        res = (trainer.get("resourcesPerNode") if trainer else None) or c.get("resources") or {}
        gpus = gpus_of(res)
        notes.append(
            f"Flux: the first node runs `{flux_run(count, tasks, gpus, original)}` "
            f"({count} × {tasks} tasks); "
            + (
                f"the other {count - 1} run Flux brokers until it ends"
                if count > 1
                else "no other node"
            )
        )
        notes.append(
            "Trainer's Flux plugin mounts a read-only memory-backed /dev/shm and an emptyDir "
            "over /opt/software (the image's is hidden), and creates ConfigMap "
            f"{flux_configmap(name)} and Secret {flux_curve_secret(name)}"
        )
        if not gpus and pj.resources is not None and pj.resources.gpu:
            notes.append(
                f"Trainer counts no GPUs under {pj.cluster.gpu_resource} (the name holds no "
                "'gpu'): flux run asks for none, the tasks see the pod's"
            )
    volumes = [
        v
        for v in pod.get("volumes") or []
        if v.get("name") not in {*FLUX_VOLUMES, flux_configmap(name)}
    ]
    if installer:
        volumes += [
            {"name": "spack-install", "emptyDir": {}},
            {"name": "flux-install", "emptyDir": {}},
            {
                "name": flux_configmap(name),
                "configMap": {"name": flux_configmap(name), "defaultMode": 0o755},
            },
            {"name": "shared-memory", "emptyDir": {"medium": "Memory"}},
            {
                "name": "flux-curve",
                "secret": {"secretName": flux_curve_secret(name), "defaultMode": 0o400},
            },
        ]
    out = {**pod, "containers": containers}
    if volumes:
        out["volumes"] = volumes
    return out, tuple(env), str(tasks), ((installer,) if installer else ())


_PORT = TRAINER_MASTER_PORT
# The Job controller's completion-index annotation, read by the pod (trainer v2.3.0
# pkg/constants/constants.go JobCompletionIndexFieldPath).
_COMPLETION_INDEX = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}


def _injected(name: str, value: str, per_index: bool) -> EnvVar:
    """A variable Trainer sets; the node rank (``value`` on the first pod) is read from the
    pod's completion index (plugins/torch/torch.go, jax/jax.go, xgboost/xgboost.go)."""
    if not per_index:
        return EnvVar(name, value, _TRAINER)
    return EnvVar(name, value, _TRAINER, "the pod's completion index", dict(_COMPLETION_INDEX))


def apply_trainer(
    container: dict[str, Any],
    trainer: dict[str, Any] | None,
    runtime_name: str,
    pj: PlannedJob,
    *,
    program: bool = True,
) -> tuple[dict[str, Any], list[EnvVar]]:
    """Container ``node`` of the trainer job with ``spec.trainer`` written into it: image,
    command and args replaced (unless not ``program``), env upserted by name,
    resourcesPerNode merged key by key."""
    c = dict(container)
    env = [EnvVar.of(e, env_source(pj, e["name"], runtime_name)) for e in c.get("env") or []]
    if trainer is None:
        return c, env
    for key in ("image", "command", "args") if program else ():
        if key in trainer:
            c[key] = trainer[key]
    for e in trainer.get("env") or []:
        env = [x for x in env if x.name != e["name"]]
        env.append(EnvVar.of(e, env_source(pj, e["name"], "job")))
    if "resourcesPerNode" in trainer:
        base = c.get("resources") or {}
        override = trainer["resourcesPerNode"]
        merged: dict[str, Any] = {
            part: {**(base.get(part) or {}), **(override.get(part) or {})}
            for part in ("limits", "requests")
            if base.get(part) or override.get(part)
        }
        # Claims (a network profile's DRA claims) merge by name, a strategic merge patch
        # (trainer v2.3.0 pkg/util/trainingruntime/trainingruntime.go
        # resourceRequirementsPatchMeta): the runtime's stay.
        claims = {cl["name"]: cl for cl in base.get("claims") or []}
        claims |= {cl["name"]: cl for cl in override.get("claims") or []}
        if claims:
            merged["claims"] = list(claims.values())
        c["resources"] = merged
    return c, env


def gpus_of(resources: dict[str, Any]) -> int:
    """GPUs per pod as Trainer counts them: requests, else limits."""
    return _gpus(resources.get("requests") or {}) or _gpus(resources.get("limits") or {})


def _resolve_procs(
    trainer: dict[str, Any], container: dict[str, Any], pj: PlannedJob, notes: list[str]
) -> str:
    if "numProcPerNode" in trainer:
        return str(trainer["numProcPerNode"])
    # "auto" is resolved from resourcesPerNode as given, else the runtime's resources.
    res = trainer.get("resourcesPerNode") or container.get("resources") or {}
    gpus = _gpus(res.get("requests") or {}) or _gpus(res.get("limits") or {})
    if gpus:
        return "auto"
    cpu = parse_quantity(str((res.get("requests") or res.get("limits") or {}).get("cpu", "1")))
    cores = max(1, math.ceil(cpu or 1))
    notes.append(f"numProcPerNode 'auto' without GPUs: Trainer starts {cores} (one per CPU)")
    return str(cores)


def _gpus(amounts: dict[str, Any]) -> int:
    # Trainer's GetNumGPUPerNode: the first resource whose name contains "gpu".
    for name, value in amounts.items():
        if "gpu" in name.lower():
            return int(parse_quantity(str(value)) or 0)
    return 0


def _procs(procs: str, pod: dict[str, Any]) -> int:
    if procs.isdigit():
        return int(procs)
    node: dict[str, Any] = next(
        (c for c in pod.get("containers") or [] if c.get("name") == NODE), {}
    )
    limits = (node.get("resources") or {}).get("limits") or {}
    return max(1, _gpus(limits))
