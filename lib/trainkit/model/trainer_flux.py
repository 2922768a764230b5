"""Kubeflow Trainer v2.3's Flux policy (``mlPolicy.flux``): the runtime's settings and what
the plugin does to the trainer job's pods.

Source: kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/flux/flux.go (EnforceMLPolicy,
Build, generateFluxEntrypoint, generateInitEntrypoint, getOriginalCommand), its
templates/entrypoint.sh and init.sh, and pkg/constants/constants.go (``Flux*``). On the pod set
named ``node`` the plugin adds the init container ``flux-installer`` (the Flux view image
copying Flux into an emptyDir), five volumes mounted by path over whatever the container
had there, and replaces the command with ``/bin/bash /etc/flux-config/entrypoint.sh "<command
and args joined by spaces>"``; the first node then runs ``flux run -N <nodes> -n <nodes ×
tasks> [-g <GPUs per node>] <command>`` and the others run Flux brokers.
"""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from .base import TrainkitModel

__all__ = [
    "FLUX_DEFAULT_VIEW_IMAGE",
    "FLUX_INSTALLER",
    "FLUX_MOUNTS",
    "FLUX_SETTINGS_ENV",
    "FLUX_VOLUMES",
    "RuntimeFlux",
    "flux_command_problem",
    "flux_configmap",
    "flux_curve_secret",
    "flux_hostlist",
    "flux_original_command",
    "flux_run",
    "tasks_gpus_problem",
]

FLUX_DEFAULT_VIEW_IMAGE = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
"""The view image Trainer uses when neither the runtime nor the TrainJob sets
``FLUX_VIEW_IMAGE`` (pkg/constants/constants.go FluxInstallerImage)."""

FLUX_INSTALLER = "flux-installer"
"""The init container the plugin adds (constants.FluxInstallerContainerName); a runtime's
own of that name is refused by its webhook."""

FLUX_MOUNTS: dict[str, str] = {
    "/mnt/flux": "flux-install",
    "/opt/software": "spack-install",
    "/etc/flux-config": "<trainjob>-flux-entrypoint",
    "/curve": "flux-curve",
    "/dev/shm": "shared-memory",
}
"""Mount path → volume of container ``node``, upserted by path (pkg/apply/apply.go
UpsertVolumeMounts): a mount of the job's at one of them is replaced."""

FLUX_VOLUMES = frozenset({"flux-install", "spack-install", "flux-curve", "shared-memory"})
"""Pod volumes the plugin adds, upserted by name (apply.UpsertVolumes), besides the
``<trainjob>-flux-entrypoint`` ConfigMap's."""

FLUX_SETTINGS_ENV = ("FLUX_VIEW_IMAGE", "FLUX_NETWORK_DEVICE", "FLUX_QUEUE_POLICY")
"""Variables flux.go brokerSettingsFromEnvironment reads from container ``node`` of the
runtime, then from the TrainJob's env (which wins)."""

_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$")
# Words the entrypoint's unquoted ${command} would split or expand (entrypoint.sh).
_SPLIT = re.compile(r"\s")
_GLOB = re.compile(r"[*?\[]")


class RuntimeFlux(TrainkitModel):
    """Makes a runtime a Flux runtime (Trainer's ``mlPolicy.flux``): Trainer installs Flux into
    every node from ``view_image`` and runs the TrainJob's command with ``flux run`` on the
    first node, ``procs_per_node`` tasks on each node; the other nodes run Flux brokers."""

    view_image: str | None = Field(default=None, min_length=1, pattern=r"^\S+$")
    """Image of the ``flux-installer`` init container, Flux pre-built (a Flux view image); its
    OS and version must match the image of the nodes, into which it copies Flux. ``None``
    leaves it to each TrainJob (``flux_view_image=``), else Trainer's default
    ``ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy`` (``FLUX_DEFAULT_VIEW_IMAGE``),
    which the registry policy must allow."""
    procs_per_node: int = Field(default=1, ge=1, le=1024)
    """Flux tasks per node (``numProcPerNode``): ``flux run -n`` is nodes × this; a TrainJob's
    ``procs_per_node`` replaces it."""
    network_device: str = "eth0"
    """Network device the Flux brokers bind to (``FLUX_NETWORK_DEVICE``), e.g. ``eth0``."""

    @model_validator(mode="after")
    def _device(self) -> RuntimeFlux:
        if not _DEVICE.match(self.network_device):
            raise ValueError(
                f"network_device {self.network_device!r} is not a network interface name "
                "(1 to 15 letters, digits, '.', '_' or '-'); write it as `ip link` shows it, "
                "e.g. 'eth0'"
            )
        return self


def flux_original_command(command: list[str], args: list[str]) -> str:
    """The one string flux.go getOriginalCommand hands the entrypoint: command and args
    joined by spaces."""
    return " ".join([*command, *args]).strip()


def flux_hostlist(trainjob: str, nodes: int) -> str:
    """The broker hosts as flux.go generateHostlist writes them."""
    span = "0" if nodes == 1 else f"0-{nodes - 1}"
    return f"{trainjob}-node-0-[{span}]"


def flux_run(nodes: int, tasks: int, gpus: int, command: str) -> str:
    """What the first node runs (flux.go generateFluxEntrypoint, entrypoint.sh)."""
    flags = f"-N {nodes} -n {tasks * nodes}"
    if gpus > 0:
        flags += f" -g {gpus}"  # --gpus-per-task: every GPU of the node
    return f"flux run {flags} {command}"


def flux_configmap(trainjob: str) -> str:
    """The ConfigMap of the entrypoint and init scripts Trainer creates for the TrainJob."""
    return f"{trainjob}-flux-entrypoint"


def flux_curve_secret(trainjob: str) -> str:
    """The Secret of the brokers' CURVE certificate Trainer creates for the TrainJob."""
    return f"{trainjob}-flux-curve"


def flux_command_problem(words: list[str]) -> str | None:
    """Why the entrypoint would not run ``words`` as written, or None: it gets them joined by
    spaces (getOriginalCommand) and expands ``${command}`` unquoted (entrypoint.sh), so a word
    with white space is split, one with ``*``, ``?`` or ``[`` is a file pattern, and an empty
    one vanishes."""
    for word in words:
        if word == "":
            return "an empty word would vanish"
        if _SPLIT.search(word):
            return f"{word!r} would become {len(word.split())} words"
        if _GLOB.search(word):
            return f"{word!r} would be expanded as a file pattern"
    return None


def tasks_gpus_problem(tasks: int, gpus: int) -> str | None:
    """Why ``tasks`` per node with ``gpus`` GPUs per node cannot start, or None: the
    entrypoint asks ``flux run -g <GPUs per node>`` per task (generateFluxEntrypoint) while
    the node's resource set holds the node's GPUs once."""
    if tasks > 1 and gpus > 0:
        return (
            f"Trainer's Flux plugin asks for every GPU of a node for each task (flux run -g "
            f"{gpus}), so {tasks} tasks per node need {tasks * gpus} GPUs of a node that has "
            f"{gpus} and Flux refuses the job as unsatisfiable; run 1 task per node "
            "(procs_per_node=1) and start the GPU processes from it, or request no GPUs"
        )
    return None
