"""Manifest dicts → YAML text through cdk8s, with a content-hash cache.

cdk8s writes the YAML (``cdk8s_node``: its App, Chart and ApiObject in node); this
module decides which objects need it and checks what comes back. Some strings cdk8s
leaves plain are read as something else by another reader of our manifests
(``reads_as_non_string``): an object holding one is written by libyaml instead.

The cache keeps the checked YAML of every object of the last run, keyed by the
SHA-256 of the object's JSON and stamped with cdk8s's version and this module's
format, so an unchanged object never goes to node again and one changed job costs
its own objects only. It lives in the repository's cache directory (see
``cache_dir`` for the rules every cache follows), and a cached text is checked like
cdk8s's own before it is used; one that fails the check is a miss.

Where that cache is used, a process also remembers the text of every object it wrote or
checked (``_CHECKED``): the next synth in the same process (tests, a synth that runs its
pipeline again, ``plan``) takes it without node and without checking it again, since it
holds nothing but what this process's own checks passed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

from .cache_dir import read_json, write_json
from .cdk8s_node import Cdk8s, processes_for

__all__ = ["YamlCache", "prewarm", "reads_as_non_string", "to_yaml"]

# Bump when the bytes for the same dict may change (layout rules, the checks below).
_FORMAT = "4"


class YamlCache:
    """YAML text per object hash, kept in one JSON file and pruned to what a run used.

    Inputs of an entry: the object's JSON (its key), cdk8s's version and ``_FORMAT``
    (the file's stamp: another stamp and the whole file is a miss).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp = f"{_FORMAT}/cdk8s-{version('cdk8s')}"
        self._old: dict[str, str] = {}
        self._used: dict[str, str] = {}
        data = read_json(path) if path is not None else None
        if data is not None and data.get("stamp") == self._stamp:
            entries = data.get("entries")
            if isinstance(entries, dict):
                self._old = {k: v for k, v in entries.items() if isinstance(v, str)}

    @property
    def empty(self) -> bool:
        return not self._old and not self._used

    @property
    def stored(self) -> bool:
        """Whether this cache has a file (caches are on): only then are ``_CHECKED`` texts used."""
        return self.path is not None

    def lookup(self, key: str) -> str | None:
        """The text stored under ``key``, unchecked (``to_yaml`` checks it)."""
        return self._used.get(key) or self._old.get(key)

    def keep(self, key: str, text: str) -> None:
        """Record the (checked) text of an object used in this run."""
        self._used[key] = text

    def save(self) -> None:
        """Write the entries used in this run (atomically), if they differ from the file."""
        if self.path is None or self._used == self._old:
            return
        write_json(self.path, {"stamp": self._stamp, "entries": self._used})


_cdk8s = Cdk8s()

_CHECKED: dict[str, str] = {}
"""The checked text of each object this process wrote or read back from the cache, by
``_key``: the same key always gives the same text (cdk8s is deterministic, and so is the
libyaml fallback), and only texts that passed ``_readable``'s check are here."""
_CHECKED_LIMIT = 64 << 20
"""Characters ``_CHECKED`` may hold; past it, it starts again empty (1,000 jobs: 9 M)."""
_checked_size = [0]


def _remember(key: str, text: str) -> None:
    if key in _CHECKED:
        return
    if _checked_size[0] + len(text) > _CHECKED_LIMIT:
        _CHECKED.clear()
        _checked_size[0] = 0
    _CHECKED[key] = text
    _checked_size[0] += len(text)


def prewarm(objects: int, *, background: bool = False) -> None:
    """Unpack cdk8s and start node now, enough of it for about ``objects`` objects (a run
    with cache misses will need it).

    Node's start-up then overlaps with running the definition files; with ``background``
    it also overlaps with the caller's own work. A failure there (no node) is raised by
    the first ``to_yaml`` that needs node, which starts it again.
    """
    if not background:
        _cdk8s.start(processes_for(objects))
        return

    def start() -> None:
        with contextlib.suppress(Exception):
            _cdk8s.start(processes_for(objects))

    threading.Thread(target=start, name="trainkit-node-start", daemon=True).start()


def to_yaml(
    groups: Sequence[tuple[str, Sequence[dict[str, Any]]]], cache: YamlCache
) -> list[list[str]]:
    """YAML text of every body, grouped like the input."""
    out: list[list[str]] = []
    missing: list[tuple[int, int, str, str]] = []  # group, index, JSON, key
    remember = cache.stored
    for g, (_, bodies) in enumerate(groups):
        row: list[str] = []
        for i, body in enumerate(bodies):
            raw = _json(body)
            key = _digest(raw)
            text = _CHECKED.get(key) if remember else None
            if text is not None:
                cache.keep(key, text)
                row.append(text)
                continue
            text = cache.lookup(key)
            if text is not None and (_safe(body, text, raw) or _read_back(body, text)):
                cache.keep(key, text)
                if remember:
                    _remember(key, text)
                row.append(text)
            else:
                missing.append((g, i, raw, key))
                row.append("")
        out.append(row)
    if missing:
        texts = _synth([raw for _, _, raw, _ in missing])
        for (g, i, raw, key), text in zip(missing, texts, strict=True):
            body = groups[g][1][i]
            text = _readable(body, text, raw)
            cache.keep(key, text)
            if remember:
                _remember(key, text)
            out[g][i] = text
    return out


def _json(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def _key(body: dict[str, Any]) -> str:
    """The cache key of ``body``."""
    return _digest(_json(body))


def _synth(objects: Sequence[str]) -> list[str]:
    """cdk8s's text of each object (JSON), as a standalone YAML document."""
    texts = [item for doc in _cdk8s.synth(objects) for item in _split_items(doc)]
    if len(texts) != len(objects):
        raise RuntimeError(f"cdk8s returned {len(texts)} objects for {len(objects)}")
    return texts


def _readable(body: dict[str, Any], text: str, raw: str) -> str:
    """cdk8s's text if every reader gets ``body`` back from it, else libyaml's.

    cdk8s (the ``yaml`` npm package with its YAML 1.1 schema) leaves plain some strings
    that other readers resolve (``=``, ``<<``, ``0o755``, ``0X1F``, ``-_1``,
    ``2024-1-1 1:2:3,5``), writes tabs, DEL, C1 controls, NEL, LS and PS raw, which
    PyYAML rejects or reads as line breaks, and writes a string of spaces and line breaks
    only as a block scalar whose spaces every reader drops (``_blank_block``). ``_safe``
    proves most objects fine from the text alone; the others are read back (about 1 ms
    each).
    """
    if _safe(body, text, raw) or _read_back(body, text):
        return text
    # Deterministic: same dict, same bytes; key order kept; no folding of long lines.
    return str(yaml.dump(body, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 30))


def _read_back(body: dict[str, Any], text: str) -> bool:
    """Every reader gets ``body`` back from ``text``: read it, compare, check the quoting."""
    # With tabs, both readers: the pure-Python one refuses a plain `0<TAB>0` that libyaml
    # accepts, libyaml a block scalar's line holding only a tab that the other accepts.
    loaders = (yaml.SafeLoader, yaml.CSafeLoader) if "\t" in text else (yaml.CSafeLoader,)
    return all(_reads_back(loader_cls, body, text) for loader_cls in loaders)


def _reads_back(
    loader_cls: type[yaml.SafeLoader] | type[yaml.CSafeLoader], body: dict[str, Any], text: str
) -> bool:
    try:
        loader = loader_cls(text)
        try:
            node = loader.get_single_node()
            return bool(node and _quoted(node, body) and loader.construct_document(node) == body)
        finally:
            loader.dispose()
    except yaml.YAMLError:
        return False


def _safe(body: dict[str, Any], text: str, raw: str) -> bool:
    """Whether ``text``, the YAML of ``body`` (whose JSON is ``raw``), surely quotes every
    string that some reader would resolve. False means "read it back", not "unsafe".

    A plain scalar is written verbatim, between indentation, ``- ``, ``: `` or a flow
    indicator and the end of its line or a ``:``. So a resolvable string ``s`` that is
    plain somewhere shows up as such an occurrence of ``s``, one more than the integers
    and booleans whose text is ``s`` account for. Block scalars and quoted strings can
    only add occurrences (a false alarm, never a miss).
    """
    if not raw.isascii() and _RAW.search(raw):
        return False  # cdk8s may write these raw
    escaped = "\\" in raw
    if escaped and _ESCAPED_RAW.search(raw):
        return False
    if escaped and " \\n" in raw and _SPACE_LINE_FIRST.search(raw):
        return False  # cdk8s may write it as a block scalar every reader takes otherwise
    if "\x7f" in raw:
        return False
    counts: Counter[str] | None = None
    for s in _candidates(raw, escaped):
        if not _resolvable(s):
            continue
        if not s:
            return False  # an empty plain scalar leaves no text to find
        seen = _plain_occurrences(text, s)
        if seen:
            if counts is None:
                counts = _scalars(raw)
                if counts is None:
                    return False
            if seen > counts[s]:
                return False
    return True


def _candidates(raw: str, escaped: bool) -> set[str]:
    """The strings of the JSON ``raw`` (keys too) that ``reads_as_non_string`` may accept,
    as told by their first character."""
    if not escaped:
        # Without backslashes every quote delimits a string, so no match starts inside one.
        return set(_CANDIDATE.findall(raw))
    return {
        json.loads(f'"{s}"') if "\\" in s else s for s in _STRING.findall(raw) if s[:1] in _FIRST
    }


def _scalars(raw: str) -> Counter[str] | None:
    """How often each integer and boolean occurs in the JSON ``raw``, by its YAML text; None
    when it holds floats or integers JavaScript prints otherwise (beyond 2**53)."""
    counts: Counter[str] = Counter()
    for token in _TOKEN.findall(raw):
        if not token or token == "null":  # a string; cdk8s drops nulls
            continue
        exact = token in ("true", "false") or (
            _INTEGER.fullmatch(token) is not None and abs(int(token)) < _SAFE_INT
        )
        if not exact:
            return None
        counts[token] += 1
    return counts


def _plain_occurrences(text: str, s: str) -> int:
    """How often ``s`` stands in ``text`` where a plain scalar could."""
    n = 0
    end = len(text)
    i = text.find(s)
    while i >= 0:
        j = i + len(s)
        before = text[i - 1] if i else "\n"
        after = text[j] if j < end else "\n"
        if before in _BEFORE_PLAIN and after in _AFTER_PLAIN:
            n += 1
        i = text.find(s, i + 1)
    return n


_resolvable_memo: dict[str, bool] = {}


def _resolvable(s: str) -> bool:
    known = _resolvable_memo.get(s)
    if known is None:
        if len(_resolvable_memo) > 1 << 16:
            _resolvable_memo.clear()
        known = _resolvable_memo[s] = reads_as_non_string(s)
    return known


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


# Every first character of a string ``reads_as_non_string`` may accept ("" for the empty
# string): strings starting otherwise are never looked at again.
_FIRST = frozenset(_PYYAML) | frozenset(w[:1] for w in _GO_WORDS) | _NUMBER_START | frozenset({""})
# JavaScript numbers hold integers exactly below 2**53; larger ones may print otherwise.
_SAFE_INT = 1 << 53
_CANDIDATE = re.compile(
    '"((?:[' + "".join(re.escape(c) for c in sorted(_FIRST) if c) + '])[^"]*|)"'
)
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|([^",:\[\]{}\s]+)')
_INTEGER = re.compile(r"-?[0-9]+")
_BEFORE_PLAIN = frozenset(" \t\n[{,")
_AFTER_PLAIN = frozenset(" \t\r\n:,]}#")
# JSON's escapes of what ``_RAW`` refuses (JSON writes control characters escaped); an
# escaped backslash before a letter is no such escape.
_ESCAPED_RAW = re.compile(r"(?<!\\)(?:\\\\)*\\(?:[tbfr]|u00[01][0-9a-fA-F])")
# A JSON string whose first line that is not empty holds only spaces and is followed by a
# line break: cdk8s may write it as a block scalar its readers take otherwise (see
# ``_blank_block``, which the read-back applies). Wider than that class: ' \nx' is
# written with an indentation indicator and read back fine; a false alarm costs a read-back.
_SPACE_LINE_FIRST = re.compile(r'"(?:\\n)* +\\n')


def _blank_block(node: yaml.ScalarNode, value: str) -> bool:
    """Whether ``node`` is a block scalar (``|``, ``>``) holding ``value``, a string of
    spaces and line breaks only with at least one space on a line.

    cdk8s (the ``yaml`` npm package 2.9.1, ``blockString`` in
    ``dist/stringify/stringifyString.js``) cuts such a value whole as its trailing
    whitespace, so it finds no leading space and writes no indentation indicator (``|+``,
    then each line indented as usual). With no indicator a reader takes the content's
    indentation from its first non-empty line, and with none "the number of spaces on the
    longest line" (YAML 1.2.2, 8.1.1.1 Block Indentation Indicator): every line is then
    empty and its spaces are gone. libyaml (``yaml_parser_scan_block_scalar_breaks``, its
    ``max_indent``), PyYAML (``scan_block_scalar_indentation``) and go-yaml v2/v3 (scannerc.go,
    a port of libyaml's scanner) all read ``' \\n'`` written so as ``"\\n"``.
    """
    return node.style in ("|", ">") and " " in value and not value.strip(" \n")


def _quoted(node: yaml.Node, value: Any) -> bool:
    """No string of ``value`` that some reader would resolve is plain in ``node``, and none
    is a block scalar that readers take for another string (``_blank_block``)."""
    if isinstance(node, yaml.ScalarNode):
        if not isinstance(value, str):
            return True
        if node.style:
            return not _blank_block(node, value)
        return not reads_as_non_string(value)
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


def _split_items(doc: str) -> list[str]:
    """Cut the items of a List document back into standalone YAML documents.

    cdk8s writes ``items:`` at column 0 and each item as ``  - key: …`` with its
    other lines indented by four; block scalars are indented further, so
    removing four columns restores each object exactly as a top-level document. Only
    the document's own final line break is cut: the empty lines before it end a ``|+``
    block scalar of the last item.
    """
    lines = doc.removesuffix("\n").split("\n")
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
