"""A whole generated tree: every manifest, and every kustomization as Argo CD will build it.

The kustomizations built are those Argo CD builds: each directory whose kustomization
lists only files (an Application's). One that lists other kustomizations' directories
(a cluster's, for overlays) would build the same objects again, in one build whose cost
grows with the square of its objects; a Component builds only inside another. The builds
run beside the validation of the files, as many at once as there are cores; a build whose
inputs (every file below its directory and its components') are those of a build that passed
the last check with the same trainkit, CRDs and kubectl is not run again (``reuse``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from trainkit.collector import cycle_collection_paused
from trainkit.deployed.baseline import Baseline
from trainkit.errors import Problem, SetupError
from trainkit.validate.applied import Planned, compare_build, matches_build
from trainkit.validate.argo_decode import DecodeError, canonical_json, decode_build
from trainkit.validate.build import Build, VersionProbe, origin_build, require_kubectl
from trainkit.validate.build_keys import KeyProcess
from trainkit.validate.crds import CrdSet
from trainkit.validate.documents import InputLimitError, load_all
from trainkit.validate.files import validate_decoded, validate_paths
from trainkit.validate.pod_security import BASELINE, PodAllowance

__all__ = ["KEY_PROCESS_BYTES", "TreeBuilds", "build_directories", "validate_tree"]

KEY_PROCESS_BYTES = 2 << 20
"""The fewest bytes of build inputs (what ``_inputs`` reads for the builds to run) for which
``TreeBuilds`` starts the key process. Starting it costs about 0.15 CPU-s (a Python that
imports the decoder), more than decoding a small tree in the check's own process (the
examples: 10 builds, 0.4 MiB, 0.04 CPU-s; the whole check used 0.1 CPU-s less without it).
A tree this large or larger decodes for about a third of a second or more, which the helper
then takes off the check's critical path. Same decoder, same verdicts either way (see
``build_keys``)."""


def validate_tree(
    out_dir: Path,
    crds: CrdSet | None,
    root: Path,
    baseline: Baseline | None = None,
    *,
    allowance: PodAllowance = BASELINE,
    progress: Callable[[str], None] | None = None,
    planned: Planned | None = None,
    notes: list[Problem] | None = None,
    reuse: Mapping[str, str] | None = None,
    digests: dict[str, str] | None = None,
    builds: TreeBuilds | None = None,
    written: Mapping[str, bytes] | None = None,
) -> tuple[list[Problem], int]:
    """Problems of the files under ``out_dir`` and of each kustomize build; and the build count.

    ``baseline`` (the deployed tree) makes each changed file an update of its
    deployed version, for the CRDs' transition rules. Each build is decoded as Argo CD
    decodes it (``argo_decode``) and its objects validated as new objects (an object
    identical to a file's was validated already). With ``planned`` (the objects each
    file must give, see ``applied``), each build must hold exactly those objects.
    ``allowance`` is what pod templates may be granted. ``progress`` is told each step.
    ``notes`` receives warnings (a kustomize other than the one Argo CD bundles).
    ``reuse`` maps a build's directory (relative to ``out_dir``) to the inputs digest of its
    passing build last time: a build with those inputs again is skipped. ``digests`` receives
    every build's inputs digest. ``builds``, when given, are the builds started earlier
    (``TreeBuilds``, made with ``reuse``); the caller stops them. ``written``: the bytes
    trainkit wrote into each file (by path relative to ``out_dir``); with ``planned``, a
    file that holds them is validated as its planned objects, without parsing it.
    """
    # Decoding a build allocates about a million short-lived objects that reference counting
    # frees; each burst made the cycle collector walk every object the synth before it left
    # alive (at 1,000 jobs, half the CPU of validating the tree). Nothing here builds cycles
    # that matter (decoded values are trees; a recursive alias is refused).
    with cycle_collection_paused():
        return _validate_tree(
            out_dir, crds, root, baseline, allowance=allowance, progress=progress,
            planned=planned, notes=notes, reuse=reuse, digests=digests, builds=builds,
            written=written,
        )  # fmt: skip


class TreeBuilds:
    """The kustomize builds of a tree, running in the background from the moment this is
    made, as many at once as there are cores, each started as soon as a core is free.

    ``trainkit check`` makes it as its synth renders (once the definitions loaded and the
    plan passed the platform's rules): kustomize reads the files on disk, which the synth
    then proves are exactly what the definitions give (a stale tree is refused, and its
    builds killed, before any is read). ``reuse`` maps a build's directory
    (relative to ``out_dir``) to the inputs digest of its passing build last time: a build
    with those inputs again is not run. ``probe`` also asks kubectl which kustomize it
    bundles, once ``results`` is first called (a check refused before it reads its builds
    never needed the answer). With ``keys`` (and more than one core, and builds reading at least
    ``KEY_PROCESS_BYTES``), a second process decodes each build as it ends (``build_keys``):
    ``results`` then gives the digest of each of its objects. ``stop`` kills what still
    runs; call it in every case.
    """

    def __init__(
        self,
        out_dir: Path,
        reuse: Mapping[str, str] | None = None,
        *,
        probe: bool = False,
        keys: bool = False,
    ) -> None:
        self.out_dir = out_dir
        self.directories = build_directories(out_dir)
        read = {b: _inputs(b) for b in self.directories}
        self.inputs = {b: digest for b, (digest, _) in read.items()}
        last = reuse or {}
        self._todo = [
            b
            for b in self.directories
            if last.get(b.relative_to(out_dir).as_posix()) != self.inputs[b]
        ]
        keys = keys and sum(read[b][1] for b in self._todo) >= KEY_PROCESS_BYTES
        self._builds: list[Build | OSError | None] = [None] * len(self._todo)
        self._ended = [threading.Event() for _ in self._todo]
        self._keys: list[list[str] | None] = [None] * len(self._todo)
        self._keyed: list[threading.Event] | None = None
        self._ended_order: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._key_process: KeyProcess | None = None
        self._next = 0
        self._stopped = False
        self._lock = threading.Lock()
        self.probe: VersionProbe | None = None
        self._probe = probe
        self._workers: list[threading.Thread] = []
        self._missing: SetupError | None = None
        self._crash: BaseException | None = None
        if not self._todo:
            return
        try:
            self._kubectl = require_kubectl(self._todo[0])
        except SetupError as err:  # said when the builds are read (after a stale tree's error)
            self._missing = err
            return
        for _ in range(min(_cores(), len(self._todo))):
            worker = threading.Thread(target=self._work, daemon=True)
            worker.start()
            self._workers.append(worker)
        if keys and _cores() > 1:
            self._keyed = [threading.Event() for _ in self._todo]
            worker = threading.Thread(target=self._key_work, daemon=True)
            worker.start()
            self._workers.append(worker)

    def digests(self) -> dict[str, str]:
        """Every build's inputs digest, by directory relative to ``out_dir``."""
        return {b.relative_to(self.out_dir).as_posix(): d for b, d in self.inputs.items()}

    def _work(self) -> None:
        try:
            self._take_builds()
        except BaseException as err:  # our bug: results() raises it rather than wait forever
            with self._lock:
                self._crash = self._crash or err
                self._stopped = True
            for ended in self._ended:
                ended.set()

    def _take_builds(self) -> None:
        while True:
            with self._lock:
                if self._stopped or self._next >= len(self._todo):
                    return
                i = self._next
                self._next += 1
                try:
                    build: Build | OSError = Build(self._todo[i], self._kubectl)
                except OSError as err:  # kubectl vanished or cannot run: said in order
                    build = err
                self._builds[i] = build
            if isinstance(build, Build):
                build.wait()
            self._ended[i].set()
            self._ended_order.put(i)

    def _key_work(self) -> None:
        """Send each build, as it ends, to the key process; the only reader of a build's
        output until its keys are set (then ``results`` reads it)."""
        assert self._keyed is not None
        try:
            # Inside the try: whatever starting it raises, ``results`` is told (the events
            # below), never left waiting.
            with contextlib.suppress(OSError):  # without it the check decodes every build
                self._key_process = KeyProcess()
            for _ in self._todo:
                i = self._ended_order.get()
                if i is None:
                    return
                build = self._builds[i]
                if self._key_process is not None and isinstance(build, Build):
                    data, problems = build.output()
                    if not problems:
                        self._keys[i] = self._key_process.keys(data)
                self._keyed[i].set()
        except (OSError, ValueError):
            pass  # stopped while reading an output (its file closed): keys are optional
        finally:
            for keyed in self._keyed:
                keyed.set()
            if self._key_process is not None:
                self._key_process.stop()

    def results(self) -> Iterator[tuple[Path, bytes, list[Problem], list[str] | None]]:
        """``(directory, output, problems, keys)`` of each build run, in order, as each ends;
        ``keys``: the ``validated_key`` of each object the key process decoded from the
        output (None without one, or when the output did not decode there)."""
        if self._missing is not None:
            raise self._missing
        with self._lock:
            if self._probe and self.probe is None and self._todo and not self._stopped:
                self.probe = VersionProbe(self._kubectl)
        for i, directory in enumerate(self._todo):
            self._ended[i].wait()
            if self._crash is not None:
                raise self._crash
            if self._keyed is not None:
                self._keyed[i].wait()  # the key thread reads the output first
            build = self._builds[i]
            if isinstance(build, OSError):
                raise SetupError(
                    [Problem(file=str(directory), message=f"cannot run kubectl: {build}")]
                )
            assert build is not None
            try:
                data, problems = build.output()
            finally:
                build.stop()
            keys, self._keys[i] = self._keys[i], None
            yield directory, data, problems, keys

    def stop(self) -> None:
        """Kill the builds still running and start no more (an error, Ctrl-C, or done)."""
        with self._lock:
            self._stopped = True
            started = [b for b in self._builds if isinstance(b, Build)]
        self._ended_order.put(None)  # the key thread stops waiting
        if self._key_process is not None:
            self._key_process.kill()
        for build in started:
            build.stop()
        for worker in self._workers:
            worker.join()
        if self.probe is not None:
            self.probe.stop()


def _validate_tree(
    out_dir: Path,
    crds: CrdSet | None,
    root: Path,
    baseline: Baseline | None,
    *,
    allowance: PodAllowance,
    progress: Callable[[str], None] | None,
    planned: Planned | None,
    notes: list[Problem] | None,
    reuse: Mapping[str, str] | None,
    digests: dict[str, str] | None,
    builds: TreeBuilds | None,
    written: Mapping[str, bytes] | None,
) -> tuple[list[Problem], int]:
    step = progress or (lambda _text: None)
    own = builds is None
    if builds is None:
        builds = TreeBuilds(out_dir, reuse, probe=notes is not None, keys=planned is not None)
    if digests is not None:
        digests.update(builds.digests())
    shown_tree = _shown(out_dir, root)
    try:
        step(f"validating the manifests in {out_dir.as_posix()}/")
        seen: set[str] = set()
        problems = validate_paths(
            [out_dir], crds, root=root, allowance=allowance, baseline=baseline, seen=seen,
            known=_written(out_dir, written, planned),
        )  # fmt: skip
        for directory, data, build_problems, decoded_keys in builds.results():
            step(f"kustomize build {directory.as_posix()}")
            problems.extend(build_problems)
            if build_problems:
                continue
            if decoded_keys is not None and planned is not None:
                # Decoded in the key process: objects each validated already (as a file's)
                # and exactly the planned ones leave nothing to say about this build.
                listed = None
                if all(k in seen for k in decoded_keys):
                    listed = matches_build(directory, out_dir, decoded_keys, planned, shown_tree)
                if listed is not None:
                    problems.extend(listed)
                    continue
            shown = f"{directory.as_posix()} (kustomize build)"
            try:
                objects = decode_build(data)
            except (DecodeError, InputLimitError) as err:
                problems.append(
                    Problem(
                        file=shown,
                        line=err.line,
                        message=f"Argo CD cannot decode this build: {err.message}",
                    )
                )
                continue
            # What Argo CD applies is the build output, so validate that too; an object
            # identical to one of a file was validated already.
            keys = [canonical_json(d.body) for d in objects]
            problems.extend(
                validate_decoded(objects, shown, crds, allowance=allowance, seen=seen, keys=keys)
            )
            if planned is not None:
                compared = compare_build(
                    directory, out_dir, objects, planned,
                    shown=shown_tree, origins=origin_build, keys=keys,
                )  # fmt: skip
                problems.extend(compared)
        if builds.probe is not None and notes is not None:
            warning = builds.probe.warning(f"{shown_tree}/")
            if warning is not None:
                notes.append(warning)
    finally:
        if own:
            builds.stop()
    return problems, len(builds.directories)


def _written(
    out_dir: Path, written: Mapping[str, bytes] | None, planned: Planned | None
) -> dict[Path, tuple[bytes, Sequence[dict[str, Any]]]] | None:
    """``validate_paths``'s ``known``: each file's bytes and objects, by the path a walk of
    ``out_dir`` finds it at."""
    if written is None or planned is None:
        return None
    base = out_dir.resolve()
    return {base / rel: (data, planned[rel]) for rel, data in written.items() if rel in planned}


def _shown(out_dir: Path, root: Path) -> str:
    try:
        return out_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return out_dir.as_posix()


def build_directories(out_dir: Path) -> list[Path]:
    """Every directory below ``out_dir`` whose kustomization Argo CD builds: a Kustomization
    (not a Component) listing no directory (see the module docstring)."""
    found = []
    for path in sorted(out_dir.rglob("kustomization.yaml")):
        if any(part.startswith(".") for part in path.relative_to(out_dir).parts):
            continue
        try:
            doc = _read_kustomization(path)
        except (OSError, yaml.YAMLError):
            found.append(path.parent)  # the build says what is wrong with it
            continue
        if not isinstance(doc, dict) or doc.get("kind") == "Component":
            continue
        listed = doc.get("resources") or []
        if isinstance(listed, list) and any(
            isinstance(r, str) and (path.parent / r).is_dir() for r in listed
        ):
            continue
        found.append(path.parent)
    return found


def _read_kustomization(path: Path) -> object:
    """The one document of a kustomization file (None when empty), read with libyaml and
    the input bounds (``documents.load_all``); raises ``yaml.YAMLError`` for more documents."""
    docs = load_all(path.read_bytes())
    if len(docs) > 1:
        raise yaml.YAMLError(f"{path}: more than one document")
    return docs[0] if docs else None


def _inputs(directory: Path) -> tuple[str, int]:
    """SHA-256 of every file below ``directory`` and below the components its kustomization
    lists (paths and bytes): more than the build reads, never less; and how many bytes it
    read."""
    roots = [directory]
    try:
        doc = _read_kustomization(directory / "kustomization.yaml")
    except (OSError, yaml.YAMLError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("components"), list):
        roots += [directory / c for c in doc["components"] if isinstance(c, str)]
    h = hashlib.sha256()
    size = 0
    for root in roots:
        for path in sorted(p for p in root.resolve().rglob("*") if p.is_file()):
            data = path.read_bytes()
            size += len(data)
            h.update(path.as_posix().encode("utf-8", "surrogateescape") + b"\0")
            h.update(hashlib.sha256(data).digest())
    return h.hexdigest(), size


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
