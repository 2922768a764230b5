"""The plan for people (text), for a pull request (markdown) and for programs (JSON).

The markdown is a PR comment: a summary line, one table per cluster that
changes, what deserves attention (deletions, queues over capability) in the
open, and the queues, teams and jobs in a collapsible ``<details>``. GitHub
refuses comments over 65,536 characters, so a plan too long for one drops its
details first, then its last rows, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from ..effective.podsets import RAY
from ..errors import printable
from .facts import (
    Amounts,
    ClusterReport,
    JobFacts,
    ObjectChange,
    PlanReport,
    QueueSide,
    QueueUse,
    TeamUse,
)
from .facts import Resource as _Resource
from .summaries import shown

__all__ = ["COMMENT_LIMIT", "format_json", "format_markdown", "format_text"]

COMMENT_LIMIT = 60_000
"""Characters of markdown at most (GitHub's limit is 65,536), with room to spare."""

_VERB = {"add": "added", "new-run": "new run", "change": "changed", "remove": "removed"}
_SIGN = {"add": "+", "new-run": "~", "change": "~", "remove": "-"}
_LABEL: dict[_Resource, str] = {"gpu": "GPU", "cpu": "cpu", "memory": "memory"}
_ONCE = "if every job in git ran at once"


def format_json(report: PlanReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


# --- shared wording -------------------------------------------------------------------


def _counts(changes: list[ObjectChange]) -> str:
    counts: dict[str, int] = {}
    for c in changes:
        counts[c.action] = counts.get(c.action, 0) + 1
    parts = []
    for action in ("add", "new-run", "change", "remove"):
        n = counts.get(action, 0)
        if n and action == "new-run":
            parts.append(_plural(n, "new run"))
        elif n:
            parts.append(f"{n} {_VERB[action]}")
    return ", ".join(parts) or "no change"


def _object(c: ObjectChange, code: Callable[[str], str]) -> str:
    name = code(c.name) if c.previous is None else f"{code(c.previous)} → {code(c.name)}"
    return f"{c.kind} {name}"


def _procs(f: JobFacts) -> str:
    if f.procs_per_node == RAY:
        return "Ray tasks"
    return "auto (one per GPU)" if f.procs_per_node == "auto" else f.procs_per_node


def _plural(n: int | str, word: str) -> str:
    if str(n) == "1":
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def _facts(f: JobFacts) -> str:
    queue = f", queue {f.queue}" if f.queue else ""
    if f.procs_per_node == RAY:
        return f"Ray cluster of {_plural(f.nodes, 'node')}, {f.gpus} {f.gpu_resource}{queue}"
    procs = (
        "auto processes (one per GPU)"
        if f.procs_per_node == "auto"
        else _plural(f.procs_per_node, "process")
    )
    return (
        f"{_plural(f.nodes, 'node')} × {procs} = world size {f.world_size}, "
        f"{f.gpus} {f.gpu_resource}{queue}"
    )


def _what(c: ObjectChange, code: Callable[[str], str] = str) -> str:
    """The row's one-line summary: fields for changes, the facts of a new job, the deletion."""
    if c.action == "remove":
        return c.note
    if c.action == "add":
        if c.after is not None:
            return _facts(c.after)
        return f"from {code(c.source)}" if c.source else "new"
    return ", ".join(code(shown(f)) for f in c.fields) or "metadata"


def _get(a: Amounts | None, r: _Resource) -> str | None:
    if a is None:
        return None
    value = getattr(a, r) if r in _LABEL else a.other.get(r)
    return None if value is None else str(value)


def _others(q: QueueUse) -> list[str]:
    """The resources besides GPUs, cpu and memory that the queue quotes or its jobs request."""
    names: set[str] = set()
    for side in (q.before, q.after):
        if side is not None:
            for a in (side.requests, side.capability, side.deserved, side.guarantee):
                if a is not None:
                    names.update(a.other)
    return sorted(names)


def _span(before: str | None, after: str | None, *, gone: str = "—") -> str:
    if before == after:
        return after if after is not None else gone
    return f"{before if before is not None else gone} → {after if after is not None else gone}"


def _queue_cell(q: QueueUse, r: _Resource) -> str:
    b, a = q.before, q.after

    def span(pick: Callable[[QueueSide], Amounts | None], gone: str = "—") -> str | None:
        before = _get(pick(b), r) if b is not None else None
        after = _get(pick(a), r) if a is not None else None
        if b is None or a is None:
            return after if a is not None else before  # a new or removed queue: its one side
        if before is None and after is None:
            return None
        return _span(before, after, gone=gone)

    text = span(lambda x: x.requests) or "0"
    for word, pick in (
        ("of", _capability),
        ("deserved", _deserved),
        ("guarantee", _guarantee),
        ("borrows", _borrowing),
    ):
        # A side that borrows nothing borrows 0; a side without a limit has none (—).
        limit = span(pick, "0" if word == "borrows" else "—")
        if limit is not None:
            text += f" of {limit}" if word == "of" else f", {word} {limit}"
    if a is not None and r in a.above_deserved and r not in a.over_capability:
        text += " (above deserved: reclaimable)" if a.reclaimable else " (above deserved)"
    if a is not None and r in a.over_capability:
        text += " (over: jobs wait)"
    elif b is not None and r in b.over_capability:
        text += " (was over)"
    return text


def _capability(x: QueueSide) -> Amounts | None:
    return x.capability


def _deserved(x: QueueSide) -> Amounts | None:
    return x.deserved


def _guarantee(x: QueueSide) -> Amounts | None:
    return x.guarantee


def _borrowing(x: QueueSide) -> Amounts | None:
    return x.borrowing


def _queue_name(q: QueueUse, code: Callable[[str], str]) -> str:
    state = " (new)" if q.before is None else " (removed)" if q.after is None else ""
    b = q.before.cohort if q.before is not None else None
    a = q.after.cohort if q.after is not None else b
    b = b if q.before is not None else a
    cohort = "" if a is None and b is None else f" (cohort {_span(b, a, gone='none')})"
    return code(q.queue) + state + cohort


def _team_cell(t: TeamUse) -> str:
    text = _span(str(t.before), str(t.after))
    text += f" of {t.max_gpus}" if t.max_gpus is not None else " (no cap)"
    if t.over_after:
        text += " (over)"
    elif t.over_before:
        text += " (was over)"
    return text


def _over(cluster: str, q: QueueUse) -> str | None:
    side = q.after
    if side is None or not side.over_capability:
        return None
    parts = []
    for r in side.over_capability:
        cap = _get(side.capability, r)
        borrowed = _get(side.borrowing, r)
        more = f" and {borrowed} borrowed" if borrowed is not None else ""
        parts.append(f"{_LABEL.get(r, r)} {_get(side.requests, r) or 0} of {cap}{more}")
    what = (
        "over its capability"
        if side.cohort is None
        else f"over its nominal quota and what cohort `{side.cohort}` can lend it"
    )
    return (
        f"queue `{q.queue}` on `{cluster}` {_ONCE}: {', '.join(parts)}; {what}, "
        "jobs wait for each other (not an error)"
    )


def _changed_clusters(report: PlanReport) -> list[ClusterReport]:
    return [c for c in report.clusters if c.changes]


def _limits(queues: list[QueueUse], volcano: str) -> str:
    """What the queues are shown against: ``volcano`` words for Volcano queues."""
    kinds = {q.kind for q in queues}
    if kinds == {"ClusterQueue"}:
        return "nominal quota, and what it borrows from its cohort"
    if "ClusterQueue" in kinds:
        return f"{volcano} (a ClusterQueue's nominal quota, and what it borrows from its cohort)"
    return volcano


def _interesting_queues(c: ClusterReport) -> list[QueueUse]:
    return [q for q in c.queues if q.before != q.after or _over(c.cluster, q)]


# --- text -----------------------------------------------------------------------------


def format_text(report: PlanReport) -> str:
    if report.baseline_found:
        lines = [f"Plan against {report.baseline}, what Argo CD deploys:"]
    else:
        lines = ["Plan against an empty tree:"]
    if report.note:
        lines.append(f"note: {report.note}")
    for c in report.clusters:
        lines.append("")
        lines.append(f"{c.cluster}: {_counts(c.changes)}")
        lines += _text_cluster(c)
    if report.argocd:
        lines += ["", f"Argo CD: {_counts(report.argocd)}"]
        lines += _text_rows(report.argocd)
    if report.migration:
        lines += ["", "Moving to one Application per team (keeping every job):"]
        lines += [f"  {step}" for step in report.migration]
    return "\n".join(lines) + "\n"


def _text_rows(changes: list[ObjectChange]) -> Iterator[str]:
    team = None
    for c in changes:
        if c.team != team:
            team = c.team
            yield f"  {team}"
        yield f"    {_SIGN[c.action]} {_object(c, str)}: {_what(c)}"
        if c.action in ("new-run", "change") and c.after is not None:
            yield f"        {_facts(c.after)}"
        if c.after is not None and c.action != "remove":
            yield f"        image {c.after.image}"
        if c.action == "new-run":
            yield f"        {c.note}"


def _text_cluster(c: ClusterReport) -> Iterator[str]:
    if not c.changes:
        return
    yield from _text_rows(c.changes)
    queues = _interesting_queues(c)
    if queues:
        against = _limits(queues, "capability")
        yield f"  queues: requests {_ONCE}, before → after, of the queue's {against}"
        names = [_queue_name(q, str) for q in queues]
        width = max(len(n) for n in names)
        for q, name in zip(queues, names, strict=True):
            cells = "   ".join(
                f"{_LABEL.get(r, r)} {_queue_cell(q, r)}"
                for r in ("gpu", "cpu", "memory", *_others(q))
            )
            yield f"    {name:<{width}}  {cells}"
    teams = [t for t in c.teams if t.before != t.after or t.over_after or t.over_before]
    if teams:
        yield f"  teams: GPUs {_ONCE}, before → after, of Team.max_gpus"
        width = max(len(t.team) for t in teams)
        for t in teams:
            yield f"    {t.team:<{width}}  {_team_cell(t)}"


# --- markdown -------------------------------------------------------------------------


def _code(text: str) -> str:
    """An inline code span that nothing inside closes: a backtick becomes ``'``, and line
    breaks and controls are escaped (a span cannot leave its table row)."""
    return "`" + printable(text).replace("`", "'").replace("|", "\\|") + "`"


def _cell(text: str) -> str:
    """Text of a table cell or a quote: no line break, control character or HTML tag of
    the definition's (GitHub renders some HTML in comments) can reshape the comment."""
    escaped = printable(text.replace("\n", " "))
    return (
        escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
    )


def format_markdown(report: PlanReport, *, limit: int = COMMENT_LIMIT) -> str:
    full = _markdown(report, details=True)
    if len(full) <= limit:
        return full
    short = _markdown(report, details=False)
    if len(short) <= limit:
        return short
    cut = short[: short.rfind("\n", 0, limit - 200) + 1]
    return cut + "\n_The plan is too long for one comment; run `trainkit plan` for all of it._\n"


def _markdown(report: PlanReport, *, details: bool) -> str:
    out = ["### trainkit plan", ""]
    summary = [f"**{c.cluster}**: {_counts(c.changes)}" for c in report.clusters]
    if report.argocd:
        summary.append(f"**Argo CD**: {_counts(report.argocd)}")
    against = (
        f"Against {_code(report.baseline)}, what Argo CD deploys."
        if report.baseline_found
        else "Against an empty tree."
    )
    out.append(f"{against} " + (" · ".join(summary) if summary else "No cluster."))
    if report.note:
        out += ["", f"> **Note**: {_cell(report.note)}"]
    if report.migration:
        out += ["", "**Moving to one Application per team** (keeping every job):", ""]
        out += [f"- {_cell(step)}" for step in report.migration]
    for c in _changed_clusters(report):
        out += ["", f"#### {c.cluster}: {_counts(c.changes)}", ""]
        out += _md_rows(c.changes)
        warnings = [w for q in c.queues if (w := _over(c.cluster, q))]
        if warnings:
            out.append("")
            out += [f"> ⚠️ {_cell(w)}  " for w in warnings]
        if details:
            out += _md_details(c)
    if report.argocd:
        out += ["", f"#### Argo CD: {_counts(report.argocd)}", ""]
        out += _md_rows(report.argocd)
    if not details:
        out += ["", "_Queues, teams and jobs left out: the comment would be too long._"]
    return "\n".join(out) + "\n"


def _md_rows(changes: list[ObjectChange]) -> list[str]:
    out = ["| team | change | object | what |", "| --- | --- | --- | --- |"]
    team = None
    for c in changes:
        shown_team = c.team if c.team != team else ""
        team = c.team
        verb = f"**{_VERB[c.action]}**" if c.action == "remove" else _VERB[c.action]
        what = _what(c, _code) if c.action != "remove" else _cell(c.note)
        out.append(f"| {shown_team} | {verb} | {_object(c, _code)} | {what} |")
    return out


def _md_details(c: ClusterReport) -> list[str]:
    out = ["", f"<details><summary>Queues, teams and jobs on {c.cluster}</summary>", ""]
    queues = _interesting_queues(c)
    if queues:
        out += [f"Requests {_ONCE}, against each queue's {_limits(queues, 'limits')}:", ""]
        # Other resources (ephemeral-storage, extended ones) share one column, shown only
        # where a queue has any.
        other = any(_others(q) for q in queues)
        head, rule = "| queue | GPU | cpu | memory |", "| --- | --- | --- | --- |"
        out += [head + " other |", rule + " --- |"] if other else [head, rule]
        for q in queues:
            cells = " | ".join(_cell(_queue_cell(q, r)) for r in ("gpu", "cpu", "memory"))
            if other:
                more = ", ".join(f"{r} {_queue_cell(q, r)}" for r in _others(q))
                cells += f" | {_cell(more) if more else '—'}"
            out.append(f"| {_queue_name(q, _code)} | {cells} |")
        out.append("")
    teams = [t for t in c.teams if t.before != t.after or t.over_after or t.over_before]
    if teams:
        out += ["| team | GPUs (of max_gpus) |", "| --- | --- |"]
        out += [f"| {t.team} | {_team_cell(t)} |" for t in teams]
        out.append("")
    jobs = [(x, x.after) for x in c.changes if x.after is not None and x.action != "remove"]
    if jobs:
        out += [
            "| job | nodes × processes | world size | GPUs | queue | image |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for x, f in jobs:
            b = x.before  # of a new run: its deployed run, shown before → after
            out.append(
                f"| {x.kind} {_code(x.name)} "
                f"| {_job_cell(b, f, lambda j: f'{j.nodes} × {_procs(j)}')} "
                f"| {_job_cell(b, f, lambda j: '—' if j.procs_per_node == RAY else str(j.world_size))} "
                f"| {_job_cell(b, f, lambda j: str(j.gpus))} {_code(f.gpu_resource)} "
                f"| {_job_cell(b, f, lambda j: j.queue or '—')} "
                f"| {_job_cell(b, f, lambda j: j.image, _code)} |"
            )
        out.append("")
    out.append("</details>")
    return out


def _job_cell(
    before: JobFacts | None,
    after: JobFacts,
    pick: Callable[[JobFacts], str],
    wrap: Callable[[str], str] = _cell,
) -> str:
    now = wrap(pick(after))
    if before is None or pick(before) == pick(after):
        return now
    return f"{wrap(pick(before))} → {now}"
