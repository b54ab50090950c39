"""The README's example runs as written against a fake node that behaves like the contract."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import svc
from conftest import error_body

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_example_runs(node):
    store = {}

    def create(req):
        b = req.body
        r = svc.compute_rufid(b["function_name"], b["signature"], b["language"], b["source_code"])
        store[r.rufid_short] = b
        return 201, {"rufid": "rufid:%s:v1:default" % r.rufid_short, "rufid_short": r.rufid_short, "version": "v1",
                     "content_digest": r.content_digest,
                     "import_statement": svc.import_statement(r.rufid_short, b["function_name"]),
                     "share_url": "http://share/" + r.rufid_short,
                     "api_endpoint": "/api/v1/functions/%s/execute" % r.rufid_short, "created": True}, {}

    def resolve(req):
        short = req.body["rufid"]
        if short not in store:
            return 404, error_body(1002, "RUFID_NOT_FOUND"), {}
        fn = store[short]
        return 200, {"function_id": "x", "rufid": "rufid:%s:v1:default" % short, "version": "v1", "accessible": True,
                     "cached": False, "resolution_time_ms": 0.1, "content_digest": "", "function_name": fn["function_name"],
                     "signature": fn["signature"], "language": fn["language"], "manifest": None, "lockfile": None}, {}

    def execute(req):
        args = req.body["arguments"]
        values = [args["a"], args["b"]] if isinstance(args, dict) else args
        return 200, {"result": values[0] + values[1], "execution_time_ms": 1, "status": "success",
                     "execution_id": "e"}, {}

    record = {"execution_id": "e", "rufid": "rufid:tUwBWSc8Nozv:v1:default", "version": "v1", "tenant": "default",
              "status": "success", "result": 5, "logs": []}

    node.on("POST", "/api/v1/functions/create", create)
    node.on("POST", "/api/v1/functions/resolve", resolve)
    node.on("POST", "/api/v1/functions/tUwBWSc8Nozv/execute", execute)
    node.reply("GET", "/v1/executions/e", 200, record)

    example = python_blocks()[0]
    assert 'svc.configure(url="http://127.0.0.1:8080"' in example
    code = example.replace("http://127.0.0.1:8080", node.url)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
    lines = out.getvalue().splitlines()
    assert lines == README_OUTPUT
    assert node.last.body == {"arguments": {"a": 2, "b": 3}}
    assert node.last.headers["authorization"] == "Bearer svck_..."


#: What the first example prints (its comments say the same); also checked against a live node.
README_OUTPUT = ["tUwBWSc8Nozv", "rufid:tUwBWSc8Nozv:v1:default", "from svc.rufid import tUwBWSc8Nozv as add",
                 "add v1", "5 success", "success 5", "5", "5"]


def test_readme_comments_state_the_output():
    example = python_blocks()[0]
    stated = [line.split("#", 1)[1].split("(")[0].strip() for line in example.splitlines()
              if line.startswith("print(") and "#" in line]
    assert stated == README_OUTPUT
