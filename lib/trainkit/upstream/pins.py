"""``crds.toml``: one upstream CRD file per entry, with its release, URL, kind and checksum."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["Pin", "load_pins", "pins_for_kinds"]


@dataclass(frozen=True)
class Pin:
    """One CRD file of one upstream release."""

    release: str
    """The project, e.g. ``Volcano``."""
    version: str
    url: str
    path: str
    """Where the file goes below the destination (and lies below a mirror): ``<dir>/<file>``."""
    group: str
    kind: str
    sha256: str


def load_pins(text: str | None = None) -> list[Pin]:
    """The pins of ``crds.toml`` shipped with trainkit (or of ``text``), in file order."""
    if text is None:
        text = resources.files(__package__).joinpath("crds.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    pins: list[Pin] = []
    for release in data.get("release", []):
        pins.extend(_release_pins(release))
    return pins


def _release_pins(release: dict[str, Any]) -> Iterable[Pin]:
    base = str(release["url"])
    for entry in release.get("file", []):
        group, _, kind = str(entry["kind"]).partition("/")
        name = str(entry["name"])
        yield Pin(
            release=str(release["name"]),
            version=str(release["version"]),
            url=base + name,
            path=f"{release['dir']}/{name}",
            group=group,
            kind=kind,
            sha256=str(entry["sha256"]).lower(),
        )


def pins_for_kinds(pins: Iterable[Pin], kinds: Iterable[tuple[str, str]]) -> list[Pin]:
    """The first pin of each (group, kind) in ``kinds`` that has one, in pin order."""
    wanted = set(kinds)
    chosen: list[Pin] = []
    for pin in pins:
        if (pin.group, pin.kind) in wanted:
            wanted.discard((pin.group, pin.kind))
            chosen.append(pin)
    return chosen
