"""generated/ and schemas/ are the golden output of jobs/ and the models.

They are regenerated only on purpose (`make synth`, `make schemas`), never by a test.
"""

from pathlib import Path

from trainkit.schema import render_schemas, write_schemas
from trainkit.synth import synthesize

REPO = Path(__file__).resolve().parents[1]


def test_generated_tree_matches_the_examples():
    # Compared with itself, not with what a local branch deploys: the golden test is about
    # the rendering (in-place rules have their own tests). Cold: no cache may hide a change.
    out = synthesize(
        REPO / "jobs",
        REPO / "generated",
        check=True,
        use_cache=False,
        against="disk",
    )
    assert not out.changes.any, (
        f"generated/ is stale ({out.changes.summary()}): run `make synth`, review and commit. "
        f"changed={out.changes.changed} added={out.changes.added} removed={out.changes.removed}"
    )
    kinds = {
        line.split(": ", 1)[1]
        for data in out.files.values()
        for line in data.decode().splitlines()
        if line.startswith("kind: ")
    }
    assert {"PyTorchJob", "Queue", "ConfigMap", "Namespace", "Application", "AppProject"} <= kinds


def test_schemas_match_the_models():
    changes = write_schemas(REPO / "schemas", check=True)
    assert not changes.any, f"schemas/ is stale ({changes.summary()}): run `make schemas`"


def test_schemas_carry_the_field_docstrings():
    import json

    schema = json.loads(render_schemas()["PyTorchJob.json"])
    props = schema["properties"]
    assert "Processes per node" in props["procs_per_node"]["description"]
    assert schema["additionalProperties"] is False
