"""trainkit.render.argocd: Application, AppProject and the argocd-cm health patch.

The Application and AppProject specs are checked against the Argo CD CRDs (v3.5.1) from
``$TRAINKIT_CRDS/argocd`` (default ``<repo>/../shared/crds``; a relative value is taken from the
repository root). This is a minimal JSON-schema check of ``spec``; unknown fields are treated as
errors, as the API server would prune them. Full structural/CEL validation is
``trainkit.validate``'s job.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from trainkit.argocd import HEALTH_KEY_PREFIX, health_checks
from trainkit.render.argocd import (
    CLUSTER_RESOURCE_WHITELIST,
    IGNORE_DIFFERENCES,
    render_app_project,
    render_application,
    render_health_patch,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
REPO_URL = "https://git.example.com/ml/trainkit-deploy.git"
LABELS = {"app.kubernetes.io/managed-by": "trainkit"}


def crds_dir() -> Path:
    raw = os.environ.get("TRAINKIT_CRDS")
    base = Path(raw) if raw else Path("..") / "shared" / "crds"
    if not base.is_absolute():
        base = REPO_ROOT / base
    return base.resolve()


@cache
def argocd_crds() -> dict[str, dict[str, Any]]:
    """``{kind: CRD}`` for every CustomResourceDefinition in ``<crds>/argocd/*.yaml``."""
    directory = crds_dir() / "argocd"
    if not directory.is_dir():
        pytest.fail(
            f"Argo CD CRDs not found: {directory} is not a directory. Set TRAINKIT_CRDS to the "
            "shared CRD directory (the one containing argocd/), absolute or relative to the "
            f"repository root {REPO_ROOT}; default is ../shared/crds.",
            pytrace=False,
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds[doc["spec"]["names"]["kind"]] = doc
    for kind in ("Application", "AppProject"):
        if kind not in crds:
            pytest.fail(f"no {kind} CustomResourceDefinition in {directory}", pytrace=False)
    return crds


def closed(schema: Any) -> Any:
    """Copy of an OpenAPI schema where objects with ``properties`` reject unknown fields."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def schema_errors(obj: dict[str, Any]) -> list[str]:
    crd = argocd_crds()[obj["kind"]]
    group, _, version = obj["apiVersion"].partition("/")
    assert group == crd["spec"]["group"], obj["apiVersion"]
    served = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
    assert served, f"{obj['apiVersion']} is not a served version of {crd['metadata']['name']}"
    spec_schema = closed(served[0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    validator = jsonschema.Draft7Validator(spec_schema)
    return [
        f"{'.'.join(['spec', *(str(p) for p in error.absolute_path)])}: {error.message}"
        for error in validator.iter_errors(obj["spec"])
    ]


def application(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "cluster": "gpu-a",
        "server": "https://kubernetes.default.svc",
        "destination_name": None,
        "repo_url": REPO_URL,
        "revision": "main",
        "path": "generated/clusters/gpu-a",
        "project": "trainkit",
        "argocd_namespace": "argocd",
        "labels": dict(LABELS),
    }
    kwargs.update(overrides)
    return render_application(**kwargs)


def app_project(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "name": "trainkit",
        "argocd_namespace": "argocd",
        "repo_url": REPO_URL,
        "destinations": [
            {"server": "https://kubernetes.default.svc", "namespace": "*"},
            {"name": "gpu-b", "namespace": "*"},
        ],
        "labels": dict(LABELS),
    }
    kwargs.update(overrides)
    return render_app_project(**kwargs)


# --- the schema check itself -------------------------------------------------------------------


def test_crds_dir_resolves_relative_to_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINKIT_CRDS", "../shared/crds")
    assert crds_dir() == (REPO_ROOT / ".." / "shared" / "crds").resolve()
    monkeypatch.delenv("TRAINKIT_CRDS")
    assert crds_dir() == (REPO_ROOT / ".." / "shared" / "crds").resolve()


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda s: s["syncPolicy"].__setitem__("autoSync", True), "spec.syncPolicy"),
        (
            lambda s: s["syncPolicy"]["retry"].__setitem__("limit", "5"),
            "spec.syncPolicy.retry.limit",
        ),
        (lambda s: s["ignoreDifferences"][0].pop("kind"), "spec.ignoreDifferences.0"),
        (lambda s: s.pop("project"), "spec"),
    ],
    ids=["unknown-field", "wrong-type", "missing-required-item-field", "missing-project"],
)
def test_schema_check_catches_mistakes(mutate: Any, where: str) -> None:
    app = application()
    mutate(app["spec"])
    errors = schema_errors(app)
    assert errors
    assert any(e.startswith(where + ":") for e in errors), errors


# --- Application -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "name", "destination"),
    [
        ("https://10.0.0.1:6443", None, {"server": "https://10.0.0.1:6443"}),
        (None, "gpu-a", {"name": "gpu-a"}),
    ],
    ids=["server", "name"],
)
def test_application_validates_and_has_one_destination(
    server: str | None, name: str | None, destination: dict[str, str]
) -> None:
    app = application(server=server, destination_name=name)
    assert schema_errors(app) == []
    assert list(app) == ["apiVersion", "kind", "metadata", "spec"]
    assert app["apiVersion"] == "argoproj.io/v1alpha1"
    assert app["kind"] == "Application"
    assert app["metadata"] == {"name": "trainkit-gpu-a", "namespace": "argocd", "labels": LABELS}
    assert app["spec"]["destination"] == destination
    assert len({"server", "name"} & set(app["spec"]["destination"])) == 1


def test_application_spec() -> None:
    spec = application()["spec"]
    assert spec["project"] == "trainkit"
    assert spec["source"] == {
        "repoURL": REPO_URL,
        "targetRevision": "main",
        "path": "generated/clusters/gpu-a",
    }
    policy = spec["syncPolicy"]
    assert policy["automated"] == {"prune": True, "selfHeal": True}
    assert policy["syncOptions"] == ["ServerSideApply=true", "RespectIgnoreDifferences=true"]
    assert not any(o.startswith("CreateNamespace") for o in policy["syncOptions"])
    assert policy["retry"]["limit"] >= 1
    assert set(policy["retry"]["backoff"]) == {"duration", "factor", "maxDuration"}


def test_application_ignores_kueue_suspend() -> None:
    ignored = {
        (d["group"], d["kind"]): d["jsonPointers"]
        for d in application()["spec"]["ignoreDifferences"]
    }
    assert ignored == {
        ("kubeflow.org", "PyTorchJob"): ["/spec/runPolicy/suspend"],
        ("trainer.kubeflow.org", "TrainJob"): ["/spec/suspend"],
    }
    trainjob = application()["spec"]["ignoreDifferences"][1]
    assert trainjob["jqPathExpressions"] == [
        '.spec.runtimePatches[] | select(.manager == "kueue.x-k8s.io/manager")'
    ]


@pytest.mark.parametrize(
    ("server", "name", "match"),
    [
        ("https://kubernetes.default.svc", "in-cluster", "not both"),
        (None, None, "server or as name"),
        ("", None, "server must not be empty"),
        (None, "", "name must not be empty"),
    ],
    ids=["both", "neither", "empty-server", "empty-name"],
)
def test_application_destination_guard(server: str | None, name: str | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        application(server=server, destination_name=name)


def test_application_is_a_fresh_object_each_time() -> None:
    first = application()
    first["spec"]["ignoreDifferences"][0]["jsonPointers"].append("/spec/x")
    first["spec"]["syncPolicy"]["retry"]["backoff"]["factor"] = 99
    first["metadata"]["labels"]["x"] = "y"
    assert application() != first
    assert IGNORE_DIFFERENCES[0]["jsonPointers"] == ["/spec/runPolicy/suspend"]
    assert "x" not in LABELS


def test_application_without_labels_has_no_labels_key() -> None:
    assert "labels" not in application(labels={})["metadata"]


# --- AppProject --------------------------------------------------------------------------------


def test_app_project_validates() -> None:
    project = app_project()
    assert schema_errors(project) == []
    assert list(project) == ["apiVersion", "kind", "metadata", "spec"]
    assert project["kind"] == "AppProject"
    assert project["metadata"] == {"name": "trainkit", "namespace": "argocd", "labels": LABELS}


def test_app_project_restrictions() -> None:
    spec = app_project()["spec"]
    assert spec["sourceRepos"] == [REPO_URL]
    assert spec["destinations"] == [
        {"server": "https://kubernetes.default.svc", "namespace": "*"},
        {"name": "gpu-b", "namespace": "*"},
    ]
    assert spec["clusterResourceWhitelist"] == [
        {"group": "", "kind": "Namespace"},
        {"group": "scheduling.volcano.sh", "kind": "Queue"},
        {"group": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
    ]
    assert spec["namespaceResourceWhitelist"] == [
        {"group": "", "kind": "ConfigMap"},
        {"group": "kubeflow.org", "kind": "PyTorchJob"},
        {"group": "trainer.kubeflow.org", "kind": "TrainJob"},
        {"group": "trainer.kubeflow.org", "kind": "TrainingRuntime"},
    ]
    assert len(spec["clusterResourceWhitelist"]) == len(CLUSTER_RESOURCE_WHITELIST)


def test_app_project_copies_destinations() -> None:
    destinations = [{"name": "gpu-b", "namespace": "ml-*"}]
    project = app_project(destinations=destinations)
    project["spec"]["destinations"][0]["namespace"] = "*"
    assert destinations == [{"name": "gpu-b", "namespace": "ml-*"}]


@pytest.mark.parametrize(
    ("destinations", "match"),
    [
        ([], "at least one destination"),
        ([{"server": "https://a", "name": "a", "namespace": "*"}], "not both"),
        ([{"namespace": "*"}], "server or as name"),
        ([{"server": "https://a"}], "namespace is required"),
        ([{"server": "https://a", "namespace": "*", "project": "x"}], "unknown keys"),
    ],
    ids=["none", "both", "neither", "no-namespace", "unknown-key"],
)
def test_app_project_destination_guard(destinations: list[dict[str, str]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        app_project(destinations=destinations)


# --- argocd-cm health patch --------------------------------------------------------------------


def test_health_patch() -> None:
    checks = health_checks()
    patch = render_health_patch(argocd_namespace="argo", checks=checks)
    assert list(patch) == ["apiVersion", "kind", "metadata", "data"]
    assert patch["apiVersion"] == "v1"
    assert patch["kind"] == "ConfigMap"
    assert patch["metadata"] == {
        "name": "argocd-cm",
        "namespace": "argo",
        "labels": {"app.kubernetes.io/part-of": "argocd"},
    }
    assert patch["data"] == checks
    assert set(patch["data"]) == {
        "resource.customizations.health.kubeflow.org_PyTorchJob",
        "resource.customizations.health.trainer.kubeflow.org_TrainJob",
        "resource.customizations.health.scheduling.volcano.sh_Queue",
    }
    for key, source in patch["data"].items():
        # ConfigMap key syntax, and the "<group>_<Kind>" form Argo CD splits on "_".
        assert re.fullmatch(r"[-._a-zA-Z0-9]+", key), key
        assert key.startswith(HEALTH_KEY_PREFIX)
        assert key.removeprefix(HEALTH_KEY_PREFIX).count("_") == 1, key
        assert isinstance(source, str)
        assert source.strip()


def test_health_patch_copies_checks() -> None:
    checks = {"resource.customizations.health.example.com_Thing": "return {status='Healthy'}"}
    patch = render_health_patch(argocd_namespace="argocd", checks=checks)
    assert patch["data"] is not checks
    patch["data"]["x"] = "y"
    assert list(checks) == ["resource.customizations.health.example.com_Thing"]
