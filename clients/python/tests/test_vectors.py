"""Every case of the shared RUFID v1 vectors (test/vectors/rufid-v1.json), one test per case id.

The file is found relative to this test (``../../../test/vectors/rufid-v1.json``) unless the
environment variable ``SVC_VECTORS`` names another one. A missing or unreadable file fails.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import svc

DEFAULT_VECTORS = Path(__file__).resolve().parent / ".." / ".." / ".." / "test" / "vectors" / "rufid-v1.json"
VECTORS_PATH = Path(os.environ.get("SVC_VECTORS") or DEFAULT_VECTORS)
FIELDS = ("id", "function_name", "signature", "language", "source_code", "normalized_code", "sha256_hex", "rufid_short")


def _load():
    try:
        with open(VECTORS_PATH, encoding="utf-8") as f:
            data = json.load(f)
        return data["cases"], None
    except Exception as e:  # reported by test_vectors_file_is_readable
        return [], "%s: %s" % (type(e).__name__, e)


CASES, LOAD_ERROR = _load()
IDS = [c.get("id", "case-%d" % i) if isinstance(c, dict) else "case-%d" % i for i, c in enumerate(CASES)]


def test_vectors_file_is_readable():
    assert LOAD_ERROR is None, "cannot read the RUFID vectors at %s: %s" % (VECTORS_PATH, LOAD_ERROR)
    assert len(CASES) > 0, "no cases in %s" % VECTORS_PATH
    assert len(set(IDS)) == len(IDS), "duplicate case ids"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vector(case):
    missing = [f for f in FIELDS if f not in case]
    assert not missing, "case lacks %s" % missing
    result = svc.compute_rufid(case["function_name"], case["signature"], case["language"], case["source_code"])
    assert result.normalized_code == case["normalized_code"], "normalized_code"
    assert result.content_digest == case["sha256_hex"], "sha256_hex"
    assert result.rufid_short == case["rufid_short"], "rufid_short"
    # the same through the smaller public helpers
    assert svc.normalize_source(case["source_code"], case["language"]) == case["normalized_code"]
    assert svc.rufid_short(case["function_name"], case["signature"], case["language"], case["source_code"]) == case["rufid_short"]
    assert svc.is_short_rufid(case["rufid_short"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vector_is_self_consistent(case):
    """The expected digest and short RUFID follow from the expected normalized code by §7 alone."""
    canonical = "%s:%s:%s" % (case["function_name"].strip(" \t\n\r\f\v"), case["signature"].strip(" \t\n\r\f\v"),
                              case["normalized_code"])
    digest = hashlib.sha256(canonical.encode("utf-8")).digest()
    assert digest.hex() == case["sha256_hex"]
    n = int.from_bytes(digest, "big")
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = alphabet[r] + out
    assert out[:12] == case["rufid_short"]
