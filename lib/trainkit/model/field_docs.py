"""The docstring written under each field of a model: its description (``schemas/``, help).

pydantic's ``use_attribute_docstrings`` finds them by walking the stack to the class body's
frame, tokenizing the module from there and parsing the class's lines again, for every
class: about a third of the time ``import trainkit`` took (every command, every definition
process's origin). Here each module's source is parsed once, and each class's docstrings
are read from its node in that tree. What they are is what pydantic reads: a string
statement right after an annotated name in the class body (``inspect.cleandoc``-ed).

Only the docstrings are kept, not the tree: kept, its nodes were some 28,000 of the 68,000
objects the cycle collector tracks after ``import trainkit.model``, walked again by every full
collection of every trainkit process (and of each definition process forked with them). The
parse and the reading run with the collector paused: the tree forms no cycle, reference
counting frees it before the collector runs again, and the collections its allocations set off
found nothing to free.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Any

from ..collector import cycle_collection_paused

__all__ = ["field_docstrings"]

_CLASSES: dict[str, dict[str, list[dict[str, str]]]] = {}
"""Module name → each class's qualified name → the field docstrings of each of its
definitions in the module's source (one per class statement of that name)."""


def field_docstrings(cls: type[Any]) -> dict[str, str]:
    """Field name → the docstring under it, for the fields ``cls``'s own body declares."""
    found = _classes(cls.__module__).get(cls.__qualname__, [])
    if len(found) == 1:
        return dict(found[0])
    # Not found once in its module's source (made by a function, or a name defined twice):
    # its own lines, as inspect finds them.
    try:
        lines, _ = inspect.getsourcelines(cls)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return {}
    first = tree.body[0] if tree.body else None
    return _docstrings(first) if isinstance(first, ast.ClassDef) else {}


def _classes(module: str) -> dict[str, list[dict[str, str]]]:
    found = _CLASSES.get(module)
    if found is None:
        with cycle_collection_paused():
            found = _read(getattr(sys.modules.get(module), "__file__", None))
        _CLASSES[module] = found
    return found


def _read(file: str | None) -> dict[str, list[dict[str, str]]]:
    """The docstrings of each class of a module's source; its tree is freed on return."""
    try:
        with open(file, "rb") as f:  # type: ignore[arg-type]
            tree = ast.parse(f.read())
    except (OSError, TypeError, SyntaxError, ValueError):
        return {}
    nodes: dict[str, list[ast.ClassDef]] = {}
    _walk(tree.body, "", nodes)
    return {name: [_docstrings(node) for node in each] for name, each in nodes.items()}


def _walk(body: list[ast.stmt], prefix: str, found: dict[str, list[ast.ClassDef]]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            found.setdefault(name, []).append(node)
            _walk(node.body, name + ".", found)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            _walk(node.body, f"{prefix}{node.name}.<locals>.", found)
        else:
            # Classes under if/try/with at this level keep this level's qualified name.
            for field in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(node, field, None) or ():
                    if isinstance(inner, ast.ExceptHandler):
                        _walk(inner.body, prefix, found)
                    elif isinstance(inner, ast.stmt):
                        _walk([inner], prefix, found)


def _docstrings(node: ast.ClassDef) -> dict[str, str]:
    out: dict[str, str] = {}
    for stmt, after in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[stmt.target.id] = inspect.cleandoc(after.value.value)
    return out
