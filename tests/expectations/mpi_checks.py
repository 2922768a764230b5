"""Checks of what an MPI controller writes besides the pods' env and counts: the hostfile, the
Service that gives the hosts their names, the pods' labels and DNS settings. Each check
compares itself with the effective job (``differences``) and names its category, so
``tests/test_expectations.py`` runs it as it runs the others."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Hostfile", "Labels", "PodDNS", "Service"]


def _pod_set(ej: Any, role: str) -> Any:
    for ps in ej.pod_sets:
        if ps.role == role:
            return ps
    raise AssertionError(f"no role {role!r}; roles: {[ps.role for ps in ej.pod_sets]}")


@dataclass(frozen=True)
class Hostfile:
    """The hostfile the controller writes for the launcher (exactly, line by line)."""

    text: str
    category = "counts"

    def differences(self, ej: Any) -> Iterator[str]:
        if ej.hostfile != self.text:
            yield f"hostfile {ej.hostfile!r}, upstream {self.text!r}"


@dataclass(frozen=True)
class Service:
    """A Service the controller creates for the job: its name, whether it is headless, its
    selector (exactly), whether it publishes pods that are not ready, and its ports."""

    name: str
    selector: Mapping[str, str]
    publish_not_ready: bool = False
    headless: bool = True
    ports: tuple[int, ...] = ()
    category = "env"

    def differences(self, ej: Any) -> Iterator[str]:
        found = [s for s in ej.services if s.name == self.name]
        if not found:
            yield f"no Service {self.name!r}: {[s.name for s in ej.services]}"
            return
        (s,) = found
        got = (s.headless, dict(s.selector), s.publish_not_ready, tuple(s.ports))
        want = (self.headless, dict(self.selector), self.publish_not_ready, self.ports)
        if got != want:
            yield (
                f"Service {self.name} (headless, selector, publishNotReadyAddresses, ports) "
                f"{got}, upstream {want}"
            )


@dataclass(frozen=True)
class Labels:
    """Labels the pods of ``role`` carry (the ones named; None: absent)."""

    role: str
    labels: Mapping[str, str | None]
    category = "admission"

    def differences(self, ej: Any) -> Iterator[str]:
        got = dict(_pod_set(ej, self.role).labels)
        for key, want in self.labels.items():
            if got.get(key) != want:
                yield f"{self.role} label {key}={got.get(key)!r}, upstream {want!r}"


@dataclass(frozen=True)
class PodDNS:
    """The DNS settings of ``role``'s pods: subdomain, dnsPolicy (None: the default) and the
    search domains the controller adds."""

    role: str
    subdomain: str
    dns_policy: str | None = None
    searches: tuple[str, ...] = ()
    category = "env"

    def differences(self, ej: Any) -> Iterator[str]:
        spec: dict[str, Any] = _pod_set(ej, self.role).spec
        got = (
            spec.get("subdomain"),
            spec.get("dnsPolicy"),
            tuple((spec.get("dnsConfig") or {}).get("searches") or ()),
        )
        want = (self.subdomain, self.dns_policy, self.searches)
        if got != want:
            yield f"{self.role} (subdomain, dnsPolicy, searches) {got}, upstream {want}"
