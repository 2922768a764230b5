"""Reading YAML the way kubectl does, and keeping enough to report line numbers.

kubectl converts YAML to JSON with go-yaml, which leaves ``2024-05-01`` a
string; PyYAML would make it a ``date`` and a string field would then look
mistyped. ``K8sLoader`` is PyYAML's C safe loader without the timestamp rule.

Each document's node tree is kept next to its data so that, only when a
document has problems, a JSON path can be mapped back to a line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from trainkit.validate.findings import JsonPath

__all__ = ["K8sLoader", "iter_documents", "line_of"]


class K8sLoader(yaml.CSafeLoader):
    """CSafeLoader that keeps timestamps as strings."""


K8sLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def iter_documents(text: str) -> Iterator[tuple[yaml.Node, Any]]:
    """``(node, data)`` for each document; raises ``yaml.YAMLError`` on bad syntax."""
    loader = K8sLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                yield node, loader.construct_document(node)
    finally:
        loader.dispose()


def line_of(node: yaml.Node, path: JsonPath) -> int:
    """1-based line of the deepest part of ``path`` present in the document ``node``."""
    line = node.start_mark.line
    for seg in path:
        if isinstance(node, yaml.MappingNode) and isinstance(seg, str):
            match = next((kv for kv in node.value if kv[0].value == seg), None)
            if match is None:
                break
            line = match[0].start_mark.line
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int):
            if seg >= len(node.value):
                break
            node = node.value[seg]
            line = node.start_mark.line
        else:
            break
    return line + 1
