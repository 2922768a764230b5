"""Validating manifest files and directories (what ``trainkit validate PATH...`` runs).

Directories are walked for ``*.yaml``/``*.yml``; files a ``kustomization.yaml``
in the same directory names as patches or configurations are skipped,
because a strategic-merge patch is a fragment that would fail every required-
field check although kustomize applies it correctly.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from trainkit.deployed.baseline import Baseline
from trainkit.errors import Problem
from trainkit.validate.argo_decode import Decoded, canonical_json
from trainkit.validate.check import check_object, describe_object
from trainkit.validate.crds import CrdSet
from trainkit.validate.documents import InputLimitError, iter_documents, line_of, load_all
from trainkit.validate.findings import Finding, format_path
from trainkit.validate.pod_security import BASELINE, PodAllowance

__all__ = [
    "NOT_MANIFEST_GROUPS",
    "validate_decoded",
    "validate_paths",
    "validate_text",
    "validated_key",
]

_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
NOT_MANIFEST_GROUPS = frozenset({"kustomize.config.k8s.io"})
"""API groups of files that configure a tool and are never sent to a cluster."""
_Identity = tuple[str, str, str, str]


def validate_paths(
    paths: list[Path],
    crds: CrdSet | None,
    root: Path,
    *,
    allowance: PodAllowance = BASELINE,
    baseline: Baseline | None = None,
    seen: set[str] | None = None,
    known: Mapping[Path, tuple[bytes, Sequence[dict[str, Any]]]] | None = None,
) -> list[Problem]:
    """Problems of every manifest under ``paths``; ``crds=None`` runs only the object rules.

    ``seen``, when given, receives every object validated (see ``validate_text``).

    ``known`` maps a file (its absolute path as a walk of ``paths`` finds it) to the bytes
    trainkit wrote into it and the objects it rendered for them (``check``: the objects each
    build must hold, ``applied.planned_objects``). A file holding exactly those bytes is not
    parsed: its objects are validated as rendered, and only when they have problems is the
    file read, to validate what it says with its lines.

    ``allowance`` is what pod templates may be granted (``BASELINE`` unless the
    caller knows the platform's NetworkProfiles). With a ``baseline``, each
    object of a file that differs from its deployed version is validated as an
    update of the deployed object, so CEL transition rules (``self == oldSelf``:
    "field is immutable") run too.
    """
    problems: list[Problem] = []
    root = root.resolve()
    files: list[Path] = []
    for path in paths:
        if not path.exists():
            problems.append(Problem(file=_shown(path, root), message="no such file or directory"))
            continue
        files.extend(_yaml_files(path) if path.is_dir() else [path])
    read: dict[Path, bytes] = {}
    for file in files:
        try:
            data = file.read_bytes()
            if not data.isascii():  # (no copy for the common case)
                data.decode("utf-8")  # libyaml would guess UTF-16 too; Kubernetes reads UTF-8
        except (OSError, UnicodeDecodeError) as err:
            problems.append(Problem(file=_shown(file, root), message=f"cannot read: {err}"))
            continue
        read[file] = data
    # An unchanged file cannot break a transition rule: only the changed ones are compared.
    deployed = _deployed(read, baseline)
    for file, data in read.items():
        old_text = deployed.get(file)
        written = known.get(file) if known is not None else None
        if written is not None and written[0] == data:
            clean = _validate_rendered(written[1], crds, allowance, old_text, seen)
            if clean:
                continue
        problems.extend(
            validate_text(
                data, _shown(file, root), crds, allowance=allowance, old_text=old_text, record=seen
            )
        )
    return sorted(problems, key=lambda p: (p.file, p.line or 0, p.obj, p.field, p.message))


def validated_key(canonical: str) -> str:
    """What ``seen`` sets hold for an object: a digest of its ``canonical_json`` (a tree of
    10,000 jobs would otherwise keep the JSON of every object)."""
    return hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _validate_rendered(
    objects: Sequence[dict[str, Any]],
    crds: CrdSet | None,
    allowance: PodAllowance,
    old_text: bytes | None,
    record: set[str] | None,
) -> bool:
    """Whether the rendered ``objects`` of a file have no findings; if so, each is recorded
    in ``record`` as validated."""
    olds = _objects_by_identity(old_text) if old_text is not None and crds is not None else {}
    for obj in objects:
        if _check_document(obj, crds, allowance, olds):
            return False
    if record is not None:
        record.update(validated_key(canonical_json(obj)) for obj in objects)
    return True


def validate_text(
    text: str | bytes,
    file: str,
    crds: CrdSet | None,
    *,
    allowance: PodAllowance = BASELINE,
    old_text: str | bytes | None = None,
    record: set[str] | None = None,
    seen: set[str] | None = None,
) -> list[Problem]:
    """Problems of every manifest in a multi-document YAML text (e.g. kustomize output).

    ``record`` receives the ``validated_key`` of each document checked; a document whose
    key is in ``seen`` is skipped (it was validated already, and would only
    repeat its problems).

    ``old_text`` is the deployed version: an object in it with the same
    apiVersion, kind, namespace and name is the ``oldSelf`` of the CRD rules.
    Documents are parsed one at a time; line numbers are looked up only for
    the documents that have problems.
    """
    olds = _objects_by_identity(old_text) if old_text is not None and crds is not None else {}
    problems: list[Problem] = []
    try:
        for node, doc in iter_documents(text):
            if not isinstance(doc, dict) or "kind" not in doc:
                continue  # not a Kubernetes object (e.g. a kustomize configurations file)
            if record is not None or seen is not None:
                canonical = validated_key(canonical_json(doc))
                if seen is not None and canonical in seen:
                    continue
                if record is not None:
                    record.add(canonical)
            for finding, obj in _check_document(doc, crds, allowance, olds):
                problems.append(
                    Problem(
                        file=file,
                        message=finding.message,
                        obj=obj,
                        field=format_path(finding.path),
                        line=line_of(node, finding.path),
                    )
                )
    except InputLimitError as err:
        problems.append(Problem(file=file, message=err.message, line=err.line))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problems.append(Problem(file=file, message=f"invalid YAML: {_yaml_reason(err)}", line=line))
    return problems


def validate_decoded(
    objects: list[Decoded],
    file: str,
    crds: CrdSet | None,
    *,
    allowance: PodAllowance = BASELINE,
    seen: set[str] | None = None,
    keys: Sequence[str] | None = None,
) -> list[Problem]:
    """Problems of the objects Argo CD applies from a build (``argo_decode.decode_build``).

    An object whose canonical JSON (``canonical_json``; ``keys`` holds them when the caller
    has them already) is in ``seen`` was validated already (as a file's)."""
    problems: list[Problem] = []
    for i, d in enumerate(objects):
        if seen is not None:
            key = validated_key(keys[i] if keys is not None else canonical_json(d.body))
            if key in seen:
                continue
        prefix: tuple[str | int, ...] = ("items", d.item) if d.item is not None else ()
        for finding, obj in _check_document(d.body, crds, allowance, {}):
            line = line_of(d.node, (*prefix, *finding.path)) if d.node is not None else 1
            problems.append(
                Problem(
                    file=file,
                    message=finding.message,
                    obj=obj,
                    field=format_path(finding.path),
                    line=d.line + line - 1,
                )
            )
    return problems


def _check_document(
    doc: dict[str, Any],
    crds: CrdSet | None,
    allowance: PodAllowance,
    olds: dict[_Identity, dict[str, Any]],
) -> list[tuple[Finding, str]]:
    """Findings of one document, each with the object it belongs to (``v1 List`` items too)."""
    api_version = doc.get("apiVersion")
    obj = describe_object(doc)
    if not isinstance(api_version, str) or not api_version:
        return [(Finding(("apiVersion",), "apiVersion is missing; every object needs one"), obj)]
    if api_version.rpartition("/")[0] in NOT_MANIFEST_GROUPS:
        return []
    if doc.get("kind") == "List" and api_version == "v1" and isinstance(doc.get("items"), list):
        found: list[tuple[Finding, str]] = []
        for i, item in enumerate(doc["items"]):
            if isinstance(item, dict):
                for f, item_obj in _check_document(item, crds, allowance, olds):
                    found.append((Finding(("items", i, *f.path), f.message), item_obj))
        return found
    key = _identity(doc) if olds else None
    old = olds.get(key) if key is not None else None
    return [(f, obj) for f in check_object(doc, allowance, crds, old)]


def _deployed(files: Mapping[Path, bytes], baseline: Baseline | None) -> dict[Path, bytes]:
    """The deployed bytes of those ``files`` (path → bytes read) that lie below the baseline's
    directory and are deployed with other bytes."""
    if baseline is None:
        return {}
    base = baseline.directory.resolve()
    by_rel: dict[str, Path] = {}
    now: dict[str, bytes] = {}
    parents: dict[Path, Path] = {}  # each directory resolved once, not each file's path
    for file, data in files.items():
        if file.is_symlink():
            real = file.resolve()
        else:
            parent = parents.get(file.parent)
            if parent is None:
                parent = parents[file.parent] = file.parent.resolve()
            real = parent / file.name
        try:
            rel = real.relative_to(base).as_posix()
        except ValueError:
            continue
        by_rel[rel], now[rel] = file, data
    return {by_rel[rel]: old for rel, old in baseline.read_changed(now).items()}


def _objects_by_identity(text: str | bytes) -> dict[_Identity, dict[str, Any]]:
    """Objects of a deployed file (``v1 List`` items too) by apiVersion, kind, namespace, name."""
    try:
        docs = load_all(text)
    except yaml.YAMLError:
        return {}  # a broken deployed file has nothing to compare with; the new one is checked
    found: dict[_Identity, dict[str, Any]] = {}
    for doc in docs:
        is_list = isinstance(doc, dict) and doc.get("kind") == "List"
        for item in (doc.get("items") or []) if is_list else [doc]:
            key = _identity(item) if isinstance(item, dict) else None
            if key is not None:
                found[key] = item
    return found


def _identity(doc: dict[str, Any]) -> _Identity | None:
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    parts = (doc.get("apiVersion"), doc.get("kind"), meta.get("namespace") or "", meta.get("name"))
    if not all(isinstance(p, str) for p in parts):
        return None
    return (str(parts[0]), str(parts[1]), str(parts[2]), str(parts[3]))


def _yaml_files(directory: Path) -> list[Path]:
    """YAML files below ``directory`` (hidden directories skipped), minus kustomize patches."""
    files: list[Path] = []
    for top, dirs, names in os.walk(directory.resolve()):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files.extend(Path(top, n) for n in names if n.endswith((".yaml", ".yml")))
    files = sorted(f for f in files if f.is_file())
    skip: set[Path] = set()
    for file in files:
        if file.name in _KUSTOMIZATIONS:
            skip.update(_patch_files(file))
    return [f for f in files if f not in skip]


def _patch_files(kustomization: Path) -> set[Path]:
    """Files a kustomization uses as patches/configurations rather than as resources."""
    try:
        docs = load_all(kustomization.read_bytes())
    except (OSError, yaml.YAMLError):
        return set()  # reported when the file itself is validated or built
    data = docs[0] if len(docs) == 1 else None
    if not isinstance(data, dict):
        return set()
    names: list[Any] = []
    for key in ("patchesStrategicMerge", "configurations"):
        names.extend(data.get(key) or [])
    for key in ("patches", "patchesJson6902", "replacements"):
        names.extend(e.get("path") for e in data.get(key) or [] if isinstance(e, dict))
    base = kustomization.parent
    return {
        Path(os.path.normpath(base / n)) for n in names if isinstance(n, str) and "\x00" not in n
    }


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (already resolved) when it lies below it, else as given."""
    try:
        return str(path.relative_to(root))  # the files of a walked directory: no resolving
    except ValueError:
        pass
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _yaml_reason(err: yaml.YAMLError) -> str:
    problem = getattr(err, "problem", None)
    context = getattr(err, "context", None)
    return " ".join(str(x) for x in (context, problem) if x) or str(err).splitlines()[0]
