"""Argo CD resource health checks for the kinds trainkit generates.

Argo CD ships no health assessment for ``kubeflow.org``, ``trainer.kubeflow.org`` or
``scheduling.volcano.sh`` objects, so trainkit carries its own Lua scripts as package data,
one file per kind, named ``<group>_<Kind>.lua``. Argo CD reads them from the ``argocd-cm``
ConfigMap under ``resource.customizations.health.<group>_<Kind>``; see
:func:`trainkit.render.argocd.render_health_patch`.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["HEALTH_KEY_PREFIX", "health_checks"]

HEALTH_KEY_PREFIX = "resource.customizations.health."

_SUFFIX = ".lua"

# Kinds whose operators report the same conditions share one script (one source per rule);
# Argo CD still needs a key per kind.
_SHARED = {
    "kubeflow.org_MPIJob": "kubeflow.org_PyTorchJob",
    "kubeflow.org_TFJob": "kubeflow.org_PyTorchJob",
    "kubeflow.org_PaddleJob": "kubeflow.org_PyTorchJob",
    "kubeflow.org_XGBoostJob": "kubeflow.org_PyTorchJob",
    "kubeflow.org_JAXJob": "kubeflow.org_PyTorchJob",
    "kueue.x-k8s.io_LocalQueue": "kueue.x-k8s.io_ClusterQueue",
}


def health_checks() -> dict[str, str]:
    """Return ``{argocd-cm key: Lua source}`` for every bundled health check, sorted by key."""
    checks: dict[str, str] = {}
    for entry in resources.files(__name__).iterdir():
        if not entry.is_file() or not entry.name.endswith(_SUFFIX):
            continue
        group_kind = entry.name.removesuffix(_SUFFIX)
        # Argo CD splits the key suffix on "_" and accepts exactly "<group>_<Kind>" (or a bare
        # Kind); a second underscore would make it reject the whole argocd-cm.
        group, sep, kind = group_kind.partition("_")
        if not (sep and group and kind) or "_" in kind:
            raise RuntimeError(
                f"bundled health check {entry.name!r} is not named <group>_<Kind>.lua"
            )
        checks[HEALTH_KEY_PREFIX + group_kind] = entry.read_text(encoding="utf-8")
    for group_kind, source in _SHARED.items():
        checks[HEALTH_KEY_PREFIX + group_kind] = checks[HEALTH_KEY_PREFIX + source]
    return dict(sorted(checks.items()))
