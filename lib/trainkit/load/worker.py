"""What runs inside a definition's process: execute files, return plain data.

Nothing here is trusted by the parent. A definition runs in the same
interpreter as this code and may change any of it; whatever it does, the
parent receives bytes, parses them as JSON and rebuilds every object through
its own, untouched models. The only reason this module is careful is to
give honest users exact messages: file, line, object and field.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import TrainkitError
from ..model import JOB_KINDS, PLATFORM_KINDS, TrainkitModel, base
from .calls import Calls

__all__ = ["load_group"]

_KINDS = PLATFORM_KINDS + JOB_KINDS


def load_group(files: list[tuple[int, str]], emit: Callable[[bytes, bytes], None]) -> None:
    """Execute each ``(index, path)`` in turn; ``emit(b"S", index)`` before, ``emit(b"R", json)`` after."""
    for index, path in files:
        emit(b"S", str(index).encode())
        payload = _load(Path(path))
        emit(b"R", json.dumps(payload, ensure_ascii=False, allow_nan=False).encode())


def _load(path: Path) -> dict[str, Any]:
    built: list[TrainkitModel] = []
    before = set(sys.modules)
    namespace: dict[str, object] = {"__name__": f"trainkit_jobs.{path.stem}", "__file__": str(path)}
    problems: list[dict[str, Any]] = []
    base.BUILT = built
    source = b""
    try:
        source = path.read_bytes()
        exec(compile(source, str(path), "exec"), namespace)
    except SyntaxError as e:
        problems.append({"line": e.lineno, "message": f"syntax error: {e.msg}"})
    except TrainkitError as e:
        line = _line_from_tb(e.__traceback__, path)
        calls = Calls(source)
        for p in e.problems:
            at, owner, field = calls.locate(line, p.obj, p.field)
            problems.append({"line": at, "obj": owner, "field": field, "message": p.message})
    except SystemExit as e:
        problems.append(
            {
                "line": _line_from_tb(e.__traceback__, path),
                "message": f"the definition called exit({e.code!r}); a definition only builds "
                "objects: remove the call",
            }
        )
    except BaseException as e:  # any error in user code is the user's to fix
        problems.append(
            {
                "line": _line_from_tb(e.__traceback__, path),
                "error": type(e).__name__,
                "message": f"{type(e).__name__} while importing the definition: {e}",
            }
        )
    finally:
        base.BUILT = None
    objects: list[dict[str, Any]] = []
    collected: set[int] = set()
    private: set[int] = set()
    if not problems:
        calls = Calls(source)
        for obj, is_private in _module_level(namespace):
            (private if is_private else collected).add(id(obj))
            if not is_private:
                dumped = _dump(obj, path)
                dumped["fields"] = calls.fields(dumped["line"], type(obj).__name__)
                objects.append(dumped)
        problems.extend(_dropped(built, collected | private, objects, path))
    return {"objects": objects, "problems": problems, "imports": _imports(before)}


def _module_level(namespace: dict[str, object]) -> Iterator[tuple[TrainkitModel, bool]]:
    """Every definition object bound to a module-level name (or in a list/tuple bound to one)."""
    seen: set[int] = set()
    for name, value in namespace.items():
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            if isinstance(item, _KINDS) and id(item) not in seen:
                seen.add(id(item))
                yield item, name.startswith("_")


def _kind(obj: TrainkitModel) -> str:
    # The most derived trainkit class: a subclass named like another kind
    # still reports the kind it really is.
    return next(c.__name__ for c in type(obj).__mro__ if c in _KINDS)


def _dump(obj: TrainkitModel, path: Path) -> dict[str, Any]:
    return {
        "kind": _kind(obj),
        "line": _line(obj, path),
        "data": obj.model_dump(mode="json", exclude_unset=True),
    }


def _dropped(
    built: list[TrainkitModel], kept: set[int], objects: list[dict[str, Any]], path: Path
) -> Iterator[dict[str, Any]]:
    """Objects built but bound to no module-level name: they would silently not be generated
    (and Argo CD would prune the running job). A copy kept under the same kind and name
    (``job.model_copy(update=...)``) counts as kept."""
    names = {(o["kind"], o["data"].get("name")) for o in objects}
    for obj in built:
        if not isinstance(obj, _KINDS) or id(obj) in kept or _line(obj, path) is None:
            continue  # kept, or built by another module (a shared template)
        name = getattr(obj, "name", None)
        if (_kind(obj), name) in names:
            continue
        yield {
            "line": _line(obj, path),
            "obj": obj.describe(),
            "message": "built but not bound to a module-level name, so it would not be "
            "generated (and Argo CD would delete what it replaces); assign it "
            "(job = ...), put it in a module-level list, or delete it",
        }


def _line(obj: TrainkitModel, path: Path) -> int | None:
    at = obj.defined_at
    return at[1] if at and at[0] == str(path) else None


def _line_from_tb(tb: TracebackType | None, path: Path) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == str(path):
            line = lineno
    return line


def _imports(before: set[str]) -> list[str]:
    """Files of the modules a definition imported: its cache key must cover them."""
    out = set()
    for name in set(sys.modules) - before:
        file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(file, str):
            out.add(file)
    return sorted(out)
