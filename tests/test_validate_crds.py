"""Loading the shared CRDs and choosing the CRD directory.

The CRDs are never copied into the repository: the directory comes from
``TRAINKIT_CRDS`` (relative paths are relative to the repository root) or
defaults to ``../shared/crds``. A missing directory fails the tests — a
skipped validation suite would look green while checking nothing.
"""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import crds_dir as shared_crds
from trainkit.collector import cycle_collection_paused
from trainkit.errors import SetupError
from trainkit.validate import CrdSet, crds_dir, load_crds
from trainkit.validate.crd_files import may_define, parse_crd_file
from trainkit.validate.documents import iter_documents, load_all
from validate_fixtures import shared_crd_facts, shared_crd_set, validate_doc

REPO = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def crds() -> CrdSet:
    return shared_crd_set()


@pytest.mark.long
def test_every_crd_file_loads_and_every_served_version_is_indexed(crds: CrdSet) -> None:
    files = shared_crd_facts()
    indexed = crds.kinds()
    assert len({path for path, (_, docs) in files.items() if docs}) >= 20
    for path, (_, docs) in files.items():
        for doc in docs:
            for version, served in doc.versions:
                if served:
                    key = (doc.group, version, doc.kind)
                    assert key in indexed, f"{path}: {key} not indexed"


def test_every_schema_compiles_and_every_shared_cel_rule_is_supported(crds: CrdSet) -> None:
    # Validating a bare object of each kind compiles its schema and all its CEL rules.
    for group, version, kind in sorted(crds.kinds()):
        doc = {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": "x"}}
        validate_doc(crds, doc, "probe.yaml")
    assert crds.compile_all_rules() == []


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("kubeflow.org/v1", "PyTorchJob"),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
        ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime"),
        ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
        ("scheduling.volcano.sh/v1beta1", "Queue"),
        ("argoproj.io/v1alpha1", "Application"),
        ("argoproj.io/v1alpha1", "AppProject"),
    ],
)
def test_the_kinds_trainkit_generates_are_covered(
    crds: CrdSet, api_version: str, kind: str
) -> None:
    group, _, version = api_version.partition("/")
    assert (group, version, kind) in crds.kinds()


def test_missing_directory_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="no such directory or file"):
        load_crds(tmp_path / "nope")


def test_directory_without_crds_is_a_setup_error(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    with pytest.raises(SetupError) as err:
        load_crds(tmp_path)
    assert err.value.problems[0].file == str(tmp_path)
    assert "no CustomResourceDefinition" in err.value.problems[0].message


def test_unreadable_crd_file_is_a_setup_error_when_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: CustomResourceDefinition\nspec: [unclosed\n")
    crds = load_crds(tmp_path, no_cache=True)  # files are parsed on first use
    with pytest.raises(SetupError, match=r"bad\.yaml: cannot read CRD file: .*flow sequence"):
        crds.kinds()


def test_only_the_files_naming_a_kind_are_parsed(tmp_path: Path) -> None:
    shutil.copy(shared_crds() / "volcano/scheduling.volcano.sh_queues.yaml", tmp_path / "q.yaml")
    (tmp_path / "broken.yaml").write_text("kind: CustomResourceDefinition\nspec: [unclosed\n")
    crds = load_crds(tmp_path, no_cache=True)
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
    }
    # broken.yaml never names the Queue kind, so validating a Queue never reads it.
    assert validate_doc(crds, queue, "q.yaml") == []
    with pytest.raises(SetupError, match=r"broken\.yaml"):
        crds.kinds()


def test_crds_dir_option_wins_over_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("TRAINKIT_CRDS", str(other))
    assert crds_dir(str(tmp_path)) == tmp_path
    assert crds_dir(None) == other


def test_crds_dir_is_none_without_option_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    assert crds_dir(None) is None


@pytest.mark.parametrize("from_env", [False, True])
def test_crds_dir_that_does_not_exist_is_a_setup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, from_env: bool
) -> None:
    missing = str(tmp_path / "missing")
    if from_env:
        monkeypatch.setenv("TRAINKIT_CRDS", missing)
    source = "TRAINKIT_CRDS" if from_env else "--crds"
    with pytest.raises(SetupError, match=source):
        crds_dir(None if from_env else missing)


def test_unknown_kind_in_a_crd_group_is_reported(crds: CrdSet) -> None:
    doc = {"apiVersion": "kubeflow.org/v1", "kind": "FooJob", "metadata": {"name": "foo"}}
    [problem] = validate_doc(crds, doc, "jobs.yaml")
    assert problem.message.startswith("no CRD for kubeflow.org/v1 FooJob in ")
    assert "pass --crds with your cluster's CRDs (kubectl get crd -o yaml)" in problem.message


def test_unserved_version_names_the_served_ones(crds: CrdSet) -> None:
    doc = {"apiVersion": "kubeflow.org/v2", "kind": "PyTorchJob", "metadata": {"name": "foo"}}
    [problem] = validate_doc(crds, doc, "jobs.yaml")
    assert "(served versions: v1)" in problem.message


def test_core_kinds_get_only_object_checks(crds: CrdSet) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"anything": "goes"},
        "notAField": 1,  # no schema for built-in kinds: not our business
    }
    assert validate_doc(crds, doc, "cm.yaml") == []
    rbac = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {}}
    [problem] = validate_doc(crds, rbac, "role.yaml")
    assert problem.field == "metadata.name"
    assert "required" in problem.message


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (b"spec:\n  group: a.io\n  names:\n    kind: Widget\n    plural: widgets\n", True),
        (b'spec: {group: "a.io", names: {kind: Widget, plural: widgets}}', True),
        (b'{"spec": {"group": "a.io", "names": {"kind": "Widget"}}}', True),
        (b"spec:\n  group: a.io # the group\n  names:\n    kind: 'Widget'\r\n", True),
        (b"spec:\n  group: a.io\n  names:\n    kind: WidgetSet\n", False),
        (b"spec:\n  group: b.a.io\n  names:\n    kind: Widget\n", False),
        (b"description: a Widget of group a.io\n", False),
    ],
)
def test_which_files_may_define_a_kind(text: bytes, found: bool) -> None:
    assert may_define(text, "a.io", "Widget") is found


# --- reading without the cycle collector (collector.cycle_collection_paused) ---------------


@pytest.fixture
def collections() -> Iterator[list[str]]:
    """Each cycle collection that starts while the test runs (``gc.callbacks``)."""
    started: list[str] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(f"generation {info['generation']}")

    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)


def test_a_crd_file_is_read_without_cycle_collection_which_runs_again_after(
    collections: list[str],
) -> None:
    path = shared_crds() / "kueue/kueue.x-k8s.io_clusterqueues.yaml"
    data = path.read_bytes()
    assert gc.isenabled()
    gc.collect(0)  # the young generation's count starts at zero: only reading can trigger one
    collections.clear()
    docs = parse_crd_file(path, data)
    # 86 kB of YAML: with the collector on, 10 collections; paused, at most the one due when
    # it resumes.
    assert len(collections) <= 1, collections
    assert [(d["spec"]["group"], d["spec"]["kind"]) for d in docs] == [
        ("kueue.x-k8s.io", "ClusterQueue")
    ]
    assert gc.isenabled()
    with pytest.raises(SetupError, match="cannot read CRD file"):
        parse_crd_file(path, b"kind: CustomResourceDefinition\nspec: [unclosed\n")
    assert gc.isenabled()
    # Where the caller paused it, reading does not start it.
    gc.disable()
    try:
        parse_crd_file(path, data)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_caller_of_iter_documents_runs_with_the_collector_as_it_was() -> None:
    text = "a: 1\n---\nb: [2]\n---\nc: {d: 3}\n"
    enabled = [gc.isenabled() for _ in iter_documents(text)]
    assert enabled == [True, True, True]
    assert load_all(text) == [{"a": 1}, {"b": [2]}, {"c": {"d": 3}}]
    assert gc.isenabled()


def test_the_collector_runs_again_when_the_last_of_several_threads_is_done() -> None:
    inside, leave = threading.Barrier(3), threading.Event()

    def read() -> None:
        with cycle_collection_paused():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=read, daemon=True) for _ in range(2)]
    try:
        with cycle_collection_paused():  # the first to pause it
            for t in threads:
                t.start()
            inside.wait()  # all three paused at once
        paused_while_threads_read = not gc.isenabled()  # the first is done
    finally:
        leave.set()
        for t in threads:
            t.join()
    assert paused_while_threads_read
    assert gc.isenabled()
