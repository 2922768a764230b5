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
    from ..model import Policy
    from ..validate import CrdSet, NeededCrd, TreeCrds

__all__ = ["crds_path", "load_crds", "tree_crds", "unverified"]


def crds_path(args: argparse.Namespace) -> str | None:
    """``--crds`` (said from the repository root), else ``$TRAINKIT_CRDS`` from where we started,
    else the pinned CRDs ``trainkit crds --fetch`` put outside the work tree, if any."""
    if args.crds:
        return str(args.crds)
    env = os.environ.get("TRAINKIT_CRDS")
    if env:
        return str(Path(args.started_in, env))
    fetched = _fetched()
    return str(fetched) if fetched is not None else None


def _fetched() -> Path | None:
    from ..cache_dir import fetched_crds_dir

    path = fetched_crds_dir()
    return path if path.is_dir() and any(path.rglob("*.yaml")) else None


def tree_crds(policy: Policy | None, file: str | None) -> TreeCrds:
    """Which CRD files in this repository's work tree (the command runs from its root) count:
    those the platform's ``Policy.crd_checksums`` (declared in ``file``) lists, and trainkit's
    pinned upstream files."""
    from ..crd_report import pinned_checksums
    from ..load import PLATFORM_DIR
    from ..validate import TreeCrds

    where = (
        f"Policy.crd_checksums in {file}"
        if policy is not None
        else f"Policy.crd_checksums in jobs/{PLATFORM_DIR}/, where no Policy is declared"
    )
    listed = dict(policy.crd_checksums) if policy is not None else {}
    return TreeCrds(Path.cwd(), listed, where, pinned_checksums())


def load_crds(args: argparse.Namespace, tree: TreeCrds | None) -> tuple[CrdSet | None, str]:
    """The CRDs to validate against (``--crds``, ``$TRAINKIT_CRDS``, else the fetched pinned
    ones) and how to say so; files inside the work tree count only as ``tree`` allows (None:
    no repository, nothing to guard)."""
    from ..crd_report import pinned_kinds
    from ..validate import crds_dir, load_crds

    # A file with a pinned upstream file's bytes serves what its pin says: it is read only
    # for those kinds, not for every kind whose group and name its text holds (the
    # Training Operator's v1 MPIJob for the MPI Operator's v2beta1 one).
    pinned = pinned_kinds()
    # --crds was said from the repository root already; $TRAINKIT_CRDS from where we started.
    path = crds_dir(args.crds) if args.crds else crds_dir(None, base=args.started_in)
    if path is not None:
        crds = load_crds(path, tree=tree, pinned=pinned)
        return crds, f"the CRDs in {args.crds or os.environ.get('TRAINKIT_CRDS')}"
    fetched = _fetched()
    if fetched is not None:
        crds = load_crds(fetched, tree=tree, pinned=pinned)
        return crds, f"the pinned CRDs fetched into {fetched}"
    return None, "object rules only, NOT against CRDs (no --crds)"


def unverified(args: argparse.Namespace, needs: list[NeededCrd], where: str) -> None:
    """Without CRDs: name every kind whose schema went unchecked; an error with --require-crds."""
    from ..validate import describe_kind

    if not needs:
        return
    kinds = ", ".join(describe_kind(n.key) for n in needs)
    message = (
        f"not validated against CRDs (no --crds, TRAINKIT_CRDS is not set, and none were "
        f"fetched): the schemas and CEL rules of {kinds} went unchecked, so the cluster may "
        "still reject these objects or silently drop their unknown fields; fetch the pinned "
        "upstream CRDs (trainkit crds --fetch) or pass --crds with your clusters' "
        "(kubectl get crd -o yaml)"
    )
    if args.require_crds:
        raise SetupError([Problem(file=where, message=message + " (--require-crds)")])
    notices(
        [], [Problem(file=where, message=message + "; --require-crds makes this an error")], args
    )
