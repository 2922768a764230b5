"""One edited copy of the example tree that several tests of a module read (``module_ws``).

Where each test of a module put its own field on a job of every kind, then synthesized,
explained and checked a whole copy of the examples, a module fixture now puts all of those
fields on the jobs of one copy and synthesizes it once (``SharedTree.synthesized``); each
test still asserts its own field on every kind, and the commands that only read the tree
(``explain``, ``check``) run once per distinct command line. A broken field still fails its
test; the fields of one module's tests must not clash (each test says which it owns).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from conftest import Run, Workspace
from example_edits import generated_docs


def keep_only(ws: Workspace, rels: Iterable[str]) -> None:
    """Remove every team's definition file but ``rels`` (and jobs/platform/): the other
    examples would add nothing to a tree's tests but their synth and check."""
    kept = {ws.root / rel for rel in rels}
    for path in ws.jobs.glob("*/*.py"):
        if path.parent.name != "platform" and path not in kept:
            path.unlink()


@dataclass
class SharedTree:
    """A copy of the examples that a module fixture edited and synthesized."""

    ws: Workspace
    cli: Callable[..., Run]
    synth: Run
    _docs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _runs: dict[tuple[str, ...], Run] = field(default_factory=dict)

    @classmethod
    def synthesized(cls, ws: Workspace, cli: Callable[..., Run]) -> SharedTree:
        """``trainkit synth`` of ``ws`` (edited by the caller), which must pass."""
        run = cli("synth")
        assert run.code == 0, run.err
        return cls(ws, cli, run)

    def docs(self, name: str) -> list[dict[str, Any]]:
        """Every generated file called ``name`` (one per cluster it is on), parsed once (the
        tests only read them)."""
        if name not in self._docs:
            self._docs[name] = generated_docs(self.ws, name)
        return self._docs[name]

    def run(self, *args: str) -> Run:
        """``trainkit ARGS`` for a command that writes nothing (explain, check), run once."""
        if args not in self._runs:
            self._runs[args] = self.cli(*args)
        return self._runs[args]
