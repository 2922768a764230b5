"""What KubeRay v1.7.0 injects into the Ray containers of a RayJob's or a RayCluster's pods and a
RayJob's submitter (render/kuberay.py)."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = ["RAYJOB", "RAY_GCS_PORT", "rayjob_env"]

# KubeRay v1.7.0 sets these on the Ray container of every pod (ray-operator/controllers/ray/
# common/pod.go setContainerEnvVars) and on the submitter (rayjob_controller.go
# configureSubmitterContainer). RAY_PORT, RAY_ADDRESS and the usage flags only when the
# container has none: a job's own value would point ray.init() or the workers elsewhere.
RAY_GCS_PORT = 6379
_KUBERAY = "KubeRay sets it"
RAYJOB = ReservedEnv(
    kinds=("RayJob", "RayCluster"),
    names={
        "RAY_CLUSTER_NAME": f"{_KUBERAY} to the RayCluster's name",
        "RAY_CLUSTER_NAMESPACE": f"{_KUBERAY} to the namespace",
        "RAY_CLOUD_INSTANCE_ID": f"{_KUBERAY} to the pod's name (Ray's autoscaler reads it)",
        "RAY_NODE_TYPE_NAME": f"{_KUBERAY} to the pod's group",
        "KUBERAY_GEN_RAY_START_CMD": f"{_KUBERAY} to the `ray start` command it generates",
        "FQ_RAY_IP": f"{_KUBERAY} on workers to the head's Service",
        "RAY_IP": f"{_KUBERAY} on workers to the head's Service",
        "RAY_PORT": f"{_KUBERAY} to the head's GCS port, which the workers join",
        "RAY_ADDRESS": f"{_KUBERAY} to the head's GCS address, where ray.init() connects",
        "RAY_USAGE_STATS_KUBERAY_IN_USE": _KUBERAY,
        "RAY_USAGE_STATS_EXTRA_TAGS": f"{_KUBERAY} on the head",
        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE": _KUBERAY,
        "RAY_DASHBOARD_ADDRESS": f"{_KUBERAY} on the submitter to the head's dashboard",
        "RAY_JOB_SUBMISSION_ID": f"{_KUBERAY} on the submitter to the job's id",
    },
)


def rayjob_env(
    *,
    head: bool,
    group: str,
    start: str,
    cluster: str | None = None,
    head_service: str | None = None,
) -> dict[str, str]:
    """What KubeRay appends to the Ray container of a head (``head``) or worker pod of
    ``group``; ``start`` describes the ``ray start`` command it generates. ``cluster`` is a
    long-lived RayCluster's name (None: a RayJob's own cluster, named when it starts);
    ``head_service`` the head Service's own name, which the workers then reach the head by
    (utils/util.go GenerateFQDNServiceName, GenerateHeadServiceName). Values known only on
    the cluster are described in angle brackets."""
    crd = "RayJob" if cluster is None else "RayCluster"
    if cluster is None:
        cluster = "<the RayCluster: the RayJob's name and 5 random characters>"
    env: dict[str, str] = {}
    if not head:
        service = head_service or "<cluster>-head-svc"
        fqdn = f"{service}.<namespace>.svc.cluster.local"
        env |= {"FQ_RAY_IP": fqdn, "RAY_IP": service}
    env |= {
        "RAY_CLUSTER_NAME": cluster,
        "RAY_CLUSTER_NAMESPACE": "<the namespace>",
        "RAY_CLOUD_INSTANCE_ID": "<the pod's name>",
        "RAY_NODE_TYPE_NAME": group,
        "KUBERAY_GEN_RAY_START_CMD": start,
        "RAY_PORT": str(RAY_GCS_PORT),
        "RAY_ADDRESS": f"{'127.0.0.1' if head else env['FQ_RAY_IP']}:{RAY_GCS_PORT}",
        "RAY_USAGE_STATS_KUBERAY_IN_USE": "1",
    }
    if head:
        # common/pod.go: the creator's CRD type, RayCluster for one made directly
        # (utils/util.go GetCRDType).
        env["RAY_USAGE_STATS_EXTRA_TAGS"] = f"kuberay_version=v1.7.0;kuberay_crd={crd}"
    env["RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"] = "1"
    return env
