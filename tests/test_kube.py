"""One source per Kubernetes rule: the models and the validator refuse the same things."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from trainkit.kube.names import (
    configmap_key_problem,
    env_name_problem,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    qualified_name_problem,
)
from trainkit.kube.quantities import parse_quantity
from trainkit.kube.text import text_value_problem
from trainkit.model.fields import CpuQuantity, DNS1035Name, DNS1123Label, EnvName, ResourceName
from trainkit.validate import validate_text


class Names(BaseModel):
    label: DNS1123Label = "a"
    job: DNS1035Name = "a"
    env: EnvName = "A"
    cpu: CpuQuantity = "1"
    gpu: ResourceName = "nvidia.com/gpu"


@pytest.mark.parametrize("field", ["label", "job"])
@pytest.mark.parametrize("bad", ["x\n", "x\r", "x\x00", "\nx", "x y"])
def test_models_refuse_names_with_control_characters(field: str, bad: str) -> None:
    with pytest.raises(ValidationError, match=r"is not a valid name"):
        Names(**{field: bad})  # type: ignore[arg-type]


def test_model_messages_for_a_trailing_newline() -> None:
    with pytest.raises(ValidationError) as err:
        Names(label="resnet\n")
    assert "'resnet\\n' is not a valid name: use at most 63 lowercase letters" in str(err.value)
    with pytest.raises(ValidationError) as err:
        Names(env="PATH\n")
    assert "'PATH\\n' is not a valid environment variable name: it may hold only" in str(err.value)
    with pytest.raises(ValidationError, match="is not a Kubernetes quantity"):
        Names(cpu="4\n")
    with pytest.raises(ValidationError, match="is not an extended resource name"):
        Names(gpu="nvidia.com/gpu\n")


def manifest(
    name: str, label: str = "x", key: str = "k", env_name: str = "A", env_value: str = "v"
) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: {label}}}
  annotations: {{{key}: v}}
spec:
  containers:
    - name: c
      image: i
      env: [{{name: {env_name}, value: {env_value}}}]
"""


def test_validate_refuses_a_name_with_a_trailing_newline() -> None:
    [problem] = validate_text(manifest('"pod\\n"'), "p.yaml", None)
    assert (problem.field, problem.line) == ("metadata.name", 4)
    assert problem.message.startswith("'pod\\n' is invalid; it must be a DNS-1123 subdomain")


def test_validate_refuses_control_characters_in_labels_keys_and_env_names() -> None:
    problems = validate_text(
        manifest("p", label='"x\\n"', key='"x\\n/k"', env_name='"A\\tB"'), "p.yaml", None
    )
    assert sorted((p.field, p.message) for p in problems) == [
        (
            'metadata.annotations["x\\n/k"]',
            "invalid annotation key 'x\\n/k': the prefix before '/' must be a DNS-1123 "
            "subdomain of at most 253 characters",
        ),
        (
            "metadata.labels.app",
            "invalid label value 'x\\n': at most 63 characters of letters, digits, '-', '_' "
            "and '.', starting and ending with a letter or digit (or empty)",
        ),
        (
            "spec.containers[0].env[0].name",
            "invalid environment variable name 'A\\tB': it may hold only letters, digits, "
            "'_', '-' and '.', and may not start with a digit",
        ),
    ]


def test_env_values_may_hold_tab_newline_cr_but_not_nul() -> None:
    assert validate_text(manifest("p", env_value='"a\\tb\\nc\\rd"'), "p.yaml", None) == []
    [problem] = validate_text(manifest("p", env_value='"a\\0b"'), "p.yaml", None)
    assert problem.field == "spec.containers[0].env[0].value"
    assert problem.message == "env 'A' contains a NUL character (at offset 1); remove it"


@given(st.text(max_size=70))
def test_a_name_is_valid_only_if_its_grammar_matches_the_whole_string(text: str) -> None:
    # Appending a newline never turns an invalid name valid, and always makes a valid one invalid.
    for check in (is_dns1123_label, is_dns1123_subdomain, is_dns1035_label, is_label_value):
        assert not check(text + "\n")
    assert qualified_name_problem(text + "\n") is not None
    assert env_name_problem(text + "\n") is not None
    assert configmap_key_problem(text + "\n") is not None


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("500m", Decimal("0.5")),
        ("64Gi", Decimal(64 * 2**30)),
        ("1.5", Decimal("1.5")),
        ("+2k", Decimal(2000)),
        ("5e3", Decimal(5000)),
        (".5", Decimal("0.5")),
        (4, Decimal(4)),
        ("1\n", None),
        ("٣Gi", None),  # Arabic-Indic digit: \d would match it
        ("-1", None),
        ("1e99999999", None),  # would overflow Decimal
        (float("inf"), None),
        (True, None),
    ],
)
def test_quantity_grammar(text: object, amount: Decimal | None) -> None:
    assert parse_quantity(text) == amount


def test_chdir_names_are_refused() -> None:
    assert configmap_key_problem("..data") == "may not start with '..'"
    assert env_name_problem(".") == "may not be '.'"
    assert configmap_key_problem("train.py") is None


def test_text_value_problem() -> None:
    assert text_value_problem("a\tb\r\n") is None
    assert text_value_problem("\x00") == "contains a NUL character (at offset 0); remove it"


def test_models_refuse_nul_in_env_values() -> None:
    from trainkit import PyTorchJob, Resources
    from trainkit.errors import DefinitionError

    res = Resources(cpu=1, memory="1Gi")
    with pytest.raises(DefinitionError) as err:
        PyTorchJob(name="a", image="i:1", command=["a"], resources=res, env={"A": "x\0"})
    assert "env.A: environment variable value 'x\\x00' contains a NUL character (at offset 1)" in (
        str(err.value)
    )
    job = PyTorchJob(name="a", image="i:1", command=["a"], resources=res, env={"A": "x\ty\n"})
    assert job.env == {"A": "x\ty\n"}
