"""``trainkit plan``: what a change of ``jobs/`` will do to each cluster.

The tree synthesized from the working copy is compared, object by object, with
what Argo CD deploys (the baseline of the in-place check): per cluster, the
objects Argo CD will create, change or delete, grouped by team, with a
field-level summary (a job's new run is one row); per queue and team what
every job in git would request at once against the limits; per new or changed
job its pods as the controllers run them. Text, markdown (a PR comment) or
JSON (``schemas/plan.schema.json``).
"""

from __future__ import annotations

from .compose import Review, build_review
from .facts import PlanReport
from .views import format_json, format_markdown, format_text

__all__ = ["PlanReport", "Review", "build_review", "format_json", "format_markdown", "format_text"]
