"""What a job or team runtime may run as and read: service accounts, pull secrets, priority
classes, and the Secret and ConfigMap keys its variables come from.

Each is a name the platform grants per team (``Team.service_accounts``,
``image_pull_secrets``, ``priority_classes``, ``secrets``, ``config_maps``): a ServiceAccount
carries RBAC, a Secret carries credentials and a PriorityClass can preempt other teams' pods,
so a definition may name only what its Team lists.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ..errors import Problem
from ..load import Definition
from ..model import ConfigMapKey, SecretEnv, SecretKey, Team
from ..model.env import EnvSource, source_key_refused
from ..model.pod_metadata import steering_domain
from ..model.security import RUNTIME_DEFAULT
from ..model.volumes import ConfigMapVolume, HostPath, SecretVolume, volume_fields
from .index import Declared
from .problems import known, problem

__all__ = ["check_access", "check_env_from", "granted_keys"]

_GRANTS = (
    # (definition field, Team field, what it is)
    ("service_account", "service_accounts", "ServiceAccount"),
    ("image_pull_secrets", "image_pull_secrets", "pull Secret"),
    ("priority_class", "priority_classes", "PriorityClass"),
    ("workload_priority", "workload_priority_classes", "WorkloadPriorityClass"),
)


def check_access(d: Definition, team: Declared[Team]) -> list[Problem]:
    """A problem per name ``d`` uses that ``team`` does not list."""
    problems = []
    for field, grant, what in _GRANTS:
        value = getattr(d.obj, field, None)
        names = value if isinstance(value, list) else [value] if value is not None else []
        allowed: list[str] = getattr(team.obj, grant)
        for i, name in enumerate(names):
            # What a pod runs as without the field is never a grant to refuse.
            if name in allowed or (field == "service_account" and name == "default"):
                continue
            where = f"{field}[{i}]" if isinstance(value, list) else field
            problems.append(
                problem(
                    d,
                    f"team {team.obj.name!r} may not use {what} {name!r}; Team.{grant} in "
                    f"{team.file} allows {known(allowed)}; ask the platform team to add it",
                    where,
                )
            )
    refs = getattr(d.obj, "env_refs", {})
    for var in sorted(refs):
        ref = refs[var]
        if isinstance(ref, SecretKey):
            grant, source, granted = "secrets", ref.secret, team.obj.secrets
        elif isinstance(ref, ConfigMapKey):
            grant, source, granted = "config_maps", ref.config_map, team.obj.config_maps
        else:
            continue
        if ref.key in granted.get(source, []):
            continue
        # Granted per key, not per object: a Secret may hold credentials of other systems
        # besides the one the team was given.
        keys = granted.get(source)
        allows = (
            f"allows keys {known(keys)} of it" if keys is not None else f"allows {known(granted)}"
        )
        problems.append(
            problem(
                d,
                f"team {team.obj.name!r} may not read {ref.describe_ref()}; Team.{grant} in "
                f"{team.file} {allows}; ask the platform team to add it",
                f"env_refs.{var}",
            )
        )
    kind = type(d.obj).__name__
    own = {*getattr(d.obj, "env", {}), *refs}
    sources = getattr(d.obj, "env_from", [])
    problems.extend(check_env_from(d, team, sources, own, kind, lambda i: f"env_from[{i}]"))
    problems.extend(_pod_metadata(d, team))
    problems.extend(_profiles(d, team))
    problems.extend(_volume_keys(d, team))
    problems.extend(_working_dir(d, team))
    return problems


def _working_dir(d: Definition, team: Declared[Team]) -> list[Problem]:
    """A RayJob's archive ``working_dir`` must be under a prefix ``Team.working_dir_sources``
    lists: Ray downloads and runs it on every node (model/working_dir.py), code this
    repository's review never saw."""
    env = getattr(d.obj, "runtime_env", None)
    uri = getattr(env, "working_dir", None)
    if uri is None or env is None or env.local_dir is not None:
        return []
    granted = team.obj.working_dir_sources
    if any(uri.startswith(prefix) for prefix in granted):
        return []
    return [
        problem(
            d,
            f"team {team.obj.name!r} may not run code from {uri!r}; Team.working_dir_sources "
            f"in {team.file} allows {known(granted)}: ship the directory from the repository "
            "(working_dir='scripts/<dir>', relative to the definition file), or ask the "
            "platform team to add the archive's prefix to Team.working_dir_sources",
            "runtime_env.working_dir",
        )
    ]


def _volume_keys(d: Definition, team: Declared[Team]) -> list[Problem]:
    """A problem per Secret or ConfigMap volume whose keys ``team`` does not grant: the keys
    of ``items``, or with none the whole object, which the grant must list with every key
    it holds (as for ``env_from``): a Secret may hold other systems' credentials."""
    problems = []
    for field, v in volume_fields(d.obj):
        if isinstance(v, HostPath):
            granted_dirs = team.obj.host_paths
            if not any(v.below(g) for g in granted_dirs):
                problems.append(
                    problem(
                        d,
                        f"team {team.obj.name!r} may not mount the node's {v.host_path}; "
                        f"Team.host_paths in {team.file} allows {known(granted_dirs)}; use "
                        "a claim or an EmptyDir, or ask the platform team",
                        field,
                    )
                )
            continue
        if isinstance(v, SecretVolume):
            grant, kind, source, granted = "secrets", "Secret", v.secret, team.obj.secrets
        elif isinstance(v, ConfigMapVolume):
            grant, kind, source = "config_maps", "ConfigMap", v.config_map
            granted = team.obj.config_maps
        else:
            continue
        keys = granted.get(source)
        if keys is None:
            missing = f"{kind} {source!r}"
            allows = f"allows {known(granted)}"
        elif v.items and not (wanted := sorted(set(v.items) - set(keys))):
            continue
        elif v.items:
            missing = f"key {', '.join(repr(k) for k in wanted)} of {kind} {source!r}"
            allows = f"allows keys {known(keys)} of it"
        else:
            continue  # the grant lists every key of the object
        problems.append(
            problem(
                d,
                f"team {team.obj.name!r} may not mount {missing}; Team.{grant} in "
                f"{team.file} {allows}; list only granted keys in items, or ask the platform "
                "team",
                field,
            )
        )
    return problems


def _profiles(d: Definition, team: Declared[Team]) -> list[Problem]:
    """A problem per seccomp or AppArmor profile other than ``RuntimeDefault`` that ``team``
    does not grant: ``Unconfined`` lifts a confinement of the kernel, and a node's own
    profile may allow anything (or be missing, so the pod never starts)."""
    problems = []
    roles = getattr(d.obj, "roles", None)
    # A role's own contexts (Role(security_context=…)) are held to the same grants.
    owners = [("", d.obj), *((f"{f}.", r) for f, r in (roles() if callable(roles) else {}).items())]
    for prefix, owner in owners:
        problems.extend(_owner_profiles(d, team, owner, prefix))
    return problems


def _owner_profiles(
    d: Definition, team: Declared[Team], owner: object, prefix: str
) -> list[Problem]:
    problems = []
    for field in ("security_context", "container_security_context"):
        context = getattr(owner, field, None)
        if context is None:
            continue
        for kind, grant in (("seccomp", "seccomp_profiles"), ("app_armor", "app_armor_profiles")):
            profile = getattr(context, kind)
            granted: list[str] = getattr(team.obj, grant)
            if profile is None or profile == RUNTIME_DEFAULT or profile in granted:
                continue
            problems.append(
                problem(
                    d,
                    f"team {team.obj.name!r} may not use the {kind} profile {profile!r}; "
                    f"Team.{grant} in {team.file} allows {known(granted)} besides "
                    f"{RUNTIME_DEFAULT!r}; use {RUNTIME_DEFAULT!r}, or ask the platform team",
                    f"{prefix}{field}.{kind}",
                )
            )
    return problems


# The job object's own metadata is read by more than Argo CD and Kueue, so it takes the pods'
# rule: the Training Operator copies a job's annotations to the Volcano PodGroup it creates
# (training-operator v1.9.4 pkg/controller.v1/common/scheduling.go SyncPodGroup), mpi-operator
# reads its Volcano queue from an MPIJob annotation (mpi-operator v0.8.0 pkg/controller/
# podgroup.go newPodGroup), KubeRay copies a RayJob's labels and annotations to the RayCluster
# it creates (kuberay v1.7.0 ray-operator/controllers/ray/rayjob_controller.go
# constructRayClusterForRayJob) and reads ray.io/ annotations of a RayCluster (common/pod.go,
# raycluster_controller.go). Trainer v2.3.0 builds the JobSet's metadata from the runtime and
# its patches only, not the TrainJob's (pkg/runtime/core/trainingruntime.go newRuntimeInfo,
# plugins/jobset/jobset.go Build); paddle-operator v0.3.5 reads neither.
_METADATA_FIELDS = (
    "pod_labels",
    "pod_annotations",
    "jobset_labels",
    "jobset_annotations",
    "labels",
    "annotations",
)


def _pod_metadata(d: Definition, team: Declared[Team]) -> list[Problem]:
    """A problem per label or annotation key of the pods, a TrainJob's JobSet or the job object
    under a controller's prefix that ``team`` does not grant (``Team.pod_metadata_keys``):
    such a key changes how a controller treats the object (another Kueue queue, a Multus
    network, an Argo CD sync option)."""
    granted = team.obj.pod_metadata_keys
    problems = []
    for field in _METADATA_FIELDS:
        for key in sorted(getattr(d.obj, field, {})):
            domain = steering_domain(key)
            if (
                domain is None
                or key in granted
                or any(g.endswith("/") and key.startswith(g) for g in granted)
            ):
                continue
            problems.append(
                problem(
                    d,
                    f"{key!r} is under {domain}/, which a controller acts on; team "
                    f"{team.obj.name!r} may set it only where Team.pod_metadata_keys in "
                    f"{team.file} grants it (allows {known(granted)}); use a key of your "
                    "organisation's domain, or ask the platform team",
                    f"{field}.{key}",
                )
            )
    return problems


def _grant(source: EnvSource, team: Team) -> tuple[str, list[str] | None]:
    """The Team field that grants ``source`` and the keys it lists (None: not granted)."""
    if isinstance(source, SecretEnv):
        return "secrets", team.secrets.get(source.secret)
    return "config_maps", team.config_maps.get(source.config_map)


def granted_keys(sources: Sequence[EnvSource], team: Team) -> tuple[str, ...]:
    """The variables ``env_from`` sets: every key the team's grant lists for each source.
    An MPI launcher forwards them by name, since sshd gives a rank none of the pod's env."""
    keys = (k for s in sources for k in _grant(s, team)[1] or ())
    return tuple(dict.fromkeys(keys))


def check_env_from(
    d: Definition,
    team: Declared[Team],
    sources: Sequence[EnvSource],
    own: Collection[str],
    kind: str,
    where: Callable[[int], str],
    via: str = "",
) -> list[Problem]:
    """A whole Secret or ConfigMap becomes one variable per key, so the Team must list every
    key it holds, and none may be a variable the kind refuses (envFrom sets whatever the
    object holds: a key NVIDIA_VISIBLE_DEVICES would expose every GPU of the node). ``via``
    names the runtime whose sources a TrainJob's pods get."""
    problems = []
    for i, source in enumerate(sources):
        grant, keys = _grant(source, team.obj)
        if keys is None:
            granted = team.obj.secrets if grant == "secrets" else team.obj.config_maps
            problems.append(
                problem(
                    d,
                    f"{via}team {team.obj.name!r} may not read {source.describe_ref()}; "
                    f"Team.{grant} in {team.file} allows {known(granted)}; ask the platform "
                    "team to add it with every key it holds",
                    where(i),
                )
            )
            continue
        for key in keys:
            why = source_key_refused(key, kind)
            if why is not None:
                problems.append(
                    problem(
                        d,
                        f"{via}{source.describe_ref()} holds key {key!r} (Team.{grant} in "
                        f"{team.file}), which env_from would make a variable that may not be "
                        f"set: {why}; read the keys you need with env_refs instead",
                        where(i),
                    )
                )
            elif key in own:
                problems.append(
                    problem(
                        d,
                        f"{via}{key} is set by the job and by {source.describe_ref()} "
                        "(env_from); keep one of them",
                        where(i),
                    )
                )
    return problems
