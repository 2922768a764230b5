"""Loading CRDs and validating one manifest against them.

The CRDs are the cluster's contract: trainkit does not vendor them (they are
large and version-specific) but reads whatever directory the user points at,
so validation follows the operator versions actually installed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainkit.errors import Problem, SetupError
from trainkit.validate.cel import MISSING, RuleBook
from trainkit.validate.findings import Finding, format_path
from trainkit.validate.objects import check_metadata
from trainkit.validate.pod_security import BASELINE, PodAllowance, check_pod_security
from trainkit.validate.quantities import check_quantities
from trainkit.validate.schema import Node

__all__ = ["CrdSet", "crds_dir", "describe_object", "load_crds"]

# API groups served by kube-apiserver itself: their kinds never have a CRD.
_BUILTIN_GROUPS = frozenset(
    f"{g}.k8s.io"
    for g in (
        "admissionregistration", "apiextensions", "apiregistration", "authentication",
        "authorization", "certificates", "coordination", "discovery", "events",
        "flowcontrol.apiserver", "internal.apiserver", "networking", "node", "rbac.authorization",
        "resource", "scheduling", "storage", "storagemigration",
    )
)  # fmt: skip
_HOW_TO_GET = "pass --crds with your cluster's CRDs (kubectl get crd -o yaml)"


@dataclass(frozen=True, slots=True)
class CrdVersion:
    """One served version of one CRD, as found on disk."""

    group: str
    version: str
    kind: str
    scope: str
    schema: dict[str, Any]
    source: Path


def is_crd_group(group: str) -> bool:
    """True when a kind in ``group`` can only come from a CRD (core groups have no dot)."""
    return "." in group and group not in _BUILTIN_GROUPS


def describe_object(doc: dict[str, Any]) -> str:
    """``PyTorchJob 'resnet50-ddp'`` — how Problems name an object."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    kind = str(doc.get("kind", "?"))
    return f"{kind} {name!r}" if isinstance(name, str) and name else kind


class CrdSet:
    """The CRDs of one directory, indexed by (group, served version, kind).

    Schemas compile lazily, once per CRD version, on first use. Rules that
    cel-python cannot evaluate are listed in ``unsupported_rules`` (one line
    each) for the caller to show as a limitation.
    """

    def __init__(self, directory: Path, versions: dict[tuple[str, str, str], CrdVersion]) -> None:
        self.directory = directory
        self.versions = versions
        self.unsupported_rules: list[str] = []
        self.pod_security: PodAllowance = BASELINE
        """What pod templates may be granted; ``trainkit check`` sets the platform's profiles."""
        self._roots: dict[tuple[str, str, str], Node] = {}

    def kinds(self) -> set[tuple[str, str, str]]:
        """Every (group, version, kind) this set can validate."""
        return set(self.versions)

    def validate(
        self, doc: dict[str, Any], file: str, old: dict[str, Any] | None = None
    ) -> list[Problem]:
        """All problems of one manifest: object rules, schema, CEL.

        Transition rules (``oldSelf``) run only when ``old`` is given.
        """
        obj = describe_object(doc)
        return [
            Problem(file=file, message=f.message, obj=obj, field=format_path(f.path))
            for f in self.findings(doc, old)
        ]

    def findings(self, doc: dict[str, Any], old: dict[str, Any] | None = None) -> list[Finding]:
        """Like ``validate`` but with raw JSON paths (so a caller can look up line numbers)."""
        out: list[Finding] = []
        check_metadata(doc, out)
        check_quantities(doc, out)
        check_pod_security(doc, out, self.pod_security)
        api_version = str(doc.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        kind = str(doc.get("kind", ""))
        if not is_crd_group(group):
            return out
        key = (group, version, kind)
        crd = self.versions.get(key)
        if crd is None:
            out.append(Finding((), self._missing(group, version, kind)))
            return out
        meta = doc.get("metadata")
        if crd.scope == "Cluster" and isinstance(meta, dict) and meta.get("namespace"):
            out.append(
                Finding(
                    ("metadata", "namespace"),
                    f"{kind} is cluster-scoped; remove metadata.namespace (kustomize's "
                    "namespace transformer adds it to kinds it does not know)",
                )
            )
        schema_found: list[Finding] = []
        self._root(key).check(doc, (), MISSING if old is None else old, schema_found)
        # A bad quantity or name is reported once, by the clearer object rule.
        reported = {f.path for f in out}
        if ("metadata", "name") in reported:
            # The CRD's own name rules (TrainJob's RFC 1035 CEL) sit on the root object.
            schema_found = [
                f for f in schema_found if not (f.path == () and "metadata.name" in f.message)
            ]
        out.extend(f for f in schema_found if f.path not in reported)
        return out

    def _missing(self, group: str, version: str, kind: str) -> str:
        served = sorted(v for g, v, k in self.versions if g == group and k == kind)
        also = f" (served versions: {', '.join(served)})" if served else ""
        return f"no CRD for {group}/{version} {kind} in {self.directory}{also}; {_HOW_TO_GET}"

    def _root(self, key: tuple[str, str, str]) -> Node:
        root = self._roots.get(key)
        if root is None:
            crd = self.versions[key]
            book = RuleBook(f"{crd.kind} ({crd.group}/{crd.version})", self.unsupported_rules)
            _compile_all_rules(crd.schema, "", book)  # report limitations once, up front
            root = self._roots[key] = Node(crd.schema, book, "")
        return root


def _compile_all_rules(schema: Any, where: str, book: RuleBook) -> None:
    """Walk a schema once to compile every CEL rule (programs are cached by text)."""
    if not isinstance(schema, dict):
        return
    if schema.get("x-kubernetes-validations"):
        book.compile(schema["x-kubernetes-validations"], where)
    for key, sub in (schema.get("properties") or {}).items():
        _compile_all_rules(sub, f"{where}.{key}" if where else key, book)
    if isinstance(schema.get("additionalProperties"), dict):
        _compile_all_rules(schema["additionalProperties"], f"{where}.*" if where else "*", book)
    _compile_all_rules(schema.get("items"), f"{where}[]", book)


def crds_dir(option: str | None) -> Path | None:
    """The CRD directory: ``--crds`` wins, else ``$TRAINKIT_CRDS``, else None (no CRD checks)."""
    raw = option if option else os.environ.get("TRAINKIT_CRDS") or None
    if raw is None:
        return None
    path = Path(raw)
    if not path.is_dir():
        source = "--crds" if option else "TRAINKIT_CRDS"
        raise SetupError(
            [Problem(file=str(path), message=f"{source} directory does not exist; {_HOW_TO_GET}")]
        )
    return path


def load_crds(directory: Path) -> CrdSet:
    """Read every ``*.yaml``/``*.yml`` below ``directory`` and index its CRDs."""
    if not directory.is_dir():
        raise SetupError(
            [Problem(file=str(directory), message=f"CRD directory does not exist; {_HOW_TO_GET}")]
        )
    versions: dict[tuple[str, str, str], CrdVersion] = {}
    files = sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    for path in files:
        for doc in _read(path):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                for crd in _served_versions(doc, path):
                    versions.setdefault((crd.group, crd.version, crd.kind), crd)
    if not versions:
        raise SetupError(
            [
                Problem(
                    file=str(directory), message=f"no CustomResourceDefinition found; {_HOW_TO_GET}"
                )
            ]
        )
    return CrdSet(directory, versions)


def _read(path: Path) -> list[Any]:
    try:
        with path.open("rb") as fh:
            return list(yaml.load_all(fh, Loader=yaml.CSafeLoader))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise SetupError([Problem(file=str(path), message=f"cannot read CRD file: {err}")]) from err


def _served_versions(doc: dict[str, Any], path: Path) -> list[CrdVersion]:
    """apiextensions v1 (per-version schema) and v1beta1 (one ``spec.validation``) CRDs."""
    spec = doc.get("spec") or {}
    group = str(spec.get("group", ""))
    kind = str((spec.get("names") or {}).get("kind", ""))
    scope = str(spec.get("scope", "Namespaced"))
    shared = (spec.get("validation") or {}).get("openAPIV3Schema")
    found = []
    for entry in spec.get("versions") or [{"name": spec.get("version"), "served": True}]:
        if not entry.get("served", True):
            continue
        schema = (entry.get("schema") or {}).get("openAPIV3Schema") or shared
        if isinstance(schema, dict):
            found.append(CrdVersion(group, str(entry["name"]), kind, scope, schema, path))
    return found
