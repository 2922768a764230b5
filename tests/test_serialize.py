"""cdk8s serialization: every object comes back exactly, whatever the script text holds."""

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainkit.serialize import YamlCache, to_yaml

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
    from trainkit import serialize

    cache = YamlCache(tmp_path / "c.json")
    groups = [("a", [configmap("x", "1\n")]), ("b", [configmap("y", "2\n"), configmap("z", "3\n")])]
    first = to_yaml(groups, cache)
    cache.save()
    assert [[yaml.safe_load(t)["metadata"]["name"] for t in g] for g in first] == [
        ["x"],
        ["y", "z"],
    ]
    monkeypatch.setattr(serialize, "_synth", lambda groups: (_ for _ in ()).throw(AssertionError))
    assert to_yaml(groups, YamlCache(tmp_path / "c.json")) == first
