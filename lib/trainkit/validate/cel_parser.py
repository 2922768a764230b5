"""cel-python's parser, from parse tables computed once (``cel_parser.json``), not per process.

cel-python builds its parser (lark, LALR) from its grammar the first time an environment is
made: the table analysis took about 0.15 CPU-seconds of every process that checks a CEL rule
(``trainkit check``, ``validate``). The tables depend only on the grammar, lark's version and
the options cel-python passes, so they are computed once and stored with trainkit
(``python -m trainkit.validate.cel_parser --write`` writes them, again when lark or
cel-python's grammar change; a test holds them to the installed ones and to the parser lark
builds: lark numbers the states in an order that varies with the hash seed, so two writes may
differ in numbering, never in what they parse). When the installed cel-python or lark differ from the ones the tables
were made with, nothing is loaded: cel-python builds its parser as before. Either way it is
the same parser: the same rules are parsed into the same trees.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["install", "stamp", "tables"]

_FILE = "cel_parser.json"


def _grammar() -> str:
    import celpy

    return (Path(celpy.__file__).parent / "cel.lark").read_text()


def stamp() -> dict[str, str]:
    """What the tables were computed from: lark's version and cel-python's grammar."""
    import lark

    return {
        "lark": lark.__version__,
        "grammar": hashlib.sha256(_grammar().encode()).hexdigest(),
    }


def _options() -> dict[str, Any]:
    """The options cel-python builds its parser with (``celpy.celparser.CELParser``) that
    are not data: given again when the tables are loaded."""
    import lark
    from celpy.celparser import CELParser

    return {
        "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals},
        "tree_class": lark.Tree,
        "g_regex_flags": re.M,
    }


def tables() -> dict[str, Any]:
    """The parse tables lark computes from cel-python's grammar, as they are stored."""
    import lark
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    parser = lark.Lark(
        _grammar(),
        parser="lalr",
        start="expr",
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        **_options(),
    )
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    for key in _options():
        data["options"].pop(key)
    # Stored as JSON: tuples become lists, integer keys strings (read back by _int_keys).
    stored: dict[str, Any] = json.loads(json.dumps({"stamp": stamp(), "data": data, "memo": memo}))
    return stored


def _int_keys(obj: dict[str, Any]) -> dict[Any, Any]:
    # Integer keys (states, tokens, memo ids) came back as strings; no name is all digits.
    return {int(k) if k.isdigit() else k: v for k, v in obj.items()}


def install() -> bool:
    """Give cel-python the parser made from the stored tables, if they fit the installed
    cel-python and lark; False (cel-python builds its own, as it always did) otherwise."""
    import lark
    from celpy.celparser import CELParser

    if CELParser.CEL_PARSER is not None:
        return True
    text = resources.files(__package__).joinpath(_FILE).read_text()
    stored = json.loads(text, object_hook=_int_keys)
    if stored.get("stamp") != stamp():
        return False
    # What lark's standalone parsers and its own cache load with.
    load: Any = lark.Lark._load_from_dict
    CELParser.CEL_PARSER = load(stored["data"], stored["memo"], **_options())
    return True


def dump(stored: dict[str, Any]) -> str:
    """The text of ``cel_parser.json``."""
    return json.dumps(stored, sort_keys=True, separators=(",", ":")) + "\n"


def main(argv: list[str]) -> int:
    """``--write``: store the tables lark computes now."""
    if argv != ["--write"]:
        print("usage: python -m trainkit.validate.cel_parser --write", file=sys.stderr)
        return 2
    Path(__file__).with_name(_FILE).write_text(dump(tables()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
