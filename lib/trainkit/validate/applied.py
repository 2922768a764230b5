"""The gate judges what Argo CD applies: each build equals the objects trainkit rendered.

Policy and validation judge the objects trainkit renders; Argo CD applies the objects
of each ``kustomize build``, decoded as ``argo_decode`` does. Whatever makes the two
differ (a file that holds more than trainkit wrote into it, a header whose comment a
YAML reader ends early, a string a reader takes for something else) would be a way
around the gate. So for every kustomization directory built, the objects of the files
it lists (recursively, through the directories it lists) must be exactly the decoded
build: object for object, value for value, in any order.

kustomize may legitimately change objects only through what a kustomization says
(``namespace:``, ``namePrefix:``, patches, generators, ...). trainkit writes none of
those: ``configurations:`` and ``openapi:`` only teach kustomize the CRD fields, and
change nothing without a transformer. A kustomization with any other field is
refused here rather than compared approximately. Field order and document order are
free (objects are matched as JSON values); numbers are compared as Argo CD's JSON
holds them (``2.0`` is the integer 2).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from trainkit.errors import Problem
from trainkit.validate.argo_decode import (
    Decoded,
    DecodeError,
    canonical_json,
    decode_build,
    decode_documents,
)
from trainkit.validate.check import describe_object
from trainkit.validate.documents import InputLimitError
from trainkit.validate.files import validated_key

__all__ = ["Planned", "compare_build", "matches_build", "planned_objects"]

Planned = Mapping[str, Sequence[dict[str, Any]]]
"""The objects each file of the tree must give Argo CD, by path relative to the tree."""

_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Fields that change no object (without a transformer, which is refused).
_INERT = frozenset({"apiVersion", "kind", "resources", "configurations", "openapi"})
_Identity = tuple[str, str, str, str]


def planned_objects(
    rendered: Mapping[str, dict[str, Any]],
    files: Mapping[str, bytes],
    kept: Collection[str] = (),
) -> dict[str, list[dict[str, Any]]]:
    """What each generated file must give Argo CD: the object trainkit rendered for it.

    A file in ``kept`` holds its deployed bytes (``deployed.keep_deployed``: an unchanged
    job keeps what is running). It must give exactly one object, the rendered one's
    apiVersion, kind, namespace and name; then that object is what the build must hold
    (it is deployed already). Otherwise the rendered object is expected, and the
    comparison names the difference.
    """
    planned: dict[str, list[dict[str, Any]]] = {path: [body] for path, body in rendered.items()}
    for path in kept:
        data = files.get(path)
        body = rendered.get(path)
        if data is None or body is None:
            continue
        try:
            objects = decode_build(data)
        except (DecodeError, InputLimitError):
            continue
        if len(objects) == 1 and _identity(objects[0].body) == _identity(body):
            planned[path] = [objects[0].body]
    return planned


def compare_build(
    directory: Path,
    out_dir: Path,
    decoded: Sequence[Decoded],
    planned: Planned,
    *,
    shown: str,
    origins: Callable[[Path], tuple[bytes, str] | None] | None = None,
    keys: Sequence[str] | None = None,
) -> list[Problem]:
    """Problems where the decoded build of ``directory`` is not the planned objects.

    ``shown`` is how messages name the tree (``generated``); ``origins``, called with the
    directory only when an object is extra, returns the build with kustomize's origin
    annotations (``build.origin_build``) to name the file it came from. ``keys``: the
    ``canonical_json`` of each decoded object, when the caller has them already.
    """
    expected, problems = _expected(directory, out_dir, planned, shown)
    unmatched: list[Decoded] = []
    for i, d in enumerate(decoded):
        key = keys[i] if keys is not None else _canonical(d.body)
        bucket = expected.get(key)
        if bucket:
            bucket.pop()
            if not bucket:
                del expected[key]
        else:
            unmatched.append(d)
    if not unmatched and not expected:
        return problems
    return problems + _explain(directory, out_dir, shown, unmatched, expected, origins)


def matches_build(
    directory: Path, out_dir: Path, digests: Sequence[str], planned: Planned, shown: str
) -> list[Problem] | None:
    """``compare_build``'s problems when the build's objects, given by the digest of each
    one's ``canonical_json`` (``files.validated_key``), are exactly the planned ones (then
    they are only the kustomization's own, if any); None when they are not, for
    ``compare_build`` to explain with the objects."""
    expected, problems = _expected(directory, out_dir, planned, shown)
    counts: dict[str, int] = {}
    for key, bucket in expected.items():
        digest = validated_key(key)
        counts[digest] = counts.get(digest, 0) + len(bucket)
    for key in digests:
        left = counts.get(key)
        if not left:
            return None
        counts[key] = left - 1
    return problems if not any(counts.values()) else None


def _expected(
    directory: Path, out_dir: Path, planned: Planned, shown: str
) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], list[Problem]]:
    """The planned objects of the files the build of ``directory`` holds, by their
    ``canonical_json``; and the problems of its kustomizations."""
    files, problems = _listed(directory, out_dir, shown, set())
    expected: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for rel in files:
        objects = planned.get(rel)
        if objects is None:
            problems.append(
                Problem(
                    file=f"{shown}/{rel}",
                    message=f"is listed by the kustomization of {_dir(directory, out_dir, shown)} "
                    "but trainkit did not write it; Argo CD would apply whatever it holds: "
                    "remove it and run the synth command",
                )
            )
            continue
        for obj in objects:
            expected.setdefault(_canonical(obj), []).append((rel, obj))
    return expected, problems


def _explain(
    directory: Path,
    out_dir: Path,
    shown: str,
    unmatched: list[Decoded],
    expected: dict[str, list[tuple[str, dict[str, Any]]]],
    origins: Any,
) -> list[Problem]:
    """The slow path, only when something differs: pair objects by identity, forgive what
    JSON does not tell apart (``2.0`` and ``2``), and say what differs where."""
    build = f"the kustomize build of {_dir(directory, out_dir, shown)}"
    missing: dict[_Identity | None, list[tuple[str, dict[str, Any]]]] = {}
    for bucket in expected.values():
        for rel, obj in bucket:
            missing.setdefault(_identity(obj), []).append((rel, obj))
    problems: list[Problem] = []
    extra: list[Decoded] = []
    for d in unmatched:
        candidates = missing.get(_identity(d.body), [])
        if not candidates:
            extra.append(d)
            continue
        rel, obj = candidates.pop()
        if _go_canonical(obj) == _go_canonical(d.body):
            continue
        path, want, got = _first_difference(obj, d.body)
        problems.append(
            Problem(
                file=f"{shown}/{rel}",
                obj=describe_object(obj),
                field=path,
                message=f"{build}, as Argo CD decodes it, holds {_show(got)} where trainkit "
                f"rendered {_show(want)}: what Argo CD applies is not what policy judged; "
                "run the synth command (a generated file was edited, or trainkit wrote "
                "what its readers take otherwise: report it)",
            )
        )
    for bucket in missing.values():
        for rel, obj in bucket:
            problems.append(
                Problem(
                    file=f"{shown}/{rel}",
                    obj=describe_object(obj),
                    message=f"trainkit rendered this object, but {build}, as Argo CD "
                    f"decodes it, does not hold it: Argo CD would not apply it (and would "
                    "prune a deployed one); run the synth command",
                )
            )
    if extra:
        where: dict[_Identity | None, str] = {}
        if origins is not None:
            where.update(_origins(directory, out_dir, shown, origins))
        for d in extra:
            of = d.document if d.document is not None else d.body
            file = where.get(_identity(of)) or _dir(directory, out_dir, shown)
            problems.append(
                Problem(
                    file=file,
                    obj=describe_object(d.body),
                    line=None,
                    message=f"is in {build}, as Argo CD decodes it, but trainkit did not "
                    "render it: no object may reach a cluster that policy did not see; "
                    "remove it (run the synth command), and report how it got there if "
                    "the synth command wrote it",
                )
            )
    return problems


def _listed(
    directory: Path, out_dir: Path, shown: str, seen: set[Path]
) -> tuple[list[str], list[Problem]]:
    """Files (relative to ``out_dir``) whose objects the build of ``directory`` holds."""
    real = directory.resolve()
    if real in seen:
        return [], []
    seen.add(real)
    kustomization = next(
        (directory / n for n in _KUSTOMIZATIONS if (directory / n).is_file()), None
    )
    if kustomization is None:
        return [], [
            Problem(file=_dir(directory, out_dir, shown), message="has no kustomization file")
        ]
    where = f"{shown}/{_rel(kustomization, out_dir)}"
    try:
        docs = [value for _, _, value in decode_documents(kustomization.read_bytes())]
    except (OSError, DecodeError, InputLimitError) as err:
        return [], [Problem(file=where, message=f"cannot be read: {err}")]
    data = docs[0] if len(docs) == 1 else None
    if not isinstance(data, dict):
        return [], [Problem(file=where, message="is not one kustomization document")]
    problems = [
        Problem(
            file=where,
            field=str(key),
            message="may change the objects kustomize builds, so the build cannot be "
            "compared with what trainkit rendered (trainkit writes no such field); put "
            "overlays outside the generated tree",
        )
        for key in data
        if key not in _INERT and key != "components"
    ]
    for entry in data.get("components") or []:
        problems += _inert_component(directory, entry, out_dir, shown, where)
    files: list[str] = []
    for entry in data.get("resources") or []:
        if not isinstance(entry, str):
            problems.append(Problem(file=where, field="resources", message=f"{entry!r} is no path"))
            continue
        path = Path(os.path.normpath(directory / entry))
        rel = _rel(path, out_dir)
        if rel is None:
            problems.append(
                Problem(
                    file=where,
                    field="resources",
                    message=f"{entry!r} lies outside {shown}/: not compared; the generated "
                    "tree may list only its own files",
                )
            )
        elif path.is_dir():
            more, found = _listed(path, out_dir, shown, seen)
            files += more
            problems += found
        else:
            files.append(rel)
    return files, problems


def _inert_component(
    directory: Path, entry: object, out_dir: Path, shown: str, where: str
) -> list[Problem]:
    """Problems of a component a kustomization lists: trainkit's own teach kustomize the CRD
    fields (``configurations``, ``openapi``) and change no object; anything else may."""
    if not isinstance(entry, str):
        return [Problem(file=where, field="components", message=f"{entry!r} is no path")]
    path = Path(os.path.normpath(directory / entry))
    if _rel(path, out_dir) is None:
        return [
            Problem(
                file=where,
                field="components",
                message=f"{entry!r} lies outside {shown}/: not compared; the generated "
                "tree may list only its own files",
            )
        ]
    kustomization = next((path / n for n in _KUSTOMIZATIONS if (path / n).is_file()), None)
    shown_path = f"{shown}/{_rel(path, out_dir)}"
    if kustomization is None:
        return [
            Problem(
                file=shown_path, message="is listed as a component but has no kustomization file"
            )
        ]
    try:
        docs = [value for _, _, value in decode_documents(kustomization.read_bytes())]
    except (OSError, DecodeError, InputLimitError) as err:
        return [Problem(file=shown_path, message=f"cannot be read: {err}")]
    data = docs[0] if len(docs) == 1 else None
    if not isinstance(data, dict) or data.get("kind") != "Component":
        return [
            Problem(file=shown_path, message="is listed as a component but is not one Component")
        ]
    return [
        Problem(
            file=f"{shown}/{_rel(kustomization, out_dir)}",
            field=str(key),
            message="may change the objects kustomize builds, so the build cannot be "
            "compared with what trainkit rendered (trainkit's components only teach kustomize "
            "the CRD fields); put overlays outside the generated tree",
        )
        for key in data
        if key not in _INERT or key == "resources"
    ]


def _origins(
    directory: Path,
    out_dir: Path,
    shown: str,
    origins: Callable[[Path], tuple[bytes, str] | None],
) -> dict[_Identity | None, str]:
    """The file each object of the build came from, by identity (kustomize's own word)."""
    built = origins(directory)
    if built is None:
        return {}
    out, base = built
    found: dict[_Identity | None, str] = {}
    try:
        objects = decode_build(out)
    except (DecodeError, InputLimitError):
        return {}
    for d in objects:
        if d.document is not None:
            continue
        meta = d.body.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        origin = annotations.pop("config.kubernetes.io/origin", None) if annotations else None
        if isinstance(meta, dict) and isinstance(annotations, dict) and not annotations:
            del meta["annotations"]
        if not isinstance(origin, str):
            continue
        path = _origin_path(origin)
        if path is None:
            continue
        # The origin is relative to the kustomization that built with annotations.
        rel = _rel(Path(os.path.normpath(os.path.join(base, path))), out_dir)
        key = _identity(d.body)
        if rel is not None and key is not None:
            found[key] = f"{shown}/{rel}"
    return found


def _origin_path(origin: str) -> str | None:
    for line in origin.splitlines():
        if line.startswith("path: "):
            try:
                value = json.loads(line[6:]) if line[6:].startswith('"') else line[6:]
            except ValueError:
                return None
            return str(value)
    return None


def _rel(path: Path, out_dir: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(out_dir))).as_posix()
    except ValueError:
        return None


def _dir(directory: Path, out_dir: Path, shown: str) -> str:
    rel = _rel(directory, out_dir)
    return f"{shown}/{rel}" if rel not in (None, ".") else shown


def _identity(doc: dict[str, Any]) -> _Identity | None:
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    parts = (doc.get("apiVersion"), doc.get("kind"), meta.get("namespace") or "", meta.get("name"))
    if not all(isinstance(p, str) for p in parts):
        return None
    return (str(parts[0]), str(parts[1]), str(parts[2]), str(parts[3]))


_canonical = canonical_json


def _go(value: Any) -> Any:
    """``value`` as Argo CD's JSON holds it: an integral float in int64 is an integer."""
    if isinstance(value, dict):
        return {k: _go(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_go(v) for v in value]
    if isinstance(value, float) and value.is_integer() and -(2**63) <= value < 2**63:
        return int(value)
    return value


def _go_canonical(obj: Any) -> str:
    return _canonical(_go(obj))


def _first_difference(want: Any, got: Any, path: str = "") -> tuple[str, Any, Any]:
    """The first JSON path (in key order) where ``want`` and ``got`` differ."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got), key=str):
            here = f"{path}.{key}" if path else str(key)
            if key not in want:
                return here, _ABSENT, got[key]
            if key not in got:
                return here, want[key], _ABSENT
            if _go_canonical(want[key]) != _go_canonical(got[key]):
                return _first_difference(want[key], got[key], here)
        return path, want, got
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            if _go_canonical(a) != _go_canonical(b):
                return _first_difference(a, b, f"{path}[{i}]")
    return path, want, got


class _Absent:
    def __repr__(self) -> str:
        return "nothing"


_ABSENT = _Absent()


def _show(value: Any) -> str:
    text = repr(value) if value is _ABSENT else json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 120 else text[:117] + "..."
