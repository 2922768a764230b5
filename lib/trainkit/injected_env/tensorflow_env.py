"""What Training Operator v1.9 injects into a TFJob's containers (render/tensorflow.py)."""

from __future__ import annotations

import json

from .reserved_env import ReservedEnv

__all__ = ["TFJOB", "TFJOB_PORT", "tf_config"]

# Training Operator v1.9 TFJob (pkg/controller.v1/tensorflow/tensorflow.go genTFConfigJSONStr):
# TF_CONFIG on container "tensorflow" of every pod of a distributed job, port "tfjob-port".
TFJOB_PORT = 2222
TFJOB = ReservedEnv(
    kinds=("TFJob",),
    names={
        "TF_CONFIG": "the Training Operator sets it to the job's cluster and the pod's task",
    },
)


def tf_config(
    *,
    job: str,
    namespace: str,
    counts: dict[str, int],
    role: str,
    index: int,
    ports: dict[str, int] | None = None,
) -> str | None:
    """TF_CONFIG as the operator writes it for pod ``index`` of replica type ``role``, or None
    when the job is not distributed (one pod in all); each type's addresses use its own
    ``tfjob-port`` (``ports``, default 2222). Go's encoding/json sorts map keys and writes no
    spaces."""
    if sum(counts.values()) == 1:
        return None
    cluster = {
        rtype.lower(): [
            f"{job}-{rtype.lower()}-{i}.{namespace}.svc:{(ports or {}).get(rtype, TFJOB_PORT)}"
            for i in range(count)
        ]
        for rtype, count in counts.items()
    }
    config = {
        "cluster": dict(sorted(cluster.items())),
        "task": {"type": role.lower(), "index": index},
        "environment": "cloud",
    }
    return json.dumps(config, separators=(",", ":"))
