"""The Argo CD health check of Kueue's ClusterQueue and LocalQueue (one script, the Active
condition of apis/kueue/v1beta2/{clusterqueue,localqueue}_types.go): always Healthy, so no
queue holds a sync wave, with the queue's state in the message. Run in the Lua 5.1 sandbox of
``test_argocd_health``."""

from __future__ import annotations

from typing import Any

import pytest

from test_argocd_health import checks, run_health
from trainkit.health import HEALTH_KEY_PREFIX

# `checks` is test_argocd_health's module-scoped fixture, exported to keep the import used.
__all__ = ["checks"]


def queue(kind: str, *conditions: Any, status: Any = "conditions") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind}
    if status == "conditions":
        obj["status"] = {"conditions": list(conditions)}
    elif status is not None:
        obj["status"] = status
    return obj


def active(status: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": "Active", "status": status, "reason": reason, "message": message}


CASES = [
    pytest.param(queue("ClusterQueue", status=None), "has not reported", id="no-status"),
    pytest.param(queue("ClusterQueue", status={}), "has not reported", id="empty-status"),
    pytest.param(queue("ClusterQueue"), "has not reported", id="no-conditions"),
    pytest.param(
        queue("ClusterQueue", {"type": "Other", "status": "False"}),
        "has not reported whether the ClusterQueue is active",
        id="other-condition",
    ),
    pytest.param(
        queue("ClusterQueue", active("True", "Ready")), "ClusterQueue is active", id="ready"
    ),
    pytest.param(
        queue("ClusterQueue", active("False", "FlavorNotFound", "Can't admit new workloads")),
        "ClusterQueue is not active: Kueue admits no job through it (FlavorNotFound: Can't admit",
        id="flavor-not-found",
    ),
    pytest.param(
        queue("ClusterQueue", active("False", "Stopped")),
        "not active: Kueue admits no job through it (Stopped)",
        id="stopped",
    ),
    pytest.param(
        queue("LocalQueue", active("False", "ClusterQueueDoesNotExist", "Can't submit")),
        "LocalQueue is not active: Kueue admits no job through it (ClusterQueueDoesNotExist: ",
        id="local-queue-without-its-cluster-queue",
    ),
    pytest.param(
        queue("LocalQueue", active("True", "Ready")), "LocalQueue is active", id="local-ready"
    ),
    pytest.param(
        queue("LocalQueue", active("False", "", "no reason given")),
        "(no reason given)",
        id="message-only",
    ),
]


@pytest.mark.parametrize(("obj", "says"), CASES)
def test_a_kueue_queue_never_holds_a_sync(
    checks: dict[str, str], obj: dict[str, Any], says: str
) -> None:
    key = HEALTH_KEY_PREFIX + "kueue.x-k8s.io_" + obj["kind"]
    result = run_health(checks[key], obj)
    assert result["status"] == "Healthy"
    assert says in result["message"]
