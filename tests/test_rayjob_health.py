"""The Argo CD health check of KubeRay's RayJob (ray.io/v1, KubeRay v1.7.0).

The script reads ``status.jobDeploymentStatus``, ``status.jobStatus``, ``status.reason``,
``status.message`` and ``status.failed`` as ``ray-operator/controllers/ray/rayjob_controller.go``
sets them; it runs in the Lua 5.1 sandbox of ``test_argocd_health`` (no string library).
"""

from __future__ import annotations

from typing import Any

import pytest

from test_argocd_health import checks, run_health
from trainkit.health import HEALTH_KEY_PREFIX

# `checks` is test_argocd_health's module-scoped fixture; exporting it keeps the import
# "used" for the linter (pytest finds fixtures among a module's globals).
__all__ = ["checks"]

RAYJOB_KEY = HEALTH_KEY_PREFIX + "ray.io_RayJob"


def rayjob(
    status: dict[str, Any] | None = None,
    *,
    suspend: bool | None = None,
    backoff_limit: int | None = None,
    queue: str | None = None,
) -> dict[str, Any]:
    """A RayJob as the API server returns it (``suspend: false`` is omitted: omitempty)."""
    metadata: dict[str, Any] = {"name": "tune", "namespace": "ml"}
    if queue is not None:
        metadata["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    spec: dict[str, Any] = {
        "entrypoint": "python tune.py",
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": {"headGroupSpec": {}},
    }
    if suspend:
        spec["suspend"] = True
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    obj: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": metadata,
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


CLUSTER = "tune-raycluster-x7k2p"
APP_FAILED = {
    "reason": "AppFailed",
    "message": "Job entrypoint command failed with exit code 1",
}

RAYJOB_CASES = [
    # "" (JobDeploymentStatusNew): KubeRay has not picked the RayJob up yet.
    pytest.param(
        rayjob(), "Progressing", "Waiting for KubeRay to start the RayJob", id="no-status"
    ),
    pytest.param(rayjob({}), "Progressing", "Waiting for KubeRay", id="empty-status"),
    pytest.param(
        rayjob({"jobDeploymentStatus": ""}), "Progressing", "Waiting for KubeRay", id="new"
    ),
    # Retrying -> "" keeps status.failed: the next attempt is about to start.
    pytest.param(
        rayjob({"jobDeploymentStatus": "", "failed": 1, "succeeded": 0}, backoff_limit=2),
        "Progressing",
        "start the RayJob again after 1 failed attempt(s)",
        id="new-after-retry",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Initializing", "rayClusterName": CLUSTER}),
        "Progressing",
        f"KubeRay waits for RayCluster {CLUSTER} to be ready",
        id="initializing",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Initializing", "jobStatus": "PENDING"}),
        "Progressing",
        "its RayCluster to be ready (Ray job PENDING)",
        id="initializing-with-job-status",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Waiting", "rayClusterName": CLUSTER}),
        "Progressing",
        f"waiting for a Ray job to be submitted to RayCluster {CLUSTER} (InteractiveMode",
        id="waiting",
    ),
    pytest.param(
        rayjob(
            {
                "jobDeploymentStatus": "Running",
                "jobStatus": "PENDING",
                "rayClusterName": CLUSTER,
                "message": "Job has not started yet. It may be waiting for resources",
            }
        ),
        "Progressing",
        f"running on RayCluster {CLUSTER} (Ray job PENDING): Job has not started yet",
        id="running-pending",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}),
        "Progressing",
        "RayJob is running on its RayCluster (Ray job RUNNING)",
        id="running",
    ),
    # The Ray job is terminal but the submitter has not finished: still Running.
    pytest.param(
        rayjob({"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED"}),
        "Progressing",
        "(Ray job SUCCEEDED)",
        id="running-job-succeeded",
    ),
    pytest.param(
        rayjob(
            {
                "jobDeploymentStatus": "Running",
                "jobStatus": "RUNNING",
                "jobStatusCheckFailureStartTime": "2026-01-01T00:00:00Z",
            }
        ),
        "Progressing",
        "failed to read the job status from the Ray dashboard since 2026-01-01T00:00:00Z",
        id="running-dashboard-unreachable",
    ),
    pytest.param(
        rayjob(
            {
                "jobDeploymentStatus": "Complete",
                "jobStatus": "SUCCEEDED",
                "message": "Job finished successfully.",
                "succeeded": 1,
            }
        ),
        "Healthy",
        "RayJob complete, the Ray job SUCCEEDED: Job finished successfully.",
        id="complete-succeeded",
    ),
    pytest.param(
        rayjob(
            {
                "jobDeploymentStatus": "Complete",
                "jobStatus": "STOPPED",
                "message": "Job was intentionally stopped.",
            }
        ),
        "Degraded",
        "the Ray job is STOPPED, not SUCCEEDED: Job was intentionally stopped.",
        id="complete-stopped",
    ),
    # KubeRay v1.7.0 turns a FAILED Ray job into Failed, not Complete; still not Healthy.
    pytest.param(
        rayjob({"jobDeploymentStatus": "Complete", "jobStatus": "FAILED"}),
        "Degraded",
        "the Ray job is FAILED, not SUCCEEDED",
        id="complete-failed",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Complete"}),
        "Degraded",
        "the Ray job reported no status (not SUCCEEDED)",
        id="complete-no-job-status",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "failed": 1, **APP_FAILED}),
        "Degraded",
        "RayJob failed (Ray job FAILED): AppFailed: Job entrypoint command failed with exit code 1",
        id="failed",
    ),
    pytest.param(
        rayjob(
            {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "failed": 3, **APP_FAILED},
            backoff_limit=2,
        ),
        "Degraded",
        "RayJob failed after 3 attempts (Ray job FAILED): AppFailed",
        id="failed-after-retries",
    ),
    pytest.param(
        rayjob(
            {
                "jobDeploymentStatus": "Failed",
                "jobStatus": "RUNNING",
                "reason": "DeadlineExceeded",
                "message": "The RayJob has passed the activeDeadlineSeconds.",
            }
        ),
        "Degraded",
        "DeadlineExceeded: The RayJob has passed the activeDeadlineSeconds.",
        id="failed-deadline",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Failed", "reason": "SubmissionFailed"}),
        "Degraded",
        "RayJob failed: SubmissionFailed",
        id="failed-reason-only",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Failed"}),
        "Degraded",
        "RayJob failed",
        id="failed-bare",
    ),
    pytest.param(
        rayjob(
            {
                "jobDeploymentStatus": "ValidationFailed",
                "reason": "ValidationFailed",
                "message": "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes "
                "set to false is not allowed to be suspended",
            }
        ),
        "Degraded",
        "KubeRay refused the RayJob: ValidationFailed: The RayJob spec is invalid",
        id="validation-failed",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "ValidationFailed"}),
        "Degraded",
        "KubeRay refused the RayJob (KubeRay will not run it",
        id="validation-failed-bare",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Suspended", "jobStatus": ""}, suspend=True, queue="team"),
        "Suspended",
        "waiting for Kueue to admit it to LocalQueue team",
        id="suspended-kueue",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Suspended"}, suspend=True),
        "Suspended",
        "RayJob is suspended (spec.suspend is true): waiting to be admitted (e.g. by Kueue)",
        id="suspended",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Suspending", "rayClusterName": CLUSTER}, suspend=True),
        "Suspended",
        "KubeRay is deleting its RayCluster; waiting to be admitted",
        id="suspending",
    ),
    # Suspended with spec.suspend false: the controller's next pass moves it back to "".
    pytest.param(
        rayjob({"jobDeploymentStatus": "Suspended"}),
        "Progressing",
        "RayJob is resuming: spec.suspend is false",
        id="suspended-resuming",
    ),
    # Suspending finishes whatever the flag says (the operation is atomic).
    pytest.param(
        rayjob({"jobDeploymentStatus": "Suspending"}),
        "Suspended",
        "RayJob is being suspended",
        id="suspending-flag-cleared",
    ),
    pytest.param(
        rayjob(
            {"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED", "failed": 2, **APP_FAILED},
            backoff_limit=3,
        ),
        "Progressing",
        "RayJob attempt 2 failed, KubeRay is retrying it (retry 2 of 3): AppFailed: Job entrypoint",
        id="retrying",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Retrying", "failed": 1}),
        "Progressing",
        "RayJob attempt 1 failed, KubeRay is retrying it (retry 1)",
        id="retrying-no-backoff-limit",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Retrying"}),
        "Progressing",
        "RayJob attempt failed, KubeRay is retrying it",
        id="retrying-no-count",
    ),
    pytest.param(
        rayjob({"jobDeploymentStatus": "Rebooting", "jobStatus": "RUNNING"}),
        "Progressing",
        "RayJob is Rebooting on its RayCluster (Ray job RUNNING)",
        id="unknown-deployment-status",
    ),
]


@pytest.mark.parametrize(("obj", "status", "message_part"), RAYJOB_CASES)
def test_rayjob_health(
    checks: dict[str, str], obj: dict[str, Any], status: str, message_part: str
) -> None:
    out = run_health(checks[RAYJOB_KEY], obj)
    assert out["status"] == status
    assert message_part in out["message"]


def test_rayjob_failed_message(checks: dict[str, str]) -> None:
    obj = rayjob({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", **APP_FAILED})
    assert run_health(checks[RAYJOB_KEY], obj) == {
        "status": "Degraded",
        "message": "RayJob failed (Ray job FAILED): AppFailed: Job entrypoint command failed with exit code 1",
    }


def test_rayjob_key_is_bundled(checks: dict[str, str]) -> None:
    assert RAYJOB_KEY in checks
    assert checks[RAYJOB_KEY].startswith("-- Argo CD health check for ray.io/v1 RayJob")
