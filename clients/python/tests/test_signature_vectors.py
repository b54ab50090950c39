"""Every case of the shared derived-signature vectors (test/vectors/signature-v1.json).

The file is found relative to this test unless ``SVC_SIGNATURE_VECTORS`` names another one. A
case with a ``signature`` must derive exactly it, and computing the RUFID without a signature must
give the case's ``rufid_short`` (as ``svc rufid compute`` and a node's ``/v1`` publish do); a case
with an ``error`` must raise 1006 with the case's reason, from both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import svc

DEFAULT_VECTORS = Path(__file__).resolve().parent / ".." / ".." / ".." / "test" / "vectors" / "signature-v1.json"
VECTORS_PATH = Path(os.environ.get("SVC_SIGNATURE_VECTORS") or DEFAULT_VECTORS)


def _load():
    try:
        with open(VECTORS_PATH, encoding="utf-8") as f:
            return json.load(f)["cases"], None
    except Exception as e:  # reported by test_vectors_file_is_readable
        return [], "%s: %s" % (type(e).__name__, e)


CASES, LOAD_ERROR = _load()
IDS = [c.get("id", "case-%d" % i) if isinstance(c, dict) else "case-%d" % i for i, c in enumerate(CASES)]


def test_vectors_file_is_readable():
    assert LOAD_ERROR is None, "cannot read the signature vectors at %s: %s" % (VECTORS_PATH, LOAD_ERROR)
    assert len(CASES) >= 30, "fewer than 30 cases in %s" % VECTORS_PATH
    assert len(set(IDS)) == len(IDS), "duplicate case ids"
    families = {svc.language_family(c["language"]) for c in CASES}
    assert families == {"python", "js", "go", "plain"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vector(case):
    name, language, source = case["function_name"], case["language"], case["source_code"]
    if "signature" in case:
        assert svc.derive_signature(name, language, source) == case["signature"]
        computed = svc.compute_rufid(name, None, language, source)
        assert computed.rufid_short == case["rufid_short"]
        assert computed.content_digest == case["sha256_hex"]
        assert svc.rufid_short(name, None, language, source) == case["rufid_short"]
        # an explicit signature is used as given
        assert svc.compute_rufid(name, case["signature"], language, source).rufid_short == case["rufid_short"]
    else:
        expected = case["error"]
        for attempt in (lambda: svc.derive_signature(name, language, source),
                        lambda: svc.compute_rufid(name, None, language, source)):
            with pytest.raises(svc.ValidationError) as info:
                attempt()
            err = info.value
            assert (err.code, err.name) == (expected["code"], expected["name"])
            assert err.details["reason"] == expected["reason"]
            assert err.details["function_name"] == name
            assert json.dumps(name, ensure_ascii=False) in err.message and "explicit signature" in err.message
            assert err.http_status is None


def test_spec_examples():
    assert svc.derive_signature("add", "python", "def add(a: int, b: int = (1)) -> int:\n  return a") == "(a: int, b: int = (1))"
    assert svc.derive_signature("f", "js", "function f(a, b = g(1), { c } = {}) {}") == "(a, b = g(1), { c } = {})"
    assert svc.derive_signature("h", "javascript", "const h = x => x") == "(x)"


def test_name_is_trimmed_and_types_are_checked():
    assert svc.derive_signature(" add\t", "python", "def add(a):\n  return a") == "(a)"
    with pytest.raises(TypeError):
        svc.derive_signature("add", "python", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        svc.compute_rufid(None, None, "python", "def add(a): pass")  # type: ignore[arg-type]


ADVERSARIAL = [
    ("js", "add", "const add2 = (a) => a\n" * 10_000),
    ("js", "add", "add: b " * 30_000),
    ("js", "add", "add = (): b " * 18_000),
    ("js", "add", "add = (" * 20_000 + ")" * 20_000),
    ("go", "F", "func (" * 24_000 + ")" * 24_000),
    ("python", "f", "def g(" * 30_000),
]


def test_derivation_is_linear_whatever_the_source_holds():
    """In a child process killed at a generous deadline (a slow derivation cannot be interrupted
    in-process): on these ~200 kB sources, a derivation that rescans the text for each candidate
    takes hours; this one about a second each."""
    import subprocess
    import sys

    program = (
        "import json, sys\n"
        "sys.path.insert(0, %r)\n"
        "import svc\n"
        "codes = []\n"
        "for language, name, source in json.load(sys.stdin):\n"
        "    try:\n"
        "        codes.append(svc.derive_signature(name, language, source))\n"
        "    except svc.ValidationError as e:\n"
        "        codes.append(e.code)\n"
        "print(json.dumps(codes))\n"
    ) % str(Path(svc.__file__).resolve().parent.parent)
    assert min(len(source) for _, _, source in ADVERSARIAL) > 150_000
    done = subprocess.run([sys.executable, "-c", program], input=json.dumps(ADVERSARIAL), capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == [1006] * len(ADVERSARIAL)
