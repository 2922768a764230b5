"""Manifest dicts → YAML text through cdk8s, with a content-hash cache.

cdk8s (jsii) runs in a node child process and every construct crosses into it,
so the cache keeps the YAML of every object ever synthesized, keyed by a hash of
its content: a re-run with no change never starts node, and one changed job
costs one construct.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

__all__ = ["YamlCache", "prewarm", "to_yaml"]

# Bump when the bytes for the same dict may change (cdk8s upgrade, layout rules).
_FORMAT = "1"


def _key(body: dict[str, Any]) -> str:
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


class YamlCache:
    """YAML text per content hash, kept in one JSON file and pruned to what was used."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp = f"{_FORMAT}/cdk8s-{version('cdk8s')}"
        self._old: dict[str, str] = {}
        self._used: dict[str, str] = {}
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict) and data.get("stamp") == self._stamp:
                entries = data.get("entries")
                self._old = entries if isinstance(entries, dict) else {}

    @property
    def empty(self) -> bool:
        return not self._old and not self._used

    def get(self, key: str) -> str | None:
        text = self._used.get(key) or self._old.get(key)
        if text is not None:
            self._used[key] = text
        return text

    def put(self, key: str, text: str) -> None:
        self._used[key] = text

    def save(self) -> None:
        """Write the entries used in this run (atomically), if they differ from the file."""
        if self.path is None or self._used == self._old:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cache-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"stamp": self._stamp, "entries": self._used}, f, ensure_ascii=False)
        os.replace(tmp, self.path)


def to_yaml(
    groups: Sequence[tuple[str, Sequence[dict[str, Any]]]], cache: YamlCache
) -> list[list[str]]:
    """YAML text of every body, grouped like the input (one cdk8s Chart per group)."""
    keys = [[_key(b) for b in bodies] for _, bodies in groups]
    missing: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = []
    for (chart, bodies), gkeys in zip(groups, keys, strict=True):
        todo = [(k, b) for k, b in zip(gkeys, bodies, strict=True) if cache.get(k) is None]
        if todo:
            missing.append((chart, todo))
    if missing:
        texts = _synth([(chart, [b for _, b in todo]) for chart, todo in missing])
        for (_, todo), group_texts in zip(missing, texts, strict=True):
            for (k, body), text in zip(todo, group_texts, strict=True):
                cache.put(k, _readable(body, text))
    return [[cache.get(k) or "" for k in gkeys] for gkeys in keys]


_warming: threading.Thread | None = None


def prewarm() -> None:
    """Start node and load cdk8s in the background (a cold run will need it).

    Node's start-up (~0.5 s) then overlaps with importing the definition files.
    """
    global _warming
    if _warming is None:
        _warming = threading.Thread(target=_import_cdk8s, name="cdk8s-prewarm", daemon=True)
        _warming.start()


def _import_cdk8s() -> None:
    _silence_node_banner()
    import cdk8s  # noqa: F401 - importing starts the jsii kernel


def _readable(body: dict[str, Any], text: str) -> str:
    """cdk8s writes a string such as ``0<TAB>0`` as a plain scalar that YAML 1.1 readers
    (PyYAML, our own validator) reject. Only tabs trigger it, so only objects holding a
    tab are read back; one that does not round-trip is written by libyaml instead."""
    if "\\t" not in json.dumps(body, ensure_ascii=False):  # JSON escapes a tab as \\t
        return text
    try:
        # The pure-Python reader is the strict one (libyaml accepts the tab).
        if yaml.load(text, Loader=yaml.SafeLoader) == body:
            return text
    except yaml.YAMLError:
        pass
    return str(
        yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=1 << 30)
    )


def _silence_node_banner() -> None:
    """jsii prints an 11-line end-of-life banner for old node majors on every start;
    it buries real errors. The variable must name the running major."""
    var = "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
    if var in os.environ:
        return
    node = os.environ.get("JSII_NODE") or shutil.which("node")
    if node is None:
        return  # jsii raises its own clear error
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return
    major = out.stdout.strip().lstrip("v").split(".")[0]
    if major.isdigit():
        os.environ[var] = major


def _synth(groups: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> list[list[str]]:
    """One cdk8s Chart per group holding one ``v1/List`` of the group's objects.

    Every construct is a round trip into node (~2 ms), so the objects travel as
    the items of a single construct and are cut apart again from cdk8s's YAML.
    """
    if _warming is not None:
        _warming.join()
    _silence_node_banner()
    import cdk8s

    app = cdk8s.App()
    for chart_id, bodies in groups:
        # No namespace on the chart: cdk8s would stamp it onto cluster-scoped kinds.
        chart = cdk8s.Chart(app, chart_id)
        items = cdk8s.ApiObject(chart, "items", api_version="v1", kind="List")
        items.add_json_patch(cdk8s.JsonPatch.add("/items", list(bodies)))
    docs = app.synth_yaml().split("\n---\n")
    if len(docs) != len(groups):
        raise RuntimeError(f"cdk8s returned {len(docs)} documents for {len(groups)} charts")
    out = [_split_items(doc) for doc in docs]
    for (chart_id, bodies), texts in zip(groups, out, strict=True):
        if len(texts) != len(bodies):
            raise RuntimeError(f"chart {chart_id}: {len(texts)} items for {len(bodies)} objects")
    return out


def _split_items(doc: str) -> list[str]:
    """Cut the items of a List document back into standalone YAML documents.

    cdk8s writes ``items:`` at column 0 and each item as ``  - key: …`` with its
    other lines indented by four; block scalars are indented further, so
    removing four columns restores each object exactly as a top-level document.
    """
    lines = doc.rstrip("\n").split("\n")
    start = lines.index("items:") + 1
    items: list[list[str]] = []
    for line in lines[start:]:
        if line.startswith("  - "):
            items.append([line[4:]])
        elif items and (line.startswith("    ") or not line.strip()):
            items[-1].append(line[4:])
        else:
            raise RuntimeError(f"unexpected line in cdk8s output: {line!r}")
    return ["\n".join(item) + "\n" for item in items]
