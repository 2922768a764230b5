"""What a job or team runtime may run as and read: service accounts, pull secrets, priority
classes, and the Secret and ConfigMap keys its variables come from.

Each is a name the platform grants per team (``Team.service_accounts``,
``image_pull_secrets``, ``priority_classes``, ``secrets``, ``config_maps``): a ServiceAccount
carries RBAC, a Secret carries credentials and a PriorityClass can preempt other teams' pods,
so a definition may name only what its Team lists.
"""

from __future__ import annotations

from ..errors import Problem
from ..load import Definition
from ..model import ConfigMapKey, SecretKey, Team
from .index import Declared
from .problems import known, problem

__all__ = ["check_access"]

_GRANTS = (
    # (definition field, Team field, what it is)
    ("service_account", "service_accounts", "ServiceAccount"),
    ("image_pull_secrets", "image_pull_secrets", "pull Secret"),
    ("priority_class", "priority_classes", "PriorityClass"),
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
    return problems
