"""RUFID v1 — the normative algorithm of ``shared/spec/rufid-v1.md``, byte for byte.

The daemon (TypeScript, ``src/core/rufid.ts``) and the Go client implement the same algorithm;
all of them are checked against ``test/vectors/rufid-v1.json``.

Python strings are indexed by code point while JavaScript strings are indexed by UTF-16 code
unit. The lexer below only ever compares single characters against ASCII delimiters and skips
"the next character" after a backslash; an astral character (e.g. an emoji) is one code point
here and a surrogate pair there, but neither half of a pair is an ASCII delimiter, so both
implementations copy exactly the same text. The digest is taken over the UTF-8 bytes of the
canonical string; a string holding lone surrogates is encoded the way JavaScript encodes it
(adjacent surrogate halves form one character, any other lone half becomes U+FFFD).
"""

from __future__ import annotations

import hashlib
import re
from typing import List, NamedTuple, Optional, Union

from .errors import InvalidRufidError

__all__ = [
    "BASE62_ALPHABET",
    "SHORT_RUFID_RE",
    "FULL_RUFID_RE",
    "RufidComputation",
    "ParsedRufid",
    "language_family",
    "prepare_source",
    "normalize_source",
    "canonical_string",
    "base62",
    "compute_rufid",
    "rufid_short",
    "format_rufid",
    "parse_rufid",
    "validate_rufid",
    "is_short_rufid",
    "is_full_rufid",
    "is_rufid",
    "parse_version_label",
    "import_statement",
    "import_name",
]

BASE62_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# §8 syntax. Used with fullmatch (Python's `$` would also match before a trailing LF).
SHORT_RUFID_RE = re.compile(r"[A-Za-z0-9]{12}")
FULL_RUFID_RE = re.compile(r"rufid:([A-Za-z0-9]{12}):v([1-9][0-9]*):([A-Za-z0-9_.-]{1,64})")
VERSION_LABEL_RE = re.compile(r"v([1-9][0-9]*)")
TENANT_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")

# JavaScript's Number.MAX_SAFE_INTEGER: the daemon refuses larger version numbers.
_MAX_SAFE_INTEGER = 2**53 - 1

# §3 language families
_FAMILIES = {
    "python": "python", "python3": "python", "py": "python",
    "javascript": "js", "js": "js", "node": "js", "nodejs": "js", "typescript": "js", "ts": "js",
    "jsx": "js", "tsx": "js", "mjs": "js", "cjs": "js",
    "go": "go", "golang": "go",
}

# §2.3: ASCII whitespace trimmed from function_name and signature.
_ASCII_WS = " \t\n\r\f\v"
# §6: "whitespace" of normalization: space, tab, FF, VT.
_HWS = frozenset(" \t\f\v")
_PLAIN_TRAILING = " \t\f\v\n"
_PY_PREFIX = frozenset("rRbBuUfF")
_IDENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class RufidComputation(NamedTuple):
    """Result of :func:`compute_rufid`."""

    rufid_short: str
    content_digest: str  # SHA-256 hex of the canonical string
    normalized_code: str
    canonical: str


class ParsedRufid(NamedTuple):
    """A RUFID read by :func:`parse_rufid`; ``version``/``tenant_id`` only for the full form."""

    short: str
    version: Optional[int] = None
    tenant_id: Optional[str] = None

    @property
    def version_label(self) -> Optional[str]:
        return None if self.version is None else "v%d" % self.version


def language_family(language: str) -> str:
    """``python``, ``js``, ``go`` or ``plain`` (§3)."""
    return _FAMILIES.get(language.lower(), "plain")


def prepare_source(source: str) -> str:
    """§2.1–2.2: one leading BOM removed, CRLF then lone CR turned into LF."""
    if source.startswith("\ufeff"):
        source = source[1:]
    return source.replace("\r\n", "\n").replace("\r", "\n")


# ---- §4 lexing ---------------------------------------------------------------------------
# The lexer produces the output characters with a parallel mask: True for code characters,
# False for characters inside string literals (which normalization never touches).


def _scan_quoted(s: str, body_start: int, delim: str, escapes: bool, ends_at_lf: bool) -> int:
    """End (exclusive) of a literal whose opening delimiter ends at ``body_start``."""
    n = len(s)
    k = body_start
    while k < n:
        c = s[k]
        if escapes and c == "\\":
            k += 2
            continue
        if ends_at_lf and c == "\n":
            return k
        if s.startswith(delim, k):
            return k + len(delim)
        k += 1
    return n


def _line_comment_end(s: str, i: int) -> int:
    lf = s.find("\n", i)
    return len(s) if lf == -1 else lf


def _lex_python(s: str):
    chars: List[str] = []
    code: List[bool] = []
    n = len(s)
    i = 0
    while i < n:
        literal_end = -1
        # optional prefix of at most two letters from rRbBuUfF, then ''' """ ' or "
        for p in range(3):
            if i + p >= n:
                break
            if p > 0:
                if s[i + p - 1] not in _PY_PREFIX:
                    break
                if i > 0 and s[i - 1] in _IDENT:
                    break
            q = s[i + p]
            if q == "'" or q == '"':
                triple = q * 3
                if s.startswith(triple, i + p):
                    literal_end = _scan_quoted(s, i + p + 3, triple, True, False)
                else:
                    literal_end = _scan_quoted(s, i + p + 1, q, True, True)
                break
        if literal_end != -1:
            end = min(literal_end, n)
            chars.extend(s[i:end])
            code.extend([False] * (end - i))
            i = end
            continue
        ch = s[i]
        if ch == "#":
            i = _line_comment_end(s, i)
            continue
        chars.append(ch)
        code.append(True)
        i += 1
    return chars, code


def _lex_c_like(s: str, family: str):
    chars: List[str] = []
    code: List[bool] = []
    n = len(s)
    i = 0
    while i < n:
        ch = s[i]
        end = -1
        if ch == '"' or ch == "'":
            end = _scan_quoted(s, i + 1, ch, True, True)
        elif ch == "`":
            # js template literal: escapes, ${} not tracked; go raw string: no escapes
            end = _scan_quoted(s, i + 1, "`", family == "js", False)
        if end != -1:
            end = min(end, n)
            chars.extend(s[i:end])
            code.extend([False] * (end - i))
            i = end
            continue
        if ch == "/" and i + 1 < n and s[i + 1] == "/":
            i = _line_comment_end(s, i)
            continue
        if ch == "/" and i + 1 < n and s[i + 1] == "*":
            close = s.find("*/", i + 2)
            end = n if close == -1 else close + 2
            chars.append("\n" if "\n" in s[i:end] else " ")
            code.append(True)
            i = end
            continue
        chars.append(ch)
        code.append(True)
        i += 1
    return chars, code


def _normalize_whitespace(chars: List[str], code: List[bool]) -> str:
    """§6 over code characters only."""
    n = len(chars)
    # Step 1: runs of whitespace code characters followed by a code LF or the end are removed.
    keep: List[int] = []
    i = 0
    while i < n:
        if code[i] and chars[i] in _HWS:
            j = i
            while j < n and code[j] and chars[j] in _HWS:
                j += 1
            trailing = j == n or (code[j] and chars[j] == "\n")
            if not trailing:
                keep.extend(range(i, j))
            i = j
            continue
        keep.append(i)
        i += 1
    # Step 2: code LFs at the start or right after another code LF are removed; then a final one.
    out: List[int] = []
    for k in keep:
        if code[k] and chars[k] == "\n":
            if not out:
                continue
            last = out[-1]
            if code[last] and chars[last] == "\n":
                continue
        out.append(k)
    if out and code[out[-1]] and chars[out[-1]] == "\n":
        out.pop()
    return "".join(chars[k] for k in out)


def normalize_source(source_code: str, language: str) -> str:
    """The normalized code used for identity (never for execution)."""
    if not isinstance(source_code, str) or not isinstance(language, str):
        raise TypeError("source_code and language must be str")
    prepared = prepare_source(source_code)
    family = language_family(language)
    if family == "plain":
        return prepared.rstrip(_PLAIN_TRAILING)
    if family == "python":
        return _normalize_whitespace(*_lex_python(prepared))
    return _normalize_whitespace(*_lex_c_like(prepared, family))


def canonical_string(function_name: str, signature: str, normalized_code: str) -> str:
    """§7.1, with function_name and signature trimmed of ASCII whitespace (§2.3)."""
    return "%s:%s:%s" % (function_name.strip(_ASCII_WS), signature.strip(_ASCII_WS), normalized_code)


def _utf8(text: str) -> bytes:
    """UTF-8 bytes of ``text`` as JavaScript would produce them (see module docstring)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        units = text.encode("utf-16-be", "surrogatepass")
        return units.decode("utf-16-be", "replace").encode("utf-8")


def base62(data: bytes) -> str:
    """``data`` read as one unsigned big-endian integer, in base 62, no padding."""
    n = int.from_bytes(bytes(data), "big")
    if n == 0:
        return "0"
    digits = []
    while n > 0:
        n, r = divmod(n, 62)
        digits.append(BASE62_ALPHABET[r])
    return "".join(reversed(digits))


def compute_rufid(function_name: str, signature: Optional[str], language: str, source_code: str) -> RufidComputation:
    """The full §7 computation: normalized code, canonical string, digest and short RUFID.

    ``signature=None`` derives it from the source as a node does for a publish without one
    (rufid-v1 §10, :func:`svc.derive_signature`; 1006 :class:`svc.ValidationError` when it cannot)."""
    if not isinstance(function_name, str):
        raise TypeError("function_name must be str")
    if signature is None:
        from .signature import derive_signature  # the derivation is built on this module's lexer

        signature = derive_signature(function_name, language, source_code)
    if not isinstance(signature, str):
        raise TypeError("signature must be str")
    normalized = normalize_source(source_code, language)
    canonical = canonical_string(function_name, signature, normalized)
    digest = hashlib.sha256(_utf8(canonical)).digest()
    return RufidComputation(
        rufid_short=base62(digest)[:12],
        content_digest=digest.hex(),
        normalized_code=normalized,
        canonical=canonical,
    )


def rufid_short(function_name: str, signature: Optional[str], language: str, source_code: str) -> str:
    """The 12-character short RUFID of a function definition."""
    return compute_rufid(function_name, signature, language, source_code).rufid_short


# ---- §8 syntax ---------------------------------------------------------------------------


def is_short_rufid(value: object) -> bool:
    return isinstance(value, str) and SHORT_RUFID_RE.fullmatch(value) is not None


def is_full_rufid(value: object) -> bool:
    try:
        return parse_rufid(value).version is not None
    except InvalidRufidError:
        return False


def is_rufid(value: object) -> bool:
    """True for a valid short or full RUFID."""
    try:
        parse_rufid(value)
        return True
    except InvalidRufidError:
        return False


def _invalid(value: object, why: str = "malformed RUFID") -> InvalidRufidError:
    return InvalidRufidError("%s: %r" % (why, value), details={"rufid": value if isinstance(value, str) else repr(value)})


def parse_rufid(value: object) -> ParsedRufid:
    """Reads a short or full RUFID; anything else raises :class:`svc.InvalidRufidError` (1001)."""
    if not isinstance(value, str):
        raise _invalid(value, "RUFID must be a string")
    if SHORT_RUFID_RE.fullmatch(value):
        return ParsedRufid(value)
    m = FULL_RUFID_RE.fullmatch(value)
    if m is None:
        raise _invalid(value)
    version = int(m.group(2))
    if version > _MAX_SAFE_INTEGER:
        raise _invalid(value, "version out of range")
    return ParsedRufid(m.group(1), version, m.group(3))


def validate_rufid(value: object) -> str:
    """Returns ``value`` unchanged when it is a valid short or full RUFID, else raises 1001."""
    parse_rufid(value)
    return value  # type: ignore[return-value]


def parse_version_label(value: Union[str, int]) -> int:
    """``"v3"`` (or ``3``) → 3; anything else raises 1001 (the version is part of a RUFID)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 1 <= value <= _MAX_SAFE_INTEGER:
            return value
        raise _invalid(value, "malformed version label")
    if isinstance(value, str):
        m = VERSION_LABEL_RE.fullmatch(value)
        if m is not None and int(m.group(1)) <= _MAX_SAFE_INTEGER:
            return int(m.group(1))
    raise _invalid(value, "malformed version label")


def format_rufid(short: str, version: Union[int, str], tenant_id: str) -> str:
    """Full form ``rufid:<short>:v<n>:<tenant>``; raises 1001 when any part is malformed."""
    n = parse_version_label(version)
    if not is_short_rufid(short):
        raise _invalid(short, "malformed short RUFID")
    if not isinstance(tenant_id, str) or TENANT_ID_RE.fullmatch(tenant_id) is None:
        raise _invalid(tenant_id, "malformed tenant id")
    return "rufid:%s:v%d:%s" % (short, n, tenant_id)


def import_name(rufid_short: str) -> str:
    """The name under which ``svc.rufid`` exports a short RUFID: ``_`` + it when it starts with a digit."""
    if not is_short_rufid(rufid_short):
        raise _invalid(rufid_short, "malformed short RUFID")
    return "_" + rufid_short if rufid_short[0].isdigit() else rufid_short


def import_statement(rufid_short: str, function_name: str) -> str:
    """``from svc.rufid import <rufid_short> as <function_name>`` (decisions.md, Import statements)."""
    return "from svc.rufid import %s as %s" % (import_name(rufid_short), function_name)
