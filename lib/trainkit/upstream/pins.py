"""``crds.toml``: one upstream CRD file per entry, with its release, URL, kind and checksum."""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["Pin", "load_pins", "pin_for", "pins_for_kinds"]


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
    served: tuple[str, ...] = ()
    """The versions the file's CRD serves (``spec.versions[].served``)."""
    operator: str | None = None
    """The controller of the release as ``Cluster.operators`` names it; None for the
    others (Argo CD, Volcano, Kueue, JobSet)."""

    def serves(self, group: str, version: str, kind: str) -> bool:
        return (self.group, self.kind) == (group, kind) and version in self.served


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
            served=tuple(str(v) for v in entry.get("served", ())),
            operator=str(release["operator"]) if "operator" in release else None,
        )


def pin_for(
    pins: Iterable[Pin], group: str, version: str, kind: str, operators: Collection[str] = ()
) -> Pin | None:
    """The pin whose file serves ``group/version kind``, or None.

    Group and kind alone are ambiguous (the Training Operator's ``MPIJob`` serves
    ``v1``, mpi-operator's ``v2beta1``, under the same CRD name): the served version
    decides, and where two releases still serve it, the one whose controller is in
    ``operators`` (the clusters' ``Cluster.operators``) wins; then file order.
    """
    serving = [p for p in pins if p.serves(group, version, kind)]
    run = [p for p in serving if p.operator is None or p.operator in operators]
    best = run or serving
    return best[0] if best else None


def pins_for_kinds(
    pins: Iterable[Pin],
    kinds: Iterable[tuple[str, str, str]],
    operators: Collection[str] = (),
) -> list[Pin]:
    """The pin of each (group, version, kind) in ``kinds`` that has one, in pin order."""
    pins = list(pins)
    chosen = {pin_for(pins, g, v, k, operators) for g, v, k in kinds} - {None}
    return [p for p in pins if p in chosen]
