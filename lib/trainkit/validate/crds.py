"""Loading CRDs and validating one manifest against them.

The CRDs are the cluster's contract: trainkit does not vendor them (they are
large and version-specific) but reads whatever directory the user points at,
so validation follows the operator versions actually installed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainkit.cache_dir import cache_dir, cache_enabled, file_digest
from trainkit.errors import Problem, SetupError
from trainkit.validate.cel import MISSING, RuleBook
from trainkit.validate.crd_cache import CrdCache, Kind
from trainkit.validate.crd_files import (
    CrdVersion,
    may_define,
    parse_crd_file,
    served_versions,
)
from trainkit.validate.findings import Finding
from trainkit.validate.structural import Node

__all__ = ["CrdSet", "TreeCrds", "crds_dir", "is_crd_group", "load_crds"]

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
_HOW_TO_GET = (
    "pass --crds with your cluster's CRDs (kubectl get crd -o yaml), or the pinned "
    "upstream ones (trainkit crds --fetch)"
)


def is_crd_group(group: str) -> bool:
    """True when a kind in ``group`` can only come from a CRD (core groups have no dot)."""
    return "." in group and group not in _BUILTIN_GROUPS


@dataclass
class _CrdFile:
    """One file of the CRD directory; what it serves is known once indexed or parsed."""

    path: Path
    sha: str | None = None
    kinds: set[Kind] | None = None
    versions: list[CrdVersion] | None = None
    stale_index: bool = field(default=False)
    pinned: bool = field(default=False)
    """Its bytes are a pinned upstream file's (SHA-256): ``kinds`` are the pin's."""


class CrdSet:
    """The CRDs of one directory or file, by (group, served version, kind), read on first use.

    Only the files that define a kind a manifest uses are read: their index
    comes from the cache (``crd_cache``), else a file is parsed only if its
    bytes name the group and kind (``may_define``). The first file in path
    order that serves a (group, version, kind) wins. Schemas compile lazily,
    once per CRD version. Rules that cel-python cannot evaluate are listed in
    ``unsupported_rules`` (one line each) for the caller to show as a limitation.
    """

    def __init__(self, directory: Path, files: list[_CrdFile], cache: CrdCache | None) -> None:
        self.directory = directory
        """The directory or file the CRDs were read from."""
        self.unsupported_rules: list[str] = []
        self._files = files
        self._cache = cache
        self._resolved: dict[Kind, CrdVersion | None] = {}
        self._roots: dict[Kind, Node] = {}

    def kinds(self) -> set[Kind]:
        """Every (group, version, kind) this set can validate (reads every file)."""
        found: set[Kind] = set()
        for f in self._files:
            found.update((v.group, v.version, v.kind) for v in self._versions_of(f))
        return found

    def compile_all_rules(self) -> list[str]:
        """Compile every CEL rule of every kind; return ``unsupported_rules`` (slow: all files)."""
        for key in sorted(self.kinds()):
            crd = self.lookup(key)
            if crd is not None:
                book = RuleBook(f"{crd.kind} ({crd.group}/{crd.version})", self.unsupported_rules)
                _compile_all_rules(crd.schema, "", book)
        return self.unsupported_rules

    def source_of(self, key: Kind) -> Path | None:
        """The file serving ``key``, as ``lookup(key).source`` says, without reading a pinned
        file: when the one file that may serve ``key`` is a pinned upstream file (``pinned``
        of ``load_crds``), its pin says what it serves. Any other file that may serve it, or
        two that do, are read as ``lookup`` reads them (the first wins, conflicts raise)."""
        if key not in self._resolved:
            group, _, kind = key
            serving: list[_CrdFile] = []
            for f in self._files:
                if f.pinned and f.kinds is not None:
                    if key in f.kinds:
                        serving.append(f)
                elif f.kinds is not None or f.versions is not None:
                    if key in (f.kinds or ()):
                        break
                elif self._may_define(f, group, kind):
                    break
            else:
                if len(serving) <= 1:
                    return serving[0].path if serving else None
        crd = self.lookup(key)
        return crd.source if crd is not None else None

    def lookup(self, key: Kind) -> CrdVersion | None:
        """The CRD version serving ``key``, reading only the files that may define it."""
        if key not in self._resolved:
            self._resolved[key] = self._find(key)
            if self._cache is not None:
                self._cache.save()
        return self._resolved[key]

    def check_schema(
        self, doc: dict[str, Any], old: dict[str, Any] | None, out: list[Finding]
    ) -> None:
        """Append the CRD findings of one manifest (schema, CEL, scope) to ``out``.

        ``out`` holds the object rules' findings already: a bad quantity or name
        is reported once, by the clearer object rule. Transition rules
        (``oldSelf``) run only when ``old`` is given.
        """
        group, _, version = str(doc.get("apiVersion", "")).rpartition("/")
        kind = str(doc.get("kind", ""))
        if not is_crd_group(group):
            return
        key = (group, version, kind)
        crd = self.lookup(key)
        if crd is None:
            out.append(Finding((), self._missing(group, version, kind)))
            return
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
        reported = {f.path for f in out}
        if ("metadata", "name") in reported:
            # The CRD's own name rules (TrainJob's RFC 1035 CEL) sit on the root object.
            schema_found = [
                f for f in schema_found if not (f.path == () and "metadata.name" in f.message)
            ]
        out.extend(f for f in schema_found if f.path not in reported)

    def _find(self, key: Kind) -> CrdVersion | None:
        group, version, kind = key
        found: list[CrdVersion] = []
        for f in self._files:
            if f.kinds is None and f.versions is None and not self._may_define(f, group, kind):
                continue
            if f.kinds is not None and key not in f.kinds:
                continue
            found.extend(v for v in self._versions_of(f) if (v.group, v.version, v.kind) == key)
        # Two schemas for one kind and version: whichever file sorts first would win, so a
        # looser copy planted beside the real CRD (x-kubernetes-preserve-unknown-fields) would
        # let anything through. The same CRD in two files (two clusters' dumps) is one schema.
        conflicts = [
            Problem(
                file=str(v.source),
                message=(
                    f"{group}/{version} {kind} is defined here with another schema than in "
                    f"{found[0].source}; a CRD set may hold one schema per kind and version "
                    "(validation would take whichever file sorts first): keep the cluster's "
                    "CRD and remove the other file"
                ),
            )
            for v in found[1:]
            if (v.schema, v.scope) != (found[0].schema, found[0].scope)
        ]
        if conflicts:
            raise SetupError(list(dict.fromkeys(conflicts)))
        return found[0] if found else None

    def _may_define(self, f: _CrdFile, group: str, kind: str) -> bool:
        """``may_define`` of the file's bytes; a file found not to define a kind is remembered
        in the cache by its content (``f.sha``), so the next run does not read it again for
        that kind (a CRD directory holds many files a tree never needs, each read and searched
        once per kind)."""
        cache, sha = self._cache, f.sha
        if cache is not None and sha is not None and cache.absent(sha, group, kind):
            return False
        try:
            data = f.path.read_bytes()
        except OSError:
            return True  # let parsing report the unreadable file
        if may_define(data, group, kind):
            return True
        if cache is not None and sha is not None and hashlib.sha256(data).hexdigest() == sha:
            cache.add_absent(sha, group, kind)
        return False

    def _versions_of(self, f: _CrdFile) -> list[CrdVersion]:
        """Parse (or read from the cache) one file's versions, once."""
        if f.versions is not None:
            return f.versions
        docs = None
        if self._cache is not None and f.sha is not None and not f.stale_index:
            docs = self._cache.documents(f.sha)
        fresh = docs is None
        if docs is None:
            try:
                data = f.path.read_bytes()
            except OSError as err:
                raise SetupError(
                    [Problem(file=str(f.path), message=f"cannot read CRD file: {err}")]
                ) from err
            docs = parse_crd_file(f.path, data)
        versions = [v for doc in docs for v in served_versions(doc, f.path)]
        kinds = {(v.group, v.version, v.kind) for v in versions}
        if not fresh and f.kinds is not None and kinds != f.kinds:
            f.stale_index = True  # entry and index disagree: trust neither, parse the YAML
            return self._versions_of(f)
        if fresh and self._cache is not None and f.sha is not None:
            self._cache.store(f.sha, docs, sorted(kinds))
        f.kinds, f.versions = kinds, versions
        return versions

    def _missing(self, group: str, version: str, kind: str) -> str:
        served = sorted(
            {v for f in self._files for g, v, k in (f.kinds or ()) if (g, k) == (group, kind)}
        )
        also = f" (served versions: {', '.join(served)})" if served else ""
        return f"no CRD for {group}/{version} {kind} in {self.directory}{also}; {_HOW_TO_GET}"

    def _root(self, key: Kind) -> Node:
        root = self._roots.get(key)
        if root is None:
            crd = self.lookup(key)
            if crd is None:
                raise KeyError(key)
            book = RuleBook(f"{crd.kind} ({crd.group}/{crd.version})", self.unsupported_rules)
            root = self._roots[key] = Node(crd.schema, book, "")
        return root


def _compile_all_rules(schema: Any, where: str, book: RuleBook) -> None:
    """Walk a schema once to compile every CEL rule (programs are cached by text)."""
    if not isinstance(schema, dict):
        return
    if schema.get("x-kubernetes-validations"):
        for rule in book.compile(schema["x-kubernetes-validations"], where):
            book.program(rule)
    for key, sub in (schema.get("properties") or {}).items():
        _compile_all_rules(sub, f"{where}.{key}" if where else key, book)
    if isinstance(schema.get("additionalProperties"), dict):
        _compile_all_rules(schema["additionalProperties"], f"{where}.*" if where else "*", book)
    _compile_all_rules(schema.get("items"), f"{where}[]", book)


def crds_dir(option: str | None, *, base: Path | None = None) -> Path | None:
    """Where the CRDs are: ``--crds`` wins, else ``$TRAINKIT_CRDS``, else None (no CRD checks).

    Either names a directory (searched for ``*.yaml``/``*.yml``) or one file; a
    relative path is relative to ``base`` (the directory the command was started in).
    """
    raw = option if option else os.environ.get("TRAINKIT_CRDS") or None
    if raw is None:
        return None
    path = Path(raw)
    if base is not None and not path.is_absolute():
        path = base / path
    if not path.exists():
        source = "--crds" if option else "TRAINKIT_CRDS"
        raise SetupError(
            [
                Problem(
                    file=raw,
                    message=f"{source}: no such directory or file; {_HOW_TO_GET}",
                )
            ]
        )
    return path


@dataclass(frozen=True)
class TreeCrds:
    """Which CRD files inside a repository's work tree may count: a pull request can add or
    change any file there, so only those the platform lists by SHA-256 (or whose bytes are
    one of trainkit's pinned upstream files) are read."""

    root: Path
    """The repository's root; files below it are in the work tree."""
    listed: Mapping[str, str]
    """Path from the root (POSIX) → SHA-256, as the platform lists them."""
    where: str
    """Where the list is declared, for messages (``Policy.crd_checksums in …``)."""
    pinned: frozenset[str] = frozenset()
    """SHA-256 of the upstream CRD files trainkit pins (``trainkit crds --fetch`` writes them)."""

    def problems(self, paths: list[Path]) -> list[Problem]:
        """A problem per file of ``paths`` in the work tree that is not listed or changed."""
        root = self.root.resolve()
        out = []
        for path in paths:
            real = path.resolve()
            if not real.is_relative_to(root):
                continue
            rel = real.relative_to(root).as_posix()
            try:
                digest = hashlib.sha256(real.read_bytes()).hexdigest()
            except OSError as err:
                out.append(Problem(file=rel, message=f"cannot read CRD file: {err}"))
                continue
            if digest in self.pinned or self.listed.get(rel) == digest:
                continue
            if rel in self.listed:
                why = f"its SHA-256 is {digest}, not the {self.listed[rel]} listed for it"
            else:
                why = "it is not listed"
            out.append(
                Problem(
                    file=rel,
                    message=(
                        "a CRD file inside the repository counts only when the platform lists "
                        f"it by SHA-256 ({self.where}), and {why}: a pull request could plant "
                        "a looser CRD here. Keep CRDs outside the work tree (trainkit crds "
                        "--fetch), or have the platform team list the file with "
                        f'"{rel}": "{digest}" after reviewing it'
                    ),
                )
            )
        return out


def load_crds(
    path: Path,
    *,
    no_cache: bool = False,
    tree: TreeCrds | None = None,
    pinned: Mapping[str, Collection[Kind]] | None = None,
) -> CrdSet:
    """Index the CRD files at ``path`` (one file, or ``*.yaml``/``*.yml`` below a directory).

    A file may hold CRD documents or a ``v1 List`` of them (``kubectl get crd -o
    yaml``); files are parsed on first use. Parsed CRDs are cached by content
    outside the work tree (``trainkit.cache_dir``) unless ``no_cache`` is set or
    ``$CI`` is non-empty. With ``tree``, a file inside the repository's work tree that the
    platform does not list by checksum is an error. ``pinned`` maps the SHA-256 of trainkit's
    pinned upstream files to the kinds each serves (``crds.toml``, checked against the
    files): a file with those bytes is known to serve them without being read
    (``CrdSet.source_of``).
    """
    if path.is_file():
        paths = [path]
    elif path.is_dir():
        paths = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    else:
        raise SetupError(
            [Problem(file=str(path), message=f"no such directory or file; {_HOW_TO_GET}")]
        )
    unlisted = tree.problems(paths) if tree is not None else []
    if unlisted:
        raise SetupError(unlisted)
    cache = CrdCache(cache_dir()) if cache_enabled(no_cache=no_cache) else None
    files: list[_CrdFile] = []
    any_crd = False
    for file in paths:
        f = _CrdFile(file)
        if cache is not None:
            try:
                f.sha = cache.digest(file)
            except OSError:
                f.sha = None
            kinds = cache.kinds(f.sha) if f.sha is not None else None
            f.kinds = set(kinds) if kinds is not None else None
        if pinned:
            f.sha = f.sha or file_digest(str(file))
            if f.sha is not None and f.sha in pinned:
                f.kinds, f.pinned = set(pinned[f.sha]), True
        any_crd = any_crd or bool(f.kinds) or (f.kinds is None and _mentions_crd(file))
        files.append(f)
    if cache is not None:
        cache.save()
    if not any_crd:
        raise SetupError(
            [Problem(file=str(path), message=f"no CustomResourceDefinition found; {_HOW_TO_GET}")]
        )
    return CrdSet(path, files, cache)


def _mentions_crd(path: Path) -> bool:
    try:
        return b"CustomResourceDefinition" in path.read_bytes()
    except OSError:
        return True  # reported when the file is read
