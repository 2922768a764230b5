"""What is deployed, and what may not change in it.

``baseline`` finds the tree Argo CD deploys (git, else nothing); ``immutable``
says which fields of an object the cluster lets change; ``inplace`` keeps the
deployed bytes of unchanged jobs and refuses in-place changes of the rest.
"""

from __future__ import annotations

from .baseline import DISK, Baseline, resolve_baseline
from .inplace import keep_deployed, refuse_in_place_changes

__all__ = ["DISK", "Baseline", "keep_deployed", "refuse_in_place_changes", "resolve_baseline"]
