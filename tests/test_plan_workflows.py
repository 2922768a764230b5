"""The plan's workflows: PR code runs without write access; the comment never runs PR code.

GitHub's pattern for pull requests from forks: the `pull_request` workflow runs the job files
with a read-only token and uploads the plan; a `workflow_run` workflow, from the default
branch, posts it. `pull_request_target` would hand the PR's code a write token.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github/workflows"
PLAN = WORKFLOWS / "plan.yml"
COMMENT = WORKFLOWS / "plan-comment.yml"
# An action pinned to a commit, or to a full version of an action GitHub publishes.
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@(?:[0-9a-f]{40}|v[0-9]+)$")


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    # YAML 1.1 reads the key `on` as True.
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def test_no_workflow_of_the_plan_uses_pull_request_target() -> None:
    for path in (PLAN, COMMENT):
        assert "pull_request_target" not in load(path)["on"], path.name
        assert "pull_request_target" not in path.read_text(encoding="utf-8"), path.name


def test_the_plan_runs_on_pull_request_read_only_without_secrets() -> None:
    doc = load(PLAN)
    assert set(doc["on"]) == {"pull_request"}
    assert doc["permissions"] == {"contents": "read"}
    for job in doc["jobs"].values():
        assert "permissions" not in job  # nothing beyond the read-only token
    text = PLAN.read_text(encoding="utf-8")
    assert "secrets." not in text
    checkout = next(s for s in steps(doc) if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    assert checkout["with"]["fetch-depth"] == 0  # origin/main: what Argo CD deploys
    runs = "\n".join(s.get("run", "") for s in steps(doc))
    assert "trainkit plan --format markdown" in runs
    upload = next(s for s in steps(doc) if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "trainkit-plan"
    assert upload["if"] == "always()"  # a failed plan is posted too


def test_the_comment_never_checks_out_or_runs_pull_request_code() -> None:
    doc = load(COMMENT)
    assert set(doc["on"]) == {"workflow_run"}
    assert doc["on"]["workflow_run"] == {"workflows": [load(PLAN)["name"]], "types": ["completed"]}
    for step in steps(doc):
        uses = step.get("uses", "")
        assert not uses.startswith("actions/checkout"), step
        run = step.get("run", "")
        for command in ("trainkit", "python", "pip", "make", "bash plan", "sh plan", "source "):
            assert command not in run, (command, step)
        # Artifact contents go through files and env, never into a script's text.
        assert "${{" not in run, step


def test_the_comment_has_the_least_permissions() -> None:
    doc = load(COMMENT)
    assert doc["permissions"] == {}
    (job,) = doc["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]


def test_the_comment_is_one_sticky_comment_on_the_pull_request_the_plan_ran_for() -> None:
    doc = load(COMMENT)
    (sticky,) = [s for s in steps(doc) if "sticky-pull-request-comment" in s.get("uses", "")]
    assert sticky["with"]["header"] == "trainkit-plan"
    assert sticky["with"]["path"] == "plan/comment.md"
    (check,) = [s for s in steps(doc) if s.get("id") == "pr"]
    assert check["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    assert 'if [ "$head" != "$HEAD_SHA" ]' in check["run"]
    assert sticky["with"]["number_force"] == "${{ steps.pr.outputs.number }}"


def test_every_action_is_pinned() -> None:
    for path in (PLAN, COMMENT):
        for step in steps(load(path)):
            if "uses" in step:
                assert PINNED.match(step["uses"]), (path.name, step["uses"])
                if not step["uses"].startswith("actions/"):
                    # Third-party code with a write token: a commit, not a movable tag.
                    assert re.search(r"@[0-9a-f]{40}$", step["uses"]), step["uses"]
