"""Every Application of the example tree builds with ``kubectl kustomize``, and Argo CD, as
argo-cd v3.5.1 evaluates AppProjects (``argocd_rules``), lets each sync exactly its own
objects: a team's Application nothing in another team's namespace, no cluster-scoped kind,
nothing on another cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from argocd_rules import (
    Cluster,
    destination_permitted,
    filepath_match,
    glob_match,
    group_kind_permitted,
    resource_permitted,
)
from trainkit.render.argocd import retired_application_name
from trainkit.synth.parts import PART_OBJECTS
from trainkit.validate import kustomize_build

# Scopes as the clusters' API servers report them (the CRDs' spec.scope).
CLUSTER_SCOPED = {
    "Namespace",
    "Queue",
    "ClusterTrainingRuntime",
    "ClusterQueue",
    "ResourceFlavor",
    "WorkloadPriorityClass",
    "ClusterRole",
    "PriorityClass",
}


def kustomize(path: Path) -> list[dict[str, Any]]:
    """The objects Argo CD applies for ``path``: its kustomize build, the one ``check`` runs
    (the session's synth of the examples built each directory once, ``_examples_generated``)."""
    text, problems = kustomize_build(path)
    assert not problems, problems
    # libyaml's parser: the same documents as PyYAML's own, for a fraction of its CPU.
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]


def resolved(app: dict[str, Any]) -> Cluster:
    """How Argo CD resolves the destination to a registered cluster (server and name)."""
    dest = app["spec"]["destination"]
    if "server" in dest:
        return Cluster(dest["server"], "registered-as-" + dest["server"].split("//")[1][:8])
    return Cluster("https://" + dest["name"] + ".internal:6443", dest["name"])


@pytest.fixture(scope="module")
def tree(
    _examples_generated: Path,
) -> tuple[Path, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The examples' generated/ (the session's synth, only read here) and its Applications
    and AppProjects by name."""
    out = _examples_generated
    apps, projects = {}, {}
    for path in sorted((out / "argocd").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind") == "Application":
            apps[doc["metadata"]["name"]] = doc
        elif doc.get("kind") == "AppProject":
            projects[doc["metadata"]["name"]] = doc
    return out, apps, projects


def obj(kind: str, name: str, namespace: str | None = None, api: str = "v1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def test_every_application_builds_and_its_project_permits_each_object(tree: Any) -> None:
    out, apps, projects = tree
    built = 0
    for name, app in sorted(apps.items()):
        path = app["spec"]["source"]["path"].removeprefix("generated/")
        if name in (
            retired_application_name(c)
            for c in ("gpu-east", "rocm-west", "a800-north", "h100-south")
        ):
            continue  # retired: syncs nothing (see test_migration)
        project = projects[app["spec"]["project"]]
        cluster = resolved(app)
        if path == "argocd":
            cluster = Cluster("https://kubernetes.default.svc", "in-cluster")
        # The Application itself: its destination (util/argo/argo.go ValidatePermissions).
        assert destination_permitted(
            project, cluster, app["spec"]["destination"].get("namespace", "")
        )
        docs = kustomize(out / path)
        assert 0 < len(docs) <= (PART_OBJECTS if "/platform" not in path else 10**6), path
        for d in docs:
            namespaced = d["kind"] not in CLUSTER_SCOPED
            assert resource_permitted(project, cluster, d, namespaced=namespaced), (
                name,
                d["metadata"],
            )
        built += 1
    assert built == 1 + 4 + 5  # the root, 4 platforms, llm on 3 clusters and vision on 2


def test_team_projects_refuse_what_is_not_the_team_s(tree: Any) -> None:
    _, apps, projects = tree
    vision, llm = projects["trainkit-team-vision"], projects["trainkit-team-llm"]
    gpu_east = resolved(apps["trainkit-gpu-east-vision"])
    rocm_west = resolved(apps["trainkit-rocm-west-vision"])
    a800 = resolved(apps["trainkit-a800-north-llm"])
    job = "kubeflow.org/v1"
    # Its own: a PyTorchJob and a ConfigMap in vision on its clusters.
    assert resource_permitted(
        vision, gpu_east, obj("PyTorchJob", "x", "vision", job), namespaced=True
    )
    assert resource_permitted(vision, rocm_west, obj("ConfigMap", "x", "vision"), namespaced=True)
    refused = [
        # another team's namespace, or a system one, on its own cluster
        (vision, gpu_east, obj("PyTorchJob", "x", "llm-training", job), True),
        (vision, gpu_east, obj("ConfigMap", "x", "kube-system"), True),
        (llm, gpu_east, obj("TrainJob", "x", "vision", "trainer.kubeflow.org/v1alpha1"), True),
        # its namespace on a cluster it is not on
        (vision, a800, obj("PyTorchJob", "x", "vision", job), True),
        (llm, rocm_west, obj("ConfigMap", "x", "llm-training"), True),
        (
            vision,
            Cluster("https://elsewhere:6443", "elsewhere"),
            obj("ConfigMap", "x", "vision"),
            True,
        ),
        # cluster-scoped kinds, its own namespace's object and the platform's included
        (vision, gpu_east, obj("Namespace", "vision"), False),
        (vision, gpu_east, obj("Queue", "vision", api="scheduling.volcano.sh/v1beta1"), False),
        (
            llm,
            gpu_east,
            obj("ClusterTrainingRuntime", "t", api="trainer.kubeflow.org/v1alpha1"),
            False,
        ),
        (llm, gpu_east, obj("ClusterRole", "x", api="rbac.authorization.k8s.io/v1"), False),
        # kinds trainkit does not generate for the team, in its own namespace
        (vision, gpu_east, obj("Secret", "x", "vision"), True),
        (vision, gpu_east, obj("RoleBinding", "x", "vision", "rbac.authorization.k8s.io/v1"), True),
        (vision, gpu_east, obj("Deployment", "x", "vision", "apps/v1"), True),
        (
            vision,
            gpu_east,
            obj("TrainingRuntime", "x", "vision", "trainer.kubeflow.org/v1alpha1"),
            True,
        ),
        (llm, gpu_east, obj("LocalQueue", "x", "llm-training", "kueue.x-k8s.io/v1beta2"), True),
        (vision, gpu_east, obj("Application", "x", "vision", "argoproj.io/v1alpha1"), True),
    ]
    for project, cluster, o, namespaced in refused:
        assert not resource_permitted(project, cluster, o, namespaced=namespaced), (
            project["metadata"]["name"], cluster, o,
        )  # fmt: skip
    for project in (vision, llm):
        # Explicit and non-empty: left out, the list would permit every namespaced kind.
        assert project["spec"]["namespaceResourceWhitelist"]
        assert not project["spec"].get("clusterResourceWhitelist")
        assert all(d["namespace"] not in ("", "*") for d in project["spec"]["destinations"])


def test_the_platform_project_takes_no_team_objects(tree: Any) -> None:
    _, apps, projects = tree
    platform = projects["trainkit"]
    gpu_east = resolved(apps["trainkit-gpu-east-platform"])
    job = "kubeflow.org/v1"
    assert not resource_permitted(
        platform, gpu_east, obj("PyTorchJob", "x", "vision", job), namespaced=True
    )
    assert not resource_permitted(
        platform, gpu_east, obj("ConfigMap", "x", "vision"), namespaced=True
    )
    assert not resource_permitted(
        platform,
        gpu_east,
        obj("ClusterRole", "x", api="rbac.authorization.k8s.io/v1"),
        namespaced=False,
    )
    assert resource_permitted(platform, gpu_east, obj("Namespace", "vision"), namespaced=False)


def test_the_evaluation_follows_argo_cd() -> None:
    """Cases of argo-cd's own tests of these functions (app_project_types.go, types.go)."""
    # gobwas globs: * crosses everything, deny patterns, empty matches empty only.
    assert glob_match("*", "anything/at:all")
    assert glob_match("team-*", "team-a") and not glob_match("team-*", "other")
    assert glob_match("", "") and not glob_match("", "x")
    assert glob_match("!kube-*", "vision") and not glob_match("!kube-*", "kube-system")
    assert glob_match("{a,b}-ns", "b-ns") and glob_match("ns-[0-9]", "ns-4")
    # filepath.Match for kinds: * stops at nothing but "/"; "" matches only the core group.
    assert filepath_match("*", "PyTorchJob") and filepath_match("", "")
    assert not filepath_match("", "apps")
    project: dict[str, Any] = {"spec": {"destinations": [
        {"server": "*", "namespace": "team-*"},
        {"server": "*", "namespace": "!team-secret"},
    ]}}  # fmt: skip
    c = Cluster("https://a", "a")
    assert destination_permitted(project, c, "team-x")
    assert not destination_permitted(project, c, "team-secret")  # the deny pattern wins
    # nil namespace whitelist permits every namespaced kind; empty cluster whitelist none
    assert group_kind_permitted({"spec": {}}, obj("Secret", "s", "x"), namespaced=True)
    assert not group_kind_permitted({"spec": {"namespaceResourceWhitelist": []}},
                                    obj("Secret", "s", "x"), namespaced=True)  # fmt: skip
    assert not group_kind_permitted({"spec": {}}, obj("Namespace", "x"), namespaced=False)
    # a blacklist entry wins over the whitelist; a named entry matches its name only
    spec = {"namespaceResourceWhitelist": [{"group": "*", "kind": "*"}],
            "namespaceResourceBlacklist": [{"group": "", "kind": "Secret"}],
            "clusterResourceWhitelist": [{"group": "", "kind": "Namespace", "name": "team-*"}]}  # fmt: skip
    assert not group_kind_permitted({"spec": spec}, obj("Secret", "s", "x"), namespaced=True)
    assert group_kind_permitted({"spec": spec}, obj("ConfigMap", "s", "x"), namespaced=True)
    assert group_kind_permitted({"spec": spec}, obj("Namespace", "team-a"), namespaced=False)
    assert not group_kind_permitted(
        {"spec": spec}, obj("Namespace", "kube-system"), namespaced=False
    )
