"""What the kubelet runs in the job's container right after it starts (``post_start``) and
before it is stopped (``pre_stop``): container lifecycle hooks.

A hook runs as the container (``exec``), as a GET from the node to the pod's own IP
(``http_get``) or as a pause (``sleep``). The HTTP hook's ``host`` (the kubelet would send the
request from the node to any address) is not offered, as for probes; nor is ``tcpSocket``,
which Kubernetes keeps only for old manifests and never runs as a hook.

A ``pre_stop`` hook spends the pod's grace period: the kubelet runs it first, waits for it at
most the grace period, and only then sends SIGTERM with what is left, at least 2 s
(kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer and
executePreStopHook; minimumGracePeriodInSeconds). A hook as long as the grace period leaves the
training program no time to write its checkpoint, so a ``pre_stop`` sleep must be shorter.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from .base import TrainkitModel
from .fields import Arg
from .pod_settings import PortName, PortNumber
from .probes import http_path

__all__ = ["DEFAULT_GRACE_PERIOD", "Hook", "check_hooks"]

DEFAULT_GRACE_PERIOD = 30
"""Kubernetes' ``terminationGracePeriodSeconds`` when the pod gives none."""


class Hook(TrainkitModel):
    """One action of the kubelet on the job's container, by exactly one of ``exec``,
    ``http_get`` and ``sleep``: ``Hook(exec=["ray", "stop"])``, ``Hook(sleep=5)``."""

    exec: list[Arg] | None = None
    """A command run in the container, e.g. ``["/bin/sh", "-c", "ray stop"]``."""
    http_get: Annotated[str, AfterValidator(http_path)] | None = None
    """An HTTP path the kubelet GETs on the pod's IP at ``port``."""
    port: PortName | PortNumber | None = None
    """For ``http_get``: a number, or the name of one of the job's ``ports``."""
    sleep: int | None = Field(default=None, ge=1, le=3600)
    """Seconds the kubelet waits (Kubernetes 1.30 or later), e.g. to let a load balancer or
    the other ranks notice before the container is stopped."""

    @model_validator(mode="after")
    def _one_action(self) -> Hook:
        given = [
            name
            for name, on in (
                ("exec", self.exec is not None),
                ("http_get", self.http_get is not None),
                ("sleep", self.sleep is not None),
            )
            if on
        ]
        if len(given) != 1:
            raise ValueError(
                f"a hook does one thing, and this one gives {', '.join(given) or 'none'}; "
                "give exactly one of exec=[…], http_get='/path' (with port=), sleep=seconds"
            )
        if self.exec is not None and not self.exec:
            raise ValueError("exec is empty; give the command to run, e.g. ['ray', 'stop']")
        if given[0] == "http_get" and self.port is None:
            raise ValueError("an http_get hook needs port=, a number or a name of ports")
        if given[0] != "http_get" and self.port is not None:
            raise ValueError(f"a {given[0]} hook takes no port; drop port=")
        return self

    def render(self) -> dict[str, Any]:
        """The ``LifecycleHandler``."""
        if self.exec is not None:
            return {"exec": {"command": list(self.exec)}}
        if self.http_get is not None:
            return {"httpGet": {"path": self.http_get, "port": self.port}}
        return {"sleep": {"seconds": self.sleep}}


def check_hooks(
    hooks: dict[str, Hook | None], ports: dict[str, int], grace_period: int | None
) -> None:
    """``hooks`` by field name (``post_start``, ``pre_stop``): named ports the job declares,
    and a ``pre_stop`` sleep shorter than the grace period it spends."""
    for field, hook in hooks.items():
        if hook is None:
            continue
        if isinstance(hook.port, str) and hook.port not in ports:
            raise ValueError(
                f"{field} calls port {hook.port!r}, which ports does not name (it names "
                f"{', '.join(repr(p) for p in ports) or 'none'}); add it to ports, or give the "
                "number"
            )
    grace = DEFAULT_GRACE_PERIOD if grace_period is None else grace_period
    for field, hook in hooks.items():
        if not field.endswith("pre_stop") or hook is None or hook.sleep is None:
            continue
        if hook.sleep < grace:
            continue
        raise ValueError(
            f"{field} sleeps {hook.sleep} s but the pod's grace period is {grace} s: the "
            "kubelet runs the hook within the grace period and sends SIGTERM only after it, "
            "with at most 2 s left, so the program could not stop cleanly (write its "
            "checkpoint); sleep less than termination_grace_period, or raise "
            "termination_grace_period"
        )
