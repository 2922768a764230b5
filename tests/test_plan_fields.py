"""Field summaries of `trainkit plan`: every difference is named, and only differences."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from trainkit.plan.facts import FieldChange
from trainkit.plan.summaries import object_fields, shown
from trainkit.plan.trees import Obj

# Values as YAML gives them, without booleans (True == 1 in Python, not in YAML) and nulls
# (a null field is an absent one, as the API server reads it: see the test below).
scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "16", "32Gi"]))
keys = st.sampled_from(["name", "image", "capability", "weight", "x", "nvidia.com/gpu"])
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.dictionaries(keys, inner, max_size=3),
        st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["a", "b"])}, optional={"v": inner}),
            max_size=3,
        ),
        st.lists(inner, max_size=2),
    ),
    max_leaves=12,
)


def queue(spec: Any) -> Obj:
    return Obj(
        "clusters/c/queues/q.yaml", {"kind": "Queue", "metadata": {"name": "q"}, "spec": spec}
    )


@given(values, values)
def test_fields_are_empty_exactly_when_the_specs_are_equal(a: Any, b: Any) -> None:
    changes = object_fields(queue(a), queue(b))
    assert (changes == []) == (a == b)
    assert object_fields(queue(a), queue(a)) == []


def test_a_null_field_is_an_absent_one() -> None:
    assert object_fields(queue({"weight": None}), queue({})) == []
    assert object_fields(queue({"weight": None}), queue({"weight": 2})) == [
        FieldChange(field="weight", before=None, after="2")
    ]


def test_leaves_name_list_items_by_name_and_drop_wrappers() -> None:
    old = {
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "spec": {
                                "template": {
                                    "spec": {"containers": [{"name": "node", "image": "a:1"}]}
                                }
                            }
                        },
                    }
                ]
            }
        }
    }
    new = {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
        "template": {"spec": {"containers": [{"name": "node", "image": "a:2"}]}}}}}]}}}  # fmt: skip
    runtime = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "r"}}
    changes = object_fields(Obj("p", {**runtime, "spec": old}), Obj("p", {**runtime, "spec": new}))
    assert changes == [FieldChange(field="node.image", before="a:1", after="a:2")]


def test_items_in_another_order_are_a_change() -> None:
    a = {"env": [{"name": "A"}, {"name": "B"}]}
    b = {"env": [{"name": "B"}, {"name": "A"}]}
    assert [c.field for c in object_fields(queue(a), queue(b))] == ["env"]


def test_shown_gives_short_values_and_names_long_ones() -> None:
    assert shown(FieldChange(field="nodes", before="2", after="4")) == "nodes 2→4"
    assert shown(FieldChange(field="image", before="r/a:" + "1" * 30, after="r/a:2")) == "image"
    assert shown(FieldChange(field="args")) == "args"
