"""What a command imports: nothing it never uses (every trainkit process pays for its imports)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_RUN = """
import json, sys
from trainkit.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _run(cwd: Path, *argv: str) -> tuple[int, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _RUN, *argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    return result["rc"], set(result["modules"])


def test_validate_outside_a_repository_loads_no_model(tmp_path: Path) -> None:
    # No jobs/platform here: nothing to load, so neither the models nor the synthesis (the
    # CRD pins, which it reads, are in crd_report, whose report alone renders the tree).
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\ndata: {}\n"
    )
    rc, modules = _run(tmp_path, "validate", "cm.yaml")
    assert rc == 0
    assert "trainkit.crd_report" in modules  # the CRDs were read, with their pins
    assert not {"trainkit.model", "trainkit.synth", "pydantic"} & modules
    # Nor what fetches CRDs (urllib.request, ssl): only `trainkit crds --fetch` does.
    assert "trainkit.upstream.pins" in modules
    assert not {"trainkit.upstream.transfer", "urllib.request"} & modules


def test_the_fetching_api_is_still_there() -> None:
    import trainkit.upstream
    from trainkit.upstream import MIRROR_ENV, Fetched, fetch_crds, transfer

    assert (MIRROR_ENV, Fetched, fetch_crds) == (
        transfer.MIRROR_ENV,
        transfer.Fetched,
        transfer.fetch_crds,
    )
    assert set(trainkit.upstream.__all__) <= set(dir(trainkit.upstream)) | {
        "MIRROR_ENV",
        "Fetched",
        "fetch_crds",
    }
    with pytest.raises(AttributeError, match="no attribute 'fetch'"):
        trainkit.upstream.fetch  # noqa: B018
