"""The pods Training Operator v1.9 creates for an XGBoostJob.

Sources (kubeflow/trainer v1.9.4): the env on every container (pkg/controller.v1/xgboost/
xgboost.go SetPodEnv), success when the Master exits 0 and failure when any pod fails without
restarting (xgboostjob_controller.go UpdateJobStatus), the PodGroup like every v1 kind
(pkg/controller.v1/common/job.go).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..injected_env.xgboost_env import XGBOOSTJOB_PORT, xgboostjob_env
from ..render.xgboost import CONTAINER, PORT_NAME
from ..resolve import PlannedJob
from .admission import replica_workload
from .operator_pods import BACKOFF_COUNTS, container_port, role_pod_sets, run_policy_gang
from .podsets import Completion, EffectiveJob, EnvVar

__all__ = ["effective_xgboostjob"]

_OPERATOR = "Training Operator"
_PER_POD = {"RANK": "the pod's rank; Worker i has i + 1"}


def effective_xgboostjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    # xgboost.go getPortFromXGBoostJob: MASTER_PORT and WORKER_PORT are the port named
    # xgboostjob-port on container xgboost of the Master's and the Workers' specs (the
    # defaulting webhook adds 9999 where it is missing: xgboost_defaults.go).
    ports = {
        role: container_port(spec["xgbReplicaSpecs"], role, CONTAINER, PORT_NAME, XGBOOSTJOB_PORT)
        for role in ("Master", "Worker")
    }

    def injected(rtype: str, counts: dict[str, int], index: int) -> list[EnvVar]:
        env = xgboostjob_env(
            job=pj.object_name,
            counts=counts,
            role=rtype,
            index=index,
            master_port=ports["Master"],
            worker_port=ports["Worker"],
        )
        return [EnvVar(k, v, _OPERATOR, _PER_POD.get(k, "")) for k, v in env.items()]

    # xgboost_types.go XGBoostJobDefaultRestartPolicy: Never.
    pod_sets = role_pod_sets(
        pj, spec["xgbReplicaSpecs"], CONTAINER, injected, default_restart="Never"
    )
    # Worker i is rank i + 1 (xgboost.go adds the Master's replicas to a Worker's index).
    pod_sets = [ps if ps.role == "Master" else replace(ps, first_rank=1) for ps in pod_sets]
    total = sum(ps.count for ps in pod_sets)
    gang = run_policy_gang(pj, spec, pod_sets, total)
    notes = (
        "the job succeeds when the Master exits 0 (the Workers are not waited for) and fails "
        "when a pod fails without a restart; one process per pod, ranks 0 to "
        f"{total - 1}, which meet at the tracker the Master runs at MASTER_ADDR:MASTER_PORT",
    )
    limit = (spec.get("runPolicy") or {}).get("backoffLimit")
    completion = Completion(
        ("Master",), "all", None if limit is None else int(limit), BACKOFF_COUNTS
    )
    # kueue v0.19.2 pkg/controller/jobs/kubeflow/jobs/xgboostjob: master, then worker.
    workload = replica_workload(
        body,
        spec["xgbReplicaSpecs"],
        ("Master", "Worker"),
        (spec.get("runPolicy") or {}).get("schedulingPolicy"),
    )
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        "1",
        total,
        str(total),
        gang,
        notes,
        workload=workload,
        completion=completion,
    )
