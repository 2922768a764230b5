"""What an elastic PyTorchJob's autoscaler scales its Workers by: the ``autoscaling/v2``
``MetricSpec`` entries the Training Operator copies into its HorizontalPodAutoscaler
(training-operator v1.9.4 pkg/controller.v1/pytorch/hpa.go desiredHPA: ``Metrics:
ElasticPolicy.Metrics``, unchanged).

The operator creates the autoscaler itself, so an entry the API server refuses never
reaches Argo CD: the operator's create fails on every reconcile and the job never scales.
The models therefore refuse what Kubernetes' HPA validation refuses (k8s.io/kubernetes
pkg/apis/autoscaling/validation/validation.go validateMetricSpec and the validate*Source
beside it), and write each target with the type its value needs (for an Object metric the
HPA controller reads ``value`` only under ``type: Value`` and ``averageValue`` only under
``type: AverageValue``, pkg/controller/podautoscaler/horizontal.go
computeStatusForObjectMetric).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag, model_validator

from ..kube.quantities import parse_quantity
from .base import TrainkitModel
from .fields import CpuQuantity, LabelKey, LabelValue, ObjectName, must_match, pattern_schema

__all__ = [
    "AnyMetric",
    "ExternalMetric",
    "MetricName",
    "ObjectMetric",
    "PodsMetric",
    "ResourceMetric",
]

_METRIC_NAME = re.compile(r"(?!\.\.?$)[^/%\s]{1,253}")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
_API_VERSION = re.compile(r"([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?")


# validation.go validateMetricIdentifier: a name the metrics APIs can take as one path segment
# (apimachinery path.IsValidPathSegmentName: not '.' or '..', no '/' or '%').
MetricName = Annotated[
    str,
    AfterValidator(
        must_match(
            _METRIC_NAME,
            "{v!r} is not a metric name: the metrics APIs take it as one URL path segment "
            "(1-253 characters, no '/', '%' or spaces, not '.' or '..'), e.g. "
            "'samples_per_second'",
        )
    ),
    pattern_schema(_METRIC_NAME),
]
"""A custom or external metric's name, as its metrics adapter serves it."""
Kind = Annotated[
    str,
    AfterValidator(
        must_match(
            _KIND, "{v!r} is not an object kind: give a kind such as 'Service' or 'Deployment'"
        )
    ),
    pattern_schema(_KIND),
]
ApiVersion = Annotated[
    str,
    AfterValidator(
        must_match(
            _API_VERSION,
            "{v!r} is not an API version: give '<group>/<version>' or a core version, e.g. "
            "'apps/v1' or 'v1'",
        )
    ),
    pattern_schema(_API_VERSION),
]


def _positive(what: str, field: str, value: object) -> None:
    # validation.go validateMetricTarget: a value or averageValue must be positive.
    if value is not None and not parse_quantity(value):
        raise ValueError(
            f"{what}: {field} {value!r} must be a positive quantity (the autoscaler refuses 0)"
        )


def _identifier(name: str, selector: dict[str, str]) -> dict[str, Any]:
    metric: dict[str, Any] = {"name": name}
    if selector:
        metric["selector"] = {"matchLabels": dict(selector)}
    return metric


def _value_or_average(what: str, value: object, average: object) -> dict[str, Any]:
    """The target of an Object or External metric: exactly one of ``value`` (the metric as a
    whole) and ``average`` (the metric divided by the Workers)."""
    # validation.go validateObjectSource / validateExternalSource: value or averageValue,
    # and an external metric may not set both.
    if (value is None) == (average is None):
        raise ValueError(
            f"{what}: give exactly one target, value=<the metric's target> or "
            "average=<the metric's target per Worker>"
        )
    _positive(what, "value", value)
    _positive(what, "average", average)
    if value is not None:
        return {"type": "Value", "value": value}
    return {"type": "AverageValue", "averageValue": average}


class ResourceMetric(TrainkitModel):
    """A Horizontal Pod Autoscaler metric on the Workers' own use of CPU or memory
    (``autoscaling/v2`` ``type: Resource``), e.g. ``ResourceMetric(resource="cpu",
    utilization=80)``: the autoscaler adds Workers while their average use is above the
    target and removes them while it is below."""

    resource: Literal["cpu", "memory"]
    """What the Workers use: ``cpu`` or ``memory`` (of the whole pod)."""
    utilization: int | None = Field(default=None, ge=1, le=2**31 - 1)
    """Target average use in percent of each pod's request (``averageUtilization``); the
    requests are the job's ``resources``."""
    average: CpuQuantity | None = None
    """Target average use per pod as a quantity (``averageValue``: ``"3"`` CPUs, ``"12Gi"``);
    instead of ``utilization``."""

    @model_validator(mode="after")
    def _one_target(self) -> ResourceMetric:
        # k8s.io/kubernetes pkg/apis/autoscaling/validation/validation.go validateMetricTarget:
        # Utilization needs averageUtilization > 0, AverageValue a positive averageValue.
        if (self.utilization is None) == (self.average is None):
            raise ValueError(
                f"{self.resource} metric: give exactly one target, utilization=<percent of the "
                "request> or average=<quantity per pod>"
            )
        if self.average is not None and not parse_quantity(self.average):
            raise ValueError(
                f"{self.resource} metric: average {self.average!r} must be a positive quantity "
                "(the autoscaler refuses 0)"
            )
        return self

    def spec(self) -> dict[str, Any]:
        """The ``MetricSpec`` the operator copies into its HorizontalPodAutoscaler."""
        target: dict[str, Any] = (
            {"type": "Utilization", "averageUtilization": self.utilization}
            if self.utilization is not None
            else {"type": "AverageValue", "averageValue": self.average}
        )
        return {"type": "Resource", "resource": {"name": self.resource, "target": target}}


class _TypedMetric(TrainkitModel):
    """A metric whose ``type`` names it in its data: a definition's objects reach the loader
    as JSON of the fields a definition set (load/worker.py), where a Pods and an External
    metric with an ``average`` would read alike."""

    @model_validator(mode="before")
    @classmethod
    def _typed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" not in data:
            return {**data, "type": cls.model_fields["type"].default}
        return data


class PodsMetric(_TypedMetric):
    """A metric each Worker reports of itself (``type: Pods``), averaged over the Workers,
    e.g. ``PodsMetric(metric="samples_per_second", average="400")``: the autoscaler adds
    Workers while the average is above ``average`` and removes them while it is below. The
    cluster's custom metrics adapter (e.g. prometheus-adapter) must serve it."""

    type: Literal["Pods"] = "Pods"
    """The autoscaler's metric source type, set for you (``"Pods"``)."""
    metric: MetricName
    """The metric's name, as the custom metrics API serves it per pod."""
    selector: dict[LabelKey, LabelValue] = {}
    """Labels that narrow the metric's series (``metric.selector.matchLabels``)."""
    average: CpuQuantity
    """Target value per Worker (``averageValue``), a quantity: ``"400"``, ``"1500m"``."""

    @model_validator(mode="after")
    def _target(self) -> PodsMetric:
        # validation.go validatePodsSource: a Pods metric needs a positive averageValue.
        _positive(f"pods metric {self.metric!r}", "average", self.average)
        return self

    def spec(self) -> dict[str, Any]:
        """The ``MetricSpec`` the operator copies into its HorizontalPodAutoscaler."""
        target = {"type": "AverageValue", "averageValue": self.average}
        return {
            "type": "Pods",
            "pods": {"metric": _identifier(self.metric, self.selector), "target": target},
        }


class ObjectMetric(_TypedMetric):
    """A metric of one other object in the job's namespace (``type: Object``), e.g. the
    backlog of a queue's Service: ``ObjectMetric(metric="backlog", object_kind="Service",
    object_name="ingest", value="1000")``. With ``value`` the autoscaler scales the Workers by the
    metric against the target; with ``average``, by the metric divided by the Workers."""

    type: Literal["Object"] = "Object"
    """The autoscaler's metric source type, set for you (``"Object"``)."""
    metric: MetricName
    """The metric's name, as the custom metrics API serves it for the object."""
    object_kind: Kind
    """The object's kind (``describedObject.kind``), e.g. ``"Service"``."""
    object_name: ObjectName
    """The object's name (``describedObject.name``); it is looked up in the job's namespace."""
    object_api_version: ApiVersion | None = None
    """The object's API version (``describedObject.apiVersion``), e.g. ``"v1"``,
    ``"apps/v1"``."""
    selector: dict[LabelKey, LabelValue] = {}
    """Labels that narrow the metric's series (``metric.selector.matchLabels``)."""
    value: CpuQuantity | None = None
    """Target value of the metric (``type: Value``)."""
    average: CpuQuantity | None = None
    """Target value of the metric per Worker (``type: AverageValue``), instead of ``value``."""

    def spec(self) -> dict[str, Any]:
        """The ``MetricSpec`` the operator copies into its HorizontalPodAutoscaler."""
        described: dict[str, Any] = {"kind": self.object_kind, "name": self.object_name}
        if self.object_api_version is not None:
            described = {"apiVersion": self.object_api_version, **described}
        return {
            "type": "Object",
            "object": {
                "describedObject": described,
                "metric": _identifier(self.metric, self.selector),
                "target": _value_or_average(
                    f"object metric {self.metric!r}", self.value, self.average
                ),
            },
        }

    @model_validator(mode="after")
    def _target(self) -> ObjectMetric:
        self.spec()
        return self


class ExternalMetric(_TypedMetric):
    """A metric from outside the cluster's objects (``type: External``), e.g. a cloud queue's
    length: ``ExternalMetric(metric="sqs_messages_visible", selector={"queue": "ingest"},
    average="200")``. The cluster's external metrics adapter must serve it. With ``value``
    the autoscaler scales the Workers by the metric against the target; with ``average``, by
    the metric divided by the Workers."""

    type: Literal["External"] = "External"
    """The autoscaler's metric source type, set for you (``"External"``)."""
    metric: MetricName
    """The metric's name, as the external metrics API serves it."""
    selector: dict[LabelKey, LabelValue] = {}
    """Labels that pick the metric's series (``metric.selector.matchLabels``)."""
    value: CpuQuantity | None = None
    """Target value of the metric (``type: Value``)."""
    average: CpuQuantity | None = None
    """Target value of the metric per Worker (``type: AverageValue``), instead of ``value``."""

    def spec(self) -> dict[str, Any]:
        """The ``MetricSpec`` the operator copies into its HorizontalPodAutoscaler."""
        return {
            "type": "External",
            "external": {
                "metric": _identifier(self.metric, self.selector),
                "target": _value_or_average(
                    f"external metric {self.metric!r}", self.value, self.average
                ),
            },
        }

    @model_validator(mode="after")
    def _target(self) -> ExternalMetric:
        self.spec()
        return self


def _metric_type(v: Any) -> str:
    """The tag of a metric object or of its data (a ResourceMetric carries none)."""
    found = v.get("type") if isinstance(v, dict) else getattr(v, "type", None)
    return str(found or "Resource")


AnyMetric = Annotated[
    Annotated[ResourceMetric, Tag("Resource")]
    | Annotated[PodsMetric, Tag("Pods")]
    | Annotated[ObjectMetric, Tag("Object")]
    | Annotated[ExternalMetric, Tag("External")],
    Discriminator(_metric_type),
]
"""Every metric an elastic PyTorchJob's autoscaler may scale by."""
