"""How the kubelet checks the job's container: readiness, liveness and startup probes.

A probe runs as the container (``exec``) or from the node to the pod's own IP (``http_get``,
``tcp_socket``, ``grpc``): it gives the job no reach it lacks. The fields that would (an HTTP
probe's ``host``, which makes the kubelet send requests from the node to any address, and its
headers) are not offered, so probes need no grant.

A liveness probe is the dangerous one for training: when it fails the kubelet kills the
container. Under ``OnFailure`` it restarts in place, a rank of a static group (torchrun's
rendezvous, MPI, a TF or XGBoost cluster) that the others no longer wait for, so the job hangs
until a timeout or fails; under ``Never`` or ``ExitCode`` the pod fails with exit code 137 and
the operator's restart policy and backoff limit decide. A busy rank (a long collective, a
checkpoint) must not look dead, so a liveness probe may not declare a container dead in less
than ``MIN_LIVENESS_WINDOW`` seconds.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from .base import TrainkitModel
from .fields import Arg
from .pod_settings import PortName, PortNumber

__all__ = ["MIN_LIVENESS_WINDOW", "Probe", "check_probes", "http_path"]

# Kinds whose pods find each other through headless Services that list only ready pods: a pod
# whose readiness probe has not passed has no DNS name, so the others cannot reach it by name
# (the rendezvous, the tracker, the hostfile). training-operator v1.9.4
# pkg/controller.v1/common/service.go CreateNewService sets no publishNotReadyAddresses;
# mpi-operator (v0.8, pkg/controller/mpi_job_controller.go newService) sets it only when the
# launcher runs as a worker. KubeRay publishes the head anyway (v1.7.0
# ray-operator/controllers/ray/common/service.go), so a RayJob may have one.
_HIDES_UNREADY = {
    "PyTorchJob": "the Training Operator's",
    "TFJob": "the Training Operator's",
    "XGBoostJob": "the Training Operator's",
    "JAXJob": "the Training Operator's",
    "PaddleJob": "the Training Operator's",
    "MPIJob": "mpi-operator's",
}

MIN_LIVENESS_WINDOW = 60
"""Fewest seconds of failed checks (``failure_threshold`` × ``period``) before a liveness probe
may kill a training container."""


def http_path(v: str) -> str:
    if not v.startswith("/") or any(c.isspace() for c in v):
        raise ValueError(f"{v!r} is not an HTTP path: start with '/', no spaces, e.g. '/healthz'")
    return v


class Probe(TrainkitModel):
    """One check of the job's container, by exactly one of ``exec``, ``http_get``,
    ``tcp_socket`` and ``grpc``: ``Probe(http_get="/healthz", port="status")``,
    ``Probe(exec=["test", "-f", "/tmp/ready"])``."""

    exec: list[Arg] | None = None
    """A command run in the container; exit 0 passes."""
    http_get: Annotated[str, AfterValidator(http_path)] | None = None
    """An HTTP path the kubelet GETs on the pod's IP at ``port``; a status 200-399 passes."""
    tcp_socket: bool = False
    """Pass when the kubelet can open a TCP connection to ``port``."""
    grpc: bool = False
    """The gRPC health check (grpc.health.v1) on ``port``, a number."""
    port: PortName | PortNumber | None = None
    """For ``http_get``, ``tcp_socket`` and ``grpc``: a number, or the name of one of the
    job's ``ports``."""
    initial_delay: int = Field(default=0, ge=0, le=86400)
    """Seconds after the container starts before the first check."""
    period: int = Field(default=10, ge=1, le=3600)
    """Seconds between checks."""
    timeout: int = Field(default=1, ge=1, le=3600)
    """Seconds a check may take."""
    failure_threshold: int = Field(default=3, ge=1, le=1000)
    """Failed checks in a row that count as a failure."""
    success_threshold: int = Field(default=1, ge=1, le=1000)
    """Passed checks in a row that count as a success (1 for liveness and startup probes)."""

    @model_validator(mode="after")
    def _one_handler(self) -> Probe:
        given = [
            name
            for name, on in (
                ("exec", self.exec is not None),
                ("http_get", self.http_get is not None),
                ("tcp_socket", self.tcp_socket),
                ("grpc", self.grpc),
            )
            if on
        ]
        if len(given) != 1:
            raise ValueError(
                f"a probe checks one way, and this one gives {', '.join(given) or 'none'}; "
                "give exactly one of exec=[…], http_get='/path', tcp_socket=True, grpc=True"
            )
        if self.exec is not None and not self.exec:
            raise ValueError("exec is empty; give the command to run, e.g. ['test', '-f', 'x']")
        if given[0] == "exec" and self.port is not None:
            raise ValueError("an exec probe takes no port; drop port=")
        if given[0] != "exec" and self.port is None:
            raise ValueError(f"a {given[0]} probe needs port=, a number or a name of ports")
        if self.grpc and not isinstance(self.port, int):
            # validation.go validateGRPCAction: grpc.port is a number (int32), never a name.
            raise ValueError(f"a grpc probe's port is a number, not {self.port!r}")
        if self.timeout > self.period:
            raise ValueError(
                f"timeout {self.timeout} s is longer than the period {self.period} s: checks "
                "would overlap; make timeout at most the period"
            )
        return self

    def render(self) -> dict[str, object]:
        """The container's probe."""
        out: dict[str, object] = {}
        if self.exec is not None:
            out["exec"] = {"command": list(self.exec)}
        elif self.http_get is not None:
            out["httpGet"] = {"path": self.http_get, "port": self.port}
        elif self.tcp_socket:
            out["tcpSocket"] = {"port": self.port}
        else:
            out["grpc"] = {"port": self.port}
        out |= {
            "initialDelaySeconds": self.initial_delay,
            "periodSeconds": self.period,
            "timeoutSeconds": self.timeout,
            "failureThreshold": self.failure_threshold,
            "successThreshold": self.success_threshold,
        }
        return out

    def summary(self) -> str:
        """``GET :status/healthz every 10 s after 0 s, failing after 3``."""
        if self.exec is not None:
            how = "runs " + " ".join(self.exec)
        elif self.http_get is not None:
            how = f"GET :{self.port}{self.http_get}"
        else:
            how = f"{'TCP' if self.tcp_socket else 'gRPC'} :{self.port}"
        return (
            f"{how} every {self.period} s after {self.initial_delay} s, failing after "
            f"{self.failure_threshold}"
        )


def check_probes(probes: dict[str, Probe | None], ports: dict[str, int], kind: str) -> None:
    """``probes`` by field name (``readiness_probe``, ``liveness_probe``, ``startup_probe``):
    named ports the job declares, one success for liveness and startup
    (validation.go validateLivenessProbe, validateStartupProbe), and no liveness probe quicker
    than ``MIN_LIVENESS_WINDOW`` to kill a training container."""
    for field, probe in probes.items():
        if probe is None:
            continue
        if isinstance(probe.port, str) and probe.port not in ports:
            raise ValueError(
                f"{field} checks port {probe.port!r}, which ports does not name (it names "
                f"{', '.join(repr(p) for p in ports) or 'none'}); add it to ports, or give the "
                "number"
            )
        if field != "readiness_probe" and probe.success_threshold != 1:
            raise ValueError(
                f"{field}.success_threshold must be 1 (the API server refuses another); "
                "leave it out"
            )
        if field == "readiness_probe" and kind in _HIDES_UNREADY:
            raise ValueError(
                f"readiness_probe: {_HIDES_UNREADY[kind]} headless Services give a {kind}'s pod "
                "a DNS name only once it is ready, so until the probe passes the other pods "
                "cannot reach it by name (the rendezvous, the tracker or the hostfile waits or "
                "fails); drop readiness_probe (a startup or liveness probe hides nothing)"
            )
        window = probe.failure_threshold * probe.period
        if field == "liveness_probe" and window < MIN_LIVENESS_WINDOW:
            raise ValueError(
                f"liveness_probe kills the container after {window} s of failed checks "
                f"({probe.failure_threshold} × {probe.period} s): a {kind}'s rank that is "
                "busy (a long collective, a checkpoint) would be killed, and a killed rank "
                "fails or hangs the whole job; make failure_threshold × period at least "
                f"{MIN_LIVENESS_WINDOW} s, or use a readiness probe, which kills nothing"
            )
