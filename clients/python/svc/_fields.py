"""The field names every client exposes the same way, whatever node version answers.

- Every body that names a function carries ``rufid_short`` (the 12-character hash) and
  ``full_rufid`` (``rufid:<short>:v<n>:<tenant>``); ``rufid`` keeps the meaning the spec gives it
  per body (metadata: short; create, resolution, execution record, events: full). A node that
  sends only one of them gets the other derived here.
- The execution record says ``tenant_id``; older nodes say ``tenant`` (kept one release as a
  deprecated alias), which is read when ``tenant_id`` is absent.

Nothing is invented: a form that cannot be derived (no version or tenant known) stays absent.
The TypeScript (``src/client/fields.ts``) and Go (``fields.go``) clients apply the same rules.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidRufidError
from .rufid_algo import format_rufid

_SHORT = re.compile(r"^[A-Za-z0-9]{12}$")
_FULL = re.compile(r"^rufid:([A-Za-z0-9]{12}):v([1-9][0-9]*):([A-Za-z0-9_.-]{1,64})$")
_VERSION = re.compile(r"^v([1-9][0-9]*)$")


def with_rufid_forms(body: Any) -> Any:
    """Adds the missing one of ``rufid_short`` / ``full_rufid`` to a dict naming a function (in place)."""
    if not isinstance(body, dict):
        return body
    full = next((v for v in (body.get("full_rufid"), body.get("rufid")) if isinstance(v, str) and _FULL.fullmatch(v)), None)
    if "full_rufid" not in body and full is not None:
        body["full_rufid"] = full
    if "rufid_short" not in body:
        m = _FULL.fullmatch(full) if full is not None else None
        rufid = body.get("rufid")
        if m:
            body["rufid_short"] = m.group(1)
        elif isinstance(rufid, str) and _SHORT.fullmatch(rufid):
            body["rufid_short"] = rufid
    short, version = body.get("rufid_short"), body.get("version")
    if "full_rufid" not in body and isinstance(short, str) and isinstance(version, str):
        tenant = body.get("tenant_id", body.get("tenant"))
        v = _VERSION.fullmatch(version)
        if v and isinstance(tenant, str):
            try:
                body["full_rufid"] = format_rufid(short, int(v.group(1)), tenant)
            except InvalidRufidError:
                pass  # a short form or tenant that is not well formed: nothing is invented
    return body


def execution_record_fields(record: Any) -> Any:
    """An execution record: ``tenant_id`` (from ``tenant`` on older nodes) and both RUFID forms."""
    if isinstance(record, dict) and "tenant_id" not in record and isinstance(record.get("tenant"), str):
        record["tenant_id"] = record["tenant"]
    return with_rufid_forms(record)


def with_rufid_forms_in(body: Any, *keys: str) -> Any:
    """:func:`with_rufid_forms` on every item of ``body[key]`` (lists) or on ``body[key]`` (a dict)."""
    if isinstance(body, dict):
        for key in keys:
            value = body.get(key)
            if isinstance(value, list):
                for item in value:
                    with_rufid_forms(item)
            else:
                with_rufid_forms(value)
    return body
