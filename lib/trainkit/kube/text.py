"""Control characters in free text: what the API server, the runtime and YAML accept.

Names, label keys and values, annotation keys and env names admit no control
character at all (their grammars in ``names`` are plain ASCII classes).
Free-text values are another matter:

- Env values: the API server does not look inside them (``ValidateEnv`` in
  pkg/apis/core/validation/validation.go checks names and sources only), but
  a NUL cannot cross ``execve`` — runc refuses the container at start
  ("environment variable ... contains a NUL byte", libcontainer/init_linux.go),
  long after the object was accepted. Tab, newline and CR are fine.
- ConfigMap ``data``: ``ValidateConfigMap`` checks keys and the 1 MiB total
  only, so the API server stores a NUL. trainkit still refuses it: ``data``
  is the text channel (``binaryData`` exists for bytes), and the scripts
  trainkit mounts from ConfigMaps are read by interpreters that refuse NUL
  (Python: "source code cannot contain null bytes").
- YAML itself carries other C0 controls and DEL only as escapes; they are
  allowed where NUL is not (a terminal escape in a log format is legitimate).
- A lone UTF-16 surrogate (a Python ``str`` can hold one) has no UTF-8 form:
  JSON cannot carry it to the API server, and libyaml refuses its escape.
"""

from __future__ import annotations

import re

__all__ = ["YAML_UNPRINTABLE", "text_value_problem"]

# Characters YAML cannot carry unescaped (tab, newline and CR are printable for YAML).
YAML_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# kustomize (kyaml, what Argo CD builds the tree with) refuses to write DEL, the C1
# controls and the noncharacters, and writes NEL, LS and PS raw, which YAML readers
# then take for line breaks: a value holding one does not reach the cluster as written.
_KUSTOMIZE_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029\ufffe\uffff]")


def text_value_problem(value: str) -> str | None:
    """Why a free-text value (env value, ConfigMap data) cannot hold what it holds, if so."""
    at = value.find("\x00")
    if at >= 0:
        return f"contains a NUL character (at offset {at}); remove it"
    surrogate = _SURROGATE.search(value)
    if surrogate is not None:
        return (
            f"contains a lone surrogate {surrogate[0]!r} (at offset {surrogate.start()}), "
            "which has no UTF-8 form; remove it"
        )
    unsafe = _KUSTOMIZE_UNSAFE.search(value)
    if unsafe is not None:
        return (
            f"contains {unsafe[0]!r} (at offset {unsafe.start()}), which kustomize cannot "
            "write back unchanged (Argo CD builds the tree with it); remove it"
        )
    return None
