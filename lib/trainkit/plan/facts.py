"""The plan as data: what ``trainkit plan --format json`` prints, and its JSON Schema.

The models are the format's one definition: ``trainkit schema`` writes their
schema to ``schemas/plan.schema.json`` (field docstrings are the descriptions)
and the text and markdown views read the same objects. Amounts are Kubernetes
quantities as strings (``"64"``, ``"512Gi"``), GPUs whole numbers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Action",
    "Amounts",
    "ClusterReport",
    "FieldChange",
    "JobFacts",
    "ObjectChange",
    "PlanReport",
    "PodCount",
    "QueueSide",
    "QueueUse",
    "Resource",
    "TeamUse",
]

Action = Literal["add", "new-run", "change", "remove"]
Resource = str
"""``gpu`` (the cluster's GPU resource), ``cpu``, ``memory`` or another resource's name."""


class _Fact(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        # Every field is always written: the schema says so.
        json_schema_serialization_defaults_required=True,
        # trainkit builds these objects itself (model_construct: its types are checked by
        # mypy, its output by the schema test), so no validator is ever needed, and the
        # serializer only for --format json: neither is built at import.
        defer_build=True,
    )


class FieldChange(_Fact):
    """One field that differs between the deployed object and the new one."""

    field: str
    """Short name: ``nodes``, ``image``, ``args``, ``env``, ``script``, ``queue``,
    ``capability.nvidia.com/gpu``, ``runPolicy.backoffLimit``, …"""
    before: str | None = None
    """The deployed value, for fields whose value is worth showing (numbers, names)."""
    after: str | None = None
    """The new value, likewise."""


class PodCount(_Fact):
    role: str
    """The replica type (``Master``, ``Worker``) or the JobSet's replicated job (``node``)."""
    count: int
    """Pods of that role."""


class JobFacts(_Fact):
    """A job as the controllers will run it (from its effective pods)."""

    nodes: int
    """Pods of the job (training nodes)."""
    procs_per_node: str
    """Processes torchrun starts per node: a number, or ``auto`` (one per GPU)."""
    world_size: int
    """Processes of the whole job (nodes × processes per node)."""
    gpus: int
    """GPUs of the whole job, in ``gpu_resource``."""
    gpu_resource: str
    """The cluster's GPU resource name, e.g. ``nvidia.com/gpu``."""
    image: str
    """Image of the training container."""
    queue: str | None
    """Volcano queue of the job's gang; null without gang scheduling."""
    pods: list[PodCount]
    """Pods per role."""


class ObjectChange(_Fact):
    """One object Argo CD will create, change or delete (a new run of a job is one row)."""

    action: Action
    """``add``, ``new-run`` (a job's new run replaces its deployed run), ``change`` or
    ``remove``."""
    team: str
    """The team the object belongs to, or ``platform``."""
    kind: str
    """The object's kind, e.g. ``PyTorchJob``, ``Queue``, ``Application``."""
    namespace: str | None
    """Null for cluster-scoped objects."""
    name: str
    """The object's name (the new run's, for ``new-run``)."""
    previous: str | None = None
    """For ``new-run``: the name of the run it replaces, which Argo CD deletes."""
    source: str | None = None
    """The definition file the object comes from."""
    fields: list[FieldChange] = []
    """For ``change`` and ``new-run``: what differs, field by field (never whole objects)."""
    before: JobFacts | None = None
    """For jobs: the deployed run, as the controllers run it."""
    after: JobFacts | None = None
    """For jobs: the new run, as the controllers will run it."""
    note: str = ""
    """What Argo CD will do, spelt out where it deletes something."""


class Amounts(_Fact):
    """GPUs, CPU, memory and the other resources a queue quotes; a limit leaves out what it
    does not limit (null, or absent from ``other``)."""

    gpu: int | None = None
    """GPUs, counted in the cluster's GPU resource."""
    cpu: str | None = None
    """CPU as a Kubernetes quantity (``64``, ``500m``)."""
    memory: str | None = None
    """Memory as a Kubernetes quantity (``512Gi``)."""
    other: dict[str, str] = {}
    """Every other resource by name, as a Kubernetes quantity: ``ephemeral-storage`` and
    extended resources such as ``vpc.amazonaws.com/efa``."""


class QueueSide(_Fact):
    """A queue on one side (deployed or new)."""

    requests: Amounts
    """What the gangs of every job in git using the queue (or its children) request
    together: if every job ran at once. A finished job holds nothing in reality."""
    capability: Amounts | None = None
    """The queue's hard limit (``spec.capability``); of a Kueue ClusterQueue, its nominal
    quota summed over its flavors. More only makes jobs wait."""
    deserved: Amounts | None = None
    """What the queue is entitled to (``spec.deserved``); above it, it borrows."""
    guarantee: Amounts | None = None
    """What is reserved for the queue (``spec.guarantee.resource``)."""
    over_capability: list[Resource] = []
    """Resources whose requests exceed the capability; of a ClusterQueue in a cohort, what it
    can hold with what the cohort's other queues leave it to borrow."""
    above_deserved: list[Resource] = []
    """Resources whose requests exceed what the queue deserves."""
    reclaimable: bool | None = None
    """Volcano: whether other queues may reclaim what the queue holds above what it deserves
    (``spec.reclaimable``); null for a Kueue ClusterQueue."""
    cohort: str | None = None
    """Kueue: the cohort whose ClusterQueues lend each other their unused quota
    (``spec.cohortName``); null without one, and for a Volcano queue."""
    borrowing: Amounts | None = None
    """Kueue: what the queue's jobs would borrow from its cohort beyond the nominal quota, of
    what the cohort's other queues leave unused (within the queue's borrowing limit); null
    when the jobs fit the nominal quota, or without a cohort."""


class QueueUse(_Fact):
    """One Volcano Queue or Kueue ClusterQueue on one cluster, before → after. Information,
    never an error."""

    queue: str
    """The queue's name."""
    kind: Literal["Queue", "ClusterQueue"] = "Queue"
    """``Queue`` (Volcano) or ``ClusterQueue`` (Kueue)."""
    before: QueueSide | None
    """Null when the queue is not deployed."""
    after: QueueSide | None
    """Null when the queue is removed."""


class TeamUse(_Fact):
    """A team's GPUs on one cluster against ``Team.max_gpus``, before → after."""

    team: str
    """The team's name (its directory under ``jobs/``)."""
    before: int
    """GPUs of the team's deployed jobs together."""
    after: int
    """GPUs of the team's jobs in this tree together."""
    max_gpus: int | None
    """``Team.max_gpus`` as the definitions now say; null without a cap or team."""
    over_before: bool
    """The deployed jobs together exceed ``max_gpus``."""
    over_after: bool
    """The jobs of this tree together exceed ``max_gpus`` (synth refuses that)."""


class ClusterReport(_Fact):
    """What Argo CD will do to one cluster."""

    cluster: str
    """The cluster's name (its directory under ``generated/clusters/``)."""
    gpu_resource: str
    """The cluster's GPU resource; ``gpu`` amounts count it."""
    changes: list[ObjectChange]
    """Sorted by team (``platform`` last), action, kind and name."""
    queues: list[QueueUse] = []
    """Every queue on the cluster either side, by name."""
    teams: list[TeamUse] = []
    """Every team with jobs on the cluster either side, by name."""


class PlanReport(_Fact):
    """``trainkit plan --format json``: the tree from the working copy against what Argo CD
    deploys, per cluster."""

    format: Literal[1] = 1
    """Version of this format: raised only when a field changes meaning or disappears (new
    fields may appear without it)."""
    baseline: str
    """What the tree was compared with, e.g. ``origin/main (1a2b3c4d5e6f)``."""
    baseline_found: bool
    """False when nothing deployed was found: every object is then an addition."""
    note: str = ""
    """Why no baseline was found, and how to get one."""
    clusters: list[ClusterReport]
    """Every cluster either side (deployed or new), by name."""
    argocd: list[ObjectChange] = []
    """Changes of Argo CD's own objects (the Applications and AppProjects trainkit writes)."""
    migration: list[str] = []
    """While moving from one Application per cluster to one per team: each step, with
    what it does and where this change stands."""
