"""The base every user-facing model shares: frozen, strict about unknown fields.

Field docstrings are the descriptions in ``schemas/`` (``use_attribute_docstrings``).
A model that fails validation raises ``ModelError`` carrying the kind and the
object's name, so the loader can say *which* object in a file is wrong.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from ..errors import DefinitionError, Problem

__all__ = ["BUILT", "ModelError", "TrainkitModel"]

BUILT: list[TrainkitModel] | None = None
"""While a definition file runs, every object it builds (so the loader can tell
which ones are bound to no name and would silently not be generated)."""


class ModelError(DefinitionError):
    """A model was constructed with invalid values.

    The loader re-homes the problems to the definition file and line; used on
    its own (outside ``jobs/``) the file is ``<python>``.
    """

    def __init__(self, kind: str, name: object, error: ValidationError) -> None:
        self.kind = kind
        self.name = name if isinstance(name, str) else None
        self.errors = error.errors(include_url=False)
        obj = f"{kind} {self.name!r}" if self.name else kind
        super().__init__(_problems(obj, self.errors))


def _problems(obj: str, errors: list[Any]) -> Iterator[Problem]:
    # A union field (procs_per_node: int | "auto") fails once per member, each under a
    # tag pydantic adds to the path: say it once, listing what each member wanted.
    merged: dict[str, list[str]] = {}
    # Members the value was not even of the type of say nothing useful when another
    # member of the same union got further ("a valid string" for a dict with a bad key).
    branches: dict[tuple[Any, ...], list[Any]] = {}
    for e in errors:
        branches.setdefault(_union_base(e["loc"]), []).append(e)
    errors = [
        e
        for group in branches.values()
        for e in group
        if not (
            str(e["type"]).endswith("_type")
            and any(not str(x["type"]).endswith("_type") for x in group)
            and _union_base(e["loc"]) != tuple(e["loc"])
        )
    ]
    for e in errors:
        where = _loc(e["loc"])
        inner = (e.get("ctx") or {}).get("error")
        if isinstance(inner, ModelError):
            # A nested model (resources=…) failed in its own __init__: name its
            # fields from the outer object (resources.gpu), not as a lone Resources.
            for p in inner.problems:
                field = f"{where}.{p.field}" if where and p.field else where or p.field
                merged.setdefault(field, []).append(p.message)
        else:
            merged.setdefault(where, []).append(_msg(e))
    for field, messages in merged.items():
        unique = list(dict.fromkeys(messages))
        message = unique[0] if len(unique) == 1 else "; or ".join(unique)
        yield Problem(file="<python>", obj=obj, field=field, message=message)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _UNION_TAG.match(part):
            continue  # a union member's tag, not a field
        else:
            out += f".{part}" if out else str(part)
    return out


def _union_base(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The path up to the first union tag (the whole path when there is none)."""
    for i, part in enumerate(loc):
        if isinstance(part, str) and _UNION_TAG.match(part):
            return tuple(loc[:i])
    return tuple(loc)


# The tags pydantic puts in the path of a union member's error ("constrained-int",
# "literal['auto']", "dict[str,function-after[…]]", "str"): never a field or dict key here.
_UNION_TAG = re.compile(
    r"(constrained-[a-z]+|function-[a-z]+\[.*\]|[a-z-]+\[.*\]|int|str|float|bool|none|dict|list)\Z"
)


def _msg(err: Any) -> str:
    msg = str(err["msg"])
    # pydantic prefixes messages from our validators with "Value error, "; drop the noise.
    msg = msg.removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        if err["loc"] and err["loc"][-1] == "namespace":
            return (
                "unknown field; jobs and runtimes live in their team's namespace "
                "(Team.namespace in jobs/platform/)"
            )
        return "unknown field; check the spelling (see schemas/ for the allowed fields)"
    if err["type"] == "missing":
        return "required field is missing"
    return msg


class TrainkitModel(BaseModel):
    """Base of all trainkit definition objects."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        validate_default=True,
        str_strip_whitespace=False,
    )

    kind: ClassVar[str] = ""
    _defined_at: tuple[str, int] | None = PrivateAttr(default=None)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise ModelError(type(self).__name__, data.get("name"), e) from None
        # Remember the caller's file and line so later errors (unknown queue, …)
        # can point at the definition, not only at its file.
        caller = sys._getframe(1)
        self._defined_at = (caller.f_code.co_filename, caller.f_lineno)
        if BUILT is not None:
            BUILT.append(self)

    @property
    def defined_at(self) -> tuple[str, int] | None:
        """(file, line) where the object was constructed, when known."""
        return self._defined_at

    def describe(self) -> str:
        """``Kind 'name'`` as used in error messages."""
        name = getattr(self, "name", None)
        return f"{type(self).__name__} {name!r}" if name else type(self).__name__
