"""Controller expectations as data: what each controller's own tests assert, case by case.

Every case names the upstream test file and case it comes from (``Source``), gives the
input as trainkit would write it (``Definition``: a trainkit object, planned and rendered)
or as the upstream fixture rewritten in our form (``Manifest``: the object the controller
receives), and states what that upstream test asserts, as checks on trainkit's effective
model (``trainkit.effective``): pods per role, names, env per pod, ports, restart and
success policy, the Volcano PodGroup, the Kueue Workload, or the verdict of trainkit's
admission checks. ``tests/test_expectations.py`` runs every case and fails on any
difference.

Facts carry over; no upstream code or fixture is copied. Where trainkit differs on purpose,
the case says why (``why``); where a difference is a known defect not fixed yet, the case
still asserts what upstream does and names the defect (``defect``: a strict xfail).

One module per controller:

- ``training_operator``: Kubeflow Training Operator v1.9.4 (PyTorchJob, TFJob, PaddleJob);
- ``training_operator_xgb_jax``: the same operator's XGBoostJob and JAXJob, with Kueue
  v0.19.2's integrations for both;
- ``paddle_operator``: PaddleFlow paddle-operator 68230bfd (v0.3.5);
- ``volcano``: Volcano v1.12.4 (queue admission, queue state);
- ``kueue``: Kueue v0.19.2 (the Kubeflow and MPIJob integrations);
- ``kueue_trainjob``, ``kueue_rayjob``: Kueue v0.19.2 (the TrainJob and RayJob integrations);
- ``mpi_operator``: kubeflow/mpi-operator caa3c47 (v0.8.x, MPIJob v2beta1);
- ``trainer``: Kubeflow Trainer v2.3.0 (TrainJob and its runtimes);
- ``kuberay``: KubeRay v1.7.0 (RayJob).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ABSENT",
    "PRESENT",
    "Case",
    "Command",
    "Definition",
    "Env",
    "FieldRef",
    "Gang",
    "Health",
    "InitContainers",
    "Kueue",
    "Manifest",
    "NoGang",
    "PodNames",
    "Pods",
    "Port",
    "RayStart",
    "Refused",
    "Resources",
    "Restart",
    "Source",
    "Succeeds",
    "Volume",
    "World",
]

# --- where a case comes from ----------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """An upstream test: repository, pinned ref, file and the case's own name."""

    repo: str
    ref: str
    file: str
    case: str

    def __str__(self) -> str:
        return f"{self.repo}@{self.ref} {self.file}: {self.case}"


# --- inputs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Definition:
    """A trainkit definition, planned on cluster ``c`` (team ``t``, queue ``q``) and rendered
    by trainkit, then read by ``effective/``: what trainkit writes for the upstream case."""

    job: Any
    """The object, or a function making it where the model itself refuses the input (the
    case then gives ``kind``)."""
    scheduler: str = "volcano"
    """``volcano`` (a Volcano Queue ``q``), ``kueue`` (a ClusterQueue ``q``) or ``default``."""
    operators: tuple[str, ...] | None = None
    """The cluster's operators; None keeps the model's default."""
    platform: tuple[Any, ...] = ()
    """More platform objects (runtimes, queues), defined in jobs/platform/."""
    queue: str = "q"
    """The queue team ``t`` may use."""
    capability: Mapping[str, Any] | None = None
    """The Volcano queue ``q``'s capability (a Capacity's fields); None: 64 GPUs."""
    cluster: Mapping[str, Any] = field(default_factory=dict)
    """More fields of the Cluster (``kueue_frameworks``…)."""
    team: Mapping[str, Any] = field(default_factory=dict)
    """More fields of team ``t`` (its grants)."""


@dataclass(frozen=True)
class Manifest:
    """An object as the controller receives it: the upstream fixture in our form. A TrainJob
    comes with its runtime's object."""

    body: Mapping[str, Any]
    runtime: Mapping[str, Any] | None = None
    namespace: str = "default"
    gpu_resource: str = "nvidia.com/gpu"


# --- what the upstream test asserts -----------------------------------------------------------

ABSENT = object()
"""An env value: the variable is not set on that pod."""
PRESENT = object()
"""An env value: the variable is set on that pod (whatever its value)."""


@dataclass(frozen=True)
class FieldRef:
    """An env value read from the pod's own fields (``valueFrom.fieldRef``)."""

    path: str


@dataclass(frozen=True)
class Pods:
    """Pods per role, every role of the job (exactly)."""

    counts: Mapping[str, int]


@dataclass(frozen=True)
class PodNames:
    """The name of pod ``index`` of each ``(role, index)``."""

    names: Mapping[tuple[str, int], str]


@dataclass(frozen=True)
class Env:
    """Variables of the training container of pod ``index`` of ``role`` (the ones named)."""

    role: str
    index: int
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Port:
    """A port of the training container of ``role``'s pods."""

    role: str
    port: int
    name: str | None = None


@dataclass(frozen=True)
class Command:
    """The training container's command on ``role``'s pods (None: the image's)."""

    role: str
    command: tuple[str, ...] | None


@dataclass(frozen=True)
class Volume:
    """A volume mounted in the training container of ``role``'s pods, and its source."""

    role: str
    path: str
    source: Mapping[str, Any]


@dataclass(frozen=True)
class RayStart:
    """Parameters of the ``ray start`` KubeRay generates for ``role``'s pods
    (``KUBERAY_GEN_RAY_START_CMD``): ``--name=value``, ``"true"`` for a bare ``--name``,
    ``ABSENT`` for a parameter not given."""

    role: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Resources:
    """The training container's resources on ``role``'s pods after every merge the
    controller does: ``requests`` and ``limits`` exactly (quantities compared by value)."""

    role: str
    requests: Mapping[str, str]
    limits: Mapping[str, str]


@dataclass(frozen=True)
class InitContainers:
    """Init containers the controller adds to ``role``'s pods, by name."""

    role: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Restart:
    """The pods' restartPolicy of ``role`` as the controller creates them."""

    role: str
    policy: str


@dataclass(frozen=True)
class Succeeds:
    """When the job succeeds: the roles whose pods decide, ``all`` of them, their ``first``
    or ``any``; and the backoff limit the controller enforces (None: none)."""

    roles: tuple[str, ...]
    needs: str
    backoff_limit: int | None = None


@dataclass(frozen=True)
class World:
    """Processes per node and the world size."""

    procs_per_node: str
    world_size: int


@dataclass(frozen=True)
class Gang:
    """The Volcano PodGroup: name, minMember, queue and, when given, minResources (exact)
    and priorityClassName."""

    podgroup: str
    min_member: int
    queue: str
    min_resources: Mapping[str, str] | None = None
    priority_class: str | None = None


@dataclass(frozen=True)
class NoGang:
    """No PodGroup."""


@dataclass(frozen=True)
class Kueue:
    """The Kueue Workload: LocalQueue, pod sets ``(name, count)`` in order, and, when given,
    each pod set's per-pod requests and the workload's priority class (``""``: none)."""

    queue: str
    pod_sets: tuple[tuple[str, int], ...]
    requests: Mapping[str, Mapping[str, str]] | None = None
    priority_class: str | None = None


@dataclass(frozen=True)
class Refused:
    """trainkit refuses the input, with a message containing ``text`` (the controller or
    scheduler would never run it as written)."""

    text: str


@dataclass(frozen=True)
class Health:
    """What trainkit's Argo CD health check says of an object whose ``status`` the
    controller wrote (upstream's status in a test), by the check's key."""

    key: str
    status: Mapping[str, Any] | None
    health: str
    message: str | None = None


Check = (
    Pods
    | PodNames
    | Env
    | Port
    | Command
    | Volume
    | Resources
    | RayStart
    | InitContainers
    | Restart
    | Succeeds
    | World
    | Gang
    | NoGang
    | Kueue
    | Refused
)


@dataclass(frozen=True)
class Case:
    """One upstream test case: its input and what it asserts."""

    id: str
    source: Source
    given: Definition | Manifest | None
    """None for a health case (the object is in its ``Health`` check)."""
    expect: tuple[Check | Health, ...]
    why: str = ""
    """Where trainkit's output differs from upstream on purpose, why (the checks then state
    trainkit's output)."""
    defect: str = ""
    """A known defect that makes trainkit differ (``issue 24: …``): the case asserts
    upstream's result and is a strict xfail until the defect is fixed."""
    kind: str = ""
    """The kind the case covers (``PyTorchJob``, ``PaddleJob (paddle-operator)``…), for the
    coverage check; taken from the input when empty."""
    tags: tuple[str, ...] = field(default=())
