"""One verdict per object: every rule, with or without CRDs, for every caller.

``check_object`` is what ``trainkit check`` (with or without ``--crds``) and
``trainkit validate`` run on each object. Its rules take what they depend on
as arguments — the pod allowance, the CRDs, the deployed version — so the
same object gets the same findings whichever command asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainkit.kube.pods import pod_specs
from trainkit.validate.containers import check_containers
from trainkit.validate.findings import Finding
from trainkit.validate.limits import check_limits
from trainkit.validate.node_labels import check_node_labels
from trainkit.validate.objects import check_metadata
from trainkit.validate.pod_security import PodAllowance, check_pod_security
from trainkit.validate.resources import check_quantities

if TYPE_CHECKING:
    from trainkit.validate.crds import CrdSet

__all__ = ["check_object", "describe_object"]


def check_object(
    doc: dict[str, Any],
    allowance: PodAllowance,
    crds: CrdSet | None = None,
    old: dict[str, Any] | None = None,
) -> list[Finding]:
    """All findings of one object: the object rules, then its CRD's schema and CEL rules.

    ``allowance`` is what pod templates may be granted (``PodAllowance.from_profiles``
    of the platform's NetworkProfiles, or ``BASELINE``). Without ``crds`` only the
    object rules run. ``old`` is the deployed object, for CEL transition rules.
    """
    out: list[Finding] = []
    pods = list(pod_specs(doc))
    check_metadata(doc, out)
    check_quantities(doc, pods, out)
    check_containers(pods, out)
    check_node_labels(pods, out)
    check_pod_security(pods, out, allowance)
    check_limits(doc, out)
    if crds is not None:
        crds.check_schema(doc, old, out)
    return out


def describe_object(doc: dict[str, Any]) -> str:
    """``PyTorchJob 'resnet50-ddp'`` — how Problems name an object."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    kind = str(doc.get("kind", "?"))
    return f"{kind} {name!r}" if isinstance(name, str) and name else kind
