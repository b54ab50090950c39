"""HTTP client of an svc node (service-spec §4.1–4.3, decisions.md), standard library only."""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import errors as _errors
from .errors import (
    ExecutionFailedError,
    ExecutionTimeoutError,
    SvcError,
    error_from_response,
)
from .rufid_algo import parse_rufid, parse_version_label

__all__ = [
    "DEFAULT_URL",
    "Client",
    "RemoteFunction",
    "Response",
    "WaitTimeoutError",
    "configure",
    "get_client",
]

__version__ = "0.1.0"

#: Used when neither ``base_url`` nor the environment variable ``SVC_URL`` is given.
DEFAULT_URL = "http://127.0.0.1:8080"

#: Execution states after which an execution record no longer changes.
PENDING_STATES = ("queued", "running")

Json = Any


class WaitTimeoutError(SvcError):
    """:meth:`Client.wait_execution` gave up before the execution finished (``code`` is None).

    The execution itself may still complete; ``details`` holds ``execution_id`` and the last
    ``status`` seen.
    """

    code = None
    name = "WAIT_TIMEOUT"


class Response(NamedTuple):
    """The last HTTP exchange of a client (per thread): ``status``, ``headers`` and decoded ``body``."""

    method: str
    url: str
    status: int
    headers: Dict[str, str]
    body: Json


_NO_BODY = object()


def _is_loopback(host: Optional[str]) -> bool:
    if not host:
        return False
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _env(name: str) -> Optional[str]:
    value = os.environ.get(name)
    return value if value else None


class Client:
    """A client of one svc node.

    ``base_url`` defaults to ``$SVC_URL`` (else :data:`DEFAULT_URL`), ``token`` to ``$SVC_TOKEN`` and
    ``namespace`` to ``$SVC_NAMESPACE``. The token is sent as ``Authorization: Bearer <token>``
    and the namespace as ``X-Svc-Namespace``. ``timeout`` is the per-request socket timeout in
    seconds. Requests to a loopback address never go through an HTTP proxy; other requests honour
    the usual ``*_proxy`` environment variables.

    Every method returns the decoded JSON answer (plain dicts and lists) or raises an
    :class:`svc.SvcError` subclass chosen by the node's error code.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        namespace: Optional[str] = None,
        timeout: float = 30,
        *,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        url = base_url if base_url is not None else (_env("SVC_URL") or DEFAULT_URL)
        url = url.strip().rstrip("/")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("base_url must be an http(s) URL, got %r" % url)
        self.base_url = url
        self.token = token if token is not None else _env("SVC_TOKEN")
        self.namespace = namespace if namespace is not None else _env("SVC_NAMESPACE")
        self.timeout = timeout
        self.extra_headers: Dict[str, str] = dict(headers or {})
        handlers: List[Any] = []
        if _is_loopback(parsed.hostname):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)
        self._local = threading.local()

    def __repr__(self) -> str:
        return "Client(base_url=%r, namespace=%r, token=%s)" % (
            self.base_url, self.namespace, "set" if self.token else "None")

    # ---- transport ------------------------------------------------------------------------

    @property
    def last_response(self) -> Optional[Response]:
        """The last response this thread received from the node (errors included), or None."""
        return getattr(self._local, "last", None)

    def headers(self) -> Dict[str, str]:
        """The headers sent with every request."""
        h = {"Accept": "application/json", "User-Agent": "svc-python/%s" % __version__}
        if self.token:
            h["Authorization"] = "Bearer %s" % self.token
        if self.namespace:
            h["X-Svc-Namespace"] = self.namespace
        h.update(self.extra_headers)
        return h

    def url(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        if not path.startswith("/"):
            path = "/" + path
        url = self.base_url + path
        if query:
            items = [(k, _query_value(v)) for k, v in query.items() if v is not None]
            if items:
                url += "?" + urllib.parse.urlencode(items)
        return url

    def request(
        self,
        method: str,
        path: str,
        body: Any = _NO_BODY,
        *,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Json:
        """Sends one request and returns the decoded JSON body (``{}`` for an empty body).

        Raises the :class:`svc.SvcError` subclass of the node's error code for a non-2xx answer
        and :class:`svc.ConnectionError` when the node cannot be reached.
        """
        url = self.url(path, query)
        h = self.headers()
        data = None
        if body is not _NO_BODY:
            data = json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        req = urllib.request.Request(url, data=data, headers=h, method=method.upper())
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                status = resp.status
                raw = resp.read()
                resp_headers = dict(resp.headers.items())
        except urllib.error.HTTPError as e:
            try:
                raw = e.read() or b""
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                e.close()
            resp_headers = dict(e.headers.items()) if e.headers is not None else {}
            err = error_from_response(e.code, raw, e.headers if e.headers is not None else {})
            self._local.last = Response(method.upper(), url, e.code, resp_headers, err.body)
            raise err from None
        except urllib.error.URLError as e:
            raise _errors.ConnectionError(
                "cannot reach %s: %s" % (self.base_url, e.reason),
                details={"url": url, "reason": str(e.reason)},
            ) from e
        except (OSError, http.client.HTTPException) as e:
            raise _errors.ConnectionError(
                "cannot reach %s: %s" % (self.base_url, e or type(e).__name__),
                details={"url": url, "reason": str(e) or type(e).__name__},
            ) from e
        decoded = _decode(raw, status)
        self._local.last = Response(method.upper(), url, status, resp_headers, decoded)
        return decoded

    # ---- core group /api/v1/functions -----------------------------------------------------

    def create(
        self,
        function_name: str,
        source_code: str,
        signature: str,
        language: str,
        description: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        manifest: Optional[Mapping[str, Any]] = None,
        lockfile: Optional[Mapping[str, Any]] = None,
        **extra: Any,
    ) -> Dict[str, Any]:
        """POST /api/v1/functions/create → ``{rufid, rufid_short, version, content_digest,
        import_statement, share_url, api_endpoint, created}``. Extra keyword arguments are sent
        as additional body fields."""
        body: Dict[str, Any] = {
            "function_name": function_name,
            "source_code": source_code,
            "signature": signature,
            "language": language,
        }
        _put(body, "description", description)
        _put(body, "tags", None if tags is None else list(tags))
        _put(body, "manifest", None if manifest is None else dict(manifest))
        _put(body, "lockfile", None if lockfile is None else dict(lockfile))
        for key, value in extra.items():
            _put(body, key, value)
        return self.request("POST", "/api/v1/functions/create", body)

    def resolve(self, rufid: str, version: Union[str, int, None] = None) -> Dict[str, Any]:
        """POST /api/v1/functions/resolve → ``{function_id, rufid, version, accessible, cached,
        resolution_time_ms, content_digest, function_name, signature, language, manifest, lockfile}``.
        ``version`` may be ``"v2"`` or ``2``."""
        parse_rufid(rufid)
        body: Dict[str, Any] = {"rufid": rufid}
        if version is not None:
            body["version"] = "v%d" % parse_version_label(version)
        return self.request("POST", "/api/v1/functions/resolve", body)

    def execute(self, rufid: str, arguments: Union[Mapping[str, Any], Sequence[Any], None] = None) -> Dict[str, Any]:
        """POST /api/v1/functions/{rufid}/execute with ``{arguments}`` (named arguments as a dict,
        or positional ones as a list) → ``{result, execution_time_ms, status, execution_id}``."""
        return self.request("POST", "/api/v1/functions/%s/execute" % _rufid_segment(rufid),
                            {"arguments": _arguments(arguments)})

    def get_function(self, rufid: str) -> Dict[str, Any]:
        """GET /api/v1/functions/{rufid}: the function's metadata."""
        return self.request("GET", "/api/v1/functions/%s" % _rufid_segment(rufid))

    def list_functions(
        self,
        search: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        limit: int = 20,
        offset: int = 0,
    ) -> Dict[str, Any]:
        """GET /api/v1/functions?search=&tags=a,b&limit=&offset= → ``{items, pagination}``."""
        return self.request("GET", "/api/v1/functions", query={
            "search": search, "tags": _tags(tags), "limit": limit, "offset": offset})

    def delete(self, rufid: str) -> Dict[str, Any]:
        """DELETE /api/v1/functions/{rufid} (a full RUFID deletes that version only)."""
        return self.request("DELETE", "/api/v1/functions/%s" % _rufid_segment(rufid))

    def function(self, rufid: str) -> "RemoteFunction":
        """A callable that executes ``rufid``: ``f(a, b)`` sends ``[a, b]``, ``f(a=1)`` sends ``{"a": 1}``."""
        parse_rufid(rufid)
        return RemoteFunction(self, rufid)

    # ---- /v1 group ------------------------------------------------------------------------

    def publish(
        self,
        name: str,
        runtime: str,
        source: Union[str, bytes],
        description: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
    ) -> Dict[str, Any]:
        """POST /v1/functions (source sent base64-encoded) → ``{rufid, rufid_short, version,
        import_statement, share_url}``."""
        raw = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        body: Dict[str, Any] = {
            "name": name,
            "runtime": runtime,
            "source": base64.b64encode(raw).decode("ascii"),
        }
        _put(body, "description", description)
        _put(body, "tags", None if tags is None else list(tags))
        return self.request("POST", "/v1/functions", body)

    def execute_async(self, rufid: str, input: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:  # noqa: A002
        """POST /v1/functions/{rufid}/executions with ``input`` as the body → ``{execution_id, status}``."""
        return self.request("POST", "/v1/functions/%s/executions" % _rufid_segment(rufid),
                            {} if input is None else input)

    def get_execution(self, execution_id: str) -> Dict[str, Any]:
        """GET /v1/executions/{id}: the execution record."""
        return self.request("GET", "/v1/executions/%s" % _segment(execution_id))

    def execution_logs(self, execution_id: str) -> Dict[str, Any]:
        """GET /v1/executions/{id}/logs."""
        return self.request("GET", "/v1/executions/%s/logs" % _segment(execution_id))

    def wait_execution(self, execution_id: str, timeout: float = 30, interval: float = 0.1) -> Dict[str, Any]:
        """Polls :meth:`get_execution` until the status is no longer ``queued``/``running`` and
        returns that record. Raises :class:`WaitTimeoutError` after ``timeout`` seconds."""
        deadline = time.monotonic() + max(0.0, float(timeout))
        delay = max(0.01, float(interval))
        while True:
            record = self.get_execution(execution_id)
            status = record.get("status") if isinstance(record, dict) else None
            if status not in PENDING_STATES:
                return record
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(
                    "execution %s still %s after %ss" % (execution_id, status, timeout),
                    details={"execution_id": execution_id, "status": status},
                )
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 1.0)

    def search(
        self,
        q: str,
        language: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        limit: int = 20,
        offset: int = 0,
    ) -> Dict[str, Any]:
        """GET /v1/marketplace/functions/search → ``{items, pagination, aggregations}``."""
        return self.request("GET", "/v1/marketplace/functions/search", query={
            "q": q, "language": language, "tags": _tags(tags), "limit": limit, "offset": offset})

    def telemetry(self, rufid: str, window: str = "15m") -> Dict[str, Any]:
        """GET /v1/telemetry/functions/{rufid}?window= → ``{rufid, window, executions, latency_ms,
        error_rate, cost}``."""
        return self.request("GET", "/v1/telemetry/functions/%s" % _rufid_segment(rufid),
                            query={"window": window})

    # ---- native / test-mode group ---------------------------------------------------------

    def create_api_key(self, name: str, scopes: Iterable[str], expires_days: Optional[int] = None) -> Dict[str, Any]:
        """POST /api/v1/auth/v2/api-keys (the client's token must be an admin key) →
        ``{api_key, key_id, name, tenant_id, scopes, expires_at}``. The key value is shown only once."""
        body: Dict[str, Any] = {"name": name, "scopes": list(scopes)}
        _put(body, "expires_days", expires_days)
        return self.request("POST", "/api/v1/auth/v2/api-keys", body)

    def list_api_keys(self) -> List[Dict[str, Any]]:
        """GET /api/v1/auth/v2/api-keys (admin) → the tenant's keys, without secrets:
        ``[{key_id, name, tenant_id, scopes, created_at, created_by, expires_at}]``."""
        answer = self.request("GET", "/api/v1/auth/v2/api-keys")
        return list(answer.get("items", [])) if isinstance(answer, dict) else []

    def revoke_api_key(self, key_id: str) -> Dict[str, Any]:
        """DELETE /api/v1/auth/v2/api-keys/{key_id} (admin) → ``{key_id, revoked_at}``; the key is
        refused (401) from then on."""
        return self.request("DELETE", "/api/v1/auth/v2/api-keys/%s" % _segment(key_id))

    def execute_native(
        self,
        rufid: str,
        input_data: Optional[Mapping[str, Any]] = None,
        function_name: Optional[str] = None,
        namespace: Optional[str] = None,
        source_code: Optional[str] = None,
    ) -> Dict[str, Any]:
        """POST /api/v1/execution/execute (native test mode) → ``{execution_id, ...timing}``."""
        body: Dict[str, Any] = {"rufid": rufid, "input_data": {} if input_data is None else dict(input_data)}
        _put(body, "function_name", function_name)
        _put(body, "namespace", namespace)
        _put(body, "source_code", source_code)
        return self.request("POST", "/api/v1/execution/execute", body)


class RemoteFunction:
    """A function stored on a node, callable like a local one.

    ``f(2, 3)`` executes it with the positional arguments ``[2, 3]``; ``f(a=2, b=3)`` with the
    named arguments ``{"a": 2, "b": 3}``; it returns the execution's ``result``. Mixing both
    raises TypeError. A failed run raises the node's error (1004, 1007, ...).
    """

    def __init__(
        self,
        client: Client,
        rufid: str,
        *,
        function_name: Optional[str] = None,
        signature: Optional[str] = None,
        language: Optional[str] = None,
        description: Optional[str] = None,
        resolution: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.client = client
        self.rufid = rufid
        self.function_name = function_name
        self.signature = signature
        self.language = language
        self.resolution: Dict[str, Any] = dict(resolution or {})
        self.full_rufid = self.resolution.get("rufid")
        self.version = self.resolution.get("version")
        self.__name__ = function_name or rufid
        self.__qualname__ = self.__name__
        self.__module__ = "svc.rufid"
        header = "%s%s" % (self.__name__, signature or "(...)")
        where = "svc function %s%s" % (
            self.full_rufid or rufid, " (%s)" % language if language else "")
        self.__doc__ = "%s\n\n%s%s" % (header, where, "\n\n" + description if description else "")

    def __repr__(self) -> str:
        return "<svc function %s%s %s>" % (self.__name__, self.signature or "", self.full_rufid or self.rufid)

    def execute(self, arguments: Union[Mapping[str, Any], Sequence[Any], None] = None) -> Dict[str, Any]:
        """Runs the function and returns the whole execution response."""
        return self.client.execute(self.rufid, arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args and kwargs:
            raise TypeError("%s(): pass either positional or keyword arguments, not both" % self.__name__)
        response = self.execute(list(args) if args else dict(kwargs))
        if not isinstance(response, dict) or "result" not in response and "status" not in response:
            raise SvcError("unexpected execution response: %r" % (response,), name="BAD_RESPONSE")
        status = response.get("status", "success")
        if status == "timeout":
            raise ExecutionTimeoutError(_failure_message(response, "execution timed out"),
                                        details={"execution": response})
        if status not in ("success", None):
            raise ExecutionFailedError(_failure_message(response, "execution ended with status %r" % status),
                                       details={"execution": response})
        return response.get("result")


# ---- the default client (used by the import hook) -----------------------------------------

_default_lock = threading.Lock()
_default_client: Optional[Client] = None


def configure(
    url: Optional[str] = None,
    token: Optional[str] = None,
    namespace: Optional[str] = None,
    *,
    timeout: float = 30,
    client: Optional[Client] = None,
) -> Client:
    """Sets the default client used by ``from svc.rufid import ...`` and returns it.

    Arguments left as None fall back to ``SVC_URL``, ``SVC_TOKEN`` and ``SVC_NAMESPACE``.
    ``configure(client=c)`` installs an existing client.
    """
    global _default_client
    new = client if client is not None else Client(url, token, namespace, timeout)
    with _default_lock:
        _default_client = new
    return new


def get_client() -> Client:
    """The client set by :func:`configure`, else a client built from the environment now."""
    with _default_lock:
        current = _default_client
    return current if current is not None else Client()


def _reset_default_client() -> None:
    """Forget :func:`configure` (tests)."""
    global _default_client
    with _default_lock:
        _default_client = None


# ---- helpers --------------------------------------------------------------------------------


def _put(body: Dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def _segment(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("an identifier must be a non-empty string, got %r" % (value,))
    return urllib.parse.quote(value, safe="")


def _rufid_segment(rufid: str) -> str:
    """A RUFID (short or full form, validated: 1001 otherwise) as a path segment."""
    parse_rufid(rufid)
    return urllib.parse.quote(rufid, safe=":")


def _tags(tags: Optional[Iterable[str]]) -> Optional[str]:
    if tags is None:
        return None
    if isinstance(tags, str):
        return tags
    return ",".join(tags)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _arguments(arguments: Union[Mapping[str, Any], Sequence[Any], None]) -> Any:
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, (list, tuple)):
        return list(arguments)
    raise TypeError("arguments must be a dict of named arguments or a list, got %s" % type(arguments).__name__)


def _decode(raw: bytes, status: int) -> Json:
    if not raw or not raw.strip():
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise SvcError("the node answered HTTP %d with a body that is not JSON: %r" % (status, raw[:200]),
                       name="BAD_RESPONSE", http_status=status) from None


def _failure_message(response: Mapping[str, Any], fallback: str) -> str:
    error = response.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return fallback
