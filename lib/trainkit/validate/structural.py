"""CRD structural schemas compiled to validator nodes, with Kubernetes semantics.

Why not hand the schema to ``jsonschema``: a CRD's ``openAPIV3Schema`` is not
plain JSON Schema. Kubernetes adds ``x-kubernetes-int-or-string``,
``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-embedded-resource``,
list types and CEL, and above all *prunes* unknown fields silently where JSON
Schema would allow them — the typo we most want to catch. Translating all of
that and then mapping jsonschema's errors back to Kubernetes paths is more code
than walking the structural schema directly, and slower: a PyTorchJob schema
has ~20,000 nodes, of which a manifest touches ~150.

So each schema level becomes a ``Node`` holding only what validation needs;
child nodes are built the first time a manifest reaches them and then cached,
so every CRD version is compiled once, lazily, and validating a document costs
one pass over the document, never over the schema.
"""

from __future__ import annotations

import difflib
import importlib
import json
import re
import warnings
from functools import cache
from typing import Any

from trainkit.validate.cel import MISSING, Rule, RuleBook, check_rules
from trainkit.validate.combinators import branch_schemas, check_branches
from trainkit.validate.findings import Finding, JsonPath
from trainkit.validate.objects import check_object_meta

__all__ = ["Node"]

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_UNKNOWN = "unknown field; the API server would drop it silently"
_EMBEDDED_KEYS = ("apiVersion", "kind", "metadata")


_KIND_NAMES = {dict: "object", list: "array", bool: "boolean", int: "integer", float: "number"}


def _describe(value: Any) -> str:
    """``string "two"``, ``integer 3``, ``object`` — for type-mismatch messages."""
    kind = _KIND_NAMES.get(type(value)) or ("string" if isinstance(value, str) else "value")
    return kind if kind in ("object", "array") else f"{kind} {json.dumps(value, default=str)}"


class Node:
    """One compiled schema level. ``check`` appends Findings for ``value`` at ``path``."""

    __slots__ = (
        "_additional",
        "_additional_node",
        "_item_schema",
        "_items",
        "_props",
        "additional_any",
        "book",
        "branches",
        "children",
        "defaults",
        "embedded",
        "enum",
        "excl_max",
        "excl_min",
        "fmt",
        "int_or_string",
        "is_root",
        "list_type",
        "map_keys",
        "max_items",
        "max_len",
        "max_props",
        "maximum",
        "min_items",
        "min_len",
        "min_props",
        "minimum",
        "multiple_of",
        "number_checks",
        "pattern",
        "preserve",
        "required",
        "rules",
        "strict",
        "string_checks",
        "type",
        "type_ok",
        "where",
    )  # fmt: skip

    def __init__(
        self, schema: dict[str, Any], book: RuleBook, where: str, *, strict: bool = True
    ) -> None:
        self.book = book
        self.where = where
        self.strict = strict  # False inside anyOf/allOf/oneOf/not: constraints only
        self.is_root = where == ""
        self.type: str | None = schema.get("type")
        self.type_ok: Any = _TYPES.get(self.type) if self.type is not None else None
        self.int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
        self.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        self._props: dict[str, Any] = schema.get("properties") or {}
        self.children: dict[str, Node] = {}
        additional = schema.get("additionalProperties")
        self._additional: Any = additional if isinstance(additional, dict) else None
        self._additional_node: Node | None = None
        self.additional_any = additional is True
        self._item_schema: Any = (
            schema.get("items") if isinstance(schema.get("items"), dict) else None
        )
        self._items: Node | None = None
        self.required: list[str] = list(schema.get("required") or ())
        self.defaults = {k: s["default"] for k, s in self._props.items() if "default" in s}
        self.enum: list[Any] | None = schema.get("enum")
        self.fmt: str | None = schema.get("format")
        pattern = schema.get("pattern")
        self.pattern = _compile_pattern(pattern) if isinstance(pattern, str) else None
        self.min_len, self.max_len = schema.get("minLength"), schema.get("maxLength")
        self.min_items, self.max_items = schema.get("minItems"), schema.get("maxItems")
        self.min_props, self.max_props = schema.get("minProperties"), schema.get("maxProperties")
        self.minimum, self.maximum = schema.get("minimum"), schema.get("maximum")
        self.excl_min = bool(schema.get("exclusiveMinimum"))
        self.excl_max = bool(schema.get("exclusiveMaximum"))
        self.multiple_of = schema.get("multipleOf")
        self.list_type: str | None = schema.get("x-kubernetes-list-type")
        self.map_keys: list[str] = list(schema.get("x-kubernetes-list-map-keys") or ())
        rules = schema.get("x-kubernetes-validations")
        self.rules: list[Rule] = book.compile(rules, where) if rules else []
        self.branches: list[tuple[str, list[Node]]] = [
            (kind, [Node(sub, book, where, strict=False) for sub in subs])
            for kind, subs in branch_schemas(schema, self.int_or_string)
        ]
        # Most leaves have no constraint at all: skip their checks without a call.
        self.string_checks = (
            self.max_len is not None or self.min_len is not None or self.pattern is not None
            or self.fmt == "date-time"
        )  # fmt: skip
        self.number_checks = (
            self.fmt in _INT_RANGES or self.minimum is not None or self.maximum is not None
            or bool(self.multiple_of)
        )  # fmt: skip

    # -- children, compiled on first use -------------------------------------------------

    def child(self, key: str) -> Node | None:
        """The node for property ``key`` (or the map-value node), compiled on first use."""
        node = self.children.get(key)
        if node is not None:
            return node
        sub = self._props.get(key)
        if sub is not None:
            node = self.children[key] = Node(sub, self.book, _join(self.where, key))
            return node
        if self._additional is None:
            return None
        if self._additional_node is None:
            self._additional_node = Node(self._additional, self.book, _join(self.where, "*"))
        return self._additional_node

    def item(self) -> Node | None:
        """The node for array items, compiled on first use."""
        if self._items is None and self._item_schema is not None:
            self._items = Node(self._item_schema, self.book, self.where + "[]")
        return self._items

    # -- validation ----------------------------------------------------------------------

    def check(self, value: Any, path: JsonPath, old: Any, out: list[Finding]) -> None:
        """Validate ``value``; ``old`` is the correlated old value or ``MISSING``."""
        if value is None:
            return  # null on a non-nullable field is pruned by the API server: same as unset
        if self.int_or_string:
            if not (isinstance(value, str) or _TYPES["integer"](value)):
                hint = f'; quote it: "{value}"' if isinstance(value, float) else ""
                out.append(
                    Finding(path, f"expected integer or string, got {_describe(value)}{hint}")
                )
                return
        elif self.type_ok is not None and not self.type_ok(value):
            out.append(Finding(path, f"expected {self.type}, got {_describe(value)}"))
            return
        cls = value.__class__
        if cls is str:
            if self.string_checks:
                self._check_string(value, path, out)
        elif cls is dict:
            self._check_object(value, path, old, out)
        elif cls is list:
            self._check_array(value, path, old, out)
        elif (cls is int or cls is float) and self.number_checks:
            self._check_number(value, path, out)
        if self.enum is not None and not any(
            value == e and type(value) is type(e) for e in self.enum
        ):
            allowed = ", ".join(json.dumps(e) for e in self.enum)
            out.append(Finding(path, f"unsupported value {_describe(value)}; allowed: {allowed}"))
        for branch_kind, nodes in self.branches:
            check_branches(branch_kind, nodes, value, path, out)
        if self.rules:
            check_rules(self.rules, value, self, old, path, out)

    def _check_object(
        self, value: dict[str, Any], path: JsonPath, old: Any, out: list[Finding]
    ) -> None:
        has_old = isinstance(old, dict)
        for key, sub in value.items():
            if self.is_root and key == "metadata":
                continue  # ObjectMeta: checked by objects.check_metadata
            node = self.child(key)
            if node is not None:
                node.check(sub, (*path, key), old.get(key, MISSING) if has_old else MISSING, out)
            elif self.embedded and key in _EMBEDDED_KEYS:
                self._check_embedded_key(key, sub, path, out)
            elif not (self.preserve or self.additional_any or not self.strict or sub is None):
                out.append(Finding((*path, str(key)), _UNKNOWN + self._suggest(str(key))))
        for key in self.required:
            if value.get(key) is None and key not in self.defaults:
                out.append(Finding((*path, key), "required field is missing"))
        if self.embedded:
            for key in ("apiVersion", "kind"):
                if key not in value and key not in self._props:
                    out.append(Finding((*path, key), "required field is missing"))
        if self.min_props is not None and len(value) < self.min_props:
            out.append(Finding(path, f"must have at least {self.min_props} entries"))
        if self.max_props is not None and len(value) > self.max_props:
            out.append(Finding(path, f"must have at most {self.max_props} entries"))

    def _check_embedded_key(self, key: str, sub: Any, path: JsonPath, out: list[Finding]) -> None:
        """apiVersion/kind/metadata of an embedded object (``x-kubernetes-embedded-resource``)."""
        if key == "metadata":
            check_object_meta(sub, (*path, key), out, name_rule=None)
        elif not isinstance(sub, str) or not sub:
            out.append(Finding((*path, key), f"must be a non-empty string, got {_describe(sub)}"))

    def _suggest(self, key: str) -> str:
        close = difflib.get_close_matches(key, list(self._props), n=1, cutoff=0.75)
        return f" (did you mean {close[0]!r}?)" if close else ""

    def _check_array(self, value: list[Any], path: JsonPath, old: Any, out: list[Finding]) -> None:
        item = self.item()
        if item is not None:
            olds = self._correlate(old) if self.list_type == "map" else None
            for i, sub in enumerate(value):
                sub_old = MISSING
                if olds and isinstance(sub, dict):
                    sub_old = olds.get(self._map_key(sub), MISSING)
                item.check(sub, (*path, i), sub_old, out)
        if self.min_items is not None and len(value) < self.min_items:
            out.append(Finding(path, f"must have at least {self.min_items} items"))
        if self.max_items is not None and len(value) > self.max_items:
            out.append(Finding(path, f"must have at most {self.max_items} items"))
        if self.list_type in ("set", "map"):
            self._check_unique(value, path, out)

    def _check_unique(self, value: list[Any], path: JsonPath, out: list[Finding]) -> None:
        seen: set[Any] = set()
        for i, sub in enumerate(value):
            if self.list_type == "map":
                if not isinstance(sub, dict):
                    continue
                key: Any = self._map_key(sub)
            else:
                key = json.dumps(sub, sort_keys=True, default=str)
            if key in seen:
                what = (
                    ", ".join(
                        f"{k}={_json(v)}" for k, (_, v) in zip(self.map_keys, key, strict=True)
                    )
                    if self.list_type == "map"
                    else key
                )
                out.append(Finding((*path, i), f"duplicate entry ({what}); entries must be unique"))
            seen.add(key)

    def _map_key(self, entry: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        """List-map key of ``entry``, with item defaults (``ports``: protocol defaults to TCP).

        Each part is ``(type, value)`` so that ``"80"`` and ``80`` stay distinct; values
        that are not hashable scalars are compared as canonical JSON.
        """
        item = self.item()
        defaults = item.defaults if item is not None else {}
        parts: list[tuple[str, Any]] = []
        for k in self.map_keys:
            v = entry.get(k, defaults.get(k))
            if isinstance(v, dict | list):
                parts.append(("json", json.dumps(v, sort_keys=True, default=str)))
            else:
                parts.append((type(v).__name__, v))
        return tuple(parts)

    def _correlate(self, old: Any) -> dict[tuple[tuple[str, Any], ...], Any] | None:
        """Old list-map entries by key, so transition rules see the matching old entry."""
        if not isinstance(old, list) or not self.map_keys:
            return None
        return {self._map_key(o): o for o in old if isinstance(o, dict)}

    def _check_string(self, value: str, path: JsonPath, out: list[Finding]) -> None:
        if self.max_len is not None and len(value) > self.max_len:
            out.append(Finding(path, f"may be at most {self.max_len} characters (is {len(value)})"))
        if self.min_len is not None and len(value) < self.min_len:
            out.append(Finding(path, f"must be at least {self.min_len} characters"))
        if self.pattern is not None and not self.pattern.search(value):
            out.append(Finding(path, f"{json.dumps(value)} does not match {self.pattern.pattern}"))
        if self.fmt == "date-time" and not _DATE_TIME.match(value):
            out.append(Finding(path, f"{json.dumps(value)} is not an RFC 3339 date-time"))

    def _check_number(self, value: float, path: JsonPath, out: list[Finding]) -> None:
        low, high = _INT_RANGES.get(self.fmt or "", (None, None))
        if low is not None and high is not None and not low <= value <= high:
            out.append(Finding(path, f"{value} is out of range for {self.fmt}"))
        if self.minimum is not None and (
            value < self.minimum or (self.excl_min and value == self.minimum)
        ):
            op = ">" if self.excl_min else ">="
            out.append(Finding(path, f"must be {op} {self.minimum}, got {value}"))
        if self.maximum is not None and (
            value > self.maximum or (self.excl_max and value == self.maximum)
        ):
            op = "<" if self.excl_max else "<="
            out.append(Finding(path, f"must be {op} {self.maximum}, got {value}"))
        if self.multiple_of and value % self.multiple_of:
            out.append(Finding(path, f"must be a multiple of {self.multiple_of}"))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


@cache
def _compile_pattern(pattern: str) -> Any:
    """Go RE2 syntax: Python's ``re`` for the common subset, else ``re2`` if present, else skip."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(pattern)
    except (re.error, FutureWarning):
        try:  # google-re2, which cel-python depends on
            re2 = importlib.import_module("re2")
            return re2.compile(pattern)
        except Exception:  # not installed, or not valid RE2 either: leave it to the server
            return None
