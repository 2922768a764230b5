"""The digest of each object of a build, decoded in a second process.

``trainkit check`` decodes every kustomize build as Argo CD does (``argo_decode``). For a
build whose objects are each exactly an object trainkit rendered (and validated already),
the check needs nothing but the digest of each object's ``canonical_json``
(``files.validated_key``, what the set of validated objects holds). Decoding is the larger part
of the check's own work after the synth and needs nothing the synth makes, so it runs here,
in a process of its own, as each build ends: on the other core, while the check's process
runs the synth and validates the rendered objects (only for a tree of at least
``tree.KEY_PROCESS_BYTES``: below that, starting it costs more than decoding in the check's
own process). Same decoder, same bytes: whatever does
not match (a build Argo CD cannot decode, an object nobody validated, a difference) is
decoded again in the check's own process, for its messages.

The protocol, over the helper's stdin and stdout: an 8-byte big-endian length and the
build's bytes in; the same framing out, holding the JSON list of digests, or ``null`` when
the build does not decode (or decoding failed in any way).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import struct
import subprocess
import sys
from typing import IO

__all__ = ["KeyProcess", "serve"]

_HEADER = struct.Struct(">Q")


class KeyProcess:
    """The helper process; ``keys`` sends it one build's bytes and returns its answer.

    Not thread-safe: one thread talks to it. Every failure (the helper cannot start, dies,
    or answers nonsense) gives ``None``: the caller decodes the build itself.
    """

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the same trainkit
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", "from trainkit.validate.build_keys import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def keys(self, data: bytes) -> list[str] | None:
        """``validated_key(canonical_json(...))`` of each object ``decode_build(data)`` gives,
        or None."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            return None
        try:
            proc.stdin.write(_HEADER.pack(len(data)))
            proc.stdin.write(data)
            proc.stdin.flush()
            answer = _read_frame(proc.stdout)
            value = json.loads(answer) if answer is not None else None
        except (OSError, ValueError):
            value = None
            answer = None
        if answer is None:  # the helper is gone: ask it nothing more
            self.stop()
            return None
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            return None
        return value

    def kill(self) -> None:
        """Kill the helper now (from another thread: ``keys`` then returns None)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def stop(self) -> None:
        """End the helper (closing its input ends it; kill it if it still runs)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    return _read_exactly(stream, _HEADER.unpack(header)[0])


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def answer(data: bytes) -> bytes:
    """The helper's answer for one build's bytes (the JSON of the digests, or ``null``)."""
    from trainkit.validate.argo_decode import canonical_json, decode_build
    from trainkit.validate.files import validated_key

    try:
        keys = [validated_key(canonical_json(d.body)) for d in decode_build(data)]
    except Exception:  # any failure: the check decodes the build itself, and says why
        return b"null"
    return json.dumps(keys).encode("ascii")


def serve() -> None:
    """The helper's loop: answer each build read from stdin until it closes."""
    # Decoded values are trees that reference counting frees (see collector.cycle_collection_paused).
    gc.disable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        data = _read_frame(stdin)
        if data is None:
            return
        out = answer(data)
        stdout.write(_HEADER.pack(len(out)))
        stdout.write(out)
        stdout.flush()
