"""cel-python's parser from trainkit's stored parse tables (``validate.cel_parser``): the same
parser cel-python builds, made without computing the tables in every process."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import lark
import pytest
import yaml
from celpy.celparser import CELParser
from hypothesis import given
from hypothesis import strategies as st

from conftest import crds_dir
from trainkit.validate import cel, cel_parser

_PREFIX = re.compile(r" *(- )?")  # before `rule: ` on its line


def _crd_rules() -> Iterator[str]:
    """Every ``x-kubernetes-validations`` rule of the upstream CRDs (``$TRAINKIT_CRDS``)."""
    for path in sorted(crds_dir().rglob("*.yaml")):
        text = path.read_text()
        at = text.find("rule: ")
        while at != -1:
            start = text.rfind("\n", 0, at) + 1
            found, at = _PREFIX.fullmatch(text[start:at]), text.find("rule: ", at + 1)
            if found is None:
                continue
            column = len(found[0])
            lines = text[start : start + 20000].splitlines()  # no rule is longer
            block = [lines[0][column:]]
            for more in lines[1:]:
                if more.strip() and len(more) - len(more.lstrip()) <= column:
                    break
                block.append(more[column:])
            rule = yaml.safe_load("\n".join(block))["rule"]
            if isinstance(rule, str):
                yield rule


_MORE = [
    "self.x.all(y, y > 1) && has(self.z) ? 'a' : size(self.w) == 2u",
    "true || false && !null_value",
    "[1, 2].map(x, x * 2)[0] == 2.0e3 - -1",
    'self.a.b["c"].startsWith("x") in {"k": [b"by", r"raw"]}',
    "a\n&& b",
    "'''multi\nline''' + \"\"\"more\"\"\"",
]
_BAD = ["a &&", "(x", "self.", "1 +* 2", "{'a' 1}", "'open"]


@functools.cache
def _both() -> tuple[lark.Lark, lark.Lark]:
    """(cel-python's own parser, as it builds it; the one from the stored tables)."""
    saved = CELParser.CEL_PARSER
    try:
        CELParser.CEL_PARSER = None
        CELParser()  # cel-python's own, computed from its grammar
        own = CELParser.CEL_PARSER
        CELParser.CEL_PARSER = None
        assert cel_parser.install()
        stored = CELParser.CEL_PARSER
    finally:
        CELParser.CEL_PARSER = saved
    assert own is not None and stored is not None
    return own, stored


@pytest.fixture
def parsers() -> tuple[lark.Lark, lark.Lark]:
    return _both()


def test_stored_tables_are_what_write_writes_in_any_process() -> None:
    """The file is the tables this lark computes from this grammar, byte for byte, whatever
    order lark meets its objects in: here and in a process of another hash seed."""
    text = (Path(cel_parser.__file__).parent / "cel_parser.json").read_text()
    stale = "cel_parser.json is stale: run `python -m trainkit.validate.cel_parser --write`"
    assert cel_parser.stamp() == json.loads(text)["stamp"], stale
    assert cel_parser.dump(cel_parser.tables()) == text, stale
    other = subprocess.run(
        [sys.executable, "-c", "import sys; from trainkit.validate import cel_parser as c; "
         "sys.stdout.write(c.dump(c.tables()))"],
        env={**os.environ, "PYTHONHASHSEED": "12345"}, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert other.stdout == text
    assert json.loads(text)["generated"].startswith("Generated from cel-python's grammar")


def test_every_crd_rule_parses_to_the_same_tree(parsers: tuple[lark.Lark, lark.Lark]) -> None:
    own, stored = parsers
    crd_rules = set(_crd_rules())
    assert len(crd_rules) > 25  # the CRDs were read
    rules = [*sorted(crd_rules), *_MORE]
    for rule in rules:
        expected = own.parse(rule)
        got = stored.parse(rule)
        assert got == expected, rule
        assert [(t.meta.line, t.meta.column, t.meta.end_pos) for t in got.iter_subtrees()] == [
            (t.meta.line, t.meta.column, t.meta.end_pos) for t in expected.iter_subtrees()
        ], rule


@pytest.mark.parametrize("text", _BAD)
def test_a_bad_rule_fails_the_same_way(parsers: tuple[lark.Lark, lark.Lark], text: str) -> None:
    own, stored = parsers
    with pytest.raises(lark.exceptions.UnexpectedInput) as want:
        own.parse(text)
    with pytest.raises(type(want.value)) as got:
        stored.parse(text)
    assert (got.value.line, got.value.column) == (want.value.line, want.value.column)
    assert got.value.get_context(text) == want.value.get_context(text)


_ATOMS = st.sampled_from(
    ["self", "oldSelf", "x", "true", "false", "null", "1", "2u", "0x1F", "1.5e3", "'s'", '"t"',
     "b'b'", "r'[0-9]'", '"""m"""', "[]", "{}"]
)  # fmt: skip
_BINARY = st.sampled_from(
    ["&&", "||", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "in"]
)  # fmt: skip
_METHODS = st.sampled_from(["a", "size", "all", "exists", "startsWith"])


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, _BINARY, inner).map(" ".join),
        st.tuples(inner, _METHODS, st.lists(inner, max_size=2)).map(
            lambda t: f"{t[0]}.{t[1]}({', '.join(t[2])})"
        ),
        st.tuples(inner, _METHODS).map(lambda t: f"{t[0]}.{t[1]}"),
        st.tuples(st.sampled_from(["has", "size", "int"]), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.lists(inner, max_size=3).map(lambda xs: f"[{', '.join(xs)}]"),
        st.tuples(inner, inner).map(lambda t: f"{{{t[0]}: {t[1]}}}"),
        inner.map(lambda x: f"!({x})"),
        inner.map(lambda x: f"-{x}"),
    )


# Rules as they are written, and (a bad tail) as they are mistyped.
_TEXTS = st.one_of(
    st.recursive(_ATOMS, _compound, max_leaves=12),
    st.tuples(st.recursive(_ATOMS, _compound, max_leaves=6), st.text(max_size=3)).map("".join),
)


@given(_TEXTS)
def test_any_text_parses_or_fails_alike(text: str) -> None:
    """Whatever the text: the same tree, or the same error at the same place."""
    own, stored = _both()
    try:
        expected: object = own.parse(text)
    except lark.exceptions.UnexpectedInput as e:
        expected = (type(e), e.line, e.column)
    try:
        got: object = stored.parse(text)
    except lark.exceptions.UnexpectedInput as e:
        got = (type(e), e.line, e.column)
    assert got == expected


def test_the_environment_does_not_compute_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("the LALR tables were computed")

    monkeypatch.setattr(lark.parsers.lalr_analysis.LALR_Analyzer, "compute_lalr", refuse)
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    cel._environment.cache_clear()
    cel._program.cache_clear()
    try:
        program, why = cel._program("self.a.size() > 1")
        assert (program is not None, why) == (True, "")
    finally:
        cel._environment.cache_clear()
        cel._program.cache_clear()


def test_other_versions_get_cel_pythons_own_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    monkeypatch.setattr(cel_parser, "stamp", lambda: {"lark": "0", "grammar": "other"})
    assert cel_parser.install() is False
    assert CELParser.CEL_PARSER is None  # cel-python builds its own, as before
