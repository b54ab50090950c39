"""The RUFID forms a client adds to an answer (svc._fields): only from whole, well-formed values.

Python's ``$`` also matches before a final newline, so ``re.match`` with ``^…$`` took
``"rufid:…:default\\n"`` for a full RUFID; the patterns are matched whole (``fullmatch``).
"""

from svc._fields import with_rufid_forms

SHORT = "AbCdEfGh1234"


def test_a_full_rufid_gives_its_short_form():
    body = with_rufid_forms({"rufid": f"rufid:{SHORT}:v2:acme"})
    assert body["rufid_short"] == SHORT
    assert body["full_rufid"] == f"rufid:{SHORT}:v2:acme"


def test_a_trailing_newline_is_not_a_full_rufid():
    body = with_rufid_forms({"rufid": f"rufid:{SHORT}:v2:acme\n"})
    assert "full_rufid" not in body
    assert "rufid_short" not in body


def test_a_short_form_or_version_with_a_trailing_newline_invents_nothing():
    assert "rufid_short" not in with_rufid_forms({"rufid": f"{SHORT}\n"})
    body = with_rufid_forms({"rufid_short": SHORT, "version": "v2\n", "tenant_id": "acme"})
    assert "full_rufid" not in body
    body = with_rufid_forms({"rufid_short": SHORT, "version": "v2", "tenant_id": "acme"})
    assert body["full_rufid"] == f"rufid:{SHORT}:v2:acme"
