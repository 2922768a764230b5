"""What the controllers create for a job: pods, their environment, the gang to admit."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..kube.quantities import parse_quantity
from ..render.pod import GPU_HIDING_ENV
from ..resolve import PlannedJob

__all__ = [
    "RAY",
    "Completion",
    "EffectiveJob",
    "EnvVar",
    "Gang",
    "PodSet",
    "Service",
    "Workload",
    "WorkloadPodSet",
    "env_source",
    "own_env_source",
    "pod_requests",
    "waits_for_hosts",
]

RAY = "ray"
"""``procs_per_node`` of a Ray job: Ray places tasks and actors, no fixed process count."""


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    """The value on the first pod of its role."""
    source: str
    """Who sets it: ``job``, ``runtime 'x'``, ``network profile 'y'``, an operator."""
    per_pod: str = ""
    """How the value varies from pod to pod (``the node rank``), or empty."""
    value_from: dict[str, Any] | None = None
    """The container's ``valueFrom``: the pod reads the value when it starts, so ``value``
    is empty here."""

    @classmethod
    def of(cls, entry: dict[str, Any], source: str) -> EnvVar:
        """The variable of a rendered container's ``env`` entry."""
        value_from = entry.get("valueFrom")
        return cls(entry["name"], str(entry.get("value", "")), source, value_from=value_from)

    @property
    def ref(self) -> str:
        """Where the value comes from when it is not in the pod spec, e.g. ``Secret 'hf-token'
        key 'token'``, ``the pod's spec.nodeName``; empty for a plain value, and for a field of
        the pod whose value the model computed (an operator's)."""
        source = self.value_from or {}
        for ref_field, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
            if ref_field in source:
                r = source[ref_field]
                optional = " (optional)" if r.get("optional") else ""
                return f"{kind} {r.get('name')!r} key {r.get('key')!r}{optional}"
        if self.value:
            # A field of the pod an operator sets: the model computed its value.
            return ""
        if "fieldRef" in source:
            return f"the pod's {source['fieldRef'].get('fieldPath')}"
        if "resourceFieldRef" in source:
            r = source["resourceFieldRef"]
            unit = f" in units of {r['divisor']}" if r.get("divisor") else ""
            return f"the container's {r.get('resource')}{unit}"
        return ""

    def entry(self) -> dict[str, Any]:
        """The container ``env`` entry."""
        if self.value_from is not None:
            return {"name": self.name, "valueFrom": self.value_from}
        return {"name": self.name, "value": self.value}


def env_source(pj: PlannedJob, name: str, otherwise: str) -> str:
    """Who set a variable of the rendered container: the network profile of the job's pods
    (the plan refuses a job or runtime that sets the same name), else ``otherwise``."""
    if pj.network is not None and name in pj.network.env:
        return f"network profile {pj.network.name!r}"
    if name in GPU_HIDING_ENV:
        # Definitions may not set these (model.env refuses device-runtime variables): the
        # renderer blanks them on a pod that requests no GPU (render.pod.hide_gpus).
        return "trainkit: the pod requests no GPU"
    return otherwise


def own_env_source(pj: PlannedJob, rtype: str, name: str) -> str:
    """Who set a variable of replica type ``rtype``'s rendered container: the profile or
    trainkit as in ``env_source``, else the role's own ``env`` when it gives the name, else
    the job."""
    found = pj.role_of(rtype)
    if found is not None and name in found[1].env:
        return env_source(pj, name, f"role {found[0]}")
    return env_source(pj, name, "job")


def waits_for_hosts(spec: dict[str, Any]) -> str | None:
    """What a launcher pod's ``wait-for-hosts`` init container (render/mpi_wait.py) does,
    or None without one."""
    for c in spec.get("initContainers") or []:
        if c.get("name") == "wait-for-hosts":
            seconds = (c.get("command") or ["?"])[-1]
            return (
                f"the launcher first waits, up to {seconds} s per attempt, until every host of "
                "the hostfile accepts its ssh (init container wait-for-hosts); then mpirun runs"
            )
    return None


@dataclass(frozen=True)
class PodSet:
    """``count`` identical pods of one role, as the controller creates them."""

    role: str
    count: int
    first_rank: int
    """Node rank of the role's first pod (the Master is 0, Worker i is i + 1)."""
    spec: dict[str, Any]
    """The pod spec: the template after every merge the controller does."""
    container: str
    """Name of the training container in ``spec``."""
    env: tuple[EnvVar, ...]
    """Environment of the training container, injected variables included."""
    runs_ranks: bool = True
    """False for a role that only starts the others' processes (an MPI launcher)."""
    duty: str = ""
    """What the role's pods do, where node ranks do not say it (a Ray head)."""
    restart_policy: str | None = None
    """The pods' ``restartPolicy`` as the controller sets it; None where it keeps the
    template's (Kubernetes' default is ``Always``)."""
    name_format: str | None = None
    """Pod ``i``'s name and hostname, ``{i}`` standing for its index (``job-worker-{i}``);
    None where the controller picks names of its own (a random suffix)."""
    added_init_containers: tuple[dict[str, Any], ...] = ()
    """Init containers the controller adds to the template (not the job's own)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """The pods' labels as the controller creates them (the template's and its own), where
    the model knows them; empty otherwise."""
    vary: Callable[[int], Sequence[EnvVar]] | None = field(default=None, compare=False, repr=False)
    """The training container's env on pod ``i`` when it differs from pod to pod."""

    @property
    def main(self) -> dict[str, Any]:
        for c in self.spec.get("containers") or []:
            if c.get("name") == self.container:
                return dict(c)
        return {}

    def limits(self) -> dict[str, str]:
        res = self.main.get("resources") or {}
        return {str(k): str(v) for k, v in (res.get("limits") or {}).items()}

    def pod_name(self, index: int) -> str | None:
        """The name (and hostname) of pod ``index``, when the controller fixes it."""
        return None if self.name_format is None else self.name_format.format(i=index)

    def env_of(self, index: int) -> tuple[EnvVar, ...]:
        """The training container's env on pod ``index`` of the role."""
        if index == 0 or self.vary is None:
            return self.env
        return tuple(self.vary(index))

    def requests(self) -> dict[str, Decimal]:
        """Requests of the whole pod, as the scheduler counts them (a limit stands for a
        missing request; init containers, the controller's included, count by their
        largest)."""
        init = [*(self.spec.get("initContainers") or []), *self.added_init_containers]
        return pod_requests(self.spec.get("containers") or [], init)

    def gpus(self, resource: str) -> int:
        """GPUs of ``resource`` in each pod's training container."""
        return int(parse_quantity(self.limits().get(resource, "0")) or 0)

    def sees_gpus(self, gpu_resource: str, accelerator: str | None) -> str:
        """Which GPUs the training container sees: those it requests; without any, none
        when the NVIDIA variables are blank (or on ROCm), else every GPU of the node, which
        the NVIDIA runtime exposes after the image's NVIDIA_VISIBLE_DEVICES."""
        n = self.gpus(gpu_resource)
        if n:
            return f"its {n} {gpu_resource}"
        if accelerator == "rocm":
            return "none (ROCm exposes only the devices a pod requests)"
        value = None
        for e in self.env:  # the last of a name wins
            if e.name == "NVIDIA_VISIBLE_DEVICES" and e.value_from is None:
                value = e.value
        if value is not None and value.strip() in ("", "void", "none"):
            return "none (NVIDIA_VISIBLE_DEVICES is blank)"
        return "every GPU of its node (the image's NVIDIA_VISIBLE_DEVICES)"

    def images(self) -> list[tuple[str, str]]:
        """``(container, image)`` of every container of the pod."""
        out = []
        for key in ("initContainers", "containers"):
            for c in self.spec.get(key) or []:
                out.append((str(c.get("name")), str(c.get("image") or "")))
        return out


def pod_requests(
    containers: Sequence[Mapping[str, Any]], init: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Decimal]:
    """A pod's requests as the scheduler (and Kueue) counts them: per resource the sum over
    its containers and native sidecars (init containers with ``restartPolicy: Always``), or,
    if that is more, what an init container needs while it runs beside the sidecars started
    before it (k8s.io/component-helpers resource/helpers.go PodRequests; Volcano v1.12
    pkg/scheduler/api/pod_info.go GetPodResourceRequest does the same). A limit stands for a
    missing request (the API server's default)."""

    def amounts(c: Mapping[str, Any]) -> dict[str, Decimal]:
        res = c.get("resources") or {}
        out = {}
        for name, value in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            parsed = parse_quantity(str(value))
            if parsed is not None:
                out[str(name)] = parsed
        return out

    def add(into: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
        for name, value in more.items():
            into[name] = into.get(name, Decimal(0)) + value

    total: dict[str, Decimal] = {}
    for c in containers:
        add(total, amounts(c))
    sidecars: dict[str, Decimal] = {}
    peak: dict[str, Decimal] = {}
    for c in init:
        own = amounts(c)
        if c.get("restartPolicy") == "Always":
            add(total, own)  # runs for the pod's whole life
            add(sidecars, own)
            running = dict(sidecars)
        else:
            running = dict(sidecars)
            add(running, own)
        for name, value in running.items():
            peak[name] = max(peak.get(name, Decimal(0)), value)
    for name, value in peak.items():
        total[name] = max(total.get(name, Decimal(0)), value)
    return total


@dataclass(frozen=True)
class Gang:
    """The Volcano PodGroup the scheduler must admit as a whole."""

    podgroup: str
    queue: str | None
    min_member: int
    requests: dict[str, Decimal]
    """The PodGroup's ``minResources`` as the controller computes it: what Volcano's enqueue
    checks against the queue."""
    priority_class: str | None = None
    """The PodGroup's ``priorityClassName``, by which Volcano orders and preempts gangs."""
    placed: dict[str, Decimal] | None = None
    """What the ``min_member`` pods Volcano places together request, where that differs
    from ``requests`` (an MPI launcher created later; a member-less submitter)."""
    at_most: dict[str, Decimal] | None = None
    """What every pod of the job requests when it has more pods than the gang's members (an
    elastic PyTorchJob's Workers beyond ``min_nodes``, up to ``max_nodes`` with an
    autoscaler): Volcano places them later, within the queue's capability; None otherwise."""

    def needs(self) -> dict[str, Decimal]:
        """Per resource the larger of ``requests`` and ``placed``: a queue must hold both
        to admit the gang and then start it."""
        out = dict(self.requests)
        for name, value in (self.placed or {}).items():
            out[name] = max(out.get(name, Decimal(0)), value)
        return out


@dataclass(frozen=True)
class WorkloadPodSet:
    """One pod set of a Kueue Workload: ``count`` pods of one template."""

    name: str
    count: int
    requests: dict[str, Decimal]
    """What each pod requests."""


@dataclass(frozen=True)
class Workload:
    """The Kueue Workload a job becomes: admitted whole, every pod set at once."""

    queue: str
    """The LocalQueue the job's ``kueue.x-k8s.io/queue-name`` label names."""
    pod_sets: tuple[WorkloadPodSet, ...]
    priority_class: str | None = None
    workload_priority: str | None = None
    """The WorkloadPriorityClass the job's ``kueue.x-k8s.io/priority-class`` label names:
    Kueue takes the Workload's priority from it before any PriorityClass (kueue v0.19.2
    pkg/controller/jobframework/reconciler.go ExtractPriority)."""

    def requests(self) -> dict[str, Decimal]:
        """What the whole workload requests (what Kueue checks against the quota)."""
        total: dict[str, Decimal] = {}
        for ps in self.pod_sets:
            for name, value in ps.requests.items():
                total[name] = total.get(name, Decimal(0)) + value * ps.count
        return total

    @property
    def pods(self) -> int:
        return sum(ps.count for ps in self.pod_sets)


@dataclass(frozen=True)
class Completion:
    """When the controller ends the job, and how far it retries."""

    succeeds: tuple[str, ...]
    """The roles whose pods decide success."""
    needs: str
    """``all``: every pod of those roles exits 0; ``first``: their first pod does."""
    backoff_limit: int | None
    """Failures (restarts) the controller counts before it fails the job; None: no bound
    (a pod restarted in place restarts forever)."""
    counts: str = ""
    """What the backoff limit counts, in the controller's terms."""


@dataclass(frozen=True)
class Service:
    """A Service the controller creates for the job's pods: the DNS names of its hosts."""

    name: str
    selector: Mapping[str, str]
    """The pods it selects (exactly these labels)."""
    headless: bool = True
    """``clusterIP: None``: each selected pod gets its own name, ``<hostname>.<name>``."""
    publish_not_ready: bool = False
    """Whether a pod's name resolves before the pod is ready."""
    ports: tuple[int, ...] = ()


@dataclass(frozen=True)
class EffectiveJob:
    planned: PlannedJob
    pod_sets: tuple[PodSet, ...]
    procs_per_node: str
    """What torchrun gets as ``--nproc-per-node`` (a number, or ``auto``)."""
    world_size: int
    """Processes of the whole job as torchrun starts them (nodes × processes per node)."""
    world_size_env: str | None
    """WORLD_SIZE as the operator sets it in each pod (PyTorchJob), if it does."""
    gang: Gang | None
    notes: tuple[str, ...] = field(default=())
    """Facts worth telling (how a default was resolved)."""
    deadline: str = "none"
    """The job's deadline and when the controller starts counting it (``effective.deadlines``)."""
    workload: Workload | None = None
    """The Kueue Workload of a job on a Kueue cluster (its queue label), else None."""
    completion: Completion | None = None
    """When the job succeeds or fails, as its controller decides."""
    hostfile: str | None = None
    """The MPI hostfile the controller writes for the launcher (``/etc/mpi/hostfile``)."""
    services: tuple[Service, ...] = ()
    """The Services the controller creates for the job's pods (their names)."""

    @property
    def kind(self) -> str:
        return self.planned.kind

    @property
    def name(self) -> str:
        return self.planned.object_name

    @property
    def nodes(self) -> int:
        """Pods that run training processes."""
        return sum(ps.count for ps in self.pod_sets if ps.runs_ranks)

    def requests(self) -> dict[str, Decimal]:
        """What every pod of the job requests together."""
        total: dict[str, Decimal] = {}
        for ps in self.pod_sets:
            for name, value in ps.requests().items():
                total[name] = total.get(name, Decimal(0)) + value * ps.count
        return total

    def gpus(self) -> int:
        """GPUs of the whole job in the cluster's GPU resource, from the pods' limits."""
        resource = self.planned.cluster.gpu_resource
        return sum(ps.count * ps.gpus(resource) for ps in self.pod_sets)

    def gpus_per_node(self) -> int:
        resource = self.planned.cluster.gpu_resource
        return max((ps.gpus(resource) for ps in self.pod_sets), default=0)
