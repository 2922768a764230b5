"""The Argo CD Lua health checks, run in a Lua 5.1 sandbox shaped like Argo CD's.

Argo CD runs ``resource.customizations.health.*`` scripts in gopher-lua (Lua 5.1) with only
the package, base and table libraries and a reduced ``os`` (``util/lua/lua.go``: ``SkipOpenLibs``
unless ``useOpenLibs`` is set for the kind). The runtime here removes ``string``, ``math``,
``io``, ``os``, ``debug``, ``coroutine`` and the string metatable, so a script that calls
``string.format`` or ``("x"):upper()`` fails here as it would in Argo CD.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

import pytest

try:  # a real Lua 5.1, like gopher-lua
    from lupa.lua51 import LuaError, LuaRuntime, lua_type
except ImportError:  # pragma: no cover - lupa wheels built without the 5.1 module
    from lupa import LuaError, LuaRuntime, lua_type

from trainkit.health import HEALTH_KEY_PREFIX, health_checks

VALID_STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

PYTORCHJOB_KEY = HEALTH_KEY_PREFIX + "kubeflow.org_PyTorchJob"
MPIJOB_KEY = HEALTH_KEY_PREFIX + "kubeflow.org_MPIJob"
TFJOB_KEY = HEALTH_KEY_PREFIX + "kubeflow.org_TFJob"
PADDLEJOB_KEY = HEALTH_KEY_PREFIX + "kubeflow.org_PaddleJob"
XGBOOSTJOB_KEY = HEALTH_KEY_PREFIX + "kubeflow.org_XGBoostJob"
JAXJOB_KEY = HEALTH_KEY_PREFIX + "kubeflow.org_JAXJob"
PADDLE_OPERATOR_KEY = HEALTH_KEY_PREFIX + "batch.paddlepaddle.org_PaddleJob"
TRAINJOB_KEY = HEALTH_KEY_PREFIX + "trainer.kubeflow.org_TrainJob"
QUEUE_KEY = HEALTH_KEY_PREFIX + "scheduling.volcano.sh_Queue"
RAYJOB_KEY = HEALTH_KEY_PREFIX + "ray.io_RayJob"
RAYCLUSTER_KEY = HEALTH_KEY_PREFIX + "ray.io_RayCluster"
CLUSTER_QUEUE_KEY = HEALTH_KEY_PREFIX + "kueue.x-k8s.io_ClusterQueue"
LOCAL_QUEUE_KEY = HEALTH_KEY_PREFIX + "kueue.x-k8s.io_LocalQueue"

_SANDBOX = """
debug.setmetatable("", nil)
string, math, io, os, debug, coroutine, python = nil, nil, nil, nil, nil, nil, nil
"""


def _runtime() -> Any:
    lua = LuaRuntime(register_eval=False, register_builtins=False)
    assert lua.eval("_VERSION") == "Lua 5.1"
    lua.execute(_SANDBOX)
    return lua


def to_lua(lua: Any, value: Any) -> Any:
    """JSON-like Python value -> Lua value, the way Argo CD's decodeValue builds ``obj``."""
    if isinstance(value, Mapping):
        table = lua.table()
        for key, item in value.items():
            if item is not None:
                table[key] = to_lua(lua, item)
        return table
    if isinstance(value, list):
        table = lua.table()
        for index, item in enumerate(value, start=1):
            table[index] = to_lua(lua, item)
        return table
    return value


def run_health(script: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    lua = _runtime()
    lua.globals().obj = to_lua(lua, obj)
    result = lua.execute(script)
    assert lua_type(result) == "table", f"script returned {result!r}, Argo CD needs a table"
    out = dict(result.items())
    assert set(out) <= {"status", "message"}, out
    assert out.get("status") in VALID_STATUSES, out
    assert isinstance(out.get("message"), str), out
    return out


@pytest.fixture(scope="module")
def checks() -> dict[str, str]:
    return health_checks()


# --- the sandbox itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        'return {status = string.format("%s", "Healthy"), message = ""}',
        'return {status = ("healthy"):upper(), message = ""}',
        'return {status = "Healthy", message = tostring(math.floor(1.5))}',
    ],
)
def test_sandbox_rejects_libraries_argo_cd_does_not_load(script: str) -> None:
    # LuaError must come from the same lupa module as the runtime: lupa.LuaError is the
    # default runtime's class and does not catch lupa.lua51.LuaError.
    with pytest.raises(LuaError):
        run_health(script, {})


def test_sandbox_keeps_base_and_table_libraries() -> None:
    out = run_health(
        "local t = {} table.insert(t, 'a') "
        "return {status = 'Healthy', message = tostring(#t) .. type(next) .. obj.kind}",
        {"kind": "X"},
    )
    assert out == {"status": "Healthy", "message": "1functionX"}


def test_converter_makes_one_based_lists() -> None:
    out = run_health(
        "return {status = 'Healthy', message = obj.items[1] .. obj.items[2] .. #obj.items}",
        {"items": ["a", "b"]},
    )
    assert out["message"] == "ab2"


# --- the loader --------------------------------------------------------------------------------


def test_health_checks_keys_and_sources(checks: dict[str, str]) -> None:
    shared = (MPIJOB_KEY, TFJOB_KEY, PADDLEJOB_KEY, XGBOOSTJOB_KEY, JAXJOB_KEY, LOCAL_QUEUE_KEY)
    own = (
        PADDLE_OPERATOR_KEY,
        PYTORCHJOB_KEY,
        QUEUE_KEY,
        RAYJOB_KEY,
        RAYCLUSTER_KEY,
        TRAINJOB_KEY,
        CLUSTER_QUEUE_KEY,
    )
    assert list(checks) == sorted([*shared, *own])
    package = resources.files("trainkit.health")
    # mpi-operator and the TFJob and PaddleJob controllers report the PyTorchJob's six
    # conditions (training-operator v1.9 common JobStatus): one script. Kueue's two queues
    # report the same Active condition: another.
    assert all(checks[key] == checks[PYTORCHJOB_KEY] for key in shared[:5])
    assert checks[LOCAL_QUEUE_KEY] == checks[CLUSTER_QUEUE_KEY]
    for key, source in checks.items():
        if key in shared:
            continue
        file_name = key.removeprefix(HEALTH_KEY_PREFIX) + ".lua"
        assert source == package.joinpath(file_name).read_text(encoding="utf-8")
        assert "return" in source


def test_scripts_use_no_string_library(checks: dict[str, str]) -> None:
    for key, source in checks.items():
        code = "\n".join(line.split("--", 1)[0] for line in source.splitlines())
        assert "string." not in code, key
        assert ":format(" not in code, key


# --- PyTorchJob --------------------------------------------------------------------------------


def cond(
    type_: str, status: str, reason: str | None = None, message: str | None = None
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "type": type_,
        "status": status,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    if reason is not None:
        c["reason"] = reason
    if message is not None:
        c["message"] = message
    return c


def pytorchjob(*conditions: dict[str, Any] | None, status: Any = "conditions") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "resnet", "namespace": "ml"},
        "spec": {"pytorchReplicaSpecs": {}},
    }
    if status == "conditions":
        obj["status"] = {"conditions": list(conditions), "replicaStatuses": {}}
    elif status is not None:
        obj["status"] = status
    return obj


CREATED = cond("Created", "True", "PyTorchJobCreated", "PyTorchJob resnet is created.")
RUNNING = cond("Running", "True", "PyTorchJobRunning", "PyTorchJob ml/resnet is running.")
RUNNING_OFF = cond("Running", "False", "PyTorchJobRunning", "PyTorchJob ml/resnet is running.")
RESTARTING = cond(
    "Restarting",
    "True",
    "PyTorchJobRestarting",
    "PyTorchJob resnet is restarting because 1 Worker replica(s) failed.",
)
SUCCEEDED = cond(
    "Succeeded", "True", "PyTorchJobSucceeded", "PyTorchJob resnet is successfully completed."
)
FAILED = cond(
    "Failed",
    "True",
    "PyTorchJobFailed",
    "PyTorchJob resnet is failed because 1 Master replica(s) failed.",
)
SUSPENDED = cond("Suspended", "True", "PyTorchJobSuspended", "PyTorchJob resnet is suspended.")
RESUMED = cond("Suspended", "False", "PyTorchJobResumed", "PyTorchJob resnet is resumed.")

PYTORCHJOB_CASES = [
    pytest.param(pytorchjob(status=None), "Progressing", "Waiting", id="no-status"),
    pytest.param(
        pytorchjob(status={"replicaStatuses": {}}), "Progressing", "Waiting", id="no-conditions"
    ),
    pytest.param(pytorchjob(), "Progressing", "Waiting", id="empty-conditions"),
    pytest.param(pytorchjob(CREATED), "Progressing", "PyTorchJob resnet is created.", id="created"),
    pytest.param(pytorchjob(CREATED, RUNNING), "Progressing", "ml/resnet is running", id="running"),
    pytest.param(
        pytorchjob(CREATED, RUNNING, RESTARTING),
        "Progressing",
        "1 Worker replica(s) failed",
        id="restarting",
    ),
    pytest.param(
        pytorchjob(CREATED, RUNNING_OFF, SUCCEEDED),
        "Healthy",
        "successfully completed",
        id="succeeded",
    ),
    pytest.param(
        pytorchjob(CREATED, RUNNING_OFF, FAILED),
        "Degraded",
        "1 Master replica(s) failed",
        id="failed",
    ),
    pytest.param(
        pytorchjob(CREATED, RUNNING, FAILED),
        "Degraded",
        "1 Master replica(s) failed",
        id="failed-wins-over-running",
    ),
    pytest.param(
        pytorchjob(CREATED, SUSPENDED), "Suspended", "resnet is suspended", id="suspended"
    ),
    pytest.param(
        pytorchjob(CREATED, RESUMED, RUNNING), "Progressing", "ml/resnet is running", id="resumed"
    ),
    pytest.param(
        pytorchjob(CREATED, RUNNING, cond("Failed", "False", "PyTorchJobFailed", "not failed")),
        "Progressing",
        "ml/resnet is running",
        id="failed-false-is-not-degraded",
    ),
    pytest.param(
        pytorchjob(CREATED, SUSPENDED, FAILED),
        "Degraded",
        "1 Master replica(s) failed",
        id="failed-wins-over-suspended",
    ),
    pytest.param(
        pytorchjob(CREATED, RUNNING_OFF, SUCCEEDED, RESTARTING),
        "Healthy",
        "successfully completed",
        id="succeeded-wins",
    ),
    pytest.param(
        pytorchjob(cond("Failed", "True")),
        "Degraded",
        "PyTorchJob failed",
        id="failed-bare-condition",
    ),
    pytest.param(
        pytorchjob(cond("Failed", "True", "BackoffLimitExceeded", "")),
        "Degraded",
        "BackoffLimitExceeded",
        id="failed-empty-message-uses-reason",
    ),
    pytest.param(
        pytorchjob(cond("Running", "Unknown", "X", "unknown"), cond("Created", "False")),
        "Progressing",
        "Waiting for the PyTorchJob to start",
        id="no-true-condition",
    ),
]


@pytest.mark.parametrize(("obj", "status", "message_part"), PYTORCHJOB_CASES)
def test_pytorchjob_health(
    checks: dict[str, str], obj: dict[str, Any], status: str, message_part: str
) -> None:
    out = run_health(checks[PYTORCHJOB_KEY], obj)
    assert out["status"] == status
    assert message_part in out["message"]


def test_pytorchjob_message_carries_reason_and_message(checks: dict[str, str]) -> None:
    out = run_health(checks[PYTORCHJOB_KEY], pytorchjob(CREATED, FAILED))
    assert out == {
        "status": "Degraded",
        "message": "PyTorchJobFailed: PyTorchJob resnet is failed because 1 Master replica(s) failed.",
    }


# --- MPIJob (mpi-operator v2beta1; reasons from pkg/controller/mpi_job_controller_status.go) -----


def mpijob(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "ds", "namespace": "ml"},
        "spec": {"mpiReplicaSpecs": {}},
        "status": {"conditions": list(conditions)},
    }


MPI_CREATED = cond("Created", "True", "MPIJobCreated", "MPIJob ml/ds is created.")
MPI_RUNNING = cond("Running", "True", "MPIJobRunning", "MPIJob ml/ds is running.")
MPI_DONE = cond("Running", "False", "MPIJobRunning", "MPIJob ml/ds is running.")


@pytest.mark.parametrize(
    ("obj", "status", "message"),
    [
        (mpijob(), "Progressing", "Waiting for the operator to report conditions of the MPIJob"),
        (mpijob(MPI_CREATED), "Progressing", "MPIJobCreated: MPIJob ml/ds is created."),
        (
            mpijob(MPI_CREATED, MPI_RUNNING),
            "Progressing",
            "MPIJobRunning: MPIJob ml/ds is running.",
        ),
        (
            mpijob(MPI_CREATED, MPI_DONE, cond("Succeeded", "True", "MPIJobSucceeded", "done")),
            "Healthy",
            "MPIJobSucceeded: done",
        ),
        (
            mpijob(
                MPI_CREATED,
                MPI_RUNNING,
                cond("Failed", "True", "MPIJobEvicted", "1/2 workers are evicted"),
            ),
            "Degraded",
            "MPIJobEvicted: 1/2 workers are evicted",
        ),
        (
            mpijob(MPI_CREATED, cond("Suspended", "True", "MPIJobSuspended", "MPIJob suspended")),
            "Suspended",
            "MPIJobSuspended: MPIJob suspended",
        ),
    ],
    ids=["no-conditions", "created", "running", "succeeded", "evicted", "suspended"],
)
def test_mpijob_health(
    checks: dict[str, str], obj: dict[str, Any], status: str, message: str
) -> None:
    assert run_health(checks[MPIJOB_KEY], obj) == {"status": status, "message": message}


# --- TrainJob ----------------------------------------------------------------------------------


def trainjob(*conditions: dict[str, Any], status: Any = "conditions") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"runtimeRef": {"name": "torch-2-5"}},
    }
    if status == "conditions":
        obj["status"] = {"conditions": list(conditions)}
    elif status is not None:
        obj["status"] = status
    return obj


TJ_SUSPENDED = cond("Suspended", "True", "Suspended", "TrainJob is suspended")
TJ_RESUMED = cond("Suspended", "False", "Resumed", "TrainJob is resumed")
TJ_COMPLETE = cond("Complete", "True", "JobSetCompleted", "jobset completed successfully")
TJ_FAILED = cond(
    "Failed", "True", "DeadlineExceeded", "TrainJob exceeded its activeDeadlineSeconds"
)

TRAINJOB_CASES = [
    pytest.param(trainjob(status=None), "Progressing", "Waiting", id="no-status"),
    pytest.param(trainjob(status={"jobsStatus": []}), "Progressing", "Waiting", id="no-conditions"),
    pytest.param(trainjob(), "Progressing", "Waiting", id="empty-conditions"),
    pytest.param(trainjob(TJ_SUSPENDED), "Suspended", "TrainJob is suspended", id="suspended"),
    pytest.param(trainjob(TJ_RESUMED), "Progressing", "TrainJob is running", id="resumed"),
    pytest.param(
        trainjob(TJ_RESUMED, TJ_COMPLETE), "Healthy", "jobset completed successfully", id="complete"
    ),
    pytest.param(
        trainjob(TJ_FAILED), "Degraded", "exceeded its activeDeadlineSeconds", id="failed"
    ),
    pytest.param(
        trainjob(TJ_SUSPENDED, TJ_FAILED), "Degraded", "DeadlineExceeded", id="failed-wins"
    ),
    pytest.param(
        trainjob(TJ_RESUMED, cond("Failed", "False", "X", "not failed")),
        "Progressing",
        "TrainJob is running",
        id="failed-false-is-not-degraded",
    ),
    pytest.param(
        trainjob(cond("Complete", "True")), "Healthy", "TrainJob is complete", id="complete-bare"
    ),
]


@pytest.mark.parametrize(("obj", "status", "message_part"), TRAINJOB_CASES)
def test_trainjob_health(
    checks: dict[str, str], obj: dict[str, Any], status: str, message_part: str
) -> None:
    out = run_health(checks[TRAINJOB_KEY], obj)
    assert out["status"] == status
    assert message_part in out["message"]


# --- Volcano Queue -----------------------------------------------------------------------------


def queue(status: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 1, "reclaimable": True},
    }
    if status is not None:
        obj["status"] = status
    return obj


# A queue's state is never a reason to hold a sync: anything but Healthy would hold every
# later wave (every job on the cluster), Degraded would fail the sync.
QUEUE_CASES = [
    pytest.param(queue(None), "has not reported the queue state", id="no-status"),
    pytest.param(queue({}), "has not reported the queue state", id="empty-status"),
    pytest.param(queue({"allocated": {"cpu": "0"}}), "has not reported", id="no-state"),
    pytest.param(queue({"state": ""}), "has not reported", id="empty-state"),
    pytest.param(queue({"state": "Open", "running": 2}), "Queue is Open", id="open"),
    pytest.param(queue({"state": "Closed"}), "Queue is Closed", id="closed"),
    pytest.param(queue({"state": "Closing", "running": 1}), "Queue is Closing", id="closing"),
    pytest.param(queue({"state": "Unknown"}), "Queue state is Unknown", id="unknown"),
    pytest.param(queue({"state": "Bogus"}), "Queue state is Bogus", id="unexpected"),
    pytest.param(queue({"state": 3}), "Queue state is 3", id="not-a-string"),
]


@pytest.mark.parametrize(("obj", "message_part"), QUEUE_CASES)
def test_queue_health_never_holds_a_sync(
    checks: dict[str, str], obj: dict[str, Any], message_part: str
) -> None:
    out = run_health(checks[QUEUE_KEY], obj)
    assert out["status"] == "Healthy"
    assert message_part in out["message"]


def test_queue_message_says_closed_queues_take_no_new_jobs(checks: dict[str, str]) -> None:
    for state in ("Closed", "Closing"):
        out = run_health(checks[QUEUE_KEY], queue({"state": state}))
        assert out == {
            "status": "Healthy",
            "message": f"Queue is {state}: Volcano admits no new jobs to it",
        }


# --- paddle-operator's PaddleJob -----------------------------------------------------------


def paddle(status: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "batch.paddlepaddle.org/v1", "kind": "PaddleJob"}
    if status is not None:
        obj["status"] = status
    return obj


@pytest.mark.parametrize(
    ("status", "health", "message"),
    [
        (None, "Progressing", "Waiting for paddle-operator to start the PaddleJob"),
        ({}, "Progressing", "Waiting for paddle-operator to start the PaddleJob"),
        ({"phase": "Pending"}, "Progressing", "PaddleJob is Pending"),
        ({"phase": "Running", "mode": "PS"}, "Progressing", "PaddleJob (PS) is Running"),
        (
            {"phase": "Completed", "mode": "Collective"},
            "Healthy",
            "PaddleJob (Collective) completed",
        ),
        ({"phase": "Succeed"}, "Healthy", "PaddleJob completed: every pod exited 0"),
        ({"phase": "Failed", "mode": "PS"}, "Degraded", "PaddleJob (PS) failed: a pod exited"),
        ({"phase": "Aborted"}, "Degraded", "PaddleJob is Aborted before completing"),
        ({"phase": "Terminating"}, "Progressing", "PaddleJob is Terminating"),
    ],
)
def test_paddle_operator_health_follows_the_phase(
    checks: dict[str, str], status: dict[str, Any] | None, health: str, message: str
) -> None:
    out = run_health(checks[PADDLE_OPERATOR_KEY], paddle(status))
    assert out["status"] == health
    assert message in out["message"]


# --- RayCluster (ray-project/kuberay v1.7.0 raycluster_types.go conditions) --------------------


def _ray_cluster(*conditions: tuple[str, str], state: str | None = None, **meta: Any) -> Any:
    status: dict[str, Any] = {
        "conditions": [
            {"type": t, "status": s, "reason": f"{t}Reason", "message": f"{t} message"}
            for t, s in conditions
        ]
    }
    if state is not None:
        status["state"] = state
    return {"kind": "RayCluster", "metadata": meta, "status": status}


@pytest.mark.parametrize(
    ("obj", "status", "words"),
    [
        ({"kind": "RayCluster"}, "Progressing", "waiting for every Ray pod"),
        (
            _ray_cluster(("RayClusterProvisioned", "False"), ("HeadPodReady", "False")),
            "Progressing",
            "RayClusterProvisionedReason",
        ),
        (
            _ray_cluster(("RayClusterProvisioned", "True"), ("HeadPodReady", "True")),
            "Healthy",
            "ready",
        ),
        # Provisioned stays True once set: a head that is not ready afterwards is a fault.
        (
            _ray_cluster(("RayClusterProvisioned", "True"), ("HeadPodReady", "False")),
            "Degraded",
            "HeadPodReady message",
        ),
        (
            _ray_cluster(
                ("RayClusterProvisioned", "True"),
                ("HeadPodReady", "True"),
                ("ReplicaFailure", "True"),
            ),
            "Degraded",
            "ReplicaFailure message",
        ),
        (
            _ray_cluster(
                ("RayClusterSuspended", "True"),
                labels={"kueue.x-k8s.io/queue-name": "llm"},
            ),
            "Suspended",
            "LocalQueue llm",
        ),
        (_ray_cluster(("RayClusterSuspending", "True")), "Suspended", "deleting its pods"),
        # Without the status-conditions gate only the deprecated state is written.
        (_ray_cluster(state="ready"), "Healthy", "ready"),
        (_ray_cluster(state="suspended"), "Suspended", "suspended"),
    ],
)
def test_raycluster_health(
    checks: dict[str, str], obj: dict[str, Any], status: str, words: str
) -> None:
    out = run_health(checks[RAYCLUSTER_KEY], obj)
    assert out["status"] == status, out
    assert words in out["message"], out
