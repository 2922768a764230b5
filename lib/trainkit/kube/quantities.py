"""The resource quantity grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go).

``<number><suffix>``: a decimal number (``5``, ``5.``, ``.5``, ``0.5``) and a
binary-SI (``Ki`` … ``Ei``), decimal-SI (``n u m k M G T P E``) or exponent
(``e3``, ``E-2``) suffix. The sign is excluded: no resource amount trainkit
writes or checks may be negative. ``[0-9]``, never ``\\d``, which in Python
also matches other scripts' digits (``"٣Gi"``).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

__all__ = ["QUANTITY", "parse_quantity"]

# Plain groups only: the pattern also goes into JSON Schemas (ECMA-262 has no ``(?P<…>``).
QUANTITY = re.compile(r"\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_SUFFIX = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"), "Ki": Decimal(2**10), "Mi": Decimal(2**20),
    "Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}  # fmt: skip
# Far beyond any resource (an exabyte is 1e18) yet small enough that Decimal never overflows.
_MAX_EXPONENT = 1000


def parse_quantity(value: object) -> Decimal | None:
    """The amount ``value`` stands for, or None unless it is a finite non-negative quantity.

    Numbers (a YAML ``4`` or ``0.5``) are quantities too, as the API server reads them.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value) if value >= 0 else None
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str):
        return None
    m = QUANTITY.fullmatch(value)
    if m is None:
        return None
    number, suffix = m[1], m[2] or ""
    try:
        if suffix[:1] in ("e", "E"):
            exponent = int(suffix[1:])
            if abs(exponent) > _MAX_EXPONENT:
                return None
            return Decimal(number).scaleb(exponent)
        return Decimal(number) * _SUFFIX[suffix]
    except InvalidOperation:  # pragma: no cover - the grammar admits only finite numbers
        return None
