"""The ports each operator (or the program it starts) uses in a job's containers.

A port a definition declares says its program listens there; on one of these the program and
the operator's rendezvous, tracker, sshd or Ray service would fight over it, and a port name
the operator looks its own port up by would be taken. Sources, at the pinned versions:
training-operator v1.9.4 pkg/apis/kubeflow.org/v1/*_types.go (``<kind>-port`` and its default
number; PaddleJob's ``master``); paddle-operator controllers/paddlejob_helper.go (a random
port in 36000-55999 and the 20 after it, or 36000 behind Services); mpi-operator v0.7
(sshd, on ``HOST_NETWORK_SSH_PORT`` on the host network); KubeRay v1.7.0
ray-operator/controllers/ray/utils/constant.go (client, GCS, dashboard, metrics and
dashboard-agent ports and names); Kubeflow Trainer v2.3.0 (pkg/constants/constants.go
ContainerTrainerPort 29500, the torch master, JAX coordinator and XGBoost tracker;
plugins/flux/templates/broker.toml default_port 8050, the Flux broker).
"""

from __future__ import annotations

from dataclasses import dataclass

from .jax_env import JAXJOB_PORT
from .kubeflow_trainer_env import TRAINER_MASTER_PORT
from .kuberay_env import RAY_GCS_PORT
from .paddle_env import PADDLEJOB_PORT
from .tensorflow_env import TFJOB_PORT
from .training_operator_env import PYTORCHJOB_MASTER_PORT
from .xgboost_env import XGBOOSTJOB_PORT

__all__ = ["OperatorPorts", "operator_ports"]


@dataclass(frozen=True)
class OperatorPorts:
    """What one kind's operator uses: port numbers (``low``..``high`` ranges) and port names,
    each with who uses it."""

    ranges: tuple[tuple[int, int, str], ...]
    names: tuple[tuple[str, str], ...]

    def number_reason(self, port: int) -> str | None:
        for low, high, who in self.ranges:
            if low <= port <= high:
                return who
        return None

    def name_reason(self, name: str) -> str | None:
        return next((who for n, who in self.names if n == name), None)


def _one(port: int, name: str, who: str) -> OperatorPorts:
    return OperatorPorts(((port, port, who),), ((name, who),))


_SSH = "sshd, which mpi-operator's launcher reaches the workers through"
_KUBERAY = "KubeRay's Ray pods"
_BY_KIND = {
    "PyTorchJob": _one(PYTORCHJOB_MASTER_PORT, "pytorchjob-port", "the Training Operator's "
                       "rendezvous (MASTER_PORT, pytorchjob-port)"),
    "TFJob": _one(TFJOB_PORT, "tfjob-port", "TF_CONFIG's cluster, at tfjob-port"),
    "XGBoostJob": _one(XGBOOSTJOB_PORT, "xgboostjob-port", "XGBoost's tracker, at "
                       "xgboostjob-port"),
    "JAXJob": _one(JAXJOB_PORT, "jaxjob-port", "JAX's coordinator, at jaxjob-port"),
    "PaddleJob": OperatorPorts(
        (
            (PADDLEJOB_PORT, PADDLEJOB_PORT, "the Training Operator's PaddleJob rendezvous"),
            (36000, 56018, "paddle-operator's endpoints (a random port in 36000-55999 and "
             "the 19 after it)"),
        ),
        (("master", "the Training Operator's PaddleJob rendezvous (port master)"),),
    ),
    "MPIJob": OperatorPorts(
        ((22, 22, _SSH), (2222, 2222, f"{_SSH} on the host network")), (("ssh", _SSH),)
    ),
    "RayJob": OperatorPorts(
        (
            (RAY_GCS_PORT, RAY_GCS_PORT, f"{_KUBERAY}: the GCS server"),
            (8265, 8265, f"{_KUBERAY}: the dashboard"),
            (10001, 10001, f"{_KUBERAY}: the Ray client server"),
            (8080, 8080, f"{_KUBERAY}: the metrics export"),
            (52365, 52365, f"{_KUBERAY}: the dashboard agent"),
        ),
        tuple(
            (n, f"{_KUBERAY}' port {n}")
            for n in ("client", "redis", "gcs", "gcs-server", "dashboard", "metrics",
                      "dashboard-agent")
        ),
    ),
    "TrainJob": OperatorPorts(
        (
            (TRAINER_MASTER_PORT, TRAINER_MASTER_PORT, "Kubeflow Trainer's rendezvous (the "
             "torch master, JAX's coordinator, XGBoost's tracker)"),
            (8050, 8050, "the Flux broker Trainer's Flux plugin starts"),
        ),
        (),
    ),
}  # fmt: skip


_BY_KIND["RayCluster"] = _BY_KIND["RayJob"]  # the same Ray pods, without a submitter


def operator_ports(kind: str) -> OperatorPorts:
    """The ports ``kind``'s operator uses (none for a kind without its own)."""
    return _BY_KIND.get(kind, OperatorPorts((), ()))
