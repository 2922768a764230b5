"""The commands that install what a rehearsal needs, as a user of the package types them.

Messages name these, never a checkout's ``pip install -e .`` or ``make setup``.
"""

from __future__ import annotations

__all__ = ["CPU_TORCH", "install_extra"]

CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
"""PyTorch's CPU build (a rehearsal needs no GPU): much smaller than the default CUDA one."""


def install_extra(extra: str) -> str:
    """``pip install 'trainkit-gitops[<extra>]'``."""
    return f"pip install 'trainkit-gitops[{extra}]'"
