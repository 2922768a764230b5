"""Kueue (v0.19) platform objects: where jobs are admitted on a cluster with
``scheduler="kueue"`` instead of Volcano.

Rules cite kubernetes-sigs/kueue at v0.19.2: apis/kueue/v1beta2/clusterqueue_types.go and
pkg/webhooks/clusterqueue_webhook.go (validateClusterQueueSpec: limits without a cohort, a
lending limit above the quota, a flavor twice; validatePreemption: borrowing preemption without
reclaiming; validateAdmissionCheckOnFlavors), pkg/webhooks/common.go (validateFairSharing),
resourceflavor_types.go (at most 8 node labels).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..kube.quantities import parse_quantity
from .base import TrainkitModel
from .fields import ClusterRef, DNS1123Label, LabelKey, LabelValue, ObjectName
from .job import repeated
from .platform import Capacity

__all__ = [
    "KUEUE_FRAMEWORKS",
    "AdmissionCheckRule",
    "ClusterQueue",
    "FlavorQuota",
    "ResourceFlavor",
    "WorkloadPriorityClass",
]

KUEUE_FRAMEWORKS = {
    "PyTorchJob": "kubeflow.org/pytorchjob",
    "TFJob": "kubeflow.org/tfjob",
    "PaddleJob": "kubeflow.org/paddlejob",
    "XGBoostJob": "kubeflow.org/xgboostjob",
    "JAXJob": "kubeflow.org/jaxjob",
    "MPIJob": "kubeflow.org/mpijob",
    "RayJob": "ray.io/rayjob",
    "RayCluster": "ray.io/raycluster",
    "TrainJob": "trainer.kubeflow.org/trainjob",
}
"""Kueue's ``integrations.frameworks`` name of each job kind (pkg/controller/jobs/*)."""


class ResourceFlavor(TrainkitModel):
    """A kind of node Kueue hands quota out for (``kueue.x-k8s.io/v1beta2``, cluster-scoped),
    e.g. ``ResourceFlavor(name="h100", node_labels={"gpu.product": "H100"})``. Kueue adds its
    node labels to the pods of each job it admits on the flavor."""

    name: DNS1123Label
    """Flavor name; ClusterQueues give quota per flavor."""
    node_labels: dict[LabelKey, LabelValue] = Field(default={}, max_length=8)
    """Labels of the flavor's nodes (at most 8)."""
    topology_name: ObjectName | None = None
    """The Topology of the flavor's nodes (one of the cluster's ``kueue_topologies``), for
    jobs' ``kueue_topology``; Kueue wants node labels beside it."""
    clusters: list[ClusterRef] | None = None
    """Clusters the flavor exists on; ``None`` means every Kueue cluster."""

    @model_validator(mode="after")
    def _labelled(self) -> ResourceFlavor:
        # The CRD's rule: "at least one nodeLabel is required when topology is set"
        # (apis/kueue/v1beta2/resourceflavor_types.go).
        if self.topology_name is not None and not self.node_labels:
            raise ValueError(
                "topology_name needs node_labels (Kueue refuses a flavor with a topology and "
                "no node label): give the labels of the flavor's nodes"
            )
        return self


class FlavorQuota(TrainkitModel):
    """A ClusterQueue's quota of one flavor."""

    flavor: DNS1123Label
    """The ResourceFlavor."""
    quota: Capacity
    """What the queue's jobs may use together on the flavor (``nominalQuota``)."""
    borrowing_limit: Capacity | None = None
    """How much more the queue may borrow from its cohort (none: as much as the cohort lends)."""
    lending_limit: Capacity | None = None
    """How much of its unused quota the queue may lend to its cohort (none: all of it)."""


class AdmissionCheckRule(TrainkitModel):
    """An AdmissionCheck a ClusterQueue's jobs must pass before Kueue admits them, e.g.
    ``AdmissionCheckRule(check="gpu-provisioning", on_flavors=["h100"])``."""

    check: ObjectName
    """The AdmissionCheck, one listed in the cluster's ``kueue_admission_checks``."""
    on_flavors: list[DNS1123Label] = Field(default=[], max_length=64)
    """Only jobs given these flavors go through the check (flavors of the queue); none: every
    job of the queue."""


class ClusterQueue(TrainkitModel):
    """Quota that Kueue admits jobs against (``kueue.x-k8s.io/v1beta2``, cluster-scoped); the
    teams that list it in ``Team.queues`` get a LocalQueue of the same name in their namespace."""

    name: DNS1123Label
    """Queue name; teams list the queues they may use."""
    flavors: list[FlavorQuota] = Field(min_length=1, max_length=64)
    """Quota per flavor, tried in order: ``[FlavorQuota(flavor="h100", quota=Capacity(...))]``."""
    cohort: DNS1123Label | None = None
    """Queues of one cohort borrow each other's unused quota."""
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    """Whether a job may preempt another queue's jobs to get back lent quota: ``Never``,
    ``LowerPriority`` or ``Any``."""
    within_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    """Whether a job may preempt the queue's own jobs: ``Never``, ``LowerPriority`` or
    ``LowerOrNewerEqualPriority``."""
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"
    """Whether a job that must borrow may preempt lower-priority jobs of the cohort's other
    queues (``LowerPriority``); needs ``reclaim_within_cohort`` other than ``Never``."""
    borrow_max_priority: int | None = Field(default=None, ge=-(2**31), lt=2**31)
    """With ``borrow_within_cohort="LowerPriority"``: only jobs of at most this priority may be
    preempted by a borrowing job (none: any of lower priority)."""
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    """Order of admission: ``BestEffortFIFO`` (oldest first, but a job that does not fit lets
    newer ones that fit pass) or ``StrictFIFO`` (an older job that does not fit blocks the
    newer ones)."""
    fair_sharing_weight: Decimal | int | float | None = Field(default=None, ge=0)
    """With fair sharing on in the cluster's Kueue configuration (the platform's, not
    trainkit's): the queue's weight when the cohort's queues compete for what is lent; its
    share of the borrowed resources is divided by it, so a higher weight gets more. ``0``
    always loses; none: Kueue's default, 1."""
    admission_checks: list[AdmissionCheckRule | ObjectName] = Field(default=[], max_length=64)
    """AdmissionChecks every job of the queue passes before it is admitted, by name
    (``"gpu-provisioning"``) or with the flavors it applies to
    (``AdmissionCheckRule(check=..., on_flavors=[...])``); each must be one the cluster
    lists in ``kueue_admission_checks``."""
    clusters: list[ClusterRef] | None = None
    """Clusters the queue exists on; ``None`` means every Kueue cluster."""

    @field_validator("fair_sharing_weight", mode="before")
    @classmethod
    def _exact_weight(cls, value: object) -> object:
        # A float becomes the decimal it is written as (0.1, not 0.1000000000000000055…).
        if isinstance(value, float) and math.isfinite(value):
            return Decimal(repr(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return Decimal(value)
        return value

    @property
    def weight(self) -> Decimal | None:
        """``fair_sharing_weight`` as a decimal (the validator stores one)."""
        w = self.fair_sharing_weight
        return None if w is None else Decimal(str(w))

    def check_rules(self) -> list[AdmissionCheckRule]:
        """``admission_checks`` with every entry as a rule."""
        return [
            a if isinstance(a, AdmissionCheckRule) else AdmissionCheckRule(check=a)
            for a in self.admission_checks
        ]

    def covered(self, gpu_resource: str) -> list[str]:
        """The resources of the queue's one resource group: those any flavor quotes (cpu,
        memory, then the rest by name: ephemeral-storage, the GPUs, extended resources), which
        every flavor then quotes, in that order (Kueue's webhook wants the same names in the
        same order). A job requesting a resource outside them is never admitted."""
        names: list[str] = []
        for fq in self.flavors:
            for limit in (fq.quota, fq.borrowing_limit, fq.lending_limit):
                if limit is None:
                    continue
                for name in limit.amounts(gpu_resource, zero_gpu=True):
                    if name not in names:
                        names.append(name)
        order = {"cpu": 0, "memory": 1}
        return sorted(names, key=lambda n: (order.get(n, 2), n))

    @model_validator(mode="after")
    def _coherent(self) -> ClusterQueue:
        if not self.covered("gpu"):
            raise ValueError(
                "the flavors quote no resource; give each a quota, e.g. "
                "FlavorQuota(flavor=..., quota=Capacity(cpu=64, memory='512Gi', gpu=8))"
            )
        dupes = repeated(f.flavor for f in self.flavors)
        if dupes:
            raise ValueError(f"flavor {dupes[0]!r} is listed twice; give each flavor once")
        for f in self.flavors:
            for field in ("borrowing_limit", "lending_limit"):
                if getattr(f, field) is not None and self.cohort is None:
                    raise ValueError(
                        f"flavor {f.flavor!r} has a {field}, which needs a cohort to borrow from "
                        "or lend to (Kueue refuses it): set cohort= or drop it"
                    )
            if f.lending_limit is not None:
                quotas = f.quota.amounts("gpu", zero_gpu=True)
                for key, lend in f.lending_limit.amounts("gpu", zero_gpu=True).items():
                    quota = quotas.get(key)
                    if quota is None or (parse_quantity(lend) or 0) > (parse_quantity(quota) or 0):
                        raise ValueError(
                            f"flavor {f.flavor!r} lends more {key} ({lend}) than its quota "
                            f"({quota or 'none'}); Kueue refuses a lending limit above the quota"
                        )
        # Kueue's webhook and CRD (CEL) refuse borrowing preemption without reclaiming
        # (pkg/webhooks/clusterqueue_webhook.go validatePreemption).
        if self.borrow_within_cohort != "Never" and self.reclaim_within_cohort == "Never":
            raise ValueError(
                f"borrow_within_cohort={self.borrow_within_cohort!r} needs "
                "reclaim_within_cohort other than 'Never' (Kueue refuses it): set "
                "reclaim_within_cohort='LowerPriority' or 'Any', or drop borrow_within_cohort"
            )
        if self.borrow_max_priority is not None and self.borrow_within_cohort == "Never":
            raise ValueError(
                "borrow_max_priority limits borrow_within_cohort, which is 'Never': set "
                "borrow_within_cohort='LowerPriority' or drop borrow_max_priority"
            )
        # Kueue's webhook refuses a weight above 0 and at most 10^-9 (pkg/webhooks/common.go
        # validateFairSharing: "When not 0, weight must be > 10e-9").
        w = self.weight
        if w is not None and 0 < w <= Decimal("1e-9"):
            raise ValueError(
                f"fair_sharing_weight {format(w, 'f')} is above 0 but not above 10^-9, which Kueue refuses: "
                "give 0 (always last) or a weight above 10^-9, e.g. 1"
            )
        if w is not None and self.cohort is None:
            raise ValueError(
                "fair_sharing_weight shares what a cohort lends, but the queue has no cohort: "
                "set cohort= or drop it"
            )
        rules = self.check_rules()
        twice = repeated(r.check for r in rules)
        if twice:
            raise ValueError(
                f"admission check {twice[0]!r} is listed twice (Kueue keys the list by name); "
                "give each check once, with all its flavors"
            )
        # pkg/webhooks/clusterqueue_webhook.go validateAdmissionCheckOnFlavors: onFlavors
        # must name flavors of the queue's resource groups.
        flavors = [f.flavor for f in self.flavors]
        for r in rules:
            for name in r.on_flavors:
                if name not in flavors:
                    raise ValueError(
                        f"admission check {r.check!r} applies on flavor {name!r}, which the "
                        f"queue has no quota of (Kueue refuses it); its flavors: "
                        f"{', '.join(repr(f) for f in flavors)}"
                    )
            again = repeated(r.on_flavors)
            if again:
                raise ValueError(
                    f"admission check {r.check!r} lists flavor {again[0]!r} twice; give it once"
                )
        if self.reclaim_within_cohort == "Never" or self.cohort is not None:
            return self
        raise ValueError("reclaim_within_cohort needs a cohort; set cohort= or drop it")


class WorkloadPriorityClass(TrainkitModel):
    """A priority Kueue orders and preempts jobs by, without touching the pods' own priority
    (``kueue.x-k8s.io/v1beta2``, cluster-scoped), e.g.
    ``WorkloadPriorityClass(name="urgent", value=1000)``. A job names it in
    ``workload_priority=`` when its team lists it in ``Team.workload_priority_classes``."""

    name: DNS1123Label
    """Class name; jobs give it as ``workload_priority=`` (it becomes a label value)."""
    value: int = Field(ge=-(2**31), lt=2**31)
    """The priority: a higher value is admitted first and may preempt lower ones, as the
    queues' preemption settings allow."""
    description: str = Field(default="", max_length=1000)
    """What the class is for, shown to whoever reads the object."""
    clusters: list[ClusterRef] | None = None
    """Clusters the class exists on; ``None`` means every Kueue cluster."""
