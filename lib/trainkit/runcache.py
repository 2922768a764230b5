"""A record of the last successful run, so that a run with unchanged inputs does nothing.

``trainkit synth`` (and ``check``) records, per output directory, a hash of all its
inputs and the SHA-256 of every file it produced. When the inputs hash the same and
the output directory on disk still holds exactly those files, the next run reports
it up to date without loading a definition, a model or cdk8s. This module imports
no model: it is what the command runs first.

The inputs, hashed into the record's key (``RunCache.key``):

- the code: trainkit's version and the size and mtime of each of its source files,
  Python's version and the installed cdk8s, pydantic, pydantic-core and PyYAML
  (``code_stamp``, taken once per process);
- the command and its options that change the output or the verdict: the absolute
  jobs, output and repository directories, ``--against``, ``--require-baseline``,
  the command written into every header (``$TRAINKIT_SYNTH_COMMAND`` or
  ``pyproject.toml``); for ``check`` also the CRD
  files (path and SHA-256 of each) and the ``kubectl`` binary (path, size, mtime)
  (``check_inputs``);
- every file below ``jobs/`` (definitions, scripts, helpers, data): path and SHA-256,
  or a symbolic link's target (``jobs_tree``);
- the repository files outside ``jobs/`` that the definitions imported (listed in the
  record, hashed anew each run);
- the deployed baseline (it decides kept bytes and in-place refusals): compared after
  the key, as its description and commit, resolved with the Argo CD revision the
  platform named last time (the platform's files are in the key).

Records are data (JSON) in the repository's cache directory and follow the rules of
``cache_dir``; what a record claims is checked against the output directory itself
(every file's SHA-256), never taken on trust.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache_dir import file_digest, read_json, repo_cache_dir, write_json

if TYPE_CHECKING:
    from .deployed.baseline import Baseline

__all__ = [
    "FORMAT",
    "Record",
    "RunCache",
    "baseline_id",
    "check_inputs",
    "code_stamp",
    "data_stamp",
    "jobs_tree",
    "source_files",
    "stamp_of",
    "synth_options",
]

FORMAT = 2
"""Bump when a record's layout or the meaning of its key changes."""

# Third-party code whose behaviour shapes the output: module → distribution.
_DEPENDENCIES = {
    "cdk8s": "cdk8s",
    "pydantic": "pydantic",
    "pydantic_core": "pydantic_core",
    "yaml": "PyYAML",
}
_SKIP_DIRS = frozenset({"__pycache__"})


@dataclass
class Record:
    """What one successful run produced from its inputs."""

    key: str
    revision: str
    """The Argo CD revision the platform names (for the baseline)."""
    baseline: str
    """Which deployed tree the run compared with (``baseline_id``)."""
    outputs: dict[str, str]
    """Every file of the output directory → SHA-256 of its bytes."""
    rendered: dict[str, str] = field(default_factory=dict)
    """Each job and runtime file → SHA-256 of its bytes as rendered, before the deployed
    bytes of an unchanged definition were kept (see ``deployed.keep_deployed``)."""
    imports: list[str] = field(default_factory=list)
    """Repository files outside jobs/ that the definitions imported."""
    warnings: list[str] = field(default_factory=list)
    """What the run printed as warnings (printed again)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What the command prints on success (e.g. check's CRD directory and build count)."""
    frame: str = ""
    """The key without the jobs tree and the imports (``RunCache.frame``): equal frames
    mean the same code, command and options."""
    tree: dict[str, str] = field(default_factory=dict)
    """The jobs tree the run read (``jobs_tree``)."""
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per definition file (relative to jobs/), what a later run needs to reuse its
    output without running it (``synth.delta``)."""


def data_stamp(jobs_dir: Path) -> str:
    """``RunCache.data_stamp`` of ``jobs_dir``, for a command that loads definitions through
    the definitions cache but records no run (``validate``)."""
    return _data_stamp(jobs_tree(jobs_dir.resolve()), code_stamp())


def _data_stamp(tree: Mapping[str, str], code: str) -> str:
    data = {
        rel: token
        for rel, token in tree.items()
        if not rel.endswith(".py") and "scripts" not in rel.split("/")[:-1]
    }
    return _digest({"code": code, "data": data})


class RunCache:
    """The records of one repository, for one jobs and output directory and option set."""

    def __init__(
        self, root: Path, jobs_dir: Path, out_dir: Path, options: Mapping[str, object]
    ) -> None:
        self.root = root.resolve()
        self.jobs_dir = jobs_dir.resolve()
        self.out_dir = Path(os.path.abspath(out_dir))
        self.out_given = out_dir
        """As the user named it: baselines describe it so (``generated/ on disk``)."""
        self.directory = repo_cache_dir(self.root) / "runs"
        self.options = dict(options)
        self.code = code_stamp()
        # Hashed before anything runs: a file edited during the run makes the record
        # claim the older content, so the next run does the work again.
        self.tree = jobs_tree(self.jobs_dir)
        self._digests: dict[str, str | None] = {}

    def data_stamp(self) -> str:
        """What a definition may read besides its imports: the data files under jobs/
        (not ``*.py``, not in ``scripts/``), with the code stamp (for ``load.cache``)."""
        return _data_stamp(self.tree, self.code)

    def key(self, kind: str, imports: Iterable[str], extra: Mapping[str, object]) -> str:
        """The hash of every input of a ``kind`` run (see the module docstring)."""
        return _digest(
            {
                "frame": self.frame(kind, extra),
                "tree": self.tree,
                "imports": self.imports_digest(imports),
            }
        )

    def frame(self, kind: str, extra: Mapping[str, object]) -> str:
        """The hash of a ``kind`` run's inputs other than the jobs tree and the imports."""
        return _digest(
            {
                "format": FORMAT,
                "kind": kind,
                "code": self.code,
                "root": str(self.root),
                "jobs": str(self.jobs_dir),
                "out": str(self.out_dir),
                "options": {**self.options, **extra},
            }
        )

    def imports_unchanged(self, record: Record) -> bool:
        """Whether ``record``'s key still holds for its own frame and tree: every repository
        file its definitions imported is as it was."""
        return record.key == _digest(
            {
                "frame": record.frame,
                "tree": record.tree,
                "imports": self.imports_digest(record.imports),
            }
        )

    def imports_digest(self, imports: Iterable[str]) -> str:
        """The hash of the imported repository files, as they are now."""
        return _digest({p: self.file_digest(p) for p in sorted(set(imports))})

    def lookup(self, kind: str, extra: Mapping[str, object] | None = None) -> Record | None:
        """The record of the last ``kind`` run if its inputs are all unchanged (the
        baseline and the output directory are the caller's to compare)."""
        record = self.last(kind)
        if record is None or record.key != self.key(kind, record.imports, extra or {}):
            return None
        return record

    def unchanged(
        self, kind: str, extra: Mapping[str, object], against: str | None, *, require: bool
    ) -> Record | None:
        """The record of the last ``kind`` run if nothing it depends on changed: its inputs,
        the deployed baseline (``--against``; ``require`` as for synth) and every file of
        the output directory. Its ``facts["deployed"]`` names the baseline."""
        record = self.lookup(kind, extra)
        if record is None:
            return None
        from .deployed.baseline import resolve_baseline
        from .write.swap import leftovers

        baseline = resolve_baseline(
            self.root, self.out_given, against, record.revision, require=require
        )
        if baseline_id(baseline) != record.baseline or leftovers(self.out_dir):
            return None  # a killed run's leftovers: the full run finishes or undoes it
        if not self.outputs_match(record.outputs):
            return None
        record.facts["deployed"] = baseline.description
        return record

    def last(self, kind: str) -> Record | None:
        """The record of the last ``kind`` run, whatever its inputs were."""
        data = read_json(self._path(kind))
        return _record(data) if data is not None and data.get("format") == FORMAT else None

    def save(self, kind: str, record: Record) -> None:
        data = {"format": FORMAT, **record.__dict__}
        write_json(self._path(kind), data)

    def repository_imports(self, imports: Iterable[str]) -> list[str]:
        """The files of ``imports`` inside the repository but outside jobs/ (which the
        tree already covers)."""
        out = set()
        for path in imports:
            real = os.path.realpath(path)
            if _inside(real, str(self.root)) and not _inside(real, str(self.jobs_dir)):
                out.add(real)
        return sorted(out)

    def outputs_match(self, outputs: Mapping[str, str]) -> bool:
        """Whether the output directory holds exactly these files with these hashes."""
        return _output_hashes(str(self.out_dir)) == dict(outputs)

    def file_digest(self, path: str) -> str | None:
        if path not in self._digests:
            self._digests[path] = file_digest(path)
        return self._digests[path]

    def _path(self, kind: str) -> Path:
        out = hashlib.sha256(str(self.out_dir).encode("utf-8", "surrogateescape")).hexdigest()
        return self.directory / f"{kind}-{out[:20]}.json"


def check_inputs(crds: str, kubectl: str | None) -> dict[str, object] | None:
    """What a check's verdict depends on besides synth's inputs: the CRD files at ``crds``
    (a directory or one file; path and SHA-256 of each) and the ``kubectl`` that builds
    the kustomizations. None when either is missing (the full check says so)."""
    top = Path(crds).resolve()
    if kubectl is None or not top.exists():
        return None
    st = os.stat(kubectl)
    # The files load_crds reads: one file as named, or the YAML files below a directory.
    digests: dict[str, str | None] = {top.name: file_digest(str(top))}
    if top.is_dir():
        digests = {
            path.relative_to(top).as_posix(): file_digest(str(path))
            for path in sorted(top.rglob("*"))
            if path.suffix in (".yaml", ".yml") and path.is_file()
        }
    return {
        "crds_dir": str(top),
        "crds": digests,
        "kubectl": [os.path.realpath(kubectl), st.st_size, st.st_mtime_ns],
    }


def synth_options(against: str | None, require_baseline: bool, root: Path) -> dict[str, object]:
    """The options of ``synth`` (and ``check``) that change what is written or refused,
    with the command the headers name (``repo_root.synth_command``)."""
    from .repo_root import synth_command

    return {
        "against": against,
        "require_baseline": require_baseline,
        "synth_command": synth_command(root),
    }


def baseline_id(baseline: Baseline) -> str:
    """What identifies a deployed tree: its description and commit."""
    commit = baseline.git.commit if baseline.git is not None else ""
    return f"{baseline.description}|{commit}|{baseline.nothing}"


def _record(data: Mapping[str, Any]) -> Record | None:
    try:
        record = Record(
            key=data["key"],
            revision=data["revision"],
            baseline=data["baseline"],
            outputs=data["outputs"],
            rendered=data.get("rendered", {}),
            imports=data.get("imports", []),
            warnings=data.get("warnings", []),
            facts=data.get("facts", {}),
            frame=data.get("frame", ""),
            tree=data.get("tree", {}),
            files=data.get("files", {}),
        )
    except (KeyError, TypeError):
        return None
    strings = (record.key, record.revision, record.baseline)
    ok = (
        all(isinstance(s, str) for s in strings)
        and isinstance(record.outputs, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in record.outputs.items())
        and isinstance(record.rendered, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in record.rendered.items())
        and isinstance(record.imports, list)
        and all(isinstance(p, str) for p in record.imports)
        and isinstance(record.warnings, list)
        and all(isinstance(w, str) for w in record.warnings)
        and isinstance(record.facts, dict)
        and isinstance(record.frame, str)
        and isinstance(record.tree, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in record.tree.items())
        and isinstance(record.files, dict)
        and all(isinstance(k, str) and isinstance(v, dict) for k, v in record.files.items())
    )
    return record if ok else None


def code_stamp() -> str:
    """Trainkit's version and source files (size, mtime), Python's version, and the
    installed versions of the libraries that shape the output: computed once per process.

    The code a process runs does not change under it once imported, so a stamp taken
    later in the process would be no truer: a trainkit file edited while a process runs
    changes what the next process runs (it stamps anew), not what this one ran. A stamp
    taken again would even be false: this process's records would claim the edited
    code's stamp while holding the output of the code it had imported before."""
    return _process_stamp()


@functools.cache
def _process_stamp() -> str:
    return stamp_of(os.path.dirname(os.path.abspath(__file__)))


def stamp_of(package: str) -> str:
    """The code stamp of trainkit's sources in the directory ``package`` (``code_stamp``)."""
    from trainkit import __version__

    return _digest(
        {
            "trainkit": __version__,
            "source": source_files(package),
            "python": sys.version,
            "libraries": _library_versions(),
        }
    )


def source_files(directory: str, prefix: str = "") -> list[tuple[str, int, int]]:
    """Each ``.py`` and ``.lua`` file below ``directory`` (``__pycache__`` skipped): its path
    relative to it, size and mtime; a directory's files (by name) before its subdirectories
    (by name), as ``os.walk`` gives them. Strings, not pathlib or ``os.path.relpath``: every
    command stamps trainkit's couple of hundred files."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    files: list[tuple[str, int, int]] = []
    subdirectories = []
    for entry in entries:
        if entry.is_dir():
            if entry.name not in _SKIP_DIRS and not entry.is_symlink():
                subdirectories.append(entry)
        elif entry.name.endswith((".py", ".lua")):
            st = entry.stat()
            files.append((prefix + entry.name, st.st_size, st.st_mtime_ns))
    for entry in subdirectories:
        files += source_files(entry.path, f"{prefix}{entry.name}/")
    return files


def _library_versions() -> dict[str, list[str]]:
    """Each library's installed distribution (``name-version.dist-info``), found without
    importing it or importlib.metadata (both cost more than this whole module)."""
    import importlib.util

    out: dict[str, list[str]] = {}
    listings: dict[str, list[str]] = {}
    for module, dist in _DEPENDENCIES.items():
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        if origin is None:
            out[module] = []
            continue
        site = os.path.dirname(os.path.dirname(origin))
        if site not in listings:
            try:
                listings[site] = sorted(os.listdir(site))
            except OSError:
                listings[site] = []
        prefix = dist.lower().replace("-", "_") + "-"
        out[module] = [
            n
            for n in listings[site]
            if n.endswith(".dist-info") and n.lower().replace("-", "_", 1).startswith(prefix)
        ]
    return out


def jobs_tree(jobs_dir: Path) -> dict[str, str]:
    """Every file below ``jobs_dir`` → SHA-256 of its bytes (``link:<target>`` for a
    symbolic link, with the hash of the file it leads to, if any)."""
    out: dict[str, str] = {}

    def walk(top: str, prefix: str) -> None:
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError as e:
            out[prefix] = f"unreadable:{e.errno}"
            return
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_symlink():
                digest = file_digest(entry.path) if entry.is_file() else None
                out[rel] = f"link:{os.readlink(entry.path)}:{digest or ''}"
            elif entry.is_dir():
                if entry.name not in _SKIP_DIRS:
                    walk(entry.path, rel + "/")
            elif entry.is_file():
                out[rel] = file_digest(entry.path) or "unreadable"
            else:
                out[rel] = "special"

    walk(str(jobs_dir), "")
    return out


def _output_hashes(top: str) -> dict[str, str] | None:
    """Every file below the output directory → SHA-256; None unless it is a directory of
    regular files and directories only (anything else is the full run's to judge)."""
    out: dict[str, str] = {}

    def walk(directory: str, prefix: str) -> bool:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return False
        for entry in entries:
            if entry.is_symlink():
                return False
            if entry.is_dir():
                if not walk(entry.path, prefix + entry.name + "/"):
                    return False
            elif entry.is_file():
                digest = file_digest(entry.path)
                if digest is None:
                    return False
                out[prefix + entry.name] = digest
            else:
                return False
        return True

    if os.path.islink(top) or not os.path.isdir(top) or not walk(top, ""):
        return None
    return out


def _digest(data: object) -> str:
    raw = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
