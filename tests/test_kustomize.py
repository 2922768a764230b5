"""Every cluster directory builds with kubectl kustomize, and overlays work on the CRD kinds."""

import os

import pytest
import yaml

from conftest import BARE, copy_tree
from trainkit.health import health_checks
from trainkit.synth import synthesize
from trainkit.validate.argo_decode import decode_build
from trainkit.validate.build import start_build

CLUSTER_SCOPED = {"Namespace", "Queue", "ClusterTrainingRuntime"}


def build_bytes(path) -> bytes:
    """``kubectl kustomize PATH`` with trainkit's kubectl (the kustomize Argo CD bundles), as
    ``check`` runs it: a build of the same inputs earlier in the test run is not run again
    (build_cache.py)."""
    build = start_build(path)
    try:
        out, problems = build.output()
    finally:
        build.stop()
    assert not problems, problems
    return out


def kustomize(path) -> list[dict]:
    """The objects Argo CD applies from the build, its output decoded as Argo CD decodes it."""
    return [d.body for d in decode_build(build_bytes(path))]


@pytest.fixture(scope="module")
def _bare_generated(tmp_path_factory, _session_cache):
    """generated/ of conftest's ``bare`` repository, synthesized once per module."""
    root = tmp_path_factory.mktemp("bare-generated")
    for rel, text in BARE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        # As a test's own commands run (_own_cache, _not_in_ci: set after this fixture).
        mp.setenv("TRAINKIT_CACHE_DIR", str(_session_cache))
        mp.delenv("CI", raising=False)
        mp.delenv("RUNNER_TEMP", raising=False)
        synthesize(root / "jobs", root / "generated")
    return root


@pytest.fixture
def generated(bare, _bare_generated):
    """``bare`` as synth leaves it: the module's generated/, copied (tests add overlays
    beside it)."""
    copy_tree(_bare_generated / "generated", bare.out)
    return bare


def app_dirs(out) -> list:
    """Every Application's directory, from the Applications of generated/argocd/."""
    found = []
    for path in sorted((out / "argocd").glob("application-*.yaml")):
        app = yaml.safe_load(path.read_text())
        source = app["spec"]["source"]["path"].removeprefix("generated/")
        if source.count("/") > 1:  # not a retired per-cluster Application
            found.append(out / source)
    return found


def test_every_cluster_directory_builds(generated):
    clusters = sorted((generated.out / "clusters").iterdir())
    assert [c.name for c in clusters] == ["east", "plain", "west"]
    apps = app_dirs(generated.out)
    for cluster in clusters:
        docs = kustomize(cluster)
        listed = yaml.safe_load((cluster / "kustomization.yaml").read_text())["resources"]
        # The cluster's kustomization is its Applications' together.
        assert sorted(cluster / d for d in listed) == [a for a in apps if cluster in a.parents]
        mine = [
            yaml.safe_load((cluster / d / "kustomization.yaml").read_text())["resources"]
            for d in listed
        ]
        assert len(docs) == sum(len(m) for m in mine)
        for d in docs:
            has_ns = "namespace" in d["metadata"]
            assert has_ns == (d["kind"] not in CLUSTER_SCOPED), d["metadata"]


def test_every_application_directory_builds_alone(generated):
    apps = app_dirs(generated.out)
    names = [a.relative_to(generated.out).as_posix() for a in apps]
    assert names == [
        "clusters/east/platform",
        "clusters/east/vision",
        "clusters/plain/platform",
        "clusters/west/platform",
        "clusters/west/vision",
    ]
    for app in apps:
        docs = kustomize(app)
        listed = yaml.safe_load((app / "kustomization.yaml").read_text())["resources"]
        assert len(docs) == len(listed), app
        if app.name != "platform":
            assert {d["metadata"]["namespace"] for d in docs} == {"vision"}
            assert {d["kind"] for d in docs} == {"ConfigMap", "PyTorchJob"}


def test_an_application_builds_the_same_bytes_without_the_component(synthesized):
    """The cluster's Component (CRD name references, scopes) changes nothing in an
    Application's own build: every Application of the examples builds byte for byte what it
    built when its kustomization included the Component (up to 0.3), so Argo CD applies the
    same objects while kustomize does a third less work."""
    apps = app_dirs(synthesized.out)
    assert len(apps) > 8
    for app in apps:
        kustomization = app / "kustomization.yaml"
        text = kustomization.read_text()
        assert "components" not in yaml.safe_load(text)
        now = build_bytes(app)
        cluster = next(p for p in app.parents if p.parent.name == "clusters")
        component = os.path.relpath(cluster / "kustomize", app)
        kustomization.write_text(f"{text}components:\n- {component}\n")
        assert build_bytes(app) == now, app


def test_an_overlay_of_one_application_includes_the_component(generated):
    """An overlay of one Application's directory names the cluster's Component itself, and
    then rewrites the references inside that Application."""
    overlay = generated.root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/east/vision]\n"
        "components: [../generated/clusters/east/kustomize]\n"
        "namePrefix: dev-\n"
    )
    docs = kustomize(overlay)
    (job,) = [d for d in docs if d["kind"] == "PyTorchJob"]
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert cm["metadata"]["name"].startswith("dev-ddp-script-")
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        (script,) = [v for v in replica["template"]["spec"]["volumes"] if v["name"] == "script"]
        assert script["configMap"]["name"] == cm["metadata"]["name"]


def test_argocd_directory_builds(generated):
    docs = kustomize(generated.out / "argocd")
    kinds = sorted(d["kind"] for d in docs)
    # The root, a platform Application per cluster, one per team and cluster with jobs, the
    # root's, the platform's and the team's projects; argocd-cm is not among them.
    assert kinds == ["AppProject"] * 3 + ["Application"] * 6
    assert {d["metadata"]["namespace"] for d in docs} == {"argocd"}


def test_overlay_name_prefix_and_images_reach_into_pytorchjob(generated):
    overlay = generated.root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/east]\n"
        "namePrefix: dev-\n"
        "images:\n- name: registry.example.com/pytorch\n  newTag: '3'\n"
    )
    docs = kustomize(overlay)
    (job,) = [d for d in docs if d["kind"] == "PyTorchJob"]
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert cm["metadata"]["name"].startswith("dev-ddp-script-")
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        assert pod["containers"][0]["image"] == "registry.example.com/pytorch:3"
        (script,) = [v for v in pod["volumes"] if v["name"] == "script"]
        assert script["configMap"]["name"] == cm["metadata"]["name"]
    ns = [d for d in docs if d["kind"] == "Namespace"]
    assert [n["metadata"]["name"] for n in ns] == ["vision"]  # namespaces are not prefixed


def test_overlay_patches_with_json6902_keep_the_container(generated):
    overlay = generated.root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/east]\n"
        "patches:\n"
        "- target: {kind: PyTorchJob, name: ddp}\n"
        "  patch: |\n"
        "    - op: add\n"
        "      path: /spec/pytorchReplicaSpecs/Worker/replicas\n"
        "      value: 3\n"
    )
    (job,) = [d for d in kustomize(overlay) if d["kind"] == "PyTorchJob"]
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3
    assert worker["template"]["spec"]["containers"][0]["name"] == "pytorch"


def test_namespace_overlay_keeps_cluster_scoped_kinds_cluster_scoped(tw):
    synthesize(tw.jobs, tw.out)
    overlay = tw.root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/east]\nnamespace: ml\n"
    )
    docs = kustomize(overlay)
    kinds = {d["kind"] for d in docs}
    assert {"ClusterTrainingRuntime", "Queue", "TrainJob", "PyTorchJob"} <= kinds
    for d in docs:
        if d["kind"] in CLUSTER_SCOPED - {"Namespace"}:
            assert "namespace" not in d["metadata"], d["metadata"]
        elif d["kind"] != "Namespace":
            assert d["metadata"]["namespace"] == "ml", d["metadata"]


def test_name_prefix_follows_runtime_queue_and_script_references(tw):
    tj_file = tw.jobs / "vision/tj.py"
    tj_file.write_text(
        tj_file.read_text().replace("nodes=2,", "image='registry.example.com/tj:1',")
    )
    synthesize(tw.jobs, tw.out)
    overlay = tw.root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/east]\n"
        "namePrefix: dev-\n"
        "images:\n- name: registry.example.com/tj\n  newTag: '7'\n"
    )
    docs = {(d["kind"], d["metadata"]["name"]): d for d in kustomize(overlay)}
    assert ("ClusterTrainingRuntime", "dev-torch") in docs
    assert ("Queue", "dev-research") in docs
    (tj,) = [d for (k, _), d in docs.items() if k == "TrainJob"]
    assert tj["spec"]["runtimeRef"]["name"] == "dev-torch"
    assert tj["spec"]["trainer"]["image"] == "registry.example.com/tj:7"
    patch = tj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]
    assert patch["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "dev-research"
    pod = patch["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert ("ConfigMap", pod["volumes"][0]["configMap"]["name"]) in docs
    (pytorchjob,) = [d for (k, _), d in docs.items() if k == "PyTorchJob"]
    assert pytorchjob["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "dev-research"


def test_name_prefix_rewrites_a_queue_parent(bare):
    platform = bare.jobs / "platform/platform.py"
    platform.write_text(
        platform.read_text().replace(
            'research = Queue(name="research", capability=Capacity(gpu=16))',
            'org = Queue(name="org", capability=Capacity(gpu=32), deserved=Capacity(gpu=32))\n'
            'research = Queue(name="research", parent="org", capability=Capacity(gpu=16),'
            " deserved=Capacity(gpu=16))",
        )
    )
    synthesize(bare.jobs, bare.out)
    plain = {d["metadata"]["name"]: d for d in kustomize(bare.out / "clusters/east")}
    assert plain["research"]["spec"]["parent"] == "org"
    overlay = bare.root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/east]\nnamePrefix: dev-\n"
    )
    queues = {d["metadata"]["name"]: d["spec"] for d in kustomize(overlay) if d["kind"] == "Queue"}
    assert set(queues) == {"dev-org", "dev-research"}
    assert queues["dev-research"]["parent"] == "dev-org"
    assert queues["dev-org"]["parent"] == "root"  # Volcano's own queue is not renamed


ARGOCD_CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
  url: https://argocd.example.com
  exec.enabled: "false"
  resource.customizations.health.example.com_Widget: |
    return {status = "Healthy"}
"""

OTHER = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-rbac-cm
data:
  policy.default: role:readonly
"""


@pytest.mark.parametrize(
    ("kustomization_namespace", "resource_namespace"),
    [("argocd", None), (None, "argocd"), ("gitops", None)],
    ids=["kustomization-namespace", "resource-namespace", "other-namespace"],
)
def test_health_component_merges_into_an_existing_argocd_cm(
    generated, kustomization_namespace, resource_namespace
):
    """A fake Argo CD install with its own argocd-cm includes the Component."""
    install = generated.root / "install"
    install.mkdir()
    cm = ARGOCD_CM
    if resource_namespace:
        cm = cm.replace(
            "  name: argocd-cm\n", f"  name: argocd-cm\n  namespace: {resource_namespace}\n"
        )
    (install / "argocd-cm.yaml").write_text(cm)
    (install / "argocd-rbac-cm.yaml").write_text(OTHER)
    kustomization = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [argocd-cm.yaml, argocd-rbac-cm.yaml]\n"
        "components: [../generated/argocd/components/health-checks]\n"
    )
    if kustomization_namespace:
        kustomization += f"namespace: {kustomization_namespace}\n"
    (install / "kustomization.yaml").write_text(kustomization)
    docs = {d["metadata"]["name"]: d for d in kustomize(install)}
    assert set(docs) == {"argocd-cm", "argocd-rbac-cm"}
    built = docs["argocd-cm"]
    original = yaml.safe_load(cm)
    checks = health_checks()
    assert built["data"] == {**original["data"], **checks}
    assert len(built["data"]) == len(original["data"]) + 13  # one health check per kind
    assert built["metadata"]["labels"] == original["metadata"]["labels"]
    assert built["metadata"]["namespace"] == kustomization_namespace or resource_namespace
    assert docs["argocd-rbac-cm"]["data"] == {"policy.default": "role:readonly"}


def test_name_prefix_and_queue_reach_into_every_role_of_mpijobs_tfjobs_and_paddlejobs(
    synthesized,
):
    """The examples' MPIJob (a800-north), TFJobs and PaddleJob (gpu-east) and paddle-operator's
    PaddleJob (rocm-west): each role's script volume follows the ConfigMap's new name, and the
    queue a prefixed Queue's."""
    tmp_path = synthesized.root
    for cluster, kind, name, roles in (
        ("a800-north", "MPIJob", "llama-pretrain-deepspeed", "mpiReplicaSpecs"),
        ("gpu-east", "TFJob", "mobilenet-ps", "tfReplicaSpecs"),
        # Roles with images of their own keep the script volume too.
        ("gpu-east", "TFJob", "mobilenet-ps-roles", "tfReplicaSpecs"),
        ("gpu-east", "PaddleJob", "resnet-paddle", "paddleReplicaSpecs"),
        ("rocm-west", "PaddleJob", "wide-deep-ps", None),  # paddle-operator's: ps and worker
    ):
        overlay = tmp_path / f"overlay-{cluster}-{kind}-{name}"
        overlay.mkdir()
        (overlay / "kustomization.yaml").write_text(
            f"resources: [../generated/clusters/{cluster}]\nnamePrefix: dev-\n"
        )
        docs = kustomize(overlay)
        (job,) = [
            d
            for d in docs
            if d["kind"] == kind and d["metadata"]["labels"]["trainkit.dev/job"] == name
        ]
        names = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
        queues = {d["metadata"]["name"] for d in docs if d["kind"] == "Queue"}
        policy = job["spec"]["runPolicy"] if roles else job["spec"]
        assert policy["schedulingPolicy"]["queue"] in queues
        assert policy["schedulingPolicy"]["queue"].startswith("dev-")
        replicas = job["spec"][roles] if roles else {r: job["spec"][r] for r in ("ps", "worker")}
        for replica in replicas.values():
            (script,) = [v for v in replica["template"]["spec"]["volumes"] if v["name"] == "script"]
            assert script["configMap"]["name"] in names
            assert script["configMap"]["name"].startswith("dev-")


def test_name_prefix_queue_and_images_reach_into_every_pod_of_a_rayjob(synthesized):
    """The example RayJob (gpu-east): head, workers and submitter follow the ConfigMap's new
    name and the overlay's image; KubeRay's queue label follows the prefixed Queue."""
    overlay = synthesized.root / "overlay-rayjob"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../generated/clusters/gpu-east]\nnamePrefix: dev-\n"
        "images:\n- name: registry.example.com/ml/ray\n  newTag: 'x'\n"
    )
    docs = kustomize(overlay)
    jobs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "RayJob"}
    job = jobs["dev-lr-sweep-ray-r3"]
    names = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
    queues = {d["metadata"]["name"] for d in docs if d["kind"] == "Queue"}
    assert job["metadata"]["labels"]["volcano.sh/queue-name"] in queues
    assert job["metadata"]["labels"]["volcano.sh/queue-name"].startswith("dev-")
    cluster = job["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]["spec"]]
    pods += [g["template"]["spec"] for g in cluster["workerGroupSpecs"]]
    for pod in pods:
        (script,) = [v for v in pod["volumes"] if v["name"] == "script"]
        assert script["configMap"]["name"] in names
        assert script["configMap"]["name"].startswith("dev-")
    submitter = job["spec"]["submitterPodTemplate"]["spec"]
    for pod in [*pods, submitter]:
        assert pod["containers"][0]["image"] == "registry.example.com/ml/ray:x"
    # A runtime_env working_dir's ConfigMap, on the submitter only, follows its new name too.
    suite = jobs["dev-eval-suite-ray"]["spec"]["submitterPodTemplate"]["spec"]
    (working_dir,) = [v for v in suite["volumes"] if v["name"] == "working-dir"]
    assert working_dir["configMap"]["name"] in names
    assert working_dir["configMap"]["name"].startswith("dev-eval-suite-ray-workdir-")
