"""An object of the tree as rendered: its file, its body, and what it was made from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..load import Definition
from ..resolve import PlannedJob, PlannedRuntime

__all__ = ["Groups", "Rendered"]


@dataclass(frozen=True)
class Rendered:
    path: str
    body: dict[str, Any]
    source: str
    definition: Definition | None = None
    """The job or runtime definition, for objects that may not change in place."""
    planned: PlannedJob | PlannedRuntime | None = None
    """The planned job or runtime the object was rendered from."""
    plain: bool = False
    """A kustomize file, written as plain YAML (not a Kubernetes object for cdk8s)."""


Groups = list[tuple[str, list[Rendered]]]
"""Every object of the tree, one group per cluster (and Argo CD's)."""
