"""Shared by the validate tests: the upstream CRDs, read once per test session.

A module-level cache rather than a session fixture: a fixture imported into
several test modules is a separate fixture in each, and would be computed
once per module. The CRD set reads and writes the test run's CRD cache
(``conftest.session_cache``, shared by the xdist workers), never the
developer's: each upstream CRD file is parsed once per run, by whichever
process needs it first (the cache has its own tests).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from conftest import crds_dir, session_cache
from trainkit.collector import cycle_collection_paused
from trainkit.errors import Problem
from trainkit.validate import (
    BASELINE,
    CrdSet,
    PodAllowance,
    check_object,
    describe_object,
    load_crds,
)
from trainkit.validate.findings import format_path

__all__ = ["CrdFacts", "shared_crd_facts", "shared_crd_set", "validate_doc"]


@cache
def shared_crd_set() -> CrdSet:
    """The CRDs of ``$TRAINKIT_CRDS`` (or ../shared/crds), one CrdSet for the whole session."""
    # Schemas compile on first use, and cel-python raises the recursion limit each time it
    # creates an Environment; raise it now, so no property test sees it change mid-example.
    celpy.Environment()
    with pytest.MonkeyPatch.context() as mp:
        # Bound now: a test that changes the cache directory later keeps its own clean.
        mp.setenv("TRAINKIT_CACHE_DIR", str(session_cache()))
        mp.delenv("CI", raising=False)
        return load_crds(crds_dir())


@dataclass(frozen=True)
class CrdFacts:
    """What one CRD document says of itself, read by the tests, not by trainkit's loader."""

    group: object
    kind: object
    versions: tuple[tuple[object, object], ...]
    """(name, served) of each ``spec.versions`` entry; served is True when not given."""


@cache
def shared_crd_facts() -> dict[Path, tuple[bytes, tuple[CrdFacts, ...]]]:
    """Each shared CRD file: its bytes and the CRD documents it holds, read once per test run.

    The oracle the validate and pin tests hold trainkit's CRD loading to: libyaml composes
    each document (C), and only ``spec.group``, ``spec.names.kind`` and each version's
    ``name``/``served`` are constructed — the schemas (nearly all of the 13 MB) never become
    Python data. Independent of ``trainkit.validate.documents`` (no Builder, no pruning).
    """
    files = {path: path.read_bytes() for path in sorted(crds_dir().rglob("*.y*ml"))}
    # Once per test run, not once per xdist worker (both run a test that reads them, 0.7
    # CPU-s each): the first stores them in the run's directory, keyed by each file's
    # SHA-256, and the other reads them back.
    with open(session_cache().parent / "crd-facts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        stored = session_cache().parent / "crd-facts.json"
        digests = {str(path): hashlib.sha256(data).hexdigest() for path, data in files.items()}
        if stored.is_file():
            record = json.loads(stored.read_bytes())
            if record["digests"] == digests:
                return {
                    path: (data, _read(record["facts"][str(path)])) for path, data in files.items()
                }
        found = {path: (data, _parse(data)) for path, data in files.items()}
        facts = {str(path): [asdict(d) for d in docs] for path, (_, docs) in found.items()}
        try:
            text = json.dumps({"digests": digests, "facts": facts})
        except (TypeError, ValueError):  # a value JSON cannot hold: each worker parses
            return found
        if all(_read(e) == found[Path(k)][1] for k, e in json.loads(text)["facts"].items()):
            stored.with_suffix(".tmp").write_text(text)
            stored.with_suffix(".tmp").replace(stored)
        return found


def _parse(data: bytes) -> tuple[CrdFacts, ...]:
    # A million short-lived nodes and marks, no reference cycle: with the cycle collector on,
    # it walked them (and the whole test process) again and again, three quarters of the CPU.
    with cycle_collection_paused():
        docs = (_facts(n) for n in yaml.compose_all(data, Loader=yaml.CSafeLoader))
        return tuple(d for d in docs if d is not None)


def _read(entries: list[dict[str, Any]]) -> tuple[CrdFacts, ...]:
    """Facts as ``_parse`` gave them, from their JSON (stored only where it reads back the same)."""
    return tuple(
        CrdFacts(e["group"], e["kind"], tuple(tuple(v) for v in e["versions"])) for e in entries
    )


_CONSTRUCT = yaml.constructor.SafeConstructor()


def _field(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    return None


def _data(node: yaml.Node | None) -> object:
    return None if node is None else _CONSTRUCT.construct_document(node)


def _facts(doc: yaml.Node | None) -> CrdFacts | None:
    if _data(_field(doc, "kind")) != "CustomResourceDefinition":
        return None
    spec = _field(doc, "spec")
    versions = _field(spec, "versions")
    assert isinstance(versions, yaml.SequenceNode)
    return CrdFacts(
        group=_data(_field(spec, "group")),
        kind=_data(_field(_field(spec, "names"), "kind")),
        versions=tuple(
            (_data(_field(v, "name")), _data(_field(v, "served")) if _field(v, "served") else True)
            for v in versions.value
        ),
    )


def validate_doc(
    crds: CrdSet | None,
    doc: dict[str, Any],
    file: str,
    old: dict[str, Any] | None = None,
    allowance: PodAllowance = BASELINE,
) -> list[Problem]:
    """``check_object`` of one document, as the Problems ``validate`` would print (no lines)."""
    obj = describe_object(doc)
    return [
        Problem(file=file, message=f.message, obj=obj, field=format_path(f.path))
        for f in check_object(doc, allowance, crds, old)
    ]
