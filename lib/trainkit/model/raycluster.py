"""The RayCluster (``ray.io/v1``, KubeRay v1.7): a long-lived Ray cluster that RayJobs of the
same team run on (``RayJob(ray_cluster=...)``).

Rules cite ray-project/kuberay at v1.7.0, ray-operator/controllers/ray/: utils/validation.go
(ValidateRayClusterMetadata: a DNS-1035 name of at most 53 characters, ValidateRayClusterSpec)
and raycluster_controller.go (reconcilePods: what an edit of a running cluster changes).
"""

from __future__ import annotations

from pydantic import field_validator, model_validator

from .job import Resources, repeated
from .operator_job import PodJob
from .rayjob import (
    HeadService,
    RayStart,
    WorkerGroup,
    check_ray_groups,
    ray_group_volume_fields,
    whole_cpus,
)
from .volumes import AnyVolume, check_volumes

__all__ = ["MAX_RAYCLUSTER_NAME", "RayCluster"]

MAX_RAYCLUSTER_NAME = 53
"""utils/constant.go MaxRayClusterNameLength (ValidateRayClusterMetadata)."""


class RayCluster(PodJob):
    """A Ray cluster that stays up (KubeRay's RayCluster): a head and worker groups, holding
    their CPUs, memory and GPUs until the definition is removed. It runs no program of its
    own: RayJobs of the team name it (``RayJob(ray_cluster="<name>", command=[...])``) and
    KubeRay submits their entrypoints to it. The pods keep the template they were created
    with: a changed pod setting is refused in place (raise ``run`` for a new cluster), while
    ``nodes``, ``min_nodes`` and ``max_nodes`` of a group, and new groups, apply to the
    running cluster."""

    head: Resources
    """CPU (whole cores), memory and GPUs of the head pod, which runs Ray's control plane
    (GCS, dashboard) and the entrypoints of the RayJobs submitted to the cluster."""
    workers: list[WorkerGroup] = []
    """Worker groups, e.g. ``[WorkerGroup(name="gpu", nodes=4, resources=...)]``."""
    head_ray_start: RayStart | None = None
    """What Ray is told the head has, e.g. ``RayStart(cpus=0)``: no task or actor runs
    beside Ray's control plane and the RayJobs' entrypoints."""
    head_volumes: list[AnyVolume] = []
    """Volumes mounted on the head pod only, beside the job's ``volumes`` (which every pod
    gets), e.g. ``[EmptyDir(name="ray-logs", path="/tmp/ray")]`` for the head's logs; held to
    the same grants and rules, and named apart from the job's."""
    head_service: HeadService | None = None
    """The head's Service: its name and type (``HeadService``); default KubeRay's headless
    ``<cluster>-head-svc``, inside the cluster. RayJobs on the cluster submit through it."""

    @field_validator("name")
    @classmethod
    def _short(cls, name: str) -> str:
        if len(name) > MAX_RAYCLUSTER_NAME:
            raise ValueError(
                f"name is {len(name)} characters; KubeRay takes at most {MAX_RAYCLUSTER_NAME} "
                "for a RayCluster (validation.go ValidateRayClusterMetadata), shorten it"
            )
        return name

    @model_validator(mode="after")
    def _one_program(self) -> RayCluster:
        # Replaces PodJob's: a RayCluster has no program; KubeRay starts `ray start` in each
        # pod (common/pod.go BuildPod), RayJobs bring the code.
        given = sorted(f for f in ("script", "command", "args") if getattr(self, f))
        if given:
            raise ValueError(
                f"a RayCluster runs no program of its own ({', '.join(given)} given): KubeRay "
                "starts Ray in each pod; submit code with a RayJob that names the cluster, "
                "RayJob(ray_cluster=..., command=[...])"
            )
        check_volumes(self.volumes)
        check_ray_groups(self)
        return self

    def group_volume_fields(self) -> list[tuple[str, AnyVolume]]:
        """The head's and the worker groups' own volumes, with their fields."""
        return ray_group_volume_fields(self)

    @model_validator(mode="after")
    def _coherent(self) -> RayCluster:
        if len(self.object_name) > MAX_RAYCLUSTER_NAME:
            raise ValueError(
                f"name {self.object_name!r} (with its run) is {len(self.object_name)} "
                f"characters; KubeRay takes at most {MAX_RAYCLUSTER_NAME}: shorten the name"
            )
        whole_cpus(self.head, "head")
        if self.head_ray_start is not None:
            self.head_ray_start.check(self.head, "the head")
        if self.autoscaled and self.service_account is not None:
            raise ValueError(
                "an autoscaling Ray cluster's head runs under KubeRay's autoscaler "
                "ServiceAccount, which would replace service_account: drop one of them"
            )
        dupes = repeated(g.name for g in self.workers)
        if dupes:
            raise ValueError(f"worker groups share the name {dupes[0]!r}; name each group once")
        for g in self.workers:
            low, high = g.scaling
            if low != high and "nodes" in g.model_fields_set and g.nodes != low:
                # The count is the autoscaler's once the cluster runs: git carries none (Argo
                # CD would set it back), so KubeRay starts the group at minReplicas.
                raise ValueError(
                    f"worker group {g.name!r} autoscales ({low}..{high}) and starts with "
                    f"min_nodes workers, then the autoscaler sets the count; nodes={g.nodes} "
                    f"would not be kept: drop nodes or set it to {low}"
                )
        return self

    @property
    def autoscaled(self) -> bool:
        """Whether a group scales (KubeRay's ``enableInTreeAutoscaling``)."""
        return any(low != high for low, high in (g.scaling for g in self.workers))

    @property
    def nodes(self) -> int:
        """Ray pods the cluster starts with: the head and every group's workers (an
        autoscaled group's ``min_nodes``)."""
        return 1 + sum(self.starting_nodes(g) for g in self.workers)

    @staticmethod
    def starting_nodes(group: WorkerGroup) -> int:
        """Pods a group starts with: ``nodes`` workers, or ``min_nodes`` when it autoscales,
        of ``hosts`` pods each."""
        low, high = group.scaling
        return (low if low != high else group.nodes) * group.hosts
