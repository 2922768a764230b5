"""What Argo CD applies is what trainkit planned: every kustomize build, decoded as Argo CD
v3.5.1 decodes it (``validate.argo_decode``), equals the rendered objects.

The decoder follows go-yaml v2 through sigs.k8s.io/yaml (pinned examples below, each
from go-yaml v2.4.3 ``resolve.go``/``decode.go``, sigs.k8s.io/yaml v1.6.0 ``yaml.go``,
apimachinery v0.36.1 ``pkg/util/yaml/decoder.go`` and ``unstructured``), and a property
test holds that, for definitions whose paths and strings are full of what YAML readers
take for something else, the decoded builds are exactly the planned objects.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, reject, settings
from hypothesis import strategies as st

from trainkit.errors import DefinitionError
from trainkit.synth import synthesize
from trainkit.validate import planned_objects
from trainkit.validate.applied import compare_build
from trainkit.validate.argo_decode import DecodeError, decode_build, split_documents
from trainkit.validate.build import kustomize_build


def one(text: str) -> dict:
    (obj,) = decode_build(text.encode())
    return obj.body


# --- go-yaml v2 as sigs.k8s.io/yaml uses it, pinned -------------------------------------


@pytest.mark.parametrize(
    ("plain", "value"),
    [
        ("yes", True), ("on", True), ("y", True), ("N", False), ("off", False),
        ("0o755", 493), ("0755", 493), ("0x1F", 31), ("0b101", 5), ("-_1", -1),
        ("1_000", 1000), ("08", 8), ("1e3", 1000), ("1.5", 1.5), (".5", 0.5),
        ("~", None), ("null", None), ("", None), ("=", "="), ("<<", "<<"),
        ("2024-01-01", "2024-01-01"), ("2024-1-1 1:2:3", "2024-1-1 1:2:3"),
        ("1e400", "1e400"), ("0x1FFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFF"),
        ("18446744073709551615", 1.8446744073709552e19), ("tRUE", "tRUE"), ("0b-101", -5),
    ],
)  # fmt: skip
def test_plain_scalars_resolve_as_go_yaml_v2_then_json(plain: str, value: object) -> None:
    got = one(f"kind: K\nv: {plain}\n")["v"]
    assert got == value and type(got) is type(value)


def test_quoted_scalars_are_strings() -> None:
    body = one("kind: K\na: 'yes'\nb: \"0o755\"\nc: '<<'\nd: |\n  ~\n")
    assert body == {"kind": "K", "a": "yes", "b": "0o755", "c": "<<", "d": "~\n"}


def test_keys_become_strings_as_sigs_yaml_converts_them() -> None:
    body = one("kind: K\nm: {1: a, 1.5: b, true: c, y: d, 1e6: e}\n")
    assert body["m"] == {"1": "a", "1.5": "b", "true": "d", "1e+06": "e"}


def test_merge_keys_apply_in_order_as_go_yaml_v2_does() -> None:
    """decode.go mapping(): a merge writes its keys where it stands, so a later key wins
    over it and it wins over an earlier one (PyYAML lets explicit keys win)."""
    body = one("kind: K\nb: &b {x: 1, z: 1}\nm: {x: 0, <<: *b, z: 2}\nl: {<<: [{q: 1}, {q: 2}]}\n")
    assert body["m"] == {"x": 1, "z": 2}
    assert body["l"] == {"q": 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: K\nv: .nan\n", "cannot be written as JSON"),
        ("kind: K\nv: .inf\n", "cannot be written as JSON"),
        ("kind: K\n~: 1\n", "null"),
        ("kind: K\n18446744073709551615: 1\n", "uint64"),
        ("kind: K\n1: a\n'1': b\n", "Argo CD keeps either"),
        ("v: 1\n", "Kind"),
        ("apiVersion: a/b/c\nkind: K\n", "Kind"),
        ("- a\n", "list"),
        ("--- x\n", "separator"),
        ('kind: K\nv: "a\\x7f"\n', "cannot read back"),
        ("kind: K\nv: ! 12\n", "non-specific tag"),
        ("kind: K\nv: !!int abc\n", "cannot decode"),
    ],
)
def test_what_argo_cd_cannot_decode_is_an_error(text: str, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_build(text.encode())


def test_a_nel_in_a_string_is_folded_when_argo_cd_reads_its_json_back() -> None:
    assert one('kind: K\nv: "a \\N b"\n')["v"] == "a b"


def test_lists_are_applied_item_by_item_and_null_lists_not_at_all() -> None:
    objects = decode_build(
        b"kind: List\nitems:\n- {kind: A}\n- {kind: B}\n---\nkind: CList\nitems: null\n"
    )
    assert [o.body["kind"] for o in objects] == ["A", "B"]
    assert [o.item for o in objects] == [0, 1]


def test_documents_are_cut_as_apimachinery_cuts_them() -> None:
    text = b"a: 1\r\n---  # c\r\n\r\nb: 2\n---\n---\nc: 3"
    assert [(line, doc) for line, doc in split_documents(text)] == [
        (1, b"a: 1\n"),
        (3, b"\nb: 2\n"),
        (7, b"c: 3\n"),
    ]


# --- the property: decoded builds equal the planned objects --------------------------------

PLATFORM = """\
from trainkit import ArgoCD, Capacity, Cluster, Queue, Team

argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")
east = Cluster(name="east", server="https://east.example.com", gpus_per_node=8)
research = Queue(name="research", capability=Capacity(gpu=16))
vision = Team(name="vision", queues=["research"])
"""

# What YAML readers resolve, and every YAML indicator.
PIECES = [
    *["=", "<<", "yes", "on", "y", "0o755", "0755", "1e3", "~", "null", "", "08", "0x1F"],
    *["2024-01-01", ".inf", ".nan", "1_000", "-_1", "true", "No", "1:20", "0b101", "+1"],
    *"-?:,[]{}#&*!|>'\"%@`",
    *[" ", "\t", "\n", "x", "é", "训练", " #", ": ", "- ", "---", "...", "\\", "\\n"],
]
text = st.lists(st.sampled_from(PIECES), max_size=5).map("".join)
# File and directory names: printable, no "/", not hidden or private (never loaded).
name_chars = st.sampled_from([*string.ascii_letters, *"-?:,[]{}#&*!|>'\"%@` =~.", "é", "训"])
names = st.text(name_chars, min_size=1, max_size=12).filter(lambda n: n[0] not in "._")


@pytest.mark.long
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    directory=names,
    file=names,
    args=st.lists(text, max_size=6),
    env=st.dictionaries(st.sampled_from(["A", "B", "C"]), text, max_size=3),
)
# cdk8s wrote ' \n' as `|+` and one line of spaces, which kustomize (like every reader)
# reads as "\n" (see serialize._blank_block).
@example(directory=":", file=":", args=[], env={"A": " \n"})
def test_decoded_builds_equal_the_planned_objects(
    tmp_path_factory: pytest.TempPathFactory,
    directory: str,
    file: str,
    args: list[str],
    env: dict[str, str],
) -> None:
    root = tmp_path_factory.mktemp("gate")
    (root / "jobs/platform").mkdir(parents=True)
    (root / "jobs/platform/platform.py").write_text(PLATFORM)
    job = root / "jobs/vision" / directory / f"{file}.py"
    job.parent.mkdir(parents=True)
    job.write_text(
        "from trainkit import PyTorchJob, Resources\n\n"
        "job = PyTorchJob(\n"
        '    name="ddp",\n'
        '    image="registry.example.com/pytorch:2",\n'
        '    command=["python", "-c", "pass"],\n'
        f"    args={json.dumps(args)},\n"
        f"    env={json.dumps(env)},\n"
        '    queue="research",\n'
        "    resources=Resources(cpu=1, memory='1Gi', gpu=1),\n"
        ")\n",
        encoding="utf-8",
    )
    try:
        out = synthesize(root / "jobs", root / "generated", root=root, use_cache=False)
    except DefinitionError:
        reject()  # a value the models refuse never reaches a build
    planned = planned_objects(out.objects, out.files, out.kept)
    cluster = root / "generated/clusters/east"
    text_out, problems = kustomize_build(cluster)
    assert not problems, problems
    decoded = decode_build(text_out.encode())
    assert not compare_build(cluster, root / "generated", decoded, planned, shown="generated")
    (pytorchjob,) = [d.body for d in decoded if d.body["kind"] == "PyTorchJob"]
    container = pytorchjob["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"][
        "containers"
    ][0]
    if args:
        assert container["args"][-len(args) :] == args
    shown_env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert all(shown_env[k] == v for k, v in env.items())
    source = pytorchjob["metadata"]["annotations"]["trainkit.dev/source"]
    assert source == Path("jobs/vision", directory, f"{file}.py").as_posix()


def test_a_file_that_lists_more_than_trainkit_wrote_is_named(
    synthesized: object,
) -> None:
    """A hand-added document (the tree otherwise as synth wrote it): compare_build names
    the file through kustomize's own origin annotations."""
    from conftest import Workspace
    from trainkit.validate.build import origin_build

    ws = synthesized
    assert isinstance(ws, Workspace)
    cluster = ws.out / "clusters/gpu-east"
    victim = sorted((cluster / "vision").glob("pytorchjob-*.yaml"))[0]
    rel = victim.relative_to(ws.out).as_posix()
    # The planned objects, as check has them (with the copy's caches, as check runs).
    out = synthesize(ws.jobs, ws.out, root=ws.root, check=True)
    planned = planned_objects(out.objects, out.files, out.kept)
    victim.write_text(
        victim.read_text()
        + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: vision}\n"
    )
    text_out, problems = kustomize_build(cluster)
    assert not problems
    found = compare_build(
        cluster, ws.out, decode_build(text_out.encode()), planned,
        shown="generated", origins=origin_build,
    )  # fmt: skip
    assert [(p.file, p.obj) for p in found] == [(f"generated/{rel}", "Secret 'stolen'")]
    assert "trainkit did not render it" in found[0].message


@given(
    st.lists(st.sampled_from(["---", "--- #c", "a: 1", "", " ---", "----x", "---\t", "x---"]))
    .map("\n".join)
    .flatmap(lambda s: st.sampled_from([s, s + "\n"]))
)
def test_the_fast_cut_is_the_line_by_line_cut(text: str) -> None:
    """Without a CR, documents are cut at separator lines found at once (kustomize's output
    has none): the same cut as reading line by line, errors included."""
    from trainkit.validate.argo_decode import _split_lines

    def cut(split: object) -> object:
        try:
            return list(split(text.encode()))  # type: ignore[operator]
        except DecodeError as err:
            return (err.line, err.message)

    assert cut(split_documents) == cut(_split_lines)


def test_another_kustomize_than_argo_cds_is_a_warning_naming_both(
    bare: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import Workspace
    from trainkit.validate import build, validate_tree

    ws = bare
    assert isinstance(ws, Workspace)
    real = build.find_kubectl()
    assert real is not None
    fake = tmp_path / "kubectl"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = version ]; then echo \'{"kustomizeVersion": "v5.5.0"}\'; exit 0; fi\n'
        f'exec "{real}" "$@"\n'
    )
    fake.chmod(0o755)
    synthesize(ws.jobs, ws.out, root=ws.root, use_cache=False)
    monkeypatch.setattr(build, "find_kubectl", lambda: str(fake))
    notes: list = []
    problems, _ = validate_tree(ws.out, None, ws.root, notes=notes)
    assert not problems
    (warning,) = notes
    assert "kustomize v5.5.0" in warning.message and "kustomize v5.8.1" in warning.message
    assert "Argo CD v3.5.1" in warning.message
    monkeypatch.setattr(build, "find_kubectl", lambda: real)
    notes.clear()
    validate_tree(ws.out, None, ws.root, notes=notes)
    assert notes == []  # trainkit's own kubectl carries Argo CD's kustomize


_LINE_PARTS = st.sampled_from(
    [
        *(b"a", b"x" * 999, b"y" * 1000, b"\\u", b"\\", b"N", b"!", b" ", b"\n"),
        *(b"\xc2\x85", b"\xc2", b"\x7f", b"\xef\xbf\xbe", b"\xef\xbf"),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE_PARTS, max_size=12).map(b"".join))
def test_the_second_read_test_is_the_one_regex(chunk: bytes) -> None:
    """The long line is looked for apart from the other characters that make Argo CD read a
    document's JSON back: the same answer as the one regex that held both."""
    import re

    from trainkit.validate.argo_decode import _needs_second_read

    one = re.compile(rb"\\[xuUN]|\xc2[\x80-\x9f]|\xef\xbf[\xbe\xbf]|\x7f|[^\n]{1000}")
    assert _needs_second_read(chunk) == bool(one.search(chunk))
