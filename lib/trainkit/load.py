"""Find definition files under ``jobs/``, import each in isolation, collect trainkit objects.

Every module-level value that is a definition object (or a list/tuple of them)
is collected; nothing is registered behind the user's back. The team is the
first directory under ``jobs/``; platform objects live in ``jobs/platform/``.
Directories named ``scripts`` (and ``_*``/``.*``) hold training code and data,
not definitions, and are never imported.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from .errors import DefinitionError, Problem, TrainkitError
from .model import JOB_KINDS, PLATFORM_KINDS, PyTorchJob, TrainJob, TrainkitModel

__all__ = ["PLATFORM_DIR", "Definition", "definition_files", "load_file", "load_jobs"]

# Characters YAML cannot carry in a ConfigMap value (tab, newline, CR are fine).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
PLATFORM_DIR = "platform"
# Kubernetes keeps a ConfigMap under 1 MiB; leave room for metadata.
MAX_SCRIPT_BYTES = 1_000_000
_SKIP_DIRS = {"scripts", "__pycache__"}


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

    @property
    def where(self) -> tuple[str, int | None]:
        return self.file, self.line


def definition_files(jobs_dir: Path) -> list[Path]:
    """Every definition file under ``jobs_dir``, sorted so output never depends on FS order."""
    out = []
    for path in jobs_dir.rglob("*.py"):
        rel = path.relative_to(jobs_dir)
        if any(p in _SKIP_DIRS or p.startswith(("_", ".")) for p in rel.parts[:-1]):
            continue
        if rel.name.startswith("_"):
            continue
        out.append(path)
    return sorted(out, key=lambda p: p.relative_to(jobs_dir).as_posix())


def load_jobs(
    jobs_dir: Path, root: Path | None = None, *, only: Collection[str] | None = None
) -> list[Definition]:
    """Load every definition under ``jobs_dir``; raise one DefinitionError with all problems.

    Paths in messages and manifests are relative to ``root``, by default the
    directory holding ``jobs/`` (the repository), so they never depend on the
    working directory. ``only`` limits the load to those directories under
    ``jobs_dir`` (e.g. ``{PLATFORM_DIR}``).
    """
    jobs_dir = jobs_dir.resolve()
    root = (root or jobs_dir.parent).resolve()
    if not jobs_dir.is_dir():
        raise DefinitionError(
            [Problem(file=_rel(jobs_dir, root), message="directory not found; pass --jobs DIR")]
        )
    defs: list[Definition] = []
    problems: list[Problem] = []
    for path in definition_files(jobs_dir):
        if only is not None and path.relative_to(jobs_dir).parts[0] not in only:
            continue
        try:
            # Already absolute and resolved: resolving 3 paths per file costs 0.1 s per 1,000.
            defs.extend(_load_resolved(path, root, jobs_dir))
        except DefinitionError as e:
            problems.extend(e.problems)
    if problems:
        raise DefinitionError(problems)
    return defs


def load_file(
    path: Path, root: Path | None = None, *, jobs_dir: Path | None = None
) -> list[Definition]:
    """Import one definition file and return its objects (placement rules checked)."""
    path = path.resolve()
    jobs_dir = (jobs_dir or _guess_jobs_dir(path)).resolve()
    root = (root or jobs_dir.parent).resolve()
    return _load_resolved(path, root, jobs_dir)


def _load_resolved(path: Path, root: Path, jobs_dir: Path) -> list[Definition]:
    rel = _rel(path, root)
    parts = path.relative_to(jobs_dir).parts
    if len(parts) < 2:
        raise DefinitionError(
            [
                Problem(
                    file=rel,
                    message="definitions belong in jobs/<team>/ or jobs/platform/; "
                    "move this file into a team directory",
                )
            ]
        )
    team = parts[0]
    objects = _exec(path, rel)
    problems: list[Problem] = []
    out: list[Definition] = []
    for obj in objects:
        line = _line_in(obj, path)
        is_platform = isinstance(obj, PLATFORM_KINDS)
        if is_platform and team != PLATFORM_DIR:
            problems.append(
                Problem(
                    file=rel,
                    line=line,
                    obj=obj.describe(),
                    message=f"platform objects belong in jobs/{PLATFORM_DIR}/; move it there",
                )
            )
            continue
        if not is_platform and team == PLATFORM_DIR:
            problems.append(
                Problem(
                    file=rel,
                    line=line,
                    obj=obj.describe(),
                    message="jobs belong in jobs/<team>/, not in the platform "
                    "directory; move it to its team's directory",
                )
            )
            continue
        try:
            files = _read_scripts(obj, path, rel, line)
        except DefinitionError as e:
            problems.extend(e.problems)
            continue
        out.append(Definition(obj=obj, file=rel, team=team, line=line, files=files))
    if problems:
        raise DefinitionError(problems)
    return out


def _guess_jobs_dir(path: Path) -> Path:
    for parent in path.resolve().parents:
        if parent.name == "jobs":
            return parent
    raise DefinitionError([Problem(file=str(path), message="not inside a jobs/ directory")])


def _exec(path: Path, rel: str) -> list[TrainkitModel]:
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DefinitionError([Problem(file=rel, message=f"cannot read: {e}")]) from None
    namespace: dict[str, object] = {"__name__": f"trainkit_jobs.{path.stem}", "__file__": str(path)}
    try:
        code = compile(source, str(path), "exec")
        exec(code, namespace)
    except SyntaxError as e:
        raise DefinitionError(
            [Problem(file=rel, line=e.lineno, message=f"syntax error: {e.msg}")]
        ) from None
    except TrainkitError as e:
        line = _line_from_tb(e.__traceback__, path)
        raise DefinitionError(
            [
                Problem(file=rel, line=line, obj=p.obj, field=p.field, message=p.message)
                for p in e.problems
            ]
        ) from None
    except Exception as e:  # any error in user code is the user's to fix
        line = _line_from_tb(e.__traceback__, path)
        raise DefinitionError(
            [
                Problem(
                    file=rel,
                    line=line,
                    message=f"{type(e).__name__} while importing the definition: {e}",
                )
            ]
        ) from None
    return list(_collect(namespace))


def _collect(namespace: dict[str, object]) -> Iterator[TrainkitModel]:
    seen: set[int] = set()
    kinds = PLATFORM_KINDS + JOB_KINDS
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            if isinstance(item, kinds) and id(item) not in seen:
                seen.add(id(item))
                yield item


def _read_scripts(obj: TrainkitModel, path: Path, rel: str, line: int | None) -> dict[str, str]:
    if not isinstance(obj, PyTorchJob | TrainJob) or obj.script is None:
        return {}
    script_path = path.parent / obj.script.path

    def problem(message: str) -> DefinitionError:
        return DefinitionError(
            [Problem(file=rel, line=line, obj=obj.describe(), field="script.path", message=message)]
        )

    try:
        data = script_path.read_bytes()
    except OSError:
        raise problem(
            f"{obj.script.path!r} not found next to the definition (looked for "
            f"{script_path.as_posix()}); paths are relative to the definition file"
        ) from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise problem(
            f"{obj.script.path!r} is {len(data)} bytes; a ConfigMap holds at most 1 MiB. "
            "Bake large code into the image and use command=[...]"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise problem(
            f"{obj.script.path!r} is not UTF-8 text; ship binaries in the image"
        ) from None
    bad = sorted(set(_CONTROL.findall(text)))
    if bad:
        raise problem(
            f"{obj.script.path!r} contains control characters ({', '.join(map(repr, bad))}) "
            "that YAML cannot carry; remove them"
        )
    return {obj.script.filename: text}


def _line_in(obj: TrainkitModel, path: Path) -> int | None:
    # The file was compiled under str(path), so its frames carry exactly that name.
    at = obj.defined_at
    return at[1] if at and at[0] == str(path) else None


def _line_from_tb(tb: TracebackType | None, path: Path) -> int | None:
    target = str(path)
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == target:
            line = lineno
    return line


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
