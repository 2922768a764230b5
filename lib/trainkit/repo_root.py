"""Finding the repository a command runs in, so that it works from any subdirectory.

The root is the nearest directory, from the current one upwards, that holds
``jobs/``; the search stops at the top of the git work tree (a ``jobs/`` above
it belongs to something else). Without one, the git top level is the root, and
outside git the current directory.

The repository also says how its tree is regenerated (``synth_command``): headers
and messages name that command.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = ["find_root", "rebase", "synth_command"]

DEFAULT_COMMAND = "trainkit synth"


def find_root(start: Path) -> Path:
    """The repository root for a command started in ``start`` (absolute)."""
    for directory in (start, *start.parents):
        if (directory / "jobs").is_dir():
            return directory
        if (directory / ".git").exists():
            return directory
    return start


def rebase(path: str, start: Path, root: Path) -> str:
    """``path`` as given in ``start``, said from ``root``: relative when it lies below it."""
    full = Path(os.path.normpath(start / path))
    try:
        return full.relative_to(root).as_posix() or "."
    except ValueError:
        return str(full)


def synth_command(root: Path) -> str:
    """The command that regenerates the tree of the repository at ``root``.

    ``$TRAINKIT_SYNTH_COMMAND``, else ``synth-command`` under ``[tool.trainkit]`` of the
    repository's ``pyproject.toml`` (trainkit's own says ``make synth``), else
    ``trainkit synth``. Headers and messages name it, so they hold in every checkout
    whichever way a run was started.
    """
    explicit = os.environ.get("TRAINKIT_SYNTH_COMMAND")
    if explicit:
        return explicit
    try:
        with (root / "pyproject.toml").open("rb") as fh:
            config = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_COMMAND
    tool = config.get("tool")
    section = tool.get("trainkit") if isinstance(tool, dict) else None
    command = section.get("synth-command") if isinstance(section, dict) else None
    return command if isinstance(command, str) and command.strip() else DEFAULT_COMMAND
