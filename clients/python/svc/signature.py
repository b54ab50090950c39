"""The derived signature of ``shared/spec/rufid-v1.md`` §10, byte for byte.

When a function is published without a signature, the signature is read from the source; every
implementation (the daemon and CLI in TypeScript, ``src/core/signature.ts``, this module and the
Go client) derives the same text, because it enters the canonical string of the RUFID. All three
are checked against ``test/vectors/signature-v1.json``. The points §10 leaves open are fixed in
``src/core/signature.ts`` and followed here; the source is lexed by :mod:`svc.rufid_algo`'s own
lexer, so strings and comments are skipped exactly as normalization skips them.

JavaScript indexes strings by UTF-16 code unit and Python by code point; every character the rules
give a meaning to is ASCII and every non-ASCII character counts as an identifier character, so
both read the same definitions and copy the same text.
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Tuple, Union

from .errors import ValidationError
from .rufid_algo import _ASCII_WS, _lex_c_like, _lex_python, language_family, prepare_source

__all__ = ["derive_signature", "signature_not_derivable"]

_SPACE = frozenset(" \t\n\f\v")
_IDENT_ASCII = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")
_OPENERS = frozenset("([{")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _is_ident(c: str) -> bool:
    return c in _IDENT_ASCII or (c != "" and ord(c) >= 0x80)


def signature_not_derivable(function_name: str, language: str, reason: str) -> ValidationError:
    """The 1006 error naming the function and asking for an explicit signature."""
    if reason == "unsupported_language":
        why = "language %s has no signature derivation" % _json_str(language)
    elif reason == "unbalanced":
        why = "the parameter list of %s in the source is not balanced" % _json_str(function_name)
    else:
        why = "no definition of %s was found in the source" % _json_str(function_name)
    return ValidationError(
        "cannot derive the signature of function %s: %s; give an explicit signature" % (_json_str(function_name), why),
        details={
            "function_name": function_name,
            "reason": reason,
            "problems": [{"pointer": "/signature", "message": "required: it cannot be derived from the source"}],
        },
    )


def _json_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


_UNKNOWN = -2


class _Code:
    """The lexed text, in which only code characters (outside string literals) can match.

    Every question costs amortized O(1), so a derivation is linear in the source whatever it holds:
    lists are matched once for the whole text, and annotation scans share their results."""

    def __init__(self, chars: List[str], code: List[bool]) -> None:
        self.chars = chars
        self.code = code
        self.n = len(chars)
        # the code characters, with NUL for each literal character: NUL has no meaning to the
        # rules, so a code NUL read as a literal one changes nothing
        self.cs = "".join(c if k else "\0" for c, k in zip(chars, code))
        self.match = self._match_lists()
        self._annotation_memo: Dict[str, List[int]] = {}

    def _match_lists(self) -> List[int]:
        """One pass: a closer that does not match the innermost open list makes it and every list
        around it unbalanced (-1), as does the end; exactly what scanning from each opener finds."""
        match = [-1] * self.n
        open_: List[int] = []
        for i in range(self.n):
            c = self.at(i)
            if c in _OPENERS:
                open_.append(i)
            elif c in _CLOSERS and open_:
                top = open_[-1]
                if self.cs[top] == _CLOSERS[c]:
                    match[top] = i
                    open_.pop()
                else:
                    open_.clear()
        return match

    def at(self, i: int) -> str:
        """The code character at ``i``, or ``""`` (a literal character, or out of range)."""
        if 0 <= i < self.n:
            c = self.cs[i]
            return "" if c == "\0" else c
        return ""

    def skip_space(self, i: int) -> int:
        while self.at(i) in _SPACE:
            i += 1
        return i

    def word(self, i: int, word: str) -> bool:
        return self.cs.startswith(word, i) and not _is_ident(self.at(i - 1)) and not _is_ident(self.at(i + len(word)))

    def ident_end(self, i: int) -> int:
        while _is_ident(self.at(i)):
            i += 1
        return i

    def arrow(self, i: int) -> bool:
        return self.at(i) == "=" and self.at(i + 1) == ">"

    def closing(self, open_: int) -> int:
        """Index of the closer of the list opened at ``open_`` (``()[]{}`` nested), or -1."""
        return self.match[open_]

    def _annotation_stop(self, kind: str, i: int) -> bool:
        if kind == "arrow":
            return self.arrow(i)
        return self.at(i) == "=" and not self.arrow(i) and self.at(i + 1) != "="

    def annotation_end(self, start: int, kind: str) -> int:
        """First depth-0 code index from ``start`` where an annotation of ``kind`` ends (``=`` for
        a ``"binding"``, ``=>`` for an ``"arrow"``; ``=>`` skipped otherwise); -1 at a depth-0 ``,``
        ``;`` LF, an unbalanced list, an enclosing list's closer, or the end. The answer depends on
        the position only, so every position a scan passes records it for later scans."""
        memo = self._annotation_memo.get(kind)
        if memo is None:
            memo = self._annotation_memo[kind] = [_UNKNOWN] * self.n
        passed: List[int] = []
        i = start
        end = -1
        while i < self.n:
            if memo[i] != _UNKNOWN:
                end = memo[i]
                break
            passed.append(i)
            c = self.at(i)
            if c == "":
                i += 1
                continue
            if self._annotation_stop(kind, i):
                end = i
                break
            if c in ",;\n" or c in _CLOSERS:
                break
            if self.arrow(i):
                i += 2
            elif c in _OPENERS:
                if self.match[i] == -1:
                    break
                i = self.match[i] + 1
            else:
                i += 1
        for p in passed:
            memo[p] = end
        return end

    def list_text(self, open_: int, close: int) -> str:
        """§10.4: whitespace runs outside literals become one space, none after ``(`` or before ``)``."""
        out: List[str] = []
        i = open_
        while i <= close:
            if self.code[i] and self.chars[i] in _SPACE:
                j = i
                while j <= close and self.code[j] and self.chars[j] in _SPACE:
                    j += 1
                if self.at(i - 1) != "(" and self.at(j) != ")":
                    out.append(" ")
                i = j
                continue
            out.append(self.chars[i])
            i += 1
        return "".join(out)


# A candidate's outcome: (open, close) of its list, a bare parameter name, or None.
_Found = Union[Tuple[int, int], str, None]


def derive_signature(function_name: str, language: str, source_code: str) -> str:
    """The signature rufid-v1 §10 derives for ``function_name`` in ``source_code``, e.g.
    ``(a, b = g(1))``. Raises :class:`svc.ValidationError` (1006, ``details["reason"]`` one of
    ``no_definition``, ``unbalanced``, ``unsupported_language``) when none can be derived."""
    for label, value in (("function_name", function_name), ("language", language), ("source_code", source_code)):
        if not isinstance(value, str):
            raise TypeError("%s must be str" % label)
    name = function_name.strip(_ASCII_WS)
    family = language_family(language)
    if family == "plain":
        raise signature_not_derivable(name, language, "unsupported_language")
    if name == "":
        raise signature_not_derivable(name, language, "no_definition")
    prepared = prepare_source(source_code)
    t = _Code(*(_lex_python(prepared) if family == "python" else _lex_c_like(prepared, family)))
    # every form starts with its keyword or (a js binding) the name: only those positions are tried
    first_tokens = {"python": ["def"], "go": ["func"], "js": ["function", name]}[family]
    starts = re.compile("(?=%s)" % "|".join(re.escape(w) for w in first_tokens))
    for m in starts.finditer(t.cs):
        i = m.start()
        if _is_ident(t.at(i - 1)):
            continue
        found = _definition_at(t, i, name, family)
        if found is None:
            continue
        if isinstance(found, str):
            return "(%s)" % found
        open_, close = found
        if close == -1:
            raise signature_not_derivable(name, language, "unbalanced")
        return t.list_text(open_, close)
    raise signature_not_derivable(name, language, "no_definition")


def _list_at(t: _Code, open_: int) -> _Found:
    return (open_, t.closing(open_)) if t.at(open_) == "(" else None


def _named_list_at(t: _Code, i: int, name: str) -> _Found:
    return _list_at(t, t.skip_space(i + len(name))) if t.word(i, name) else None


def _after_star(t: _Code, i: int) -> int:
    return t.skip_space(i + 1) if t.at(i) == "*" else i


def _definition_at(t: _Code, i: int, name: str, family: str) -> _Found:
    if family == "python":
        return _named_list_at(t, t.skip_space(i + 3), name) if t.word(i, "def") else None
    if family == "go":
        if not t.word(i, "func"):
            return None
        j = t.skip_space(i + 4)
        if t.at(j) == "(":
            # a method's receiver, or a function literal's parameters (then no NAME follows)
            close = t.closing(j)
            if close == -1:
                return None
            j = t.skip_space(close + 1)
        return _named_list_at(t, j, name)
    if t.word(i, "function"):
        return _named_list_at(t, _after_star(t, t.skip_space(i + 8)), name)
    return _binding_at(t, t.skip_space(i + len(name))) if t.word(i, name) else None


def _binding_at(t: _Code, i: int) -> _Found:
    """A js binding after NAME: ``[: Type] = VALUE`` starting at ``i``."""
    if t.at(i) == ":":
        i = t.annotation_end(i + 1, "binding")
        if i == -1:
            return None
    if t.at(i) != "=" or t.at(i + 1) in ("=", ">"):
        return None
    v = t.skip_space(i + 1)
    if t.word(v, "async"):
        a = t.skip_space(v + 5)
        found: Optional[_Found] = (
            _list_at(t, _after_star(t, t.skip_space(a + 8))) if t.word(a, "function") else _arrow_at(t, a)
        )
        if found is not None:
            return found
        # else `async` itself may be a bare parameter: `async => …`
    if t.word(v, "function"):
        return _list_at(t, _after_star(t, t.skip_space(v + 8)))
    return _arrow_at(t, v)


def _arrow_at(t: _Code, i: int) -> _Found:
    """``(…) [: ReturnType] =>`` or a bare parameter ``x =>`` at ``i``."""
    if t.at(i) == "(":
        close = t.closing(i)
        if close == -1:
            return (i, -1)
        after = t.skip_space(close + 1)
        if t.at(after) == ":":
            after = t.annotation_end(after + 1, "arrow")
            if after == -1:
                return None
        return (i, close) if t.arrow(after) else None
    end = t.ident_end(i)
    if end > i and t.arrow(t.skip_space(end)):
        return "".join(t.chars[i:end])
    return None
