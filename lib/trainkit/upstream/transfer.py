"""Downloading pinned CRD files, from upstream or a mirror, through one code path.

Upstream URLs and mirrors (``https://…``, ``file://…`` or a directory) are all
read with ``urllib``; a file is written only after its SHA-256 matches the pin,
to a temporary name renamed into place, so a destination never holds a
truncated or unverified CRD that validation would then trust.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from trainkit.errors import Problem, SetupError
from trainkit.upstream.pins import Pin

__all__ = ["MIRROR_ENV", "Fetched", "fetch_crds"]

MIRROR_ENV = "TRAINKIT_CRDS_MIRROR"
"""A mirror (URL or directory) holding ``<dir>/<file>`` like the destination does."""

# The largest upstream CRD is ~1.4 MB; a response far beyond that is not a CRD file.
_MAX_BYTES = 16 << 20
_TIMEOUT = 60.0
_SCHEMES = ("https", "http", "file")


@dataclass(frozen=True)
class Fetched:
    """One pinned file in the destination, and where its bytes came from."""

    pin: Pin
    path: Path
    source: str
    """The URL read, or ``already there`` when the file on disk matched the pin."""


def fetch_crds(pins: Iterable[Pin], dest: Path, *, mirror: str | None = None) -> list[Fetched]:
    """Put every pinned file below ``dest``, verified; raise SetupError naming each failure.

    A file already in ``dest`` with the pinned checksum is kept without a download.
    Files that fetched fine are written even when another one fails (a re-run fetches
    only what is still missing).
    """
    base = _mirror_base(mirror) if mirror else None
    done: list[Fetched] = []
    problems: list[Problem] = []
    for pin in pins:
        target = dest / pin.path
        if _matches(target, pin.sha256):
            done.append(Fetched(pin, target, "already there"))
            continue
        url = base + urllib.parse.quote(pin.path) if base else pin.url
        try:
            data = _download(url)
        except _FetchError as err:
            offline = (
                ""
                if base
                else "; offline, read the same files from a mirror (--mirror DIR_OR_URL, or "
                f"${MIRROR_ENV}) or validate against your clusters' CRDs "
                "(kubectl get crd -o yaml > crds.yaml, then --crds crds.yaml)"
            )
            problems.append(Problem(file=url, message=f"cannot fetch {pin.path}: {err}{offline}"))
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != pin.sha256:
            problems.append(
                Problem(
                    file=url,
                    message=f"sha256 {digest} differs from the pinned {pin.sha256} of "
                    f"{pin.release} {pin.version} {pin.path}; not written (the mirror holds "
                    "another version, or the upstream file changed)",
                )
            )
            continue
        try:
            _write(target, data)
        except OSError as err:
            problems.append(Problem(file=str(target), message=f"cannot write: {err}"))
            continue
        done.append(Fetched(pin, target, url))
    if problems:
        raise SetupError(problems)
    return done


class _FetchError(Exception):
    pass


def _mirror_base(mirror: str) -> str:
    """The mirror as a URL ending in ``/``; a plain path is a local directory."""
    scheme = urllib.parse.urlsplit(mirror).scheme
    if scheme in _SCHEMES:
        return mirror.rstrip("/") + "/"
    path = Path(mirror).resolve()
    if not path.is_dir():
        raise SetupError(
            [Problem(file=mirror, message="CRD mirror: no such directory (nor an https:// URL)")]
        )
    return path.as_uri() + "/"


def _download(url: str) -> bytes:
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise _FetchError(f"unsupported URL scheme {scheme!r} (use https://, http:// or file://)")
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as response:
            data: bytes = response.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as err:
        raise _FetchError(f"HTTP {err.code} {err.reason}") from err
    except urllib.error.URLError as err:
        raise _FetchError(str(err.reason)) from err
    except (OSError, ValueError) as err:
        raise _FetchError(str(err)) from err
    if len(data) > _MAX_BYTES:
        raise _FetchError(f"more than {_MAX_BYTES >> 20} MiB: not a CRD file")
    return data


def _matches(path: Path, sha256: str) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        # mkstemp makes it 0600: a CRD is no secret, and CI or a colleague reads it as
        # another user (0644, less what the umask takes away).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o644 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
