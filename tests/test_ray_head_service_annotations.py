"""Annotations on an exposed Ray head Service (``HeadService(annotations=...)``), for what
provisions its address (a cloud's load balancer controller), each key and value granted per
team (``Team.ray_head_service_annotations``).

KubeRay v1.7.0 ray-operator/controllers/ray/common/service.go BuildServiceForHeadPod keeps a
``headGroupSpec.headService``'s own annotations (``headServiceAnnotations`` override them), and
common/job.go BuildHeadServiceForRayJob builds a RayJob's ``<job>-head-svc`` from that same
headService; raycluster_controller.go reconcileHeadService creates the Service once.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kind_fixtures import planned, render
from test_ray_head_service_submitter import KUBERAY, head_of, problems_of, rc, rj
from trainkit import HeadService, ModelError
from trainkit.effective import effective_job
from trainkit.explain import format_text
from trainkit.synth.layout import _cluster_objects
from trainkit.validate import validate_text
from validate_fixtures import shared_crd_set

SCHEME = "service.beta.kubernetes.io/aws-load-balancer-scheme"
RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"
LB = {"ray_head_service_types": ["LoadBalancer"]}


def lb(**annotations: str) -> HeadService:
    return HeadService(type="LoadBalancer", annotations=annotations)


INTERNAL = HeadService(type="LoadBalancer", annotations={SCHEME: "internal"})


@pytest.mark.parametrize("make", [rj, rc])
def test_granted_annotations_are_the_head_service_s_own(make: Any) -> None:
    grants = {**LB, "ray_head_service_annotations": {SCHEME: ["internal"], RANGES: ["*"]}}
    service = HeadService(
        type="LoadBalancer", annotations={SCHEME: "internal", RANGES: "10.0.0.0/8"}
    )
    body, _ = render(make(head_service=service), grants, **KUBERAY)
    head = head_of(body)
    assert head["serviceType"] == "LoadBalancer"
    # Not headServiceAnnotations: a RayJob's own <job>-head-svc is built from headService only.
    assert head["headService"] == {
        "metadata": {"annotations": {SCHEME: "internal", RANGES: "10.0.0.0/8"}}
    }
    assert "headServiceAnnotations" not in head


def test_a_name_and_annotations_together() -> None:
    service = HeadService(name="dash", type="LoadBalancer", annotations={SCHEME: "internal"})
    grants = {**LB, "ray_head_service_annotations": {SCHEME: ["internal"]}}
    body, _ = render(rj(head_service=service), grants, **KUBERAY)
    assert head_of(body)["headService"] == {
        "metadata": {"name": "dash", "annotations": {SCHEME: "internal"}}
    }


@pytest.mark.parametrize("make", [rj, rc])
def test_each_annotation_needs_its_key_and_value_granted(make: Any) -> None:
    # What it widens: an internet-facing scheme or wider source ranges open the dashboard,
    # which runs any job submitted to it, to more than the platform chose.
    job = make(head_service=lb(**{SCHEME: "internet-facing"}))
    (msg,) = problems_of(job, LB)
    assert msg == (
        f"head_service.annotations.{SCHEME}: annotation {SCHEME}='internet-facing' on the "
        "LoadBalancer head Service is read by the cloud's load balancer controller and may "
        "change who reaches the head (whose dashboard runs any job submitted to it); team 't' "
        "is not granted it (Team.ray_head_service_annotations in jobs/platform/p.py allows "
        "none): drop it, or ask the platform team to grant it"
    ), msg
    # The key granted for another value only.
    (msg,) = problems_of(job, {**LB, "ray_head_service_annotations": {SCHEME: ["internal"]}})
    assert "(Team.ray_head_service_annotations in jobs/platform/p.py allows 'internal' for it)" in (
        msg
    ), msg
    # Another key granted.
    (msg,) = problems_of(job, {**LB, "ray_head_service_annotations": {RANGES: ["*"]}})
    assert f"allows keys '{RANGES}'" in msg, msg
    # "*": any value of that key.
    render(job, {**LB, "ray_head_service_annotations": {SCHEME: ["*"]}}, **KUBERAY)


def test_the_type_grant_is_still_needed() -> None:
    found = problems_of(
        rj(head_service=INTERNAL), {"ray_head_service_annotations": {SCHEME: ["*"]}}
    )
    assert [m.split(":")[0] for m in found] == ["head_service.type"]


@pytest.mark.parametrize(
    ("service", "says"),
    [
        (
            {"annotations": {SCHEME: "internal"}},
            "annotations shape the address of a NodePort or LoadBalancer head Service (the "
            "cloud's load balancer controller reads them), but type is 'ClusterIP'",
        ),
        (
            {"type": "NodePort", "annotations": {"trainkit.dev/x": "y"}},
            "'trainkit.dev/x': keys under trainkit.dev/ are trainkit's own",
        ),
        ({"type": "NodePort", "annotations": {"Bad Key": "y"}}, "'Bad Key' is not a label key"),
    ],
)
def test_bad_annotations_are_refused_with_the_reason(service: dict[str, Any], says: str) -> None:
    for make in (rj, rc):
        with pytest.raises(ModelError) as e:
            make(head_service=service)
        assert says in str(e.value), str(e.value)
        assert "head_service" in str(e.value)


def test_explain_says_how_the_service_is_annotated() -> None:
    grants = {**LB, "ray_head_service_annotations": {SCHEME: ["internal"]}}
    body, pj = render(rj(head_service=INTERNAL), grants, **KUBERAY)
    text = format_text([effective_job(pj, body)])
    assert (
        "note: the head's Service <cluster>-head-svc (and the RayJob's own sweep-head-svc) is "
        f"annotated {SCHEME}=internal (Team grant ray_head_service_annotations)"
    ) in text, text


def test_what_is_rendered_passes_kuberay_s_crds() -> None:
    crdset = shared_crd_set()
    grants = {**LB, "ray_head_service_annotations": {SCHEME: ["internal"]}}
    for job in (rj(head_service=INTERNAL), rc(head_service=INTERNAL)):
        (cp,) = planned(job, grants, **KUBERAY).clusters
        for rendered in _cluster_objects(cp):
            assert validate_text(yaml.safe_dump(rendered.body), rendered.path, crdset) == []


def test_changed_annotations_are_not_applied_in_place() -> None:
    """KubeRay creates the head Service once (raycluster_controller.go reconcileHeadService):
    an edited annotation would never reach it, so the edit is refused in place."""
    from trainkit.deployed.immutable import in_place_changes

    grants = {**LB, "ray_head_service_annotations": {SCHEME: ["*"]}}
    old, _ = render(rc(head_service=INTERNAL), grants, **KUBERAY)
    new, _ = render(rc(head_service=lb(**{SCHEME: "internal-2"})), grants, **KUBERAY)
    assert in_place_changes(old, new) == ["spec.headGroupSpec.headService"]
