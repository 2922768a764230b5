"""When a job's deadline starts counting, per kind, as each controller does it.

Sources: Training Operator v1.9.4 pkg/controller.v1/common/job.go (status.startTime is set
with the pods, which wait for Volcano's PodGroup to leave Pending, and again on resume);
mpi-operator (pkg/controller/mpi_job_controller.go newLauncherJob: the deadline is the
launcher Job's, whose clock starts when the Job is created, with the MPIJob under AtStartup,
and is cleared on resume); paddle-operator (a pod's own activeDeadlineSeconds, counted by the
kubelet from the pod's start); Trainer v2.3.0 pkg/controller/trainjob_controller.go
reconcileDeadline (the creation, or the last resume); KubeRay v1.7.0
ray-operator/controllers/ray/rayjob_controller.go initRayJobStatusIfNeed (status.startTime at
Initializing: at creation on Volcano, at admission on Kueue, again for each retry).
"""

from __future__ import annotations

from typing import Any

from ..resolve import PlannedJob

__all__ = ["deadline"]


def deadline(pj: PlannedJob, body: dict[str, Any]) -> str:
    """What the job's deadline is and when it starts counting on ``pj``'s cluster."""
    spec = body.get("spec") or {}
    kueue = pj.local_queue is not None
    volcano = pj.queue is not None
    kind = pj.kind
    if kind == "PaddleJob" and "runPolicy" not in spec:
        pods = [r.get("template", {}).get("spec", {}) for r in spec.values() if isinstance(r, dict)]
        seconds = next((p.get("activeDeadlineSeconds") for p in pods if p), None)
        if seconds is None:
            return "none"
        return (
            f"{seconds} s per pod (paddle-operator has no job deadline), counted by the kubelet "
            "from each pod's start: time queued does not count"
        )
    if kind == "TrainJob":
        seconds = spec.get("activeDeadlineSeconds")
        since = (
            "from Kueue's admission (the TrainJob's last resume)"
            if kueue
            else "from the TrainJob's creation: time queued in Volcano counts"
            if volcano
            else "from the TrainJob's creation"
        )
    elif kind == "RayCluster":
        return "none (a long-lived RayCluster has no deadline: it runs until removed)"
    elif kind == "RayJob":
        seconds = spec.get("activeDeadlineSeconds")
        since = (
            "from Kueue's admission"
            if kueue
            else "from the RayJob's creation (KubeRay starts the clock at Initializing): time "
            "queued in Volcano counts"
            if volcano
            else "from the RayJob's creation"
        ) + "; each retry starts a new clock"
    elif kind == "MPIJob":
        seconds = (spec.get("runPolicy") or {}).get("activeDeadlineSeconds")
        since = (
            "the launcher Job's, from Kueue's admission"
            if kueue
            else "the launcher Job's, from its creation with the MPIJob: time queued in Volcano "
            "counts"
            if volcano
            else "the launcher Job's, from its creation with the MPIJob"
        )
    else:
        seconds = (spec.get("runPolicy") or {}).get("activeDeadlineSeconds")
        since = (
            "from Kueue's admission"
            if kueue
            else "from when the operator creates the pods, once Volcano admits the gang: time "
            "queued does not count"
            if volcano
            else "from when the operator creates the pods"
        )
    return "none" if seconds is None else f"{seconds} s, {since}"
