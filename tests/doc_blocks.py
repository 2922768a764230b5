"""The fenced code blocks of README.md and docs/: each is claimed by exactly one kind of
check below, and tests/test_readme.py and tests/test_docs.py run every kind. A block no
kind claims fails ``test_every_block_is_checked``: a new example needs a check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
MARKER = "<!-- adoption walkthrough"


@dataclass(frozen=True)
class Block:
    page: str
    """Relative to the repository: ``README.md``, ``docs/jobs.md``."""
    line: int
    """Of the opening fence, 1-based."""
    info: str
    body: str
    after_marker: bool
    """The adoption-walkthrough marker is the line right before the fence."""

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.info or 'plain'})"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    out: list[Block] = []
    current: list[str] | None = None
    info, start, marked, previous = "", 0, False, ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(True), 1):
        if line.startswith("```"):
            if current is None:
                current, info, start = [], line[3:].strip(), number
                marked = previous.startswith(MARKER)
            else:
                rel = path.relative_to(REPO).as_posix()
                out.append(Block(rel, start, info, "".join(current), marked))
                current = None
        elif current is not None:
            current.append(line)
        previous = line
    return out


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks_of(page)]


# Each kind of block and the test that runs it (named, so that a reader finds it).
KINDS: dict[str, tuple[Callable[[Block], bool], str]] = {
    "setup": (
        lambda b: b.info == "sh" and b.body.startswith("make setup synth"),
        "test_readme.py::test_readme_opens_with_the_setup_and_test_commands",
    ),
    "install": (
        lambda b: b.info == "sh" and b.body.startswith(("pipx install", "pip install")),
        "test_docs.py::test_install_commands_name_this_distribution_and_its_extras",
    ),
    "walkthrough": (
        lambda b: b.info == "sh" and b.after_marker,
        "test_adopt.py::test_the_walkthrough_passes_in_process (and .ci/adopt)",
    ),
    "rehearse": (
        lambda b: b.info == "sh" and b.body.startswith("trainkit rehearse "),
        "test_docs.py::test_rehearse_example_runs",
    ),
    "job file": (
        lambda b: b.info == "python" and b.body.startswith("# jobs/"),
        "test_docs.py::test_python_examples_are_the_files_in_jobs",
    ),
    "platform patch": (
        lambda b: b.info == "python" and "PlatformPatch(" in b.body and b.body.startswith("from"),
        "test_docs.py::test_the_patch_example_patches_the_example_job",
    ),
    "synth error": (
        lambda b: b.info == "" and b.body.startswith("error:"),
        "test_docs.py::test_error_example_is_what_synth_prints",
    ),
    "generated paths": (
        lambda b: b.info == "" and b.body.startswith("generated/"),
        "test_docs.py::test_generated_paths_are_files_synth_writes",
    ),
    "in-place error": (
        lambda b: b.info == "text" and "would change in place" in b.body,
        "test_docs.py::test_in_place_change_example_is_what_synth_prints",
    ),
    "explain": (
        lambda b: b.info == "console" and b.body.startswith("$ trainkit explain "),
        "test_docs.py::test_explain_example_is_what_explain_prints",
    ),
    "plan": (
        lambda b: b.info == "console" and b.body.startswith("$ trainkit plan\n"),
        "test_plan_command.py::test_the_readme_shows_the_plan_of_the_examples",
    ),
    "help": (
        lambda b: b.page.startswith("docs/reference/") and b.info == "text",
        "test_docs.py::test_the_generated_reference_pages_are_current",
    ),
    "pyproject": (
        lambda b: b.info == "toml",
        "test_docs.py::test_toml_examples_are_this_repository_s_settings",
    ),
    "workflow step": (
        lambda b: b.info == "yaml",
        "test_docs.py::test_the_workflow_step_is_in_every_workflow_that_runs_definitions",
    ),
    "bench output": (
        lambda b: b.info == "output",
        "test_docs.py::test_bench_outputs_have_the_rows_bench_prints",
    ),
}


def of_kind(kind: str) -> list[Block]:
    claims, _ = KINDS[kind]
    return [b for b in all_blocks() if claims(b)]


def blocks(lang: str) -> list[str]:
    """Bodies of every page's blocks whose info string is ``lang`` ("" for plain fences)."""
    return [b.body for b in all_blocks() if b.info == lang]
