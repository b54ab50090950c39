"""svc.Client against a fake node: paths, methods, headers, bodies and error mapping."""

from __future__ import annotations

import base64
import email.utils
import socket
import threading
import time

import pytest

import svc
from conftest import error_body

SHORT = "tUwBWSc8Nozv"
FULL = "rufid:%s:v1:acme" % SHORT


def test_create_sends_contract_body_and_headers(node, client):
    created = {"rufid": FULL, "rufid_short": SHORT, "version": "v1", "content_digest": "ab" * 32,
               "import_statement": "from svc.rufid import %s as add" % SHORT,
               "share_url": "http://share/%s" % SHORT, "api_endpoint": "/api/v1/functions/%s/execute" % SHORT,
               "created": True}
    node.reply("POST", "/api/v1/functions/create", 201, created)
    manifest = {"schemaVersion": "1.0", "name": "add"}
    out = client.create("add", "def add(a, b):\n    return a + b\n", "(a, b)", "python",
                        description="adds", tags=["math", "demo"], manifest=manifest)
    assert out == dict(created, full_rufid=FULL)  # a node that does not send full_rufid yet: derived
    req = node.last
    assert req.method == "POST" and req.path == "/api/v1/functions/create"
    assert req.headers["authorization"] == "Bearer tok-123"
    assert req.headers["x-svc-namespace"] == "team-a"
    assert req.headers["content-type"] == "application/json"
    assert req.body == {"function_name": "add", "source_code": "def add(a, b):\n    return a + b\n",
                        "signature": "(a, b)", "language": "python", "description": "adds",
                        "tags": ["math", "demo"], "manifest": manifest}
    assert client.last_response.status == 201


def test_create_omits_unset_optionals_and_passes_extras(node, client):
    node.reply("POST", "/api/v1/functions/create", 201, {"rufid": FULL})
    client.create("f", "x", "()", "plain", limits={"timeout_ms": 100})
    assert node.last.body == {"function_name": "f", "source_code": "x", "signature": "()", "language": "plain",
                              "limits": {"timeout_ms": 100}}


def test_no_token_no_namespace_sends_neither_header(node):
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 200, {"rufid": SHORT})
    svc.Client(node.url).get_function(SHORT)
    assert "authorization" not in node.last.headers
    assert "x-svc-namespace" not in node.last.headers
    assert node.last.headers["accept"] == "application/json"


def test_environment_defaults(node, monkeypatch):
    monkeypatch.setenv("SVC_URL", node.url + "/")
    monkeypatch.setenv("SVC_TOKEN", "env-token")
    monkeypatch.setenv("SVC_NAMESPACE", "env-ns")
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 200, {"rufid": SHORT})
    c = svc.Client()
    assert c.url == node.url
    c.get_function(SHORT)
    assert node.last.headers["authorization"] == "Bearer env-token"
    assert node.last.headers["x-svc-namespace"] == "env-ns"
    # explicit arguments win over the environment
    svc.Client(node.url, token="explicit", namespace="ns2").get_function(SHORT)
    assert node.last.headers["authorization"] == "Bearer explicit"
    assert node.last.headers["x-svc-namespace"] == "ns2"


def test_default_url_without_environment():
    assert svc.Client().url == svc.DEFAULT_URL
    with pytest.raises(ValueError):
        svc.Client("ftp://example")


def test_resolve(node, client):
    resolution = {"function_id": "f-1", "rufid": FULL, "version": "v1", "accessible": True, "cached": False,
                  "resolution_time_ms": 0.4, "content_digest": "ab" * 32, "function_name": "add",
                  "signature": "(a, b)", "language": "python", "manifest": None, "lockfile": None}
    node.reply("POST", "/api/v1/functions/resolve", 200, resolution)
    assert client.resolve(SHORT) == dict(resolution, rufid_short=SHORT, full_rufid=FULL)
    assert node.last.body == {"rufid": SHORT}
    client.resolve(SHORT, version="v2")
    assert node.last.body == {"rufid": SHORT, "version": "v2"}
    client.resolve(FULL, version=3)
    assert node.last.body == {"rufid": FULL, "version": "v3"}


def test_invalid_rufid_is_refused_locally(node, client):
    for call in (lambda: client.resolve("nope"), lambda: client.execute("../admin", {}),
                 lambda: client.get_function("tUwBWSc8Nozv/x"), lambda: client.delete_function(""),
                 lambda: client.telemetry("rufid:x"), lambda: client.function("short"),
                 lambda: client.execute_async("a?b=c", {}), lambda: client.resolve(SHORT, version="2")):
        with pytest.raises(svc.InvalidRufidError) as info:
            call()
        assert info.value.code == 1001 and info.value.http_status is None
    assert node.requests == []


def test_execute_named_and_positional(node, client):
    def run(req):
        args = req.body["arguments"]
        values = list(args.values()) if isinstance(args, dict) else args
        return 200, {"result": sum(values), "execution_time_ms": 1.5, "status": "success", "execution_id": "ex-1"}, {}

    node.on("POST", "/api/v1/functions/%s/execute" % SHORT, run)
    out = client.execute(SHORT, {"a": 2, "b": 3})
    assert out == {"result": 5, "execution_time_ms": 1.5, "status": "success", "execution_id": "ex-1"}
    assert node.last.body == {"arguments": {"a": 2, "b": 3}}
    assert client.execute(SHORT, (4, 5))["result"] == 9
    assert node.last.body == {"arguments": [4, 5]}
    assert node.last.method == "POST"
    with pytest.raises(TypeError):
        client.execute(SHORT, 42)


def test_execute_full_rufid_path(node, client):
    node.reply("POST", "/api/v1/functions/%s/execute" % FULL, 200, {"result": 1, "status": "success"})
    assert client.execute(FULL, {})["result"] == 1
    assert node.last.raw_path == "/api/v1/functions/%s/execute" % FULL


def test_function_callable(node, client):
    def run(req):
        args = req.body["arguments"]
        if isinstance(args, dict):
            return 200, {"result": args["a"] * 10 + args["b"], "status": "success"}, {}
        return 200, {"result": args[0] - args[1], "status": "success"}, {}

    node.on("POST", "/api/v1/functions/%s/execute" % SHORT, run)
    f = client.function(SHORT)
    assert f.rufid == SHORT and callable(f)
    assert f(7, 2) == 5
    assert node.last.body == {"arguments": [7, 2]}
    assert f(a=7, b=2) == 72
    assert node.last.body == {"arguments": {"a": 7, "b": 2}}
    with pytest.raises(TypeError):
        f(1, b=2)


def test_function_callable_raises_on_non_success_status(node, client):
    node.reply("POST", "/api/v1/functions/%s/execute" % SHORT, 200,
               {"result": None, "status": "error", "error": {"message": "kaput"}})
    with pytest.raises(svc.ExecutionFailedError, match="kaput"):
        client.function(SHORT)()
    node.reply("POST", "/api/v1/functions/%s/execute" % SHORT, 200, {"result": None, "status": "timeout"})
    with pytest.raises(svc.ExecutionTimeoutError):
        client.function(SHORT)()


def test_get_list_delete(node, client):
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 200, {"rufid": SHORT, "full_rufid": FULL, "function_name": "add"})
    assert client.get_function(SHORT) == {"rufid": SHORT, "rufid_short": SHORT, "full_rufid": FULL, "function_name": "add"}
    assert node.last.method == "GET" and node.last.body is None

    page = {"items": [{"rufid": SHORT, "version": "v1", "tenant_id": "acme"}],
            "pagination": {"total": 1, "limit": 5, "offset": 10, "next_offset": None}}
    node.reply("GET", "/api/v1/functions", 200, page)
    listed = client.list_functions(search="ad d", tags=["math", "x"], limit=5, offset=10)
    assert listed["items"] == [{"rufid": SHORT, "rufid_short": SHORT, "full_rufid": FULL, "version": "v1", "tenant_id": "acme"}]
    assert node.last.query == {"search": ["ad d"], "tags": ["math,x"], "limit": ["5"], "offset": ["10"]}
    client.list_functions()
    assert node.last.query == {"limit": ["20"], "offset": ["0"]}

    node.reply("DELETE", "/api/v1/functions/%s" % FULL, 200, {"deleted": [FULL]})
    assert client.delete_function(FULL) == {"deleted": [FULL]}
    assert node.last.method == "DELETE"
    node.reply("DELETE", "/api/v1/functions/%s" % SHORT, 204, b"")
    assert client.delete_function(SHORT, version=2) == {}
    assert node.last.query == {"version": ["v2"]}
    with pytest.warns(DeprecationWarning, match="delete_function"):
        assert client.delete(SHORT) == {}


def test_publish_sends_base64_source(node, client):
    answer = {"rufid": FULL, "rufid_short": SHORT, "version": "v1",
              "import_statement": "from svc.rufid import %s as add" % SHORT, "share_url": "s"}
    node.reply("POST", "/v1/functions", 201, answer)
    src = "def add(a, b):\n    return a + b  # ü 😀\n"
    assert client.publish("add", "python3.11", src, description="d", tags=["t"]) == dict(answer, full_rufid=FULL)
    body = node.last.body
    assert body["name"] == "add" and body["runtime"] == "python3.11"
    assert body["description"] == "d" and body["tags"] == ["t"]
    assert base64.b64decode(body["source"]).decode("utf-8") == src
    client.publish("add", "node20", b"\x00\xff")
    assert node.last.body == {"name": "add", "runtime": "node20", "source": "AP8="}


def test_async_execution_and_logs(node, client):
    node.reply("POST", "/v1/functions/%s/executions" % SHORT, 202, {"execution_id": "ex/1", "status": "queued"})
    assert client.execute_async(SHORT, {"x": 1}) == {"execution_id": "ex/1", "status": "queued"}
    assert node.last.body == {"x": 1}
    assert client.last_response.status == 202

    node.reply("GET", "/v1/executions/ex%2F1", 200, {"execution_id": "ex/1", "status": "success", "result": 3})
    assert client.get_execution("ex/1")["result"] == 3
    assert node.last.raw_path == "/v1/executions/ex%2F1"
    node.reply("GET", "/v1/executions/ex-2/logs", 200, {"logs": [{"level": "info", "message": "hi"}]})
    assert client.execution_logs("ex-2")["logs"][0]["message"] == "hi"


def test_wait_execution_polls_until_done(node, client):
    states = iter(["queued", "running", "running", "success"])

    def record(req):
        return 200, {"execution_id": "ex-3", "status": next(states), "result": 42}, {}

    node.on("GET", "/v1/executions/ex-3", record)
    done = client.wait_execution("ex-3", timeout=10, interval=0.01)
    assert done["status"] == "success" and done["result"] == 42
    assert len([r for r in node.requests if r.path == "/v1/executions/ex-3"]) == 4


def test_wait_execution_is_bounded(node, client):
    node.reply("GET", "/v1/executions/ex-4", 200, {"execution_id": "ex-4", "status": "running"})
    started = time.monotonic()
    with pytest.raises(svc.WaitTimeoutError) as info:
        client.wait_execution("ex-4", timeout=0.3, interval=0.02)
    assert time.monotonic() - started < 5
    assert info.value.details == {"execution_id": "ex-4", "status": "running"}
    assert isinstance(info.value, svc.SvcError) and info.value.code is None


def test_search_and_telemetry(node, client):
    result = {"items": [], "pagination": {"total": 0, "limit": 3, "offset": 0, "next_offset": None},
              "aggregations": {"language": {}, "tags": {}, "author": {}}}
    node.reply("GET", "/v1/marketplace/functions/search", 200, result)
    assert client.search("add numbers", language="python", tags=["math"], limit=3) == result
    assert node.last.query == {"q": ["add numbers"], "language": ["python"], "tags": ["math"],
                               "limit": ["3"], "offset": ["0"]}
    client.search("", author="key:bob")
    assert node.last.query["author"] == ["key:bob"]
    # an older node's telemetry names the function by `rufid` only: rufid_short is derived from it
    tel = {"rufid": SHORT, "window": "5m", "executions": 2, "latency_ms": {"p50": 1, "p95": 2, "p99": 2, "max": 3},
           "error_rate": 0.5, "cost": {"cpu_ms_total": 4, "cpu_ms_avg": 2, "memory_bytes_avg": 1024}}
    node.reply("GET", "/v1/telemetry/functions/%s" % SHORT, 200, tel)
    assert client.telemetry(SHORT, window="5m") == dict(tel, rufid_short=SHORT)
    # a current node sends both forms: read as sent
    full = "rufid:%s:v2:acme" % SHORT
    node.reply("GET", "/v1/telemetry/functions/%s" % SHORT, 200, dict(tel, rufid_short=SHORT, full_rufid=full))
    assert client.telemetry(SHORT, window="5m")["full_rufid"] == full
    assert node.last.query == {"window": ["5m"]}
    client.telemetry(SHORT)
    assert node.last.query == {"window": ["15m"]}


def test_create_api_key(node):
    admin = svc.Client(node.url, token="admin-key")
    minted = {"api_key": "svc_live_x", "key_id": "k1", "name": "ci", "scopes": ["functions:execute"],
              "expires_at": "2030-01-01T00:00:00Z"}
    node.reply("POST", "/api/v1/auth/v2/api-keys", 201, minted)
    assert admin.create_api_key("ci", ["functions:execute"], expires_days=30) == minted
    assert node.last.headers["authorization"] == "Bearer admin-key"
    assert node.last.body == {"name": "ci", "scopes": ["functions:execute"], "expires_days": 30}
    admin.create_api_key("ci2", ("admin",))
    assert node.last.body == {"name": "ci2", "scopes": ["admin"]}


def test_list_and_revoke_api_keys(node):
    admin = svc.Client(node.url, token="admin-key")
    keys = [{"key_id": "k1", "name": "ci", "tenant_id": "acme", "scopes": ["admin"], "created_at": "t",
             "expires_at": "t2"}]
    node.reply("GET", "/api/v1/auth/v2/api-keys", 200, {"items": keys})
    node.reply("DELETE", "/api/v1/auth/v2/api-keys/k1", 200, {"key_id": "k1", "revoked_at": "t3"})
    assert admin.list_api_keys() == keys
    assert admin.revoke_api_key("k1") == {"key_id": "k1", "revoked_at": "t3"}
    assert (node.last.method, node.last.path) == ("DELETE", "/api/v1/auth/v2/api-keys/k1")
    with pytest.raises(ValueError):
        admin.revoke_api_key("")


def test_execute_native(node, client):
    node.reply("POST", "/api/v1/execution/execute", 200, {"execution_id": "n1", "execution_time_ms": 2})
    client.execute_native("rufid:" + SHORT, {"a": 1}, function_name="add", namespace="ns", source_code="src")
    assert node.last.body == {"rufid": "rufid:" + SHORT, "input_data": {"a": 1}, "function_name": "add",
                              "namespace": "ns", "source_code": "src"}


# ---- errors -------------------------------------------------------------------------------

ERRORS = [
    (1001, "INVALID_RUFID", 400, svc.InvalidRufidError),
    (1002, "RUFID_NOT_FOUND", 404, svc.RufidNotFoundError),
    (1003, "PERMISSION_DENIED", 403, svc.PermissionDeniedError),
    (1004, "EXECUTION_TIMEOUT", 408, svc.ExecutionTimeoutError),
    (1005, "RATE_LIMITED", 429, svc.RateLimitedError),
    (1006, "VALIDATION_FAILED", 422, svc.ValidationError),
    (1007, "EXECUTION_FAILED", 422, svc.ExecutionFailedError),
    (1008, "RUFID_COLLISION", 409, svc.RufidCollisionError),
    (2001, "FEDERATION_UNREACHABLE", 502, svc.FederationUnreachableError),
    (2002, "SYNC_CONFLICT", 409, svc.SyncConflictError),
    (1009, "INTERNAL_ERROR", 500, svc.InternalError),
    (1010, "SERVICE_UNAVAILABLE", 503, svc.ServiceUnavailableError),
    (1011, "NOT_FOUND", 404, svc.NotFoundError),
]


@pytest.mark.parametrize("code,name,status,cls", ERRORS, ids=[e[1] for e in ERRORS])
def test_error_codes_map_to_classes(node, client, code, name, status, cls):
    details = {"rufid": SHORT, "n": code}
    node.reply("POST", "/api/v1/functions/%s/execute" % SHORT, status, error_body(code, name, "msg %d" % code, details))
    with pytest.raises(cls) as info:
        client.execute(SHORT, {})
    err = info.value
    assert type(err) is cls and isinstance(err, svc.SvcError)
    assert err.code == code and err.name == name and err.message == "msg %d" % code
    assert err.details == details and err.http_status == status
    assert svc.error_class_for(code) is cls
    assert str(code) in str(err) and name in str(err)
    assert client.last_response.status == status


def test_unknown_code_is_plain_svc_error(node, client):
    # a code from a newer node this client does not know yet
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 500, error_body(1099, "SOMETHING_NEW", "oops"))
    with pytest.raises(svc.SvcError) as info:
        client.get_function(SHORT)
    assert type(info.value) is svc.SvcError
    assert info.value.code == 1099 and info.value.name == "SOMETHING_NEW" and info.value.http_status == 500


def test_permission_denied_401_vs_403(node, client):
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 401, error_body(1003, "PERMISSION_DENIED", "no credentials"))
    with pytest.raises(svc.PermissionDeniedError) as info:
        client.get_function(SHORT)
    assert info.value.unauthenticated is True and info.value.http_status == 401 and info.value.code == 1003
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 403, error_body(1003, "PERMISSION_DENIED", "missing rufid.read"))
    with pytest.raises(svc.PermissionDeniedError) as info:
        client.get_function(SHORT)
    assert info.value.unauthenticated is False and info.value.http_status == 403


@pytest.mark.parametrize("header,expected", [("7", 7.0), ("0", 0.0), ("2.5", 2.5), (None, None), ("soon", None)])
def test_retry_after_seconds(node, client, header, expected):
    headers = {} if header is None else {"Retry-After": header}
    node.reply("POST", "/api/v1/functions/resolve", 429, error_body(1005, "RATE_LIMITED", "slow down"), headers)
    with pytest.raises(svc.RateLimitedError) as info:
        client.resolve(SHORT)
    assert info.value.retry_after == expected and info.value.code == 1005


def test_retry_after_http_date(node, client):
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    node.reply("POST", "/api/v1/functions/resolve", 429, error_body(1005, "RATE_LIMITED"), {"Retry-After": when})
    with pytest.raises(svc.RateLimitedError) as info:
        client.resolve(SHORT)
    assert 100 <= info.value.retry_after <= 121


def test_error_without_svc_body(node, client):
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 502, b"<html>bad gateway</html>", {"Content-Type": "text/html"})
    with pytest.raises(svc.SvcError) as info:
        client.get_function(SHORT)
    assert type(info.value) is svc.SvcError and info.value.code is None and info.value.http_status == 502
    assert "bad gateway" in info.value.message
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 429, b"", {"Retry-After": "3"})
    with pytest.raises(svc.RateLimitedError) as info:
        client.get_function(SHORT)
    assert info.value.retry_after == 3.0 and info.value.http_status == 429


def test_success_with_non_json_body(node, client):
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 200, b"not json")
    with pytest.raises(svc.SvcError) as info:
        client.get_function(SHORT)
    assert info.value.http_status == 200 and info.value.name == "BAD_RESPONSE"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_connection_error():
    c = svc.Client("http://127.0.0.1:%d" % _free_port(), timeout=2)
    with pytest.raises(svc.ConnectionError) as info:
        c.get_function(SHORT)
    err = info.value
    assert isinstance(err, svc.SvcError) and err.code is None and err.http_status is None
    assert err.__cause__ is not None


def test_read_timeout_is_connection_error(node):
    release = threading.Event()

    def slow(req):
        release.wait(2)
        return 200, {"rufid": SHORT}, {}

    node.on("GET", "/api/v1/functions/%s" % SHORT, slow)
    c = svc.Client(node.url, timeout=0.2)
    try:
        with pytest.raises(svc.ConnectionError):
            c.get_function(SHORT)
    finally:
        release.set()


def test_loopback_requests_ignore_proxy_settings(node, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:%d" % _free_port())
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:%d" % _free_port())
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    node.reply("GET", "/api/v1/functions/%s" % SHORT, 200, {"rufid": SHORT})
    assert svc.Client(node.url.replace("127.0.0.1", "localhost")).get_function(SHORT) == {"rufid": SHORT, "rufid_short": SHORT}


def test_url_is_the_constructor_name_and_base_url_a_deprecated_alias(node):
    assert svc.Client(url=node.url).url == node.url
    with pytest.warns(DeprecationWarning, match="url="):
        old = svc.Client(base_url=node.url + "/")
    assert old.url == node.url
    with pytest.warns(DeprecationWarning):
        assert old.base_url == node.url
    with pytest.raises(TypeError):
        svc.Client(url="http://a", base_url="http://b")


def test_execution_record_reads_tenant_id_with_tenant_as_fallback(node, client):
    node.reply("GET", "/v1/executions/ex_1", 200, {"execution_id": "ex_1", "rufid": FULL, "version": "v1", "tenant": "acme"})
    record = client.get_execution("ex_1")
    assert record["tenant_id"] == "acme" and record["rufid_short"] == SHORT and record["full_rufid"] == FULL
    node.reply("GET", "/v1/executions/ex_2", 200, {"execution_id": "ex_2", "rufid": FULL, "tenant_id": "new", "tenant": "old"})
    assert client.get_execution("ex_2")["tenant_id"] == "new"


def test_execute_sends_the_version(node, client):
    node.reply("POST", "/api/v1/functions/%s/execute" % SHORT, 200, {"result": 5, "status": "success"})
    client.execute(SHORT, [2, 3], version=2)
    assert node.last.body == {"arguments": [2, 3], "version": "v2"}
    client.execute(SHORT, {"a": 1})
    assert node.last.body == {"arguments": {"a": 1}}
    with pytest.raises(svc.InvalidRufidError):
        client.execute(SHORT, [], version="two")


def test_new_error_names_and_their_deprecated_aliases():
    assert svc.ValidationError is svc.ValidationFailedError
    assert svc.ConnectionError is svc.SvcConnectionError
    assert svc.error_class_for(1006) is svc.ValidationFailedError
