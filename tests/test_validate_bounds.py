"""Hostile YAML and objects over the API server's limits fail fast, with file and line."""

from __future__ import annotations

import base64
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from trainkit.validate import validate_paths, validate_text
from trainkit.validate.documents import MAX_DEPTH, may_nest_deeper

LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)  # 9**9 ≈ 387 million strings once expanded


def one(text: str) -> tuple[int | None, str]:
    [problem] = validate_text(text, "bomb.yaml", None)
    assert problem.file == "bomb.yaml"
    return problem.line, problem.message


def test_billion_laughs_fails_fast_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n" + LAUGHS)
    [problem] = validate_paths([tmp_path / "bomb.yaml"], None, root=tmp_path)
    assert (problem.file, problem.line) == ("bomb.yaml", 7)
    assert problem.message.startswith("too many aliases: 28 alias references expand to 15,670")
    assert "a manifest needs few or none — write the values out" in problem.message


def test_many_small_aliases_are_capped() -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * 1001) + "]\n"
    line, message = one(text)
    assert line == 2
    assert message.startswith("too many aliases: 1,001 alias references")


def test_a_few_aliases_are_fine() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, labels: &l {app: x}}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, labels: *l}}\n"
    )
    assert validate_text(text, "ok.yaml", None) == []


def test_merge_keys_follow_yaml_and_count_as_aliases() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, labels: &l {app: x, tier: a}}}\n"
        "- apiVersion: v1\n  kind: ConfigMap\n"
        "  metadata: {name: b, labels: {<<: *l, tier: '-bad-'}}\n"
    )
    [problem] = validate_text(text, "m.yaml", None)
    assert (problem.obj, problem.field, problem.line) == (
        "ConfigMap 'b'",
        "items[1].metadata.labels.tier",
        7,
    )
    assert problem.message.startswith("invalid label value '-bad-'")


def test_a_recursive_alias_is_refused() -> None:
    line, message = one("a: &a [1, *a]\n")
    assert line == 1
    assert message.startswith("invalid YAML: found a recursive alias")


def test_an_alias_cannot_nest_past_the_depth_limit() -> None:
    inner = "[" * 200 + "x" + "]" * 200
    outer = "[" * 100 + "*a" + "]" * 100
    line, message = one(f"a: &a {inner}\nb: {outer}\n")
    assert (line, message[:32]) == (2, "nested more than 256 levels deep")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[" * 100_000 + "]" * 100_000, 1),
        ("- " * 100_000 + "x\n", 1),
        ("a:\n" + "".join(" " * i + "a:\n" for i in range(1, 400)), MAX_DEPTH + 1),
    ],
    ids=["flow", "block-sequence", "indented"],
)
def test_deep_nesting_is_an_error_not_a_crash(text: str, line: int) -> None:
    start = time.process_time()
    assert one(text) == (
        line,
        "nested more than 256 levels deep; Kubernetes objects nest about 20 (a generated or "
        "hostile file?)",
    )
    assert time.process_time() - start < 30  # no quadratic blow-up (a generous bound)


def test_the_depth_bound_never_underestimates() -> None:
    assert may_nest_deeper(b"[" * 300, 256)
    assert may_nest_deeper(b"- " * 200, 256)
    assert not may_nest_deeper(b"a:\n  b: [x, {y: z}]\n  c: []\n", 256)


def test_the_depth_bound_sees_every_line_break_libyaml_knows() -> None:
    # libyaml starts a line after \r, NEL, LS and PS too, and reads UTF-16 after its byte
    # order mark: a deep block sequence on such a line went unmeasured (composed unchecked,
    # where an older libyaml has no depth limit of its own).
    deep = "- " * 1200 + "x"
    for brk in ("\n", "\r", "\r\n", "\x85", "\u2028", "\u2029"):
        assert may_nest_deeper(f"a:{brk}{deep}{brk}".encode(), 2000), repr(brk)
    assert may_nest_deeper(f"\ufeff{deep}\n".encode(), 2000)
    assert may_nest_deeper(f"a:\n{deep}\n".encode("utf-16"), 2000)
    assert not may_nest_deeper("a:\r  b: [c]\r\u2028d: 1\n".encode(), 2000)


_BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029"]


def _depth(data: bytes) -> int | None:
    """How deep ``data``'s collections nest, as libyaml reads it (None: not YAML)."""
    depth = deepest = 0
    try:
        for event in yaml.parse(data, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return None
    return deepest


@given(
    before=st.lists(st.sampled_from(["a: 1", "b: [x, {y: z}]", "c: {}"]), unique=True),
    levels=st.integers(1, 12),
    after=st.lists(st.sampled_from(["e: 1", "f: [[]]"]), unique=True),
    breaks=st.lists(st.sampled_from(_BREAKS), min_size=1),
    bom=st.sampled_from(["", "\ufeff"]),
    limit=st.integers(3, 10),
)
def test_the_depth_bound_holds_whatever_breaks_the_lines(
    before, levels, after, breaks, bom, limit
) -> None:
    lines = [*before, "deep:", "- " * levels + "x", *after]
    text = bom + "".join(line + breaks[i % len(breaks)] for i, line in enumerate(lines))
    data = text.encode()
    depth = _depth(data)
    assert depth is not None, text
    if depth > limit:
        assert may_nest_deeper(data, limit), (text, depth)


def configmap(data: str = "", binary: str = "") -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\n"
        + (f"data: {{a.txt: '{data}'}}\n" if data else "")
        + (f"binaryData: {{b.bin: {binary}}}\n" if binary else "")
    )


def test_configmap_over_one_mebibyte_is_refused() -> None:
    half = "x" * (512 * 1024)
    payload = base64.b64encode(b"\0" * (512 * 1024 + 1)).decode()
    [problem] = validate_text(configmap(half, payload), "cm.yaml", None)
    assert (problem.obj, problem.field, problem.line) == ("ConfigMap 'big'", "", 1)
    assert problem.message == (
        "ConfigMap data and binaryData hold 1,048,577 bytes; the API server accepts at most "
        "1,048,576 (1 MiB): split the ConfigMap, or put large files in the image"
    )
    exact = base64.b64encode(b"\0" * (512 * 1024)).decode()
    assert validate_text(configmap(half, exact), "cm.yaml", None) == []


def test_configmap_keys_nul_and_base64() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        'data: {"a b": x, "..x": y, t.py: "print(1)\\0"}\nbinaryData: {t.py: "!!", b: "AAAA"}\n'
    )
    assert sorted((p.field, p.message) for p in validate_text(text, "cm.yaml", None)) == [
        ('binaryData["t.py"]', "binaryData values must be base64"),
        ('binaryData["t.py"]', "key 't.py' is in data too; use one of the two"),
        ('data["..x"]', "invalid ConfigMap key '..x': it may not start with '..'"),
        (
            'data["a b"]',
            "invalid ConfigMap key 'a b': it may hold only letters, digits, '-', '_' and '.'",
        ),
        (
            'data["t.py"]',
            "contains a NUL character (at offset 8); remove it; binary content belongs in "
            "binaryData",
        ),
    ]


def test_any_object_over_etcds_request_limit_is_refused() -> None:
    big = "x" * (1024 * 1024)
    text = (
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: big\n"
        f"  annotations: {{a: '{big[:200_000]}'}}\nspec: {{x: '{big}', y: '{big[:400_000]}'}}\n"
    )
    [problem] = validate_text(text, "job.yaml", None)
    assert problem.field == ""
    assert problem.message.startswith("the object is 1,648,700 bytes as JSON")
    assert "etcd stores at most 1,572,864 (1.5 MiB, its default --max-request-bytes)" in (
        problem.message
    )


@pytest.mark.parametrize("shape", ["many documents", "one large value"])
def test_peak_memory_is_a_small_multiple_of_the_input(tmp_path: Path, shape: str) -> None:
    # Allocation sizes, not time: deterministic on a loaded machine.
    script = "".join(f"    print({i})\n" for i in range(200))
    if shape == "many documents":
        text = "".join(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata:\n"
            f"  train.py: |\n{script}---\n"
            for i in range(500)
        )
    else:
        text = f'apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big}}\ndata: {{a: "{"x" * 900_000}"}}\n'
    (tmp_path / "in.yaml").write_text(text)
    tracemalloc.start()
    try:
        assert validate_paths([tmp_path / "in.yaml"], None, root=tmp_path) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 3 * len(text), f"peak {peak / len(text):.1f}× the input"
