"""Where a job's pods may go beyond ``node_selector``: node label rules and the job's own
layout across a topology (racks, zones).

Volcano 1.12's ``predicates`` plugin runs Kubernetes' NodeAffinity, InterPodAffinity and
PodTopologySpread filters by default (volcano-sh/volcano pkg/scheduler/plugins/predicates/
predicates.go), so these hold for gangs as they do under kube-scheduler.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import TrainkitModel
from .fields import LabelKey, LabelValue

__all__ = [
    "KUEUE_TOPOLOGY_ANNOTATIONS",
    "KueueTopology",
    "NodeLabel",
    "PodAffinity",
    "Topology",
    "check_pod_affinity",
    "one_topology_annotation",
]


class NodeLabel(TrainkitModel):
    """A rule on a node label: required, or preferred with a ``weight``."""

    key: LabelKey
    """Node label key, e.g. ``"gpu.product"`` or ``"topology.kubernetes.io/zone"``."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = "In"
    """How the label is matched; ``In``/``NotIn`` need ``values``."""
    values: list[LabelValue] = []
    """Label values for ``In``/``NotIn``."""
    weight: int | None = Field(default=None, ge=1, le=100)
    """Without it the rule is required; with it (1–100) the scheduler prefers such nodes."""

    @model_validator(mode="after")
    def _values_fit_the_operator(self) -> NodeLabel:
        # The API server's rule (ValidateNodeSelectorRequirement).
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs values=[...]")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values; remove them")
        return self

    def requirement(self) -> dict[str, object]:
        out: dict[str, object] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out


class Topology(TrainkitModel):
    """How the job's pods lie across a topology of nodes (the label ``key`` names it)."""

    key: LabelKey
    """Node label whose values are the domains, e.g. ``"topology.kubernetes.io/zone"`` or a
    rack label."""
    layout: Literal["pack", "spread"]
    """``pack``: prefer one domain for all pods (NCCL stays inside the rack); ``spread``: at
    most ``max_skew`` more pods in one domain than in another."""
    max_skew: int = Field(default=1, ge=1)
    """With ``spread``: the largest difference of pod counts between two domains."""
    required: bool = False
    """With ``spread``: never place a pod that would break it (default: only prefer)."""

    @model_validator(mode="after")
    def _spread_only(self) -> Topology:
        if self.layout == "pack" and (self.required or self.max_skew != 1):
            raise ValueError(
                "max_skew and required apply to layout='spread'; 'pack' is a preference"
            )
        return self


KUEUE_TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)
"""The pod template annotations Kueue's topology-aware scheduling reads; a pod set may carry
one of them (kueue v0.19.2 pkg/controller/jobframework/tas_validation.go)."""


class KueueTopology(TrainkitModel):
    """On a Kueue cluster, topology-aware scheduling: Kueue admits the job only where all its
    pods fit in one domain of a topology level, e.g.
    ``KueueTopology(level="example.com/topology-rack")`` (prefer one rack) or with
    ``required=True`` (one rack or wait). The level must be one of the Topology of the
    ResourceFlavor the queue gives the job (``Cluster.kueue_topologies``)."""

    level: LabelKey
    """The node label of a level of the flavor's Topology, e.g. a rack or block label."""
    required: bool = False
    """``True``: every pod of a pod set in one domain of the level, or the job waits;
    ``False``: as few domains as Kueue can find, going up the levels when one is too small."""

    @property
    def annotation(self) -> tuple[str, str]:
        """The pod template annotation (``podset-required-topology`` or
        ``podset-preferred-topology``) and its value."""
        key = KUEUE_TOPOLOGY_ANNOTATIONS[0] if self.required else KUEUE_TOPOLOGY_ANNOTATIONS[1]
        return key, self.level


def one_topology_annotation(topology: KueueTopology | None, annotations: dict[str, str]) -> None:
    """Raise when ``pod_annotations`` set a Kueue topology annotation beside
    ``kueue_topology``: Kueue's webhook refuses a pod set with more than one
    (tas_validation.go ValidateTASPodSetRequest)."""
    if topology is None:
        return
    clash = sorted(k for k in annotations if k in KUEUE_TOPOLOGY_ANNOTATIONS)
    if clash:
        raise ValueError(
            f"pod_annotations sets {clash[0]!r} beside kueue_topology, and Kueue refuses a pod "
            "template with more than one topology annotation: drop the annotation"
        )


class PodAffinity(TrainkitModel):
    """Place the job's pods near (or, ``anti=True``, away from) pods that carry ``labels``,
    within one ``topology_key`` domain: ``PodAffinity(labels={"example.com/shard": "a"},
    anti=True)`` keeps at most one such pod per node. Required, or preferred with a
    ``weight``. Only labels the job itself sets (``pod_labels``) and only pods of its own
    namespace: a required anti-affinity holds both ways (the scheduler keeps any pod it
    matches off the nodes of the pods that carry it), so matching other pods' labels would
    steer where those go."""

    labels: dict[LabelKey, LabelValue]
    """The pods to place near or away from, by labels the job sets in ``pod_labels``."""
    topology_key: LabelKey = "kubernetes.io/hostname"
    """Node label whose values are the domains: a node (the default), a rack, a zone."""
    anti: bool = False
    """Away from those pods instead of near them."""
    weight: int | None = Field(default=None, ge=1, le=100)
    """Without it the rule is required; with it (1–100) the scheduler prefers it."""

    @model_validator(mode="after")
    def _some_labels(self) -> PodAffinity:
        if not self.labels:
            raise ValueError(
                "labels is empty, which would match every pod of the namespace; name labels "
                "the job sets in pod_labels"
            )
        return self

    def term(self) -> dict[str, object]:
        """The ``podAffinityTerm`` (the pods' own namespace: no ``namespaces``)."""
        return {
            "labelSelector": {"matchLabels": dict(self.labels)},
            "topologyKey": self.topology_key,
        }


def check_pod_affinity(rules: list[PodAffinity], pod_labels: dict[str, str]) -> None:
    """Each rule's labels are ones the job sets on its pods, with the same values."""
    for i, rule in enumerate(rules):
        foreign = sorted(k for k, v in rule.labels.items() if pod_labels.get(k) != v)
        if foreign:
            raise ValueError(
                f"pod_affinity[{i}] selects by {', '.join(f'{k}={rule.labels[k]}' for k in foreign)}, "
                "which the job does not set in pod_labels; pod affinity may use only the job's "
                "own labels (a required anti-affinity would also keep other pods away)"
            )
