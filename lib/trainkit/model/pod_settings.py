"""Pod settings that change no one's power but the job's own: its working directory, how long it
may take to stop, and extra ``/etc/hosts`` entries.

``host_aliases`` writes only the pod's own ``/etc/hosts`` (the kubelet's managed file): it
lets the job reach, by a name, an address it can reach by number anyway, so it needs no grant.
The grace period is the exception that widens: a pod that is preempted or deleted keeps its
GPUs until it has stopped, so ``Policy.max_termination_grace_period`` caps it (checked on the
effective pods, a platform patch's included).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from ..kube.names import is_dns1123_subdomain

__all__ = ["DEFAULT_GRACE", "HostName", "IPAddress", "check_host_aliases"]

DEFAULT_GRACE = 30
"""Kubernetes' ``terminationGracePeriodSeconds`` when a pod says none
(k8s.io/api core/v1 DefaultTerminationGracePeriodSeconds)."""


def _ip(v: str) -> str:
    # validation.go ValidateHostAliases: IsValidIP, which refuses IPv4 with leading zeros
    # ("010.0.0.1", read as octal by some resolvers) as Python's ipaddress does.
    try:
        ipaddress.ip_address(v)
    except ValueError:
        raise ValueError(
            f"{v!r} is not an IP address; give an IPv4 (10.0.0.5) or IPv6 (fd00::5) address"
        ) from None
    return v


def _host_name(v: str) -> str:
    # ValidateHostAliases: each hostname is a DNS-1123 subdomain.
    if not is_dns1123_subdomain(v):
        raise ValueError(
            f"{v!r} is not a host name: use at most 253 lowercase letters, digits, '-' and '.', "
            "each dot-separated part starting and ending with a letter or digit"
        )
    return v


IPAddress = Annotated[str, AfterValidator(_ip), WithJsonSchema({"type": "string"})]
"""An IPv4 or IPv6 address."""
HostName = Annotated[
    str, AfterValidator(_host_name), WithJsonSchema({"type": "string", "maxLength": 253})
]
"""A host name for ``/etc/hosts`` (a DNS-1123 subdomain)."""


def check_host_aliases(aliases: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each address with at least one name, each name once (a second line for the same name
    would leave which address it resolves to to the resolver's reading order)."""
    seen: dict[str, str] = {}
    for ip, names in aliases.items():
        if not names:
            raise ValueError(f"host_aliases[{ip!r}] lists no host name; give at least one")
        for name in names:
            if name in seen:
                where = "twice" if seen[name] == ip else f"for {seen[name]} and {ip}"
                raise ValueError(
                    f"host name {name!r} is listed {where} in host_aliases; give each name "
                    "one address, once"
                )
            seen[name] = ip
    return aliases
