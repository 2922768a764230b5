"""Refuse a synth that would change a deployed object where the cluster forbids it.

A TrainJob cannot change once created; neither can a PyTorchJob's queue nor
a runtime's JobSet policies. Argo CD would apply such an edit, the API server
would reject it ("field is immutable") and the sync would stay failed. So
each rendered job and runtime is compared with its deployed version (the
committed file at the same path, see ``deployed``) before anything is
written, and the error says how to make the change a new object instead.
"""

from __future__ import annotations

from typing import Any

import yaml

from .deployed import Baseline
from .errors import DefinitionError, Problem
from .immutable import in_place_changes
from .load import Definition
from .model import PyTorchJob, TrainJob

__all__ = ["refuse_in_place_changes"]


def refuse_in_place_changes(
    files: dict[str, bytes], origins: dict[str, Definition], baseline: Baseline
) -> None:
    """Raise DefinitionError naming every object of ``origins`` that would change in place.

    ``origins`` maps the path of each job and runtime file to its definition.
    """
    deployed = baseline.read_many(sorted(origins))
    problems = []
    for path, old_bytes in deployed.items():
        new_bytes = files.get(path)
        if new_bytes is None or new_bytes == old_bytes:
            continue
        old, new = _load(old_bytes), _load(new_bytes)
        if old is None or new is None:
            continue  # an unreadable deployed file is the validator's to report
        changed = in_place_changes(old, new)
        if changed:
            problems.append(_problem(origins[path], path, new, changed, baseline))
    if problems:
        raise DefinitionError(problems)


def _load(data: bytes) -> dict[str, Any] | None:
    try:
        doc = yaml.load(data, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None
    return doc if isinstance(doc, dict) else None


def _problem(
    d: Definition, path: str, new: dict[str, Any], changed: list[str], baseline: Baseline
) -> Problem:
    kind, name = new.get("kind", ""), new.get("metadata", {}).get("name", "")
    cluster = path.split("/")[1] if path.startswith("clusters/") else "?"
    what = (
        f"{kind} {name!r} on cluster {cluster!r} is deployed from {baseline.description} "
        f"and would change in place ({', '.join(changed)})"
    )
    obj = d.obj
    if isinstance(obj, TrainJob):
        return Problem(
            file=d.file,
            line=d.line,
            obj=obj.describe(),
            field="run",
            message=f"{what}, but a TrainJob cannot change once created (Argo CD's sync "
            f"would fail: field is immutable); set run={obj.run + 1} to start a new run "
            f"(Argo CD prunes {name!r}), or revert the change",
        )
    if isinstance(obj, PyTorchJob):
        advice = "rename the job to start a new one, or keep the old queue"
    else:
        advice = (
            "give the runtime a new name (e.g. with a version suffix) and point the "
            "jobs at it, or revert the change"
        )
    return Problem(
        file=d.file,
        line=d.line,
        obj=obj.describe(),
        field="name",
        message=f"{what}, which the API server refuses (field is immutable); {advice}",
    )
