"""RFC 8785 JSON Canonicalization Scheme (JCS), exactly as the daemon computes it.

``canonical_json(value)`` serializes parsed JSON (``json.loads`` output, or the same kinds of
Python values) the way ECMAScript does, which is what JCS specifies:

- numbers are IEEE 754 doubles (an ``int`` is converted, so ``9007199254740993`` becomes
  ``9007199254740992``), written as ECMAScript's ``Number.prototype.toString`` writes them: the
  shortest digits that round-trip, plain notation from 1e-6 up to 1e21, exponent form outside
  (``1e+21``, ``1e-7``), ``-0`` as ``0``; NaN and infinities have no canonical form;
- strings escape only ``"``, ``\\`` and U+0000..U+001F (``\\b \\t \\n \\f \\r`` where they exist,
  else ``\\u00xx`` in lowercase); everything else is written as is, in UTF-8; a lone surrogate has
  no UTF-8 form and no canonical form;
- object members are sorted by the UTF-16 code units of their names.

:class:`CanonicalJsonError` (a ``ValueError``) names the JSON pointer of the first value that
has no canonical form.
"""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any, List

__all__ = ["CanonicalJsonError", "canonical_json", "canonical_json_bytes", "json_digest", "format_number"]


class CanonicalJsonError(ValueError):
    """A value that has no RFC 8785 canonical form."""


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: "re.Match[str]") -> str:
    c = match.group(0)
    return _SHORT_ESCAPES.get(c) or "\\u%04x" % ord(c)


def _string(s: str, pointer: str) -> str:
    # A Python str holds code points: a surrogate in it is always a lone one (a pair decoded by
    # json.loads is one astral code point).
    if _SURROGATE.search(s):
        raise CanonicalJsonError("lone surrogate in the string at '%s'" % pointer)
    return '"' + _NEEDS_ESCAPE.sub(_escape, s) + '"'


def format_number(value: float) -> str:
    """ECMAScript ``Number::toString`` of a finite double (RFC 8785 §3.2.2.3)."""
    if value != value or value in (math.inf, -math.inf):
        raise CanonicalJsonError("non-finite number")
    if value == 0:
        return "0"  # and -0
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip (nearest on ties), as ECMAScript requires
    digits_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()[1:]
    digits = "".join(str(d) for d in digits_tuple)
    k = len(digits)
    n = k + exponent  # the decimal point sits after n digits
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def _utf16_key(name: str) -> bytes:
    return name.encode("utf-16-be")


def _serialize(value: Any, pointer: str, out: List[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        try:
            number = float(value)
        except OverflowError:
            raise CanonicalJsonError("number at '%s' is not an IEEE 754 double" % pointer) from None
        out.append(format_number(number))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJsonError("non-finite number at '%s'" % pointer)
        out.append(format_number(value))
    elif isinstance(value, str):
        out.append(_string(value, pointer))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _serialize(item, "%s/%d" % (pointer, i), out)
        out.append("]")
    elif isinstance(value, dict):
        names = list(value.keys())
        for name in names:
            if not isinstance(name, str):
                raise CanonicalJsonError("member name %r at '%s' is not a string" % (name, pointer))
            if _SURROGATE.search(name):
                raise CanonicalJsonError("lone surrogate in a member name at '%s'" % pointer)
        out.append("{")
        for i, name in enumerate(sorted(names, key=_utf16_key)):
            if i:
                out.append(",")
            at = "%s/%s" % (pointer, name.replace("~", "~0").replace("/", "~1"))
            out.append(_string(name, at))
            out.append(":")
            _serialize(value[name], at, out)
        out.append("}")
    else:
        raise CanonicalJsonError("%s at '%s' is not JSON" % (type(value).__name__, pointer))


def canonical_json(value: Any) -> str:
    """The RFC 8785 canonical JSON text of ``value``."""
    out: List[str] = []
    _serialize(value, "", out)
    return "".join(out)


def canonical_json_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value`` in UTF-8: the bytes that are hashed or signed."""
    return canonical_json(value).encode("utf-8")


def json_digest(value: Any) -> str:
    """SHA-256 hex of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json_bytes(value)).hexdigest()
