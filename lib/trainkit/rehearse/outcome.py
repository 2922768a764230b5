"""What a rehearsal that succeeded reports."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RehearsalReport"]


@dataclass(frozen=True)
class RehearsalReport:
    """A rehearsal that succeeded: its size, what was changed for it and how long it took."""

    job: str
    file: str
    nodes: int
    procs_per_node: int
    changes: tuple[str, ...]
    commands: tuple[str, ...]
    """The command line of each node, node 0 first."""
    seconds: float
    kind: str = "PyTorchJob"
    cluster: str = ""
    """The cluster whose pods were rehearsed."""
    runtime: str | None = None
    """For a TrainJob: the runtime used and the cluster it was taken from."""

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node
