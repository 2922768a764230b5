"""Reading YAML as kubectl does, fast, and bounded against hostile input.

kubectl converts YAML to JSON with go-yaml, which leaves ``2024-05-01`` a
string; PyYAML would make it a ``date`` and a string field would then look
mistyped. ``K8sLoader`` is PyYAML's C loader without the timestamp rule.

libyaml (the C parser) composes each document into nodes; ``Builder`` turns
the nodes into data — faster than PyYAML's constructor, which is written in
Python around generators — and enforces the limits go-yaml enforces for the
API server (gopkg.in/yaml.v2/decode.go, scannerc.go) so a hostile file fails
fast with its line instead of taking the machine down:

- **Aliases.** An alias re-uses a node; a "billion laughs" file expands a
  few hundred bytes into billions of nodes. At most ``MAX_ALIASES`` alias
  references per document, and the nodes they add at most
  ``EXPANSION_ALLOWANCE`` plus the document's own node count (go-yaml:
  "document contains excessive aliasing"). A recursive alias is refused.
- **Depth.** go-yaml stops at 10,000 levels ("exceeded max depth"); real
  manifests nest about 20. libyaml 0.2.5 has no limit, and PyYAML composes
  nodes recursively in C: past ~20,000 levels the process dies with a
  segmentation fault, not an exception. So a cheap bound on the depth is
  computed from the text first; only when it is high does an exact pass over
  the parser's events (iterative, safe) run before composing. Documents may
  nest at most ``MAX_DEPTH`` levels, which also keeps every recursive check
  downstream far from Python's recursion limit.

Each document's node tree is kept next to its data so that, only when a
document has problems, a JSON path can be mapped back to a line.

Composing and building allocate a node, its two marks and a value for every
scalar and collection (the upstream CRDs: 285,000 nodes, over a million objects),
all alive until their document is built. Python's cycle collector, triggered by
allocations, walked them again and again (with every object the process held
before): more than half the CPU of reading the upstream CRDs. None of them is part
of a reference cycle, so reading runs with the collector paused
(``collector.cycle_collection_paused``); reference counting frees them as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from trainkit.collector import cycle_collection_paused
from trainkit.validate.findings import JsonPath

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "Builder",
    "InputLimitError",
    "K8sLoader",
    "check_nesting",
    "iter_documents",
    "line_of",
    "load_all",
    "too_deep",
]

MAX_DEPTH = 256
MAX_ALIASES = 1000
EXPANSION_ALLOWANCE = 10_000
# Below this bound PyYAML's recursive composer is far from exhausting an 8 MiB C stack.
_SAFE_COMPOSE_DEPTH = 2000

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TRUE = frozenset({"yes", "true", "on"})  # YAML 1.1 booleans, as go-yaml v2 reads them


class InputLimitError(yaml.YAMLError):
    """The input exceeds a limit (aliases, depth); ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


_PLAIN_TAGS: dict[str, str] = {}  # plain scalar -> tag, for this process


class K8sLoader(yaml.CSafeLoader):
    """CSafeLoader that keeps timestamps as strings and resolves plain scalars from a cache."""

    def resolve(
        self,
        kind: Any,
        value: Any,
        implicit: Any,
        _scalar: Any = yaml.ScalarNode,
        _sequence: Any = yaml.SequenceNode,
        _known: dict[str, str] = _PLAIN_TAGS,
    ) -> Any:
        # Called by the C composer for every node: keep it short (locals, no super()).
        if kind is _scalar:
            if not implicit[0]:
                return _STR  # quoted or block scalar
            tag = _known.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
                if len(value) <= 64 and len(_known) < 65536:
                    _known[value] = tag
            return tag
        return _SEQ if kind is _sequence else _MAP  # no path resolvers: the default tags

    # Path resolvers are unused; the C composer still calls these once per node.
    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


K8sLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def may_nest_deeper(data: bytes, depth: int) -> bool:
    """False when no document in ``data`` can nest more than ``depth`` levels (text alone).

    Block collections nest only by indentation: each level starts at a column
    no smaller than its parent's, equal only for a sequence directly under a
    mapping key, and within the leading ``[ -?:]`` run of some line — so at most
    two levels per column of the longest such run. Flow collections nest by
    brackets: at most one level per non-empty ``[``/``{``, plus an empty one.

    A line starts the text (after a UTF-8 byte order mark) or follows a line break, which
    for libyaml is ``\\n``, ``\\r``, NEL, LS or PS; UTF-16 text (after its byte order mark)
    is not measured. Texts break lines with ``\\n``: one search for it (a literal first byte,
    which the regex engine finds without trying every position), the others only when
    there.
    """
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True  # UTF-16, which libyaml reads: none of the bytes below are its characters
    flow = data.count(b"[") + data.count(b"{") - data.count(b"[]") - data.count(b"{}") + 1
    block_columns = (depth - flow) // 2 - 1
    if block_columns < 1:
        return True
    run = rb"[ \t?:-]{%d}" % block_columns
    if re.match(rb"(?:\xef\xbb\xbf)?" + run, data) or re.search(rb"\n" + run, data):
        return True
    if b"\r" in data or (not data.isascii() and any(brk in data for brk in _UNICODE_BREAKS)):
        return re.search(rb"(?:\r|\xc2\x85|\xe2\x80[\xa8\xa9])" + run, data) is not None
    return False


_UNICODE_BREAKS = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
"""Line breaks libyaml knows besides ``\\n`` and ``\\r``: NEL, LS and PS (UTF-8)."""


def _check_depth_exactly(text: str | bytes, loader: Any) -> None:
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise too_deep(_line(event.start_mark))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as e:
        # libyaml 0.2.5 (PyYAML 6.0.3+ wheels) stops at its own limit while scanning ahead
        # of the events, before the depth above is reached: the same mistake, said once.
        if "maximum nesting depth" in str(e.problem):
            raise too_deep(_line(e.problem_mark)) from None
        raise


def _line(mark: Any) -> int | None:
    return int(mark.line) + 1 if mark is not None else None


def too_deep(line: int | None) -> InputLimitError:
    return InputLimitError(
        f"nested more than {MAX_DEPTH} levels deep; Kubernetes objects nest about 20 "
        "(a generated or hostile file?)",
        line,
    )


def check_nesting(text: str | bytes, loader: Any = None) -> bytes:
    """Raise ``InputLimitError`` when a document of ``text`` nests too deep to compose
    safely (cheap unless the text may nest deep); return the text as bytes."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if may_nest_deeper(raw, _SAFE_COMPOSE_DEPTH):
        _check_depth_exactly(text, loader or K8sLoader)
    return raw


def iter_documents(text: str | bytes) -> Iterator[tuple[yaml.Node, Any]]:
    """``(node, data)`` for each document; raises ``yaml.YAMLError`` (``InputLimitError``)."""
    raw = check_nesting(text)
    track = b"&" in raw and b"*" in raw  # no anchor or no alias: no alias to follow
    loader = K8sLoader(text)
    try:
        index = 0
        while True:
            # Paused while one document is composed and built, never while the caller runs.
            with cycle_collection_paused():
                if not loader.check_node():
                    break
                node = loader.get_node()
                data = None if node is None else Builder(loader, text, index, track).build(node, 1)
            if node is not None:
                yield node, data
            index += 1
    finally:
        loader.dispose()


def load_all(text: str | bytes) -> list[Any]:
    """The data of every document (no nodes kept), with the same limits."""
    with cycle_collection_paused():
        return [data for _, data in iter_documents(text)]


class Builder:
    """Data from one document's nodes: JSON-like values, aliases shared and counted.

    A node reached a second time came through an alias. Without both ``&`` and
    ``*`` in the text there can be no alias, and nodes are not tracked.
    """

    __slots__ = (
        "_active", "_aliases", "_built", "_document", "_expanded", "_loader", "_measures",
        "_text", "_track",
    )  # fmt: skip

    def __init__(
        self, loader: yaml.CSafeLoader, text: str | bytes, document: int, track: bool
    ) -> None:
        self._loader = loader
        self._text = text
        self._document = document
        self._track = track
        self._built: dict[int, Any] = {}
        self._active: set[int] = set()
        self._measures: dict[int, tuple[int, int]] = {}
        self._aliases = 0
        self._expanded = 0

    def build(self, node: yaml.Node, depth: int) -> Any:
        if isinstance(node, yaml.ScalarNode):
            if self._track:
                if id(node) in self._built:
                    return self._alias(node, depth)
                value = self._built[id(node)] = self._scalar(node, node.tag)
                return value
            return node.value if node.tag == _STR else self._scalar(node, node.tag)
        key = id(node)
        if self._track:
            if key in self._built:
                return self._alias(node, depth)
            if key in self._active:
                raise ConstructorError(
                    None, None, "found a recursive alias (an anchor that contains itself)",
                    node.start_mark,
                )  # fmt: skip
            self._active.add(key)
        if depth > MAX_DEPTH:
            raise too_deep(node.start_mark.line + 1)
        tag = node.tag
        built: Any
        if isinstance(node, yaml.MappingNode) and tag == _MAP:
            built = self._mapping(node, depth)
        elif isinstance(node, yaml.SequenceNode) and tag == _SEQ:
            built = self._sequence(node, depth)
        else:
            raise ConstructorError(
                None, None,
                f"unsupported tag {tag!r}: Kubernetes objects are JSON (maps, lists, strings, "
                "numbers, booleans, null)",
                node.start_mark,
            )  # fmt: skip
        if self._track:
            self._active.discard(key)
            self._built[key] = built
        return built

    def _sequence(self, node: yaml.SequenceNode, depth: int) -> list[Any]:
        if self._track:
            return [self.build(item, depth + 1) for item in node.value]
        scalar = yaml.ScalarNode
        return [
            item.value
            if item.__class__ is scalar and item.tag == _STR
            else self.build(item, depth + 1)
            for item in node.value
        ]

    def _mapping(self, node: yaml.MappingNode, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        merged: list[dict[Any, Any]] = []
        fast = not self._track
        scalar = yaml.ScalarNode
        for key_node, value_node in node.value:
            if fast and key_node.__class__ is scalar and key_node.tag == _STR:
                key = key_node.value
            elif key_node.tag == _MERGE:
                merged.extend(self._merge_sources(value_node, depth + 1))
                continue
            else:
                key = self.build(key_node, depth + 1)
                if isinstance(key, dict | list):
                    raise ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        "found an unhashable key", key_node.start_mark,
                    )  # fmt: skip
            if fast and value_node.__class__ is scalar and value_node.tag == _STR:
                out[key] = value_node.value
            else:
                out[key] = self.build(value_node, depth + 1)
        if not merged:
            return out
        # YAML merge keys: explicit keys win, then earlier merged maps over later ones.
        result: dict[Any, Any] = {}
        for source in reversed(merged):
            result.update(source)
        result.update(out)
        return result

    def _scalar(self, node: yaml.ScalarNode, tag: str) -> Any:
        if tag == _STR:
            return node.value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return node.value.lower() in _TRUE
        if tag == _INT:
            return self._loader.construct_yaml_int(node)
        if tag == _FLOAT:
            return self._loader.construct_yaml_float(node)
        # binary, explicit timestamps, unknown tags (an error)
        return self._loader.construct_object(node, deep=True)

    def _merge_sources(self, node: yaml.Node, depth: int) -> list[dict[Any, Any]]:
        value = self.build(node, depth)
        sources = value if isinstance(node, yaml.SequenceNode) else [value]
        if not all(isinstance(s, dict) for s in sources):
            raise ConstructorError(
                None, None, "a merge key (<<) needs a mapping or a list of mappings",
                node.start_mark,
            )  # fmt: skip
        return sources

    def _alias(self, node: yaml.Node, depth: int) -> Any:
        size, height = self._measure(node)
        self._aliases += 1
        if depth + height - 1 > MAX_DEPTH and not isinstance(node, yaml.ScalarNode):
            raise too_deep(_alias_line(self._text, self._document, self._aliases))
        self._expanded += size
        allowed = EXPANSION_ALLOWANCE + len(self._built)
        if self._aliases > MAX_ALIASES or self._expanded > allowed:
            raise InputLimitError(
                f"too many aliases: {self._aliases:,} alias references expand to "
                f"{self._expanded:,} more nodes (at most {MAX_ALIASES:,} aliases adding at most "
                f"{allowed:,} nodes); a manifest needs few or none — write the values out",
                _alias_line(self._text, self._document, self._aliases),
            )
        return self._built[id(node)]

    def _measure(self, node: yaml.Node) -> tuple[int, int]:
        """Size and height of ``node`` as a tree (aliases expanded); memoized: linear in nodes."""
        key = id(node)
        found = self._measures.get(key)
        if found is not None:
            return found
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        size, height = 1, 0 if isinstance(node, yaml.ScalarNode) else 1
        for child in children:
            child_size, child_height = self._measure(child)
            size += child_size
            height = max(height, child_height + 1)
        self._measures[key] = (size, height)
        return size, height


def _alias_line(text: str | bytes, document: int, nth: int) -> int | None:
    """Line of the ``nth`` alias of document ``document`` (only computed to report it)."""
    seen_docs = -1
    aliases = 0
    try:
        for event in yaml.parse(text, Loader=K8sLoader):
            if isinstance(event, yaml.DocumentStartEvent):
                seen_docs += 1
            elif seen_docs == document and isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases == nth:
                    return _line(event.start_mark)
    except yaml.YAMLError:
        return None
    return None


def line_of(node: yaml.Node, path: JsonPath) -> int:
    """1-based line of the deepest part of ``path`` present in the document ``node``."""
    line = node.start_mark.line
    for seg in path:
        if isinstance(node, yaml.MappingNode) and isinstance(seg, str):
            match = next((kv for kv in node.value if kv[0].value == seg), None)
            if match is None:
                break
            line = match[0].start_mark.line
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int):
            if seg >= len(node.value):
                break
            node = node.value[seg]
            line = node.start_mark.line
        else:
            break
    return line + 1
