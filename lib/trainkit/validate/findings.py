"""Findings: what a check found, before it is tied to a file and an object.

Checks record the JSON path as a tuple of segments rather than a string so
that the reader of a YAML file can map the path back to a line number, and
so that building a path costs one tuple per level instead of string
formatting for every value of every manifest (only failures are formatted).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["Finding", "JsonPath", "format_path"]

JsonPath = tuple[str | int, ...]

# Keys that read well after a dot; anything else ("nvidia.com/gpu",
# "app.kubernetes.io/name") is written as ["key"] so the path stays unambiguous.
_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


@dataclass(frozen=True, slots=True)
class Finding:
    """One violation at ``path`` inside a manifest document."""

    path: JsonPath
    message: str


def format_path(path: JsonPath) -> str:
    """``("spec", "containers", 0, "image")`` -> ``spec.containers[0].image``."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif _PLAIN_KEY.match(seg):
            out.append(f".{seg}" if out else seg)
        else:
            out.append(f"[{json.dumps(seg)}]")
    return "".join(out)
