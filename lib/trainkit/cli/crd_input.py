"""The CRDs a command validates against (``--crds`` or ``$TRAINKIT_CRDS``), and what it says
when there are none."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem, SetupError
from .printing import notices

if TYPE_CHECKING:
    from ..validate import CrdSet, NeededCrd

__all__ = ["crds_path", "load_crds", "unverified"]


def crds_path(args: argparse.Namespace) -> str | None:
    """``--crds`` (said from the repository root), else ``$TRAINKIT_CRDS`` from where we started."""
    if args.crds:
        return str(args.crds)
    env = os.environ.get("TRAINKIT_CRDS")
    return str(Path(args.started_in, env)) if env else None


def load_crds(args: argparse.Namespace) -> tuple[CrdSet | None, str]:
    """The CRDs to validate against (``--crds`` or ``$TRAINKIT_CRDS``) and how to say so."""
    from ..validate import crds_dir, load_crds

    # --crds was said from the repository root already; $TRAINKIT_CRDS from where we started.
    path = crds_dir(args.crds) if args.crds else crds_dir(None, base=args.started_in)
    if path is None:
        return None, "object rules only, NOT against CRDs (no --crds)"
    return load_crds(path), f"the CRDs in {args.crds or os.environ.get('TRAINKIT_CRDS')}"


def unverified(args: argparse.Namespace, needs: list[NeededCrd], where: str) -> None:
    """Without CRDs: name every kind whose schema went unchecked; an error with --require-crds."""
    from ..validate import describe_kind

    if not needs:
        return
    kinds = ", ".join(describe_kind(n.key) for n in needs)
    message = (
        f"not validated against CRDs (no --crds, and TRAINKIT_CRDS is not set): the schemas "
        f"and CEL rules of {kinds} went unchecked, so the cluster may still reject these "
        "objects or silently drop their unknown fields; pass --crds with the pinned upstream "
        "CRDs (trainkit crds --fetch DIR) or your clusters' (kubectl get crd -o yaml)"
    )
    if args.require_crds:
        raise SetupError([Problem(file=where, message=message + " (--require-crds)")])
    notices(
        [], [Problem(file=where, message=message + "; --require-crds makes this an error")], args
    )
