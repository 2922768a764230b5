"""The processes that run definitions, and the bytes that come back from them.

::

    trainkit (never runs a definition)
      └─ origin: a fresh interpreter, started once with no secret in its environment,
         that has imported the models
           └─ server: forked per load; enters new namespaces (``sandbox.enter``)
                └─ supervisor (process 1 of the new PID namespace): pivots into a tree of
                   jobs/ and the interpreter only (``sandbox.build_root``), drops every
                   capability, sets no_new_privs
                     ├─ worker: runs the files of one group (a team directory, or one file)
                     └─ worker …  (at most ``Limits.jobs`` at a time)

A worker reports on a pipe of its own: ``S`` (starting file *i*) and ``R``
(file *i*'s objects as JSON). The supervisor is the only writer to the pipe
the caller reads, so frames never interleave; it enforces the time limit,
caps what a worker may send, and says how each worker ended (``X``). The
caller trusts none of the payloads (see ``rebuild``).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field

from ..collector import cycle_collection_paused
from . import sandbox

__all__ = ["Event", "Limits", "prestart", "run"]

Group = Sequence[tuple[int, str]]
"""``(file index, absolute path)`` of the files one worker runs, in order."""

_HEADER = struct.Struct(">cII")  # type, group, length
_WORKER_HEADER = struct.Struct(">cI")  # type, length
_MAX_OUTPUT_TAIL = 4000
# Environment a definition may see: enough for Python and locales, no tokens or
# credentials that CI or a developer's shell may hold.
_ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
# What the origin (and so every process a definition can see) starts with besides: how
# Python imports, never a credential.
_ORIGIN_ENV = (*_ENV_KEPT, "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8", "PYTHONIOENCODING")


@dataclass(frozen=True)
class Limits:
    """What one definition process may use."""

    timeout: float = 60.0
    """Seconds per file."""
    memory: int = 2 << 30
    """Bytes of address space per process."""
    output: int = 64 << 20
    """Bytes a process may return (objects) or print."""
    jobs: int = 0
    """Processes at a time; 0 means one per CPU."""
    sandbox: bool = True
    """Confine definitions where the OS allows it (see ``sandbox``)."""


@dataclass(frozen=True)
class Event:
    """One thing the supervisor reports.

    ``kind`` is ``ready`` (before any definition runs: ``confined`` says
    whether the sandbox holds, ``text`` why not and ``fix`` what would allow it; the
    next definition starts
    only when the caller asks for the next event), ``start`` (``file`` starts), ``result`` (``file``'s payload in ``data``) or
    ``exit`` (the group's process ended: ``reason`` is ``ok``, ``timeout``,
    ``signal``, ``status``, ``protocol`` or ``output``; ``file`` is the file it
    was running; ``text`` holds the end of what it printed).
    """

    kind: str
    group: int = -1
    file: int | None = None
    data: bytes = b""
    reason: str = ""
    status: int = 0
    text: str = ""
    confined: bool = False
    fix: str = ""
    """With ``ready`` and not ``confined``: what would let the OS confine definitions."""


@dataclass
class _Worker:
    pid: int
    group: int
    files: Group
    pipe: int
    capture: int
    started: float
    buf: bytearray = field(default_factory=bytearray)
    received: int = 0
    current: int | None = None
    file_started: float = 0.0
    results: int = 0
    ended: str = ""


def run(
    groups: Sequence[Group], limits: Limits, *, jobs: str, root: str
) -> Generator[Event, None, None]:
    """Run every group in a confined process; yield events as they arrive.

    ``jobs`` is the directory the definitions may read (resolved), ``root`` the
    repository around it, of which they see nothing else. Closing the iterator early
    (an error, Ctrl-C, a sandbox the caller requires but the OS refuses) kills every
    process, and returns only once they are gone.
    """
    origin = _origin()  # before the pipes: a forked origin must not hold them
    read_fd, write_fd = os.pipe()
    go_read, go_write = os.pipe()
    try:
        server = origin.start(list(groups), limits, write_fd, go_read, jobs=jobs, root=root)
    finally:
        os.close(write_fd)
        os.close(go_read)
    finished = False
    try:
        for event in _events(read_fd):
            yield event
            if event.kind == "ready":
                os.write(go_write, b"g")
        finished = True
    finally:
        os.close(go_write)
        if not finished:
            # The server kills its supervisor and waits for it; the kernel kills the
            # PID namespace before that wait returns. The result pipe reaches its end
            # only when every process that holds it is gone.
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGTERM)
        _drain_blocking(read_fd)
        os.close(read_fd)


def _drain_blocking(fd: int) -> None:
    while os.read(fd, 1 << 16):
        pass


class _Origin:
    """A pristine process that forks one server per load.

    It has imported trainkit's models and never runs a definition. Started once
    per process, so a load costs a fork, not an interpreter's start-up.
    """

    def __init__(self) -> None:
        self.owner = os.getpid()
        ours, theirs = socket.socketpair()
        self.sock = ours
        # Always a fresh interpreter, never a fork of this process: a fork would
        # carry whatever this process holds (the platform's objects of an earlier
        # load, a library user's models) into every definition's memory, and any
        # lock a thread (cdk8s's node bridge, a test runner) held at the fork. Its
        # environment holds no token or credential of the caller's: the server, the
        # supervisor and the workers forked from it never had one.
        env = {k: v for k, v in os.environ.items() if k in _ORIGIN_ENV or k.startswith("LC_")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from trainkit.load.server import main; main()",
             str(theirs.fileno()), str(self.owner)],
            pass_fds=(theirs.fileno(),), env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.pid = self._proc.pid
        theirs.close()

    def start(
        self, groups: list[Group], limits: Limits, out: int, go: int, *, jobs: str, root: str
    ) -> int:
        """Fork a server for one load; returns its pid."""
        # The server runs where the caller is, and imports as the caller would.
        request = json.dumps(
            {
                "groups": [list(g) for g in groups],
                "limits": limits.__dict__,
                "cwd": os.getcwd(),
                "path": sys.path,
                "jobs": jobs,
                "root": root,
            }
        )
        data = request.encode()
        socket.send_fds(self.sock, [struct.pack(">I", len(data)) + data], [out, go])
        reply = _recv_exact(self.sock, 4)
        if reply is None:
            raise RuntimeError("the definition server stopped")
        return int(struct.unpack(">I", reply)[0])

    def close(self) -> None:
        """End the origin (it sees the socket close) and reap it."""
        self.sock.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self._proc.returncode = 0  # reaped just above; Popen need not wait again


_ORIGIN: _Origin | None = None


def prestart() -> None:
    """Start the origin now, so that its interpreter's start-up overlaps the caller's own
    work (imports, hashing) instead of delaying the first load."""
    _origin()


def _origin() -> _Origin:
    global _ORIGIN
    if _ORIGIN is not None and _ORIGIN.owner != os.getpid():
        # A fork of the owner: the origin belongs to the owner, leave it be.
        _ORIGIN.sock.detach()
        _ORIGIN = None
    if _ORIGIN is not None and not _alive(_ORIGIN.pid):
        _ORIGIN.close()
        _ORIGIN = None
    if _ORIGIN is None:
        _ORIGIN = _Origin()
        atexit.register(_ORIGIN.close)
    return _ORIGIN


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main() -> None:
    """Entry point of an origin started as a fresh interpreter."""
    fd, owner = int(sys.argv[1]), int(sys.argv[2])
    # Every fork starts with the models a definition imports already loaded, and their
    # validators built: the models defer building them to their first use (model.base),
    # which would otherwise happen again in every definition's process. So does the code
    # that runs the definitions (``worker``): imported in each worker instead, its modules
    # were read and executed (their dataclasses built) again in every definition's process.
    # What this process holds lives as long as it and its forks do: the cycle collector,
    # paused while it is made, would find nothing to free in it (about a fifth of the
    # origin's start-up), and is then told to leave it be (gc.freeze, as Python's gc
    # documentation advises for a process that forks without exec), so that no collection
    # here or in a definition's process walks it again. The collector runs again for what
    # comes after: a definition's cycles are collected as in any Python process.
    with cycle_collection_paused():
        from trainkit.model.base import TrainkitModel, build_validators

        from . import worker  # noqa: F401

        build_validators(TrainkitModel)
        gc.freeze()
    _origin_loop(socket.socket(fileno=fd), owner)
    # The caller closed the socket and waits to reap this process (``_Origin.close``, at
    # the caller's exit). Nothing here needs finalizing (its output goes to /dev/null, its
    # servers are on their own): tearing down the interpreter's modules and models would
    # only cost about 0.2 CPU-seconds, which every trainkit run would wait for as it ends.
    os._exit(0)


def _origin_loop(sock: socket.socket, owner: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller handles Ctrl-C
    sandbox.die_with_parent(owner)
    sandbox.make_undumpable()
    # Servers are reaped by the kernel: nothing here waits for them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        # The descriptors travel with the first bytes of a request: its header.
        header, fds, _, _ = socket.recv_fds(sock, 4, 2)
        if len(header) < 4 or len(fds) != 2:
            return
        (length,) = struct.unpack(">I", header)
        data = b""
        while len(data) < length:
            more = sock.recv(length - len(data))
            if not more:
                return
            data += more
        request = json.loads(data)
        groups = [[(int(i), str(p)) for i, p in g] for g in request["groups"]]
        out, go = fds
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                sock.close()
                os.chdir(request["cwd"])
                sys.path[:] = [str(p) for p in request["path"]]
                place = _Place(str(request["jobs"]), str(request["root"]), str(request["cwd"]))
                _serve(groups, out, go, Limits(**request["limits"]), me, place)
            finally:
                os._exit(0)
        os.close(out)
        os.close(go)
        sock.sendall(struct.pack(">I", pid))


def _events(fd: int) -> Iterator[Event]:
    reader = _Reader(fd)
    while True:
        header = reader.read(_HEADER.size)
        if header is None:
            return
        kind, group, length = _HEADER.unpack(header)
        data = reader.read(length) if length else b""
        if data is None:
            raise RuntimeError("the definition server stopped in the middle of a message")
        if kind == b"S":
            yield Event("start", group, int(data))
        elif kind == b"R":
            yield Event("result", group, data=data)
        elif kind == b"Y":
            info = json.loads(data)
            yield Event(
                "ready", text=info["why"] or "", confined=info["confined"], fix=info["fix"] or ""
            )
        elif kind == b"X":
            info = json.loads(data)
            yield Event(
                "exit", group, info["file"], reason=info["reason"], status=info["status"],
                text=info["output"],
            )  # fmt: skip
        elif kind == b"E":
            # A bug in trainkit's own server: show its traceback.
            raise RuntimeError("the definition server failed:\n" + data.decode())
        else:
            raise RuntimeError(f"unknown message {kind!r} from the definition server")


class _Reader:
    def __init__(self, fd: int) -> None:
        self.fd, self.buf = fd, bytearray()

    def read(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            chunk = os.read(self.fd, max(65536, n - len(self.buf)))
            if not chunk:
                return None
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


# --- the server side: everything below runs in the server's processes ---


@dataclass(frozen=True)
class _Place:
    jobs: str
    root: str
    cwd: str


def _serve(
    groups: Sequence[Group], out: int, go: int, limits: Limits, parent: int, place: _Place
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller handles Ctrl-C
    sandbox.die_with_parent(parent)
    _only_fds({out, go})
    sandbox.make_undumpable()
    sources: list[str] = []
    if limits.sandbox:
        sources = sandbox.view(place.jobs, place.root, sys.path)
        new_pid_ns, why = sandbox.enter()
    else:
        new_pid_ns, why = (
            False,
            sandbox.Unconfined(
                "confinement is turned off by the caller (LoadOptions.sandbox=False)",
                "leave it on",
            ),
        )
    if not new_pid_ns:
        try:
            if _ready(out, go, why):
                _supervise(groups, out, limits, confined=False)
        except BaseException:
            _send(out, b"E", 0, traceback.format_exc().encode())
        return
    # The next child is process 1 of the new PID namespace: it builds the definitions'
    # file system (a fresh /proc needs a process of the namespace), and when it exits,
    # the kernel kills whatever a definition left running.
    me = os.getpid()
    # No stop request may fall between the fork and the handler that answers it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    pid = os.fork()
    if pid == 0:
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            sandbox.die_with_parent(me)
            if why is None:
                why = sandbox.build_root(sources, place.root, place.cwd)
            # Whatever the namespaces hold, their capabilities go before any definition runs.
            sandbox.drop_privileges()
            if _ready(out, go, why):
                _supervise(groups, out, limits, confined=why is None)
        except BaseException:
            _send(out, b"E", 0, traceback.format_exc().encode())
        finally:
            os._exit(0)
    os.close(go)

    def stop(*_: object) -> None:
        # Killing process 1 kills the namespace; its reaping returns once all is gone.
        _kill(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.waitpid(pid, 0)


def _ready(out: int, go: int, why: sandbox.Unconfined | None) -> bool:
    """Say whether the sandbox holds, then wait for the caller's go: it records the
    repository first when it does not, or stops here when it requires the sandbox."""
    info = {
        "confined": why is None,
        "why": why.cause if why else None,
        "fix": why.fix if why else None,
    }
    _send(out, b"Y", 0, json.dumps(info).encode())
    go_on = os.read(go, 1) == b"g"
    os.close(go)
    return go_on


def _only_fds(keep: set[int]) -> None:
    """Close every inherited descriptor but ``keep``; 0-2 lead to /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _send(out: int, kind: bytes, group: int, data: bytes) -> None:
    _write_all(out, _HEADER.pack(kind, group, len(data)) + data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _supervise(groups: Sequence[Group], out: int, limits: Limits, *, confined: bool) -> None:
    if not confined:
        sandbox.adopt_orphans()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    jobs = limits.jobs or cpu_count()
    pending = deque(enumerate(groups))
    running: dict[int, _Worker] = {}

    def stop(*_: object) -> None:
        for w in running.values():
            _kill(w.pid)
        if not confined:
            sandbox.kill_tree()
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    while pending or running:
        while pending and len(running) < jobs:
            index, files = pending.popleft()
            started = _spawn(index, files, limits)
            running[started.pid] = started
        now = time.monotonic()
        deadline = min(_deadline(w, limits) for w in running.values())
        by_fd = {w.pipe: w for w in running.values() if w.pipe >= 0}
        try:
            ready, _, _ = select.select([wake_r, *by_fd], [], [], max(0.0, deadline - now))
        except InterruptedError:
            ready = []
        for fd in ready:
            if fd == wake_r:
                _drain(wake_r)
            else:
                _read(by_fd[fd], out, limits.output)
        for pid, status in _reap():
            if pid in running:  # else an orphan a definition left, now reaped
                _finish(running.pop(pid), status, out, limits.output)
        now = time.monotonic()
        for w in running.values():
            if not w.ended and now >= _deadline(w, limits):
                w.ended = "timeout"
                _kill(w.pid)
    if not confined:
        sandbox.kill_tree()


def _deadline(w: _Worker, limits: Limits) -> float:
    # A file's own clock, and a bound for the whole group that no report can extend.
    own = (w.file_started or w.started) + limits.timeout
    return min(own, w.started + limits.timeout * len(w.files))


def _spawn(group: int, files: Group, limits: Limits) -> _Worker:
    read_fd, write_fd = os.pipe()
    capture = _capture()
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            _worker(files, write_fd, capture, limits, me)
        finally:
            os._exit(0)
    os.close(write_fd)
    return _Worker(pid, group, files, read_fd, capture, time.monotonic())


def _worker(files: Group, out: int, capture: int, limits: Limits, parent: int) -> None:
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # so its leftovers can be killed as a group
    sandbox.die_with_parent(parent)
    # Nothing of the supervisor's or another worker's: only its own pipe and output.
    _only_fds({out, capture})
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    sys.dont_write_bytecode = True  # unconfined, a cache file would be a change to the tree
    sandbox.make_undumpable()
    sandbox.forbid_new_privileges()  # unconfined too: no sudo, no setuid program
    cpu = int(limits.timeout * len(files)) + 5
    sandbox.limit(limits.memory, cpu, limits.output)
    for key in list(os.environ):
        if key not in _ENV_KEPT:
            del os.environ[key]
    from .worker import load_group

    def emit(kind: bytes, data: bytes) -> None:
        _write_all(out, _WORKER_HEADER.pack(kind, len(data)) + data)

    load_group(list(files), emit)
    sys.stdout.flush()
    sys.stderr.flush()


def _capture() -> int:
    """A file for what a worker prints; shown when it fails."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("trainkit-definition-output")
    import tempfile

    return os.dup(tempfile.TemporaryFile().fileno())


def _read(w: _Worker, out: int, cap: int) -> None:
    """Forward the complete frames a worker sent; end of data (or nothing more to
    read from a dead worker) closes its pipe."""
    try:
        chunk = os.read(w.pipe, 1 << 16)
    except OSError:
        chunk = b""
    if not chunk:
        os.close(w.pipe)
        w.pipe = -1
        return
    w.received += len(chunk)
    if w.received > cap:
        w.ended = w.ended or "output"
        _kill(w.pid)
        return
    w.buf += chunk
    while len(w.buf) >= _WORKER_HEADER.size:
        kind, length = _WORKER_HEADER.unpack_from(w.buf)
        if kind not in (b"S", b"R"):
            w.ended = w.ended or "protocol"
            _kill(w.pid)
            return
        if len(w.buf) < _WORKER_HEADER.size + length:
            return
        data = bytes(w.buf[_WORKER_HEADER.size : _WORKER_HEADER.size + length])
        del w.buf[: _WORKER_HEADER.size + length]
        if kind == b"S":
            try:
                w.current = int(data)
            except ValueError:
                w.ended = w.ended or "protocol"
                _kill(w.pid)
                return
            w.file_started = time.monotonic()
        else:
            w.results += 1
        _send(out, kind, w.group, data)


def _finish(w: _Worker, status: int, out: int, cap: int) -> None:
    if w.pipe >= 0:
        # What it wrote before exiting is still in the pipe; a leftover child
        # holding the pipe open must not make us wait for more.
        os.set_blocking(w.pipe, False)
        while w.pipe >= 0:
            if w.ended in ("output", "protocol"):
                os.close(w.pipe)
                w.pipe = -1
            else:
                _read(w, out, cap)
    _kill(w.pid)  # leftovers of its process group
    if w.ended:
        reason = w.ended
    elif os.WIFSIGNALED(status):
        reason = "signal"
    elif os.WEXITSTATUS(status) != 0 or w.results < len(w.files):
        reason = "status"
    else:
        reason = "ok"
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    info = {"file": w.current, "reason": reason, "status": code, "output": _tail(w.capture)}
    os.close(w.capture)
    _send(out, b"X", w.group, json.dumps(info).encode())


def _tail(fd: int) -> str:
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - _MAX_OUTPUT_TAIL), os.SEEK_SET)
        data = os.read(fd, _MAX_OUTPUT_TAIL)
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def _reap() -> Iterator[tuple[int, int]]:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def cpu_count() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
