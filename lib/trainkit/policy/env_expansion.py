"""Every ``$(VAR)`` a definition writes names a variable its container has where it is used.

The kubelet expands ``$(VAR)`` in env values, command and args, and leaves a reference to a
variable the container does not define as written (``kube.expansion``): a job whose args say
``--rank=$(NODE_RANK)`` on a kind that sets no NODE_RANK starts with the literal text, and
fails later or, worse, runs with it. So each reference in the definition's command, args and
env values (the job's, its roles' and its init containers') is checked against the container
that runs it in the effective pods, where the operator's variables are (they are appended
after the job's, so an env value cannot use them; command and args can). ``$$(VAR)`` is the
escape for a literal ``$(VAR)``, such as a shell's command substitution.

A reference that does not come from the definition (trainkit's own scripts, a runtime's
command) is not the definition's to fix and is not reported here. A RayJob's command and args
are its entrypoint, no container's: a ``$(VAR)`` there is refused by the model
(``RayJob._no_kubelet_references``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..effective import EffectiveJob, EnvVar, PodSet
from ..errors import Problem
from ..kube.expansion import references
from ..resolve import problem

__all__ = ["check_env_expansion", "written_strings"]

# Fields whose text the kubelet expands, and RayJob's runtime_env, whose env Ray (not the
# kubelet) sets in its workers.
_EXPANDED = ("command", "args", "launcher_args")
_NOT_CONTAINERS = ("runtime_env",)


def written_strings(obj: BaseModel, prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """``(field, kind, text)`` of every command, args and env value ``obj`` writes, nested
    models included; ``kind`` is ``env`` for an env value, else ``command``."""
    for name in type(obj).model_fields:
        if name in _NOT_CONTAINERS:
            continue
        value = getattr(obj, name)
        field = f"{prefix}{name}"
        if name in _EXPANDED and isinstance(value, list):
            for text in value:
                if isinstance(text, str):
                    yield field, "command", text
        elif name == "env" and isinstance(value, Mapping):
            for key, text in value.items():
                if isinstance(text, str):
                    yield f"{field}.{key}", "env", text
        elif isinstance(value, BaseModel):
            yield from written_strings(value, f"{field}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from written_strings(item, f"{field}[{i}].")


def _env_of(container: Mapping[str, Any], source: str) -> list[EnvVar]:
    return [EnvVar.of(e, source) for e in container.get("env") or [] if isinstance(e, dict)]


def _containers(
    ps: PodSet, job: BaseModel, env_from_keys: Sequence[str]
) -> Iterator[tuple[Mapping[str, Any], list[EnvVar], set[str], str]]:
    """``(container, env in order, envFrom names, field prefix)`` of each container of the
    pod set whose text a definition writes: the training container (with every variable the
    controller injects; the definition's fields outside ``init_containers``) and the job's
    init containers (their own fields)."""
    main = ps.main
    yield main, list(ps.env), set(env_from_keys) if main.get("envFrom") else set(), ""
    own = [getattr(ic, "name", None) for ic in getattr(job, "init_containers", [])]
    for c in ps.spec.get("initContainers") or []:
        if c.get("name") in own:
            prefix = f"init_containers[{own.index(c.get('name'))}]."
            yield c, _env_of(c, "job"), set(), prefix


def _scoped(field: str, prefix: str) -> bool:
    if prefix:
        return field.startswith(prefix)
    return not field.startswith("init_containers[")


def check_env_expansion(jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    for ej in jobs:
        pj = ej.planned
        written: dict[str, list[tuple[str, str]]] = {}
        for field, kind, text in written_strings(pj.job):
            for ref in references(text):
                written.setdefault(f"$({ref.name})", []).append((field, kind))
        if not written:
            continue
        found: dict[tuple[str, str], str] = {}
        for ps in ej.pod_sets:
            for container, env, env_from, prefix in _containers(ps, pj.job, pj.env_from_keys):
                scoped = {
                    token: [(f, k) for f, k in fields if _scoped(f, prefix)]
                    for token, fields in written.items()
                }
                where = f"container {container.get('name')!r} of the {ps.role} pods"
                _check_container(container, env, env_from, where, prefix, scoped, found)
        for (field, _), message in sorted(found.items()):
            problems.append(problem(pj.definition, message, field))


def _check_container(
    container: Mapping[str, Any],
    env: Sequence[EnvVar],
    env_from: set[str],
    where: str,
    prefix: str,
    written: Mapping[str, list[tuple[str, str]]],
    found: dict[tuple[str, str], str],
) -> None:
    """Record in ``found`` (by field and reference, first container wins) each reference of
    the definition's text that the kubelet would leave as written in ``container``."""
    defined = env_from | {e.name for e in env}
    texts = [
        t for key in ("command", "args") for t in container.get(key) or [] if isinstance(t, str)
    ]
    for text in texts:
        for ref in references(text):
            token = f"$({ref.name})"
            if ref.name in defined:
                continue
            for field, kind in written.get(token, ()):
                if kind == "command":
                    found.setdefault((field, token), _undefined(token, ref.name, where))
    before = set(env_from)
    for i, var in enumerate(env):
        if var.value_from is None:
            for ref in references(var.value):
                token = f"$({ref.name})"
                if ref.name in before:
                    continue
                later = next((e for e in env[i + 1 :] if e.name == ref.name), None)
                for field, kind in written.get(token, ()):
                    if kind == "env" and field == f"{prefix}env.{var.name}":
                        message = (
                            _after(token, ref.name, var.name, later, where)
                            if later is not None
                            else _undefined(token, ref.name, where)
                        )
                        found.setdefault((field, token), message)
        before.add(var.name)


def _undefined(token: str, name: str, where: str) -> str:
    return (
        f"{token} names no variable of {where}: the kubelet expands only variables the "
        f"container has and leaves {token} as written; set {name} in env (or env_refs, "
        f"env_from), or write $$({name}) for the literal text (a shell's command substitution)"
    )


def _after(token: str, name: str, var: str, later: EnvVar, where: str) -> str:
    if later.value_from is not None:
        fix = f"use {token} in command or args, which see every variable"
        setter = f"env_refs, which come after every env value: {later.ref}"
    else:
        fix = f"put {name} before {var} in env, or use {token} in command or args"
        setter = "the job" if later.source == "job" else later.source
    return (
        f"{token} in {var}'s value: {name} comes after {var} in the env of {where} (set by "
        f"{setter}), and the kubelet expands an env value only with the variables before it, "
        f"leaving {token} as written; {fix}"
    )
