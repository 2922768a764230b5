"""Reading what the simulated nodes print: log followers, torchrun's failure summary, hints."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "Follower",
    "LauncherTracebacks",
    "RankFailure",
    "Source",
    "cpu_hints",
    "parse_torchrun_failures",
]

Source = tuple[int, int | None]
"""(node rank, global rank), or (node rank, None) for the node's launcher itself."""

_CHUNK = 1 << 20


class Follower:
    """Follows one growing log file and returns its complete lines as they arrive.

    The file may not exist yet: torchrun creates the per-rank files when it
    starts the workers, under a directory whose name it chooses, so the path
    can be a glob below ``base``.
    """

    def __init__(self, base: Path, pattern: str, source: Source, prefix: str) -> None:
        self.base = base
        self.pattern = pattern
        self.source = source
        self.prefix = prefix
        self.path: Path | None = None
        self._fh: BinaryIO | None = None
        self._buf = b""

    def read(self, final: bool = False) -> list[str]:
        """New complete lines; with ``final`` also a last line without a newline."""
        if self._fh is None and not self._open():
            return []
        assert self._fh is not None
        while chunk := self._fh.read(_CHUNK):
            self._buf += chunk
            if len(chunk) < _CHUNK:
                break
        *lines, self._buf = self._buf.split(b"\n")
        if final and self._buf:
            lines.append(self._buf)
            self._buf = b""
        return [line.rstrip(b"\r").decode("utf-8", "replace") for line in lines]

    def mtime_ns(self) -> int:
        """When the file was last written (0 when it does not exist)."""
        try:
            return self.path.stat().st_mtime_ns if self.path else 0
        except OSError:
            return 0

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _open(self) -> bool:
        matches = sorted(self.base.glob(self.pattern))
        if not matches:
            return False
        self.path = matches[0]
        try:
            self._fh = self.path.open("rb")
        except OSError:
            return False
        return True


class LauncherTracebacks:
    """Shortens torchrun's own tracebacks (its frames only) to one line; the rest passes.

    When a worker fails, torchrun raises ``ChildFailedError`` through some
    twenty lines of its own frames before the useful failure summary; a
    traceback with any frame outside torch is shown in full.
    """

    _START = "Traceback (most recent call last):"
    _FRAME = re.compile(r'^\s*File "([^"]*)"')

    def __init__(self) -> None:
        self._held: list[str] | None = None

    def feed(self, line: str) -> list[str]:
        if self._held is None:
            if line.strip() == self._START:
                self._held = [line]
                return []
            return [line]
        if line.startswith((" ", "\t")):
            self._held.append(line)
            return []
        held, self._held = self._held, None
        frames = [m[1] for h in held if (m := self._FRAME.match(h))]
        if frames and all("/torch/" in f or f.startswith("<frozen") for f in frames):
            return [f"{self._START} ({len(frames)} frames inside torchrun omitted)", line]
        return [*held, line]

    def flush(self) -> list[str]:
        held, self._held = self._held or [], None
        return held


@dataclass(frozen=True)
class RankFailure:
    """One entry of torchrun's ``ChildFailedError`` summary."""

    rank: int
    local_rank: int
    exitcode: int
    root_cause: bool


_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)")
_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")


def parse_torchrun_failures(text: str) -> list[RankFailure]:
    """The failed ranks torchrun lists when a worker exits non-zero."""
    out: list[RankFailure] = []
    root = False
    pending: tuple[int, int] | None = None
    for line in text.splitlines():
        if "Root Cause" in line:
            root = True
        elif m := _RANK.match(line):
            pending = (int(m[1]), int(m[2]))
        elif (m := _EXIT.match(line)) and pending is not None:
            out.append(RankFailure(pending[0], pending[1], int(m[1]), root))
            pending = None
    return out


_PEER_FAILURE = re.compile(
    r"closed by peer|reset by peer|Broken pipe|DistNetworkError|DistBackendError|"
    r"DistStoreError|Socket Timeout|Connection refused",
    re.IGNORECASE,
)


def looks_like_peer_failure(lines: Iterable[str]) -> bool:
    """Whether a rank died because another rank went away (not the root cause)."""
    return any(_PEER_FAILURE.search(line) for line in lines)


_HINTS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"NCCL built in|ProcessGroupNCCL is only supported with GPUs|"
            r"backend nccl|NCCL.*(no GPUs|not available)",
            re.IGNORECASE,
        ),
        "the script asks for the NCCL backend, which needs GPUs and cannot run on CPU; "
        "choose it with `backend = 'nccl' if torch.cuda.is_available() else 'gloo'` so the "
        "rehearsal uses gloo",
    ),
    (
        re.compile(
            r"Torch not compiled with CUDA|Found no NVIDIA driver|No CUDA GPUs are available|"
            r"invalid device ordinal|CUDA driver initialization failed",
            re.IGNORECASE,
        ),
        "the script uses CUDA unconditionally, and a CPU rehearsal has no GPUs; choose the "
        "device with `torch.device('cuda' if torch.cuda.is_available() else 'cpu')` and pass "
        "device_ids to DDP only on GPUs",
    ),
    (
        re.compile(r"FSDP needs a non-CPU accelerator", re.IGNORECASE),
        "FullyShardedDataParallel (FSDP1) cannot run on CPU in this torch; FSDP2 "
        "(torch.distributed.fsdp.fully_shard) runs on CPU with gloo, or fall back to DDP "
        "when CUDA is absent",
    ),
    (
        re.compile(r"deserialize object on a CUDA device", re.IGNORECASE),
        "a checkpoint saved on GPU is loaded without map_location; use "
        "torch.load(path, map_location='cpu') on CPU",
    ),
]


def cpu_hints(lines: Iterable[str]) -> list[str]:
    """Plain explanations for failures caused by running on CPU instead of GPUs."""
    text = "\n".join(lines)
    return [hint for pattern, hint in _HINTS if pattern.search(text)]
