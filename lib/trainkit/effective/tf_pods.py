"""The pods Training Operator v1.9 creates for a TFJob.

Sources (kubeflow/trainer v1.9.4): TF_CONFIG on container ``tensorflow`` when the job has
more than one pod, each type's addresses at its ``tfjob-port`` (pkg/controller.v1/tensorflow/
tensorflow.go genClusterSpec, util.go isDistributed, GetPortFromTFJob), the Never restart
default (pkg/apis/kubeflow.org/v1/tensorflow_types.go), success with a Chief or Master, else
by Worker 0 or, under ``successPolicy: AllWorkers``, every Worker (tfjob_controller.go
UpdateJobStatus), the PodGroup like every v1 kind (pkg/controller.v1/common/job.go), Kueue's
pod sets in the order Chief, Master, PS, Worker, Evaluator (kueue v0.19.2
pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go OrderedReplicaTypes).
"""

from __future__ import annotations

from typing import Any

from ..injected_env.tensorflow_env import TFJOB_PORT, tf_config
from ..render.tensorflow import CONTAINER
from ..resolve import PlannedJob
from .admission import replica_workload
from .operator_pods import BACKOFF_COUNTS, container_port, role_pod_sets, run_policy_gang
from .podsets import Completion, EffectiveJob, EnvVar

__all__ = ["effective_tfjob"]

_OPERATOR = "Training Operator"
_KUEUE_ORDER = ("Chief", "Master", "PS", "Worker", "Evaluator")


def effective_tfjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    replicas = spec["tfReplicaSpecs"]
    ports = {
        rtype: container_port(replicas, rtype, CONTAINER, "tfjob-port", TFJOB_PORT)
        for rtype in replicas
    }

    def injected(rtype: str, counts: dict[str, int], index: int) -> list[EnvVar]:
        config = tf_config(
            job=pj.object_name,
            namespace=pj.namespace,
            counts=counts,
            role=rtype,
            index=index,
            ports=ports,
        )
        return (
            []
            if config is None
            else [EnvVar("TF_CONFIG", config, _OPERATOR, "the pod's task index")]
        )

    pod_sets = role_pod_sets(pj, replicas, CONTAINER, injected, default_restart="Never")
    counts = {ps.role: ps.count for ps in pod_sets}
    total = sum(counts.values())
    gang = run_policy_gang(pj, spec, pod_sets, total)
    lead = next((r for r in ("Chief", "Master") if r in counts), None)
    if lead is not None:
        done = f"the job succeeds when the {lead} exits 0"
        completion = Completion((lead,), "all", _backoff(spec), BACKOFF_COUNTS)
    elif spec.get("successPolicy") == "AllWorkers":
        done = "the job succeeds when every Worker exits 0"
        completion = Completion(("Worker",), "all", _backoff(spec), BACKOFF_COUNTS)
    else:
        done = "the job succeeds when Worker 0 exits 0"
        completion = Completion(("Worker",), "first", _backoff(spec), BACKOFF_COUNTS)
    notes = [f"{done}; TF_CONFIG tells each pod the cluster and its task (type and index)"]
    if "PS" in counts:
        notes.append("parameter servers run until the job ends; clean_pods stops them")
    workload = replica_workload(
        body, replicas, _KUEUE_ORDER, (spec.get("runPolicy") or {}).get("schedulingPolicy")
    )
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        "1",
        total,
        None,
        gang,
        tuple(notes),
        workload=workload,
        completion=completion,
    )


def _backoff(spec: dict[str, Any]) -> int | None:
    limit = (spec.get("runPolicy") or {}).get("backoffLimit")
    return None if limit is None else int(limit)
