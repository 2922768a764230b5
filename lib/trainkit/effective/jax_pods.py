"""The pods Training Operator v1.9 creates for a JAXJob.

Sources (kubeflow/trainer v1.9.4): the env on every container (pkg/controller.v1/jax/envvar.go
setPodEnv), success when every Worker has exited 0 (jaxjob_controller.go UpdateJobStatus), the
PodGroup like every v1 kind (pkg/controller.v1/common/job.go).
"""

from __future__ import annotations

from typing import Any

from ..injected_env.jax_env import JAXJOB_PORT, jaxjob_env
from ..render.jax import CONTAINER, PORT_NAME
from ..resolve import PlannedJob
from .admission import replica_workload
from .operator_pods import BACKOFF_COUNTS, container_port, role_pod_sets, run_policy_gang
from .podsets import Completion, EffectiveJob, EnvVar

__all__ = ["effective_jaxjob"]

_OPERATOR = "Training Operator"
_PER_POD = {"PROCESS_ID": "the Worker's index"}


def effective_jaxjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    # envvar.go getPortFromJAXJob: COORDINATOR_PORT is the port named jaxjob-port on
    # container jax of the Workers' spec (jax_defaults.go adds 6666 where it is missing).
    port = container_port(spec["jaxReplicaSpecs"], "Worker", CONTAINER, PORT_NAME, JAXJOB_PORT)

    def injected(rtype: str, counts: dict[str, int], index: int) -> list[EnvVar]:
        env = jaxjob_env(job=pj.object_name, workers=sum(counts.values()), index=index, port=port)
        return [EnvVar(k, v, _OPERATOR, _PER_POD.get(k, "")) for k, v in env.items()]

    # jax_types.go JAXJobDefaultRestartPolicy: Never.
    pod_sets = role_pod_sets(
        pj, spec["jaxReplicaSpecs"], CONTAINER, injected, default_restart="Never"
    )
    total = sum(ps.count for ps in pod_sets)
    gang = run_policy_gang(pj, spec, pod_sets, total)
    notes = (
        "the job succeeds when every Worker exits 0; one JAX process per pod "
        f"(NUM_PROCESSES={total}), which jax.distributed.initialize() connects through the "
        "coordinator on Worker 0; each process uses its pod's GPUs as local devices",
    )
    limit = (spec.get("runPolicy") or {}).get("backoffLimit")
    completion = Completion(
        ("Worker",), "all", None if limit is None else int(limit), BACKOFF_COUNTS
    )
    # kueue v0.19.2 pkg/controller/jobs/kubeflow/jobs/jaxjob: one pod set, worker.
    workload = replica_workload(
        body,
        spec["jaxReplicaSpecs"],
        ("Worker",),
        (spec.get("runPolicy") or {}).get("schedulingPolicy"),
    )
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        "1",
        total,
        None,
        gang,
        notes,
        workload=workload,
        completion=completion,
    )
