"""A pod's init containers and native sidecars, as every kind renders them (the operator kinds'
``init_containers`` and a Trainer runtime's)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..model import Cluster
from ..model.init_containers import InitContainer
from ..model.security import ContainerSecurityContext
from .cluster_scoped import resource_requirements
from .pod import env_list, hide_gpus

__all__ = ["init_container_specs"]


def init_container_specs(
    containers: Sequence[InitContainer],
    *,
    image: str | None,
    cluster: Cluster,
    pull_policy: str | None,
    mounts: Sequence[dict[str, Any]],
    security: ContainerSecurityContext | None,
) -> list[dict[str, Any]]:
    """``containers`` rendered: ``image`` (the job's or runtime's) unless they name one, their
    own command, env and resources (no GPU, so the NVIDIA variables are blanked), the pod's
    ``mounts`` they name, and ``security`` (the job container's) unless they give their own."""
    out = []
    for ic in containers:
        c: dict[str, Any] = {"name": ic.name, "image": ic.image or image}
        if pull_policy is not None:
            c["imagePullPolicy"] = pull_policy
        c["command"] = list(ic.command)
        if ic.args:
            c["args"] = list(ic.args)
        if ic.env:
            c["env"] = env_list(ic.env)
        c["resources"] = resource_requirements(ic.resources, cluster)
        hide_gpus(c, cluster)
        if ic.sidecar:
            # A native sidecar (KEP-753): started before the job's container, stopped once it
            # has ended, so the pod completes (a second regular container would keep it
            # Running, holding its GPUs).
            c["restartPolicy"] = "Always"
        own = [copy.deepcopy(m) for m in mounts if m["name"] in ic.mounts]
        if own:
            c["volumeMounts"] = own
        context = ic.security_context or security
        if context is not None and (rendered := context.render()):
            c["securityContext"] = rendered
        out.append(c)
    return out
