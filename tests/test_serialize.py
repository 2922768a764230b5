"""cdk8s serialization: every object comes back exactly, whatever the script text holds."""

import json
import string
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainkit import serialize
from trainkit.serialize import YamlCache, _key, reads_as_non_string, to_yaml


@pytest.fixture(autouse=True)
def _nothing_checked_yet(monkeypatch):
    """Each test starts with no text remembered by the process (``serialize._CHECKED``), so
    what it shows of the cache file and of cdk8s does not depend on the tests before it."""
    monkeypatch.setattr(serialize, "_CHECKED", {})
    monkeypatch.setattr(serialize, "_checked_size", [0])


TRICKY = [
    "print('x')\n",
    "  starts indented\n\tand a tab\n",
    "trailing spaces   \nlast line without newline",
    "---\nitems:\n  - not a list item\n- x\n",
    "windows\r\nline endings\r\n",
    "",
    "0\t0\n1\t2 tab-separated\n",
    "\n\n\nblank first\n",
    "unicode: 训练 ✓ \u00a0nbsp\n",
    "yes\nno\non: off\n~\nnull\n0x10\n1e3\n",
    "\"quoted\" and 'single' # not a comment\n",
]


def configmap(name: str, text: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"n": "0", "y": "yes"}},
        "data": {"train.py": text, "empty": "", "num": "123"},
    }


def roundtrip(bodies: list[dict]) -> None:
    (texts,) = to_yaml([("c", bodies)], YamlCache(None))
    assert [yaml.safe_load(t) for t in texts] == bodies


def test_tricky_texts_round_trip():
    roundtrip([configmap(f"cm{i}", t) for i, t in enumerate(TRICKY)])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(
            alphabet=st.characters(exclude_categories=["Cs", "Cc"]) | st.sampled_from("\n\t\r -:#"),
            max_size=80,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_any_text_round_trips(texts):
    roundtrip([configmap(f"cm{i}", t) for i, t in enumerate(texts)])


def test_groups_keep_their_order_and_cache_hits_skip_cdk8s(tmp_path, monkeypatch):
    cache = YamlCache(tmp_path / "c.json")
    groups = [("a", [configmap("x", "1\n")]), ("b", [configmap("y", "2\n"), configmap("z", "3\n")])]
    first = to_yaml(groups, cache)
    cache.save()
    assert [[yaml.safe_load(t)["metadata"]["name"] for t in g] for g in first] == [
        ["x"],
        ["y", "z"],
    ]
    monkeypatch.setattr(serialize, "_synth", lambda groups: (_ for _ in ()).throw(AssertionError))
    serialize._CHECKED.clear()  # from the file, not from what this process remembers
    assert to_yaml(groups, YamlCache(tmp_path / "c.json")) == first


def test_a_process_reuses_the_texts_it_checked_where_caches_are_on(tmp_path, monkeypatch):
    """A second synth in one process (tests, ``plan``) sends nothing to cdk8s and checks
    nothing again: the texts are those its own checks passed. With caches off (CI,
    ``--no-cache``: ``YamlCache(None)``) every object goes to cdk8s and is checked."""
    bodies = [pod(["10", "0o755", "="]), configmap("x", "yes\n"), pod(["1"])]
    first = to_yaml([("c", bodies)], YamlCache(tmp_path / "a.json"))
    assert len(serialize._CHECKED) == 3
    sent: list[str] = []
    real = serialize._synth
    monkeypatch.setattr(serialize, "_synth", lambda objects: sent.extend(objects) or real(objects))

    def unchecked(*_: object) -> bool:
        raise AssertionError("checked again")

    for name in ("_safe", "_read_back"):
        monkeypatch.setattr(serialize, name, unchecked)
    again = YamlCache(tmp_path / "b.json")  # another repository: its file is empty
    assert to_yaml([("c", bodies)], again) == first
    assert sent == []
    again.save()  # the repository's own file holds every text it used
    assert to_yaml([("c", bodies)], YamlCache(tmp_path / "b.json")) == first
    with pytest.raises(AssertionError, match="checked again"):
        to_yaml([("c", bodies)], YamlCache(None))  # the test can fail: caches off, it does


def test_the_remembered_texts_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(serialize, "_CHECKED_LIMIT", 400)
    for i in range(6):
        to_yaml([("c", [configmap(f"cm{i}", "x" * 50)])], YamlCache(tmp_path / "c.json"))
        assert serialize._checked_size[0] == sum(map(len, serialize._CHECKED.values())) <= 400
    assert 0 < len(serialize._CHECKED) < 6


# Plain scalars some reader resolves, grouped by the reader that does (checked against go-yaml
# v2.4.0/v3.0.1, PyYAML and ruamel.yaml by fuzzing; see reads_as_non_string).
RESOLVED = {
    "PyYAML (YAML 1.1)": ["=", "<<", "yes", "No", "ON", "~", "", "1:20", "0b101", "017", ".5"],
    "PyYAML timestamps": ["2024-01-01", "2024-1-1 1:02:03"],
    "go-yaml v2 words": ["y", "Y", "n", "N"],
    "go-yaml numbers": ["0X1F", "0B11", "0O17", "-_1", "1e3_", "1_e3", "08", "-.5", "+.5"],
    "go-yaml timestamps": ["2024-1-1", "2024-1-1T1:2:3Z", "2024-1-1  1:2:3", "2024-1-1 1:2:3,5"],
    "YAML 1.2 core": ["0o755", "1e3", "1E+3", "0x1F", ".NaN", "-.INF", "TRUE", "NULL"],
    "ruamel.yaml 1.2": ["-_", "+_", "._", "-._"],
}
# Look-alikes every reader keeps as strings: quoting them would be harmless but noisy.
NOT_RESOLVED = ["yes please", "1.2.3", "-e", "--lr=0.1", "v1", "0x", "0o", "_1", "1-2"]
NOT_RESOLVED += ["2024-01", "NaN", "inf", "Infinity", "e3", "1e", "y2", "==", "<<<", "~~", "0o8"]


@pytest.mark.parametrize(
    "text", [pytest.param(s, id=f"{who}:{s!r}") for who, ss in RESOLVED.items() for s in ss]
)
def test_strings_some_reader_resolves(text):
    assert reads_as_non_string(text)


@pytest.mark.parametrize("text", NOT_RESOLVED)
def test_strings_every_reader_keeps(text):
    assert not reads_as_non_string(text)


def pod(args: list[str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"args": args}}


def test_cdk8s_text_is_kept_where_it_already_quotes_and_replaced_where_not():
    kept, replaced = (
        to_yaml([("c", [pod(["10", "yes", "1e3"]), pod(["10", "0o755", "="])])], YamlCache(None))
    )[0]
    # cdk8s indents list items under their key; libyaml does not.
    assert kept.endswith('  args:\n    - "10"\n    - "yes"\n    - "1e3"\n')
    assert replaced.endswith('  args:\n  - "10"\n  - "0o755"\n  - "="\n')


def test_libyaml_fallback_is_deterministic_and_keeps_key_order():
    body = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "z": "y", "a": "n"}}
    body["spec"] = {"args": ["=", "x" * 300, "a\u2028b", "\ufeff"]}
    first = to_yaml([("c", [body])], YamlCache(None))
    assert to_yaml([("c", [json.loads(json.dumps(body))])], YamlCache(None)) == first
    ((text,),) = first
    assert text == (
        'kind: Pod\napiVersion: v1\nmetadata:\n  name: p\n  z: "y"\n  a: "n"\n'
        f'spec:\n  args:\n  - "="\n  - {"x" * 300}\n  - "a\\Lb"\n  - "\\uFEFF"\n'
    )


def test_a_cache_written_before_this_quoting_is_not_trusted(tmp_path):
    """Format 1 stored cdk8s's plain `=`, which PyYAML cannot read."""
    body = pod(["="])
    stale = {"stamp": f"1/cdk8s-{version('cdk8s')}", "entries": {_key(body): "args: [=]\n"}}
    (tmp_path / "c.json").write_text(json.dumps(stale))
    ((text,),) = to_yaml([("c", [body])], YamlCache(tmp_path / "c.json"))
    assert yaml.safe_load(text) == body


def test_a_cached_text_is_checked_like_cdk8s_output(tmp_path, monkeypatch):
    """An entry of the current format whose text leaves a resolvable string plain (as cdk8s
    may), or that reads back as another object, is a miss: the object goes to cdk8s again."""
    plain, garbled = pod(["=", "0o755"]), pod(["10", "x"])
    entries = {
        _key(plain): "kind: Pod\nspec:\n  args:\n  - =\n  - 0o755\n",
        _key(garbled): "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  args: [10, x]\n",
    }
    stamp = YamlCache(None)._stamp
    (tmp_path / "c.json").write_text(json.dumps({"stamp": stamp, "entries": entries}))
    sent = []
    real = serialize._synth
    monkeypatch.setattr(serialize, "_synth", lambda objects: sent.extend(objects) or real(objects))
    texts = to_yaml([("c", [plain, garbled])], YamlCache(tmp_path / "c.json"))
    assert [yaml.safe_load(t) for t in texts[0]] == [plain, garbled]
    assert sorted(json.loads(o)["spec"]["args"][0] for o in sent) == ["10", "="]


def test_a_corrupt_cache_file_is_a_miss(tmp_path):
    (tmp_path / "c.json").write_bytes(b'{"stamp": "3/cdk8s-')
    cache = YamlCache(tmp_path / "c.json")
    assert cache.empty
    ((text,),) = to_yaml([("c", [pod(["1"])])], cache)
    assert yaml.safe_load(text) == pod(["1"])


@given(st.one_of(st.text(max_size=8), st.sampled_from([s for ss in RESOLVED.values() for s in ss])))
def test_every_resolvable_string_starts_with_a_character_the_fast_check_looks_at(text):
    if reads_as_non_string(text):
        assert text[:1] in serialize._FIRST


# Strings a hand-written emitter may leave plain: resolvable ones and look-alikes.
WORDS = st.one_of(
    st.sampled_from(["=", "<<", "yes", "y", "n", "10", "-5", "0o755", "0X1F", "1e3", "-_1"]),
    st.sampled_from(["~", "2024-1-1", "true", "x", "ddp", "pytorch", "10x", "a-b", "v1.2"]),
    # [a-z0-9][a-z0-9._-]{0,5}, built from its two parts: drawing from the regex cost about
    # twice as much per example, and the property's 300 examples are mostly drawing.
    st.builds(
        str.__add__,
        st.sampled_from(string.ascii_lowercase + string.digits),
        st.text(string.ascii_lowercase + string.digits + "._-", max_size=5),
    ),
)
VALUES = st.recursive(
    st.one_of(WORDS, st.integers(-20, 20), st.booleans()),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(WORDS, inner, min_size=1, max_size=3),
    ),
    max_leaves=10,
)


def _emit(value, indent, choose, plain):
    """Block YAML of ``value``, each string plain or double-quoted as ``choose`` says."""

    def scalar(x):
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, int):
            return str(x)
        if choose():
            plain.append(x)
            return x
        return json.dumps(x)

    pad = " " * indent
    lines = []
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for key, item in items:
        lead = f"{pad}{scalar(key)}:" if key is not None else f"{pad}-"
        if isinstance(item, dict | list):
            lines.append(lead)
            lines.extend(_emit(item, indent + 2, choose, plain))
        else:
            lines.append(f"{lead} {scalar(item)}")
    return lines


@pytest.mark.long
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.dictionaries(WORDS, VALUES, min_size=1, max_size=4), data=st.data())
def test_the_fast_check_never_passes_a_resolvable_string_left_plain(body, data):
    """``_safe`` may send a safe text to be read back, but never passes an unsafe one,
    whatever integers, booleans and look-alikes stand around the plain string."""
    # Which strings are left plain: one bit per scalar, in the order they are written, drawn
    # at once (a draw per scalar cost more than the property's other work together).
    count: list[str] = []
    _emit(body, 0, lambda: True, count)
    size = (len(count) + 7) // 8
    mask = int.from_bytes(data.draw(st.binary(min_size=size, max_size=size), label="plain"))
    bits = iter(range(len(count)))
    plain: list[str] = []
    text = "\n".join(_emit(body, 0, lambda: bool(mask >> next(bits) & 1), plain)) + "\n"
    if serialize._safe(body, text, serialize._json(body)):
        assert not [s for s in plain if reads_as_non_string(s)], text


@pytest.mark.parametrize("data_filter", [True, False])
def test_the_tarfile_fallback_unpacks_what_the_tar_binary_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_filter: bool
) -> None:
    """Both leave out what node never runs (``_NOT_RUN``), and keep the same files; also
    on a Python older than tarfile's "data" filter (3.11.4: Debian 12's is 3.11.2)."""
    import tarfile

    from trainkit import cdk8s_node

    if not data_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)

    def listing(top: Path) -> list[str]:
        return sorted(p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file())

    for name in cdk8s_node._PACKAGES:
        tarball = cdk8s_node._tarball(name)
        cdk8s_node._unpack(tarball, tmp_path / "tar" / name)
        with monkeypatch.context() as m:
            m.setattr(cdk8s_node.shutil, "which", lambda _: None)
            cdk8s_node._unpack(tarball, tmp_path / "module" / name)
        files = listing(tmp_path / "tar" / name)
        assert files == listing(tmp_path / "module" / name)
        assert "package.json" in files and any(f.startswith("lib/") for f in files)
        assert not [f for f in files if f.endswith((".d.ts", ".md")) or f.startswith(".jsii")]


def test_cdk8s_is_asked_in_bounded_chunks_for_the_same_texts(monkeypatch):
    """node is sent at most ``_CHUNK`` objects per request (its memory grew faster than
    what one request held), and the texts are those of one request holding them all."""
    from trainkit import cdk8s_node

    objects = [json.dumps(configmap(f"cm{i}", t)) for i, t in enumerate(TRICKY * 3)]
    whole = serialize._synth(objects)
    asked: list[int] = []
    ask = cdk8s_node._ask

    def spy(proc, data):
        asked.append(len(json.loads(data)))
        return ask(proc, data)

    monkeypatch.setattr(cdk8s_node, "_ask", spy)
    monkeypatch.setattr(cdk8s_node, "_CHUNK", 4)
    assert serialize._synth(objects) == whole
    assert asked == [4] * 8 + [1]


# Strings of spaces and line breaks only: cdk8s (the `yaml` npm package 2.9.1, blockString in
# dist/stringify/stringifyString.js) writes them as a block scalar with no indentation
# indicator, so every reader takes the content's indentation from the longest line (YAML 1.2.2
# §8.1.1.1: no non-empty line, so "the number of spaces on the longest line") and reads each
# line as empty: ' \n' comes back "\n" from libyaml, PyYAML and go-yaml (kustomize) alike.
BLANK_LINES = [" \n", "  \n", "\n \n", " \n\n", " \n \n", "\n\n  \n\n"]


@pytest.mark.parametrize("text", BLANK_LINES)
def test_a_string_of_spaces_and_line_breaks_is_quoted(text):
    body = pod([text])
    raw = serialize._json(body)
    (cdk8s_text,) = serialize._synth([raw])
    assert "|+" in cdk8s_text  # what cdk8s writes, and what this test is about
    assert not serialize._safe(body, cdk8s_text, raw)  # the fast path sends it to be read back
    ((written,),) = to_yaml([("c", [body])], YamlCache(None))
    assert written.endswith(f"  args:\n  - {json.dumps(text)}\n")  # libyaml double-quotes it
    assert yaml.load(written, Loader=yaml.CSafeLoader) == body


@pytest.mark.parametrize("text", [" \nx", "\n \nx", "x\n \n", "x\n  \ny\n"])
def test_a_space_only_line_beside_text_keeps_cdk8s_block(text):
    """With a line of text the indentation is that line's (or cdk8s's `|2` says it): every
    reader gets the string back from cdk8s's block scalar, so it is kept."""
    ((written,),) = to_yaml([("c", [pod([text])])], YamlCache(None))
    assert "    - |" in written and yaml.load(written, Loader=yaml.CSafeLoader) == pod([text])


@pytest.mark.parametrize("text", ["x\n\n", "x\n\n\n", "\n\n", "x\n \n\n"])
def test_trailing_empty_lines_of_the_last_object_of_a_request_are_kept(text):
    """cdk8s writes `x` and an empty line for "x\\n\\n" (`|+`); cutting its List apart kept
    that empty line for every item but the last of a request."""
    bodies = [pod([text]), pod(["a", text])]
    (texts,) = to_yaml([("c", bodies)], YamlCache(None))
    assert [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts] == bodies
