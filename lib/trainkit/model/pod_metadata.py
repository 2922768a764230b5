"""Labels and annotations a job puts on its pods, and the keys that steer a controller.

A pod's labels and annotations are read by more than people: Argo CD, Kueue, Volcano,
the Kubeflow operators, KubeRay, JobSet, the kubelet and CNI plugins act on keys under
their own prefixes (a Kueue queue-name label admits the pod elsewhere, a Multus network
annotation attaches a host interface, an Argo CD annotation changes how it syncs). So a
definition may set such a key only where the platform grants it (``Team.pod_metadata_keys``),
and never one of trainkit's own.

The job object's own labels and annotations (``labels=``, ``annotations=``) follow the same
rule and grant, and may in addition never take a key trainkit itself sets on a job object
(``JOB_OWNED_KEYS``): the Kueue queue, the Volcano queue, Argo CD's sync wave.
"""

from __future__ import annotations

__all__ = [
    "JOB_OWNED_KEYS",
    "MULTUS_NETWORKS",
    "STEERING_DOMAINS",
    "TRAINKIT_DOMAIN",
    "job_keys_refused",
    "own_keys_refused",
    "steering_domain",
]

MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"
"""The pod annotation Multus reads a pod's secondary networks from (a ``NetworkProfile``'s
``networks``)."""

TRAINKIT_DOMAIN = "trainkit.dev"
"""trainkit's own keys (team, job, definition hash): never a definition's to set."""

STEERING_DOMAINS = (
    "argocd.argoproj.io",
    "kueue.x-k8s.io",
    "scheduling.k8s.io",
    "volcano.sh",
    "scheduling.volcano.sh",
    "ray.io",
    "kubeflow.org",
    "training.kubeflow.org",
    "trainer.kubeflow.org",
    "jobset.sigs.k8s.io",
    "batch.kubernetes.io",
    "kubernetes.io",
    "k8s.io",
    "k8s.v1.cni.cncf.io",
)
"""Key prefixes (``<domain>/``) a controller acts on; subdomains count too
(``node.kubernetes.io/``, ``pod-security.kubernetes.io/``), as Kubernetes reserves
``*.kubernetes.io`` and ``*.k8s.io`` for itself."""


JOB_OWNED_KEYS = {
    "argocd.argoproj.io/sync-wave": "trainkit orders every object's sync by it",
    "kueue.x-k8s.io/queue-name": "trainkit sets the job's LocalQueue from queue=",
    "kueue.x-k8s.io/priority-class": "trainkit sets it from workload_priority=",
    "scheduling.volcano.sh/queue-name": "trainkit sets the job's Volcano queue from queue=",
    "volcano.sh/queue-name": "trainkit sets a Ray job's Volcano queue from queue=",
    "ray.io/priority-class-name": "trainkit sets it from priority_class=",
}
"""Keys trainkit sets on a job object itself (render/script.py job_metadata, the operators'
run policies, render/kuberay.py volcano_metadata), with why: a job's ``labels`` or
``annotations`` may not take them, whatever the Team grants (a grant of ``kueue.x-k8s.io/``
would otherwise let a job name another team's LocalQueue). Besides these, trainkit's own
``trainkit.dev/`` keys and ``app.kubernetes.io/managed-by`` (``own_keys_refused``)."""


def steering_domain(key: str) -> str | None:
    """The controller domain of ``key``'s prefix (``kueue.x-k8s.io`` for
    ``kueue.x-k8s.io/queue-name``), or None for a key no controller reads."""
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return None
    if prefix == "app.kubernetes.io":
        # Kubernetes' recommended labels are free to use, but for two: trainkit sets
        # managed-by, and Argo CD's default label tracking reads instance (a pod carrying it
        # would be taken for an object of that Application, and pruned).
        return {"managed-by": TRAINKIT_DOMAIN, "instance": "argocd.argoproj.io"}.get(
            key.removeprefix("app.kubernetes.io/")
        )
    # The most specific domain names the controller (scheduling.volcano.sh, not volcano.sh).
    for domain in sorted((TRAINKIT_DOMAIN, *STEERING_DOMAINS), key=len, reverse=True):
        if prefix == domain or prefix.endswith("." + domain):
            return domain
    return None


def own_keys_refused(meta: dict[str, str]) -> dict[str, str]:
    """``meta`` unless it sets one of trainkit's own keys (a pydantic field validator)."""
    own = sorted(k for k in meta if steering_domain(k) == TRAINKIT_DOMAIN)
    if own:
        raise ValueError(
            f"{', '.join(repr(k) for k in own)}: keys under {TRAINKIT_DOMAIN}/ are trainkit's "
            "own (team, job, definition); choose a key of your organisation's domain"
        )
    return meta


def job_keys_refused(meta: dict[str, str]) -> dict[str, str]:
    """``meta`` (a job's own labels or annotations) unless it sets one of trainkit's own keys
    or one trainkit sets on every job object (``JOB_OWNED_KEYS``; a pydantic field
    validator)."""
    why = [
        f"{k!r} is trainkit's on the job object ({JOB_OWNED_KEYS[k]}); remove it"
        for k in sorted(meta)
        if k in JOB_OWNED_KEYS
    ]
    try:
        own_keys_refused(meta)
    except ValueError as e:
        why.insert(0, str(e))
    if why:
        raise ValueError("; ".join(why))
    return meta
