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
import warnings
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import errors as _errors
from .errors import (
    ExecutionFailedError,
    ExecutionTimeoutError,
    SvcError,
    error_from_response,
)
from ._fields import execution_record_fields, with_rufid_forms, with_rufid_forms_in
from .events import Subscription, open_subscription
from .rufid_algo import parse_rufid, parse_version_label

__all__ = [
    "DEFAULT_URL",
    "PROTOCOL_VERSION",
    "Client",
    "RemoteFunction",
    "Response",
    "WaitTimeoutError",
    "configure",
    "get_client",
]

__version__ = "0.1.0"

#: The svc protocol version this client speaks (service-spec §9); a node states its own in
#: ``node_info()["protocol_version"]``.
PROTOCOL_VERSION = "2.0.0"

#: Used when neither ``url`` nor the environment variable ``SVC_URL`` is given.
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

    ``url`` defaults to ``$SVC_URL`` (else :data:`DEFAULT_URL`), ``token`` to ``$SVC_TOKEN`` and
    ``namespace`` to ``$SVC_NAMESPACE``. The token is sent as ``Authorization: Bearer <token>``
    and the namespace as ``X-Svc-Namespace``. ``timeout`` is the per-request socket timeout in
    seconds. Requests to a loopback address never go through an HTTP proxy; other requests honour
    the usual ``*_proxy`` environment variables.

    Every method returns the decoded JSON answer (plain dicts and lists) or raises an
    :class:`svc.SvcError` subclass chosen by the node's error code.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        namespace: Optional[str] = None,
        timeout: float = 30,
        *,
        headers: Optional[Mapping[str, str]] = None,
        base_url: Optional[str] = None,
    ) -> None:
        if base_url is not None:
            warnings.warn("svc.Client(base_url=...) is deprecated: use svc.Client(url=...)", DeprecationWarning,
                          stacklevel=2)
            if url is not None and url != base_url:
                raise TypeError("give url or base_url (deprecated), not both")
            url = base_url
        url = url if url is not None else (_env("SVC_URL") or DEFAULT_URL)
        url = url.strip().rstrip("/")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("url must be an http(s) URL, got %r" % url)
        #: the node's base URL (``SVC_URL``), without a trailing slash
        self.url = url
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
        return "Client(url=%r, namespace=%r, token=%s)" % (
            self.url, self.namespace, "set" if self.token else "None")

    @property
    def base_url(self) -> str:
        """Deprecated: the old name of :attr:`url`, kept one release."""
        warnings.warn("Client.base_url is deprecated: use Client.url", DeprecationWarning, stacklevel=2)
        return self.url

    def with_options(self, **options: Any) -> "Client":
        """A copy of this client with other options (``url``, ``token``, ``namespace``, ``timeout``,
        ``headers``); this client is unchanged."""
        current = {"url": self.url, "token": self.token, "namespace": self.namespace, "timeout": self.timeout,
                   "headers": self.extra_headers}
        current.update(options)
        return Client(**current)

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

    def url_of(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        """The absolute URL of ``path`` (with ``query`` encoded; None and empty values left out)."""
        if not path.startswith("/"):
            path = "/" + path
        url = self.url + path
        if query:
            # an empty value is refused by the node (never read as "absent"): left out like None
            items = [(k, _query_value(v)) for k, v in query.items() if v is not None and _query_value(v).strip() != ""]
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
        ok_statuses: Sequence[int] = (),
    ) -> Json:
        """Sends one request and returns the decoded JSON body (``{}`` for an empty body).

        Raises the :class:`svc.SvcError` subclass of the node's error code for a non-2xx answer
        (except ``ok_statuses``, whose body is returned) and :class:`svc.SvcConnectionError` when
        the node cannot be reached.
        """
        url = self.url_of(path, query)
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
            if e.code in ok_statuses:
                decoded = _decode(raw, e.code)
                self._local.last = Response(method.upper(), url, e.code, resp_headers, decoded)
                return decoded
            err = error_from_response(e.code, raw, e.headers if e.headers is not None else {})
            self._local.last = Response(method.upper(), url, e.code, resp_headers, err.body)
            raise err from None
        except urllib.error.URLError as e:
            raise _errors.SvcConnectionError(
                "cannot reach %s: %s" % (self.url, e.reason),
                details={"url": url, "reason": str(e.reason)},
            ) from e
        except (OSError, http.client.HTTPException) as e:
            raise _errors.SvcConnectionError(
                "cannot reach %s: %s" % (self.url, e or type(e).__name__),
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
        body = _definition(function_name, source_code, signature, language, description, tags, manifest, lockfile, extra)
        return with_rufid_forms(self.request("POST", "/api/v1/functions/create", body))

    def resolve(self, rufid: str, version: Union[str, int, None] = None) -> Dict[str, Any]:
        """POST /api/v1/functions/resolve → ``{function_id, rufid, version, accessible, cached,
        resolution_time_ms, content_digest, function_name, signature, language, manifest, lockfile}``.
        ``version`` may be ``"v2"`` or ``2``."""
        parse_rufid(rufid)
        body: Dict[str, Any] = {"rufid": rufid}
        if version is not None:
            body["version"] = _version(version)
        return with_rufid_forms(self.request("POST", "/api/v1/functions/resolve", body))

    def execute(
        self,
        rufid: str,
        arguments: Union[Mapping[str, Any], Sequence[Any], None] = None,
        version: Union[str, int, None] = None,
    ) -> Dict[str, Any]:
        """POST /api/v1/functions/{rufid}/execute with ``{arguments}`` (named arguments as a dict,
        or positional ones as a list) and optionally ``version`` (``"v2"`` or ``2``; default: the
        newest live version of the hash) → ``{result, execution_time_ms, status, execution_id,
        rufid_short, full_rufid}`` (older nodes send neither name)."""
        body: Dict[str, Any] = {"arguments": _arguments(arguments)}
        if version is not None:
            body["version"] = _version(version)
        return self.request("POST", "/api/v1/functions/%s/execute" % _rufid_segment(rufid), body)

    def get_function(self, rufid: str, version: Union[str, int, None] = None) -> Dict[str, Any]:
        """GET /api/v1/functions/{rufid}: the function's metadata with usage ``metrics``."""
        return with_rufid_forms(self.request("GET", "/api/v1/functions/%s" % _rufid_segment(rufid),
                                             query={"version": None if version is None else _version(version)}))

    def get_function_source(self, rufid: str, version: Union[str, int, None] = None) -> Dict[str, Any]:
        """GET /api/v1/functions/{rufid}/source → ``{rufid, rufid_short, full_rufid, version,
        function_name, language, signature, content_digest, source_code, imports}``: the source of
        a version (the newest live one without ``version``) and each client's import statement."""
        return with_rufid_forms(self.request("GET", "/api/v1/functions/%s/source" % _rufid_segment(rufid),
                                             query={"version": None if version is None else _version(version)}))

    def list_functions(
        self,
        search: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        limit: int = 20,
        offset: int = 0,
    ) -> Dict[str, Any]:
        """GET /api/v1/functions?search=&tags=a,b&limit=&offset= → ``{items, pagination}``."""
        return with_rufid_forms_in(self.request("GET", "/api/v1/functions", query={
            "search": search, "tags": _tags(tags), "limit": limit, "offset": offset}), "items")

    def delete_function(self, rufid: str, version: Union[str, int, None] = None) -> Dict[str, Any]:
        """DELETE /api/v1/functions/{rufid} → ``{deleted}``: tombstones the version a full RUFID (or
        ``version``) names, else every live version of the hash. A version number is never reused."""
        return self.request("DELETE", "/api/v1/functions/%s" % _rufid_segment(rufid),
                            query={"version": None if version is None else _version(version)})

    def delete(self, rufid: str) -> Dict[str, Any]:
        """Deprecated: the old name of :meth:`delete_function`, kept one release."""
        warnings.warn("Client.delete is deprecated: use Client.delete_function", DeprecationWarning, stacklevel=2)
        return self.delete_function(rufid)

    def function(self, rufid: str) -> "RemoteFunction":
        """A callable that executes ``rufid`` (nothing is sent until it is called): ``f(a, b)``
        sends ``[a, b]``, ``f(a=1)`` sends ``{"a": 1}``."""
        parse_rufid(rufid)
        return RemoteFunction(self, rufid)

    def import_function(self, rufid: str) -> "RemoteFunction":
        """Resolves ``rufid`` on the node, then returns its callable (what ``from svc.rufid import``
        gives). An unknown RUFID raises :class:`svc.RufidNotFoundError` whose message names it."""
        parse_rufid(rufid)
        try:
            resolution = self.resolve(rufid)
        except _errors.RufidNotFoundError as e:
            raise _errors.RufidNotFoundError(
                "RUFID %s not found on %s" % (rufid, self.url), details=dict(e.details, rufid=rufid),
                http_status=e.http_status, body=e.body) from e
        return RemoteFunction.of_resolution(self, rufid, resolution)

    # ---- branches, versions, export -------------------------------------------------------

    def deploy(
        self,
        function_name: str,
        source_code: str,
        signature: str,
        language: str,
        branch: str = "main",
        branch_key: Optional[str] = None,
        description: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        manifest: Optional[Mapping[str, Any]] = None,
        lockfile: Optional[Mapping[str, Any]] = None,
        **extra: Any,
    ) -> Dict[str, Any]:
        """POST /api/v1/functions/deploy: publishes the function (as :meth:`create`) and points
        ``branch`` at the version. The first deploy to a branch creates it and answers its
        ``branch_key`` once; moving it later needs that key (PermissionDeniedError otherwise)."""
        body = _definition(function_name, source_code, signature, language, description, tags, manifest, lockfile,
                           dict(extra, branch=branch, branch_key=branch_key))
        return with_rufid_forms_in(with_rufid_forms(self.request("POST", "/api/v1/functions/deploy", body)), "head")

    def invoke(
        self,
        function_name: str,
        branch: str = "main",
        arguments: Union[Mapping[str, Any], Sequence[Any], None] = None,
    ) -> Dict[str, Any]:
        """POST /api/v1/functions/branches/{branch}/invoke: runs the version the head of ``branch``
        points at → ``{result, execution_time_ms, status, execution_id, rufid, version, branch, function_name}``."""
        return with_rufid_forms(self.request("POST", "/api/v1/functions/branches/%s/invoke" % _segment(branch),
                                             {"function_name": function_name, "arguments": _arguments(arguments)}))

    def list_branches(self, function_name: Optional[str] = None) -> List[Dict[str, Any]]:
        """GET /api/v1/functions/branches?function_name= → the tenant's branch heads (of one function when named)."""
        answer = with_rufid_forms_in(self.request("GET", "/api/v1/functions/branches",
                                                  query={"function_name": function_name}), "items")
        return list(answer.get("items", [])) if isinstance(answer, dict) else []

    def list_versions(self, rufid: str) -> Dict[str, Any]:
        """GET /api/v1/functions/{rufid}/versions → ``{function_name, versions, heads}``: the version
        ledger of the RUFID's lineage with each version's manifest and lockfile snapshot."""
        return with_rufid_forms_in(self.request("GET", "/api/v1/functions/%s/versions" % _rufid_segment(rufid)),
                                   "versions", "heads")

    def export_function(self, rufid: str, version: Union[str, int, None] = None) -> Dict[str, Any]:
        """GET /api/v1/functions/{rufid}/export → ``{rufid, version, function_name, manifest,
        lockfile, manifest_text, lockfile_text}`` (the texts as they were sent, or None)."""
        return with_rufid_forms(self.request("GET", "/api/v1/functions/%s/export" % _rufid_segment(rufid),
                                             query={"version": None if version is None else _version(version)}))

    # ---- /v1 group ------------------------------------------------------------------------

    def publish(
        self,
        name: str,
        runtime: str,
        source: Union[str, bytes],
        description: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        signature: Optional[str] = None,
        manifest: Optional[Mapping[str, Any]] = None,
        lockfile: Optional[Mapping[str, Any]] = None,
    ) -> Dict[str, Any]:
        """POST /v1/functions (source sent base64-encoded) → ``{rufid, rufid_short, full_rufid,
        version, import_statement, share_url}``. Without ``signature`` the node derives it."""
        raw = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        body: Dict[str, Any] = {
            "name": name,
            "runtime": runtime,
            "source": base64.b64encode(raw).decode("ascii"),
        }
        _put(body, "description", description)
        _put(body, "tags", None if tags is None else list(tags))
        _put(body, "signature", signature)
        _put(body, "manifest", None if manifest is None else dict(manifest))
        _put(body, "lockfile", None if lockfile is None else dict(lockfile))
        return with_rufid_forms(self.request("POST", "/v1/functions", body))

    def execute_async(self, rufid: str, input: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:  # noqa: A002
        """POST /v1/functions/{rufid}/executions with ``input`` as the body → ``{execution_id,
        rufid_short, full_rufid, status}`` (older nodes send neither name)."""
        return self.request("POST", "/v1/functions/%s/executions" % _rufid_segment(rufid),
                            {} if input is None else input)

    def get_execution(self, execution_id: str) -> Dict[str, Any]:
        """GET /v1/executions/{id}: the execution record (``tenant_id``, ``rufid_short`` and
        ``full_rufid`` always present)."""
        return execution_record_fields(self.request("GET", "/v1/executions/%s" % _segment(execution_id)))

    def execution_logs(self, execution_id: str) -> Dict[str, Any]:
        """GET /v1/executions/{id}/logs → ``{execution_id, rufid_short, full_rufid, status, logs}``
        (older nodes send neither name)."""
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
        author: Optional[str] = None,
    ) -> Dict[str, Any]:
        """GET /v1/marketplace/functions/search → ``{items, pagination, aggregations}``; ``author``
        keeps the functions of exactly that author (the publishing user, e.g. ``key:admin``)."""
        return with_rufid_forms_in(self.request("GET", "/v1/marketplace/functions/search", query={
            "q": q, "language": language, "author": author, "tags": _tags(tags), "limit": limit, "offset": offset}), "items")

    def telemetry(self, rufid: str, window: str = "15m") -> Dict[str, Any]:
        """GET /v1/telemetry/functions/{rufid}?window= → ``{rufid, rufid_short, full_rufid, window,
        executions, latency_ms, error_rate, cost}``."""
        return with_rufid_forms(self.request("GET", "/v1/telemetry/functions/%s" % _rufid_segment(rufid),
                                             query={"window": window}))

    def telemetry_series(
        self,
        rufid: str,
        window: str = "1h",
        buckets: int = 30,
        version: Union[str, int, None] = None,
    ) -> Dict[str, Any]:
        """GET /v1/telemetry/functions/{rufid}/series → ``{rufid, rufid_short, full_rufid, window,
        bucket_ms, buckets}``: the window (at most 30 days) cut into ``buckets`` (1–240) of
        ``{start, executions, errors, error_rate, latency_ms}``, oldest first; ``version`` keeps one version."""
        return with_rufid_forms(self.request("GET", "/v1/telemetry/functions/%s/series" % _rufid_segment(rufid), query={
            "window": window, "buckets": buckets, "version": None if version is None else _version(version)}))

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
        return with_rufid_forms(self.request("POST", "/api/v1/execution/execute", body))

    # ---- audit, federation reads, probes ----------------------------------------------------

    def whoami(self) -> Dict[str, Any]:
        """GET /api/v1/auth/whoami → ``{tenant_id, user, method, key_id, permissions, admin}``: who
        the client's credential is and what it may do (PermissionDeniedError, 401, without one)."""
        return self.request("GET", "/api/v1/auth/whoami")

    def list_audit_entries(self, **query: Any) -> Dict[str, Any]:
        """GET /api/v1/audit (admin) → ``{items, next_cursor}``. Filters: ``from_`` (or ``**{"from": …}``),
        ``to``, ``tenant``, ``operation``, ``rufid``, ``limit`` (≤ 1000), ``cursor``."""
        if "from_" in query:
            query["from"] = query.pop("from_")
        return self.request("GET", "/api/v1/audit", query=query)

    def list_nodes(self) -> Dict[str, Any]:
        """GET /api/v1/federation/nodes → ``{node_id, nodes}`` (ValidationFailedError, HTTP 409 federation_disabled, without federation)."""
        return self.request("GET", "/api/v1/federation/nodes")

    def discover(self, rufid: str) -> Dict[str, Any]:
        """GET /api/v1/federation/discover/{rufid}: the nodes that provide a RUFID."""
        return self.request("GET", "/api/v1/federation/discover/%s" % _rufid_segment(rufid))

    def catalog_digest(self) -> Dict[str, Any]:
        """GET /api/v1/federation/catalog/digest → ``{digest, entries, vector}``, to compare nodes."""
        return self.request("GET", "/api/v1/federation/catalog/digest")

    def list_conflicts(self) -> Dict[str, Any]:
        """GET /api/v1/federation/conflicts → ``{items}``: recorded catalog conflicts."""
        return self.request("GET", "/api/v1/federation/conflicts")

    def federation_members(self) -> Dict[str, Any]:
        """GET /api/v1/federation/members → ``{node_id, digest, converged, members}``: every known
        node with its certificate, when it was last heard from and its catalog digest beside this
        node's (ValidationFailedError, HTTP 409 federation_disabled, without federation)."""
        return self.request("GET", "/api/v1/federation/members")

    def health(self) -> Dict[str, Any]:
        """GET /healthz → ``{status, pid, uptime_s}``."""
        return self.request("GET", "/healthz")

    def readiness(self) -> Dict[str, Any]:
        """GET /readyz → ``{status}``: ``ready``, or ``starting``/``draining`` (answered 503, returned)."""
        return self.request("GET", "/readyz", ok_statuses=(503,))

    def node_info(self) -> Dict[str, Any]:
        """GET /api/v1/node/info (no credentials needed) → ``{name, version, protocol_version,
        status, ready, started_at, uptime_s, auth_mode, sandbox, federation}``."""
        return self.request("GET", "/api/v1/node/info")

    # ---- events -----------------------------------------------------------------------------

    def subscribe_executions(
        self,
        rufid: Optional[str] = None,
        *,
        on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
    ) -> Subscription:
        """Subscribes to finished executions of the caller's tenant (of ``rufid`` only when given)
        over the node's ``/ws`` socket. Returns once the node confirmed the subscription, so every
        execution that finishes afterwards is delivered: iterate it, call ``next_event(timeout)``,
        or pass ``on_event``; ``close()`` it (or use ``with``)."""
        if rufid is not None:
            parse_rufid(rufid)
        return open_subscription(self.url, self.headers(), "executions", rufid, timeout=self.timeout, on_event=on_event)

    def subscribe_system(self, *, on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Subscription:
        """Subscribes to system events (function created/deleted, node started/stopping, peers);
        the first event is the node's lifecycle event (``node.started``)."""
        return open_subscription(self.url, self.headers(), "system", None, timeout=self.timeout, on_event=on_event)


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

    @classmethod
    def of_resolution(cls, client: Client, rufid: str, resolution: Any) -> "RemoteFunction":
        """The callable of a resolved RUFID (named, documented from the resolution)."""
        r = resolution if isinstance(resolution, dict) else {}
        text = lambda key: r.get(key) if isinstance(r.get(key), str) and r.get(key) else None  # noqa: E731
        return cls(client, rufid, function_name=text("function_name"), signature=text("signature"),
                   language=text("language"), description=text("description"), resolution=r)

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


def _definition(function_name: str, source_code: str, signature: str, language: str, description: Optional[str],
                tags: Optional[Iterable[str]], manifest: Optional[Mapping[str, Any]], lockfile: Optional[Mapping[str, Any]],
                extra: Mapping[str, Any]) -> Dict[str, Any]:
    """The body of create and deploy: the definition, its optional fields, then ``extra`` (None left out)."""
    body: Dict[str, Any] = {"function_name": function_name, "source_code": source_code,
                            "signature": signature, "language": language}
    _put(body, "description", description)
    _put(body, "tags", None if tags is None else list(tags))
    _put(body, "manifest", None if manifest is None else dict(manifest))
    _put(body, "lockfile", None if lockfile is None else dict(lockfile))
    for key, value in extra.items():
        _put(body, key, value)
    return body


def _version(value: Union[str, int]) -> str:
    """A version label ``v<n>`` from ``"v2"`` or ``2`` (1001 InvalidRufidError otherwise)."""
    return "v%d" % parse_version_label(value)


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
        tags = tags.split(",")
    # blank items are refused by the node: left out
    return ",".join(t for t in tags if t.strip() != "")


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
