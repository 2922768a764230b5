"""trainkit.render.argocd: the root Application, the cluster Applications, the AppProjects and
the health-check delivery (argocd-cm patch, kustomize Component, argocd-operator snippet).

Every Argo CD object is checked against the Argo CD CRDs (v3.5.1) from ``$TRAINKIT_CRDS/argocd``
(default ``<repo>/../shared/crds``; a relative value is taken from the repository root). This is
a minimal JSON-schema check of ``spec``; unknown fields are treated as errors, as the API server
would prune them. Full structural/CEL validation is ``trainkit.validate``'s job.

The AppProject tests run a small model of Argo CD's permission checks
(``pkg/apis/application/v1alpha1/app_project_types.go``: ``IsGroupKindNamePermitted``,
``IsResourcePermitted``, ``isDestinationMatched``) over every object trainkit generates.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from trainkit.health import HEALTH_KEY_PREFIX, health_checks
from trainkit.load import load_jobs
from trainkit.render.argocd import (
    BOOTSTRAP_FIELD_MANAGER,
    COMPONENT_DIR,
    HEALTH_CHECKS_FIELD_MANAGER,
    IGNORE_DIFFERENCES,
    IN_CLUSTER,
    NAMESPACE_ANNOTATIONS,
    OPERATOR_FILE,
    RESOURCES_FINALIZER,
    ArgoFile,
    ClusterTarget,
    argocd_files,
    project_destinations,
    render_app_project,
    render_application,
    render_health_component,
    render_health_patch,
    render_operator_health_checks,
)
from trainkit.render.cluster_scoped import render_namespace
from trainkit.resolve import build_plan
from trainkit.synth import synthesize

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
            {"server": "https://10.0.0.1:6443", "namespace": ""},
            {"server": "https://10.0.0.1:6443", "namespace": "vision"},
            {"name": "gpu-b", "namespace": ""},
        ],
        "namespaces": ["vision"],
        "labels": dict(LABELS),
    }
    kwargs.update(overrides)
    return render_app_project(**kwargs)


def files_of(root: Path, jobs: Path) -> dict[str, ArgoFile]:
    plan = build_plan(load_jobs(jobs, root).definitions)
    return {f.path: f for f in argocd_files(plan, health_checks())}


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


# --- what generated/argocd/ holds --------------------------------------------------------------


def test_every_argo_cd_object_validates_against_the_crds(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    objects = [
        f.body for f in files.values() if f.body.get("apiVersion", "").startswith("argoproj")
    ]
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["AppProject", "AppProject", *["Application"] * 5]
    for obj in objects:
        assert schema_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
        assert list(obj) == ["apiVersion", "kind", "metadata", "spec"]


def test_layout_and_what_the_root_syncs(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    assert sorted(files) == [
        "argocd/application-a800-north.yaml",
        "argocd/application-gpu-east.yaml",
        "argocd/application-h100-south.yaml",
        "argocd/application-rocm-west.yaml",
        "argocd/appproject.yaml",
        "argocd/argocd-operator/resource-health-checks.yaml",
        "argocd/components/health-checks/argocd-cm.yaml",
        "argocd/components/health-checks/kustomization.yaml",
        "argocd/kustomization.yaml",
        "argocd/root-application.yaml",
        "argocd/root-appproject.yaml",
    ]
    kustomization = files["argocd/kustomization.yaml"]
    assert kustomization.kustomize
    # The root syncs Argo CD objects only: argocd-cm belongs to the Argo CD install.
    listed = kustomization.body["resources"]
    assert listed == sorted(
        p.removeprefix("argocd/")
        for p, f in files.items()
        if f.body.get("kind") in ("Application", "AppProject")
    )
    assert all("/" not in p for p in listed)
    assert files["argocd/application-gpu-east.yaml"].source == "jobs/platform/clusters.py"
    assert files["argocd/appproject.yaml"].source == "jobs/platform/"


def test_no_argocd_definition_no_files(bare: Any) -> None:
    platform = bare.root / "jobs/platform/platform.py"
    platform.write_text(
        platform.read_text()
        .replace("ArgoCD, ", "")
        .replace('argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")\n', "")
    )
    assert files_of(bare.root, bare.jobs) == {}


# --- cluster Applications ----------------------------------------------------------------------


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
    assert app["apiVersion"] == "argoproj.io/v1alpha1"
    assert app["kind"] == "Application"
    assert app["metadata"] == {
        "name": "trainkit-gpu-a",
        "namespace": "argocd",
        "labels": LABELS,
        "finalizers": ["resources-finalizer.argocd.argoproj.io"],
    }
    # No namespace: the project's empty-namespace entry is what permits it.
    assert app["spec"]["destination"] == destination


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
    # The retries outlast a reconciliation period (~3 min) and follow new commits.
    retry = policy["retry"]
    assert retry["refresh"] is True
    assert retry["backoff"] == {"duration": "5s", "factor": 2, "maxDuration": "3m"}
    waits = [min(5 * 2**i, 180) for i in range(retry["limit"])]
    assert sum(waits) > 600


def test_application_ignores_kueue_suspend() -> None:
    ignored = {
        (d["group"], d["kind"]): d["jsonPointers"]
        for d in application()["spec"]["ignoreDifferences"]
    }
    assert ignored == {
        ("kubeflow.org", "MPIJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "PaddleJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "PyTorchJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "TFJob"): ["/spec/runPolicy/suspend"],
        ("ray.io", "RayJob"): ["/spec/suspend"],
        ("trainer.kubeflow.org", "TrainJob"): ["/spec/suspend"],
    }
    (trainjob,) = [d for d in application()["spec"]["ignoreDifferences"] if d["kind"] == "TrainJob"]
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
    first["metadata"]["finalizers"].append("x")
    assert application() != first
    assert IGNORE_DIFFERENCES[0]["jsonPointers"] == ["/spec/runPolicy/suspend"]
    assert "x" not in LABELS


def test_generated_applications_follow_the_clusters(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    apps = {
        f.body["metadata"]["name"]: f.body
        for p, f in files.items()
        if p.startswith("argocd/application-")
    }
    assert apps["trainkit-gpu-east"]["spec"]["destination"] == {
        "server": "https://gpu-east.k8s.example.com:6443"
    }
    assert apps["trainkit-rocm-west"]["spec"]["destination"] == {"name": "rocm-west"}
    for name, app in apps.items():
        cluster = name.removeprefix("trainkit-")
        assert app["spec"]["source"]["path"] == f"generated/clusters/{cluster}"
        assert app["metadata"]["finalizers"] == [RESOURCES_FINALIZER]


# --- root Application and its project ----------------------------------------------------------


def test_root_application_syncs_generated_argocd_itself(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    root = files["argocd/root-application.yaml"].body
    assert root["metadata"] == {"name": "trainkit", "namespace": "argocd", "labels": LABELS}
    spec = root["spec"]
    assert spec["project"] == "trainkit-root"
    assert spec["source"] == {
        "repoURL": "https://git.example.com/ml/trainkit-jobs.git",
        "targetRevision": "main",
        "path": "generated/argocd",
    }
    assert spec["destination"] == {"server": IN_CLUSTER, "namespace": "argocd"}
    assert spec["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert spec["syncPolicy"]["syncOptions"] == ["ServerSideApply=true"]
    # It lists itself, so it keeps itself up to date.
    assert "root-application.yaml" in files["argocd/kustomization.yaml"].body["resources"]


def test_root_project_permits_argo_cd_objects_in_argo_cd_namespace_only(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    project = files["argocd/root-appproject.yaml"].body
    root = files["argocd/root-application.yaml"].body
    in_cluster = Cluster(IN_CLUSTER, "in-cluster")
    assert project["metadata"]["name"] == root["spec"]["project"]
    assert project["spec"]["sourceRepos"] == [root["spec"]["source"]["repoURL"]]
    assert destination_permitted(project, in_cluster, root["spec"]["destination"]["namespace"])
    for path, f in files.items():
        if f.body.get("kind") in ("Application", "AppProject"):
            assert resource_permitted(project, in_cluster, f.body, namespaced=True), path
    for kind, namespace, namespaced in [
        ("Application", "default", True),
        ("ConfigMap", "argocd", True),
        ("Secret", "argocd", True),
        ("Namespace", "", False),
        ("ClusterRole", "", False),
    ]:
        group = "argoproj.io" if kind == "Application" else ""
        obj = {"apiVersion": f"{group}/v1".lstrip("/"), "kind": kind, "metadata": {"name": "x"}}
        if namespace:
            obj["metadata"]["namespace"] = namespace
        assert not resource_permitted(project, in_cluster, obj, namespaced=namespaced), obj
    assert not destination_permitted(project, Cluster("https://other:6443", "other"), "argocd")


def test_projects_sync_after_the_applications(ws: Any) -> None:
    # The root waits for a pruned Application's finalizer before the next wave, so a
    # removed cluster leaves the project only after its objects are deleted.
    files = files_of(ws.root, ws.jobs)
    for f in files.values():
        annotations = f.body.get("metadata", {}).get("annotations", {})
        wave = int(annotations.get("argocd.argoproj.io/sync-wave", "0"))
        if f.body.get("kind") == "AppProject":
            assert wave > 0, f.path
        elif f.body.get("kind") == "Application":
            assert wave == 0, f.path


# --- AppProject: a model of Argo CD's checks ---------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """A cluster as Argo CD resolves it: it always has both a server and a name."""

    server: str
    name: str


def glob_match(pattern: str, value: str) -> bool:
    """``globMatch`` for the patterns trainkit writes: ``*`` or a literal (``""`` included,
    which gobwas/glob compiles to a matcher of the empty string only)."""
    if pattern == "*":
        return True
    assert not re.search(r"[*?\[\]{}!]", pattern), f"unexpected glob {pattern!r}"
    return pattern == value


def destination_permitted(project: dict[str, Any], cluster: Cluster, namespace: str) -> bool:
    """``isDestinationMatched`` (no deny patterns: trainkit writes none)."""
    for item in project["spec"].get("destinations", []):
        name_ok = cluster.name != "" and glob_match(item.get("name", ""), cluster.name)
        server_ok = cluster.server != "" and glob_match(item.get("server", ""), cluster.server)
        if (name_ok or server_ok) and glob_match(item.get("namespace", ""), namespace):
            return True
    return False


def group_kind_permitted(project: dict[str, Any], obj: dict[str, Any], *, namespaced: bool) -> bool:
    """``IsGroupKindNamePermitted`` without blacklists (trainkit writes none)."""
    spec = project["spec"]
    group = obj["apiVersion"].rpartition("/")[0]
    kind, name = obj["kind"], obj["metadata"]["name"]
    if namespaced:
        whitelist = spec.get("namespaceResourceWhitelist")
        if whitelist is None:
            return True
        return any(w["group"] == group and w["kind"] == kind for w in whitelist)
    return any(
        w["group"] == group and w["kind"] == kind and w.get("name", "") in ("", name)
        for w in spec.get("clusterResourceWhitelist") or []
    )


def resource_permitted(
    project: dict[str, Any], cluster: Cluster, obj: dict[str, Any], *, namespaced: bool
) -> bool:
    """``validateSyncPermissions`` / ``IsResourcePermitted``."""
    if not group_kind_permitted(project, obj, namespaced=namespaced):
        return False
    if not namespaced:
        return True
    return destination_permitted(project, cluster, obj["metadata"].get("namespace", ""))


CLUSTER_SCOPED = {"Namespace", "Queue", "ClusterTrainingRuntime", "ClusterQueue", "ResourceFlavor"}


def cluster_objects(out: Path, cluster: str) -> Iterator[dict[str, Any]]:
    for path in sorted((out / "clusters" / cluster).rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and "kind" in doc and "metadata" in doc:
                yield doc


def resolved(app: dict[str, Any]) -> Cluster:
    """How Argo CD would resolve the Application's destination to a registered cluster."""
    dest = app["spec"]["destination"]
    if "server" in dest:
        return Cluster(dest["server"], "registered-as-something")
    return Cluster("https://" + dest["name"] + ".internal:6443", dest["name"])


def test_project_permits_every_generated_object_and_each_application(ws: Any) -> None:
    synthesize(ws.jobs, ws.out)
    project = yaml.safe_load((ws.out / "argocd/appproject.yaml").read_text())
    checked = 0
    for app_file in sorted((ws.out / "argocd").glob("application-*.yaml")):
        app = yaml.safe_load(app_file.read_text())
        cluster = resolved(app)
        assert app["spec"]["project"] == project["metadata"]["name"]
        namespace = app["spec"]["destination"].get("namespace", "")
        assert destination_permitted(project, cluster, namespace), app_file.name
        name = app_file.name.removeprefix("application-").removesuffix(".yaml")
        for obj in cluster_objects(ws.out, name):
            namespaced = obj["kind"] not in CLUSTER_SCOPED
            assert resource_permitted(project, cluster, obj, namespaced=namespaced), obj["metadata"]
            checked += 1
    assert checked > 20


def test_project_permits_nothing_else(ws: Any) -> None:
    synthesize(ws.jobs, ws.out)
    project = yaml.safe_load((ws.out / "argocd/appproject.yaml").read_text())
    assert all(d["namespace"] != "*" for d in project["spec"]["destinations"])
    gpu_east = Cluster("https://gpu-east.k8s.example.com:6443", "gpu-east")
    rocm_west = Cluster("https://rocm-west.internal:6443", "rocm-west")
    a800 = Cluster("https://a800-north.k8s.example.com:6443", "a800-north")
    stranger = Cluster("https://elsewhere:6443", "elsewhere")

    def obj(kind: str, name: str, namespace: str | None = None, api: str = "v1") -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if namespace is not None:
            meta["namespace"] = namespace
        return {"apiVersion": api, "kind": kind, "metadata": meta}

    job = "kubeflow.org/v1"
    refused = [
        (gpu_east, obj("PyTorchJob", "x", "kube-system", job), True),
        (gpu_east, obj("PyTorchJob", "x", "argocd", job), True),
        (gpu_east, obj("ConfigMap", "x", "default"), True),
        # llm-training is on gpu-east and a800-north, not on rocm-west; vision not on a800.
        (rocm_west, obj("PyTorchJob", "x", "llm-training", job), True),
        (a800, obj("ConfigMap", "x", "vision"), True),
        (stranger, obj("PyTorchJob", "x", "vision", job), True),
        # Kinds trainkit does not generate.
        (gpu_east, obj("Secret", "x", "vision"), True),
        (gpu_east, obj("Deployment", "x", "vision", "apps/v1"), True),
        (gpu_east, obj("ClusterRole", "x", api="rbac.authorization.k8s.io/v1"), False),
        # Namespaces by name: only the teams' own.
        (gpu_east, obj("Namespace", "kube-system"), False),
        (gpu_east, obj("Namespace", "argocd"), False),
    ]
    for cluster, o, namespaced in refused:
        assert not resource_permitted(project, cluster, o, namespaced=namespaced), (cluster, o)
    # A namespaced object without a namespace matches the "" entry, but Argo CD refuses
    # it before (controller/state.go "Namespace for ... is missing"): no generated object
    # is namespaced and without a namespace.
    for cluster in ("gpu-east", "rocm-west", "a800-north"):
        for o in cluster_objects(ws.out, cluster):
            assert (o["kind"] in CLUSTER_SCOPED) != bool(o["metadata"].get("namespace")), o
    assert not destination_permitted(project, stranger, "")


def test_project_destinations_per_cluster() -> None:
    targets = [
        ClusterTarget("https://a:6443", None, ("vision", "llm", "vision")),
        ClusterTarget(None, "b", ()),
    ]
    assert project_destinations(targets) == [
        {"server": "https://a:6443", "namespace": ""},
        {"server": "https://a:6443", "namespace": "llm"},
        {"server": "https://a:6443", "namespace": "vision"},
        {"name": "b", "namespace": ""},
    ]
    with pytest.raises(ValueError, match="not both"):
        project_destinations([ClusterTarget("https://a", "a", ())])


def test_app_project_validates_and_names_namespaces() -> None:
    project = app_project(namespaces=["vision", "llm", "vision"])
    assert schema_errors(project) == []
    assert project["kind"] == "AppProject"
    assert project["metadata"] == {
        "name": "trainkit",
        "namespace": "argocd",
        "labels": LABELS,
        "annotations": {"argocd.argoproj.io/sync-wave": "1"},
    }
    spec = project["spec"]
    assert spec["sourceRepos"] == [REPO_URL]
    assert spec["clusterResourceWhitelist"] == [
        {"group": "", "kind": "Namespace", "name": "llm"},
        {"group": "", "kind": "Namespace", "name": "vision"},
        {"group": "kueue.x-k8s.io", "kind": "ClusterQueue"},
        {"group": "kueue.x-k8s.io", "kind": "ResourceFlavor"},
        {"group": "scheduling.volcano.sh", "kind": "Queue"},
        {"group": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
    ]
    assert spec["namespaceResourceWhitelist"] == [
        {"group": "", "kind": "ConfigMap"},
        {"group": "batch.paddlepaddle.org", "kind": "PaddleJob"},
        {"group": "kubeflow.org", "kind": "MPIJob"},
        {"group": "kubeflow.org", "kind": "PaddleJob"},
        {"group": "kubeflow.org", "kind": "PyTorchJob"},
        {"group": "kubeflow.org", "kind": "TFJob"},
        {"group": "kueue.x-k8s.io", "kind": "LocalQueue"},
        {"group": "ray.io", "kind": "RayJob"},
        {"group": "trainer.kubeflow.org", "kind": "TrainJob"},
        {"group": "trainer.kubeflow.org", "kind": "TrainingRuntime"},
    ]


def test_app_project_without_namespaces_permits_no_namespace() -> None:
    # A Namespace entry without a name would permit every namespace.
    spec = app_project(namespaces=[])["spec"]
    assert all(w["kind"] != "Namespace" for w in spec["clusterResourceWhitelist"])
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "anything"}}
    assert not group_kind_permitted({"spec": spec}, ns, namespaced=False)


def test_app_project_copies_destinations() -> None:
    destinations = [{"name": "gpu-b", "namespace": "ml"}]
    project = app_project(destinations=destinations)
    project["spec"]["destinations"][0]["namespace"] = "other"
    assert destinations == [{"name": "gpu-b", "namespace": "ml"}]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"destinations": []}, "at least one destination"),
        ({"destinations": [{"server": "https://a", "name": "a", "namespace": ""}]}, "not both"),
        ({"destinations": [{"namespace": ""}]}, "server or as name"),
        ({"destinations": [{"server": "https://a"}]}, "namespace is required"),
        ({"destinations": [{"server": "https://a", "namespace": "*"}]}, "is a glob"),
        ({"destinations": [{"server": "https://a", "namespace": "ml-*"}]}, "is a glob"),
        ({"destinations": [{"server": "https://a", "namespace": "!ml"}]}, "is a glob"),
        (
            {"destinations": [{"server": "https://a", "namespace": "", "project": "x"}]},
            "unknown keys",
        ),
        ({"namespaces": [""]}, "must not be empty"),
    ],
    ids=[
        "none",
        "both",
        "neither",
        "no-namespace",
        "star",
        "glob",
        "deny",
        "unknown-key",
        "empty-ns-name",
    ],
)
def test_app_project_guard(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        app_project(**kwargs)


# --- Namespaces --------------------------------------------------------------------------------


def argo_option(annotation: str, key: str) -> str | None:
    """gitops-engine's GetAnnotationOptionValue: comma-separated, trimmed, ``key=`` prefix."""
    for item in annotation.split(","):
        item = item.strip()
        if item.startswith(key + "="):
            return item[len(key) + 1 :]
    return None


def test_namespaces_are_never_pruned_or_deleted_by_argo_cd() -> None:
    ns = render_namespace(namespace="vision", team="vision", source="jobs/platform/teams.py")
    annotations = ns["metadata"]["annotations"]
    sync_options = annotations["argocd.argoproj.io/sync-options"]
    assert argo_option(sync_options, "Prune") == "false"
    assert argo_option(sync_options, "Delete") == "false"
    assert "IgnoreExtraneous" in annotations["argocd.argoproj.io/compare-options"].split(",")
    assert annotations["argocd.argoproj.io/sync-wave"] == "-30"
    assert NAMESPACE_ANNOTATIONS.items() <= annotations.items()


def test_every_generated_namespace_carries_the_options(ws: Any) -> None:
    synthesize(ws.jobs, ws.out)
    namespaces = list((ws.out / "clusters").glob("*/namespaces/*.yaml"))
    assert len(namespaces) == 5
    for path in namespaces:
        annotations = yaml.safe_load(path.read_text())["metadata"]["annotations"]
        assert argo_option(annotations["argocd.argoproj.io/sync-options"], "Prune") == "false"
        assert argo_option(annotations["argocd.argoproj.io/sync-options"], "Delete") == "false"


# --- health checks: argocd-cm patch, Component, argocd-operator --------------------------------


def test_health_patch() -> None:
    checks = health_checks()
    patch = render_health_patch(argocd_namespace="argo", checks=checks)
    assert list(patch) == ["apiVersion", "kind", "metadata", "data"]
    assert patch["apiVersion"] == "v1"
    assert patch["kind"] == "ConfigMap"
    # Nothing but the keys: a server-side apply owns exactly what it sends.
    assert patch["metadata"] == {
        "name": "argocd-cm",
        "namespace": "argo",
        "labels": {"app.kubernetes.io/part-of": "argocd"},
    }
    assert patch["data"] == checks
    assert set(patch["data"]) == {
        "resource.customizations.health.batch.paddlepaddle.org_PaddleJob",
        "resource.customizations.health.kubeflow.org_MPIJob",
        "resource.customizations.health.kubeflow.org_PaddleJob",
        "resource.customizations.health.kubeflow.org_PyTorchJob",
        "resource.customizations.health.kubeflow.org_TFJob",
        "resource.customizations.health.kueue.x-k8s.io_ClusterQueue",
        "resource.customizations.health.kueue.x-k8s.io_LocalQueue",
        "resource.customizations.health.ray.io_RayJob",
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


def test_health_component_targets_argocd_cm_by_kind_and_name() -> None:
    component = render_health_component("argocd-cm.yaml")
    assert component["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
    assert component["kind"] == "Component"
    assert component["patches"] == [
        {
            "path": "argocd-cm.yaml",
            "target": {"version": "v1", "kind": "ConfigMap", "name": "argocd-cm"},
        }
    ]
    assert "resources" not in component  # a second argocd-cm is what kustomize refuses


def test_operator_health_checks_rebuild_the_same_argocd_cm_keys() -> None:
    checks = health_checks()
    snippet = render_operator_health_checks(checks)
    assert list(snippet) == ["spec"]
    entries = snippet["spec"]["resourceHealthChecks"]
    assert all(list(e) == ["group", "kind", "check"] for e in entries)
    # The operator's getResourceHealthChecks: prefix + group + "_" + kind.
    rebuilt = {f"{HEALTH_KEY_PREFIX}{e['group']}_{e['kind']}": e["check"] for e in entries}
    assert rebuilt == checks
    with pytest.raises(ValueError, match=re.escape("is not resource.customizations.health.")):
        render_operator_health_checks({"resource.customizations.health.NoGroup": "x"})


def test_generated_health_files(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    assert files[f"{COMPONENT_DIR}/argocd-cm.yaml"].body["data"] == health_checks()
    component = files[f"{COMPONENT_DIR}/kustomization.yaml"]
    assert component.kustomize
    assert component.body["patches"][0]["path"] == "argocd-cm.yaml"
    assert files[OPERATOR_FILE].body == render_operator_health_checks(health_checks())
    # The snippet is no Kubernetes object: nothing validates or applies it as one.
    assert "kind" not in files[OPERATOR_FILE].body


# --- README ------------------------------------------------------------------------------------


def test_readme_commands_name_the_real_paths_and_field_managers() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    bootstrap = (
        f"kubectl apply --server-side --field-manager={BOOTSTRAP_FIELD_MANAGER} -k generated/argocd"
    )
    assert bootstrap in readme
    patch = f"generated/{COMPONENT_DIR}/argocd-cm.yaml"
    assert (
        f"kubectl apply --server-side --field-manager={HEALTH_CHECKS_FIELD_MANAGER} -f {patch}"
        in readme
    )
    assert f"generated/{COMPONENT_DIR}" in readme
    assert f"generated/{OPERATOR_FILE}" in readme
    for path in (patch, f"generated/{OPERATOR_FILE}", "generated/argocd/kustomization.yaml"):
        assert (REPO_ROOT / path).is_file(), path
