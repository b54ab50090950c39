"""The Python client against the shared vocabulary ``clients/operations.json`` (issue 13 §4): every
operation is a method of :class:`svc.Client` under its snake_case name, and every error code raises
the class of the same name as in TypeScript. The TypeScript (test/client/vocabulary.test.ts) and Go
(vocabulary_test.go) suites check the same file."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import svc
import svc.errors

VOCABULARY = json.loads((Path(__file__).resolve().parents[2] / "operations.json").read_text("utf-8"))


@pytest.mark.parametrize("op", VOCABULARY["operations"], ids=[o["id"] for o in VOCABULARY["operations"]])
def test_operation_is_a_client_method(op):
    assert op["python"] == op["id"], "the Python name of an operation is its id"
    method = getattr(svc.Client, op["python"], None)
    assert callable(method), "svc.Client has no method %s (operation %s of clients/operations.json)" % (op["python"], op["id"])
    params = inspect.signature(method).parameters
    for name in op.get("takes", []):
        name = name.split(" ")[0]
        assert name in params, "%s() takes no %r" % (op["python"], name)


@pytest.mark.parametrize("entry", VOCABULARY["errors"], ids=[e["name"] for e in VOCABULARY["errors"]])
def test_error_code_has_its_class(entry):
    cls = getattr(svc, entry["python"], None)
    assert isinstance(cls, type) and issubclass(cls, svc.SvcError), "svc exports no %s" % entry["python"]
    assert entry["python"] == entry["ts"]
    assert cls.code == entry["code"] and cls.name == entry["name"]
    assert svc.error_class_for(entry["code"]) is cls
    raised = svc.errors.error_from_response(400, json.dumps({"error": {"code": entry["code"], "name": entry["name"], "message": "m"}}).encode())
    assert type(raised) is cls


@pytest.mark.parametrize("entry", VOCABULARY["client_errors"], ids=[e["name"] for e in VOCABULARY["client_errors"]])
def test_client_error_has_its_class(entry):
    cls = getattr(svc, entry["python"], None)
    assert isinstance(cls, type) and issubclass(cls, svc.SvcError), "svc exports no %s" % entry["python"]
    assert cls.code is None and cls.name == entry["name"]


def test_readme_names_every_method():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    for op in VOCABULARY["operations"]:
        assert "| `%s` | `%s` |" % (op["id"], op["python"]) in readme, "README.md does not name %s" % op["python"]
