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
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

__all__ = ["YamlCache", "prewarm", "reads_as_non_string", "to_yaml"]

# Bump when the bytes for the same dict may change (cdk8s upgrade, layout rules).
_FORMAT = "2"


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
    """cdk8s's text if every reader gets ``body`` back from it, else libyaml's.

    cdk8s (the ``yaml`` npm package with its YAML 1.1 schema) leaves plain some strings
    that other readers resolve (``=``, ``<<``, ``0o755``, ``0X1F``, ``-_1``,
    ``2024-1-1 1:2:3,5``), and writes tabs, DEL, C1 controls, NEL, LS and PS raw, which
    PyYAML rejects or reads as line breaks. Only objects holding such a string are read
    back (about 1 ms each, on a cache miss only); the others keep cdk8s's text unread.
    """
    risky = [s for s in _strings(body) if _RAW.search(s) or reads_as_non_string(s)]
    if not risky:
        return text
    # The pure-Python reader is the strict one about tabs (libyaml accepts them).
    loader_cls = yaml.SafeLoader if any("\t" in s for s in risky) else yaml.CSafeLoader
    try:
        loader = loader_cls(text)
        try:
            node = loader.get_single_node()
            if node and _quoted(node, body) and loader.construct_document(node) == body:
                return text
        finally:
            loader.dispose()
    except yaml.YAMLError:
        pass
    # Deterministic: same dict, same bytes; key order kept; no folding of long lines.
    return str(yaml.dump(body, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 30))


def reads_as_non_string(plain: str) -> bool:
    """Would some reader of our manifests resolve ``plain``, written unquoted, to a non-string?

    The union of the readers between generated/ and the API server:
    - PyYAML, YAML 1.1 (``trainkit check``): its implicit resolvers, which also take
      ``<<`` (merge) and ``=`` (value, which it then cannot construct).
    - go-yaml v2 (sigs.k8s.io/yaml: kubectl, Argo CD) and v3 (kyaml: kustomize), per
      resolve.go in go-yaml/yaml@v2 and @v3: y/Y/n/N, Go's number syntax, Go timestamps.
    - YAML 1.2 core (kyaml, ruamel.yaml): 0o17, 1e3, … are all within go-yaml v3's
      forms, which decode the 1.2 spellings and keep the 1.1 ones.
    - ruamel.yaml in 1.2 mode also takes a sign or dot followed only by ``_`` for a number.
    A superset is harmless: quoting a string never changes what any reader makes of it.
    """
    if any(rx.match(plain) for _, rx in _PYYAML.get(plain[:1], ())) or plain in _GO_WORDS:
        return True
    if plain[:1] in _NUMBER_START:
        digits = plain.replace("_", "")
        if _GO_NUMBER.fullmatch(digits) or ("_" in plain and digits in _BARE):
            return True
    return _GO_TIMESTAMP.fullmatch(plain) is not None


# Keyed by first character ("" for the empty string), as PyYAML's resolver looks them up.
_PYYAML = yaml.SafeLoader.yaml_implicit_resolvers
# resolve.go resolveMap: v2 holds all of these, v3 only true/false/null/.inf/.nan/<<.
_GO_WORDS = frozenset(
    ["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"]
    + ["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"]
    + ["~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", "<<"]
    + [sign + inf for sign in ("", "+", "-") for inf in (".inf", ".Inf", ".INF")]
)
# resolve.go tries numbers only after a sign, digit or dot. It drops every "_", then tries
# strconv.ParseInt(s, 0, 64) (0x/0o/0b in either case, 0-led octal), ParseUint, its
# yamlStyleFloat regexp and "0b"/"0o" bodies; after a dot, strconv.ParseFloat.
_NUMBER_START = frozenset("+-.0123456789")
_GO_NUMBER = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+"
    r"|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)"
)
_BARE = frozenset({"+", "-", ".", "+.", "-."})
# resolve.go parseTimestamp: time.Parse with "2006-1-2T15:4:5.999999999Z07:00" (also with a
# lower-case "t"), "2006-1-2 15:4:5.999999999" and "2006-1-2". Go takes "," or "." before
# the fraction, and a run of spaces where the layout has one.
_GO_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]| +)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:[.,][0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})?)?"
)
# What cdk8s may write raw and a reader then rejects or reads otherwise: anything outside
# YAML's printable set (tab and CR included), NEL/LS/PS (line breaks in YAML 1.1), BOM.
_RAW = re.compile(
    r"[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# libyaml writes these raw in single quotes (as line breaks); double quotes escape them.
_BREAKS_11 = re.compile(r"[\x85\u2028\u2029\ufeff]")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _quoted(node: yaml.Node, value: Any) -> bool:
    """No string of ``value`` that some reader would resolve is plain in ``node``."""
    if isinstance(node, yaml.ScalarNode):
        return bool(node.style) or not (isinstance(value, str) and reads_as_non_string(value))
    if isinstance(node, yaml.SequenceNode) and isinstance(value, list):
        return len(node.value) == len(value) and all(map(_quoted, node.value, value))
    if isinstance(node, yaml.MappingNode) and isinstance(value, dict):
        return all(_quoted(k, k.value) and _quoted(v, value.get(k.value)) for k, v in node.value)
    return False


class _Dumper(yaml.CSafeDumper):
    """libyaml quotes only what PyYAML resolves: quote what any reader would, too."""


def _represent_str(dumper: _Dumper, data: str) -> yaml.ScalarNode:
    style = '"' if reads_as_non_string(data) or _BREAKS_11.search(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


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
