"""trainkit.render.argocd: the root Application, the cluster Applications, the AppProjects and
the health-check delivery (argocd-cm patch, kustomize Component, argocd-operator snippet).

Every Argo CD object is checked against the Argo CD CRDs (v3.5.1) from ``$TRAINKIT_CRDS/argocd``
(default ``<repo>/../shared/crds``; a relative value is taken from the repository root). This is
a minimal JSON-schema check of ``spec``; unknown fields are treated as errors, as the API server
would prune them. Full structural/CEL validation is ``trainkit.validate``'s job.

The AppProject tests evaluate Argo CD's permission checks as argo-cd v3.5.1 does
(``tests/argocd_rules.py``, a port of ``app_project_types.go``) over every object of every
Application's ``kubectl kustomize`` build.
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

from argocd_rules import Cluster, destination_permitted, resource_permitted
from trainkit.collector import cycle_collection_paused
from trainkit.errors import DefinitionError
from trainkit.health import HEALTH_KEY_PREFIX, health_checks
from trainkit.load import load_jobs
from trainkit.render.argocd import (
    BOOTSTRAP_FIELD_MANAGER,
    COMPONENT_DIR,
    GENERATE_PATHS,
    HEALTH_CHECKS_FIELD_MANAGER,
    IGNORE_DIFFERENCES,
    IN_CLUSTER,
    MAX_NAME,
    NAMESPACE_ANNOTATIONS,
    OPERATOR_FILE,
    ClusterTarget,
    application_name,
    fit_name,
    project_destinations,
    render_app_project,
    render_application,
    render_health_component,
    render_health_patch,
    render_operator_health_checks,
    render_team_app_project,
)
from trainkit.render.cluster_scoped import render_namespace
from trainkit.resolve import build_plan
from trainkit.synth import render_groups, synthesize

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
    # 1.8 MB of YAML, no reference cycle: the cycle collector would walk every node (and the
    # whole test process) again and again, most of the CPU.
    with cycle_collection_paused():
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
        "name": "trainkit-gpu-a-platform",
        "server": "https://kubernetes.default.svc",
        "destination_name": None,
        "repo_url": REPO_URL,
        "revision": "main",
        "path": "generated/clusters/gpu-a/platform",
        "project": "trainkit",
        "argocd_namespace": "argocd",
        "labels": dict(LABELS),
        "generate_paths": ".",
    }
    kwargs.update(overrides)
    return render_application(**kwargs)


def team_project(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "name": "trainkit-team-vision",
        "team": "vision",
        "argocd_namespace": "argocd",
        "repo_url": REPO_URL,
        "destinations": [
            {"server": "https://10.0.0.1:6443", "namespace": "vision"},
            {"name": "gpu-b", "namespace": "vision"},
        ],
        "kinds": [("", "ConfigMap")],
        "labels": dict(LABELS),
    }
    kwargs.update(overrides)
    return render_team_app_project(**kwargs)


def files_of(root: Path, jobs: Path) -> dict[str, Any]:
    plan = build_plan(load_jobs(jobs, root).definitions)
    return {
        r.path: r for _, items in render_groups(plan) for r in items if r.path.startswith("argocd/")
    }


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
    app = application(namespace="vision")
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
    # Projects: the root's, the platform's, llm's and vision's. Applications: the root, a
    # platform one per cluster (4), one per team and cluster with jobs (llm on 3, vision on
    # 2), and the 4 retired per-cluster ones (the example is at step 1 of the migration).
    assert kinds == ["AppProject"] * 4 + ["Application"] * 14
    for obj in objects:
        assert schema_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
        assert list(obj) == ["apiVersion", "kind", "metadata", "spec"]
        if obj["kind"] == "Application":
            assert len(obj["metadata"]["name"]) <= MAX_NAME


def test_layout_and_what_the_root_syncs(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    apps = sorted(p for p in files if p.startswith("argocd/application-"))
    assert apps == [
        "argocd/application-a800-north-llm.yaml",
        "argocd/application-a800-north-platform.yaml",
        "argocd/application-a800-north.yaml",
        "argocd/application-gpu-east-llm.yaml",
        "argocd/application-gpu-east-platform.yaml",
        "argocd/application-gpu-east-vision.yaml",
        "argocd/application-gpu-east.yaml",
        "argocd/application-h100-south-llm.yaml",
        "argocd/application-h100-south-platform.yaml",
        "argocd/application-h100-south.yaml",
        "argocd/application-rocm-west-platform.yaml",
        "argocd/application-rocm-west-vision.yaml",
        "argocd/application-rocm-west.yaml",
    ]
    kustomization = files["argocd/kustomization.yaml"]
    assert kustomization.plain
    # The root syncs Argo CD objects only: argocd-cm belongs to the Argo CD install.
    listed = kustomization.body["resources"]
    assert listed == sorted(
        p.removeprefix("argocd/")
        for p, f in files.items()
        if f.body.get("kind") in ("Application", "AppProject")
    )
    assert all("/" not in p for p in listed)
    assert files["argocd/application-gpu-east-platform.yaml"].source == "jobs/platform/clusters.py"
    assert files["argocd/application-gpu-east-vision.yaml"].source == "jobs/platform/teams.py"
    assert files["argocd/appproject.yaml"].source == "jobs/platform/"


def test_no_argocd_definition_no_files(bare: Any) -> None:
    platform = bare.root / "jobs/platform/platform.py"
    platform.write_text(
        platform.read_text()
        .replace("ArgoCD, ", "")
        .replace('argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")\n', "")
    )
    assert files_of(bare.root, bare.jobs) == {}


# --- Applications ------------------------------------------------------------------------------


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
    assert app["metadata"] == {
        "name": "trainkit-gpu-a-platform",
        "namespace": "argocd",
        "labels": LABELS,
        "annotations": {GENERATE_PATHS: "."},
        "finalizers": ["resources-finalizer.argocd.argoproj.io"],
    }
    # The platform's: no namespace, the project's empty-namespace entry permits it.
    assert app["spec"]["destination"] == destination
    team = application(namespace="vision", name="trainkit-gpu-a-vision", server=server,
                       destination_name=name, project="trainkit-team-vision")  # fmt: skip
    assert schema_errors(team) == []
    assert team["spec"]["destination"] == {**destination, "namespace": "vision"}


def test_application_spec() -> None:
    spec = application()["spec"]
    assert spec["project"] == "trainkit"
    assert spec["source"] == {
        "repoURL": REPO_URL,
        "targetRevision": "main",
        "path": "generated/clusters/gpu-a/platform",
    }
    policy = spec["syncPolicy"]
    assert policy["automated"] == {"prune": True, "selfHeal": True}
    assert policy["syncOptions"] == ["ServerSideApply=true"]
    # The platform's retries outlast a reconciliation period (~3 min) and follow new commits.
    retry = policy["retry"]
    assert retry["refresh"] is True
    assert retry["backoff"] == {"duration": "5s", "factor": 2, "maxDuration": "3m"}
    team = application(namespace="vision")["spec"]
    assert team["syncPolicy"]["syncOptions"] == [
        "ServerSideApply=true",
        "RespectIgnoreDifferences=true",
    ]

    def window(limit: int) -> int:
        return sum(min(5 * 2**i, 180) for i in range(limit))

    # A team's retries outlast the platform's whole retries and one more refresh (3 min).
    assert window(team["syncPolicy"]["retry"]["limit"]) > window(retry["limit"]) + 180 + 600
    assert window(retry["limit"]) > 600


def test_application_ignores_kueue_suspend() -> None:
    ignored = {
        (d["group"], d["kind"]): d["jsonPointers"]
        for d in application(namespace="vision")["spec"]["ignoreDifferences"]
    }
    assert ignored == {
        ("kubeflow.org", "JAXJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "MPIJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "PaddleJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "PyTorchJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "TFJob"): ["/spec/runPolicy/suspend"],
        ("kubeflow.org", "XGBoostJob"): ["/spec/runPolicy/suspend"],
        ("ray.io", "RayJob"): ["/spec/suspend"],
        ("ray.io", "RayCluster"): ["/spec/suspend"],
        ("trainer.kubeflow.org", "TrainJob"): ["/spec/suspend"],
    }
    (trainjob,) = [
        d
        for d in application(namespace="vision")["spec"]["ignoreDifferences"]
        if d["kind"] == "TrainJob"
    ]
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
    first = application(namespace="vision")
    first["spec"]["ignoreDifferences"][0]["jsonPointers"].append("/spec/x")
    first["spec"]["syncPolicy"]["retry"]["backoff"]["factor"] = 99
    first["metadata"]["labels"]["x"] = "y"
    first["metadata"]["finalizers"].append("x")
    assert application(namespace="vision") != first
    assert IGNORE_DIFFERENCES[0]["jsonPointers"] == ["/spec/runPolicy/suspend"]
    assert "x" not in LABELS


def test_application_names_fit_a_label_and_stay_apart() -> None:
    assert application_name("trainkit", "gpu-east") == "trainkit-gpu-east-platform"
    assert application_name("trainkit", "gpu-east", "vision") == "trainkit-gpu-east-vision"
    assert application_name("trainkit", "gpu-east", "vision", 3) == (
        "trainkit-gpu-east-vision-part-3"
    )
    long = application_name("trainkit", "c" * 40, "t" * 40, 2)
    assert len(long) == MAX_NAME
    assert long != application_name("trainkit", "c" * 40, "t" * 40, 3)
    assert fit_name("x" * 63) == "x" * 63


def _read(ws: Any, rel: str) -> str:
    return str((ws.root / rel).read_text())


def test_two_applications_of_one_name_are_refused(bare: Any) -> None:
    # Cluster "a-b" with team "c", cluster "a" with team "b-c": both trainkit-a-b-c.
    bare.write(
        "jobs/platform/platform.py",
        _read(bare, "jobs/platform/platform.py").replace(
            'east = Cluster(name="east"', 'east = Cluster(name="east-c"'
        ).replace('vision = Team(name="vision", queues=["research"])',
                  'vision = Team(name="vision", queues=["research"])\n'
                  'c = Team(name="c-vision", queues=["research"])'),
    )  # fmt: skip
    bare.write("jobs/c-vision/j.py", _read(bare, "jobs/vision/ddp.py").replace(
        '["east", "west"]', '["east-c"]'))  # fmt: skip
    bare.write("jobs/c-vision/scripts/train.py", "print(1)\n")
    bare.write("jobs/vision/ddp.py", _read(bare, "jobs/vision/ddp.py").replace(
        '["east", "west"]', '["east-c"]'))  # fmt: skip
    # east-c + vision → trainkit-east-c-vision; no clash yet: teams differ by cluster.
    synthesize(bare.jobs, bare.out)
    bare.write("jobs/platform/more.py", 'from trainkit import Cluster\n'
               'east = Cluster(name="east", server="https://e2.example.com", gpus_per_node=8)\n')  # fmt: skip
    bare.write("jobs/c-vision/j.py", _read(bare, "jobs/c-vision/j.py").replace(
        '["east-c"]', '["east"]'))  # fmt: skip
    with pytest.raises(
        DefinitionError, match="two Applications would be named 'trainkit-east-c-vision'"
    ):
        synthesize(bare.jobs, bare.out)


def test_generated_applications_follow_the_clusters_and_teams(ws: Any) -> None:
    files = files_of(ws.root, ws.jobs)
    apps = {
        f.body["metadata"]["name"]: f.body
        for p, f in files.items()
        if p.startswith("argocd/application-")
    }
    assert apps["trainkit-gpu-east-platform"]["spec"]["destination"] == {
        "server": "https://gpu-east.k8s.example.com:6443"
    }
    assert apps["trainkit-rocm-west-vision"]["spec"]["destination"] == {
        "name": "rocm-west",
        "namespace": "vision",
    }
    assert apps["trainkit-gpu-east-llm"]["spec"]["project"] == "trainkit-team-llm"
    assert apps["trainkit-gpu-east-llm"]["spec"]["source"]["path"] == (
        "generated/clusters/gpu-east/llm-training"
    )
    assert apps["trainkit-gpu-east-llm"]["metadata"]["annotations"] == {GENERATE_PATHS: "*.yaml"}
    for name, app in apps.items():
        retired = app["spec"]["source"]["path"].count("/") == 2
        assert ("finalizers" in app["metadata"]) != retired, name
        if retired:
            assert "automated" not in app["spec"]["syncPolicy"]
            assert "Delete=false" in app["spec"]["syncPolicy"]["syncOptions"]


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
    # team leaving a cluster leaves its project only after its jobs are deleted; a team's
    # project removed with the team is pruned last (after its Applications).
    files = files_of(ws.root, ws.jobs)
    for f in files.values():
        annotations = f.body.get("metadata", {}).get("annotations", {})
        wave = int(annotations.get("argocd.argoproj.io/sync-wave", "0"))
        if f.body.get("kind") == "AppProject":
            assert wave > 0, f.path
            team = f.path.startswith("argocd/appproject-team-")
            options = annotations.get("argocd.argoproj.io/sync-options", "")
            assert (argo_option(options, "PruneLast") == "true") == team, f.path
        elif f.body.get("kind") == "Application":
            assert wave == 0, f.path


# --- AppProjects, as Argo CD evaluates them ----------------------------------------------------


def test_app_project_of_the_platform() -> None:
    project = render_app_project(
        name="trainkit", argocd_namespace="argocd", repo_url=REPO_URL, labels=dict(LABELS),
        destinations=[{"server": "https://10.0.0.1:6443", "namespace": ""},
                      {"name": "gpu-b", "namespace": "vision"}],
    )  # fmt: skip
    assert schema_errors(project) == []
    spec = project["spec"]
    # By kind, never by name: `name:` needs Argo CD v3.3, and an older CRD drops it,
    # which would widen the entry anyway.
    assert all("name" not in w for w in spec["clusterResourceWhitelist"])
    assert spec["namespaceResourceWhitelist"] == [
        {"group": "kueue.x-k8s.io", "kind": "LocalQueue"},
        {"group": "trainer.kubeflow.org", "kind": "TrainingRuntime"},
    ]


def test_team_app_project() -> None:
    project = team_project(kinds=[("kubeflow.org", "PyTorchJob"), ("", "ConfigMap")])
    assert schema_errors(project) == []
    spec = project["spec"]
    assert "clusterResourceWhitelist" not in spec  # none: no cluster-scoped kind
    assert spec["namespaceResourceWhitelist"] == [
        {"group": "", "kind": "ConfigMap"},
        {"group": "kubeflow.org", "kind": "PyTorchJob"},
    ]
    with pytest.raises(ValueError, match="an empty whitelist permits none"):
        team_project(kinds=[])
    with pytest.raises(ValueError, match="name its namespace"):
        team_project(destinations=[{"name": "gpu-b", "namespace": ""}])


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
    assert project_destinations(targets, empty=False) == [
        {"server": "https://a:6443", "namespace": "llm"},
        {"server": "https://a:6443", "namespace": "vision"},
    ]
    with pytest.raises(ValueError, match="not both"):
        project_destinations([ClusterTarget("https://a", "a", ())])


@pytest.mark.parametrize(
    ("destinations", "match"),
    [
        ([], "at least one destination"),
        ([{"server": "https://a", "name": "a", "namespace": ""}], "not both"),
        ([{"namespace": ""}], "server or as name"),
        ([{"server": "https://a"}], "namespace is required"),
        ([{"server": "https://a", "namespace": "*"}], "is a glob"),
        ([{"server": "https://a", "namespace": "ml-*"}], "is a glob"),
        ([{"server": "https://a", "namespace": "!ml"}], "is a glob"),
        ([{"server": "https://a", "namespace": "", "project": "x"}], "unknown keys"),
    ],
    ids=["none", "both", "neither", "no-namespace", "star", "glob", "deny", "unknown-key"],
)
def test_app_project_guard(destinations: list[dict[str, str]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        render_app_project(name="p", argocd_namespace="argocd", repo_url=REPO_URL,
                           destinations=destinations, labels=dict(LABELS))  # fmt: skip


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
    namespaces = list((ws.out / "clusters").glob("*/platform/namespaces/*.yaml"))
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
        "resource.customizations.health.kubeflow.org_JAXJob",
        "resource.customizations.health.kubeflow.org_MPIJob",
        "resource.customizations.health.kubeflow.org_PaddleJob",
        "resource.customizations.health.kubeflow.org_PyTorchJob",
        "resource.customizations.health.kubeflow.org_TFJob",
        "resource.customizations.health.kubeflow.org_XGBoostJob",
        "resource.customizations.health.kueue.x-k8s.io_ClusterQueue",
        "resource.customizations.health.kueue.x-k8s.io_LocalQueue",
        "resource.customizations.health.ray.io_RayCluster",
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
    assert component.plain
    assert component.body["patches"][0]["path"] == "argocd-cm.yaml"
    assert files[OPERATOR_FILE].body == render_operator_health_checks(health_checks())
    # The snippet is no Kubernetes object: nothing validates or applies it as one.
    assert "kind" not in files[OPERATOR_FILE].body


# --- the documentation ---------------------------------------------------------------------------


def test_the_docs_commands_name_the_real_paths_and_field_managers() -> None:
    readme = "".join(
        (REPO_ROOT / "docs" / page).read_text(encoding="utf-8")
        for page in ("platform.md", "gitops.md")
    )
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
