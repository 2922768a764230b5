"""Editing the example tree a test copied (the ``ws`` fixture) and reading what it generated."""

from __future__ import annotations

from typing import Any

import yaml


def edit(ws: Any, rel: str, old: str, new: str) -> None:
    """Replace ``old``, which must stand exactly once in ``rel``, by ``new``."""
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} not once in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def generated_docs(ws: Any, name: str) -> list[dict[str, Any]]:
    """Every generated file called ``name`` (one per cluster it is on), parsed (by libyaml:
    the same objects as ``yaml.safe_load``, a tenth of its CPU)."""
    paths = sorted(ws.out.rglob(name))
    assert paths, name
    return [yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader) for p in paths]
