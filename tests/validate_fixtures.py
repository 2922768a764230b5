"""Shared by the validate tests: the upstream CRDs, read once per test session.

A module-level cache rather than a session fixture: a fixture imported into
several test modules is a separate fixture in each, and would be computed
once per module. Loaded with ``no_cache=True`` so the tests never read or
write the developer's CRD cache (the cache has its own tests).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import celpy

from conftest import crds_dir
from trainkit.errors import Problem
from trainkit.validate import (
    BASELINE,
    CrdSet,
    PodAllowance,
    check_object,
    describe_object,
    load_crds,
)
from trainkit.validate.findings import format_path

__all__ = ["shared_crd_set", "validate_doc"]


@cache
def shared_crd_set() -> CrdSet:
    """The CRDs of ``$TRAINKIT_CRDS`` (or ../shared/crds), one CrdSet for the whole session."""
    # Schemas compile on first use, and cel-python raises the recursion limit each time it
    # creates an Environment; raise it now, so no property test sees it change mid-example.
    celpy.Environment()
    return load_crds(crds_dir(), no_cache=True)


def validate_doc(
    crds: CrdSet | None,
    doc: dict[str, Any],
    file: str,
    old: dict[str, Any] | None = None,
    allowance: PodAllowance = BASELINE,
) -> list[Problem]:
    """``check_object`` of one document, as the Problems ``validate`` would print (no lines)."""
    obj = describe_object(doc)
    return [
        Problem(file=file, message=f.message, obj=obj, field=format_path(f.path))
        for f in check_object(doc, allowance, crds, old)
    ]
