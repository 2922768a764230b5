"""Who a job's processes run as, and the kernel profiles that confine them.

A pod's ``securityContext`` and its containers' are typed here for what a job may say:
user and group ids, non-root, the groups that own its volumes, seccomp and AppArmor
profiles, and what narrows a container (a read-only root, no privilege escalation, dropped
capabilities). What widens a container — ``privileged``, added capabilities, host
namespaces — has no field: only a platform ``NetworkProfile`` adds capabilities. A profile
other than the runtime's default (``"Unconfined"``, or a node's ``"localhost/…"``) needs the
Team's grant (``Team.seccomp_profiles``, ``Team.app_armor_profiles``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from .base import TrainkitModel

__all__ = [
    "RUNTIME_DEFAULT",
    "ContainerSecurityContext",
    "Profile",
    "SecurityContext",
    "check_security",
    "effective_user",
    "profile_field",
]

RUNTIME_DEFAULT = "RuntimeDefault"
"""The container runtime's own profile: always allowed."""
_UNCONFINED = "Unconfined"
_LOCALHOST = "localhost/"
_MAX_ID = 2147483647

UnixId = Annotated[int, Field(ge=0, le=_MAX_ID)]
"""A user or group id (the API server takes 0 to 2147483647)."""


def _profile(v: str) -> str:
    if v in (RUNTIME_DEFAULT, _UNCONFINED):
        return v
    if v.startswith(_LOCALHOST):
        path = v.removeprefix(_LOCALHOST)
        # The API server takes a localhost profile only as a path below the kubelet's
        # profile directory (k8s.io/kubernetes pkg/apis/core/validation/validation.go
        # validateLocalDescendingPath); an AppArmor profile is a name loaded on the node.
        if (
            path
            and not path.startswith("/")
            and ".." not in path.split("/")
            and not re.search(r"\s", path)
            and posixpath.normpath(path) == path
        ):
            return v
    raise ValueError(
        f"{v!r} is not a profile: use 'RuntimeDefault' (the container runtime's), "
        "'Unconfined' or 'localhost/<profile>' (a relative path the nodes hold, no '..')"
    )


Profile = Annotated[
    str,
    AfterValidator(_profile),
    WithJsonSchema(
        {"type": "string", "pattern": r"^(RuntimeDefault|Unconfined|localhost/[^/\s].*)$"}
    ),
]
"""A seccomp or AppArmor profile: ``"RuntimeDefault"``, ``"Unconfined"`` or
``"localhost/<profile>"``."""


def profile_field(profile: str) -> dict[str, str]:
    """``seccompProfile`` / ``appArmorProfile`` of ``profile``."""
    if profile.startswith(_LOCALHOST):
        return {"type": "Localhost", "localhostProfile": profile.removeprefix(_LOCALHOST)}
    return {"type": profile}


def _capability(v: str) -> str:
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", v):
        raise ValueError(
            f"{v!r} is not a capability name: use 'ALL' or one such as 'NET_RAW' (upper case)"
        )
    return v


class _Identity(TrainkitModel):
    """What both levels say about the processes' user."""

    run_as_user: UnixId | None = None
    """User id the processes run as (``runAsUser``), e.g. ``1000``; default: the image's."""
    run_as_group: UnixId | None = None
    """Primary group id of the processes (``runAsGroup``); default: the image's."""
    run_as_non_root: bool | None = None
    """The kubelet starts a container only when it runs as a user other than root
    (``runAsNonRoot``): it refuses an image whose user is root or not numeric unless
    ``run_as_user`` says another."""
    seccomp: Profile | None = None
    """Seccomp profile (``seccompProfile``): ``"RuntimeDefault"``, or where the Team grants it
    (``seccomp_profiles``) ``"Unconfined"`` or a node's ``"localhost/<file>"``. Default: the
    kubelet's (``Unconfined`` unless it runs with ``--seccomp-default``)."""
    app_armor: Profile | None = None
    """AppArmor profile (``appArmorProfile``, Kubernetes ≥ 1.30): ``"RuntimeDefault"``, or
    where the Team grants it (``app_armor_profiles``) ``"Unconfined"`` or a profile loaded
    on the nodes, ``"localhost/<name>"``. Default: the runtime's on nodes with AppArmor."""

    @model_validator(mode="after")
    def _root_or_not(self) -> _Identity:
        # The kubelet refuses to start a container with runAsNonRoot and runAsUser 0
        # (k8s.io/kubernetes pkg/kubelet/kuberuntime/security_context_others.go
        # verifyRunAsNonRoot): the pod would sit in CreateContainerConfigError.
        if self.run_as_non_root and self.run_as_user == 0:
            raise ValueError(
                "run_as_non_root=True with run_as_user=0 (root): the kubelet refuses to start "
                "the container; give a non-root run_as_user or drop one of them"
            )
        return self

    def identity(self) -> dict[str, Any]:
        """The fields both levels share, in Kubernetes' words."""
        out: dict[str, Any] = {}
        for field, key in (
            ("run_as_user", "runAsUser"),
            ("run_as_group", "runAsGroup"),
            ("run_as_non_root", "runAsNonRoot"),
        ):
            value = getattr(self, field)
            if value is not None:
                out[key] = value
        if self.seccomp is not None:
            out["seccompProfile"] = profile_field(self.seccomp)
        if self.app_armor is not None:
            out["appArmorProfile"] = profile_field(self.app_armor)
        return out


class SecurityContext(_Identity):
    """Who every container of the job's pods runs as (the pod's ``securityContext``), e.g.
    ``SecurityContext(run_as_user=1000, run_as_group=1000, fs_group=1000,
    run_as_non_root=True, seccomp="RuntimeDefault")``."""

    fs_group: UnixId | None = None
    """Group id that owns the pods' volumes and is added to their processes (``fsGroup``),
    so a non-root user can write to a claim, e.g. ``1000``."""
    supplemental_groups: list[UnixId] = Field(default=[], max_length=32)
    """Further group ids of the processes (``supplementalGroups``), e.g. ``[2000]`` for a
    shared dataset volume owned by that group."""

    def render(self) -> dict[str, Any]:
        """The pod's ``securityContext``."""
        out = self.identity()
        if self.fs_group is not None:
            out["fsGroup"] = self.fs_group
        if self.supplemental_groups:
            out["supplementalGroups"] = list(self.supplemental_groups)
        return out


class ContainerSecurityContext(_Identity):
    """What the job's own containers run as and may do (each container's
    ``securityContext``), over the pod's ``SecurityContext``: e.g.
    ``ContainerSecurityContext(allow_privilege_escalation=False, drop_capabilities=["ALL"],
    read_only_root_filesystem=True)`` for a Pod Security "restricted" namespace. It can only
    narrow a container: capabilities are added only by a platform ``NetworkProfile``."""

    allow_privilege_escalation: bool | None = None
    """``False`` keeps a process from gaining more privileges than its parent (set-uid
    binaries, ``no_new_privs``), as Pod Security "restricted" requires."""
    read_only_root_filesystem: bool | None = None
    """Mount the image's file system read-only: the script, ``/dev/shm`` and volumes stay as
    they are, but the script can write only to its volumes."""
    drop_capabilities: list[
        Annotated[
            str,
            AfterValidator(_capability),
            WithJsonSchema({"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"}),
        ]
    ] = []
    """Linux capabilities taken away (``capabilities.drop``), e.g. ``["ALL"]``; a network
    profile's capabilities are added back after them."""

    def render(self) -> dict[str, Any]:
        """The container's ``securityContext``."""
        out = self.identity()
        if self.allow_privilege_escalation is not None:
            out["allowPrivilegeEscalation"] = self.allow_privilege_escalation
        if self.read_only_root_filesystem is not None:
            out["readOnlyRootFilesystem"] = self.read_only_root_filesystem
        if self.drop_capabilities:
            out["capabilities"] = {"drop": sorted(set(self.drop_capabilities))}
        return out


def effective_user(
    pod: SecurityContext | None, container: ContainerSecurityContext | None
) -> tuple[int | None, bool]:
    """``(uid, non_root)`` a job's containers run as: the container's setting, else the pod's
    (the kubelet's order); None where the image decides."""
    uid = container.run_as_user if container is not None else None
    if uid is None and pod is not None:
        uid = pod.run_as_user
    non_root = next(
        (
            s.run_as_non_root
            for s in (container, pod)
            if s is not None and s.run_as_non_root is not None
        ),
        False,
    )
    return uid, bool(non_root)


def check_security(pod: SecurityContext | None, container: ContainerSecurityContext | None) -> None:
    """Raise when the two levels together ask for what the kubelet refuses: non-root with the
    root user (one level's run_as_user, the other's run_as_non_root); for the job's model
    validator."""
    uid, non_root = effective_user(pod, container)
    if non_root and uid == 0:
        raise ValueError(
            "run_as_non_root=True while the containers run as run_as_user=0 (root, from the "
            "other security context): the kubelet refuses to start them; give a non-root "
            "run_as_user or drop run_as_non_root"
        )
