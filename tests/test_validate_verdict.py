"""One verdict per tree: `check` with CRDs, `check` without, and `validate` agree.

All three run ``check_object`` on each object; only what the caller passes
differs (the CRDs, the platform's pod allowance). A pod-security violation that
no NetworkProfile can grant must therefore be reported identically by each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from trainkit.load import PLATFORM_DIR, load_jobs
from trainkit.resolve import build_plan
from trainkit.validate import (
    BASELINE,
    PodAllowance,
    kustomize_build,
    validate_paths,
    validate_text,
    validate_tree,
)
from validate_fixtures import shared_crd_set

REPO = Path(__file__).resolve().parents[1]
JOB = "generated/clusters/a800-north/llm-training/pytorchjob-llama-finetune-fsdp-r1.yaml"


def test_check_with_and_without_crds_and_validate_give_one_verdict(tmp_path: Path) -> None:
    shutil.copytree(REPO / "generated", tmp_path / "generated")
    job = tmp_path / JOB
    text = job.read_text()
    anchor = "\n          containers:\n"
    assert anchor in text
    job.write_text(text.replace(anchor, "\n          hostPID: true" + anchor, 1))
    line = job.read_text().splitlines().index("          hostPID: true") + 1
    # The platform's network profiles (only its definitions are loaded: no job adds one).
    platform = load_jobs(REPO / "jobs", REPO, only={PLATFORM_DIR}).definitions
    profiles = build_plan(platform).network_profiles
    allowance = PodAllowance.from_profiles(profiles)
    assert allowance != BASELINE
    out = tmp_path / "generated"

    def verdict(problems: list) -> list[tuple[str, int | None, str, str, str]]:
        return [(p.file, p.line, p.obj, p.field, p.message) for p in problems if p.file == JOB]

    with_crds, _ = validate_tree(out, shared_crd_set(), root=tmp_path, allowance=allowance)
    without_crds, _ = validate_tree(out, None, root=tmp_path, allowance=allowance)
    validated = validate_paths([out], shared_crd_set(), root=tmp_path)  # validate: BASELINE
    expected = [
        (
            JOB,
            line,
            "PyTorchJob 'llama-finetune-fsdp-r1'",
            "spec.pytorchReplicaSpecs.Master.template.spec.hostPID",
            "pod security: hostPID shares the node's process namespace and is never allowed; "
            "remove it",
        )
    ]
    assert verdict(with_crds) == verdict(without_crds) == verdict(validated) == expected
    # The kustomize build Argo CD applies carries the same verdict; the tree reports it once,
    # at the file, since the built object is the file's own.
    assert not [p for p in with_crds if p.file.endswith("(kustomize build)")]
    cluster = JOB.split("/")[:3]
    text, failed = kustomize_build(tmp_path.joinpath(*cluster))
    assert failed == []
    built = validate_text(text, "build", shared_crd_set(), allowance=allowance)
    assert [(p.obj, p.field, p.message) for p in built] == [e[2:] for e in expected]
