"""The pods each controller creates from what trainkit writes: one model, read by
policy (caps, queue fit), ``trainkit explain`` and ``trainkit rehearse``.

It is computed from the rendered objects, not from the definitions, so what is
checked is what the cluster will run: a GPU the TrainJob leaves out and its
runtime keeps is counted, an env variable a runtime patch adds is seen.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..resolve import PlannedJob
from .deadlines import deadline
from .jax_pods import effective_jaxjob
from .mpi_pods import effective_mpijob
from .operator_pods import effective_pytorchjob
from .paddle_pods import effective_paddlejob
from .podsets import RAY, EffectiveJob, EnvVar, Gang, PodSet
from .ray_pods import effective_raycluster, effective_rayjob
from .tf_pods import effective_tfjob
from .trainer_pods import effective_trainjob
from .xgboost_pods import effective_xgboostjob

__all__ = ["RAY", "EffectiveJob", "EnvVar", "Gang", "PodSet", "effective_job"]


def effective_job(
    pj: PlannedJob, body: dict[str, Any], runtime: dict[str, Any] | None = None
) -> EffectiveJob:
    """The pods of ``pj`` from its rendered object (and, for a TrainJob, its runtime's)."""
    return dataclasses.replace(_pods(pj, body, runtime), deadline=deadline(pj, body))


def _pods(
    pj: PlannedJob, body: dict[str, Any], runtime: dict[str, Any] | None = None
) -> EffectiveJob:
    if pj.kind == "TrainJob":
        if runtime is None:
            raise ValueError("a TrainJob's pods need its runtime's rendered object")
        return effective_trainjob(pj, body, runtime)
    if pj.kind == "MPIJob":
        return effective_mpijob(pj, body)
    if pj.kind == "TFJob":
        return effective_tfjob(pj, body)
    if pj.kind == "PaddleJob":
        return effective_paddlejob(pj, body)
    if pj.kind == "XGBoostJob":
        return effective_xgboostjob(pj, body)
    if pj.kind == "JAXJob":
        return effective_jaxjob(pj, body)
    if pj.kind == "RayJob":
        return effective_rayjob(pj, body)
    if pj.kind == "RayCluster":
        return effective_raycluster(pj, body)
    return effective_pytorchjob(pj, body)
