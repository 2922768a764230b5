"""The PaddleJob (``kubeflow.org/v1``, Training Operator v1.9) definition.

Rules cite kubeflow/trainer at v1.9.4: pkg/webhooks/paddlepaddle/paddlepaddle_webhook.go (roles
Master and Worker, container ``paddle``), pkg/controller.v1/paddlepaddle/envvar.go (the
rendezvous and the server/trainer split) and paddlepaddle_controller.go (when the job
succeeds). paddle-operator's ``batch.paddlepaddle.org`` PaddleJob is another kind, not this one.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import model_validator

from .operator_job import Role, RoleJob
from .pod_settings import PortNumber, check_operator_port

__all__ = [
    "PADDLE_OPERATOR",
    "PADDLE_ROLES",
    "PaddleJob",
    "paddle_operator_problems",
    "training_operator_problems",
]

PADDLE_ROLES = ("Master", "Worker")
"""Replica types the webhook allows; Master is the parameter servers of ``mode="ps"``."""


class PaddleJob(RoleJob):
    """A PaddlePaddle job: ``nodes`` Workers started with ``python -m
    paddle.distributed.launch``; collective (workers only) or parameter servers (``mode="ps"``
    with ``ps=Role(...)``, the operator's Master replicas)."""

    mode: Literal["collective", "ps"] = "collective"
    """``collective``: the Workers all-reduce (GPU training, seed 001's DDP-like mode);
    ``ps``: parameter servers hold the parameters and the Workers push gradients to them."""
    ROLE_FIELDS: ClassVar[dict[str, str]] = {"ps": "Master", "heter": "Heter"}

    ps: Role | None = None
    """The parameter servers of ``mode="ps"``, e.g. ``Role(replicas=2,
    resources=Resources(cpu=16, memory="64Gi"))``; a setting left out is the job's."""
    heter: Role | None = None
    """paddle-operator only, ``mode="ps"``: heterogeneous workers (``spec.heter``), e.g. GPU
    pods beside CPU trainers, which fleet runs as role HETER."""
    with_gloo: Literal[0, 1, 2] | None = None
    """paddle-operator only, ``mode="ps"``: Gloo for the trainers' barriers (``withGloo``):
    0 off, 1 on the workers, 2 on the servers too."""
    intranet: Literal["PodIP", "Service"] | None = None
    """paddle-operator only: how the pods reach each other, by pod IP (the operator's default)
    or through a Service per pod, which survives a pod's restart on another IP. The host
    network comes from a network profile the platform grants, never from here."""

    master_port: PortNumber | None = None
    """The Training Operator's rendezvous port (``PADDLE_MASTER``'s): the container port named
    ``master`` on every pod, which the operator reads back (default 36543, the operator's).
    Set it where the program expects another one (``master_port=37777``); it must differ from
    the job's ``ports``. Not on paddle-operator, which picks its own ports."""

    @model_validator(mode="after")
    def _coherent(self) -> PaddleJob:
        # pkg/controller.v1/paddlepaddle/envvar.go getPortFromPaddleJob: the rendezvous is the
        # container port named master; a port of the job's own with that number would fight
        # over it.
        check_operator_port("master_port", self.master_port, self.ports, "rendezvous")
        if self.mode == "ps" and self.ps is None:
            raise ValueError(
                "mode='ps' needs parameter servers: add ps=Role(replicas=..., resources=...), "
                "or use mode='collective'"
            )
        if self.mode == "collective" and self.ps is not None:
            raise ValueError(
                "a collective job has no parameter servers: drop ps=, or set mode='ps'"
            )
        if self.mode == "collective" and self.heter is not None:
            raise ValueError(
                "heter workers serve parameter servers, which a collective job has none of: "
                "drop heter=, or set mode='ps'"
            )
        if self.mode == "collective" and self.with_gloo:
            # controllers/paddlejob_helper.go constructConfigMap: PADDLE_WITH_GLOO only with
            # parameter servers.
            raise ValueError(
                "with_gloo sets up Gloo beside parameter servers, which a collective job has "
                "none of (paddle-operator ignores it there): drop it, or set mode='ps'"
            )
        self._check_role_names()
        return self

    def replica_counts(self) -> dict[str, int]:
        """Pods per replica type: the parameter servers are the operator's ``Master``."""
        counts = {"Master": self.ps.replicas} if self.ps is not None else {}
        counts |= {"Worker": self.nodes}
        return counts | ({"Heter": self.heter.replicas} if self.heter is not None else {})


PADDLE_OPERATOR = "paddle-operator"
"""The Cluster.operators entry under which PaddleJobs are ``batch.paddlepaddle.org/v1``."""


def training_operator_problems(job: PaddleJob) -> list[tuple[str, str]]:
    """``(field, why)`` for paddle-operator's settings, which the Training Operator's
    PaddleJob (``kubeflow.org/v1``) has no field for."""
    return [
        (
            field,
            f"{field} is paddle-operator's (batch.paddlepaddle.org); the Training Operator's "
            "PaddleJob has no such setting: drop it, or run on a cluster whose operators list "
            "paddle-operator",
        )
        for field in ("heter", "with_gloo", "intranet")
        if getattr(job, field) is not None
    ]


def paddle_operator_problems(job: PaddleJob) -> list[tuple[str, str]]:
    """``(field, why)`` for what paddle-operator (v0.3.5) cannot run as written: it has no
    backoff limit or job deadline, and a pod it lets the kubelet restart on failure restarts
    forever, holding its gang's GPUs (api/v1/paddlejob_types.go; controllers/
    paddlejob_helper.go constructPod keeps the template's restartPolicy)."""
    out = []
    given = job.model_fields_set
    if "restart_policy" in given and job.restart_policy != "Never":
        out.append(
            (
                "restart_policy",
                f"{job.restart_policy!r} would restart a failing pod forever on paddle-operator, "
                "which has no backoff limit; its pods never restart (a failed pod fails the "
                "job): drop restart_policy or set 'Never'",
            )
        )
    for field, role in job.roles().items():
        if role.restart_policy not in (None, "Never"):
            out.append(
                (
                    f"{field}.restart_policy",
                    f"{role.restart_policy!r} would restart a failing {field} pod forever on "
                    "paddle-operator, which has no backoff limit; its pods never restart: drop "
                    f"{field}.restart_policy or set 'Never'",
                )
            )
    if job.master_port is not None:
        # controllers/paddlejob_helper.go: its endpoints are a random port in 36000-55999 (or
        # 36000 behind Services), whatever the template's ports say.
        out.append(
            (
                "master_port",
                "paddle-operator picks its own ports (a random one in 36000-55999, or 36000 "
                "with intranet='Service') and reads no master port: drop master_port",
            )
        )
    if "backoff_limit" in given:
        out.append(
            (
                "backoff_limit",
                "paddle-operator has no backoff limit: a failed pod fails the job; drop it",
            )
        )
    # Its CRD (config/crd/bases/batch.paddlepaddle.org_paddlejobs.yaml at v0.3.5) predates
    # native sidecars and AppArmor fields: the API server would prune them, turning a sidecar
    # into an init container that never ends and dropping the profile unseen.
    for i, ic in enumerate(job.init_containers):
        if ic.sidecar:
            out.append(
                (
                    f"init_containers[{i}]",
                    "paddle-operator's CRD has no init container restartPolicy, so the API "
                    "server would drop sidecar=True and the pod would wait for it forever; run "
                    "it before training (sidecar=False) or use the Training Operator's PaddleJob",
                )
            )
    contexts = [
        ("security_context", job.security_context),
        ("container_security_context", job.container_security_context),
        *((f"init_containers[{i}].security_context", ic.security_context)
          for i, ic in enumerate(job.init_containers)),
        *((f"{f}.{level}", getattr(role, level))
          for f, role in job.roles().items()
          for level in ("security_context", "container_security_context")),
    ]  # fmt: skip
    for field, context in contexts:
        if context is not None and context.app_armor is not None:
            out.append(
                (
                    f"{field}.app_armor",
                    "paddle-operator's CRD has no appArmorProfile, so the API server would drop "
                    "it silently; leave it out here (the node's default profile applies)",
                )
            )
    # The same CRD's lifecycle handlers have exec, httpGet and tcpSocket but no sleep.
    for field in ("post_start", "pre_stop"):
        hook = getattr(job, field)
        if hook is not None and hook.sleep is not None:
            out.append(
                (
                    f"{field}.sleep",
                    "paddle-operator's CRD has no sleep hook, so the API server would drop it "
                    "and refuse the empty hook; use exec=['sleep', '…'] or the Training "
                    "Operator's PaddleJob",
                )
            )
    return out
