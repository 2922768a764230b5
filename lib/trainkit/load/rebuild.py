"""From the bytes a definition process returned to validated objects.

The bytes come from code nobody reviewed yet, so nothing in them is taken
on trust: they are parsed as JSON, every object is rebuilt through trainkit's
own models with full validation, its kind is the one the data declares (and
must be one trainkit knows), and where it came from — file and team — is what
the loader asked for, not what the data says. Scripts are read here, by the
loader, from inside ``jobs/`` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problem
from ..kube.text import YAML_UNPRINTABLE, text_value_problem
from ..model import JOB_KINDS, PLATFORM_KINDS, ModelError, TrainkitModel
from ..model.base import build_validators
from .discover import PLATFORM_DIR, DefinitionFile, inside, shown
from .working_dir_files import WorkingDirError, read_working_dir

__all__ = ["Definition", "Rebuilt", "rebuild"]

KINDS: Mapping[str, type[TrainkitModel]] = {c.__name__: c for c in PLATFORM_KINDS + JOB_KINDS}
# Kubernetes keeps a ConfigMap under 1 MiB; leave room for metadata.
MAX_SCRIPT_BYTES = 1_000_000


@dataclass(frozen=True)
class Definition:
    """One collected object and where it came from."""

    obj: TrainkitModel
    file: str
    """Path of the definition file relative to the repository root (posix)."""
    team: str
    """Directory under ``jobs/`` (``platform`` for platform objects)."""
    line: int | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    """Script file name → content, for objects that ship a script."""
    working_dir: Mapping[str, str] = field(default_factory=dict)
    """A RayJob's repository ``runtime_env.working_dir``: path inside it → content."""
    fields: Mapping[str, int] = field(default_factory=dict)
    """Keyword argument → the line it is written on, where known."""

    @property
    def where(self) -> tuple[str, int | None]:
        return self.file, self.line

    def line_of(self, field: str) -> int | None:
        """The line of the keyword holding ``field`` (``resources.gpu`` → ``resources=``)."""
        top = field.split(".", 1)[0].split("[", 1)[0]
        return self.fields.get(top, self.line)


@dataclass(frozen=True)
class Rebuilt:
    definitions: list[Definition]
    problems: list[Problem]
    imports: list[str]
    """Files of the modules the definition imported (for the cache key)."""


def rebuild(payload: bytes, df: DefinitionFile, jobs_dir: Path, root: Path, memory: int) -> Rebuilt:
    """The objects of one file's payload, or the problems that stop them."""
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        return Rebuilt([], [_garbled(df)], [])
    problems = [_problem(df, p, memory) for p in _list(data.get("problems"))]
    if any(p is None for p in problems):
        return Rebuilt([], [_garbled(df)], [])
    out: list[Definition] = []
    found: list[Problem] = [p for p in problems if p is not None]
    for item in _list(data.get("objects")):
        made = _object(item, df, jobs_dir, root)
        if isinstance(made, Definition):
            out.append(made)
        else:
            found.extend(made)
    imports = [i for i in _list(data.get("imports")) if isinstance(i, str)]
    return Rebuilt(out, found, imports)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _garbled(df: DefinitionFile) -> Problem:
    return Problem(
        file=df.rel,
        message="the definition's process returned data trainkit cannot read (it may have "
        "replaced trainkit's own code); define objects with trainkit's classes only",
    )


def _problem(df: DefinitionFile, raw: object, memory: int) -> Problem | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("message"), str):
        return None
    line = raw.get("line")
    message = raw["message"]
    if raw.get("error") == "MemoryError":
        message = (
            f"used more than the {memory >> 20} MiB of memory a definition may use "
            "(--load-memory); a definition only builds objects"
        )
    obj, field = raw.get("obj"), raw.get("field")
    return Problem(
        file=df.rel,
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        obj=obj if isinstance(obj, str) else "",
        field=field if isinstance(field, str) else "",
        message=message,
    )


def _object(
    item: object, df: DefinitionFile, jobs_dir: Path, root: Path
) -> Definition | list[Problem]:
    if not isinstance(item, dict) or not isinstance(item.get("data"), dict):
        return [_garbled(df)]
    kind, data, line = item.get("kind"), item["data"], item.get("line")
    line = line if isinstance(line, int) and not isinstance(line, bool) else None
    raw_fields = item.get("fields")
    fields = {
        k: v
        for k, v in (raw_fields.items() if isinstance(raw_fields, dict) else ())
        if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
    }
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return [_garbled(df)]
    if not cls.__pydantic_complete__:
        # Leaves first: in the order first used, held models' schemas were generated again
        # inside each model holding them (about twice the CPU).
        build_validators(TrainkitModel, [cls])
    try:
        obj = cls(**data)
    except ModelError as e:
        return [
            Problem(
                file=df.rel, line=fields.get(p.field.split(".")[0], line), obj=p.obj,
                field=p.field, message=p.message,
            )
            for p in e.problems
        ]  # fmt: skip
    is_platform = isinstance(obj, PLATFORM_KINDS)
    where = shown(jobs_dir, root)
    if is_platform != (df.team == PLATFORM_DIR):
        message = (
            f"platform objects belong in {where}/{PLATFORM_DIR}/; move it there"
            if is_platform
            else f"jobs belong in {where}/<team>/, not in the platform directory; move it to "
            "its team's directory"
        )
        return [Problem(file=df.rel, line=line, obj=obj.describe(), message=message)]
    try:
        scripts = _scripts(obj, df, jobs_dir, root)
    except _ScriptError as e:
        return [
            Problem(
                file=df.rel, line=fields.get("script", line), obj=obj.describe(),
                field="script.path", message=str(e),
            )
        ]  # fmt: skip
    try:
        shipped = _working_dir(obj, df, jobs_dir, root)
    except WorkingDirError as e:
        return [
            Problem(
                file=df.rel, line=fields.get("runtime_env", line), obj=obj.describe(),
                field="runtime_env.working_dir", message=str(e),
            )
        ]  # fmt: skip
    return Definition(
        obj=obj, file=df.rel, team=df.team, line=line, files=scripts, fields=fields,
        working_dir=shipped,
    )  # fmt: skip


def _working_dir(
    obj: TrainkitModel, df: DefinitionFile, jobs_dir: Path, root: Path
) -> dict[str, str]:
    env = getattr(obj, "runtime_env", None)
    if not isinstance(obj, JOB_KINDS) or env is None or env.local_dir is None:
        return {}
    return read_working_dir(
        df.path.parent / env.local_dir, env.local_dir, jobs_dir, root, list(env.excludes)
    )


class _ScriptError(Exception):
    pass


def _scripts(obj: TrainkitModel, df: DefinitionFile, jobs_dir: Path, root: Path) -> dict[str, str]:
    if not isinstance(obj, JOB_KINDS) or obj.script is None:
        return {}
    name = obj.script.path
    path = df.path.parent / name
    real = path.resolve()
    if not inside(real, jobs_dir):
        raise _ScriptError(
            f"{name!r} resolves to {real.as_posix()}, outside {shown(jobs_dir, root)}/; "
            "a script must be a file inside it (symbolic links are followed)"
        )
    try:
        data = real.read_bytes()
    except OSError:
        raise _ScriptError(
            f"{name!r} not found next to the definition (looked for "
            f"{shown(real, root)}); paths are relative to the definition file"
        ) from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise _ScriptError(
            f"{name!r} is {len(data)} bytes; a ConfigMap holds at most 1 MiB. "
            "Bake large code into the image and use command=[...]"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _ScriptError(f"{name!r} is not UTF-8 text; ship binaries in the image") from None
    bad = sorted(set(YAML_UNPRINTABLE.findall(text)))
    if bad:
        raise _ScriptError(
            f"{name!r} contains control characters ({', '.join(map(repr, bad))}) "
            "that YAML cannot carry; remove them"
        )
    why = text_value_problem(text)
    if why is not None:
        raise _ScriptError(f"{name!r} {why}")
    return {obj.script.filename: text}
