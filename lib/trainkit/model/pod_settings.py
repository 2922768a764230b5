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

from pydantic import AfterValidator, Field, WithJsonSchema

from ..injected_env.operator_ports import operator_ports
from ..kube.names import is_dns1123_subdomain

__all__ = [
    "DEFAULT_GRACE",
    "HostName",
    "IPAddress",
    "PortName",
    "PortNumber",
    "check_host_aliases",
    "check_ports",
]

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


def _port_name(v: str) -> str:
    # k8s.io/apimachinery pkg/util/validation/validation.go IsValidPortName (IANA_SVC_NAME).
    rules = (
        (1 <= len(v) <= 15, "at most 15 characters"),
        (all(c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in v),
         "only lowercase letters, digits and '-'"),
        (any("a" <= c <= "z" for c in v), "at least one letter"),
        ("--" not in v and not v.startswith("-") and not v.endswith("-"),
         "no '-' at either end or twice in a row"),
    )  # fmt: skip
    broken = [why for ok, why in rules if not ok]
    if broken:
        raise ValueError(
            f"{v!r} is not a port name (IANA_SVC_NAME): {'; '.join(broken)}, e.g. 'metrics'"
        )
    return v


PortName = Annotated[
    str, AfterValidator(_port_name), WithJsonSchema({"type": "string", "maxLength": 15})
]
"""A container port's name: at most 15 lowercase letters, digits and '-', with a letter."""
PortNumber = Annotated[int, Field(ge=1, le=65535)]
"""A TCP port number."""


def check_ports(ports: dict[str, int], kind: str) -> dict[str, int]:
    """Each number once, and none of the numbers or names ``kind``'s operator uses."""
    seen: dict[int, str] = {}
    for name, port in ports.items():
        if port in seen:
            raise ValueError(
                f"ports {seen[port]!r} and {name!r} are both {port}; give each port one name"
            )
        seen[port] = name
    used = operator_ports(kind)
    for name, port in ports.items():
        who = used.number_reason(port)
        if who is not None:
            raise ValueError(
                f"port {name!r} is {port}, which {who} uses in a {kind}'s pods: the program "
                "could not listen there; choose another number"
            )
        who = used.name_reason(name)
        if who is not None:
            raise ValueError(
                f"port name {name!r} is the one {who} has in a {kind}'s pods; choose another name"
            )
    return ports


def check_operator_port(
    field: str, number: int | None, ports: dict[str, int], listener: str
) -> None:
    """The operator reads its ``listener``'s port from a container port it names (``field``
    sets the number; None keeps the operator's default, which ``check_ports`` guards): a
    port of the job's own with that number would fight over it."""
    if number is None:
        return
    taken = next((name for name, port in ports.items() if port == number), None)
    if taken is not None:
        raise ValueError(
            f"{field} is {number}, which ports also gives {taken!r}: the {listener} and the "
            "program would both listen there; choose another number for one of them"
        )
