"""cel-python's parser, from parse tables computed once (``cel_parser.json``), not per process.

cel-python builds its parser (lark, LALR) from its grammar the first time an environment is
made: the table analysis took about 0.15 CPU-seconds of every process that checks a CEL rule
(``trainkit check``, ``validate``). The tables depend only on the grammar, lark's version and
the options cel-python passes, so they are computed once and stored with trainkit
(``python -m trainkit.validate.cel_parser --write`` writes them, again when lark or
cel-python's grammar change; a test holds them to the installed ones and to the parser lark
builds). Lark numbers states, tokens and rules in an order that differs between processes;
the stored tables are numbered by content (``_canonical``), so the file is byte-stable. When
the installed cel-python or lark differ from the ones the tables were made with, nothing is
loaded: cel-python builds its parser as before. Either way it is the same parser: the same rules are parsed into the same trees.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import deque
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["install", "stamp", "tables"]

_FILE = "cel_parser.json"
_HEADER = (
    "Generated from cel-python's grammar by lark; do not edit. Regenerate with "
    "`python -m trainkit.validate.cel_parser --write` after upgrading lark or cel-python."
)
_SHIFT = 0
"""lark's code for a shift in a stored parse table (``lalr_analysis.IntParseTable``)."""


def _grammar() -> str:
    import celpy

    return (Path(celpy.__file__).parent / "cel.lark").read_text()


def stamp() -> dict[str, str]:
    """What the tables were computed from: lark's and cel-python's versions (the options
    cel-python builds its parser with are its code's) and cel-python's grammar."""
    from importlib.metadata import version

    import lark

    return {
        "lark": lark.__version__,
        "cel-python": version("cel-python"),
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
    raw: dict[str, Any] = json.loads(json.dumps({"data": data, "memo": memo}))
    data, memo = _canonical(raw["data"], raw["memo"])
    return {"generated": _HEADER, "stamp": stamp(), "data": data, "memo": memo}


def _canonical(data: dict[str, Any], memo: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The same tables, numbered by content: lark numbers states, tokens and memo entries in
    the order it meets them in sets of objects hashed by identity, which differs from one
    process to the next. Memo entries are numbered by their text, tokens by name, states in
    breadth-first order from the start states, each state's shifts by token; what each
    number stands for is unchanged (lark reads them back by number, ``IntParseTable``)."""
    memo_ids = {int(k): i for i, k in enumerate(sorted(memo, key=lambda k: _text(memo[k])))}
    memo = {str(memo_ids[int(k)]): v for k, v in memo.items()}

    def refs(obj: Any) -> Any:
        if isinstance(obj, dict):
            if set(obj) == {"@"}:
                return {"@": memo_ids[obj["@"]]}
            return {k: refs(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [refs(v) for v in obj]
        return obj

    data = refs(data)
    table = data["parser"]["parser"]
    names: dict[str, str] = table["tokens"]
    token_ids = {k: str(i) for i, k in enumerate(sorted(names, key=names.__getitem__))}
    states: dict[str, dict[str, list[Any]]] = table["states"]
    state_ids: dict[int, int] = {}
    roots = [table["start_states"][s] for s in sorted(table["start_states"])]
    roots += [table["end_states"][s] for s in sorted(table["end_states"])]
    for root in roots:
        queue = deque([root])
        while queue:
            state = queue.popleft()
            if state in state_ids:
                continue
            state_ids[state] = len(state_ids)
            actions = states[str(state)]
            for token in sorted(actions, key=lambda t: int(token_ids[t])):
                action, arg = actions[token]
                if action == _SHIFT:
                    queue.append(arg)
    if len(state_ids) != len(states):  # lark's tables have no state no start reaches
        raise RuntimeError("cel_parser: a parse state no start state reaches")
    table["tokens"] = {token_ids[k]: v for k, v in names.items()}
    table["states"] = {
        str(state_ids[int(k)]): {
            token_ids[t]: [a, state_ids[arg] if a == _SHIFT else arg]
            for t, (a, arg) in actions.items()
        }
        for k, actions in states.items()
    }
    for key in ("start_states", "end_states"):
        table[key] = {s: state_ids[v] for s, v in table[key].items()}
    return data, memo


def _text(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


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
