"""Issue 22: a definition's path could write any object into the tree Argo CD applies.

Each vector was a way around the gate before the fix: a line break in a directory or
file name closed the comment header of the generated file and added YAML (a whole
document: any object, in any namespace); a U+2028 did the same to YAML 1.1 readers
(kustomize's and Argo CD's). Now such paths are refused with the path shown escaped,
headers never carry raw user text, and ``check`` requires every kustomize build,
decoded as Argo CD decodes it, to equal the objects trainkit rendered and policy judged.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import JOB, Run, Workspace
from trainkit.synth import layout
from trainkit.validate.argo_decode import decode_build

INJECTED = (
    "\n---\n"
    "{apiVersion: v1, kind: ConfigMap, metadata: {name: evil, namespace: kube-system}, "
    "data: {a: b}}\n---\n#"
)


def _second_job(name: str) -> str:
    """A job without a script (so it may live in any directory)."""
    return (
        JOB.replace('name="ddp"', f'name="{name}"')
        .replace('script=Script.file("scripts/train.py")', 'command=["python", "-c", "pass"]')
        .replace(", Script", "")
    )


@pytest.mark.parametrize(
    ("rel", "shown"),
    [
        ("jobs/vision/evil\nkind: Secret/job.py", "jobs/vision/evil\\nkind: Secret"),
        ("jobs/vision/ev\ril.py", "jobs/vision/ev\\ril.py"),
        ("jobs/vision/a\u2028b.py", "jobs/vision/a\\u2028b.py"),
        ("jobs/vision/a\x85b.py", "jobs/vision/a\\x85b.py"),
        ("jobs/vision/a\u202eyp.b", "jobs/vision/a\\u202eyp.b"),
    ],
    ids=["newline-in-directory", "cr-in-file-name", "u2028", "nel", "bidi-override"],
)
def test_a_path_with_a_line_break_or_control_character_is_refused(
    bare: Workspace, bare_cli: Callable[..., Run], rel: str, shown: str
) -> None:
    bare.write(rel, _second_job("evil"))
    run = bare_cli("synth")
    assert run.code == 1, run.err
    assert shown in run.err
    assert "line break or control character" in run.err
    # The raw character never reaches the terminal.
    raw = rel.split("/")[2]
    assert raw not in run.err
    assert not bare.out.exists()


def test_a_newline_in_a_file_name_is_refused(bare: Workspace, bare_cli: Callable[..., Run]) -> None:
    bare.write("jobs/vision/x\n---\nkind: Secret.py", _second_job("evil"))
    run = bare_cli("synth")
    assert run.code == 1
    assert "jobs/vision/x\\n---\\nkind: Secret.py" in run.err


def test_a_header_never_carries_raw_user_text() -> None:
    """A comment closed from a header: the path is escaped onto the comment's one line."""
    header = layout.header(f"jobs/vision/x{INJECTED}/job.py", "make synth\n---\n")
    lines = header.splitlines(keepends=True)
    assert len(lines) == 2, header
    assert all(line.startswith("# ") and line.endswith("\n") for line in lines)
    assert not any(ch in header[:-1].replace("\n# ", "") for ch in "\r\x85\u2028\u2029")
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\n"
    objects = decode_build((header + body).encode())
    assert [o.body["metadata"]["name"] for o in objects] == ["a"]


@pytest.mark.parametrize("text", ["x\u2028y", "x\x85y", "x\u2029y", "\u202e", "\x1b[2J", "\\"])
def test_header_escapes_every_break_and_control_character(text: str) -> None:
    header = layout.header(f"jobs/{text}.py", "trainkit synth")
    assert header.isascii()
    assert header.count("\n") == 2


def _inject_extra_document(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Simulate any flaw that makes synth write more than it planned: the job file at
    ``path`` gains a document after its header (what a line break in a path did)."""
    import trainkit.synth as synth

    original = synth.render_files

    def render_files(*args: object, **kwargs: object) -> dict[str, bytes]:
        files = original(*args, **kwargs)  # type: ignore[arg-type]
        head, _, body = files[path].partition(b"\napiVersion:")
        files[path] = head + INJECTED.removeprefix("\n").encode() + b"\napiVersion:" + body
        return files

    monkeypatch.setattr(synth, "render_files", render_files)


def test_an_extra_document_in_a_generated_file_is_refused_by_check(
    bare: Workspace, bare_cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand-added object in generated/, with the tree otherwise up to date."""
    path = "generated/clusters/east/vision/pytorchjob-ddp.yaml"
    _inject_extra_document(monkeypatch, path.removeprefix("generated/"))
    assert bare_cli("synth").code == 0
    assert "name: evil" in (bare.root / path).read_text()
    run = bare_cli("check")
    assert run.code == 1, run.err
    assert "is up to date" not in run.out
    assert path in run.err
    assert "ConfigMap 'evil'" in run.err
    assert "trainkit did not render" in run.err
