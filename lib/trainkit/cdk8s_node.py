"""cdk8s's own App, Chart and ApiObject, run in node processes without the jsii bridge.

cdk8s is a JavaScript library; its Python package is a jsii binding that carries
every value of every object across a pipe to node, one call per value. For 4,000
manifests that marshalling cost more than the YAML itself (about 8 s of 13). Here
the JavaScript that the Python package ships (``cdk8s/_jsii/cdk8s@<v>.jsii.tgz``,
with ``constructs``) is unpacked into a private temporary directory and driven by a
short script: the objects go in as JSON arrays, and cdk8s's ``synthYaml`` comes
back, so the bytes are exactly those of the jsii route, in requests of a bounded number of
objects (node's memory grows faster than what it holds at once). One process per CPU shares
the work; the processes serve every synth of the Python process that started them
(tests and ``plan`` synthesize many times) and end with it. Nothing is kept between
runs: code is never cached (see ``cache_dir``).
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import importlib.util
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from .errors import Problem, SetupError

__all__ = ["Cdk8s", "node_binary", "processes_for"]

# One chart holding one v1/List: cdk8s writes the items in order, each as it would
# write a top-level object, indented under ``items:`` (see serialize._split_items).
# Requests and answers are framed by a 12-digit byte count, so that one process
# serves every synth of the Python process that started it.
_SCRIPT = """\
'use strict';
const { App, Chart, ApiObject, JsonPatch } = require('cdk8s');
const HEAD = 12;
let chunks = [];
let size = 0;
function take(n) {
  const all = Buffer.concat(chunks, size);
  chunks = [all.subarray(n)];
  size = all.length - n;
  return all.subarray(0, n);
}
let want = -1;
process.stdin.on('data', (chunk) => {
  chunks.push(chunk);
  size += chunk.length;
  for (;;) {
    if (want < 0) {
      if (size < HEAD) return;
      want = Number(take(HEAD).toString('ascii'));
    }
    if (size < want) return;
    const input = take(want).toString('utf8');
    want = -1;
    const app = new App();
    const chart = new Chart(app, 'trainkit');
    const list = new ApiObject(chart, 'items', { apiVersion: 'v1', kind: 'List' });
    list.addJsonPatch(JsonPatch.add('/items', JSON.parse(input)));
    const out = Buffer.from(app.synthYaml(), 'utf8');
    process.stdout.write(String(out.length).padStart(HEAD, '0'));
    process.stdout.write(out);
  }
});
"""
_HEAD = 12
_PACKAGES = ("cdk8s", "constructs")
# Below this many objects a second process costs more (start-up, ~0.4 s) than it saves.
_PER_PROCESS = 400
# Objects per request. node's memory grew faster than the objects it was sent at once (one
# process given 4,000 bench objects peaked at 535 MiB, given 2,000 at 167 MiB: the input,
# cdk8s's tree and the YAML document of all of them live together); in requests of 250 it
# stays near 110 MiB at any size, for the same bytes and a little less CPU.
_CHUNK = 250
_INSTALL_NODE = (
    "node not found on PATH (cdk8s runs on Node.js); install Node.js 18 or newer, "
    "or name the binary in $JSII_NODE"
)


def node_binary() -> str | None:
    """The node that jsii would use: ``$JSII_NODE``, else ``node`` on PATH."""
    return os.environ.get("JSII_NODE") or shutil.which("node")


class Cdk8s:
    """Node processes that have loaded cdk8s and wait for objects on stdin.

    Start it early (``start``) so that node's start-up overlaps other work; ``synth``
    uses as many of the processes as the work deserves. They live until ``close``
    (at exit, or after a failure); a forked child never uses its parent's.
    """

    def __init__(self) -> None:
        self._dir: str | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._owner = os.getpid()
        self._lock = threading.Lock()
        atexit.register(self.close)

    def start(self, processes: int) -> None:
        """Unpack cdk8s (once) and have at least ``processes`` node processes running."""
        with self._lock:
            if self._owner != os.getpid():
                self._forget()
            if len(self._procs) >= max(1, processes):
                return
            node = node_binary()
            if node is None:
                raise SetupError([Problem(file="node", message=_INSTALL_NODE)])
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="trainkit-cdk8s-")
                modules = Path(self._dir) / "node_modules"
                for name in _PACKAGES:
                    _unpack(_tarball(name), modules / name)
                (Path(self._dir) / "synth.js").write_text(_SCRIPT, encoding="utf-8")
            while len(self._procs) < max(1, processes):
                self._procs.append(
                    subprocess.Popen(
                        [node, str(Path(self._dir) / "synth.js")],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        cwd=self._dir,
                    )
                )

    def synth(self, objects: Sequence[str]) -> list[str]:
        """cdk8s's YAML of ``objects`` (JSON texts): v1/List documents of at most
        ``_CHUNK`` consecutive objects each, in order."""
        self.start(_processes(len(objects)))
        procs = self._procs[: max(1, min(len(self._procs), -(-len(objects) // _PER_PROCESS)))]
        size = max(1, min(_CHUNK, -(-len(objects) // len(procs))))
        chunks = [objects[i : i + size] for i in range(0, len(objects), size)]
        results: list[bytes | None] = [None] * len(chunks)

        def run(k: int) -> None:
            # Process k answers chunks k, k + n, k + 2n, ... one after the other.
            for i in range(k, len(chunks), len(procs)):
                data = ("[" + ",".join(chunks[i]) + "]").encode("utf-8", "surrogatepass")
                results[i] = _ask(procs[k], data)
                if results[i] is None:
                    return

        threads = [threading.Thread(target=run, args=(k,)) for k in range(1, len(procs))]
        for t in threads:
            t.start()
        try:
            run(0)
        except BaseException:
            self.close()  # a request may be half-answered: the next synth starts afresh
            raise
        finally:
            for t in threads:
                t.join()
        failed = {i % len(procs) for i, r in enumerate(results) if r is None}
        if failed:
            tail = _stderr_tail([procs[k] for k in sorted(failed)])
            self.close()
            raise RuntimeError(f"cdk8s (node) failed: {tail}")
        return [r.decode("utf-8") for r in results if r is not None]

    def close(self) -> None:
        """End every process and remove the unpacked code."""
        with self._lock:
            if self._owner != os.getpid():
                self._forget()
                return
            for proc in self._procs:
                if proc.poll() is None:
                    with contextlib.suppress(OSError):
                        proc.kill()
                    proc.wait()
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()
            self._procs = []
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def _forget(self) -> None:
        # A forked child: the processes and the directory are the parent's.
        self._procs, self._dir, self._owner = [], None, os.getpid()


def _ask(proc: subprocess.Popen[bytes], data: bytes) -> bytes | None:
    """Send one request; its answer, or None when the process failed or ended."""
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(f"{len(data):0{_HEAD}d}".encode() + data)
        proc.stdin.flush()
        head = proc.stdout.read(_HEAD)
        if len(head) != _HEAD:
            return None
        body = proc.stdout.read(int(head))
    except (OSError, ValueError):
        return None
    return body if len(body) == int(head) else None


def _stderr_tail(procs: Sequence[subprocess.Popen[bytes]]) -> str:
    tails = []
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
        err = proc.stderr.read() if proc.stderr is not None else b""
        tails.append(f"status {proc.returncode}: " + err.decode("utf-8", "replace").strip()[-2000:])
    return "; ".join(tails)


def _processes(objects: int) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cpus or 1, 4, -(-objects // _PER_PROCESS)))


def processes_for(objects: int) -> int:
    """Node processes worth starting for ``objects`` objects (at most one per CPU, four)."""
    return _processes(objects)


def _tarball(package: str) -> Path:
    """The JavaScript bundle a jsii Python package ships, found without importing it
    (importing ``cdk8s`` would start jsii's own node)."""
    spec = importlib.util.find_spec(package)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for place in places:
        found = sorted(Path(place, "_jsii").glob("*.jsii.tgz"))
        if found:
            return found[-1]
    raise SetupError(
        [
            Problem(
                file=package,
                message=f"the Python package {package!r} or its JavaScript bundle is missing; "
                "reinstall trainkit (pip install --force-reinstall trainkit-gitops)",
            )
        ]
    )


# What node never reads from the bundles: type declarations, docs, jsii's assembly, yarn's
# state and the yaml package's browser build. Half the files, unpacked (and removed) each run.
_NOT_RUN = ("*.d.ts", "*.md", "package/.jsii", "package/.yarn", "package/node_modules/yaml/browser")


def _unpack(tarball: Path, target: Path) -> None:
    """Unpack an npm tarball (what node runs below its ``package/``) into ``target``."""
    target.mkdir(parents=True)
    tar = shutil.which("tar")
    if tar is not None:
        # The tar binary is four times as fast as the tarfile module here.
        done = subprocess.run(
            [tar, "-xzf", str(tarball), "-C", str(target), "--strip-components=1"]
            + [f"--exclude={pattern}" for pattern in _NOT_RUN],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return
    with tarfile.open(tarball) as tf:
        members = []
        for member in tf.getmembers():
            _, _, rel = member.name.partition("/")
            if not rel or not (member.isfile() or member.isdir()):
                continue
            if any(
                fnmatch.fnmatch(member.name, p) or member.name.startswith(p + "/") for p in _NOT_RUN
            ):
                continue
            if rel.startswith("/") or ".." in rel.split("/"):
                continue  # never outside the target (the "data" filter's rule, for older Pythons)
            member.name = rel
            members.append(member)
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            tf.extractall(target, members=members, filter="data")
        else:
            tf.extractall(target, members=members)
