"""The ConfigMaps that ship a job's training script to ``/workspace`` and a RayJob's
repository ``working_dir`` to its submitter."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..model import NetworkProfile
from ..resolve import PlannedJob
from .meta import (
    DEFINITION_ANNOTATION,
    JOB_LABEL,
    KUEUE_PRIORITY_LABEL,
    KUEUE_QUEUE_LABEL,
    definition_hash,
    metadata,
)

__all__ = [
    "job_definition_hash",
    "job_metadata",
    "render_script_configmap",
    "render_working_dir_configmap",
    "script_configmap_name",
    "working_dir_configmap_name",
    "working_dir_keys",
]


def _content_name(job_name: str, what: str, files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return f"{job_name}-{what}-{digest.hexdigest()[:10]}"


def script_configmap_name(job_name: str, files: dict[str, str]) -> str:
    """``<job>-script-<hash>``: an edited script gets a new ConfigMap, so a running
    job never sees its code change under it and Argo CD prunes the old one."""
    return _content_name(job_name, "script", files)


def _job_configmap(pj: PlannedJob, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(
            name=name,
            kind="ConfigMap",
            source=pj.definition.file,
            namespace=pj.namespace,
            team=pj.definition.team,
            labels={JOB_LABEL: pj.job.name},
        ),
        "data": data,
    }


def render_script_configmap(pj: PlannedJob) -> dict[str, Any] | None:
    if pj.job.script is None:
        return None
    files = dict(pj.definition.files)
    return _job_configmap(pj, script_configmap_name(pj.job.name, files), files)


def working_dir_configmap_name(job_name: str, files: dict[str, str]) -> str:
    """``<job>-workdir-<hash>``: as for a script, an edit makes a new ConfigMap."""
    return _content_name(job_name, "workdir", files)


def working_dir_keys(files: dict[str, str]) -> dict[str, str]:
    """Path in the directory → its ConfigMap key. A key holds no ``/`` (``[-._a-zA-Z0-9]+``,
    k8s.io/apimachinery ``IsConfigMapKey``), so each is the file's place in path order and
    its name; the volume's ``items`` put the files back at their paths."""
    return {
        path: f"{i:03d}-{re.sub(r'[^-._a-zA-Z0-9]', '_', path.rsplit('/', 1)[-1])[:200]}"
        for i, path in enumerate(sorted(files))
    }


def render_working_dir_configmap(pj: PlannedJob) -> dict[str, Any] | None:
    files = dict(pj.definition.working_dir)
    if not files:
        return None
    keys = working_dir_keys(files)
    data = {keys[path]: files[path] for path in sorted(files)}
    return _job_configmap(pj, working_dir_configmap_name(pj.job.name, files), data)


# NetworkProfile fields added after its first release: left out of the hash while empty (their
# default), so the hashes of jobs on profiles without them stay what they were.
_LATER_PROFILE_FIELDS = ("host_ipc", "networks", "devices", "claims")


def _profile_parts(profile: NetworkProfile) -> dict[str, Any]:
    parts = profile.model_dump(mode="json")
    for name in _LATER_PROFILE_FIELDS:
        if not parts.get(name):
            parts.pop(name, None)
    return parts


def job_definition_hash(pj: PlannedJob) -> str:
    """What a job object is rendered from, hashed: the definition, its scripts, where it runs
    (cluster, namespace, queue, image, network profile) and, for a TrainJob, which runtime."""
    runtime = pj.runtime
    return definition_hash(
        {
            "kind": pj.kind,
            "definition": pj.job.model_dump(mode="json", exclude_unset=True),
            "scripts": dict(pj.definition.files),
            "cluster": [pj.cluster.name, pj.cluster.gpu_resource, pj.cluster.accelerator],
            "namespace": pj.namespace,
            "queue": pj.queue,
            "image": pj.image,
            "network": _profile_parts(pj.network) if pj.network else None,
            "runtime": [runtime.kind, runtime.runtime.name] if runtime else None,
            # Only where there is one, so the hashes of jobs elsewhere stay what they were.
            **({"local_queue": pj.local_queue} if pj.local_queue else {}),
            **(
                {"working_dir": dict(pj.definition.working_dir)}
                if pj.definition.working_dir
                else {}
            ),
        }
    )


def job_metadata(
    pj: PlannedJob,
    kind: str,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, object]:
    """Metadata of a job object: the job's own ``labels`` and ``annotations``, its run's name,
    team, job label and definition hash, and on a Kueue cluster the LocalQueue label Kueue
    admits it by."""
    if pj.local_queue is not None:
        labels = {**(labels or {}), KUEUE_QUEUE_LABEL: pj.local_queue}
        # Kueue reads the job's own label for the Workload's priority (kueue v0.19.2
        # pkg/controller/jobframework/utils.go WorkloadPriorityClassName).
        priority = getattr(pj.job, "workload_priority", None)
        if priority is not None:
            labels[KUEUE_PRIORITY_LABEL] = priority
    return metadata(
        name=pj.object_name,
        kind=kind,
        source=pj.definition.file,
        namespace=pj.namespace,
        team=pj.definition.team,
        # The job's own keys first: the models refuse trainkit's (JOB_OWNED_KEYS).
        labels={**getattr(pj.job, "labels", {}), JOB_LABEL: pj.job.name, **(labels or {})},
        annotations={
            **getattr(pj.job, "annotations", {}),
            DEFINITION_ANNOTATION: job_definition_hash(pj),
            **(annotations or {}),
        },
    )
