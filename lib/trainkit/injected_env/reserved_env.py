"""The one shape of every operator's reserved env: the names it sets, each with why a job may not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ReservedEnv"]


@dataclass(frozen=True)
class ReservedEnv:
    """The env names one operator (or the container runtime) sets in a training container.

    ``kinds`` are the job kinds it applies to (empty: every kind); ``names`` and ``prefixes``
    map a name, or the start of one, to why a definition may not set it.
    """

    kinds: tuple[str, ...]
    names: Mapping[str, str]
    prefixes: Mapping[str, str] = field(default_factory=dict)

    def reason(self, name: str) -> str | None:
        """Why ``name`` may not be set (an exact name first, then prefixes in order), or None."""
        if name in self.names:
            return self.names[name]
        for prefix, why in self.prefixes.items():
            if name.startswith(prefix):
                return why
        return None
