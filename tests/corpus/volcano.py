"""Volcano's documentation at the pinned tag (volcano-sh/volcano v1.12.4, ``docs/user-guide/``):
Kubeflow jobs whose pods ask Volcano's scheduler for NUMA-aware placement."""

from __future__ import annotations

from trainkit import Resources, Role, TFJob

from . import Case, Expected, Source, pod

__all__ = ["CASES"]


def src(path: str) -> Source:
    return Source("volcano-sh/volcano", "v1.12.4", "28043a49084093e089981e0fa2720ad899346c4a", path)


SLEEP = ["/bin/sh", "-c", "sleep 1000"]
SIZE = {"cpu": 15, "memory": "2Gi"}
NUMA = {"sidecar.istio.io/inject": "false", "volcano.sh/numa-topology-policy": "best-effort"}

CASES = [
    Case(
        id="volcano-numa-aware-tfjob",
        source=src("docs/user-guide/how_to_use_numa_aware.md"),  # the TFJob of "Usage"
        definition=lambda: TFJob(
            name="tfjob-test",
            image="alpine:latest",
            image_pull_policy="IfNotPresent",
            command=SLEEP,
            ps=Role(),
            resources=Resources(cpu=15, memory="2Gi"),
            pod_annotations=NUMA,
        ),
        expected=Expected(
            "TFJob",
            "tfjob-test",
            {
                role: pod(
                    1,
                    "alpine:latest",
                    SLEEP,
                    requests=SIZE,
                    limits=SIZE,
                    restart="OnFailure",
                    pull="IfNotPresent",
                    pod={"metadata.annotations": NUMA},
                )
                for role in ("PS", "Worker")
            },
        ),
        # volcano.sh/ steers Volcano: the platform grants the one key
        team={"pod_metadata_keys": ["volcano.sh/numa-topology-policy"]},
    ),
]
