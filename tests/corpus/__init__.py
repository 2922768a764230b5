"""Real manifests as trainkit definitions: the corpus of issue 28.

Each case mirrors one manifest published upstream (an operator's examples at the tag trainkit
pins, or a platform's public repository) and cites it (``Source``: repository, pinned ref and
commit, path). It holds two things written here, never a copy of the upstream file:

- ``definition``: the trainkit definition a platform engineer would write for that manifest
  (a callable, so a definition trainkit refuses is a failing case, not an import error);
- ``expected``: what the manifest means, as a small structure (``Expected``: kind, name, the
  roles with their replicas and pods, the spec fields that matter, the queue).

``tests/test_corpus.py`` plans and renders each definition in-process and compares the
rendered object's meaning with ``expected``, after the normalisations listed in its docstring.
A manifest that needs a field trainkit does not have yet is still recorded: its case names the
field (``needs``) and runs as a strict xfail until the field lands and the definition uses it.

One module per source: ``training_operator`` (Training Operator v1.9.4 examples),
``mpi_operator`` (mpi-operator v0.8.0), ``paddle_operator`` (paddle-operator v0.3.5),
``kuberay`` (KubeRay v1.7.0), ``trainer`` (Kubeflow Trainer v2.3.0), ``kueue`` (Kueue
v0.19.2's job samples), ``volcano`` (Volcano v1.12.4's documentation), ``platforms`` (platform
teams' public repositories, at the commit read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Case", "Expected", "Pod", "Source", "pod"]


@dataclass(frozen=True)
class Source:
    """Where the manifest is published: repository, tag (and its commit), path."""

    repo: str
    ref: str
    commit: str
    path: str

    def __str__(self) -> str:
        return f"github.com/{self.repo}@{self.ref} ({self.commit[:12]}) {self.path}"


@dataclass(frozen=True)
class Pod:
    """One role's meaning: replicas and what each of its pods runs, as the manifest says it.

    ``argv`` is the container's command followed by its args; a manifest without a command
    starts the image's ENTRYPOINT, written ``ENTRYPOINT`` in front of the args. ``requests``
    and ``limits`` hold what the manifest sets (GPUs under their resource name); ``env`` the
    variables it sets (a value, or ``("secret", name, key)``, ``("configMap", name, key)``,
    ``("field", path)``); ``mounts`` maps each mount path to its volume
    (``"pvc:<claim>"``, ``"emptyDir:Memory"``, ``"configMap:<name>"``, …, with ``":ro"``
    when read-only). ``pod`` and ``container`` hold any other pod or container setting the
    manifest makes, by its Kubernetes name (e.g. ``{"nodeSelector": {...}}``)."""

    replicas: int
    image: str
    argv: tuple[str, ...]
    requests: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, Any] = field(default_factory=dict)
    mounts: Mapping[str, str] = field(default_factory=dict)
    ports: Mapping[str, int] = field(default_factory=dict)
    restart: str | None = None
    pull: str | None = None
    pod: Mapping[str, Any] = field(default_factory=dict)
    container: Mapping[str, Any] = field(default_factory=dict)


ENTRYPOINT = "ENTRYPOINT"
"""``argv[0]`` of a container that sets no command: the image's own."""


def pod(
    replicas: int,
    image: str,
    command: list[str] | None = None,
    args: list[str] | None = None,
    **settings: Any,
) -> Pod:
    """A ``Pod`` from the manifest's command and args as written."""
    argv = (*(command if command else [ENTRYPOINT]), *(args or []))
    return Pod(replicas=replicas, image=image, argv=tuple(argv), **settings)


@dataclass(frozen=True)
class Expected:
    """What a manifest means: its kind and name, its roles (by replica type, paddle-operator's
    ``ps``/``worker``, a RayJob's ``head`` and worker group names, a TrainJob's ``node``),
    the spec fields beside the roles that it sets (``spec``, by their Kubernetes names, run
    policy under ``runPolicy``), the queue it is admitted through (``("volcano", name)``,
    ``("kueue", name)`` or None) and the object's own labels and annotations beside the
    queue's."""

    kind: str
    name: str
    roles: Mapping[str, Pod]
    spec: Mapping[str, Any] = field(default_factory=dict)
    queue: tuple[str, str] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One manifest: where it is published, trainkit's definition of it, what it means.

    ``platform`` holds the Cluster settings (``cluster``: scheduler, operators) and the
    Team's grants (``team``) the definition needs; ``objects`` the other definitions it
    names (a runtime, a Volcano queue). ``needs`` names the fields trainkit lacks to say
    what the manifest says, ``refused`` what trainkit refuses on purpose (with the reason):
    the case is then a strict xfail."""

    id: str
    source: Source
    definition: Callable[[], Any]
    expected: Expected
    cluster: Mapping[str, Any] = field(default_factory=dict)
    team: Mapping[str, Any] = field(default_factory=dict)
    objects: tuple[Callable[[], Any], ...] = ()
    needs: str = ""
    refused: str = ""
