"""Errors of the svc service (service-spec §7 and decisions.md "Errors").

Every failure the client reports is an :class:`SvcError`. Errors answered by a node carry the
node's ``code``, ``name``, ``message`` and ``details`` plus the HTTP status; the subclass is chosen
by ``code``. Unknown codes stay a plain :class:`SvcError`.
"""

from __future__ import annotations

import email.utils
import math
import re
import json
import time
from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "SvcError",
    "InvalidRufidError",
    "RufidNotFoundError",
    "PermissionDeniedError",
    "ExecutionTimeoutError",
    "RateLimitedError",
    "ValidationFailedError",
    "ValidationError",
    "ExecutionFailedError",
    "RufidCollisionError",
    "FederationUnreachableError",
    "SyncConflictError",
    "InternalError",
    "ServiceUnavailableError",
    "NotFoundError",
    "SvcConnectionError",
    "ConnectionError",
    "ERROR_CLASSES",
    "error_class_for",
    "error_from_response",
    "parse_retry_after",
]


class SvcError(Exception):
    """Base class of every svc error.

    Attributes: ``code`` (int or None), ``name`` (e.g. ``"RUFID_NOT_FOUND"``), ``message``,
    ``details`` (dict), ``http_status`` (int or None when the error was raised locally),
    ``retry_after`` (seconds from a Retry-After header, or None) and ``body`` (the decoded
    error response, when there was one).
    """

    code: Optional[int] = None
    name: str = "SVC_ERROR"

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[int] = None,
        name: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
        http_status: Optional[int] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if name is not None:
            self.name = name
        self.message = message
        self.details: Dict[str, Any] = dict(details) if isinstance(details, Mapping) else {}
        self.http_status = http_status
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        head = self.name if self.code is None else "%s %s" % (self.code, self.name)
        status = "" if self.http_status is None else " (HTTP %s)" % self.http_status
        return "[%s]%s %s" % (head, status, self.message)

    def __repr__(self) -> str:
        return "%s(code=%r, name=%r, message=%r, http_status=%r)" % (
            type(self).__name__, self.code, self.name, self.message, self.http_status)

    def to_dict(self) -> Dict[str, Any]:
        """The error in the REST error-body shape ``{code, name, message, details}``."""
        return {"code": self.code, "name": self.name, "message": self.message, "details": self.details}


class InvalidRufidError(SvcError, ValueError):
    """1001 INVALID_RUFID: a RUFID does not have the syntax of rufid-v1 §8."""

    code = 1001
    name = "INVALID_RUFID"


class RufidNotFoundError(SvcError):
    """1002 RUFID_NOT_FOUND."""

    code = 1002
    name = "RUFID_NOT_FOUND"


class PermissionDeniedError(SvcError):
    """1003 PERMISSION_DENIED (HTTP 403, or 401 when no valid credential was presented)."""

    code = 1003
    name = "PERMISSION_DENIED"

    @property
    def unauthenticated(self) -> bool:
        """True when the node answered 401 (missing or invalid credentials)."""
        return self.http_status == 401


class ExecutionTimeoutError(SvcError):
    """1004 EXECUTION_TIMEOUT."""

    code = 1004
    name = "EXECUTION_TIMEOUT"


class RateLimitedError(SvcError):
    """1005 RATE_LIMITED; ``retry_after`` holds the seconds of the Retry-After header."""

    code = 1005
    name = "RATE_LIMITED"


class ValidationFailedError(SvcError):
    """1006 VALIDATION_FAILED (bad body, bad manifest, lockfile digest mismatch)."""

    code = 1006
    name = "VALIDATION_FAILED"


#: Deprecated: the old name of :class:`ValidationFailedError` (the same class), kept one release.
ValidationError = ValidationFailedError


class ExecutionFailedError(SvcError):
    """1007 EXECUTION_FAILED (the function raised, ran out of memory or CPU)."""

    code = 1007
    name = "EXECUTION_FAILED"


class RufidCollisionError(SvcError):
    """1008 RUFID_COLLISION."""

    code = 1008
    name = "RUFID_COLLISION"


class FederationUnreachableError(SvcError):
    """2001 FEDERATION_UNREACHABLE."""

    code = 2001
    name = "FEDERATION_UNREACHABLE"


class SyncConflictError(SvcError):
    """2002 SYNC_CONFLICT."""

    code = 2002
    name = "SYNC_CONFLICT"


class InternalError(SvcError):
    """1009 INTERNAL_ERROR (a daemon addition, HTTP 500): the node failed, not the request."""

    code = 1009
    name = "INTERNAL_ERROR"


class ServiceUnavailableError(SvcError):
    """1010 SERVICE_UNAVAILABLE (a daemon addition, HTTP 503): the node is starting, stopping or
    saturated (its sandbox queue is full); ``retry_after`` holds the seconds it suggests waiting."""

    code = 1010
    name = "SERVICE_UNAVAILABLE"


class NotFoundError(SvcError):
    """1011 NOT_FOUND (a daemon addition, HTTP 404): something that is not a function does not
    exist in the caller's tenant (an execution, its receipt, an API key, a branch);
    ``details["resource"]`` names which. A function or version not found stays 1002."""

    code = 1011
    name = "NOT_FOUND"


class SvcConnectionError(SvcError):
    """The node could not be reached (refused, DNS, TLS, timeout...). ``code`` is None."""

    code = None
    name = "CONNECTION_FAILED"


#: Deprecated: the old name of :class:`SvcConnectionError` (the same class), kept one release. It
#: shadows the builtin inside this module only; ``from svc import *`` does not export it.
ConnectionError = SvcConnectionError  # noqa: A001


ERROR_CLASSES: Dict[int, Type[SvcError]] = {
    cls.code: cls  # type: ignore[misc]
    for cls in (
        InvalidRufidError, RufidNotFoundError, PermissionDeniedError, ExecutionTimeoutError,
        RateLimitedError, ValidationFailedError, ExecutionFailedError, RufidCollisionError,
        FederationUnreachableError, SyncConflictError, InternalError, ServiceUnavailableError,
        NotFoundError,
    )
}

# Used only when an error response carries no svc error body (e.g. from a proxy).
_STATUS_FALLBACK = {401: 1003, 403: 1003, 408: 1004, 429: 1005}


def error_class_for(code: Any) -> Type[SvcError]:
    """The exception class for an error code (:class:`SvcError` for unknown codes)."""
    if isinstance(code, bool):
        return SvcError
    return ERROR_CLASSES.get(code, SvcError) if isinstance(code, int) else SvcError


# delta-seconds (RFC 9110 §10.2.3), leniently with a fraction; anything else number-like is refused
_DELTA_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
# (the digits before and after an optional point are written so that no run of digits can be split
# two ways: `[0-9]*\.?[0-9]+` took seconds on a few thousand digits followed by a letter)
_NUMBER_LIKE = re.compile(r"[-+]?(?:(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a Retry-After header value: delta-seconds or an HTTP-date. None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value) if _DELTA_SECONDS.fullmatch(value) else None
    except (ValueError, OverflowError):
        seconds = None
    if seconds is not None:
        # a wait the caller can honour: finite ("inf", "1e309" or 400 nines are not), not negative
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    if _NUMBER_LIKE.fullmatch(value):
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def error_from_response(status: int, raw_body: bytes, headers: Optional[Mapping[str, str]] = None) -> SvcError:
    """Builds the exception for an HTTP error response ``{"error": {code, name, message, details}}``."""
    headers = headers or {}
    retry_after = parse_retry_after(_header(headers, "Retry-After"))
    body: Any = None
    text = raw_body.decode("utf-8", "replace") if raw_body else ""
    if text:
        try:
            body = json.loads(text)
        except ValueError:
            body = None
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and "code" in err:
        code = err.get("code")
        if isinstance(code, str) and code.isdigit():
            code = int(code)
        cls = error_class_for(code)
        message = err.get("message")
        name = err.get("name")
        return cls(
            message if isinstance(message, str) else "HTTP %d" % status,
            code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            name=name if isinstance(name, str) else None,
            details=err.get("details") if isinstance(err.get("details"), dict) else None,
            http_status=status,
            retry_after=retry_after,
            body=body,
        )
    fallback = _STATUS_FALLBACK.get(status)
    message = text.strip()[:500] or "HTTP %d" % status
    if fallback is not None:
        return ERROR_CLASSES[fallback](message, http_status=status, retry_after=retry_after, body=body)
    return SvcError(message, name="HTTP_ERROR", http_status=status, retry_after=retry_after, body=body)


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    getter = getattr(headers, "get", None)
    if getter is not None:
        value = getter(name)
        if value is not None:
            return value
    lowered = name.lower()
    for key in headers:
        if key.lower() == lowered:
            return headers[key]
    return None
