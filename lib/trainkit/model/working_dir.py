"""A RayJob's ``runtime_env.working_dir``: a directory of the repository, or an archive the
platform lets the team fetch.

What Ray does with it (ray-project/ray, Ray 2.60.0):
- ``python/ray/_private/runtime_env/validation.py`` ``parse_and_validate_working_dir``: a
  path, or a URI; ``python/ray/_common/runtime_env_package.py``
  ``RUNTIME_ENV_PACKAGE_EXTENSIONS``: a remote ``working_dir`` is one archive (``.zip``,
  ``.tar.gz``, ``.tgz``, ``.tar.xz``); ``python/ray/_private/runtime_env/protocol.py``: the
  remote protocols (``https``, ``http``, ``s3``, ``gs``, ``azure``, ``abfss``, ``file``).
- ``python/ray/dashboard/modules/job/sdk.py`` ``JobSubmissionClient.submit_job``: ``ray job
  submit`` zips a local directory where it runs (``packaging.py`` ``_zip_files``, honouring
  ``excludes`` and the directory's ``.gitignore``/``.rayignore``), uploads it to the cluster and
  every worker of the job starts in its copy (``working_dir.py``).

trainkit ships a repository directory in a ConfigMap mounted on the submitter (the only place
KubeRay v1.7.0 runs ``ray job submit`` from a pod trainkit writes: ``common/job.go``
``BuildJobSubmitCommand`` passes ``runtimeEnvYAML`` as ``--runtime-env-json``), so the upload
is Ray's own. Which files go is decided here, when the repository is read
(``load/working_dir_files.py``), not by Ray at upload time: the ConfigMap holds exactly them.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import Annotated

from pydantic import AfterValidator

__all__ = [
    "ARCHIVE_EXTENSIONS",
    "ArchiveSource",
    "Exclude",
    "excluded",
    "is_remote",
    "remote_problem",
]

ARCHIVE_EXTENSIONS = (".zip", ".tar.gz", ".tgz", ".tar.xz")
"""What Ray 2.60.0 takes as a remote ``working_dir`` (runtime_env_package.py)."""

# Ray's remote protocols (protocol.py get_remote_protocols) less plain http, whose archive
# anyone on the path could change, and file, a path on the node. local:// (a directory on
# every node) and gcs:// (Ray's own uploads) are not archives a job names.
_SCHEMES = ("https", "s3", "gs", "azure", "abfss")
_SEGMENT = r"[A-Za-z0-9._~+-]+"
_SOURCE = re.compile(rf"(?P<scheme>{'|'.join(_SCHEMES)})://[A-Za-z0-9.-]+(:[0-9]+)?/({_SEGMENT}/)*")
_URI = re.compile(rf"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://[A-Za-z0-9.@:-]*(/{_SEGMENT})*/?")


def is_remote(working_dir: str) -> bool:
    """Whether ``working_dir`` names an archive by URI (``scheme://…``) rather than a
    directory of the repository."""
    return "://" in working_dir


def _archive_source(v: str) -> str:
    if not _SOURCE.fullmatch(v) or any(
        s in ("", ".", "..") for s in v.split("://")[1].split("/")[1:-1]
    ):
        raise ValueError(
            f"{v!r} is not a source prefix for archives: {', '.join(s + '://' for s in _SCHEMES)} "
            "a host or bucket without user or password, plain path segments, ending in '/' "
            "(e.g. 'https://artifacts.example.com/ray/', 's3://ml-code/')"
        )
    return v


ArchiveSource = Annotated[str, AfterValidator(_archive_source)]
"""A URI prefix of archives a team's RayJobs may run from (``Team.working_dir_sources``)."""


def remote_problem(uri: str) -> str | None:
    """Why ``uri`` is not an archive a RayJob may name as its ``working_dir`` (whatever the
    grants), or None."""
    match = _URI.fullmatch(uri)
    if match is None:
        return (
            "is not a URI trainkit reads: scheme://host/path with plain path segments (letters, "
            "digits and . _ ~ + -), no query or fragment (a signed URL's token would be "
            "committed to git)"
        )
    scheme = match["scheme"]
    if scheme not in _SCHEMES:
        return (
            f"uses {scheme}://, which is not offered ({', '.join(s + '://' for s in _SCHEMES)} "
            "are; plain http:// could be changed on its way, file:// and local:// name the "
            "node's disk, and a directory of the repository is written as its path)"
        )
    if "@" in uri.split("://", 1)[1].split("/", 1)[0]:
        return "names a user or password before the host; credentials never go in git"
    parts = uri.split("://", 1)[1].split("/")[1:]
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' path segment; write the path plainly"
    if not uri.endswith(ARCHIVE_EXTENSIONS):
        return (
            f"is not an archive Ray unpacks ({', '.join(ARCHIVE_EXTENSIONS)}; "
            "runtime_env_package.py)"
        )
    return None


def _exclude(v: str) -> str:
    body = v[1:] if v.startswith("/") else v
    body = body[:-1] if body.endswith("/") else body
    parts = body.split("/")
    if (
        not body
        or v.startswith(("!", "#"))
        or v != v.strip()
        or "[^" in v
        or "**" in v
        or "\\" in v
        or any(p in ("", ".", "..") for p in parts)
        or not v.isprintable()
    ):
        raise ValueError(
            f"{v!r} is not an exclude pattern trainkit reads: a name or glob ('*.ipynb', "
            "'data'), matched at any depth, or a path from the directory ('/notebooks/*', "
            "leading '/' or a '/' inside); a trailing '/' matches directories only. '*', '?' "
            "and '[...]' ('[!...]' to negate) stay within one path segment; no '**', no '!' "
            "negation, no '#' comment, no space at either end"
        )
    return v


Exclude = Annotated[str, AfterValidator(_exclude)]


def excluded(rel: str, is_dir: bool, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether the path ``rel`` (posix, from the working directory) matches one of
    ``patterns``: a pattern without an inner or leading ``/`` matches a name at any depth,
    one with it the whole path from the top; a trailing ``/`` only a directory. Glob
    characters never cross a ``/`` (``fnmatchcase`` per segment). An excluded directory
    takes its files with it, so a file is left out as git's ``.gitignore`` (and Ray's
    ``excludes``, pathspec's ``gitwildmatch``) would leave it out: a property test holds the
    two together."""
    parts = rel.split("/")
    for pattern in patterns:
        dir_only = pattern.endswith("/")
        if dir_only and not is_dir:
            continue
        body = pattern.rstrip("/")
        anchored = body.startswith("/") or "/" in body
        steps = body.lstrip("/").split("/")
        if anchored:
            if len(steps) == len(parts) and all(
                fnmatch.fnmatchcase(p, s) for p, s in zip(parts, steps, strict=True)
            ):
                return True
        elif fnmatch.fnmatchcase(posixpath.basename(rel), steps[0]):
            return True
    return False
