"""CEL ``x-kubernetes-validations`` rules, evaluated with cel-python.

JSON-schema checks cannot see these rules (reference §5 item 16), yet the API
server rejects a manifest that breaks one. cel-python implements standard CEL
but none of the Kubernetes extension libraries (``quantity()``, ``isURL``,
``format.*``, ``ip()``, optional types ...). Rather than guess, a rule that
calls a function cel-python lacks is recorded once in ``unsupported`` and
skipped; a few string/list helpers that are easy to get right are added.

Transition rules (those that mention ``oldSelf``) run only when an old object
is given and the value exists at the same place in it — the Kubernetes
semantics for updates; on create they never run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from trainkit.validate.findings import Finding, JsonPath

__all__ = ["MISSING", "Rule", "RuleBook", "SchemaLike", "check_rules"]

MISSING: Any = object()
"""Marker for "no old value here" (distinct from an explicit null)."""

_MACROS = frozenset({"has", "dyn", "map", "filter", "all", "exists", "exists_one"})
_FIELD_PATH_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\['([^']*)'\]")


class SchemaLike(Protocol):
    """What CEL conversion needs from a compiled schema node (defaults, children)."""

    defaults: dict[str, Any]
    is_root: bool

    def child(self, key: str) -> SchemaLike | None: ...
    def item(self) -> SchemaLike | None: ...


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of a schema node; its program is compiled the first time it must run."""

    text: str
    message: str
    field_path: JsonPath
    uses_old: bool
    where: str
    book: RuleBook


def check_rules(
    rules: list[Rule], value: Any, node: SchemaLike, old: Any, path: JsonPath, out: list[Finding]
) -> None:
    """Evaluate the rules of one schema node against ``value`` (converted to CEL once).

    Transition rules run only when ``old`` is not ``MISSING``.
    """
    runnable = [r for r in rules if not (r.uses_old and old is MISSING)]
    if not runnable:
        return  # on create, transition rules never run: no need to load cel-python at all
    from celpy import celtypes
    from celpy.evaluation import CELEvalError

    cel_self = cel_old = None
    for rule in runnable:
        program = rule.book.program(rule)
        if program is None:
            continue
        if cel_self is None:
            cel_self = to_cel(value, node)
        activation = {"self": cel_self}
        if rule.uses_old:
            if cel_old is None:
                cel_old = to_cel(old, node)
            activation["oldSelf"] = cel_old
        try:
            result = program.evaluate(activation)
        except CELEvalError as err:
            reason = str(err.args[0] if err.args else err).split(" (in activation")[0]
            out.append(Finding(path, f"{rule.message} (rule `{rule.text}` failed: {reason})"))
            continue
        if not (isinstance(result, celtypes.BoolType) and bool(result)):
            out.append(Finding((*path, *rule.field_path), rule.message))


def to_cel(value: Any, node: SchemaLike | None) -> Any:
    """Python value -> CEL value, with schema defaults filled in as the API server would."""
    from celpy import celtypes
    from celpy.adapter import json_to_cel

    if isinstance(value, dict):
        items: dict[Any, Any] = {}
        for key, sub in value.items():
            if node is not None and node.is_root and key == "metadata" and isinstance(sub, dict):
                # Rules on the root see only name and generateName of metadata.
                sub = {k: v for k, v in sub.items() if k in ("name", "generateName")}
                items[celtypes.StringType(key)] = json_to_cel(sub)
                continue
            items[celtypes.StringType(key)] = to_cel(sub, node.child(key) if node else None)
        if node is not None:
            for key, default in node.defaults.items():
                if key not in value:
                    items[celtypes.StringType(key)] = to_cel(default, node.child(key))
        return celtypes.MapType(items)
    if isinstance(value, list):
        item = node.item() if node is not None else None
        return celtypes.ListType([to_cel(v, item) for v in value])
    return json_to_cel(value)


class RuleBook:
    """Compiles the rules of one CRD version; limitations go to the shared ``unsupported`` list.

    Programs are cached by rule text for the whole process (``self == oldSelf``
    appears dozens of times), so each distinct rule is parsed once.
    """

    def __init__(self, label: str, unsupported: list[str]) -> None:
        self.label = label
        self.unsupported = unsupported

    def compile(self, rules: list[dict[str, Any]], where: str) -> list[Rule]:
        """The ``x-kubernetes-validations`` entries of the schema node at ``where``.

        Parsing CEL needs cel-python's grammar, which takes a noticeable fraction
        of a second to build: programs are made when a rule first has to run.
        """
        return [
            Rule(
                text=str(entry.get("rule", "")),
                message=str(entry.get("message") or f"failed rule: {entry.get('rule', '')}"),
                field_path=_parse_field_path(entry.get("fieldPath")),
                uses_old=bool(re.search(r"\boldSelf\b", str(entry.get("rule", "")))),
                where=where,
                book=self,
            )
            for entry in rules
        ]

    def program(self, rule: Rule) -> Any:
        """The compiled program of ``rule``, or None (recorded in ``unsupported``) if it has none."""
        program, why = _program(rule.text)
        if program is None:
            note = f"{self.label} {rule.where or '(root)'}: rule `{rule.text}` not checked: {why}"
            if note not in self.unsupported:
                self.unsupported.append(note)
        return program


@cache
def _environment() -> Any:
    import celpy

    from .cel_parser import install

    install()  # cel-python's parser from stored tables, not computed again (cel_parser)
    return celpy.Environment()


@cache
def _program(text: str) -> tuple[Any, str]:
    """``(runner, "")`` or ``(None, why cel-python cannot evaluate it)``."""
    try:
        from celpy.celparser import CELParseError
    except ImportError:  # pragma: no cover - cel-python is a declared dependency
        return None, "cel-python is not installed"
    env = _environment()
    try:
        ast = env.compile(text)
    except CELParseError:
        return None, "cel-python cannot parse it"
    missing = sorted(_called_names(ast) - _MACROS - _known_functions())
    if missing:
        return None, f"uses {', '.join(f'{m}()' for m in missing)}, which cel-python lacks"
    return env.program(ast, functions=extra_functions()), ""


def _parse_field_path(raw: object) -> JsonPath:
    """``.spec.foo['bar']`` -> ``("spec", "foo", "bar")``; unknown syntax -> ``()``."""
    if not isinstance(raw, str) or not raw:
        return ()
    matches = list(_FIELD_PATH_PART.finditer(raw))
    if "".join(m[0] for m in matches) != raw:
        return ()
    return tuple(m[1] if m[1] is not None else m[2] for m in matches)


def _called_names(ast: Any) -> set[str]:
    """Every function and method name a parsed rule calls."""
    names: set[str] = set()
    for sub in ast.iter_subtrees():
        if sub.data in ("member_dot_arg",):
            names.add(str(sub.children[1]))
        elif sub.data in ("ident_arg", "dot_ident_arg"):
            names.add(str(sub.children[0]))
    return names


def _known_functions() -> set[str]:
    from celpy.evaluation import base_functions

    return set(base_functions) | set(extra_functions())


@cache
def extra_functions() -> dict[str, Callable[..., Any]]:
    """Kubernetes CEL string/list extensions that are one-liners in Python."""
    from celpy import celtypes

    def index_of(target: Any, needle: Any) -> Any:
        if isinstance(target, str):
            return celtypes.IntType(target.find(needle))
        return celtypes.IntType(list(target).index(needle) if needle in target else -1)

    return {
        "lowerAscii": lambda s: celtypes.StringType(
            s.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"))
        ),
        "upperAscii": lambda s: celtypes.StringType(
            s.translate(str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        ),
        "trim": lambda s: celtypes.StringType(s.strip()),
        "join": lambda items, sep="": celtypes.StringType(str(sep).join(str(i) for i in items)),
        "indexOf": index_of,
        "isSorted": lambda items: celtypes.BoolType(list(items) == sorted(items)),
    }
