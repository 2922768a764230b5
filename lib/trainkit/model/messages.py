"""What a person reads when a model refuses a value: trainkit's words, not pydantic's.

Each pydantic error becomes one line naming the field (``resources.gpu`` for a
nested model), what is allowed and, for a misspelt field, the closest real one.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import DefinitionError, Problem

__all__ = ["ModelError"]


class ModelError(DefinitionError):
    """A model was constructed with invalid values.

    The loader re-homes the problems to the definition file and line; used on
    its own (outside ``jobs/``) the file is ``<python>``.
    """

    def __init__(
        self,
        kind: str,
        name: object,
        error: ValidationError,
        model: type[BaseModel] | None = None,
    ) -> None:
        self.kind = kind
        self.name = name if isinstance(name, str) else None
        self.errors = error.errors(include_url=False)
        obj = f"{kind} {self.name!r}" if self.name else kind
        super().__init__(_problems(obj, self.errors, model))


def _problems(obj: str, errors: list[Any], model: type[BaseModel] | None) -> Iterator[Problem]:
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
            merged.setdefault(where, []).append(_msg(e, model))
    for field, messages in merged.items():
        unique = list(dict.fromkeys(messages))
        message = unique[0] if len(unique) == 1 else ", or ".join(unique)
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

_PLAIN = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "string_type": "must be text (a str)",
    "bool_type": "must be True or False",
    "bool_parsing": "must be True or False",
    "list_type": "must be a list, e.g. [...]",
    "dict_type": "must be a dict, e.g. {...}",
    "missing": "required field is missing",
}


_ROLE_NAMES = frozenset(
    {"master", "worker", "workers", "chief", "ps", "evaluator", "launcher", "heter", "head"}
)
"""Role names of some kind: on a kind without them, the message lists the kind's roles."""


def _roles_of(model: type[BaseModel]) -> str:
    """The role fields ``model`` has (``ROLE_FIELDS``), for a role it does not have."""
    roles: dict[str, str] = getattr(model, "ROLE_FIELDS", {})
    name = model.__name__
    article = "an" if name[0] in "AEIOUMX" else "a"  # an MPIJob, an XGBoostJob
    if not roles:
        return (
            f"{article} {name} has no roles with settings of their own: all its pods run the "
            "job's settings"
        )
    listed = ", ".join(f"{f}= ({rtype})" for f, rtype in roles.items())
    return (
        f"{article} {name}'s roles with settings of their own are {listed}; the other pods "
        "run the job's settings"
    )


def _msg(err: Any, model: type[BaseModel] | None) -> str:
    kind, ctx = str(err["type"]), err.get("ctx") or {}
    if kind == "value_error":
        # pydantic prefixes messages from our validators with "Value error, ".
        return str(err["msg"]).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        field = err["loc"][-1] if err["loc"] else ""
        if field == "namespace":
            return (
                "unknown field; jobs and runtimes live in their team's namespace "
                "(Team.namespace in jobs/platform/)"
            )
        known = _fields_at(model, err["loc"])
        top = len(err["loc"]) == 1
        if top and _TTL.match(str(field)):
            ttls = sorted(k for k in known if _TTL.match(k))
            if not ttls:
                return f"unknown field; {_no_ttl(model)}"
            return f"unknown field; did you mean {ttls[0]!r}?"
        if top and str(field) in _ROLE_NAMES and model is not None:
            return f"unknown field; {_roles_of(model)}"
        not_carried: dict[str, str] = getattr(model, "NOT_CARRIED", {})
        if top and str(field) in not_carried:
            return not_carried[str(field)]
        close = difflib.get_close_matches(str(field), sorted(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "see schemas/ for the allowed fields"
        return f"unknown field; {hint}"
    if kind in _PLAIN:
        return _PLAIN[kind]
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}"
    if kind == "literal_error":
        expected = str(ctx.get("expected"))
        one = "'" not in expected[1:-1]  # a single quoted value
        return f"must be {expected}" if one else f"must be one of {expected}"
    if kind in ("string_too_short", "too_short") and ctx.get("min_length") == 1:
        return "must not be empty"
    return str(err["msg"])


# difflib's closest field to ttl_seconds is deadline_seconds, whose meaning is the opposite
# (it fails a job that runs too long): kinds without a TTL say why instead.
_TTL = re.compile(r"(ttl|ttl_.*|.*_ttl|.*_after_finish(ed)?)\Z")


def _no_ttl(model: type[Any] | None) -> str:
    kind = f"{model.__name__}s" if model is not None else "jobs of this kind"
    return (
        f"{kind} have no TTL: a finished job stays until its file is removed, since Argo CD's "
        "self-heal would create a job deleted by a TTL again and run it a second time "
        "(deadline_seconds is another thing: it fails a job that runs too long)"
    )


def _fields_at(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> set[str]:
    """The field names of the model at ``loc``'s parent (nested models followed)."""
    current: type[Any] | None = model
    for part in loc[:-1]:
        if current is None:
            return set()
        if isinstance(part, int) or part not in current.model_fields:
            continue
        current = _model_in(current.model_fields[part].annotation)
    return set(current.model_fields) if current is not None else set()


def _model_in(annotation: Any) -> type[Any] | None:
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None
