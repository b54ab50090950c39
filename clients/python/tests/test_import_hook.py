"""The ``svc.rufid`` import hook against a fake node."""

from __future__ import annotations

import importlib

import pytest

import svc
from conftest import error_body

ADD_SOURCE = "def add(a, b):\n    return a + b\n"
ADD_SHORT = svc.rufid_short("add", "(a, b)", "python", ADD_SOURCE)
DIGIT_SHORT = "7Qx2Lm9Pa0Zk"  # starts with a digit: imported as _7Qx2Lm9Pa0Zk


def serve_function(node, short, function_name, signature, description=None):
    """Resolve answers for `short`; execute adds the arguments (named in signature order, or positional)."""

    def resolve(req):
        if req.body.get("rufid") != short:
            return 404, error_body(1002, "RUFID_NOT_FOUND", "RUFID %s does not exist" % req.body.get("rufid"),
                                   {"rufid": req.body.get("rufid")}), {}
        answer = {"function_id": "fid-" + short, "rufid": "rufid:%s:v1:acme" % short, "version": "v1",
                  "accessible": True, "cached": False, "resolution_time_ms": 0.1, "content_digest": "00" * 32,
                  "function_name": function_name, "signature": signature, "language": "python",
                  "manifest": None, "lockfile": None}
        if description:
            answer["description"] = description
        return 200, answer, {}

    def execute(req):
        args = req.body["arguments"]
        values = [args[k] for k in sorted(args)] if isinstance(args, dict) else args
        return 200, {"result": sum(values), "execution_time_ms": 0.5, "status": "success", "execution_id": "e1"}, {}

    node.on("POST", "/api/v1/functions/resolve", resolve)
    node.on("POST", "/api/v1/functions/%s/execute" % short, execute)


def test_import_plain_form_and_call(node):
    serve_function(node, ADD_SHORT, "add", "(a, b)", description="Adds two numbers.")
    svc.configure(url=node.url, token="hook-token", namespace="ns-1")
    ns = {}
    exec("from svc.rufid import %s as add" % ADD_SHORT, ns)
    add = ns["add"]
    assert node.last.path == "/api/v1/functions/resolve"
    assert node.last.body == {"rufid": ADD_SHORT}
    assert node.last.headers["authorization"] == "Bearer hook-token"
    assert node.last.headers["x-svc-namespace"] == "ns-1"

    assert add.__name__ == "add" and add.rufid == ADD_SHORT
    assert "add(a, b)" in add.__doc__ and "Adds two numbers." in add.__doc__
    assert add.full_rufid == "rufid:%s:v1:acme" % ADD_SHORT and add.version == "v1"

    assert add(2, 3) == 5
    req = node.last
    assert req.method == "POST" and req.path == "/api/v1/functions/%s/execute" % ADD_SHORT
    assert req.body == {"arguments": [2, 3]}
    assert req.headers["authorization"] == "Bearer hook-token"
    assert add(a=10, b=-4) == 6
    assert node.last.body == {"arguments": {"a": 10, "b": -4}}


def test_import_statement_round_trip(node):
    serve_function(node, ADD_SHORT, "add", "(a, b)")
    svc.configure(url=node.url)
    ns = {}
    exec(svc.import_statement(ADD_SHORT, "add"), ns)
    assert ns["add"](20, 22) == 42


def test_underscore_form_for_digit_rufid(node):
    serve_function(node, DIGIT_SHORT, "mul", "(x, y)")
    svc.configure(url=node.url)
    stmt = svc.import_statement(DIGIT_SHORT, "mul")
    assert stmt == "from svc.rufid import _%s as mul" % DIGIT_SHORT
    ns = {}
    exec(stmt, ns)
    assert node.last.body == {"rufid": DIGIT_SHORT}  # the underscore is not sent
    assert ns["mul"].__name__ == "mul" and ns["mul"].rufid == DIGIT_SHORT
    assert ns["mul"](1, 2, 3) == 6
    assert node.last.path == "/api/v1/functions/%s/execute" % DIGIT_SHORT


def test_underscore_form_for_letter_rufid_and_attribute_access(node):
    serve_function(node, ADD_SHORT, "add", "(a, b)")
    svc.configure(url=node.url)
    ns = {}
    exec("from svc.rufid import _%s as add2" % ADD_SHORT, ns)
    assert ns["add2"](1, 1) == 2
    mod = importlib.import_module("svc.rufid")
    assert getattr(mod, ADD_SHORT)(5, 5) == 10


def test_unknown_rufid_is_import_error_naming_it(node):
    serve_function(node, ADD_SHORT, "add", "(a, b)")
    svc.configure(url=node.url)
    unknown = "Zz9Zz9Zz9Zz9"
    with pytest.raises(ImportError) as info:
        exec("from svc.rufid import %s as nothing" % unknown, {})
    assert unknown in str(info.value)
    assert isinstance(info.value.__cause__, svc.RufidNotFoundError)
    assert node.last.body == {"rufid": unknown}


def test_invalid_names_are_import_errors(node):
    svc.configure(url=node.url)
    for name in ("add", "tooShort", "tUwBWSc8Nozv1", "_add", "__tUwBWSc8Nozv"):
        with pytest.raises(ImportError) as info:
            exec("from svc.rufid import %s" % name, {})
        assert name in str(info.value)
        assert isinstance(info.value.__cause__, svc.InvalidRufidError)
        assert info.value.__cause__.code == 1001
    assert node.requests == []
    # dunder probes (inspect, pickle, star imports) are plain attribute misses
    mod = importlib.import_module("svc.rufid")
    assert not hasattr(mod, "__wrapped__") and not hasattr(mod, "__all__")
    exec("from svc.rufid import *", {})
    assert node.requests == []


def test_other_errors_are_chained(node):
    node.reply("POST", "/api/v1/functions/resolve", 401, error_body(1003, "PERMISSION_DENIED", "no key"))
    svc.configure(url=node.url)
    with pytest.raises(ImportError) as info:
        exec("from svc.rufid import %s as add" % ADD_SHORT, {})
    assert ADD_SHORT in str(info.value)
    cause = info.value.__cause__
    assert isinstance(cause, svc.PermissionDeniedError) and cause.unauthenticated


def test_unreachable_node_is_import_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    svc.configure(url="http://127.0.0.1:%d" % port, timeout=2)
    with pytest.raises(ImportError) as info:
        exec("from svc.rufid import %s as add" % ADD_SHORT, {})
    assert isinstance(info.value.__cause__, svc.ConnectionError)


def test_environment_is_used_without_configure(node, monkeypatch):
    serve_function(node, ADD_SHORT, "add", "(a, b)")
    monkeypatch.setenv("SVC_URL", node.url)
    monkeypatch.setenv("SVC_TOKEN", "env-tok")
    ns = {}
    exec("from svc.rufid import %s as add" % ADD_SHORT, ns)
    assert ns["add"](1, 2) == 3
    assert node.last.headers["authorization"] == "Bearer env-tok"


def test_configure_replaces_the_default_client(node):
    serve_function(node, ADD_SHORT, "add", "(a, b)")
    first = svc.configure(url="http://127.0.0.1:9", token="old")
    assert svc.get_client() is first
    mine = svc.Client(node.url, token="mine")
    assert svc.configure(client=mine) is mine and svc.get_client() is mine
    ns = {}
    exec("from svc.rufid import %s as add" % ADD_SHORT, ns)
    assert ns["add"].client is mine
    assert node.last.headers["authorization"] == "Bearer mine"


def test_execution_error_propagates_from_call(node):
    serve_function(node, ADD_SHORT, "add", "(a, b)")
    node.reply("POST", "/api/v1/functions/%s/execute" % ADD_SHORT, 422,
               error_body(1007, "EXECUTION_FAILED", "TypeError: bad operand"))
    svc.configure(url=node.url)
    ns = {}
    exec("from svc.rufid import %s as add" % ADD_SHORT, ns)
    with pytest.raises(svc.ExecutionFailedError, match="bad operand"):
        ns["add"](1, "x")
