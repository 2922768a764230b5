"""``anyOf``/``allOf``/``oneOf``/``not`` in structural schemas.

In a structural schema these only add value constraints (typically
``required`` alternatives); types and unknown-field pruning come from the
main schema. So branches are checked in a non-strict mode and only decide
pass/fail. The one ubiquitous case, ``anyOf: [{type: integer}, {type:
string}]`` next to ``x-kubernetes-int-or-string``, is implied by that flag
and skipped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from trainkit.validate.cel import MISSING
from trainkit.validate.findings import Finding, JsonPath

__all__ = ["branch_schemas", "check_branches"]


class Checker(Protocol):
    """A compiled schema node (``schema.Node``)."""

    def check(self, value: Any, path: JsonPath, old: Any, out: list[Finding]) -> None: ...


def branch_schemas(
    schema: dict[str, Any], int_or_string: bool
) -> list[tuple[str, list[dict[str, Any]]]]:
    """The combinator sub-schemas of ``schema`` that need checking, by keyword."""
    found: list[tuple[str, list[dict[str, Any]]]] = []
    for kind in ("anyOf", "allOf", "oneOf"):
        subs = schema.get(kind)
        if isinstance(subs, list) and subs and not (kind == "anyOf" and int_or_string):
            found.append((kind, [s for s in subs if isinstance(s, dict)]))
    if isinstance(schema.get("not"), dict):
        found.append(("not", [schema["not"]]))
    return found


def check_branches(
    kind: str, nodes: Sequence[Checker], value: Any, path: JsonPath, out: list[Finding]
) -> None:
    """Apply one combinator: report when ``value`` does not satisfy it."""
    results: list[list[Finding]] = []
    for node in nodes:
        found: list[Finding] = []
        node.check(value, path, MISSING, found)
        results.append(found)
    passed = sum(1 for r in results if not r)
    if kind == "allOf":
        for found in results:
            out.extend(found)
    elif kind == "anyOf" and not passed:
        first = next((r[0].message for r in results if r), "")
        out.append(Finding(path, f"must match at least one of the allowed forms: {first}"))
    elif kind == "oneOf" and passed != 1:
        out.append(Finding(path, f"must match exactly one of the allowed forms (matches {passed})"))
    elif kind == "not" and passed:
        out.append(Finding(path, "matches a form that is not allowed"))
