"""A receipt signed by a live, federated svc-node daemon (test/vectors/receipt-live.json, written by
scripts/make-live-receipt.mjs): it verifies against the federation CA with the call's arguments and
result, and every tampered copy, wrong result or arguments and foreign CA fails as the file says —
the same verdicts the TypeScript verifier gives (``--check``) and the Go suite computes.

The file is found relative to this test unless SVC_LIVE_RECEIPT names another one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from svc.receipt import ReceiptError, arguments_digest, result_digest, verify_receipt

from test_receipts import verdict_of

DEFAULT_PATH = Path(__file__).resolve().parent / ".." / ".." / ".." / "test" / "vectors" / "receipt-live.json"
LIVE = json.loads(Path(os.environ.get("SVC_LIVE_RECEIPT") or DEFAULT_PATH).read_text(encoding="utf-8"))
CASES = LIVE["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_live_receipt_case(case):
    assert verdict_of(case, LIVE) == case["expect"]


def test_live_receipt_is_the_daemons_and_vouches_for_its_call():
    receipt = CASES[0]["receipt"]
    verified = verify_receipt(
        receipt, ca_cert_pem=LIVE["certificates"]["ca"]["pem"], args=LIVE["args"], result=LIVE["result"], now=LIVE["now"]
    )
    assert verified.certified
    assert verified.peer_id == LIVE["peer_id"] == receipt["peer_id"]
    assert receipt["status"] == "success"
    # the digests this client computes from the call are the ones the daemon signed
    assert arguments_digest(LIVE["args"]) == receipt["arguments_digest"]
    assert result_digest(LIVE["result"]) == receipt["result_digest"]


def test_live_receipt_any_changed_member_fails():
    receipt = CASES[0]["receipt"]
    for member in ("execution_id", "rufid", "content_digest", "lockfile_digest", "arguments_digest", "started_at", "finished_at"):
        value = receipt[member]
        changed = dict(receipt, **{member: value[:-1] + ("0" if value[-1] != "0" else "1")})
        with pytest.raises(ReceiptError) as e:
            verify_receipt(changed, ca_cert_pem=LIVE["certificates"]["ca"]["pem"], now=LIVE["now"])
        assert e.value.failure in ("bad_signature", "malformed"), member
