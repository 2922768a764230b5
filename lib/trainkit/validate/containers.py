"""Container rules no CRD schema states: env names and values.

A CRD's copy of the container schema says only ``name: {type: string}``; the
API server checks env names (``ValidateEnv`` → ``IsEnvVarName``) only for the
pods the operator creates, and a NUL in a value passes the API server but not
the container runtime (see ``trainkit.kube.text``). Both would fail long after
Argo CD reported the job as synced.
"""

from __future__ import annotations

from typing import Any

from trainkit.kube.names import env_name_problem
from trainkit.kube.pods import containers
from trainkit.kube.text import text_value_problem
from trainkit.validate.findings import Finding, JsonPath

__all__ = ["check_containers"]


def check_containers(pods: list[tuple[JsonPath, dict[str, Any]]], out: list[Finding]) -> None:
    """Env names and values of every container of the pod specs of one manifest."""
    for pod_path, pod in pods:
        for path, container in containers(pod, pod_path):
            env = container.get("env")
            for i, var in enumerate(env if isinstance(env, list) else []):
                if not isinstance(var, dict):
                    continue
                name, value = var.get("name"), var.get("value")
                if isinstance(name, str) and (why := env_name_problem(name)) is not None:
                    out.append(
                        Finding(
                            (*path, "env", i, "name"),
                            f"invalid environment variable name {name!r}: it {why}",
                        )
                    )
                if isinstance(value, str) and (why := text_value_problem(value)) is not None:
                    out.append(Finding((*path, "env", i, "value"), f"env {name!r} {why}"))
