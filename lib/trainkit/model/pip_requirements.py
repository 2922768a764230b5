"""What a RayJob's ``runtime_env.pip`` entry makes pip do, read the way Ray 2.60 has pip read it.

Ray's pip plugin writes each entry as one line of a requirements file and runs
``pip install -r <file>`` with the node's environment plus the runtime env's
``env_vars`` (ray-project/ray, Ray 2.60.0, ``python/ray/_private/runtime_env/pip.py``
``PipProcessor.__init__`` and ``_install_pip_packages``;
``python/ray/_private/runtime_env/dependency_utils.py`` ``gen_requirements_txt``). So an entry
is not only a package: pip reads a line of a requirements file as options (``--index-url``,
``-f``, ``-r`` another file or URL, ``-e`` an editable VCS checkout), a URL or path, a comment,
the start of a continued line, or ``${VAR}`` to expand (pip 23's
``pip/_internal/req/req_file.py``: ``preprocess``, ``break_args_options``), and a line break
inside an entry starts a line of its own. The only entry allowed here is a PEP 508
requirement: a name, optionally ``name @ <url>`` (a direct reference, which the platform's
``Policy.package_sources`` must allow; ``trainkit.policy.packages``).
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement

__all__ = [
    "PIP_STEERING_ENV",
    "direct_reference",
    "requirement_problem",
    "steers_pip",
    "url_problem",
]

# pip's options by what they would do in a runtime_env (pip/_internal/cli/cmdoptions.py).
_INDEX_OPTIONS = frozenset(
    {
        "-i", "--index-url", "--extra-index-url", "--no-index", "--trusted-host", "-f",
        "--find-links",
    }
)  # fmt: skip
_FILE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint"})
_EDITABLE_OPTIONS = frozenset({"-e", "--editable"})

# pip/_internal/utils/filetypes.py ARCHIVE_EXTENSIONS: a name ending so is read as a file.
_ARCHIVES = (
    ".whl", ".zip", ".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tlz",
    ".tar.lz", ".tar.lzma",
)  # fmt: skip

_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#\s@]+@)?[A-Za-z0-9.-]+(:[0-9]+)?(/|$)|file:///")
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^[./~]|/")

PIP_STEERING_ENV = (
    "PIP_*", "UV_*", "PIP_CONFIG_FILE", "HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "NETRC",
)  # fmt: skip
"""Variables that choose where pip gets packages from, or whom it trusts: pip reads every
option from ``PIP_<OPTION>`` (``PIP_INDEX_URL``, ``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS``,
``PIP_REQUIREMENT``…) and a configuration file from ``PIP_CONFIG_FILE`` or the home
directory; its HTTP client takes proxies, CA bundles and credentials from the others. Ray
installs ``runtime_env.pip`` with them (``PipProcessor.__init__``: ``os.environ`` and the
runtime env's ``env_vars``)."""


def steers_pip(name: str) -> bool:
    """Whether the variable ``name`` can change where pip installs packages from."""
    upper = name.upper()
    return upper.startswith(("PIP_", "UV_")) or upper in PIP_STEERING_ENV


def _option_problem(option: str) -> str:
    if option in _INDEX_OPTIONS:
        return (
            f"is pip's {option} option, which would choose where packages come from; packages "
            "come from the platform's indexes (Policy.package_indexes in jobs/platform/, "
            "which trainkit passes to pip): give the package by name"
        )
    if option in _FILE_OPTIONS:
        return (
            f"is pip's {option} option, which reads more requirements from a file or URL; "
            "list each package in pip=[...]"
        )
    if option in _EDITABLE_OPTIONS:
        return (
            f"is pip's {option} option, which installs a checkout of a VCS URL or a path; "
            "give the package by name, or 'name @ <url>' from a source the platform allows "
            "(Policy.package_sources)"
        )
    return f"holds the pip option {option}, which trainkit does not pass to pip; remove it"


def requirement_problem(entry: str) -> str | None:
    """Why pip would do more with ``entry`` than install one requirement; None when it would
    install exactly the PEP 508 requirement ``entry`` (by name, or ``name @ <url>``)."""
    bad = sorted({c for c in entry if not " " <= c <= "~"})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        return (
            f"holds {shown}: Ray writes each entry as a line of a requirements file, where a "
            "line break starts another line (an option or another requirement); an entry is "
            "one requirement in printable ASCII"
        )
    if "$" in entry:
        return (
            "holds '$': pip expands ${VAR} in a requirements file from the node's "
            "environment; write the requirement out"
        )
    if "\\" in entry:
        return "holds '\\': pip joins a line ending in it with the next; remove it"
    text = entry.strip()
    if not text:
        return "is empty; give a package, e.g. 'datasets==3.0.1'"
    if re.search(r"(^|\s)#", text):
        return "holds a comment ('#' after a space), which pip drops with the rest; remove it"
    tokens = text.split()
    options = [t for t in tokens if t.startswith("-")]
    if options:
        return _option_problem(options[0].split("=", 1)[0])
    try:
        req = Requirement(text)
    except InvalidRequirement as e:
        if _URL_LIKE.search(text) or text.lower().endswith(_ARCHIVES):
            return (
                "is a URL or path, which pip would install from that source; give the package "
                "by name (from the platform's indexes), or 'name @ <url>' from a source the "
                "platform allows (Policy.package_sources)"
            )
        return f"is not a requirement (PEP 508: name[extras] version ; markers): {e}"
    names = [req.name, *sorted(req.extras)]
    if not all(_NAME.fullmatch(n) for n in names):
        # PEP 508's identifier, which pip's own (vendored, older) parser holds to and newer
        # packaging relaxes.
        return (
            f"names {', '.join(repr(n) for n in names)}: a PEP 508 name starts and ends with a "
            "letter or digit, with '.', '_' or '-' only inside"
        )
    if req.url is not None and not _URL.match(req.url):
        # pip's own (vendored, older) PEP 508 parser refuses such a URL, packaging's newer one
        # takes it: say so here rather than at install time.
        return (
            f"has the URL {req.url!r}, which is not scheme://host/path (a host name, no brackets); write the URL out, "
            "e.g. 'name @ https://files.example.com/wheels/name-1.0-py3-none-any.whl'"
        )
    # pip reads a line whose requirement part ends like an archive as a file to install
    # (pip/_internal/req/constructors.py _get_url_from_path), whatever PEP 508 makes of it.
    head = text.split(";", 1)[0].strip()
    if req.url is None and head.lower().endswith(_ARCHIVES):
        return f"names a file ({head!r}), which pip would install from a path; give the package by name"
    return None


def direct_reference(entry: str) -> str | None:
    """The URL of ``name @ <url>`` (None for a requirement by name); ``entry`` is valid."""
    return Requirement(entry.strip()).url


def url_problem(url: str, sources: list[str]) -> str | None:
    """Why ``url`` is not under one of the platform's ``sources`` prefixes; None when it is."""
    lowered = url.lower()
    if "@" in url.split("://", 1)[-1].split("/", 1)[0]:
        return "names a user or password before the host; the platform's sources carry none"
    if any(part in lowered for part in ("/../", "/./", "%2e", "%2f", "%5c")) or lowered.endswith(
        ("/..", "/.")
    ):
        return "has a '..' or '.' path segment (or one encoded); write the path plainly"
    if not any(url.startswith(prefix) for prefix in sources):
        allowed = ", ".join(repr(s) for s in sources) if sources else "none"
        return f"is not under a source the platform allows (Policy.package_sources: {allowed})"
    return None
