"""Where in a definition file each keyword argument was written.

Errors point at the line of the offending keyword (``procs_per_node=0`` on
line 11), not at the line where the object's call begins, and an error
inside a nested model (``resources=Resources(gpus=8)``) names the object it
belongs to (``PyTorchJob 'x': resources.gpus``). Both are read from the file's
syntax tree; nothing here runs code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["Calls"]


def _name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


@dataclass(frozen=True)
class _Owner:
    call: ast.Call
    keyword: str


class Calls:
    """The calls of one source file, by the line they start on."""

    def __init__(self, source: bytes) -> None:
        self._by_line: dict[int, list[ast.Call]] = {}
        self._owner: dict[int, _Owner] = {}
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            self._by_line.setdefault(node.lineno, []).append(node)
            for kw in node.keywords:
                if kw.arg is not None and isinstance(kw.value, ast.Call):
                    self._owner[id(kw.value)] = _Owner(node, kw.arg)

    def at(self, line: int | None, kind: str = "") -> ast.Call | None:
        """The outermost call starting on ``line`` (of ``kind`` when given)."""
        calls = [c for c in self._by_line.get(line or 0, []) if not kind or _name(c) == kind]
        if not calls:
            return None
        return max(calls, key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))

    def fields(self, line: int | None, kind: str = "") -> dict[str, int]:
        """Keyword → line of the call starting on ``line``."""
        call = self.at(line, kind)
        if call is None:
            return {}
        return {kw.arg: kw.lineno for kw in call.keywords if kw.arg is not None}

    def locate(self, line: int | None, obj: str, field: str) -> tuple[int | None, str, str]:
        """``(line, object, field)`` of an error raised by the call on ``line``.

        ``obj`` is how the model named itself (``Resources``); when that call is the
        value of a keyword of an enclosing call (``resources=Resources(...)``), the
        enclosing object owns the error: ``PyTorchJob 'x'``, ``resources.<field>``.
        """
        kind = obj.split(" ", 1)[0]
        call = self.at(line, kind)
        if call is None:
            return line, obj, field
        top = field.split(".", 1)[0].split("[", 1)[0]
        at = next((kw.lineno for kw in call.keywords if kw.arg == top), line)
        owner = self._owner.get(id(call))
        while owner is not None:
            field = f"{owner.keyword}.{field}" if field else owner.keyword
            name = next(
                (
                    kw.value.value
                    for kw in owner.call.keywords
                    if kw.arg == "name"
                    and isinstance(kw.value, ast.Constant)
                    and isinstance(kw.value.value, str)
                ),
                None,
            )
            obj = f"{_name(owner.call)} {name!r}" if name else _name(owner.call)
            owner = self._owner.get(id(owner.call))
        return at, obj, field
