"""Size limits the API server and etcd enforce on whole objects.

- A ConfigMap's ``data`` plus ``binaryData`` may total at most 1 MiB
  (1,048,576 bytes): ``ValidateConfigMap`` in
  kubernetes/pkg/apis/core/validation/validation.go sums ``len(value)`` of
  every ``data`` value (UTF-8 bytes) and every *decoded* ``binaryData``
  value and compares it with ``core.MaxSecretSize``; keys are
  ``IsConfigMapKey`` and may not appear in both maps.
- Any object: etcd refuses a request over ``--max-request-bytes``, whose
  default is 1.5 MiB (``DefaultMaxRequestBytes`` in etcd's
  server/embed/config.go); the API server then answers "etcdserver: request
  is too large". Custom resources are stored as JSON, so the compact JSON
  form is what counts (built-in kinds are stored as protobuf, a little
  smaller: for them the number is a close upper bound).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from trainkit.kube.names import configmap_key_problem
from trainkit.kube.text import text_value_problem
from trainkit.validate.findings import Finding

__all__ = ["CONFIGMAP_MAX_BYTES", "OBJECT_MAX_BYTES", "check_limits"]

CONFIGMAP_MAX_BYTES = 1024 * 1024
OBJECT_MAX_BYTES = 3 * 1024 * 1024 // 2
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def check_limits(doc: dict[str, Any], out: list[Finding]) -> None:
    """The size of one object, and a ConfigMap's keys and data."""
    rest = doc
    size = 0
    if doc.get("kind") == "ConfigMap" and doc.get("apiVersion") == "v1":
        _check_configmap(doc, out)
        # Large values live in data: size them without a JSON copy of each.
        big = ("data", "binaryData")
        rest = {k: v for k, v in doc.items() if k not in big}
        size = sum(_json_len(k) + 1 + _json_len(doc[k]) + 1 for k in big if k in doc)
    size += _utf8_len(json.dumps(rest, separators=(",", ":"), ensure_ascii=False, default=str))
    if size > OBJECT_MAX_BYTES:
        out.append(
            Finding(
                (),
                f"the object is {size:,} bytes as JSON; etcd stores at most 1,572,864 "
                "(1.5 MiB, its default --max-request-bytes) per object: split it, or move "
                "large data into the image or a volume",
            )
        )


def _json_len(value: Any) -> int:
    """Length of ``value`` as compact JSON, copying no plain string (the common case)."""
    if isinstance(value, str) and value.isascii() and _NEEDS_ESCAPE.search(value) is None:
        return len(value) + 2
    if isinstance(value, dict):
        return (
            2
            + sum(_json_len(str(k)) + 1 + _json_len(v) for k, v in value.items())
            + max(len(value) - 1, 0)
        )
    return _utf8_len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


def _utf8_len(text: str) -> int:
    # No copy for ASCII, which most manifests are: memory stays a small multiple of the input.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _check_configmap(doc: dict[str, Any], out: list[Finding]) -> None:
    raw_data, raw_binary = doc.get("data"), doc.get("binaryData")
    data: dict[Any, Any] = raw_data if isinstance(raw_data, dict) else {}
    binary: dict[Any, Any] = raw_binary if isinstance(raw_binary, dict) else {}
    total = 0
    for part, entries in (("data", data), ("binaryData", binary)):
        for key, value in entries.items():
            where = (part, str(key))
            why = configmap_key_problem(key) if isinstance(key, str) else "must be a string"
            if why is not None:
                out.append(Finding(where, f"invalid ConfigMap key {key!r}: it {why}"))
            if part == "binaryData" and key in data:
                out.append(Finding(where, f"key {key!r} is in data too; use one of the two"))
            if not isinstance(value, str):
                continue  # wrong types are for the schema of the kind; nothing to count
            if part == "data":
                total += _utf8_len(value)
                if (why := text_value_problem(value)) is not None:
                    out.append(Finding(where, f"{why}; binary content belongs in binaryData"))
            else:
                try:
                    # Go's base64.StdEncoding (encoding/json's []byte) skips CR and LF.
                    clean = value.replace("\n", "").replace("\r", "")
                    total += len(base64.b64decode(clean, validate=True))
                except (binascii.Error, ValueError):
                    out.append(Finding(where, "binaryData values must be base64"))
    if total > CONFIGMAP_MAX_BYTES:
        out.append(
            Finding(
                (),
                f"ConfigMap data and binaryData hold {total:,} bytes; the API server accepts "
                "at most 1,048,576 (1 MiB): split the ConfigMap, or put large files in the image",
            )
        )
