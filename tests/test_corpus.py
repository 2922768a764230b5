"""The corpus (``tests/corpus/``): each trainkit definition mirroring a real manifest
synthesizes to what that manifest means, compared by meaning, not bytes.

Each definition is planned and rendered in-process (``build_plan``, ``render_groups``, as
``trainkit synth`` does, without the CLI and without writing files) and must pass the policy
checks; the rendered object's meaning is then compared with the case's ``Expected``.

What "by meaning" leaves out, every rule with its reason (both sides go through the same
normalisation, so each rule can only hide what it names):

1. Metadata trainkit adds: the namespace (the team's), labels and annotations under
   ``trainkit.dev/``, ``app.kubernetes.io/managed-by``, Argo CD's sync wave. They steer
   nothing the manifest sets.
2. Container names: each operator requires its own (``pytorch``, ``tensorflow``, …) and
   trainkit writes that; the manifests' names only label the container.
3. Env order: env is compared as a mapping. Two variables trainkit adds to GPU-less pods,
   ``NVIDIA_VISIBLE_DEVICES`` and ``NVIDIA_DRIVER_CAPABILITIES`` set empty, are dropped: they
   only keep a pod from seeing GPUs it did not request (the NVIDIA runtime's image default
   would otherwise expose every GPU of the node, issue 24), which is what the manifest means.
4. Image pull policy: compared as the kubelet applies it — a manifest without one gets
   ``Always`` for ``:latest`` or an untagged image and ``IfNotPresent`` otherwise
   (Kubernetes ``SetDefaults_Container``), on both sides.
5. Requests and limits: a limit without a request is also the request (the API server's
   defaulting), on both sides; a zero quantity is none. GPUs and other extended resources are
   compared exactly. CPU and memory are compared where the manifest sets them; where it sets
   none, trainkit's sizes (every trainkit pod is sized) are not a difference. Where the
   manifest sets only requests, trainkit's limits (equal to them: Guaranteed pods) are not a
   difference either.
6. ``/dev/shm``: a manifest's memory-backed ``emptyDir`` there without a size is matched by
   trainkit's ``shm_size`` of any size (trainkit bounds it; unbounded it counts against the
   pod's memory limit either way).
7. Operator defaults, applied to both sides: each Training Operator kind's default port when
   the manifest names none (``<kind>_defaults.go`` setDefaultPort at v1.9.4: the operator adds
   it) and its default restart policy (``…DefaultRestartPolicy``); mpi-operator's
   ``slotsPerWorker`` 1, ``sshAuthMountPath`` ``/root/.ssh``, ``mpiImplementation``
   ``OpenMPI``, ``launcherCreationPolicy`` ``AtStartup``, ``runLauncherAsWorker`` false
   (``pkg/apis/kubeflow/v2beta1/default.go``), its restart policies (``OnFailure`` for the
   launcher, ``Never`` for workers: ``constants.go``) and the command of a worker that sets
   neither command nor args, ``/usr/sbin/sshd -De`` (``pkg/controller/mpi_job_controller.go
   newWorker``); paddle-operator's restart policy (``Never``,
   ``OnFailure`` for a worker behind a Service: ``controllers/paddlejob_helper.go``); KubeRay's
   ``submissionMode`` ``K8sJobMode``, ``shutdownAfterJobFinishes`` false and ``backoffLimit`` 0
   (``ray-operator/apis/ray/v1/rayjob_types.go`` at v1.7.0); Trainer v2.3.0's port 29500 on
   the node of a torch, JAX or XGBoost runtime (``pkg/runtime/framework/plugins/{torch/torch,
   jax/jax,xgboost/xgboost}.go``: each plugin adds it to the trainer container);
   JobSet v0.12.0's restart policy ``OnFailure`` for a runtime's pods
   (``pkg/webhooks/jobset_webhook.go``); the API server's default of a flux runtime's
   ``mlPolicy.flux.numProcPerNode``, 1 (Trainer v2.3.0's CRD, ``trainingruntime_types.go``
   FluxMLPolicySource ``+kubebuilder:default=1``; trainkit writes the number).
8. Run policy trainkit always writes where the manifest leaves it to the operator:
   ``backoffLimit`` and ``cleanPodPolicy`` (trainkit bounds restarts and stops hung pods so
   that no job holds its GPUs forever, DESIGN.md). Where the manifest sets them, they are
   compared.
9. Scheduling: the queue is compared (``("volcano", name)``, ``("kueue", name)`` or none),
   wherever it is written (label, annotation, ``schedulingPolicy``); ``schedulerName`` and
   Kueue's ``suspend`` follow from it. A ``minAvailable`` of the whole gang is what the
   operators default it to (Training Operator ``pkg/controller.v1/common/job.go``,
   mpi-operator ``pkg/controller/podgroup.go calculateMinAvailable``, paddle-operator
   ``constructPodGroup``); any other scheduling setting is compared.
10. Volume names: mounts are compared by path and by what is mounted there; trainkit names
    volumes itself.
11. The ``wait-for-hosts`` init container trainkit gives an MPI launcher (issue 24): a bounded
    wait for the workers' sshd before ``mpirun`` starts, which mpi-operator's ``AtStartup``
    launcher would otherwise race. It changes when the ranks start, not what they run.
12. RayJob, what KubeRay v1.7.0 does either way: the head's ``dashboard-host`` 0.0.0.0 and
    ``num-gpus`` 0 on a pod without GPUs (what it derives from the container's resources,
    ``common/pod.go``); the head's ports 6379, 8265 and 10001 (a ``containerPort`` opens
    nothing; without any, KubeRay's head Service exposes these defaults, and Serve's 8000,
    where nothing listens unless the job starts Ray Serve: ``common/service.go
    getServicePorts``); a submitter pod from the head's image when none is given
    (``common/job.go``), any other compared as a role ``submitter``, its
    ``--runtime-env-json`` as the runtime env it says (parsed, without trainkit's pip
    options, as below); ``minReplicas``/``maxReplicas``, read only with the autoscaler. The
    entrypoint is compared as the shell splits it, and ``runtimeEnvYAML`` without the pip
    options trainkit adds from the platform's package indexes (where pip installs from, not
    what).
13. ``rayVersion``: KubeRay v1.7.0 reads it only to gate Ray before 2.6.0 (``common/job.go``)
    and the unified health check from 2.53.0 (``common/pod.go supportsUnifiedHealthCheck``),
    so a version in between means what none means.
14. A TrainJob's name: trainkit names each run ``<name>-r<run>`` (a TrainJob is never edited in
    place); the name is compared without that suffix.
15. Security contexts: a pod's ``runAsUser``, ``runAsGroup``, ``runAsNonRoot``, seccomp,
    AppArmor and SELinux settings are those of every container that sets none of its own
    (Kubernetes ``PodSecurityContext``), so they are compared on the job's container.
16. A runtime's replicated Job: one Job, ``completions`` and ``parallelism`` 1 are the
    defaults (JobSet ``jobset_types.go``, Kubernetes Job).
18. A TrainJob's ``numProcPerNode`` on a torch runtime whose nodes have no GPUs, where a side
    sets none: Trainer's torch plugin computes it from the CPUs of the TrainJob's resources,
    else of the runtime's node (``torch.go`` EnforceMLPolicy, getNumCPUPerNode), so that side
    is given the number Trainer computes (trainkit writes that number itself).
17. A TrainJob's runtime patches are compared without their ``manager`` (it names who owns
    the patch; Trainer merges every manager's patch alike) and without trainkit's labels and
    the queue's annotation (rules 1 and 9).

Every other field of the rendered pods and specs is compared: one the extraction does not
know shows up as a difference, so a new rendered setting cannot pass unseen.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from decimal import Decimal
from importlib import import_module
from typing import Any

import pytest
import yaml

from corpus import ENTRYPOINT, Case, Expected, Pod
from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    ClusterTrainingRuntime,
    FlavorQuota,
    Queue,
    ResourceFlavor,
    Team,
)
from trainkit.errors import DefinitionError
from trainkit.kube.quantities import parse_quantity
from trainkit.load import Definition
from trainkit.policy import check_policy
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups, rendered_runtimes

MODULES = (
    "training_operator",
    "mpi_operator",
    "paddle_operator",
    "kuberay",
    "trainer",
    "kueue",
    "volcano",
    "platforms",
)
CASES: list[Case] = [c for m in MODULES for c in import_module(f"corpus.{m}").CASES]
P = "jobs/platform/p.py"


def _param(case: Case) -> Any:
    reason = (
        f"needs {case.needs}, which trainkit does not support yet"
        if case.needs
        else f"trainkit refuses on purpose: {case.refused}"
        if case.refused
        else ""
    )
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


# --- synthesizing a case ------------------------------------------------------------------------


def _platform(case: Case, team_name: str) -> list[Definition]:
    # The cluster's scheduler is the one the manifest's queue belongs to; none without a queue
    # or for a scheduler trainkit does not know (the queue then differs).
    scheduler = case.expected.queue[0] if case.expected.queue else "default"
    scheduler = scheduler if scheduler in ("volcano", "kueue") else "default"
    cluster = {"name": "c", "server": "https://c", "gpus_per_node": 8, "scheduler": scheduler}
    cluster |= case.cluster
    out = [Definition(Cluster(**cluster), P, "platform")]
    queues: list[str] = []
    if scheduler == "kueue":
        quota = Capacity(cpu=1024, memory="8Ti", gpu=64)
        out.append(Definition(ResourceFlavor(name="f"), P, "platform"))
        name = case.expected.queue[1] if case.expected.queue else "q"
        flavors = [FlavorQuota(flavor="f", quota=quota)]
        out.append(Definition(ClusterQueue(name=name, flavors=flavors), P, "platform"))
        queues = [name]
    elif scheduler == "volcano":
        name = case.expected.queue[1] if case.expected.queue else "q"
        if name != "default":  # Volcano's own queue, which no definition creates
            out.append(Definition(Queue(name=name, capability=Capacity(gpu=64)), P, "platform"))
        queues = [name]
    out += [Definition(make(), P, "platform") for make in case.objects]
    team = Team(name=team_name, queues=queues, **case.team)
    return [*out, Definition(team, P, "platform")]


def synthesize(case: Case) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The rendered object of the case's definition, after the policy checks passed, and the
    runtime a TrainJob names."""
    obj = case.definition()
    if isinstance(obj, ClusterTrainingRuntime):  # the platform's, beside the cluster
        defs = [*_platform(case, "t"), Definition(obj, P, "platform")]
    else:
        team = getattr(obj, "team", None) or "t"
        script = getattr(obj, "script", None)
        files = {script.path: "x"} if script is not None else {}
        defs = [*_platform(case, team), Definition(obj, f"jobs/{team}/j.py", team, files=files)]
    plan = build_plan(defs)
    groups = render_groups(plan)
    problems = check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
    if problems:
        raise DefinitionError(problems)
    kind, name = case.expected.kind, case.expected.name
    found = [
        r.body
        for _, items in groups
        for r in items
        if r.body.get("kind") == kind and _name(r.body) == name
    ]
    assert len(found) == 1, f"{len(found)} rendered {kind} {name!r}"
    ref = found[0]["spec"].get("runtimeRef", {}).get("name")
    runtimes = [
        r.body
        for _, items in groups
        for r in items
        if r.body.get("kind") == "ClusterTrainingRuntime" and r.body["metadata"]["name"] == ref
    ]
    return found[0], (runtimes[0] if runtimes else None)


# --- meaning ------------------------------------------------------------------------------------

# 7. Training Operator v1.9.4 defaults (pkg/apis/kubeflow.org/v1/<kind>_defaults.go, the
# constants in <kind>_types.go): port name and number, restart policy.
_OPERATOR_DEFAULTS: Mapping[str, tuple[str, int, str]] = {
    "PyTorchJob": ("pytorchjob-port", 23456, "OnFailure"),
    "TFJob": ("tfjob-port", 2222, "Never"),
    "PaddleJob": ("master", 36543, "OnFailure"),
    "XGBoostJob": ("xgboostjob-port", 9999, "Never"),
    "JAXJob": ("jaxjob-port", 6666, "Never"),
}
_REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
# 7. mpi-operator v2beta1 defaults (pkg/apis/kubeflow/v2beta1/default.go) and KubeRay v1.7.0's
# (ray-operator/apis/ray/v1/rayjob_types.go: kubebuilder defaults).
_SPEC_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "MPIJob": {
        "slotsPerWorker": 1,
        "sshAuthMountPath": "/root/.ssh",
        "mpiImplementation": "OpenMPI",
        "launcherCreationPolicy": "AtStartup",
        "runLauncherAsWorker": False,
    },
    "RayJob": {
        "submissionMode": "K8sJobMode",
        "shutdownAfterJobFinishes": False,
        "backoffLimit": 0,
    },
}
# 7. mpi-operator v0.8.0's restart policies (pkg/apis/kubeflow/v2beta1/constants.go
# DefaultLauncherRestartPolicy, DefaultRestartPolicy; default.go setDefaultsType*).
_MPI_RESTART = {"Launcher": "OnFailure", "Worker": "Never"}
# 11. trainkit's bounded wait of an MPI launcher for its workers' sshd (issue 24): mpi-operator's
# launcher would otherwise start mpirun before the workers listen and fail.
_TRAINKIT_INIT = frozenset({"wait-for-hosts"})
# 8. Run policy trainkit writes where a manifest leaves it to the operator.
_TRAINKIT_RUN_POLICY = frozenset({"backoffLimit", "cleanPodPolicy"})
# 3. Variables trainkit sets empty in GPU-less pods.
_GPU_BLANKS = frozenset({"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"})
# 12. The head's ports KubeRay v1.7.0's head Service exposes by default (common/service.go
# getServicePorts); a containerPort itself opens nothing.
_RAY_HEAD_PORTS = {"gcs-server": 6379, "dashboard": 8265, "client": 10001}
# 1, 9. Pod fields that follow from the queue or only label the pod.
_POD_IGNORED = frozenset({"schedulerName"})
_POD_KNOWN = frozenset({"containers", "volumes", "restartPolicy"})
_CONTAINER_KNOWN = frozenset(
    {"name", "image", "imagePullPolicy", "command", "args", "env", "resources", "volumeMounts"}
) | {"ports"}
_OWN_META = ("trainkit.dev/", "app.kubernetes.io/managed-by", "argocd.argoproj.io/")


def _q(value: Any) -> Decimal:
    q = parse_quantity(str(value))
    assert q is not None, value
    return q


def _pull(image: str, policy: str | None) -> str:
    """4. The kubelet's pull policy: Always for :latest or no tag, else IfNotPresent."""
    if policy:
        return policy
    last = image.rsplit("/", 1)[-1]
    tag = last.split("@")[0].partition(":")[2]
    return "Always" if "@" not in last and tag in ("", "latest") else "IfNotPresent"


def _name(body: Mapping[str, Any]) -> str:
    """14. The object's name, a TrainJob's without its run suffix."""
    name = str(body["metadata"]["name"])
    return re.sub(r"-r[0-9]+$", "", name) if body["kind"] == "TrainJob" else name


def _own(key: str) -> bool:
    return key.startswith(_OWN_META)


def _pruned(node: Any, key: str = "") -> Any:
    """A TrainJob's runtime patch without trainkit's labels (1), the queue's annotation (9) and
    its ``manager`` (17), and without what is left empty; None when nothing is left."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if (
                (key == "labels" and _own(k))
                or (key == "annotations" and k in _QUEUE_KEYS)
                or (key == "" and k == "manager")
            ):
                continue
            kept = _pruned(v, k)
            if kept is not None and not (k == "name" and key == "replicatedJobs"):
                out[k] = kept
        named = {k: v for k, v in out.items() if k != "name"}
        return out if named else None
    if isinstance(node, list):
        items = [x for x in (_pruned(v, key) for v in node) if x is not None]
        return [_named(n, o) for n, o in zip(node, items, strict=False)] if items else None
    return node


def _named(source: Any, kept: Any) -> Any:
    """A replicated Job's patch keeps its name beside what it patches."""
    if isinstance(source, dict) and "name" in source and isinstance(kept, dict):
        return {"name": source["name"], **kept}
    return kept


def _volume_source(v: Mapping[str, Any]) -> str:
    if "persistentVolumeClaim" in v:
        return f"pvc:{v['persistentVolumeClaim']['claimName']}"
    if "emptyDir" in v:
        e = v["emptyDir"]
        return ":".join(["emptyDir", *(str(e[k]) for k in ("medium", "sizeLimit") if k in e)])
    for kind, key in (("configMap", "name"), ("secret", "secretName"), ("hostPath", "path")):
        if kind in v:
            items = v[kind].get("items")
            extra = f":{json.dumps(items, sort_keys=True)}" if items else ""
            return f"{kind}:{v[kind][key]}{extra}"
    return json.dumps({k: x for k, x in v.items() if k != "name"}, sort_keys=True)


def _env_value(e: Mapping[str, Any]) -> Any:
    if "valueFrom" not in e:
        return e.get("value", "")
    src = e["valueFrom"]
    if "secretKeyRef" in src:
        return ("secret", src["secretKeyRef"]["name"], src["secretKeyRef"]["key"])
    if "configMapKeyRef" in src:
        return ("configMap", src["configMapKeyRef"]["name"], src["configMapKeyRef"]["key"])
    if "fieldRef" in src:
        return ("field", src["fieldRef"]["fieldPath"])
    return json.dumps(src, sort_keys=True)


# 15. securityContext settings a pod gives every container that does not set its own
# (Kubernetes PodSecurityContext: "the value specified in SecurityContext takes precedence").
_POD_SC_FOR_CONTAINERS = frozenset(
    {"runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile", "appArmorProfile",
     "seLinuxOptions", "windowsOptions"}
)  # fmt: skip


def _own_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """1. The labels and annotations of an object or pod besides trainkit's own."""
    out = {}
    for field in ("labels", "annotations"):
        kept = {k: v for k, v in meta.get(field, {}).items() if not _own(k)}
        if kept:
            out[f"metadata.{field}"] = kept
    return out


def pod_meaning(replicas: int, restart: str | None, template: Mapping[str, Any]) -> Pod:
    """The ``Pod`` a rendered pod template means (its first container is the job's). A
    replica's ``restart`` is the pod's: the operators write it into the pods."""
    spec = template["spec"]
    main = spec["containers"][0]
    volumes = {v["name"]: _volume_source(v) for v in spec.get("volumes", [])}
    mounts = {
        m["mountPath"]: volumes.get(m["name"], m["name"])
        + (f":{m['subPath']}" if m.get("subPath") else "")
        + (":ro" if m.get("readOnly") else "")
        for m in main.get("volumeMounts", [])
    }
    env = {e["name"]: _env_value(e) for e in main.get("env", [])}
    res = main.get("resources", {})
    pod_rest = {
        k: v for k, v in spec.items() if k not in _POD_KNOWN | _POD_IGNORED and v not in ({}, [])
    }
    pod_rest |= _own_meta(template.get("metadata", {}))
    init = [c for c in pod_rest.pop("initContainers", []) if c["name"] not in _TRAINKIT_INIT]
    if init:
        pod_rest["initContainers"] = init
    if len(spec["containers"]) > 1:
        pod_rest["containers[1:]"] = spec["containers"][1:]
    container = {k: v for k, v in main.items() if k not in _CONTAINER_KNOWN}
    pod_sc = dict(pod_rest.pop("securityContext", {}))
    inherited = {k: pod_sc.pop(k) for k in list(pod_sc) if k in _POD_SC_FOR_CONTAINERS}
    if pod_sc:
        pod_rest["securityContext"] = pod_sc
    if inherited or "securityContext" in container:  # 15.
        container["securityContext"] = inherited | container.get("securityContext", {})
    return Pod(
        replicas=replicas,
        image=main["image"],
        argv=(*(main.get("command") or [ENTRYPOINT]), *main.get("args", [])),
        requests=res.get("requests", {}),
        limits=res.get("limits", {}),
        env=env,
        mounts=mounts,
        ports={
            p.get("name", str(p["containerPort"])): p["containerPort"]
            for p in main.get("ports", [])
        },
        restart=restart or spec.get("restartPolicy"),
        pull=main.get("imagePullPolicy"),
        pod=pod_rest,
        container=container,
    )


def _roles(body: Mapping[str, Any]) -> dict[str, Pod]:
    kind, spec = body["kind"], body["spec"]
    if _REPLICA_SPECS.get(kind) in spec:
        return {
            role: pod_meaning(rs.get("replicas", 1), rs.get("restartPolicy"), rs["template"])
            for role, rs in spec[_REPLICA_SPECS[kind]].items()
        }
    if kind == "PaddleJob":  # paddle-operator: spec.ps, spec.worker, spec.heter
        return {
            role: pod_meaning(spec[role].get("replicas", 1), None, spec[role]["template"])
            for role in ("ps", "worker", "heter")
            if role in spec
        }
    if kind == "RayJob":
        cluster = spec["rayClusterSpec"]
        out = {"head": pod_meaning(1, None, cluster["headGroupSpec"]["template"])}
        for g in cluster.get("workerGroupSpecs", []):
            out[g["groupName"]] = pod_meaning(g.get("replicas", 1), None, g["template"])
        submitter = spec.get("submitterPodTemplate")
        if submitter is not None and not _default_submitter(spec):
            out["submitter"] = pod_meaning(1, None, submitter)
        return out
    if kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
        return {
            rj["name"]: pod_meaning(rj.get("replicas", 1), None, rj["template"]["spec"]["template"])
            for rj in spec["template"]["spec"]["replicatedJobs"]
        }
    if kind == "TrainJob":
        t = spec.get("trainer", {})
        res = t.get("resourcesPerNode", {})
        return {
            "node": Pod(
                replicas=t.get("numNodes", 0),
                image=t.get("image", ""),
                argv=(*(t.get("command") or [ENTRYPOINT]), *t.get("args", [])),
                requests=res.get("requests", {}),
                limits=res.get("limits", {}),
                env={e["name"]: _env_value(e) for e in t.get("env", [])},
            )
        }
    raise AssertionError(f"no meaning for kind {kind}")


_QUEUE_KEYS = frozenset(
    {"scheduling.volcano.sh/queue-name", "volcano.sh/queue-name", "kueue.x-k8s.io/queue-name"}
)


def _runtime_annotations(body: Mapping[str, Any]) -> dict[str, str]:
    """The JobSet annotations of a runtime, or those a TrainJob patches into its runtime."""
    spec = body["spec"]
    templates = [spec.get("template", {})] + [
        p.get("trainingRuntimeSpec", {}).get("template", {}) for p in spec.get("runtimePatches", [])
    ]
    return {
        k: v for t in templates for k, v in t.get("metadata", {}).get("annotations", {}).items()
    }


def _queue(body: Mapping[str, Any]) -> tuple[str, str] | None:
    labels = body["metadata"].get("labels", {})
    if "kueue.x-k8s.io/queue-name" in labels:
        return ("kueue", labels["kueue.x-k8s.io/queue-name"])
    spec = body["spec"]
    queue = (
        body["metadata"].get("annotations", {}).get("scheduling.volcano.sh/queue-name")
        or labels.get("volcano.sh/queue-name")
        or spec.get("runPolicy", {}).get("schedulingPolicy", {}).get("queue")
        or spec.get("schedulingPolicy", {}).get("queue")
        or _runtime_annotations(body).get("scheduling.volcano.sh/queue-name")
    )
    if not queue and "volcano" in spec.get("podGroupPolicy", {}):
        queue = "default"  # Volcano's own queue, where a PodGroup names none
    return ("volcano", queue) if queue else None


def _ray_start(params: Mapping[str, str], head: bool) -> dict[str, str]:
    """12. rayStartParams without what KubeRay v1.7.0 sets itself when absent: the head's
    ``dashboard-host`` 0.0.0.0 and each node's ``num-cpus``/``num-gpus`` from its container's
    resources (common/pod.go setMissingRayStartParams, generateRayStartCommand). trainkit writes
    ``num-gpus`` from the same resources, so dropping both sides' copies hides nothing else."""
    out = dict(params)
    if head and out.get("dashboard-host") == "0.0.0.0":
        del out["dashboard-host"]
    out.pop("num-gpus", None) if out.get("num-gpus") == "0" else None
    return out


def _ray_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The RayJob's spec beside its pods, normalised by rules 12 and 13."""
    cluster = dict(spec.pop("rayClusterSpec"))
    version = cluster.pop("rayVersion", None)
    if version is not None and not (2, 6) <= tuple(int(x) for x in version.split(".")[:2]) < (
        2,
        53,
    ):
        cluster["rayVersion"] = version  # 13. only 2.6 to 2.52 mean what no version means
    autoscaling = cluster.get("enableInTreeAutoscaling", False)
    head = dict(cluster.pop("headGroupSpec"))
    head.pop("template")
    head["rayStartParams"] = _ray_start(head.get("rayStartParams", {}), head=True)
    groups = []
    for g in cluster.pop("workerGroupSpecs", []):
        drop = {"template", "replicas", "groupName"}
        if not autoscaling:  # 12. min and max count only for KubeRay's autoscaler
            drop |= {"minReplicas", "maxReplicas"}
        g = {k: v for k, v in g.items() if k not in drop}
        g["rayStartParams"] = _ray_start(g.get("rayStartParams", {}), head=False)
        groups.append(g)
    spec["rayClusterSpec"] = {**cluster, "headGroupSpec": head, "workerGroupSpecs": groups}
    if "runtimeEnvYAML" in spec:
        env = yaml.safe_load(spec["runtimeEnvYAML"])
        pip = env.get("pip")
        if isinstance(pip, dict):  # 12. trainkit's pip options: the platform's index
            env["pip"] = pip["packages"]
        spec["runtimeEnvYAML"] = env
    if "entrypoint" in spec:
        spec["entrypoint"] = shlex.split(spec["entrypoint"])
    # 12. the submitter KubeRay creates either way; another is a role (``_roles``)
    spec.pop("submitterPodTemplate", None)
    return spec


def _default_submitter(spec: Mapping[str, Any]) -> bool:
    """12. Whether the RayJob's submitter is the one KubeRay creates without a template: one
    container of the head's image that sets no program (common/job.go
    GetDefaultSubmitterContainer)."""
    template = spec.get("submitterPodTemplate") or {}
    containers = template.get("spec", {}).get("containers", [{}])
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    return (
        len(containers) == 1
        and containers[0].get("name") == "ray-job-submitter"
        and containers[0].get("image", head.get("image")) == head.get("image")
        and not (containers[0].get("command") or containers[0].get("args"))
    )


def _submitter_argv(argv: list[str]) -> list[str]:
    """12. A submitter's ``--runtime-env-json`` as its runtime env means it: JSON compared
    parsed, without the pip options trainkit adds from the platform's package indexes."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word == "--runtime-env-json":
            env = json.loads(out[i + 1])
            if isinstance(env.get("pip"), dict):
                env["pip"] = env["pip"]["packages"]
            out[i + 1] = json.dumps(env, sort_keys=True)
    return out


# 16. Defaults of a JobSet's replicated Job: one Job (jobset_types.go), one pod at a time
# until one succeeds (Kubernetes Job completions and parallelism).
_JOB_DEFAULTS = {"completions": 1, "parallelism": 1}


def _replicated_job(rj: Mapping[str, Any]) -> dict[str, Any]:
    """A runtime's replicated Job beside its pod template (which ``_roles`` reads)."""
    out = {k: v for k, v in rj.items() if k not in ("template", "name", "replicas")}
    job = {
        k: v
        for k, v in rj["template"].get("spec", {}).items()
        if k != "template" and _JOB_DEFAULTS.get(k) != v
    }
    if job:
        out["spec"] = job
    return out | _own_meta(rj["template"].get("metadata", {}))


def _without_gang_defaults(holder: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """9. ``holder``'s ``schedulingPolicy`` without the queue and a whole-gang ``minAvailable``,
    dropped when nothing else is left."""
    out = dict(holder)
    policy = dict(out.pop("schedulingPolicy", {}))
    policy.pop("queue", None)
    if policy.get("minAvailable") == sum(p.replicas for p in _roles(body).values()):
        del policy["minAvailable"]
    if policy:
        out["schedulingPolicy"] = policy
    return out


def _spec_rest(body: Mapping[str, Any]) -> dict[str, Any]:
    """The spec beside the roles, with the run policy's scheduling left to ``_queue``."""
    kind, spec = body["kind"], dict(body["spec"])
    for key in (_REPLICA_SPECS.get(kind), "ps", "worker", "heter"):
        spec.pop(key or "", None)
    if "schedulingPolicy" in spec:  # paddle-operator's
        spec = _without_gang_defaults(spec, body)
    if kind == "RayJob":
        spec = _ray_spec(spec)
    if kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
        outer = spec.pop("template")
        template = dict(outer["spec"])
        template["replicatedJobs"] = [_replicated_job(rj) for rj in template["replicatedJobs"]]
        meta = dict(outer.get("metadata", {}))
        notes = {k: v for k, v in meta.pop("annotations", {}).items() if k not in _QUEUE_KEYS}
        meta |= {"annotations": notes} if notes else {}  # 9. the queue, compared by _queue
        spec["template"] = template | ({"metadata": meta} if meta else {})
    if kind == "TrainJob":
        trainer = dict(spec.pop("trainer", {}).items())
        for key in ("numNodes", "image", "command", "args", "resourcesPerNode", "env"):
            trainer.pop(key, None)
        if trainer:
            spec["trainer"] = trainer
        spec.pop("suspend", None)  # 9. Kueue's: it unsuspends what it admits
        patches = [p for p in map(_pruned, spec.pop("runtimePatches", [])) if p is not None]
        if patches:
            spec["runtimePatches"] = patches
    run = _without_gang_defaults(spec.pop("runPolicy", {}), body)
    if run:
        spec["runPolicy"] = run
    return spec


# --- normalisation and comparison ------------------------------------------------------------------


def _paddle_restart(role: str, intranet: str | None) -> str:
    """7. paddle-operator v0.3.5 (controllers/paddlejob_helper.go constructPod): a worker
    reached through a Service restarts OnFailure, every other pod Never."""
    return "OnFailure" if role == "worker" and intranet == "Service" else "Never"


def _norm_pod(kind: str, role: str, p: Pod, intranet: str | None = None) -> dict[str, Any]:
    requests = {k: _q(v) for k, v in p.requests.items() if _q(v)}  # 5. zero is none
    limits = {k: _q(v) for k, v in p.limits.items() if _q(v)}
    requests = {**limits, **requests}  # 5. a limit alone is the request
    ports = dict(p.ports)
    restart = p.restart
    if kind in _OPERATOR_DEFAULTS:
        name, number, policy = _OPERATOR_DEFAULTS[kind]
        ports.setdefault(name, number)  # 7.
        restart = restart or policy
    argv = list(p.argv)
    if kind == "MPIJob":
        restart = restart or _MPI_RESTART.get(role)
        if role == "Worker" and argv == [ENTRYPOINT]:
            argv = ["/usr/sbin/sshd", "-De"]  # 7. mpi_job_controller.go newWorker
    if kind == "paddle-operator":
        restart = restart or _paddle_restart(role, intranet)
    if kind in ("ClusterTrainingRuntime", "TrainingRuntime", "framework-runtime"):
        restart = restart or "OnFailure"  # 7. JobSet's webhook default (jobset_webhook.go)
    if kind == "framework-runtime" and role == "node":
        ports.setdefault("29500", 29500)  # 7. Trainer's torch, jax and xgboost plugins add it
    if kind == "RayJob" and role == "head":
        ports = {**_RAY_HEAD_PORTS, **ports}  # 12.
    if kind == "RayJob" and role == "submitter":
        argv = _submitter_argv(argv)
    env = {k: v for k, v in p.env.items() if not (k in _GPU_BLANKS and v == "")}  # 3.
    return {
        "replicas": p.replicas,
        "image": p.image,
        "pull": _pull(p.image, p.pull) if p.image else None,
        "argv": argv,
        "requests": requests,
        "limits": limits,
        "env": env,
        "mounts": dict(p.mounts),
        "ports": ports,
        "restart": restart,
        "pod": dict(p.pod.items()),
        "container": dict(p.container),
    }


def _resource_diffs(where: str, want: dict[str, Any], got: dict[str, Any]) -> list[str]:
    out = []
    sized = {"cpu", "memory"} & (set(want["requests"]) | set(want["limits"]))
    for field in ("requests", "limits"):
        w, g = want[field], got[field]
        for name in sorted(set(w) | set(g)):
            if name in w and w[name] == g.get(name):
                continue
            # 5. trainkit sizes every pod a manifest leaves unsized, and limits a request the
            # manifest sets alone to that request (a Guaranteed pod)
            if name not in w and name in ("cpu", "memory"):
                if name not in sized:
                    continue
                if field == "limits" and g[name] == got["requests"].get(name):
                    continue
            out.append(f"{where}.{field}[{name}]: manifest {w.get(name)}, trainkit {g.get(name)}")
    return out


def _torch_auto(body: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> int | None:
    """18. The ``numProcPerNode`` Trainer v2.3.0's torch plugin gives a TrainJob that sets
    none, on a node without GPUs: the whole CPUs of the request, else of the limit, at least 1
    (``plugins/torch/torch.go`` EnforceMLPolicy, getNumCPUPerNode). None where it stays
    ``auto`` (GPUs) or the runtime is no torch runtime."""
    if runtime is None or "torch" not in runtime["spec"].get("mlPolicy", {}):
        return None
    res = body["spec"].get("trainer", {}).get("resourcesPerNode")
    if res is None:  # runtime.ExtractResourcePerNodeFromRuntime: the node container's
        nodes = [_roles(runtime)["node"]] if "node" in _roles(runtime) else []
        res = {"requests": nodes[0].requests, "limits": nodes[0].limits} if nodes else {}
    if any(_q(v) for k, v in res.get("limits", {}).items() if k.endswith("gpu")):
        return None
    cpu = res.get("requests", {}).get("cpu") or res.get("limits", {}).get("cpu") or 0
    return max(1, math.ceil(_q(cpu)))


def differences(
    expected: Expected, body: Mapping[str, Any], runtime: Mapping[str, Any] | None = None
) -> list[str]:
    """What the rendered object means differently from the manifest, one line each."""
    kind = body["kind"]
    # paddle-operator's PaddleJob has none of the Training Operator's defaults
    flavour = "paddle-operator" if body["apiVersion"].startswith("batch.paddlepaddle") else kind
    if {"torch", "jax", "xgboost"} & set(body["spec"].get("mlPolicy", {})):
        flavour = "framework-runtime"  # 7. the plugins' port
    out: list[str] = []
    if kind != expected.kind or _name(body) != expected.name:
        out.append(
            f"object: manifest {expected.kind} {expected.name}, trainkit {kind} {_name(body)}"
        )
    got_roles = _roles(body)
    for role in sorted(set(expected.roles) | set(got_roles)):
        if role not in got_roles or role not in expected.roles:
            out.append(f"role {role}: manifest {'has' if role in expected.roles else 'lacks'} it")
            continue
        want = _norm_pod(flavour, role, expected.roles[role], expected.spec.get("intranet"))
        got = _norm_pod(flavour, role, got_roles[role], body["spec"].get("intranet"))
        if want["mounts"].get("/dev/shm") == "emptyDir:Memory":  # 6. of any size
            shm = got["mounts"].get("/dev/shm", "")
            if shm.startswith("emptyDir:Memory:"):
                got["mounts"]["/dev/shm"] = "emptyDir:Memory"
        out += _resource_diffs(role, want, got)
        for key in want:
            if key in ("requests", "limits"):
                continue
            if key in ("pod", "container"):  # one line per setting
                for name in sorted(set(want[key]) | set(got[key])):
                    w, g = want[key].get(name), got[key].get(name)
                    if w != g:
                        out.append(f"{role}.{key}.{name}: manifest {w!r}, trainkit {g!r}")
            elif want[key] != got[key]:
                out.append(f"{role}.{key}: manifest {want[key]!r}, trainkit {got[key]!r}")
    want_spec = {**_SPEC_DEFAULTS.get(kind, {}), **expected.spec}
    got_spec = {**_SPEC_DEFAULTS.get(kind, {}), **_spec_rest(body)}
    for side in (want_spec, got_spec):  # 7. the CRD's default tasks per node
        flux = side.get("mlPolicy", {}).get("flux")
        if isinstance(flux, dict) and "numProcPerNode" not in flux:
            side["mlPolicy"] = {**side["mlPolicy"], "flux": {**flux, "numProcPerNode": 1}}
    auto = _torch_auto(body, runtime) if kind == "TrainJob" else None
    for side in (want_spec, got_spec) if auto is not None else ():
        if "numProcPerNode" not in side.get("trainer", {}):  # 18.
            side["trainer"] = {**side.get("trainer", {}), "numProcPerNode": auto}
    if "runtimePatches" in want_spec:  # 17., as on trainkit's side
        want_spec["runtimePatches"] = [
            p for p in map(_pruned, want_spec["runtimePatches"]) if p is not None
        ]
    want_run = dict(want_spec.pop("runPolicy", {}))
    got_run = dict(got_spec.pop("runPolicy", {}))
    for key in sorted(set(want_run) | set(got_run)):
        if key not in want_run and key in _TRAINKIT_RUN_POLICY:
            continue  # 8.
        if want_run.get(key) != got_run.get(key):
            out.append(
                f"runPolicy.{key}: manifest {want_run.get(key)!r}, trainkit {got_run.get(key)!r}"
            )
    for key in sorted(set(want_spec) | set(got_spec)):
        if want_spec.get(key) != got_spec.get(key):
            out.append(
                f"spec.{key}: manifest {want_spec.get(key)!r}, trainkit {got_spec.get(key)!r}"
            )
    if expected.queue != _queue(body):
        out.append(f"queue: manifest {expected.queue}, trainkit {_queue(body)}")
    for field, want in (("labels", expected.labels), ("annotations", expected.annotations)):
        got = {
            k: v
            for k, v in body["metadata"].get(field, {}).items()
            if not _own(k) and k not in _QUEUE_KEYS  # 1., 9.
        }
        if got != dict(want):
            out.append(f"metadata.{field}: manifest {dict(want)}, trainkit {got}")
    return out


# --- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_manifest_meaning(case: Case) -> None:
    """The definition synthesizes to what the manifest means."""
    body, runtime = synthesize(case)
    assert differences(case.expected, body, runtime) == [], str(case.source)


def test_corpus_size_and_sources() -> None:
    """At least 40 real manifests, every kind trainkit renders among them, each citing a
    pinned source; no two cases for the same manifest."""
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({(c.source.repo, c.source.path, c.expected.name) for c in CASES}) == len(CASES)
    kinds = {c.expected.kind for c in CASES}
    assert kinds >= {
        "PyTorchJob",
        "TFJob",
        "MPIJob",
        "PaddleJob",
        "XGBoostJob",
        "JAXJob",
        "TrainJob",
        "ClusterTrainingRuntime",
        "RayJob",
    }
    for c in CASES:
        assert len(c.source.commit) == 40 and c.source.ref and c.source.path, c.id


def test_a_difference_is_seen() -> None:
    """The comparison is not blind: each meaning changed in a passing case's rendered object
    is reported, including the settings the normalisations stand next to."""
    case = next(c for c in CASES if c.id == "to-pytorch-simple")
    assert differences(case.expected, synthesize(case)[0]) == []
    changes: dict[str, Any] = {
        "Worker.replicas": lambda w, spec: w.update(replicas=2),
        "Worker.env": lambda w, spec: w["template"]["spec"]["containers"][0].update(
            env=[{"name": "X", "value": "1"}]
        ),
        "Worker.requests[nvidia.com/gpu]": lambda w, spec: w["template"]["spec"]["containers"][0][
            "resources"
        ]["limits"].update({"nvidia.com/gpu": 1}),
        "Worker.pod.hostNetwork": lambda w, spec: w["template"]["spec"].update(hostNetwork=True),
        "Worker.mounts": lambda w, spec: w["template"]["spec"]["containers"][0].update(
            volumeMounts=[{"name": "x", "mountPath": "/x"}]
        ),
        "Worker.restart": lambda w, spec: w.update(restartPolicy="Never"),
        "runPolicy.ttlSecondsAfterFinished": lambda w, spec: spec["runPolicy"].update(
            ttlSecondsAfterFinished=60
        ),
        "spec.nprocPerNode": lambda w, spec: spec.update(nprocPerNode="2"),
        "queue": lambda w, spec: spec["runPolicy"].update(schedulingPolicy={"queue": "q"}),
    }
    for line, change in changes.items():
        body = synthesize(case)[0]
        change(body["spec"]["pytorchReplicaSpecs"]["Worker"], body["spec"])
        got = differences(case.expected, body)
        assert any(d.startswith(line) for d in got), (line, got)


def _set(path: str, value: Any) -> Any:
    """A change setting ``value`` at ``path`` (dot-separated keys, ``[i]`` list items)."""

    def change(body: dict[str, Any]) -> None:
        keys = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        node: Any = body
        for key in keys[:-1]:
            node = node[int(key[1:-1])] if key.startswith("[") else node.setdefault(key, {})
        last = keys[-1]
        node[int(last[1:-1]) if last.startswith("[") else last] = value

    return change


@pytest.mark.parametrize(
    ("case_id", "path", "value", "line"),
    [
        # 18: only the number Trainer computes is left out
        ("trainer-kueue", "spec.trainer.numProcPerNode", 3, "spec.trainer"),
        # 12: num-gpus 0 alone is KubeRay's own
        (
            "ray-job-batch-inference",
            "spec.rayClusterSpec.headGroupSpec.rayStartParams.num-gpus",
            "2",
            "spec.rayClusterSpec",
        ),
        # 7: paddle-operator's default restart policy is Never, not any
        ("po-simple", "spec.worker.template.spec.restartPolicy", "OnFailure", "worker.restart"),
        # 5: a limit above the request the manifest sets alone is no Guaranteed pod
        (
            "kueue-pytorchjob",
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits.cpu",
            "4",
            "Worker.limits[cpu]",
        ),
        # 15: a pod-level user is the container's
        (
            "po-simple",
            "spec.worker.template.spec.securityContext.runAsUser",
            0,
            "worker.container.securityContext",
        ),
        # 16: replicated Jobs beside their defaults
        (
            "trainer-runtime-jax-distributed",
            "spec.template.spec.replicatedJobs[0].template.spec.parallelism",
            2,
            "spec.template",
        ),
        # 7: only 1 task per node is the flux policy's default
        ("trainer-flux-runtime", "spec.mlPolicy.flux.numProcPerNode", 2, "spec.mlPolicy"),
        # 9: a gang smaller than the job is not the operators' default
        ("kueue-pytorchjob", "spec.runPolicy.schedulingPolicy.minAvailable", 1, "runPolicy"),
    ],
)
def test_normalisations_hide_only_what_they_name(
    case_id: str, path: str, value: Any, line: str
) -> None:
    """Beside each normalisation, a changed meaning is still reported."""
    case = next(c for c in CASES if c.id == case_id)
    body, runtime = synthesize(case)
    assert differences(case.expected, body, runtime) == []
    _set(path, value)(body)
    got = differences(case.expected, body, runtime)
    assert any(d.startswith(line) for d in got), got
