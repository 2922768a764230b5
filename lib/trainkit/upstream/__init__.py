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

from trainkit.upstream.pins import Pin, load_pins, pin_for, pins_for_kinds
from trainkit.upstream.transfer import MIRROR_ENV, Fetched, fetch_crds

__all__ = ["MIRROR_ENV", "Fetched", "Pin", "fetch_crds", "load_pins", "pin_for", "pins_for_kinds"]
