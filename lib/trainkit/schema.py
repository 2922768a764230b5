"""JSON Schemas of the definition kinds, for editors and CI (``schemas/``)."""

from __future__ import annotations

import json
from pathlib import Path

from .model import JOB_KINDS, PLATFORM_KINDS
from .write import Changes, compare_tree

__all__ = ["render_schemas", "write_schemas"]


def render_schemas() -> dict[str, bytes]:
    """``<Kind>.json`` for every definition kind; field docstrings are the descriptions."""
    out = {}
    for kind in sorted(PLATFORM_KINDS + JOB_KINDS, key=lambda k: k.__name__):
        schema = kind.model_json_schema()
        schema["$id"] = f"https://trainkit.dev/schemas/{kind.__name__}.json"
        text = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        out[f"{kind.__name__}.json"] = text.encode("utf-8")
    return out


def write_schemas(directory: Path, *, check: bool = False) -> Changes:
    files = render_schemas()
    changes = compare_tree(directory, files)
    if check or not changes.any:
        return changes
    directory.mkdir(parents=True, exist_ok=True)
    for name in changes.removed:
        if name.endswith(".json"):
            (directory / name).unlink()
    for name in changes.added + changes.changed:
        (directory / name).write_bytes(files[name])
    return changes
