"""One CRD file: its served versions, from the YAML or from the cache.

Only what validation needs is kept of a CRD (group, kind, scope, each served
version's schema) and schemas lose their ``description``s — most of a CRD's
bytes. Fresh documents and cached ones go through the same ``served_versions``,
so a cache entry is trusted no more than the YAML it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainkit.collector import cycle_collection_paused
from trainkit.errors import Problem, SetupError
from trainkit.validate.documents import load_all

__all__ = ["CrdVersion", "may_define", "parse_crd_file", "served_versions"]

_SCHEMA_MAPS = ("properties", "patternProperties", "definitions")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_ONE = ("items", "additionalProperties", "additionalItems", "not")


@dataclass(frozen=True, slots=True)
class CrdVersion:
    """One served version of one CRD, as found on disk."""

    group: str
    version: str
    kind: str
    scope: str
    schema: dict[str, Any]
    source: Path


def may_define(data: bytes, group: str, kind: str) -> bool:
    """False when a CRD file's bytes cannot define ``kind`` of ``group``.

    A CRD says ``group: <group>`` and ``kind: <kind>`` (block or flow style,
    quoted or not, YAML or JSON). A file spelling them only through escapes or
    aliases is not found this way: its kind is reported as "no CRD for …",
    never validated against another schema.
    """
    return _names(data, b"group", group) and _names(data, b"kind", kind)


def _names(data: bytes, key: bytes, value: str) -> bool:
    # Find the value first (a literal: fast), then look back for the key.
    after = re.compile(rb"""%s["']?[ \t]*(?:$|[,}#\r])""" % re.escape(value.encode()), re.M)
    before = re.compile(rb"""(?:^|[\s{,"'])%s["']?[ \t]*:\s*["']?\Z""" % key)
    return any(before.search(data, max(0, m.start() - 64), m.start()) for m in after.finditer(data))


def parse_crd_file(path: Path, data: bytes) -> list[dict[str, Any]]:
    """The CRD documents of one file, pruned to what validation needs.

    A file holds CRD documents, or a ``v1 List`` of them: what ``kubectl get crd
    -o yaml`` prints (and ``-o json``, which YAML reads too).
    """
    # Pruning copies what is kept while the whole file is alive: no cycle collection either.
    with cycle_collection_paused():
        try:
            docs = load_all(data)
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            problem = Problem(file=str(path), message=f"cannot read CRD file: {err}")
            raise SetupError([problem]) from err
        found: list[dict[str, Any]] = []
        for doc in docs:
            items = (
                doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            )
            if not isinstance(items, list):
                continue
            found.extend(
                prune(item)
                for item in items
                if isinstance(item, dict) and item.get("kind") == "CustomResourceDefinition"
            )
        return found


def prune(doc: dict[str, Any]) -> dict[str, Any]:
    """A CRD document without descriptions and without what validation never reads."""
    spec = doc.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    names = spec.get("names")
    out: dict[str, Any] = {
        "group": spec.get("group"),
        "kind": names.get("kind") if isinstance(names, dict) else None,
        "scope": spec.get("scope", "Namespaced"),
    }
    validation = spec.get("validation")
    if isinstance(validation, dict):
        out["validation"] = {"openAPIV3Schema": _strip(validation.get("openAPIV3Schema"))}
    if "version" in spec:
        out["version"] = spec["version"]
    versions = spec.get("versions")
    if isinstance(versions, list):
        out["versions"] = [_prune_version(v) for v in versions if isinstance(v, dict)]
    return {"kind": "CustomResourceDefinition", "spec": out}


def _prune_version(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: entry[k] for k in ("name", "served") if k in entry}
    schema = entry.get("schema")
    if isinstance(schema, dict):
        out["schema"] = {"openAPIV3Schema": _strip(schema.get("openAPIV3Schema"))}
    return out


def _strip(schema: Any) -> Any:
    """``schema`` without ``description`` at any schema level (property names are kept)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strip(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strip(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = _strip(value)
        else:
            out[key] = value
    return out


def served_versions(doc: dict[str, Any], path: Path) -> list[CrdVersion]:
    """apiextensions v1 (per-version schema) and v1beta1 (one ``spec.validation``) CRDs."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return []
    group, kind, scope = spec.get("group"), spec.get("kind"), spec.get("scope")
    if not (isinstance(group, str) and isinstance(kind, str) and isinstance(scope, str)):
        return []
    validation = spec.get("validation")
    shared = validation.get("openAPIV3Schema") if isinstance(validation, dict) else None
    entries = spec.get("versions")
    if not isinstance(entries, list):
        entries = [{"name": spec.get("version"), "served": True}]
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("served", True):
            continue
        schema = entry.get("schema")
        schema = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
        schema = schema or shared
        name = entry.get("name")
        if isinstance(schema, dict) and isinstance(name, str):
            found.append(CrdVersion(group, name, kind, scope, schema, path))
    return found
