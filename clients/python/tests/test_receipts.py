"""Every case of the shared receipt vectors (test/vectors/receipts-v1.json), one test per case id,
plus the JCS cases and the number formatting behind them.

The file is found relative to this test unless SVC_RECEIPT_VECTORS names another one. Receipt
verification needs the ``cryptography`` package (the ``verify`` extra of svc-node-client; scripts/setup.sh
installs it): without it these tests fail rather than skip.
"""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pytest

from svc import ValidationError
from svc.canonical_json import CanonicalJsonError, canonical_json, format_number
from svc.receipt import (
    FAILURES,
    ReceiptError,
    arguments_digest,
    ed25519_key_of_peer_id,
    lockfile_digest,
    receipt_digest,
    result_digest,
    verify_receipt,
)

DEFAULT_VECTORS = Path(__file__).resolve().parent / ".." / ".." / ".." / "test" / "vectors" / "receipts-v1.json"
VECTORS_PATH = Path(os.environ.get("SVC_RECEIPT_VECTORS") or DEFAULT_VECTORS)

with open(VECTORS_PATH, encoding="utf-8") as _f:
    VECTORS = json.load(_f)
CASES = VECTORS["cases"]
JCS = VECTORS["jcs"]


def verdict_of(case, vectors=VECTORS):
    options = {"now": vectors["now"]}
    verify = case["verify"]
    if "ca" in verify:
        options["ca_cert_pem"] = vectors["certificates"][verify["ca"]]["pem"]
    if "revoked" in verify:
        options["revoked"] = verify["revoked"]
    if "args_json" in verify:
        options["args"] = json.loads(verify["args_json"])
    if "result_json" in verify:
        options["result"] = json.loads(verify["result_json"])
    try:
        verified = verify_receipt(case["receipt"], **options)
    except ReceiptError as e:
        assert e.code == 1006 and isinstance(e, ValidationError)
        assert e.details == {"failure": e.failure}
        assert e.failure in FAILURES
        return {"valid": False, "failure": e.failure}
    return {"valid": True, "certified": verified.certified, "digest": verified.digest}


def test_vectors_cover_every_failure():
    seen = {c["expect"].get("failure", "valid") for c in CASES}
    assert seen == set(FAILURES) | {"valid"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_receipt_vector(case):
    assert verdict_of(case) == case["expect"]


@pytest.mark.parametrize("case", JCS, ids=[c["id"] for c in JCS])
def test_jcs_vector(case):
    parsed = json.loads(case["json"])
    if case["canonical"] is None:
        with pytest.raises(CanonicalJsonError):
            canonical_json(parsed)
    else:
        assert canonical_json(parsed) == case["canonical"]


def test_a_changed_receipt_changes_the_verdict():
    valid = next(c for c in CASES if c["id"] == "valid")
    receipt = dict(valid["receipt"], status="error")
    assert verdict_of(dict(valid, receipt=receipt)) == {"valid": False, "failure": "bad_signature"}


def test_receipt_as_json_text_and_digest_helpers():
    valid = next(c for c in CASES if c["id"] == "valid")
    verified = verify_receipt(json.dumps(valid["receipt"]), now=VECTORS["now"], args={"a": 2, "b": 3}, result=5)
    assert verified.digest == valid["expect"]["digest"] == receipt_digest(valid["receipt"])
    assert verified.checked_arguments and verified.checked_result and not verified.certified
    assert verified.peer_id == VECTORS["peers"]["A"]
    assert arguments_digest(None) == arguments_digest({})
    assert arguments_digest([2, 3]) != arguments_digest({"a": 2, "b": 3})
    assert lockfile_digest(None) == "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
    assert result_digest(0.1 + 0.2) == result_digest(json.loads("0.30000000000000004"))
    with pytest.raises(CanonicalJsonError):
        arguments_digest(5)


def test_integral_floats_are_the_same_numbers():
    valid = next(c for c in CASES if c["id"] == "valid")
    receipt = dict(valid["receipt"], receipt_version=1.0, limits={k: float(v) for k, v in valid["receipt"]["limits"].items()})
    assert verify_receipt(receipt, now=VECTORS["now"]).digest == valid["expect"]["digest"]


def test_unreadable_ca_is_the_callers_error():
    valid = next(c for c in CASES if c["id"] == "valid")
    with pytest.raises(ValidationError) as info:
        verify_receipt(valid["receipt"], ca_cert_pem="nope", now=VECTORS["now"])
    assert not isinstance(info.value, ReceiptError)


def test_peer_ids():
    assert len(ed25519_key_of_peer_id(VECTORS["peers"]["A"])) == 32
    for bad in ("QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N", "1" + VECTORS["peers"]["A"], VECTORS["peers"]["A"][:-1] + "0"):
        with pytest.raises(ValueError):
            ed25519_key_of_peer_id(bad)


def test_format_number_round_trips_and_is_shortest():
    rng = random.Random(8785)
    for _ in range(20000):
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if x != x or x in (float("inf"), float("-inf")):
            continue
        text = format_number(x)
        assert float(text) == x, (x, text)
        digits = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
        assert len(digits) <= 17


@pytest.mark.parametrize("value,text", [
    (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-6, "0.000001"), (1e-7, "1e-7"), (-0.0, "0"),
    (0.1 + 0.2, "0.30000000000000004"), (2**53 + 1, "9007199254740992"), (123456789, "123456789"),
    (1.5e300, "1.5e+300"), (-5e-324, "-5e-324"), (100, "100"), (0.5, "0.5"),
])
def test_format_number_cases(value, text):
    assert format_number(float(value)) == text
