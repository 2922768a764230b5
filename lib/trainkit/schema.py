"""JSON Schemas of the definition kinds, for editors and CI (``schemas/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .model import JOB_KINDS, PLATFORM_KINDS
from .write import Changes, compare_tree

__all__ = ["PLAN_SCHEMA", "render_schemas", "write_schemas"]


PLAN_SCHEMA = "plan.schema.json"
"""The format of ``trainkit plan --format json``."""


def render_schemas() -> dict[str, bytes]:
    """``<Kind>.json`` for every definition kind and ``plan.schema.json`` for the plan's JSON;
    field docstrings are the descriptions."""
    from .plan import PlanReport  # only here: every other command would import it

    out = {}
    for kind in sorted(PLATFORM_KINDS + JOB_KINDS, key=lambda k: k.__name__):
        out[f"{kind.__name__}.json"] = _text(kind.model_json_schema(), f"{kind.__name__}.json")
    out[PLAN_SCHEMA] = _text(PlanReport.model_json_schema(mode="serialization"), PLAN_SCHEMA)
    return out


def _text(schema: dict[str, Any], name: str) -> bytes:
    schema["$id"] = f"https://trainkit.dev/schemas/{name}"
    return (json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


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
