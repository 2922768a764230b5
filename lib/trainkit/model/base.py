"""The base every user-facing model shares: frozen, strict about unknown fields.

Field docstrings are the descriptions in ``schemas/`` (``field_docs``).
A model that fails validation raises ``ModelError`` carrying the kind and the
object's name, so the loader can say *which* object in a file is wrong.
"""

from __future__ import annotations

import functools
import inspect
import operator
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr, ValidationError

from .field_docs import field_docstrings
from .messages import ModelError

__all__ = ["BUILT", "ModelError", "TrainkitModel", "build_validators", "by_own_field"]

BUILT: list[TrainkitModel] | None = None
"""While a definition file runs, every object it builds (so the loader can tell
which ones are bound to no name and would silently not be generated)."""


def _schema_description(schema: dict[str, Any], cls: type[Any]) -> None:
    if getattr(cls, "_plain_doc", ""):
        schema["description"] = cls._plain_doc


def _plain(tp: Any) -> Any:
    """``tp`` without ``Annotated`` metadata (validators, schema hints), for a readable hint."""
    if isinstance(tp, str):
        return tp
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated or hasattr(tp, "__metadata__"):
        return _plain(getattr(tp, "__origin__", args[0] if args else tp))
    if not args or origin is Literal:
        return tp
    parts = [_plain(a) for a in args]
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, parts)
    try:
        return origin[tuple(parts)]
    except TypeError:
        return tp


def _signature(cls: type[BaseModel]) -> inspect.Signature:
    params = []
    for name, field in cls.model_fields.items():
        if field.is_required():
            default: Any = inspect.Parameter.empty
        elif field.default_factory is not None:
            default = field.get_default(call_default_factory=True, validated_data={})
        else:
            default = field.default
        annotation = field.annotation if field.annotation is not None else Any
        params.append(
            inspect.Parameter(
                field.alias or name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=_plain(annotation),
            )
        )
    return inspect.Signature(params, return_annotation=None)


class TrainkitModel(BaseModel):
    """Base of all trainkit definition objects."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        # The docstring under each field is its description: read in
        # __pydantic_init_subclass__ (field_docs), not by use_attribute_docstrings.
        validate_default=True,
        str_strip_whitespace=False,
        json_schema_extra=_schema_description,
        defer_build=True,
    )

    kind: ClassVar[str] = ""
    _plain_doc: ClassVar[str] = ""
    # Not annotated: editors that read fields from annotations (jedi, behind IPython and
    # Jupyter) would offer it as a constructor argument.
    _defined_at = PrivateAttr(default=None)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise ModelError(type(self).__name__, data.get("name"), e, type(self)) from None
        # Remember the caller's file and line so later errors (unknown queue, …)
        # can point at the definition, not only at its file.
        caller = sys._getframe(1)
        self._defined_at = (caller.f_code.co_filename, caller.f_lineno)
        if BUILT is not None:
            BUILT.append(self)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # What use_attribute_docstrings does, from one parse of each module (field_docs):
        # before the deferred build, which puts the descriptions in the schemas.
        docs = field_docstrings(cls)
        for name, field in cls.__pydantic_fields__.items():
            if field.description is None and name in docs:
                field.description = docs[name]
        # help(PyTorchJob) and editors' hovers show the fields with their descriptions.
        # The JSON Schema keeps the plain description (see _schema_description).
        cls._plain_doc = inspect.cleandoc(cls.__doc__ or "")
        lines = [
            f"    {name}: " + field.description.replace("\n", "\n        ")
            for name, field in cls.model_fields.items()
            if field.description
        ]
        if lines and cls.__doc__:
            cls.__doc__ = cls._plain_doc + "\n\nFields:\n" + "\n".join(lines) + "\n"
        # IPython and Jupyter show inspect.signature(PyTorchJob): the fields as keyword
        # arguments with their types and defaults, not the (**data) of __init__.
        cls.__signature__ = _signature(cls)

    @classmethod
    def __pydantic_on_complete__(cls) -> None:
        super().__pydantic_on_complete__()
        # pydantic sets its own signature when the (deferred) build completes; its types
        # carry every validator. Ours again, the fields' plain types.
        cls.__signature__ = _signature(cls)

    @property
    def defined_at(self) -> tuple[str, int] | None:
        """(file, line) where the object was constructed, when known."""
        return self._defined_at

    def describe(self) -> str:
        """``Kind 'name'`` as used in error messages."""
        name = getattr(self, "name", None)
        return f"{type(self).__name__} {name!r}" if name else type(self).__name__


def by_own_field(kinds: Mapping[str, type[TrainkitModel]]) -> BeforeValidator:
    """For a union of models each of which requires a field that no other one has (``kinds``:
    that field → the model): a dict holding exactly one of those fields (as every
    definition's objects come back from its process, ``load.rebuild``) is built as that
    model, not tried against each one in turn.

    pydantic tries every member, and each member that does not fit refuses the dict with a
    ``ModelError`` whose message pydantic formats at once (closest field names and all):
    most of the time a job with volumes took to build. No other member can fit (each
    requires its own field and forbids the others'), so the object is the one the union
    makes. A dict with none or several of the fields, or that its model refuses, goes to
    the union as it is: what is wrong is said member by member, as before.
    """

    def one_kind(value: Any) -> Any:
        if isinstance(value, dict):
            found = [kind for field, kind in kinds.items() if field in value]
            if len(found) == 1:
                try:
                    return found[0](**value)
                except ModelError:
                    pass
        return value

    return BeforeValidator(one_kind)


def build_validators(
    root: type[TrainkitModel], wanted: Iterable[type[TrainkitModel]] | None = None
) -> None:
    """Build the validator of each of ``wanted`` (default: ``root`` and every subclass of it)
    not built yet, each after those of its bases and of the models its fields hold (among
    ``root``'s subclasses).

    The models defer building their validators to their first use. Built in the order they
    are first used, or in the order the subclasses are found, pydantic generated the schema of
    a held model again inside every model that holds it (Probe's 43 times, Resources' 42):
    leaves first, it takes their finished schemas instead, for about half the CPU. The
    validators are the same either way. The definitions' origin builds them all before it
    forks (``load.server``); the loader builds those of the kinds it rebuilds, on first use
    (``load.rebuild``).
    """
    classes: list[type[TrainkitModel]] = []
    seen: set[type[TrainkitModel]] = set()
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            classes.append(cls)
            todo.extend(cls.__subclasses__())
    order = {cls: i for i, cls in enumerate(classes)}
    built: set[type[TrainkitModel]] = set()

    def build(cls: type[TrainkitModel], holders: tuple[type[TrainkitModel], ...]) -> None:
        if cls in built or cls in holders:  # a model that holds itself, at any depth
            return
        built.add(cls)
        if cls.__pydantic_complete__:
            return
        held: set[type[TrainkitModel]] = {b for b in cls.__mro__[1:] if b in seen}
        for info in cls.__pydantic_fields__.values():
            _models_in(info.annotation, seen, held)
        for inner in sorted(held - built, key=order.__getitem__):
            build(inner, (*holders, cls))
        cls.model_rebuild()

    for cls in classes if wanted is None else wanted:
        build(cls, ())


def _models_in(
    annotation: object, models: set[type[TrainkitModel]], found: set[type[TrainkitModel]]
) -> None:
    """Add to ``found`` each of ``models`` that ``annotation`` names, at any depth
    (``list[Volume]``, ``Role | None``, ``Annotated[...]``)."""
    if isinstance(annotation, type) and annotation in models:
        found.add(annotation)
    for arg in get_args(annotation):
        _models_in(arg, models, found)
