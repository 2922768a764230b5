"""A one-job platform for the kind tests: a cluster, a Volcano queue, a team, the job; or a
Kueue flavor and ClusterQueue instead of the Volcano queue (``kueue_queue``)."""

from __future__ import annotations

from typing import Any

from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    FlavorQuota,
    Policy,
    Queue,
    ResourceFlavor,
    Team,
)
from trainkit.errors import Problem
from trainkit.load import Definition
from trainkit.policy import check_policy
from trainkit.resolve import build_plan
from trainkit.synth import effective_jobs, render_groups, rendered_runtimes
from trainkit.synth.layout import _cluster_objects


def kueue_queue(quota: Capacity, path: str = "jobs/platform/p.py") -> list[Definition]:
    """ResourceFlavor ``f`` (nodes labelled ``pool: f``) and ClusterQueue ``q`` holding
    ``quota`` of it, declared in ``path``."""
    return [
        Definition(ResourceFlavor(name="f", node_labels={"pool": "f"}), path, "platform"),
        Definition(
            ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]), path, "platform"
        ),
    ]


def planned(
    j: Any,
    team: dict[str, Any] | None = None,
    policy: Policy | None = None,
    working_dir: dict[str, str] | None = None,
    **cluster: Any,
) -> Any:
    """The plan of ``j`` (in jobs/t/j.py, with its script ``train.py`` and the files of its
    repository ``working_dir``) on cluster ``c``, for team ``t`` with the grants ``team``
    gives, under ``policy`` when given."""
    c = Cluster(name="c", server="https://c", gpus_per_node=8, **cluster)
    rules = [Definition(policy, "jobs/platform/p.py", "platform")] if policy else []
    return build_plan(
        [
            *rules,
            Definition(c, "jobs/platform/p.py", "platform"),
            Definition(Queue(name="q", capability=Capacity(gpu=64)), "jobs/platform/p.py", "p"),
            Definition(
                Team(name="t", queues=["q"], **(team or {})), "jobs/platform/p.py", "platform"
            ),
            Definition(
                j,
                "jobs/t/j.py",
                "t",
                files={"train.py": "x"} if j.script else {},
                working_dir=working_dir or {},
            ),
        ]
    )


def render(
    j: Any,
    team: dict[str, Any] | None = None,
    policy: Policy | None = None,
    working_dir: dict[str, str] | None = None,
    **cluster: Any,
) -> tuple[dict[str, Any], Any]:
    """The rendered object of ``j``'s kind and its planned job."""
    (cp,) = planned(j, team, policy, working_dir, **cluster).clusters
    kind = type(j).__name__
    (body,) = [r.body for r in _cluster_objects(cp) if r.body["kind"] == kind]
    return body, cp.jobs[0]


def rendered_one(defs: list[Definition]) -> tuple[dict[str, dict[str, Any]], Any]:
    """The objects of the plan of ``defs`` (one cluster, one job) by kind, ConfigMaps left out,
    and the job's effective pods."""
    plan = build_plan(defs)
    (cp,) = plan.clusters
    bodies = {r.body["kind"]: r.body for r in _cluster_objects(cp) if r.body["kind"] != "ConfigMap"}
    (ej,) = effective_jobs(render_groups(plan))
    return bodies, ej


def policy_problems(defs: list[Definition]) -> list[Problem]:
    """What the policy finds in the plan of ``defs`` (which must plan without errors)."""
    plan = build_plan(defs)
    groups = render_groups(plan)
    return check_policy(plan, effective_jobs(groups), rendered_runtimes(groups))
