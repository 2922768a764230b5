"""Every string we write reads back as that string in every YAML reader on the way to the cluster.

Readers: PyYAML (YAML 1.1, C and pure-Python), our validator's loader, ruamel.yaml in
YAML 1.2 mode (standing in for kyaml's 1.2 core schema), and the real kustomize.
"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from trainkit.serialize import YamlCache, reads_as_non_string, to_yaml
from trainkit.validate.argo_decode import decode_build
from trainkit.validate.build import find_kubectl
from trainkit.validate.documents import K8sLoader, iter_documents

# Pieces that make scalars some reader resolves: numbers in every base and spelling,
# the 1.1 words, timestamps, sexagesimals, indicators, and the characters that are
# line breaks in YAML 1.1 only (NEL, LS, PS) or that readers handle differently.
RISKY = [
    *"0123456789.eEoOxXbB_:=~-+ #&*!%@`|>'\"?,[]{}\t\n\r",
    *["yes", "No", "ON", "off", "y", "N", "true", "null", "NULL", ".inf", ".NaN", "<<"],
    *["2024-01-01", "2024-1-1", "T1:2:3Z", " 1:2:3", "0o", "0x", "1e3", "训练", "é"],
    *["\x85", "\u2028", "\u2029", "\ufeff", "\xa0", "\x00", "\x1b", "\x7f", "\U0001f600"],
]
risky_text = st.lists(st.sampled_from(RISKY), max_size=6).map("".join)
strings = st.one_of(risky_text, st.text(st.characters(exclude_categories=["Cs"]), max_size=20))


def manifest(values: list[str]) -> dict:
    """A Pod-shaped object holding each string as a list item, a map value and a map key."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {f"a{i}": v for i, v in enumerate(values)}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "args": values,
                    "env": [{"name": f"E{i}", "value": v} for i, v in enumerate(values)],
                }
            ],
            "nodeSelector": dict.fromkeys(values, "x"),
        },
    }


def _ruamel_12(text: str):
    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    return reader.load(text)


def _k8s(text: str):
    (data,) = [data for _, data in iter_documents(text)]
    return data


READERS = {
    "CSafeLoader": lambda t: yaml.load(t, Loader=yaml.CSafeLoader),
    "SafeLoader": lambda t: yaml.load(t, Loader=yaml.SafeLoader),
    "ruamel 1.2": _ruamel_12,
    "K8sLoader": _k8s,
}


def check_every_reader(bodies: list[dict]) -> None:
    (texts,) = to_yaml([("c", bodies)], YamlCache(None))
    for body, text in zip(bodies, texts, strict=True):
        for name, read in READERS.items():
            try:
                back = read(text)
            except Exception as e:  # any reader error is a failure to name
                raise AssertionError(f"{name} cannot read:\n{text}") from e
            assert back == body, f"{name} reads differently:\n{text}"
        # go-yaml has no Python binding here: hold the text to the rules read from resolve.go
        # (every scalar of these objects is a string).
        node = yaml.compose(text, Loader=yaml.CSafeLoader)
        plain = [n.value for n in scalars(node) if not n.style and reads_as_non_string(n.value)]
        assert not plain, f"left plain: {plain}\n{text}"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(strings, min_size=1, max_size=12), min_size=1, max_size=4))
# Bugs in cdk8s's output (the `yaml` npm package, YAML 1.1 schema) that hypothesis found:
# a plain `=` is PyYAML's value tag, which it cannot construct;
@example([["="]])
# a plain `<<` is PyYAML's merge tag, which it cannot construct as a value;
@example([["<<"]])
# a plain 0o3 is an int to YAML 1.2 readers (ruamel, kyaml);
@example([["0o3"]])
# DEL and C1 controls were written raw: PyYAML rejects the whole document;
@example([["\x7f", "\x84"]])
# NEL, LS and PS were written raw: line breaks to YAML 1.1 readers, which then fail to parse.
@example([["\x85", "\u2028", "\u2029*"]])
# Found by fuzzing the predicate against go-yaml v2/v3 and ruamel; cdk8s left these plain:
# Go's number syntax (base prefixes in either case, "_" dropped anywhere),
@example([["0X1F", "0B11", "0O17", "-_1", "1e3_"]])
# ruamel 1.2 takes a sign followed only by "_" for an int (and then cannot build it),
@example([["-_", "+_"]])
# and timestamps Go parses but the npm package's 1.1 schema does not know (comma fraction).
@example([["2024-1-1 1:2:3,5"]])
# Tabs: the pure-Python 1.1 reader rejects cdk8s's plain `0<TAB>0` (the earlier fix).
@example([["0\t0", "a\tb"]])
# A line of a block scalar holding only a tab (`|+` then TAB): the pure-Python reader takes it,
# libyaml refuses it ("found a tab character where an indentation space is expected").
@example([["\t\n"]])
# Spaces and line breaks only (`|+` with no indentation indicator): every reader drops the spaces,
# the longest line setting the indentation (YAML 1.2.2 8.1.1.1), so ' \n' came back "\n".
@example([[" \n", "\n \n", " \n\n", "x\n\n"]])
def test_every_reader_reads_back_every_string(groups):
    check_every_reader([manifest(values) for values in groups])


def test_ruamel_12_is_a_real_yaml_12_core_reader():
    """The property test leans on ruamel for YAML 1.2: it must resolve the 1.2-only forms."""
    assert _ruamel_12("[0o755, 1e3, 0x1F, .inf, yes, on, y]") == [
        493,
        1000.0,
        31,
        float("inf"),
        "yes",
        "on",
        "y",
    ]


# Strings some reader resolves when plain (the list first).
RESOLVED = [
    *["0o755", "1e3", "yes", "=", "0x1F", "1_000", ".5", "+1", "null", "~", "2024-01-01"],
    *["y", "N", "on", "OFF", "0b101", "1:20", "-.5", "0X1F", ".inf", "<<", "-_1", "08"],
    *["2024-1-1T1:2:3Z", "true", ""],
]
# Plus characters cdk8s wrote raw, and non-ASCII text. Not NEL, LS or PS: kustomize writes
# them raw and go-yaml then folds them into a space; nor DEL, C1 controls or U+FFFE/U+FFFF:
# kustomize refuses to write them at all.
KUSTOMIZE_CASES = [*RESOLVED, "\ufeffx", "0\t0", "a\x1bb", "训练"]


def kustomize(resource: str, tmp: Path, tests: list[dict]) -> str:
    """``kubectl kustomize`` on one resource, with JSON-patch ``test`` ops on its values:
    kustomize fails the build unless what it read equals each value, type included."""
    tmp.mkdir()
    (tmp / "pod.yaml").write_text(resource, encoding="utf-8")
    (tmp / "test.json").write_text(json.dumps(tests))
    (tmp / "kustomization.yaml").write_text(
        "resources: [pod.yaml]\npatches:\n- path: test.json\n  target: {kind: Pod, name: p}\n"
    )
    kubectl = find_kubectl()
    if kubectl is None:
        pytest.fail("kubectl is required for this test (it carries kustomize); install it")
    out = subprocess.run([kubectl, "kustomize", str(tmp)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def value_tests(body: dict) -> list[dict]:
    """``test`` ops for every value whose JSON text has one spelling: json-patch compares the
    encoded bytes, and Go escapes ``<>&`` and keeps non-ASCII raw where Python does not."""
    c = body["spec"]["containers"][0]
    leaves = [
        *(("/metadata/annotations/" + k, v) for k, v in body["metadata"]["annotations"].items()),
        *((f"/spec/containers/0/args/{i}", v) for i, v in enumerate(c["args"])),
        *((f"/spec/containers/0/env/{i}/value", e["value"]) for i, e in enumerate(c["env"])),
    ]
    one = [(path, v) for path, v in leaves if v.isascii() and not set(v) & set("<>&")]
    assert len(one) > len(leaves) * 3 // 4  # most values are checked this way
    return [{"op": "test", "path": path, "value": v} for path, v in one]


class GoValues(yaml.CSafeLoader):
    """PyYAML without the two rules go-yaml lacks for values, ``=`` (value) and ``<<`` (merge
    only as a key): kyaml writes both plain, which PyYAML alone cannot then read."""


GoValues.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if not tag.endswith(("value", "merge"))]
    for first, resolvers in K8sLoader.yaml_implicit_resolvers.items()
}


def test_kustomize_reads_every_string_back_as_a_string(tmp_path):
    assert all(reads_as_non_string(s) for s in RESOLVED)
    body = manifest(KUSTOMIZE_CASES)
    ((text,),) = to_yaml([("c", [body])], YamlCache(None))
    tests = value_tests(body)
    built = kustomize(text, tmp_path / "ours", tests)
    # Argo CD reads kustomize's output in turn: go-yaml v3 (kustomize) reads it back equal...
    kustomize(built, tmp_path / "again", tests)
    back = yaml.load(built, Loader=GoValues)
    # kyaml drops a "<<" key even quoted (a merge key to it); no Kubernetes map may hold one
    # (label, annotation and ConfigMap keys are validated), so that loss never matters.
    del body["spec"]["nodeSelector"]["<<"]
    assert back["spec"] == body["spec"]
    assert back["metadata"]["annotations"] == body["metadata"]["annotations"]
    # ...and Argo CD's own decoding (gitops-engine SplitYAML, see validate.argo_decode) too.
    (argo,) = decode_build(built.encode())
    assert argo.body["spec"] == body["spec"]
    assert argo.body["metadata"]["annotations"] == body["metadata"]["annotations"]
    # ...and sigs.k8s.io/yaml (go-yaml v2) does too: its extra words (y, on, ...) stay quoted.
    plain = {n.value for n in scalars(yaml.compose(built, Loader=yaml.CSafeLoader)) if not n.style}
    assert plain & set(RESOLVED) == {"=", "<<"}


def test_kustomize_reads_spaces_and_line_breaks_back(tmp_path):
    """Strings of spaces and line breaks only, alone in an object (nothing else in it sends
    it to libyaml): cdk8s's `|+` lost their spaces in kustomize, as in every reader."""
    body = manifest([" \n", "\n \n", " \n\n", " \nx", "x\n \n"])
    ((text,),) = to_yaml([("c", [body])], YamlCache(None))
    tests = value_tests(body)
    built = kustomize(text, tmp_path / "ours", tests)
    kustomize(built, tmp_path / "again", tests)
    (argo,) = decode_build(built.encode())
    assert argo.body["spec"] == body["spec"]
    assert argo.body["metadata"]["annotations"] == body["metadata"]["annotations"]


def scalars(node: yaml.Node) -> Iterator[yaml.ScalarNode]:
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            yield from scalars(k)
            yield from scalars(v)
