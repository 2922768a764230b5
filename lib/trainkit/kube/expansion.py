"""How the kubelet expands ``$(VAR)`` in a container's env values, command and args.

Kubernetes' own rules (k8s.io/kubernetes third_party/forked/golang/expansion/expand.go
``Expand``, used by pkg/kubelet/kubelet_pods.go makeEnvironmentVariables for env values and
pkg/kubelet/container/helpers.go ExpandContainerCommandAndArgs for command and args):

- ``$(NAME)`` is replaced by the variable's value when the container defines ``NAME``, and
  left as written when it does not: no error, no warning, the program sees ``$(NAME)``.
- ``$$`` is one ``$``: ``$$(NAME)`` is the text ``$(NAME)``, never expanded.
- ``$(`` without a closing ``)`` and a ``$`` before any other character stay as written.
- An env value sees only the variables before it (``envFrom`` first, then ``env`` in order);
  command and args see the container's whole env.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Reference", "references"]


@dataclass(frozen=True)
class Reference:
    """One ``$(name)`` the kubelet would try to expand, at ``start`` in the text."""

    name: str
    start: int


def references(text: str) -> list[Reference]:
    """Every ``$(name)`` of ``text`` the kubelet looks up, in order (``$$`` escapes skipped)."""
    out: list[Reference] = []
    cursor = 0
    while cursor < len(text) - 1:
        if text[cursor] != "$":
            cursor += 1
            continue
        following = text[cursor + 1]
        if following == "(":
            close = text.find(")", cursor + 2)
            if close == -1:  # an incomplete reference: "$(" stays, the scan goes on after it
                cursor += 2
                continue
            out.append(Reference(text[cursor + 2 : close], cursor))
            cursor = close + 1
        else:  # "$$" is an escaped "$"; "$x" is no reference: both consume two characters
            cursor += 2
    return out
