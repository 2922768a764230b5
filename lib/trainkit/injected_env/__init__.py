"""What the operators inject into training containers: one module per operator, one shape.

Each ``*_env`` module holds one operator's contract beside the renderer of the same name
(``training_operator_env`` for ``render/training_operator.py``, …): the env it gives a pod,
its ports, and its ``ReservedEnv`` (``reserved_env.py``), the names a definition may not set
because the operator would override or duplicate them. The models refuse those names through
``refused_env_reason``; the effective pods and the rehearsal compute the same values.
"""

from __future__ import annotations

from .device_env import DEVICES
from .jax_env import JAXJOB
from .kubeflow_trainer_env import TRAINJOB
from .kuberay_env import RAYJOB
from .mpi_operator_env import MPIJOB
from .paddle_env import PADDLEJOB
from .reserved_env import ReservedEnv
from .tensorflow_env import TFJOB
from .training_operator_env import PYTORCHJOB
from .xgboost_env import XGBOOSTJOB

__all__ = ["ReservedEnv", "refused_env_reason"]

_BY_KIND: dict[str, ReservedEnv] = {
    kind: reserved
    for reserved in (PYTORCHJOB, MPIJOB, TFJOB, PADDLEJOB, RAYJOB, XGBOOSTJOB, JAXJOB, TRAINJOB)
    for kind in reserved.kinds
}


def refused_env_reason(name: str, kind: str) -> str | None:
    """Why a definition of ``kind`` (``PyTorchJob``, ``TrainJob``, a runtime) may not set
    ``name``: the operator or torchrun sets it, or it changes the pod's hardware. Any kind
    without its own operator (a TrainJob's runtime) follows Kubeflow Trainer."""
    return DEVICES.reason(name) or _BY_KIND.get(kind, TRAINJOB).reason(name)
