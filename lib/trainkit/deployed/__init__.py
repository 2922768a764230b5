"""What is deployed, and what may not change in it.

``baseline`` finds the tree Argo CD deploys (git, else nothing); ``immutable``
says which fields of an object the cluster lets change; ``inplace`` keeps the
deployed bytes of unchanged jobs and refuses in-place changes of the rest.

The names are imported on first use: finding the baseline needs no model, and a
``trainkit synth`` with nothing to do finds it without loading pydantic.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from .baseline import DISK, Baseline, resolve_baseline
    from .inplace import keep_deployed, refuse_in_place_changes

__all__ = ["DISK", "Baseline", "keep_deployed", "refuse_in_place_changes", "resolve_baseline"]

_HOME = {
    "DISK": ".baseline",
    "Baseline": ".baseline",
    "resolve_baseline": ".baseline",
    "keep_deployed": ".inplace",
    "refuse_in_place_changes": ".inplace",
}


def __getattr__(name: str) -> typing.Any:
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
