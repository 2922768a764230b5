"""The ConfigMap that ships a job's training script to ``/workspace``."""

from __future__ import annotations

import hashlib
from typing import Any

from ..plan import PlannedJob
from .meta import JOB_LABEL, metadata

__all__ = ["render_script_configmap", "script_configmap_name"]


def script_configmap_name(job_name: str, files: dict[str, str]) -> str:
    """``<job>-script-<hash>``: an edited script gets a new ConfigMap, so a running
    job never sees its code change under it and Argo CD prunes the old one."""
    digest = hashlib.sha256()
    for fname in sorted(files):
        digest.update(fname.encode() + b"\0" + files[fname].encode() + b"\0")
    return f"{job_name}-script-{digest.hexdigest()[:10]}"


def render_script_configmap(pj: PlannedJob) -> dict[str, Any] | None:
    if pj.job.script is None:
        return None
    files = dict(pj.definition.files)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(
            name=script_configmap_name(pj.job.name, files),
            kind="ConfigMap",
            source=pj.definition.file,
            namespace=pj.namespace,
            team=pj.definition.team,
            labels={JOB_LABEL: pj.job.name},
        ),
        "data": files,
    }
