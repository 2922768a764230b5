"""``trainkit crds``: which CRDs the tree needs where, which are missing, fetching the pinned ones.

The tree is rendered, not written nor compared with git, so the list is there
before the first ``trainkit synth`` and without node. ``check`` validates every
kind listed here against its CRD only when the CRD is given: this is the list to
make complete, from the pinned upstream release files or from each cluster.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from trainkit.errors import Problem, SetupError
from trainkit.upstream import Pin, load_pins, pin_for
from trainkit.validate import CrdSet, NeededCrd, crd_needs, crds_dir, describe_kind, load_crds

if TYPE_CHECKING:
    from trainkit.load import LoadOptions

__all__ = ["crd_report", "pinned_checksums", "pinned_kinds"]


def crd_report(
    jobs_dir: Path,
    crds_option: str | None,
    *,
    fetch: Path | None = None,
    everything: bool = False,
    mirror: str | None = None,
    json_output: bool = False,
    load_options: LoadOptions | None = None,
    started_in: Path | None = None,
) -> int:
    """Print the report; raise SetupError naming each missing CRD (after printing)."""
    # Only here: ``check`` and ``validate`` read the pins (pinned_kinds), and ``validate``
    # outside a trainkit repository never loads a definition nor the models.
    from trainkit.synth import render_objects

    objects, notices, operators = render_objects(jobs_dir, load_options=load_options)
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    needs = crd_needs(objects)
    pins = load_pins()
    # Each kind's file: the pin serving its group, version and kind, from a release whose
    # controller the clusters needing it run (Cluster.operators).
    pinned = {
        n.key: pin_for(pins, *n.key, {o for c in n.clusters for o in operators.get(c, ())})
        for n in needs
    }
    if fetch is not None:
        from trainkit.upstream import fetch_crds

        wanted = {p for p in pinned.values() if p is not None}
        chosen = pins if everything else [p for p in pins if p in wanted]
        fetched = fetch_crds(chosen, fetch, mirror=mirror)
        new = sum(1 for f in fetched if f.source != "already there")
        print(
            f"{fetch.as_posix()}/: {len(fetched)} pinned CRD file(s), SHA-256 verified "
            f"({new} fetched from {mirror or 'upstream'}, {len(fetched) - new} already there)",
            file=sys.stderr,
        )
    if crds_option:
        source = crds_dir(crds_option)
    elif fetch is not None:
        source = fetch
    else:
        source = crds_dir(None, base=started_in)
    # Which file serves each kind, not its schema: a pinned upstream file is not read.
    crds = load_crds(source, pinned=_pinned_kinds(pins)) if source is not None else None
    rows = [(n, _found(n, crds, source), pinned[n.key]) for n in needs]
    if json_output:
        print(_json(rows, source))
    else:
        print(_text(rows, jobs_dir, source), end="")
    missing = [
        Problem(
            file=str(source),
            message=f"no CRD for {describe_kind(n.key)} (needed {_where(n)}); "
            + _how_to_get(pin, n, pins),
        )
        for n, found, pin in rows
        if source is not None and found is None
    ]
    if missing:
        raise SetupError(missing)
    return 0


def _found(need: NeededCrd, crds: CrdSet | None, source: Path | None) -> str | None:
    found = crds.source_of(need.key) if crds is not None else None
    if found is None or source is None:
        return None
    if found == source:
        return found.name
    try:
        return found.relative_to(source).as_posix()
    except ValueError:
        return str(found)


def _where(need: NeededCrd) -> str:
    places = [f"on cluster {c}" for c in need.clusters]
    if need.argocd:
        places.append("where Argo CD runs")
    places += [f"by {path}" for path in need.elsewhere]
    return ", ".join(places)


def _how_to_get(pin: Pin | None, need: NeededCrd, pins: list[Pin]) -> str:
    cluster = "add your cluster's (kubectl get crd -o yaml)"
    if pin is None:
        other = [p for p in pins if (p.group, p.kind) == (need.group, need.kind)]
        if other:
            served = ", ".join(
                f"{p.release} {p.version} serves {'/'.join(p.served)}" for p in other
            )
            return f"no pinned file serves {need.version} ({served}): " + cluster
        return cluster
    return (
        f"fetch the pinned {pin.release} {pin.version} one (trainkit crds --fetch), or " + cluster
    )


def _text(
    rows: list[tuple[NeededCrd, str | None, Pin | None]], jobs: Path, source: Path | None
) -> str:
    if not rows:
        return f"The tree of {jobs.as_posix()}/ uses no custom resources.\n"
    served = f"where {source} serves them" if source is not None else "and their upstream release"
    out = [f"CRDs the tree of {jobs.as_posix()}/ needs, {served}:"]
    places = sorted({c for n, _, _ in rows for c in n.clusters})
    sections: list[tuple[str, list[tuple[NeededCrd, str | None, Pin | None]]]] = []
    argo = [r for r in rows if r[0].argocd]
    if argo:
        sections.append(("where Argo CD runs (argocd/)", argo))
    for cluster in places:
        sections.append(
            (
                f"cluster {cluster} (clusters/{cluster}/)",
                [r for r in rows if cluster in r[0].clusters],
            )
        )
    other = [r for r in rows if r[0].elsewhere]
    if other:
        sections.append(("elsewhere", other))
    table: list[tuple[str, ...]] = []
    for title, section in sections:
        table.append((title,))
        for need, found, pin in section:
            if source is None:
                last = f"{pin.release} {pin.version}" if pin else "(not pinned)"
            else:
                last = found or "MISSING"
            table.append((need.group, need.kind, need.version, last))
    widths = [max(len(r[i]) for r in table if len(r) == 4) for i in range(3)]
    for row in table:
        if len(row) == 1:
            out.append(f"  {row[0]}")
        else:
            cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
            out.append("    " + "  ".join([*cells, row[3]]))
    if source is None:
        out.append(
            "No CRDs given (--crds or $TRAINKIT_CRDS), so nothing was compared: fetch the pinned "
            "ones with `trainkit crds --fetch`, or dump your clusters' with "
            "`kubectl get crd -o yaml`."
        )
    return "\n".join(out) + "\n"


def _json(rows: list[tuple[NeededCrd, str | None, Pin | None]], source: Path | None) -> str:
    return json.dumps(
        {
            "crds": str(source) if source is not None else None,
            "needs": [
                {
                    "group": n.group,
                    "version": n.version,
                    "kind": n.kind,
                    "clusters": list(n.clusters),
                    "argocd": n.argocd,
                    "found": found,
                    "pinned": None
                    if pin is None
                    else {"release": pin.release, "version": pin.version, "url": pin.url},
                }
                for n, found, pin in rows
            ],
        },
        indent=2,
    )


def pinned_checksums() -> frozenset[str]:
    """SHA-256 of every upstream CRD file trainkit pins (what ``crds --fetch`` writes): such a
    file inside the work tree is the upstream one, whoever put it there."""
    return frozenset(pinned_kinds())


@functools.cache
def pinned_kinds() -> Mapping[str, frozenset[tuple[str, str, str]]]:
    """SHA-256 of each upstream CRD file trainkit pins → the (group, version, kind) it serves:
    a CRD set told these reads a file with those bytes only for the kinds it serves. Read
    once per process (``check`` asks for the checksums and the kinds)."""
    kinds = _pinned_kinds(load_pins())
    return MappingProxyType({sha: frozenset(served) for sha, served in kinds.items()})


def _pinned_kinds(pins: list[Pin]) -> dict[str, set[tuple[str, str, str]]]:
    """SHA-256 of each pinned upstream CRD file → the (group, version, kind) it serves (the
    pins' ``served`` lists are checked against the files: tests/test_crds.py)."""
    kinds: dict[str, set[tuple[str, str, str]]] = {}
    for p in pins:
        kinds.setdefault(p.sha256, set()).update((p.group, v, p.kind) for v in p.served)
    return kinds
