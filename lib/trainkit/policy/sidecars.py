"""No classic sidecars: a pod runs the job's container and nothing beside it that outlives it.

A second regular container keeps the pod Running after the training process exits: the
operator never sees the pod succeed, the job never completes and its gang keeps its GPUs. A
container that must run beside training is a native sidecar (an init container with
``restartPolicy: Always``, ``InitContainer(sidecar=True)``), which the kubelet stops once the
pod's regular containers have ended (KEP-753, Kubernetes ≥ 1.29). Definitions cannot add a
container; a platform patch could, and is refused here like any other rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..effective import EffectiveJob
from ..errors import Problem
from ..model.trainer_initializers import DATASET_INITIALIZER, MODEL_INITIALIZER
from ..resolve import PlannedRuntime, problem

__all__ = ["check_sidecars"]

_RUNTIME_CONTAINER = "node"  # render/kubeflow_trainer.py NODE
# An initializer step's job runs its container named after the step, which the label names
# (render/kubeflow_trainer.py ANCESTOR_LABEL; trainer v2.3.0 pkg/constants/constants.go).
_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
_STEPS = (DATASET_INITIALIZER, MODEL_INITIALIZER)


def check_sidecars(
    jobs: Sequence[EffectiveJob],
    runtimes: Sequence[tuple[PlannedRuntime, dict[str, Any]]],
    problems: list[Problem],
) -> None:
    for ej in jobs:
        for ps in ej.pod_sets:
            extra = [
                str(c.get("name"))
                for c in ps.spec.get("containers") or []
                if c.get("name") != ps.container
            ]
            if extra:
                problems.append(
                    problem(ej.planned.definition, _message(extra, f"the {ps.role} pods"))
                )
    for pr, body in runtimes:
        for rjob in body["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = rjob["template"]["spec"]["template"]["spec"]
            labels = (rjob["template"].get("metadata") or {}).get("labels") or {}
            step = labels.get(_STEP_LABEL)
            own = step if step in _STEPS else _RUNTIME_CONTAINER
            extra = [
                str(c.get("name")) for c in pod.get("containers") or [] if c.get("name") != own
            ]
            if extra:
                where = f"the {rjob.get('name')} pods"
                problems.append(problem(pr.definition, _message(extra, where)))


def _message(extra: list[str], where: str) -> str:
    names = ", ".join(repr(n) for n in extra)
    return (
        f"{where} run container {names} beside the job's: a second container keeps each pod "
        "Running after training ends, so the job never completes and keeps its GPUs; make it "
        "a native sidecar, InitContainer(sidecar=True) (restartPolicy: Always), which stops "
        "with the job's container"
    )
