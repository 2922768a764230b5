"""The pods Training Operator v1.9 creates for a TFJob.

Sources (kubeflow/trainer v1.9.4): TF_CONFIG on container ``tensorflow`` when the job has
more than one pod (pkg/controller.v1/tensorflow/tensorflow.go), success with a Chief or by
Worker 0 or all Workers (tfjob_controller.go UpdateJobStatus), the PodGroup like every v1 kind
(pkg/controller.v1/common/job.go).
"""

from __future__ import annotations

from typing import Any

from ..injected_env import tf_config
from ..render.tensorflow import CONTAINER
from ..resolve import PlannedJob
from .operator_pods import role_pod_sets, run_policy_gang
from .podsets import EffectiveJob, EnvVar

__all__ = ["effective_tfjob"]

_OPERATOR = "Training Operator"


def effective_tfjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]

    def injected(rtype: str, counts: dict[str, int]) -> list[EnvVar]:
        config = tf_config(
            job=pj.object_name, namespace=pj.namespace, counts=counts, role=rtype, index=0
        )
        return (
            []
            if config is None
            else [EnvVar("TF_CONFIG", config, _OPERATOR, "the pod's task index")]
        )

    pod_sets = role_pod_sets(pj, spec["tfReplicaSpecs"], CONTAINER, injected)
    counts = {ps.role: ps.count for ps in pod_sets}
    total = sum(counts.values())
    gang = run_policy_gang(pj, spec, pod_sets, total)
    if "Chief" in counts:
        done = "the job succeeds when the Chief exits 0"
    elif spec.get("successPolicy") == "AllWorkers":
        done = "the job succeeds when every Worker exits 0"
    else:
        done = "the job succeeds when Worker 0 exits 0"
    notes = [f"{done}; TF_CONFIG tells each pod the cluster and its task (type and index)"]
    if "PS" in counts:
        notes.append("parameter servers run until the job ends; clean_pods stops them")
    return EffectiveJob(pj, tuple(pod_sets), "1", total, None, gang, tuple(notes))
