"""The upstream CRDs, pinned: which release files exist, and fetching them with checksums.

CI needs the CRDs of the operators the clusters run to validate the generated
tree, and trainkit never vendors them (they are large and version-specific).
``crds.toml`` pins the upstream release files trainkit is tested against by URL
and SHA-256; ``fetch_crds`` downloads them — or reads them from a mirror laid out
like the destination (``<dir>/<file>``) — and refuses any whose bytes differ.

    pins = load_pins()
    fetched = fetch_crds(pins_for_kinds(pins, {("kubeflow.org", "v1", "PyTorchJob")}), Path("crds"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainkit.upstream.pins import Pin, load_pins, pin_for, pins_for_kinds

if TYPE_CHECKING:
    from trainkit.upstream.transfer import MIRROR_ENV, Fetched, fetch_crds

_TRANSFER = ("MIRROR_ENV", "Fetched", "fetch_crds")


def __getattr__(name: str) -> Any:
    # The transfer (urllib.request, ssl: about 0.02 CPU-s) only when something fetches: check
    # and validate read the pins of every CRD, and fetch none.
    if name in _TRANSFER:
        from trainkit.upstream import transfer

        return getattr(transfer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MIRROR_ENV", "Fetched", "Pin", "fetch_crds", "load_pins", "pin_for", "pins_for_kinds"]
