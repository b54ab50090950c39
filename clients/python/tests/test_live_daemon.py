"""Issue 8's scenario against a live daemon started by this test (native test mode).

The daemon is ``node <repo>/bin/svc-node.js start`` run from the built ``dist/``; without it these
tests FAIL (they are never skipped): run ``npm run build`` in the repository root first.

Compute a RUFID locally, create the function, check the node's RUFID equals the local one,
resolve, execute, read the execution, provoke 1001, 1002 and 1003, and import the function with
``from svc.rufid import <rufid_short> as add``. The function stored here is JavaScript; the client
and the import hook do not depend on the function's language (the README's example, in
test_readme_live.py, publishes a Python one).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import svc
import svc.client
from live_node import ADMIN_KEY

ADD = {
    "function_name": "add",
    "signature": "(a, b)",
    "language": "javascript",
    "source_code": "// adds two numbers\nfunction add(a, b) {\n  return a + b\n}\n",
}


@pytest.fixture(scope="module")
def daemon(live_node):
    return live_node


@pytest.fixture(scope="module")
def admin(daemon):
    return svc.Client(daemon.url, token=ADMIN_KEY, timeout=15)


@pytest.fixture(scope="module")
def created(admin):
    return admin.create(**ADD, tags=["math"])


def test_local_rufid_equals_the_nodes(admin, created):
    local = svc.compute_rufid(ADD["function_name"], ADD["signature"], ADD["language"], ADD["source_code"])
    assert created["rufid_short"] == local.rufid_short
    assert created["content_digest"] == local.content_digest
    assert created["rufid"] == "rufid:%s:v1:default" % local.rufid_short
    assert created["created"] is True
    assert admin.last_response.status == 201
    again = admin.create(**ADD)
    assert (again["rufid_short"], again["created"], admin.last_response.status) == (local.rufid_short, False, 200)


def test_resolve_execute_and_read_the_execution(admin, created):
    short = created["rufid_short"]
    resolved = admin.resolve(short, version="v1")
    assert resolved["rufid"] == "rufid:%s:v1:default" % short
    assert (resolved["function_name"], resolved["signature"], resolved["accessible"]) == ("add", "(a, b)", True)

    run = admin.execute(short, {"a": 2, "b": 3})
    assert (run["result"], run["status"]) == (5, "success")
    record = admin.get_execution(run["execution_id"])
    assert record["execution_id"] == run["execution_id"]
    assert (record["status"], record["result"], record["rufid"]) == ("success", 5, "rufid:%s:v1:default" % short)
    assert admin.execution_logs(run["execution_id"])["execution_id"] == run["execution_id"]
    assert admin.function(short)(20, 22) == 42


def test_async_execution_search_and_telemetry(admin, created):
    short = created["rufid_short"]
    ref = admin.execute_async(short, {"a": 2, "b": 3})
    assert admin.last_response.status == 202
    record = admin.wait_execution(ref["execution_id"], timeout=15)
    assert (record["status"], record["result"]) == ("success", 5)
    found = admin.search("add", language="javascript")
    assert short in [item["rufid"] for item in found["items"]]
    telemetry = admin.telemetry(short, "5m")
    assert telemetry["rufid"] == short and telemetry["window"] == "5m" and telemetry["executions"] >= 1


def test_1001_malformed_rufid(admin):
    # past the client's own check, so that the node answers
    with pytest.raises(svc.InvalidRufidError) as e:
        admin.request("POST", "/api/v1/functions/resolve", {"rufid": "bad-rufid!"})
    assert (e.value.code, e.value.name, e.value.http_status) == (1001, "INVALID_RUFID", 400)
    # and the client refuses it locally, without a request
    with pytest.raises(svc.InvalidRufidError) as local:
        admin.resolve("bad-rufid!")
    assert local.value.http_status is None


def test_1002_unknown_rufid(admin):
    with pytest.raises(svc.RufidNotFoundError) as e:
        admin.resolve("AAAAAAAAAAAA")
    assert (e.value.code, e.value.name, e.value.http_status) == (1002, "RUFID_NOT_FOUND", 404)
    assert e.value.details.get("rufid") == "AAAAAAAAAAAA"


def test_1003_read_only_key_and_no_token(daemon, admin, created):
    minted = admin.create_api_key("read-only", ["functions:read"], expires_days=1)
    assert minted["api_key"] and minted["scopes"] == ["functions:read"]
    reader = svc.Client(daemon.url, token=minted["api_key"], timeout=15)
    assert reader.resolve(created["rufid_short"])["rufid_short"] == created["rufid_short"]
    with pytest.raises(svc.PermissionDeniedError) as denied:
        reader.create("add2", "function add2(a, b) { return a + b }", "(a, b)", "javascript")
    assert (denied.value.code, denied.value.http_status, denied.value.unauthenticated) == (1003, 403, False)

    with pytest.raises(svc.PermissionDeniedError) as anonymous:
        svc.Client(daemon.url, token="", timeout=15).resolve(created["rufid_short"])
    assert (anonymous.value.code, anonymous.value.http_status, anonymous.value.unauthenticated) == (1003, 401, True)

    assert minted["key_id"] in [k["key_id"] for k in admin.list_api_keys()]
    assert admin.revoke_api_key(minted["key_id"])["key_id"] == minted["key_id"]
    with pytest.raises(svc.PermissionDeniedError) as revoked:
        reader.resolve(created["rufid_short"])
    assert revoked.value.unauthenticated


def test_import_hook_add_2_3_is_5(daemon, created):
    short = created["rufid_short"]
    svc.configure(url=daemon.url, token=ADMIN_KEY)
    # the statement itself, with the name known only at run time
    ns: dict = {}
    exec("from svc.rufid import %s as add" % svc.import_name(short), ns)
    assert ns["add"](2, 3) == 5
    assert ns["add"].__name__ == "add" and ns["add"].rufid == short
    # both forms through importlib: X (when it is an identifier) and _X
    module = importlib.import_module("svc.rufid")
    for name in ([short] if short.isidentifier() else []) + ["_" + short]:
        add = getattr(module, name)
        assert add(2, 3) == 5
        assert add(a=2, b=3) == 5
    exec("from svc.rufid import _%s as add_" % short, ns)
    assert ns["add_"](2, 3) == 5


def test_import_hook_from_the_environment_in_a_fresh_interpreter(daemon, created):
    """`SVC_URL`/`SVC_TOKEN` and the README one-liner in a new process: it prints 5."""
    name = svc.import_name(created["rufid_short"])
    env = dict(os.environ, SVC_URL=daemon.url, SVC_TOKEN=ADMIN_KEY,
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", "from svc.rufid import %s as add; print(add(2, 3))" % name],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "5\n"


def test_import_hook_unknown_rufid_is_an_import_error_naming_it(daemon):
    svc.configure(url=daemon.url, token=ADMIN_KEY)
    with pytest.raises(ImportError) as e:
        exec("from svc.rufid import AAAAAAAAAAAA as nothing", {})
    assert "AAAAAAAAAAAA" in str(e.value)
    assert isinstance(e.value.__cause__, svc.RufidNotFoundError)
    module = importlib.import_module("svc.rufid")
    with pytest.raises(ImportError, match="AAAAAAAAAAAA"):
        getattr(module, "_AAAAAAAAAAAA")


def test_import_hook_without_credentials_is_an_import_error(daemon, created):
    svc.configure(url=daemon.url, token="")
    with pytest.raises(ImportError) as e:
        exec("from svc.rufid import _%s as add" % created["rufid_short"], {})
    assert isinstance(e.value.__cause__, svc.PermissionDeniedError)
    assert e.value.__cause__.unauthenticated


def test_daemon_is_still_up(daemon):
    """The daemon survived the scenario (kept last: a crash above would show here too)."""
    assert daemon.proc.poll() is None, "".join(daemon.output)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            svc.Client(daemon.url, timeout=5).request("GET", "/healthz")
            return
        except svc.SvcConnectionError:
            time.sleep(0.1)
    pytest.fail("the daemon stopped answering /healthz")
