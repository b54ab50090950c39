"""RUFID v1 details beyond the shared vectors: syntax, base62, UTF-8/UTF-16 parity, import names."""

from __future__ import annotations

import hashlib

import pytest

import svc
from svc import rufid_algo


# ---- syntax (§8) --------------------------------------------------------------------------

VALID_SHORT = ["tUwBWSc8Nozv", "000000000000", "zzzzzzzzzzzz", "0aB9cD8eF7gH"]
VALID_FULL = ["rufid:tUwBWSc8Nozv:v1:acme", "rufid:0aB9cD8eF7gH:v12:team_a.b-c", "rufid:tUwBWSc8Nozv:v9:" + "t" * 64]
INVALID = [
    "", "tUwBWSc8Noz", "tUwBWSc8Nozv1", "tUwBWSc8Noz!", "tUwBWSc8Noz_", "tUwBWSc8Nozv\n", " tUwBWSc8Nozv",
    "tUwBWSc8Nozé", "rufid:tUwBWSc8Nozv", "rufid:tUwBWSc8Nozv:v0:acme", "rufid:tUwBWSc8Nozv:v01:acme",
    "rufid:tUwBWSc8Nozv:1:acme", "rufid:tUwBWSc8Nozv:v1:", "rufid:tUwBWSc8Nozv:v1:a/b",
    "rufid:tUwBWSc8Nozv:v1:" + "t" * 65, "RUFID:tUwBWSc8Nozv:v1:acme", "rufid:tUwBWSc8Nozv:v1:acme\n",
    "rufid:tUwBWSc8Nozv:v9007199254740992:acme", None, 123, b"tUwBWSc8Nozv",
]


@pytest.mark.parametrize("value", VALID_SHORT)
def test_parse_short(value):
    parsed = svc.parse_rufid(value)
    assert parsed == (value, None, None)
    assert svc.is_short_rufid(value) and svc.is_rufid(value) and not svc.is_full_rufid(value)
    assert svc.validate_rufid(value) == value


@pytest.mark.parametrize("value", VALID_FULL)
def test_parse_full(value):
    _, short, version, tenant = value.split(":")
    parsed = svc.parse_rufid(value)
    assert parsed.short == short and parsed.version == int(version[1:]) and parsed.tenant_id == tenant
    assert parsed.version_label == version
    assert svc.is_full_rufid(value) and svc.is_rufid(value) and not svc.is_short_rufid(value)
    assert svc.format_rufid(short, parsed.version, tenant) == value


@pytest.mark.parametrize("value", INVALID, ids=repr)
def test_invalid_rufid_is_1001(value):
    with pytest.raises(svc.InvalidRufidError) as info:
        svc.parse_rufid(value)
    assert info.value.code == 1001 and info.value.name == "INVALID_RUFID"
    assert isinstance(info.value, svc.SvcError) and isinstance(info.value, ValueError)
    assert not svc.is_rufid(value)


def test_format_and_version_labels():
    assert svc.format_rufid("tUwBWSc8Nozv", 1, "acme") == "rufid:tUwBWSc8Nozv:v1:acme"
    assert svc.format_rufid("tUwBWSc8Nozv", "v3", "acme") == "rufid:tUwBWSc8Nozv:v3:acme"
    assert svc.parse_version_label("v7") == 7 and svc.parse_version_label(7) == 7
    for bad in ("7", "v0", "v", "V1", "v1 ", 0, -1, True, None):
        with pytest.raises(svc.InvalidRufidError):
            svc.parse_version_label(bad)
    with pytest.raises(svc.InvalidRufidError):
        svc.format_rufid("short", 1, "acme")
    with pytest.raises(svc.InvalidRufidError):
        svc.format_rufid("tUwBWSc8Nozv", 1, "bad tenant")


# ---- §3 families and §7 hash --------------------------------------------------------------

@pytest.mark.parametrize("language,family", [
    ("python", "python"), ("Python3", "python"), ("PY", "python"),
    ("javascript", "js"), ("TypeScript", "js"), ("tsx", "js"), ("CJS", "js"), ("nodejs", "js"),
    ("go", "go"), ("GoLang", "go"), ("sql", "plain"), ("", "plain"), ("python 3", "plain"),
])
def test_language_family(language, family):
    assert svc.language_family(language) == family


def test_base62():
    assert svc.base62(b"") == "0" and svc.base62(b"\x00\x00") == "0"
    assert svc.base62(bytes([61])) == "z"
    assert svc.base62(bytes([62])) == "10"
    assert svc.base62((62 ** 5 + 3).to_bytes(4, "big")) == "100003"
    n, digits = 2 ** 256 - 1, ""
    while n:
        n, r = divmod(n, 62)
        digits = svc.BASE62_ALPHABET[r] + digits
    assert svc.base62(b"\xff" * 32) == digits


def test_canonical_string_and_digest_by_hand():
    r = svc.compute_rufid(" add\n", "\t(a, b)\v", "python", "def add(a, b):  \n    return a + b # c\n\n")
    assert r.canonical == "add:(a, b):def add(a, b):\n    return a + b"
    assert r.content_digest == hashlib.sha256(r.canonical.encode("utf-8")).hexdigest()
    assert r.rufid_short == svc.base62(hashlib.sha256(r.canonical.encode("utf-8")).digest())[:12]


def test_only_ascii_whitespace_is_trimmed_from_name_and_signature():
    a = svc.compute_rufid("add", "(a)", "plain", "x")
    b = svc.compute_rufid("add\u00a0", "(a)", "plain", "x")  # NBSP is not ASCII whitespace
    assert a.canonical != b.canonical and a.rufid_short != b.rufid_short


def test_behavioural_differences_change_the_rufid():
    base = svc.rufid_short("f", "(x)", "python", "def f(x):\n    return x\n")
    assert svc.rufid_short("f", "(x)", "python", "def f(x):\n    return  x\n") != base  # inner spaces kept
    assert svc.rufid_short("f", "(x)", "python", "def f(x):\n  return x\n") != base  # indentation kept
    assert svc.rufid_short("f", "(x)", "python", "def f(x):\n    return x # c\n") == base
    assert svc.rufid_short("f", "(y)", "python", "def f(x):\n    return x\n") != base


# ---- non-ASCII, astral characters and UTF-16 parity ---------------------------------------

def test_astral_characters_are_one_character_for_every_rule():
    # backslash followed by an emoji inside strings: JS skips one UTF-16 unit, Python one code
    # point; the copied text must be the same.
    src = "x = '\\😀'  # c\ny = \"😀\\\"\"  \n"
    assert svc.normalize_source(src, "python") == "x = '\\😀'\ny = \"😀\\\"\""
    js = "let a = `😀 ${'𝄞'}` /* 😀 */ + '\\😀' // 😀\n"
    assert svc.normalize_source(js, "js") == "let a = `😀 ${'𝄞'}`   + '\\😀'"


def test_digest_is_over_utf8_bytes():
    r = svc.compute_rufid("grüße", "(😀)", "plain", "ß 世界 😀")
    expected = "grüße:(😀):ß 世界 😀".encode("utf-8")
    assert r.content_digest == hashlib.sha256(expected).hexdigest()


def test_lone_surrogates_hash_like_javascript():
    # JavaScript's UTF-8 encoder pairs adjacent halves and turns a lone half into U+FFFD.
    r = svc.compute_rufid("f", "()", "plain", "a\ud83d\ude00b\ud800c")
    expected = "f:():a😀b\ufffdc".encode("utf-8")
    assert r.content_digest == hashlib.sha256(expected).hexdigest()


def test_bom_is_removed_only_once_and_only_at_start():
    assert svc.prepare_source("\ufeff\ufeffx") == "\ufeffx"
    assert svc.prepare_source("x\ufeff") == "x\ufeff"
    assert svc.prepare_source("a\r\r\nb\rc") == "a\n\nb\nc"


# ---- import statements ----------------------------------------------------------------------

def test_import_statement():
    assert svc.import_statement("tUwBWSc8Nozv", "add") == "from svc.rufid import tUwBWSc8Nozv as add"
    assert svc.import_statement("0aB9cD8eF7gH", "mul") == "from svc.rufid import _0aB9cD8eF7gH as mul"
    assert svc.import_name("9zzzzzzzzzzz") == "_9zzzzzzzzzzz"
    with pytest.raises(svc.InvalidRufidError):
        svc.import_statement("rufid:tUwBWSc8Nozv:v1:acme", "add")


def test_import_statement_of_a_computed_rufid_is_valid_python():
    # find, in a bounded search, a definition whose short RUFID starts with a digit
    digit_short = None
    for i in range(2000):
        short = svc.rufid_short("f%d" % i, "()", "python", "def f%d():\n    return %d\n" % (i, i))
        if short[0].isdigit():
            digit_short = short
            break
    assert digit_short is not None
    stmt = svc.import_statement(digit_short, "f")
    compile(stmt, "<import>", "exec")
    assert stmt == "from svc.rufid import _%s as f" % digit_short
    assert rufid_algo.import_name(digit_short).isidentifier()
