"""kustomize output as Argo CD decodes it: the one reader of every ``kustomize build``.

Argo CD v3.5.1 runs ``kustomize build <path>`` (argo-cd ``util/kustomize/kustomize.go``,
``Build``) and decodes the output with gitops-engine's ``SplitYAML``
(``gitops-engine/pkg/utils/kube/kube.go``, in the argo-cd repository at v3.5.1):

1. apimachinery's ``YAMLOrJSONDecoder`` (``k8s.io/apimachinery@v0.36.1
   pkg/util/yaml/decoder.go``) splits the text into documents: lines are read with
   ``bufio.ReadLine`` (``\\r\\n`` and ``\\n`` end a line, nothing else does) and every
   line that starts with ``---`` ends a document; after ``---`` only spaces and a
   comment may follow, anything else fails the whole decode. A stream whose first
   non-space byte is ``{`` would be read as JSON instead.
2. Each document goes through ``sigs.k8s.io/yaml@v1.6.0`` ``Unmarshal`` (``yaml.go``):
   ``go.yaml.in/yaml/v2@v2.4.3`` (a Go port of libyaml, YAML 1.1) decodes the first
   YAML document of the chunk into ``interface{}``, ``convertToJSONableObject`` turns
   map keys into strings, and ``encoding/json`` writes JSON. An empty or ``null``
   document is skipped (``SplitYAMLToString``).
3. ``SplitYAML`` reads that JSON with ``sigs.k8s.io/yaml`` again, into an
   ``unstructured.Unstructured``: go-yaml v2 reads the JSON text (a raw NEL inside a
   string is a YAML 1.1 line break there, folded into a space; DEL, C1 controls and
   U+FFFE/U+FFFF are "control characters" it refuses), and apimachinery's JSON reader
   keeps an integer literal that fits int64 as an integer, anything else as a float
   (``sigs.k8s.io/json``, ``convertNumber``). A document that is not a map, or whose
   ``kind`` is missing (or whose ``apiVersion`` has two slashes), fails the decode.
4. ``GenerateManifests`` (``reposerver/repository/repository.go``) applies each item of
   an object whose ``items`` is a list instead of the object (``IsList``), and drops one
   whose ``items`` is null (with no ``spec`` or ``status``).

go-yaml v2's rules for plain scalars (``resolve.go``), which differ from PyYAML's:
``y``/``Y``/``yes``/``on`` (and ``n``, ``no``, ``off``, in three spellings each) are
booleans; ``~``, ``null`` and the empty scalar are null; numbers are Go's
(``strconv.ParseInt(s, 0, 64)`` after dropping every ``_``: ``0o755``, ``0755``,
``0x1F``, ``0b101`` are integers, ``08`` a float), ``1e3`` is a float (1000, then an
integer in JSON), timestamps stay strings, ``=`` is a string (PyYAML's value tag) and
``<<`` is a string except as a key, where it merges (applied in order: a later key
overrides a merged one and a merged one overrides an earlier key, unlike PyYAML).
``.nan`` and ``.inf`` cannot be written as JSON, and a null or ``uint64`` map key
cannot be converted: each fails the decode. libyaml (PyYAML's C parser) reads the
same structure as go-yaml v2, so the parse is PyYAML's and the rules above are
applied to its nodes here.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from trainkit.validate.documents import (
    MAX_DEPTH,
    Builder,
    InputLimitError,
    check_nesting,
    too_deep,
)

__all__ = [
    "ARGOCD_KUSTOMIZE",
    "ARGOCD_VERSION",
    "ArgoLoader",
    "DecodeError",
    "Decoded",
    "canonical_json",
    "decode_build",
    "decode_documents",
    "go_resolve",
    "split_documents",
]

ARGOCD_VERSION = "v3.5.1"
"""The Argo CD release trainkit's manifests and this decoding follow."""
ARGOCD_KUSTOMIZE = "v5.8.1"
"""The kustomize that release bundles (argo-cd@v3.5.1 ``hack/tool-versions.sh``,
``kustomize5_version``)."""

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BINARY = "tag:yaml.org,2002:binary"
_RESOLVABLE = frozenset({"", _STR, _BOOL, _INT, _FLOAT, _NULL, _TIMESTAMP})

# go-yaml v2 resolve.go: resolveMapList.
_RESOLVE_MAP: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), (_BOOL, True)),
    **dict.fromkeys(("on", "On", "ON"), (_BOOL, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), (_BOOL, False)),
    **dict.fromkeys(("off", "Off", "OFF"), (_BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (_NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (_FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (_FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (_FLOAT, -math.inf)),
    "<<": (_MERGE, "<<"),
}
# resolveTable: the first byte says what a plain scalar may be.
_HINT = {
    **dict.fromkeys("+-", "S"),
    **dict.fromkeys("0123456789", "D"),
    **dict.fromkeys("yYnNtTfFoO~", "M"),
    ".": ".",
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_INT64 = 1 << 63
_UINT64 = 1 << 64
# Go's unicode.IsSpace, for strings.TrimSpace after a document separator.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


class DecodeError(ValueError):
    """Argo CD cannot decode a document: its manifest generation fails."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _Uint(int):
    """An integer go-yaml v2 holds as ``uint64`` (above int64): a float in the end,
    and no map key at all."""


def _parse_uint(s: str) -> int | None:
    """``strconv.ParseUint(s, 0, 64)`` (no underscores: the caller removed them)."""
    if not s:
        return None
    if s[0] == "0" and len(s) >= 3 and s[1] in "bBoOxX":
        base = {"b": 2, "o": 8, "x": 16}[s[1].lower()]
        digits = s[2:]
    elif s[0] == "0":
        base, digits = 8, s[1:]
    else:
        base, digits = 10, s
    allowed = _DIGITS[base]
    if not all(c in allowed for c in digits):
        return None
    n = int(digits, base) if digits else 0
    return n if n < _UINT64 else None


def _parse_int(s: str, base: int = 0) -> int | None:
    """``strconv.ParseInt(s, base, 64)`` for base 0 or 2."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if base == 0:
        n = _parse_uint(body)
    else:
        n = int(body, 2) if body and all(c in "01" for c in body) else None
        n = n if n is None or n < _UINT64 else None
    if n is None:
        return None
    if s[:1] == "-":
        return -n if n <= _INT64 else None
    return n if n < _INT64 else None


def _parse_float(s: str) -> float | None:
    """``strconv.ParseFloat(s, 64)`` for the strings resolve gives it (decimal, or
    starting with ``.``); overflow is an error in Go."""
    try:
        f = float(s)
    except ValueError:
        return None
    if math.isinf(f) or math.isnan(f) or not s or s[0] not in "+-.0123456789":
        return None
    return f


def go_resolve(tag: str, value: str) -> tuple[str, Any]:
    """What go-yaml v2 makes of a scalar: ``(tag, value)`` as its ``resolve`` returns them.

    ``tag`` is the explicit tag, ``""`` for a plain scalar. Raises ``DecodeError`` when
    an explicit tag does not fit the value (``!!int abc``).
    """
    if tag not in _RESOLVABLE:
        return tag, value
    rtag, out = _resolve(tag, value)
    if tag in ("", rtag, _STR):
        return rtag, out
    if tag == _FLOAT and rtag == _INT and not isinstance(out, _Uint):
        return _FLOAT, float(out)
    raise DecodeError(f"cannot decode {_short(rtag)} `{value}` as a {_short(tag)}")


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:") else tag


def _resolve(tag: str, value: str) -> tuple[str, Any]:
    hint = _HINT.get(value[0], "") if value else "N"
    if not hint or tag == _STR:
        return _STR, value
    known = _RESOLVE_MAP.get(value)
    if known is not None:
        return known
    if hint == ".":
        f = _parse_float(value)
        if f is not None:
            return _FLOAT, f
    elif hint in "DS":
        if tag == _TIMESTAMP:
            raise DecodeError(f"an explicit !!timestamp (`{value}`) is not supported")
        # A timestamp (go-yaml v2 parseTimestamp) is a string in interface{}: none parses
        # as a number below, so it ends as the string it is.
        plain = value.replace("_", "")
        n = _parse_int(plain)
        if n is not None:
            return _INT, n
        u = _parse_uint(plain)
        if u is not None:
            return _INT, _Uint(u)
        if _YAML_STYLE_FLOAT.match(plain):
            f = _parse_float(plain)
            if f is not None:
                return _FLOAT, f
        if plain.startswith("0b"):
            n = _parse_int(plain[2:], base=2)
            if n is not None:
                return _INT, n
            body = plain[2:]
            if body and all(c in "01" for c in body) and int(body, 2) < _UINT64:
                return _INT, _Uint(int(body, 2))
        elif plain.startswith("-0b"):
            n = _parse_int("-" + plain[3:], base=2)
            if n is not None:
                return _INT, n
    return _STR, value


# --- the plain scalars' tags, resolved while libyaml composes -------------------------

_PLAIN: dict[str, str] = {}  # plain scalar -> tag, for this process


class ArgoLoader(yaml.CSafeLoader):
    """PyYAML's C parser tagging each plain scalar as go-yaml v2 resolves it."""

    def resolve(
        self,
        kind: Any,
        value: Any,
        implicit: Any,
        _scalar: Any = yaml.ScalarNode,
        _sequence: Any = yaml.SequenceNode,
        _known: dict[str, str] = _PLAIN,
    ) -> Any:
        # Called by the C composer for every node: keep it short.
        if kind is _scalar:
            if not implicit[0]:
                return _STR  # quoted or block scalar
            tag = _known.get(value)
            if tag is None:
                # A plain "<<" is a string to resolve, and a merge as a key (isMerge).
                tag = _MERGE if value == "<<" else _resolve("", value)[0]
                if len(value) <= 64 and len(_known) < 65536:
                    _known[value] = tag
            return tag
        return _SEQ if kind is _sequence else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


# --- values: go-yaml v2 into interface{}, then JSON ------------------------------------


def _json_number(value: Any) -> Any:
    """A resolved number as the JSON reader of step 3 holds it: int64 or float64."""
    if isinstance(value, _Uint):
        return float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise DecodeError(
                f"the number {_go_float_text(value)} cannot be written as JSON "
                "(json: unsupported value); quote it to make it a string"
            )
        if value.is_integer() and -_INT64 <= value < _INT64:
            return int(value)
    return value


def _go_float_text(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    return ".inf" if value > 0 else "-.inf"


def _float32_key(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 32)`` as ``convertToJSONableObject`` writes a
    float map key (``+Inf`` as ``.inf``, ``NaN`` as ``.nan``)."""
    if math.isnan(value):
        return ".nan"
    try:
        f32 = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        f32 = math.copysign(math.inf, value)
    if math.isinf(f32):
        return ".inf" if f32 > 0 else "-.inf"
    if f32 == 0:
        return "-0" if math.copysign(1.0, f32) < 0 else "0"
    for precision in range(1, 10):
        text = f"{f32:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, _, exponent = text.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(exponent)
    if exp < -4 or exp >= 6:  # %e, shortest: at least two exponent digits
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        whole = digits[: exp + 1].ljust(exp + 1, "0")
        frac = digits[exp + 1 :]
        return sign + whole + ("." + frac if frac else "")
    return sign + "0." + "0" * (-exp - 1) + digits


class _GoBuilder(Builder):
    """Data from one document's nodes with go-yaml v2's rules, as JSON holds it after."""

    __slots__ = ()

    def build(self, node: yaml.Node, depth: int) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return super().build(node, depth)
        if depth > MAX_DEPTH:
            raise too_deep(node.start_mark.line + 1)
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
        # go-yaml v2 ignores the tags of collections: a map is a map.
        built: Any
        if isinstance(node, yaml.MappingNode):
            built = self._mapping(node, depth)
        else:
            built = self._sequence(node, depth)  # type: ignore[arg-type]
        if self._track:
            self._active.discard(key)
            self._built[key] = built
        return built

    def _scalar(self, node: yaml.ScalarNode, tag: str) -> Any:
        if tag == _STR:
            return node.value
        if tag == _BINARY:
            raise DecodeError("a !!binary scalar is not supported: write the base64 as a string")
        if tag not in _RESOLVABLE:
            return node.value  # go-yaml v2 keeps a scalar of an unknown tag as its text
        rtag, value = go_resolve(tag, node.value)
        if rtag in (_INT, _FLOAT):
            return _json_number(value)
        if rtag in (_MERGE, _TIMESTAMP):
            return node.value
        return value  # str, bool or None

    def _key(self, node: yaml.Node, depth: int) -> Any:
        """A map key as go-yaml v2 holds it: a str, or a tagged tuple for other types."""
        if not isinstance(node, yaml.ScalarNode):
            raise DecodeError("a map key is a map or a list (go-yaml: invalid map key)")
        tag = node.tag
        if tag == _STR or tag not in _RESOLVABLE:
            return node.value if tag != _BINARY else self._scalar(node, tag)
        rtag, value = go_resolve(tag, node.value)
        if rtag in (_STR, _TIMESTAMP, _MERGE):
            return node.value
        if value is None:
            raise DecodeError("a map key is null (unsupported map key of type: <nil>)")
        if isinstance(value, _Uint):
            raise DecodeError(f"the map key {node.value} is a uint64 (unsupported map key)")
        if isinstance(value, bool):
            return ("bool", "true" if value else "false")
        if isinstance(value, float):
            return ("float", _float32_key(value))
        return ("int", str(value))

    def _mapping(self, node: yaml.MappingNode, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        if not self._write(node, out, depth):
            return out  # every key a string
        # convertToJSONableObject: keys become strings; two keys that become the same
        # string are kept in Go's random map order, so Argo CD's result is not known.
        result: dict[str, Any] = {}
        for k, v in out.items():
            text = k[1] if isinstance(k, tuple) else k
            if text in result:
                raise DecodeError(
                    f"two keys of one map become {text!r} in JSON (a string and a "
                    "number or boolean): Argo CD keeps either, at random"
                )
            result[text] = v
        return result

    def _write(self, node: yaml.MappingNode, out: dict[Any, Any], depth: int) -> bool:
        """Write the pairs of ``node`` into ``out`` in go-yaml v2's order (merges included);
        whether a key written is not a string (a tagged tuple of ``_key``)."""
        scalar = yaml.ScalarNode
        fast = not self._track
        others = False
        for key_node, value_node in node.value:
            if key_node.__class__ is scalar and key_node.tag == _STR:
                key: Any = key_node.value
            elif (
                key_node.__class__ is scalar and key_node.tag == _MERGE and (key_node.value == "<<")
            ):
                others = self._merge(value_node, out, depth + 1) or others
                continue
            else:
                key = self._key(key_node, depth + 1)
                others = others or isinstance(key, tuple)
            if fast and value_node.__class__ is scalar and value_node.tag == _STR:
                out[key] = value_node.value
            else:
                out[key] = self.build(value_node, depth + 1)
        return others

    def _merge(self, node: yaml.Node, out: dict[Any, Any], depth: int) -> bool:
        """go-yaml v2 ``decoder.merge``: a map's pairs, or a list's maps last to first;
        whether a key written is not a string."""
        sources = list(reversed(node.value)) if isinstance(node, yaml.SequenceNode) else [node]
        others = False
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                raise DecodeError("map merge requires map or sequence of maps as the value")
            if id(source) in self._active:
                raise DecodeError("a merged anchor's value contains itself")
            if id(source) in self._built:
                self._alias(source, depth)  # counted as the alias it is
            else:
                self.build(source, depth)  # seen once, so that a later alias counts
            others = self._write(source, out, depth) or others
        return others


# --- documents ------------------------------------------------------------------------


_SEPARATOR = re.compile(rb"^---([^\n]*)(?:\n|\Z)", re.MULTILINE)


def split_documents(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(first line, document)`` as apimachinery's ``YAMLReader`` cuts the stream."""
    if b"\r" in data:
        yield from _split_lines(data)
        return
    # Without CR every line is as read: cut at the separator lines only (kustomize's output).
    pos, line = 0, 1
    for match in _SEPARATOR.finditer(data):
        chunk = data[pos : match.start()]
        here = line + chunk.count(b"\n")
        rest = match[1].decode("utf-8", "replace").strip(_GO_SPACE)
        if rest and not rest.startswith("#"):
            raise DecodeError(f"invalid Yaml document separator: {rest}", here)
        if chunk:
            yield line, chunk
        pos, line = match.end(), here + 1
    if pos < len(data):
        chunk = data[pos:]
        yield line, chunk if chunk.endswith(b"\n") else chunk + b"\n"


def _split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    lines = data.split(b"\n")
    ended = lines[-1] == b""
    if ended:
        lines.pop()  # the text ended with a line break
    buffer: list[bytes] = []
    start = 1
    for number, raw in enumerate(lines, start=1):
        # bufio.ReadLine drops "\r\n" and "\n"; a final "\r" with no "\n" after it stays.
        followed = ended or number < len(lines)
        line = raw[:-1] if followed and raw.endswith(b"\r") else raw
        if line.startswith(b"---"):
            rest = line[3:].decode("utf-8", "replace").strip(_GO_SPACE)
            if rest and not rest.startswith("#"):
                raise DecodeError(f"invalid Yaml document separator: {rest}", number)
            if buffer:
                yield start, b"".join(buffer)
            buffer = []
            continue
        if not buffer:
            start = number
        buffer.append(line + b"\n")
    if buffer:
        yield start, b"".join(buffer)


# Characters a JSON string may hold raw that go-yaml v2 then reads otherwise (NEL folds,
# the rest are refused), or escapes that can produce them; a key over 1024 characters
# cannot be a simple key. Only a document with one of these is read a second time.
# (The long line is looked for apart: as a regex alternative it costs a scan of up to
# 1,000 bytes at every position of the document.)
_SECOND_READ = re.compile(rb"\\[xuUN]|\xc2[\x80-\x9f]|\xef\xbf[\xbe\xbf]|\x7f")
_LONG_LINE = 1000
_TAG_TOKEN = re.compile(rb"(?:^|[\s\[{,])!")


def decode_documents(data: bytes) -> Iterator[tuple[int, yaml.Node | None, Any]]:
    """``(line, node, value)`` of each document as sigs.k8s.io/yaml decodes it (steps 1–3,
    values as JSON holds them); raises ``DecodeError`` (``InputLimitError`` for bounds)."""
    stripped = data.lstrip(b" \t\r\n\v\f")
    if stripped.startswith(b"{"):
        raise DecodeError("the output is JSON, not YAML (trainkit reads kustomize's YAML)", 1)
    for line, chunk in split_documents(data):
        try:
            node, value = _decode_chunk(chunk)
        except InputLimitError as err:
            raise InputLimitError(err.message, _offset(line, err.line)) from None
        except DecodeError as err:
            raise DecodeError(err.message, _offset(line, err.line)) from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = mark.line + 1 if mark is not None else None
            raise DecodeError(f"invalid YAML: {_reason(err)}", _offset(line, at)) from None
        yield line, node, value


def _offset(start: int, line: int | None) -> int:
    return start + (line - 1 if line is not None else 0)


def _decode_chunk(chunk: bytes) -> tuple[yaml.Node | None, Any]:
    check_nesting(chunk, ArgoLoader)
    if b"!" in chunk and _TAG_TOKEN.search(chunk):
        _refuse_non_specific_tags(chunk)
    node, value = _first_document(chunk)
    if value is not None and _needs_second_read(chunk):
        # Step 3 reads the JSON of step 2 with go-yaml again.
        text = _go_json(value)
        try:
            _, value = _first_document(text.encode("utf-8", "surrogatepass"))
        except (yaml.YAMLError, DecodeError) as err:
            reason = err.message if isinstance(err, DecodeError) else _reason(err)
            raise DecodeError(
                f"Argo CD cannot read back the JSON of this document ({reason}): a string "
                "holds a character its YAML reader refuses or takes for a line break"
            ) from None
    return node, value


def _needs_second_read(chunk: bytes) -> bool:
    if _SECOND_READ.search(chunk):
        return True
    return len(chunk) >= _LONG_LINE and max(map(len, chunk.split(b"\n"))) >= _LONG_LINE


def _first_document(chunk: bytes) -> tuple[yaml.Node | None, Any]:
    """go-yaml v2 ``Unmarshal``: the first document of the chunk only."""
    loader = ArgoLoader(chunk)
    try:
        node = loader.get_node() if loader.check_node() else None
        if node is None:
            return None, None
        track = b"&" in chunk and b"*" in chunk
        return node, _GoBuilder(loader, chunk, 0, track).build(node, 1)
    finally:
        loader.dispose()


def _refuse_non_specific_tags(chunk: bytes) -> None:
    """go-yaml v2 keeps a scalar tagged ``!`` as its text; PyYAML's composer resolves it
    like a plain one. Such a tag is refused rather than read otherwise."""
    for event in yaml.parse(chunk, Loader=ArgoLoader):
        if getattr(event, "tag", None) == "!":
            raise DecodeError(
                "a non-specific tag `!` is not supported",
                event.start_mark.line + 1 if event.start_mark else None,
            )


def _go_json(value: Any) -> str:
    """The JSON ``encoding/json`` writes for ``value``, where YAML readers care: U+2028 and
    U+2029 escaped, every other non-ASCII character raw."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def canonical_json(value: Any) -> str:
    """One text per JSON value, whatever its keys' order: how decoded objects are compared
    (and remembered as validated). A value that is no JSON (a file read with other rules
    may hold one) is written as its ``str``."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _reason(err: yaml.YAMLError) -> str:
    problem = getattr(err, "problem", None)
    context = getattr(err, "context", None)
    return " ".join(str(x) for x in (context, problem) if x) or str(err).splitlines()[0]


@dataclass(frozen=True)
class Decoded:
    """One object Argo CD applies from a build: a document, or one item of a list."""

    body: dict[str, Any]
    line: int
    """1-based line of its document in the build output."""
    node: yaml.Node | None
    """The document's node (for lines of findings: its marks count from ``line``)."""
    item: int | None = None
    """Its index in the document's ``items``, when the document is a list."""
    document: dict[str, Any] | None = None
    """The list it is an item of."""


def decode_build(data: bytes) -> list[Decoded]:
    """Every object Argo CD applies from this ``kustomize build`` output (steps 1–4).

    Raises ``DecodeError`` (or ``InputLimitError``) at the first document Argo CD could
    not decode: its manifest generation fails there too.
    """
    objects: list[Decoded] = []
    for line, node, value in decode_documents(data):
        if value is None:
            continue
        if not isinstance(value, dict):
            what = "a list" if isinstance(value, list) else "a scalar"
            raise DecodeError(f"the document is {what}, not an object", line)
        kind = value.get("kind")
        api = value.get("apiVersion")
        api = api if isinstance(api, str) else ""
        if not isinstance(kind, str) or not kind or (api not in ("", "/") and api.count("/") > 1):
            raise DecodeError("Object 'Kind' is missing (or apiVersion is not group/version)", line)
        items = value.get("items", _ABSENT)
        if isinstance(items, list):
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    raise DecodeError(f"items[{i}] is not an object (items member)", line)
                objects.append(Decoded(item, line, node, i, value))
        elif items is None and "spec" not in value and "status" not in value:
            continue  # isNullList: Argo CD applies nothing for it
        else:
            objects.append(Decoded(value, line, node))
    return objects


_ABSENT = object()
