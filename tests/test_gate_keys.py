"""The key process (``validate.build_keys``): each build decoded beside the check.

It answers the digests of what ``decode_build`` and ``canonical_json`` give in the check's
own process; a build whose objects all match the planned (validated) ones is then never
decoded by the check, and anything else is, with the messages the check gives without a
key process.
"""

from __future__ import annotations

import json

import pytest

from conftest import Workspace
from trainkit.synth import synthesize
from trainkit.validate import PodAllowance, planned_objects, tree
from trainkit.validate.argo_decode import canonical_json, decode_build
from trainkit.validate.build_keys import KeyProcess, answer
from trainkit.validate.files import validated_key
from trainkit.validate.tree import validate_tree

BUILD = (
    b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  on: yes\n  n: 0o755\n"
    b"---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n"
)


def test_the_key_process_answers_what_the_decoder_gives() -> None:
    canonical = [canonical_json(d.body) for d in decode_build(BUILD)]
    assert len(canonical) == 2 and '"on":true' not in canonical[0]  # keys are strings in JSON
    want = [validated_key(c) for c in canonical]
    assert json.loads(answer(BUILD)) == want
    assert json.loads(answer(b"v: .nan\nkind: K\n")) is None  # Argo CD cannot decode it
    helper = KeyProcess()
    try:
        assert helper.keys(BUILD) == want
        assert helper.keys(b"kind: K\nv: .inf\n") is None
        assert helper.keys("kind: K\nv: \udcff\n".encode("utf-8", "surrogateescape")) is None
        assert helper.keys(BUILD) == want  # still answering
    finally:
        helper.stop()
    assert helper.keys(BUILD) is None  # stopped: the caller decodes


def _check(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, cores: int, smallest: int = 0
) -> list[str]:
    """validate_tree as ``check`` runs it, with ``cores`` (one: no key process), starting the
    key process for builds reading at least ``smallest`` bytes (the examples read fewer than
    ``KEY_PROCESS_BYTES``). The synth uses the repository's caches (``ws``'s, or those of the
    last synth here) as ``check`` does: the builds are the point, not running definitions."""
    monkeypatch.setattr(tree, "_cores", lambda: cores)
    monkeypatch.setattr(tree, "KEY_PROCESS_BYTES", smallest)
    out = synthesize(ws.jobs, ws.out, root=ws.root, check=True)
    planned = planned_objects(out.objects, out.files, out.kept)
    written = {p: data for p, data in out.files.items() if p not in out.kept}
    allowance = PodAllowance.from_profiles(
        out.plan.network_profiles,
        [p for team in out.plan.index.teams.values() for p in team.obj.host_paths],
    )
    problems, count = validate_tree(
        ws.out, None, ws.root, allowance=allowance, planned=planned, written=written, notes=[]
    )
    assert count > 1
    return [f"{p.file}:{p.line}: {p.obj} {p.field} {p.message}" for p in problems]


@pytest.fixture
def small(bare: Workspace) -> Workspace:
    """A small repository as ``trainkit synth`` leaves it: builds of three clusters' platform
    and a team on two of them (the example tree proves nothing more here)."""
    synthesize(bare.jobs, bare.out, root=bare.root)
    return bare


def test_a_build_that_matches_is_not_decoded_again(
    small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(_data: bytes) -> object:
        raise AssertionError("decoded in the check's own process")

    monkeypatch.setattr(tree, "decode_build", refuse)
    assert _check(small, monkeypatch, cores=2) == []
    with pytest.raises(AssertionError, match="own process"):
        _check(small, monkeypatch, cores=1)  # the test can fail: without it, it is


@pytest.mark.parametrize(
    "extra",
    [
        # An object trainkit did not write: named through kustomize's origin annotations.
        "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: vision}\n",
        # A build Argo CD cannot decode.
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: vision}\ndata: .nan\n",
    ],
)
def test_a_build_that_differs_is_told_as_without_the_key_process(
    small: Workspace, monkeypatch: pytest.MonkeyPatch, extra: str
) -> None:
    cluster = small.out / "clusters/east"
    victim = sorted((cluster / "vision").glob("pytorchjob-*.yaml"))[0]
    victim.write_text(victim.read_text() + "---\n" + extra)
    with_keys = _check(small, monkeypatch, cores=2)
    assert any("kustomize build" in p or "did not render" in p for p in with_keys), with_keys
    assert with_keys == _check(small, monkeypatch, cores=1)


def test_a_small_tree_is_decoded_in_the_checks_own_process(
    synthesized: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Starting the helper costs more than decoding the examples' builds (KEY_PROCESS_BYTES).
    started: list[bool] = []

    def counted() -> object:
        started.append(True)
        raise OSError("no helper here")  # the check then decodes every build itself

    monkeypatch.setattr(tree, "KeyProcess", counted)
    assert tree.KEY_PROCESS_BYTES > 1 << 20
    assert _check(synthesized, monkeypatch, cores=2, smallest=tree.KEY_PROCESS_BYTES) == []
    assert started == []
    assert _check(synthesized, monkeypatch, cores=2) == []
    assert started == [True]  # the test can fail: with a big enough tree, it starts


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_key_process_that_fails_to_start_in_any_way_leaves_the_check_to_decode(
    small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, only an OSError was told: any other error (a bug) left ``results`` waiting
    for the key thread forever."""

    def broken() -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(tree, "KeyProcess", broken)
    assert _check(small, monkeypatch, cores=2) == []
