"""What a Trainer runtime adds to the container that runs the training (``node``): init
containers, native sidecars, ports, probes and lifecycle hooks.

A TrainJob cannot carry them (its runtime patches hold only env, mounts and security context),
so the platform sets them on the runtime, under the same rules as the operator kinds' fields
(``init_containers``, ``pod_settings``, ``probes``, ``lifecycle``). They go on every pod that
runs the training: each node, and an MPI launcher only when it runs ranks; never on an
initializer step's pods.

Trainer copies the runtime's pod templates into the JobSet as they are (trainer v2.3.0
pkg/runtime/framework/plugins/jobset/builder.go starts from the runtime's JobSet spec and only
upserts the node container's image, command, args, env and resources), so what is rendered on
the runtime is what every TrainJob's pods run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..kube.expansion import references
from .init_containers import InitContainer, check_init_containers
from .job import SHM_VOLUME
from .lifecycle import Hook, check_hooks
from .pod_settings import check_operator_port
from .probes import Probe, check_probes
from .trainer_initializers import INITIALIZER_VOLUME

__all__ = ["RUNTIME_KIND", "check_runtime_node", "pre_stop_grace_problem", "runtime_volumes"]

RUNTIME_KIND = "TrainJob"
"""The kind whose pods a runtime's settings end up in (messages, ``operator_ports``)."""


class _MPI(Protocol):
    @property
    def ssh_port(self) -> int: ...


class _Runtime(Protocol):
    @property
    def shm_size(self) -> str | None: ...
    @property
    def initializers(self) -> object | None: ...
    @property
    def mpi(self) -> _MPI | None: ...
    @property
    def init_containers(self) -> Sequence[InitContainer]: ...
    @property
    def ports(self) -> dict[str, int]: ...
    @property
    def readiness_probe(self) -> Probe | None: ...
    @property
    def liveness_probe(self) -> Probe | None: ...
    @property
    def startup_probe(self) -> Probe | None: ...
    @property
    def post_start(self) -> Hook | None: ...
    @property
    def pre_stop(self) -> Hook | None: ...


def runtime_volumes(rt: _Runtime) -> list[str]:
    """The volumes of a node pod an init container may mount: ``/dev/shm`` (``shm_size``)
    and the initializers' workspace, which JobSet adds to a pod whose containers mount it by
    name (jobset v0.12.0 pkg/controllers/volume_claim_policy.go addVolumes)."""
    out = [SHM_VOLUME] if rt.shm_size is not None else []
    if rt.initializers is not None:
        out.append(INITIALIZER_VOLUME)
    return out


def _expanded(ic: InitContainer, field: str) -> None:
    """Every ``$(VAR)`` of the init container's command, args and env values names one of its
    own variables (an env value: one before it), which is all it has: the kubelet leaves any
    other as written (``kube.expansion``). On the operator kinds the policy checks this on the
    effective pods (``policy/env_expansion.py``); a runtime's has no job behind it."""
    names = list(ic.env)
    for text in [*ic.command, *ic.args]:
        for ref in references(text):
            if ref.name not in names:
                raise ValueError(
                    f"{field}: $({ref.name}) names none of its env, and the kubelet expands "
                    f"only those, leaving $({ref.name}) as written; set {ref.name} in its env, "
                    f"or write $$({ref.name}) for the literal text"
                )
    for i, (name, value) in enumerate(ic.env.items()):
        for ref in references(value):
            if ref.name not in names[:i]:
                raise ValueError(
                    f"{field}.env.{name}: $({ref.name}) names no variable before {name} in its "
                    f"env, and the kubelet expands an env value only with those; put "
                    f"{ref.name} first, or write $$({ref.name}) for the literal text"
                )


def check_runtime_node(rt: _Runtime) -> None:
    """The node settings' rules; raises ValueError for the runtime's model validator."""
    check_init_containers(rt.init_containers, runtime_volumes(rt))
    for i, ic in enumerate(rt.init_containers):
        _expanded(ic, f"init_containers[{i}]")
    if rt.mpi is not None:
        check_operator_port("mpi.ssh_port", rt.mpi.ssh_port, rt.ports, "nodes' sshd")
        if rt.readiness_probe is not None:
            # render/kubeflow_trainer.py _mpi_runtime: the nodes' readiness is sshd accepting
            # connections, which the launcher waits for (JobSet dependsOn Ready).
            raise ValueError(
                "readiness_probe on an MPI runtime has no place: a node is ready when its sshd "
                "accepts connections (mpi.ssh_port, mpi.probe_delay), which the launcher waits "
                "for; drop readiness_probe"
            )
    # JobSet publishes the pods' DNS names before they are ready (jobset v0.12.0
    # pkg/webhooks/jobset_webhook.go Default: network.publishNotReadyAddresses true), so a
    # readiness probe hides no node from the rendezvous.
    check_probes(
        {
            "readiness_probe": rt.readiness_probe,
            "liveness_probe": rt.liveness_probe,
            "startup_probe": rt.startup_probe,
        },
        rt.ports,
        RUNTIME_KIND,
    )
    # A TrainJob may set its own grace period; resolve/ checks the hook against it.
    check_hooks({"post_start": rt.post_start, "pre_stop": rt.pre_stop}, rt.ports, None)


def pre_stop_grace_problem(rt: _Runtime, grace_period: int | None) -> str | None:
    """Why a TrainJob's ``termination_grace_period`` (in its runtime patch, over the pod's)
    leaves its runtime's ``pre_stop`` no time (``check_hooks``), else None."""
    try:
        check_hooks({"the runtime's pre_stop": rt.pre_stop}, rt.ports, grace_period)
    except ValueError as e:
        return str(e)
    return None
