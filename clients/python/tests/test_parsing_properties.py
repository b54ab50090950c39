"""Property-based tests (Hypothesis) of what the Python client parses: RUFIDs and version labels,
error responses of any shape, Retry-After values, events frames, receipts. Whatever the input, each
parser answers or raises its own documented error, never anything else (issue 16, hostile input).
Seeded (derandomized) and bounded, so a run is reproducible and its time is known."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import svc
from svc.errors import ERROR_CLASSES, SvcError, error_from_response, parse_retry_after
from svc.receipt import ReceiptError, verify_receipt
from svc.rufid_algo import is_rufid, parse_rufid, parse_version_label

BOUNDED = settings(max_examples=300, derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
short_rufids = st.text(alphabet=ALNUM, min_size=12, max_size=12)
tenants = st.text(alphabet=ALNUM + "_.-", min_size=1, max_size=64)
versions = st.integers(min_value=1, max_value=2**53 - 1)
# strings near the RUFID grammar: pieces of valid RUFIDs, separators, digits, unicode look-alikes
near_rufids = st.one_of(
    st.text(),
    st.text(alphabet=ALNUM + ":v-_.ǅ٣０ \n\t", max_size=90),
    st.builds(lambda s, v, t, junk: "rufid:%s:v%s:%s%s" % (s, v, t, junk), short_rufids, st.one_of(versions, st.text(max_size=5)), tenants, st.text(max_size=3)),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12,
)


@BOUNDED
@given(near_rufids)
def test_parse_rufid_answers_or_raises_invalid_rufid(value: str) -> None:
    try:
        parsed = parse_rufid(value)
    except svc.InvalidRufidError as e:
        assert e.code == 1001
        assert not is_rufid(value)
        return
    assert is_rufid(value)
    assert len(parsed.short) == 12 and parsed.short in value


@BOUNDED
@given(short_rufids, versions, tenants)
def test_full_rufids_round_trip(short: str, version: int, tenant: str) -> None:
    parsed = parse_rufid("rufid:%s:v%d:%s" % (short, version, tenant))
    assert (parsed.short, parsed.version, parsed.tenant_id) == (short, version, tenant)


@BOUNDED
@given(st.one_of(st.none(), st.integers(), st.floats(), st.binary(), st.lists(st.text(), max_size=3), st.booleans()))
def test_non_strings_are_invalid_rufids(value: object) -> None:
    try:
        parse_rufid(value)
    except svc.InvalidRufidError:
        return
    raise AssertionError("parse_rufid accepted %r" % (value,))


@BOUNDED
@given(st.one_of(st.text(max_size=30), st.integers(), st.builds(lambda n: "v%d" % n, st.integers())))
def test_version_labels(value: object) -> None:
    try:
        n = parse_version_label(value)  # type: ignore[arg-type]
    except svc.InvalidRufidError:
        return
    assert 1 <= n <= 2**53 - 1


retry_after_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["inf", "Infinity", "1e309", "-0", "nan", "NaN", "  7 ", "Wed, 21 Oct 2015 07:28:00 GMT", "1e3", "0x10", "٣"]),
    st.builds(str, st.floats(allow_nan=True, allow_infinity=True)),
)


@BOUNDED
@given(retry_after_values)
def test_retry_after_is_absent_or_a_finite_wait(value: str) -> None:
    seconds = parse_retry_after(value)
    assert seconds is None or (isinstance(seconds, float) and math.isfinite(seconds) and seconds >= 0), (value, seconds)


error_bodies = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.builds(
        lambda code, name, message, details: json.dumps({"error": {"code": code, "name": name, "message": message, "details": details}}).encode(),
        st.one_of(st.sampled_from(sorted(ERROR_CLASSES)), st.integers(), st.text(max_size=6), st.none(), st.booleans(), st.floats(allow_nan=False)),
        st.one_of(st.text(max_size=20), st.none(), st.integers()),
        st.one_of(st.text(max_size=40), st.none(), st.integers()),
        json_values,
    ),
)


@BOUNDED
@given(st.integers(min_value=100, max_value=599), error_bodies, st.dictionaries(st.sampled_from(["Retry-After", "retry-after", "Content-Type", "X-Other"]), retry_after_values, max_size=3))
def test_any_error_response_becomes_an_svc_error(status: int, body: bytes, headers: dict) -> None:
    err = error_from_response(status, body, headers)
    assert isinstance(err, SvcError)
    assert err.code is None or (isinstance(err.code, int) and not isinstance(err.code, bool))
    if err.code in ERROR_CLASSES:
        assert type(err) is ERROR_CLASSES[err.code]
    assert err.retry_after is None or (math.isfinite(err.retry_after) and err.retry_after >= 0)
    str(err)
    repr(err)
    err.to_dict()


@BOUNDED
@given(st.one_of(json_values, st.text(max_size=200), st.binary(max_size=200), st.builds(lambda v: json.dumps(v), json_values)))
def test_any_receipt_verifies_or_names_the_failed_check(receipt: object) -> None:
    try:
        verify_receipt(receipt)  # type: ignore[arg-type]
    except (ReceiptError, svc.ValidationError):
        return
    raise AssertionError("verify_receipt accepted %r" % (receipt,))
