"""Validating manifest files and directories (what ``trainkit validate PATH...`` runs).

Directories are walked for ``*.yaml``/``*.yml``; files a ``kustomization.yaml``
in the same directory names as patches or configurations are skipped,
because a strategic-merge patch is a fragment that would fail every required-
field check although kustomize applies it correctly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainkit.deployed import Baseline
from trainkit.errors import Problem
from trainkit.validate.crds import CrdSet, describe_object
from trainkit.validate.findings import Finding, format_path
from trainkit.validate.loader import K8sLoader, iter_documents, line_of
from trainkit.validate.objects import check_metadata
from trainkit.validate.pod_security import check_pod_security
from trainkit.validate.quantities import check_quantities

__all__ = ["validate_paths", "validate_text"]

_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_NOT_MANIFESTS = frozenset({"kustomize.config.k8s.io"})
_Identity = tuple[str, str, str, str]


def validate_paths(
    paths: list[Path], crds: CrdSet | None, root: Path, *, baseline: Baseline | None = None
) -> list[Problem]:
    """Problems of every manifest under ``paths``; ``crds=None`` runs only the object rules.

    With a ``baseline``, each object of a file that differs from its deployed
    version is validated as an update of the deployed object, so CEL
    transition rules (``self == oldSelf``: "field is immutable") run too.
    """
    problems: list[Problem] = []
    root = root.resolve()
    files: list[Path] = []
    for path in paths:
        if not path.exists():
            problems.append(Problem(file=_shown(path, root), message="no such file or directory"))
            continue
        files.extend(_yaml_files(path) if path.is_dir() else [path])
    deployed = _deployed(files, baseline)
    for file in files:
        try:
            data = file.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            problems.append(Problem(file=_shown(file, root), message=f"cannot read: {err}"))
            continue
        old = deployed.get(file)
        # An unchanged file cannot break a transition rule: skip parsing it twice.
        old_text = old.decode("utf-8", "replace") if old is not None and old != data else None
        problems.extend(validate_text(text, _shown(file, root), crds, old_text=old_text))
    return sorted(problems, key=lambda p: (p.file, p.line or 0, p.obj, p.field, p.message))


def validate_text(
    text: str, file: str, crds: CrdSet | None, *, old_text: str | None = None
) -> list[Problem]:
    """Problems of every manifest in a multi-document YAML text (e.g. kustomize output).

    ``old_text`` is the deployed version: an object in it with the same
    apiVersion, kind, namespace and name is the ``oldSelf`` of the CRD rules.
    """
    olds = _objects_by_identity(old_text) if old_text is not None and crds is not None else {}
    problems: list[Problem] = []
    try:
        for node, doc in iter_documents(text):
            if not isinstance(doc, dict) or "kind" not in doc:
                continue  # not a Kubernetes object (e.g. a kustomize configurations file)
            for finding, obj in _check_document(doc, crds, olds):
                problems.append(
                    Problem(
                        file=file,
                        message=finding.message,
                        obj=obj,
                        field=format_path(finding.path),
                        line=line_of(node, finding.path),
                    )
                )
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problems.append(Problem(file=file, message=f"invalid YAML: {_yaml_reason(err)}", line=line))
    return problems


def _check_document(
    doc: dict[str, Any], crds: CrdSet | None, olds: dict[_Identity, dict[str, Any]]
) -> list[tuple[Finding, str]]:
    """Findings of one document, each with the object it belongs to (``v1 List`` items too)."""
    api_version = doc.get("apiVersion")
    obj = describe_object(doc)
    if not isinstance(api_version, str) or not api_version:
        return [(Finding(("apiVersion",), "apiVersion is missing; every object needs one"), obj)]
    if api_version.rpartition("/")[0] in _NOT_MANIFESTS:
        return []
    if doc.get("kind") == "List" and api_version == "v1" and isinstance(doc.get("items"), list):
        found: list[tuple[Finding, str]] = []
        for i, item in enumerate(doc["items"]):
            if isinstance(item, dict):
                for f, item_obj in _check_document(item, crds, olds):
                    found.append((Finding(("items", i, *f.path), f.message), item_obj))
        return found
    if crds is not None:
        key = _identity(doc)
        old = olds.get(key) if key is not None else None
        return [(f, obj) for f in crds.findings(doc, old)]
    out: list[Finding] = []
    check_metadata(doc, out)
    check_quantities(doc, out)
    check_pod_security(doc, out)
    return [(f, obj) for f in out]


def _deployed(files: list[Path], baseline: Baseline | None) -> dict[Path, bytes]:
    """The deployed bytes of those ``files`` that lie below the baseline's directory and exist there."""
    if baseline is None:
        return {}
    base = baseline.directory.resolve()
    by_rel: dict[str, Path] = {}
    for file in files:
        try:
            by_rel[file.resolve().relative_to(base).as_posix()] = file
        except ValueError:
            continue
    return {by_rel[rel]: data for rel, data in baseline.read_many(by_rel).items()}


def _objects_by_identity(text: str) -> dict[_Identity, dict[str, Any]]:
    """Objects of a deployed file (``v1 List`` items too) by apiVersion, kind, namespace, name."""
    try:
        docs = list(yaml.load_all(text, Loader=K8sLoader))
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
    files = sorted(
        p
        for p in directory.rglob("*")
        if p.suffix in (".yaml", ".yml")
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(directory).parts[:-1])
    )
    skip: set[Path] = set()
    for file in files:
        if file.name in _KUSTOMIZATIONS:
            skip.update(_patch_files(file))
    return [f for f in files if f.resolve() not in skip]


def _patch_files(kustomization: Path) -> set[Path]:
    """Files a kustomization uses as patches/configurations rather than as resources."""
    try:
        data = yaml.load(kustomization.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return set()  # reported when the file itself is validated or built
    if not isinstance(data, dict):
        return set()
    names: list[Any] = []
    for key in ("patchesStrategicMerge", "configurations"):
        names.extend(data.get(key) or [])
    for key in ("patches", "patchesJson6902", "replacements"):
        names.extend(e.get("path") for e in data.get(key) or [] if isinstance(e, dict))
    base = kustomization.parent
    return {(base / n).resolve() for n in names if isinstance(n, str) and "\n" not in n}


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (already resolved) when it lies below it, else as given."""
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _yaml_reason(err: yaml.YAMLError) -> str:
    problem = getattr(err, "problem", None)
    context = getattr(err, "context", None)
    return " ".join(str(x) for x in (context, problem) if x) or str(err).splitlines()[0]
