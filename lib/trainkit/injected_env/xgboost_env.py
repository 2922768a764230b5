"""What Training Operator v1.9 injects into an XGBoostJob's containers (render/xgboost.py)."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = ["XGBOOSTJOB", "XGBOOSTJOB_PORT", "xgboostjob_env"]

# Training Operator v1.9 XGBoostJob (pkg/controller.v1/xgboost/xgboost.go SetPodEnv): on every
# container of every pod; the port is the one named "xgboostjob-port" on container "xgboost"
# (pkg/apis/kubeflow.org/v1/xgboost_types.go), read from the Master's and the Workers' specs.
XGBOOSTJOB_PORT = 9999
_XGB_SETS = "the Training Operator sets it"
XGBOOSTJOB = ReservedEnv(
    kinds=("XGBoostJob",),
    names={
        "MASTER_ADDR": f"{_XGB_SETS} to the Master pod's Service, where the tracker listens",
        "MASTER_PORT": f"{_XGB_SETS} to the Master's xgboostjob-port",
        "WORLD_SIZE": f"{_XGB_SETS} to the number of pods",
        "RANK": f"{_XGB_SETS} to the pod's rank (the Master 0, Worker i i + 1)",
        "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
        "WORKER_PORT": f"{_XGB_SETS} to the Workers' xgboostjob-port (LightGBM reads it)",
        "WORKER_ADDRS": f"{_XGB_SETS} to the Workers' Services (LightGBM reads it)",
    },
)


def xgboostjob_env(
    *,
    job: str,
    counts: dict[str, int],
    role: str,
    index: int,
    master_port: int = XGBOOSTJOB_PORT,
    worker_port: int = XGBOOSTJOB_PORT,
) -> dict[str, str]:
    """What the operator appends for pod ``index`` of replica type ``role`` (``Master`` or
    ``Worker``): a Worker's rank is its index plus the Master's replicas; ``WORKER_PORT`` and
    ``WORKER_ADDRS`` (``total - 1`` Worker Services) only when the job has more than one pod.
    The ports are the Master's and the Workers' ``xgboostjob-port`` (xgboost.go
    getPortFromXGBoostJob reads them from the job's spec)."""
    total = sum(counts.values())
    rank = index + (counts.get("Master", 0) if role == "Worker" else 0)
    env = {
        "MASTER_PORT": str(master_port),
        "MASTER_ADDR": f"{job}-master-0",
        "WORLD_SIZE": str(total),
        "RANK": str(rank),
        "PYTHONUNBUFFERED": "1",
    }
    if total > 1:
        env["WORKER_PORT"] = str(worker_port)
        env["WORKER_ADDRS"] = ",".join(f"{job}-worker-{i}" for i in range(total - 1))
    return env
