"""The pods Training Operator v1.9 creates for a TFJob.

Sources (kubeflow/trainer v1.9.4): TF_CONFIG on container ``tensorflow`` when the job has
more than one pod (pkg/controller.v1/tensorflow/tensorflow.go), success with a Chief or by
Worker 0 or all Workers (tfjob_controller.go UpdateJobStatus), the PodGroup like every v1 kind
(pkg/controller.v1/common/job.go).
"""

from __future__ import annotations

from typing import Any

from ..injected_env import tf_config
from ..plan import PlannedJob
from ..render.tensorflow import CONTAINER
from .operator_pods import run_policy_gang
from .podsets import EffectiveJob, EnvVar, PodSet, env_source

__all__ = ["effective_tfjob"]

_OPERATOR = "Training Operator"


def effective_tfjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    replicas = spec["tfReplicaSpecs"]
    counts = {rtype: int(r.get("replicas", 1)) for rtype, r in replicas.items()}
    pod_sets = []
    for rtype, count in counts.items():
        template = dict(replicas[rtype]["template"]["spec"])
        own = next(c for c in template["containers"] if c["name"] == CONTAINER)
        env = [EnvVar.of(e, env_source(pj, e["name"], "job")) for e in own.get("env") or []]
        config = tf_config(
            job=pj.object_name, namespace=pj.namespace, counts=counts, role=rtype, index=0
        )
        if config is not None:
            env.append(EnvVar("TF_CONFIG", config, _OPERATOR, "the pod's task index"))
        template["containers"] = [
            {**c, "env": [e.entry() for e in env]} if c["name"] == CONTAINER else c
            for c in template["containers"]
        ]
        pod_sets.append(PodSet(rtype, count, 0, template, CONTAINER, tuple(env)))
    total = sum(counts.values())
    gang = run_policy_gang(pj, spec, pod_sets, total)
    if "Chief" in counts:
        done = "the job succeeds when the Chief exits 0"
    elif spec.get("successPolicy") == "AllWorkers":
        done = "the job succeeds when every Worker exits 0"
    else:
        done = "the job succeeds when Worker 0 exits 0"
    notes = [f"{done}; TF_CONFIG tells each pod the cluster and its task (type and index)"]
    if "PS" in counts:
        notes.append("parameter servers run until the job ends; clean_pods stops them")
    return EffectiveJob(pj, tuple(pod_sets), "1", total, None, gang, tuple(notes))
