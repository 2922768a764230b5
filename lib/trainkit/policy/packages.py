"""Where a RayJob's ``runtime_env.pip`` packages come from (``Policy.package_indexes`` and
``Policy.package_sources``).

Ray installs them with ``pip install -r <the entries>`` in the node's environment plus the
runtime env's ``env_vars`` (ray-project/ray, Ray 2.60.0,
``python/ray/_private/runtime_env/pip.py`` ``PipProcessor``). The model already refuses
entries that are pip options, bare URLs or paths (``model/pip_requirements.py``); here: a
direct reference (``name @ <url>``) must be under one of the platform's sources, and no
variable the job sets may steer pip to another index, proxy or CA (the platform's own, from a
network profile or a patch, may).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..effective import EffectiveJob
from ..errors import Problem
from ..load import PLATFORM_DIR
from ..model import RayJob
from ..model.pip_requirements import direct_reference, steers_pip, url_problem
from ..resolve import Index, problem

__all__ = ["check_packages"]


def check_packages(index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    rule_file = index.policy.file if index.policy else f"jobs/{PLATFORM_DIR}/"
    sources = list(index.rules.package_sources)
    for ej in jobs:
        pj = ej.planned
        job, d = pj.job, pj.definition
        if not isinstance(job, RayJob) or job.runtime_env is None or not job.runtime_env.pip:
            continue
        for i, entry in enumerate(job.runtime_env.pip):
            url = direct_reference(entry)
            why = url_problem(url, sources) if url is not None else None
            if why is not None:
                problems.append(
                    problem(
                        d,
                        f"runtime_env.pip[{i}] {entry!r}: the URL {why}; give the package by "
                        "name (from the platform's indexes), or ask the platform team to add "
                        f"its source to Policy.package_sources ({rule_file})",
                        "runtime_env",
                    )
                )
        named = [
            *((n, f"env.{n}", "env") for n in job.env),
            *((n, f"env_refs.{n}", "env_refs") for n in job.env_refs),
            *((n, "runtime_env", "runtime_env.env_vars") for n in job.runtime_env.env_vars),
            *((n, "env_from", "the env_from sources") for n in pj.env_from_keys),
        ]
        for name, field, where in named:
            if steers_pip(name):
                problems.append(
                    problem(
                        d,
                        f"{name} would change where pip installs runtime_env.pip from, or whom "
                        "it trusts (Ray runs pip with the pod's environment and "
                        "runtime_env.env_vars); packages come from the platform's indexes "
                        f"(Policy.package_indexes, {rule_file}): remove it from {where}",
                        field,
                    )
                )
