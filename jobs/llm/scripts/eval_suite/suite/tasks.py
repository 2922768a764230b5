"""Each task: prompts with their expected answers in ``prompts/<task>.txt``
(``question<TAB>answer`` per line), read relative to the working directory: Ray starts the
driver and every task in its own copy of it (``runtime_env`` ``working_dir``)."""

from __future__ import annotations

from pathlib import Path

PROMPTS = Path("prompts")


def tasks() -> list[str]:
    """The suite's task names."""
    return sorted(p.stem for p in PROMPTS.glob("*.txt"))


def answer(question: str) -> str:
    """A stand-in model: evaluates the arithmetic it is asked."""
    left, op, right = question.split()
    a, b = int(left), int(right)
    return str({"+": a + b, "-": a - b, "*": a * b}[op])


def score(task: str) -> float:
    """The share of the task's prompts answered right."""
    text = (PROMPTS / f"{task}.txt").read_text()
    rows = [line.split("\t") for line in text.splitlines() if line.strip()]
    return sum(answer(q) == a for q, a in rows) / len(rows)
