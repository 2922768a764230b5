"""What is deployed: the generated tree as committed at the revision Argo CD follows.

Immutable fields (a TrainJob's spec, a runtime's JobSet policies) can only be
checked against the version the cluster already has. Argo CD applies the
committed files of one revision, so that commit's ``generated/`` is the best
offline stand-in for the cluster; without git, the files on disk are.

Reading runs on every ``make synth``, so a git baseline costs a fixed handful
of ``git`` processes whatever the tree's size: one ``rev-parse`` finds the
repository, whether it is shallow and the first revision to try (another per
fallback revision), then one ``ls-tree`` and one ``cat-file --batch`` for all bytes.
Every comparison with the deployed tree skips a file that holds the bytes it is
compared with (nothing changes), so ``read_changed`` tells such a file by its blob
id in the ``ls-tree`` listing and reads only the others.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from trainkit.errors import Problem, SetupError

__all__ = ["DISK", "Baseline", "baseline_from_dir", "baseline_from_git", "resolve_baseline"]

DISK = "disk"
"""``--against disk``: compare with the files on disk instead of a git revision."""

_INSTALL_GIT = (
    "git not found on PATH; install it (e.g. `apt-get install git`), "
    f"or pass --against {DISK} to compare with the files on disk"
)


@dataclass(frozen=True)
class _GitTree:
    """The files below ``prefix`` as committed in ``commit``.

    A commit id rather than the branch name: a fetch during the run cannot
    make the listing and the contents come from two different trees.
    """

    git: str
    top: Path
    commit: str
    prefix: str  # the directory relative to ``top`` with a trailing "/", or "" for ``top`` itself

    def paths(self) -> list[str]:
        """Every file below ``prefix`` in ``commit``, relative to it (one ``ls-tree``)."""
        return list(self._listing)

    @cached_property
    def _listing(self) -> dict[str, str | None]:
        """Path (relative to ``prefix``) → blob id (None for what is no blob), listed once,
        also when nothing is committed below ``prefix`` yet (an empty listing)."""
        listing: dict[str, str | None] = {}
        pathspec = ["--", self.prefix] if self.prefix else []
        listed = _run(
            self.git, self.top, "--literal-pathspecs", "ls-tree", "-r", "-z", self.commit,
            *pathspec,
        )  # fmt: skip
        # "<mode> <type> <id>\t<path>": a path may hold spaces and tabs, never a NUL.
        for entry in listed.split(b"\0"):
            if not entry:
                continue
            meta, _, raw = entry.partition(b"\t")
            _mode, kind, blob = meta.split(b" ")
            name = raw.decode("utf-8", "surrogateescape").removeprefix(self.prefix)
            listing[name] = blob.decode("ascii") if kind == b"blob" else None
        return listing

    def unchanged(self, files: Mapping[str, bytes]) -> set[str]:
        """Those ``files`` (path → bytes) committed with exactly those bytes: git's blob id
        (the SHA-1 or SHA-256 of ``blob <size>\\0<bytes>``) of the bytes is the listed one."""
        listing = self._listing
        same = set()
        for rel, data in files.items():
            blob = listing.get(rel)
            if blob is None:
                continue
            # git's own id: SHA-1 (git hashes with collision detection, so no committed
            # blob carries a crafted collision) or SHA-256 in a sha256 repository.
            h = hashlib.new("sha1" if len(blob) == 40 else "sha256")
            h.update(b"blob %d\0" % len(data))
            h.update(data)
            if h.hexdigest() == blob:
                same.add(rel)
        return same

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = set(paths)
        if not wanted:
            return {}
        # cat-file --batch reads one object name per line, so a name holding a
        # newline cannot be asked for (and is no manifest trainkit writes).
        present = sorted(rel for rel in self._listing if rel in wanted and "\n" not in rel)
        if not present:
            return {}
        request = "".join(f"{self.commit}:{self.prefix}{rel}\n" for rel in present)
        out = _run(self.git, self.top, "cat-file", "--batch", stdin=request.encode())
        return {
            rel: blob
            for rel, blob in zip(present, _batch_objects(out), strict=True)
            if blob is not None
        }


def _batch_objects(out: bytes) -> Iterable[bytes | None]:
    """Each answer of ``git cat-file --batch``: the blob's bytes, or None (missing, not a blob)."""
    pos = 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        # "<sha> <type> <size>\n<bytes>\n"; a failed lookup is "<name> missing\n" (or
        # "ambiguous"), and a name may hold spaces, so only a numeric last word means content.
        if not header[-1].isdigit():
            yield None
            continue
        size = int(header[-1])
        content = out[pos : pos + size]
        pos += size + 1
        # A submodule (gitlink) or a tree is no file that Argo CD would apply.
        yield content if header[-2] == b"blob" else None


@dataclass(frozen=True)
class Baseline:
    """The deployed version of the files below ``directory``.

    ``description`` says where it comes from, for messages (``origin/main
    (1a2b3c4d5e6f)``, ``generated/ on disk``).
    """

    description: str
    directory: Path
    git: _GitTree | None = field(default=None, repr=False)
    nothing: bool = False
    """Nothing is known to be deployed (no git): every object is new."""

    def paths(self) -> list[str]:
        """Every file of the baseline (POSIX, relative to ``directory``), in no set order."""
        if self.nothing:
            return []
        if self.git is not None:
            return self.git.paths()
        top = str(self.directory)
        found: list[str] = []
        for here, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(here, top)
            found.extend(n if rel == "." else f"{rel}/{n}".replace(os.sep, "/") for n in names)
        return found

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        """Bytes of those ``paths`` (POSIX, relative to ``directory``) that exist in the baseline."""
        if self.nothing:
            return {}
        if self.git is not None:
            return self.git.read_many(paths)
        found: dict[str, bytes] = {}
        for rel in paths:
            try:
                found[rel] = (self.directory / rel).read_bytes()
            except OSError:
                continue  # absent (or unreadable, which the validator reports itself)
        return found

    def read_changed(self, files: Mapping[str, bytes]) -> dict[str, bytes]:
        """The deployed bytes of those ``files`` (path → their bytes now) that the baseline
        holds with other bytes: all a comparison with the deployed tree needs, since a file
        deployed as it is changes nothing. A git baseline tells such a file by its blob id,
        without reading it."""
        same = self.git.unchanged(files) if self.git is not None and not self.nothing else set()
        deployed = self.read_many(p for p in files if p not in same)
        return {p: old for p, old in deployed.items() if old != files[p]}


def baseline_from_dir(out_dir: Path) -> Baseline:
    """The files on disk below ``out_dir``."""
    return Baseline(f"{_dir_name(out_dir)} on disk", out_dir)


def baseline_from_git(root: Path, out_dir: Path, ref: str) -> Baseline:
    """``out_dir`` as committed at git revision ``ref`` of the repository holding ``root``.

    ``out_dir`` is relative to the current directory or absolute. Raises
    ``SetupError`` when git, the repository or the revision is missing.
    """
    git = shutil.which("git")
    if git is None:
        raise SetupError([Problem(file=str(root), message=_INSTALL_GIT)])
    top, why, _shallow, commit = _toplevel(git, root, ref)
    if top is None:
        message = (
            f"--against {ref} needs a git work tree, but this is not inside one ({why}); "
            f"run trainkit inside the repository, or pass --against {DISK}"
        )
        raise SetupError([Problem(file=str(root), message=message)])
    prefix = _prefix(top, out_dir)
    if prefix is None:
        raise SetupError([Problem(file=str(out_dir), message=_outside(top))])
    if commit is None:
        raise SetupError([Problem(file=str(top), message=_no_such_revision(ref))])
    return _git_baseline(git, top, out_dir, prefix, ref, commit)


def resolve_baseline(
    root: Path, out_dir: Path, against: str | None, revision: str = "main", *, require: bool = False
) -> Baseline:
    """The baseline to compare ``out_dir`` with: the one place synth, check and plan get it.

    ``against`` is a git revision, ``"disk"``, or None: then ``origin/<revision>``
    (what Argo CD follows, as last fetched), else ``<revision>``, else nothing
    (no git, repository or such branch: nothing is known to be deployed).

    With ``require`` (CI) only what Argo CD deploys will do: ``origin/<revision>``
    or an explicit ``against``. In a shallow clone or a checkout without the
    branch, the fallbacks would compare a pull request with itself and let an
    in-place change of a deployed TrainJob pass.
    """
    if against == DISK:
        return baseline_from_dir(out_dir)
    if against is not None:
        return baseline_from_git(root, out_dir, against)
    git = shutil.which("git")
    if git is None:
        return _missing(out_dir, "git is not installed", require, revision)
    refs = [f"origin/{revision}"] if require else [f"origin/{revision}", revision]
    top, why, shallow, commit = _toplevel(git, root, refs[0])
    if top is None:
        return _missing(out_dir, why, require, revision)
    prefix = _prefix(top, out_dir)
    if prefix is None:
        return _missing(out_dir, f"outside the git repository at {top}", require, revision)
    if commit is not None:
        return _git_baseline(git, top, out_dir, prefix, refs[0], commit)
    for ref in refs[1:]:
        commit = _commit(git, top, ref)
        if commit is not None:
            return _git_baseline(git, top, out_dir, prefix, ref, commit)
    why = f"origin/{revision} does not exist in git" + (" (a shallow clone)" if shallow else "")
    if not require:
        why = f"neither origin/{revision} nor {revision} exists in git"
    return _missing(out_dir, why, require, revision)


def _missing(out_dir: Path, why: str, require: bool, revision: str) -> Baseline:
    if not require:
        # Argo CD deploys from git: without it nothing is known to be deployed, and the
        # files on disk are this run's own output, not the cluster's (--against disk
        # still compares with them on purpose).
        return Baseline(f"nothing known to be deployed ({why})", out_dir, nothing=True)
    message = (
        f"what Argo CD deploys (origin/{revision}) is needed to refuse in-place changes of "
        f"deployed jobs, but {why}; fetch it (actions/checkout with fetch-depth: 0, or "
        f"`git fetch origin {revision}`), or name it with --against REV"
    )
    raise SetupError([Problem(file=_dir_name(out_dir), message=message)])


def _git_baseline(
    git: str, top: Path, out_dir: Path, prefix: str, ref: str, commit: str
) -> Baseline:
    return Baseline(f"{ref} ({commit[:12]})", out_dir, _GitTree(git, top, commit, prefix))


def _toplevel(git: str, root: Path, ref: str) -> tuple[Path | None, str, bool, str | None]:
    """The work tree's top directory, whether the repository is a shallow clone and the
    commit id ``ref`` names (None when it names nothing, as ``_commit``), from one
    ``rev-parse``; or None and git's reason (not a repository, no access)."""
    asked = _valid_ref(ref)
    verify = ["--verify", "-q", f"{ref}^{{commit}}"] if asked else []
    try:
        result = subprocess.run(
            [git, "-C", str(root), "rev-parse", "--show-toplevel", "--is-shallow-repository",
             *verify],
            capture_output=True,
            check=False,
        )  # fmt: skip
    except OSError as err:
        return None, str(err), False, None
    # "<top>\n<true|false>\n[<commit>\n]", in the order asked: the top may hold a newline,
    # the rest not. --verify -q fails with status 1 and nothing on stderr, after the rest.
    text = result.stdout.decode().removesuffix("\n")
    commit = None
    if result.returncode == 0 and asked:
        text, _, commit = text.rpartition("\n")
    top, _, shallow = text.rpartition("\n")
    if result.returncode not in ((0, 1) if asked else (0,)) or shallow not in ("true", "false"):
        stderr = result.stderr.decode(errors="replace")
        if "not a git repository" in stderr:
            return None, "not a git repository", False, None
        lines = stderr.strip().splitlines()
        return (
            None,
            (lines[0] if lines else f"git exited with status {result.returncode}"),
            False,
            None,
        )
    return Path(top), "", shallow == "true", commit or None


def _prefix(top: Path, out_dir: Path) -> str | None:
    """``out_dir`` relative to ``top`` as a git path prefix; None when outside the repository."""
    try:
        rel = out_dir.resolve().relative_to(top.resolve())
    except ValueError:
        return None
    return "" if rel == Path() else f"{rel.as_posix()}/"


def _commit(git: str, top: Path, ref: str) -> str | None:
    """The commit id ``ref`` names, or None when it names nothing (or no commit)."""
    if not _valid_ref(ref):
        return None
    result = subprocess.run(
        [git, "-C", str(top), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    commit = result.stdout.decode().strip()
    return commit if result.returncode == 0 and commit else None


def _valid_ref(ref: str) -> bool:
    """Whether ``ref`` may be asked of git at all: one starting with "-" would be read as an
    option, and is no valid revision anyway."""
    return not ref.startswith("-")


def _run(git: str, top: Path, *args: str, stdin: bytes | None = None) -> bytes:
    result = subprocess.run(
        [git, "-C", str(top), *args], input=stdin, capture_output=True, check=False
    )
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip() or f"status {result.returncode}"
        raise SetupError(
            [Problem(file=str(top), message=f"`git {' '.join(args)}` failed: {reason}")]
        )
    return result.stdout


def _no_such_revision(ref: str) -> str:
    return (
        f"git revision {ref!r} does not exist here (it must name a commit: a branch, tag or "
        "commit id); if it is a remote branch, run `git fetch origin` first, or pass another "
        f"--against (e.g. --against main, or --against {DISK} for the files on disk)"
    )


def _outside(top: Path) -> str:
    return (
        f"is outside the git repository at {top}, so git cannot tell what is deployed; "
        f"write the output inside the repository, or pass --against {DISK}"
    )


def _dir_name(out_dir: Path) -> str:
    return f"{out_dir.as_posix().rstrip('/')}/"
