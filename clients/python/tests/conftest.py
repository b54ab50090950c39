"""Test fixtures: a fake svc node (http.server on 127.0.0.1, port 0) that records requests."""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import pytest

# Tests run against this checkout of the package, installed or not.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import svc  # noqa: E402
import svc.client  # noqa: E402


class Recorded:
    """One request received by the fake node."""

    def __init__(self, method: str, raw_path: str, headers: Dict[str, str], raw_body: bytes) -> None:
        self.method = method
        self.raw_path = raw_path
        split = urllib.parse.urlsplit(raw_path)
        self.path = split.path
        self.query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.raw_body = raw_body
        self.body: Any = json.loads(raw_body.decode("utf-8")) if raw_body else None

    def __repr__(self) -> str:
        return "<%s %s %r>" % (self.method, self.raw_path, self.body)


Reply = Tuple[int, Any, Dict[str, str]]
Route = Union[Reply, Callable[[Recorded], Reply]]


class FakeNode:
    """Routes are exact (method, path) pairs; a reply is ``(status, json_body, headers)`` or a
    callable taking the :class:`Recorded` request. ``json_body`` may be ``bytes`` (sent raw)."""

    def __init__(self) -> None:
        self.requests: List[Recorded] = []
        self.routes: Dict[Tuple[str, str], Route] = {}
        self._lock = threading.Lock()
        node = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                rec = Recorded(self.command, self.path, dict(self.headers.items()), raw)
                with node._lock:
                    node.requests.append(rec)
                    route = node.routes.get((rec.method, rec.path))
                if route is None:
                    status, body, headers = 404, b"no such route on the fake node", {"Content-Type": "text/plain"}
                elif callable(route):
                    status, body, headers = route(rec)
                else:
                    status, body, headers = route
                data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
                self.send_response(status)
                if not any(k.lower() == "content-type" for k in headers):
                    self.send_header("Content-Type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = _handle

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timeout tests) is not an error of the fake

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> "FakeNode":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def on(self, method: str, path: str, reply: Route) -> None:
        with self._lock:
            self.routes[(method, path)] = reply

    def reply(self, method: str, path: str, status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> None:
        self.on(method, path, (status, body, headers or {}))

    @property
    def last(self) -> Recorded:
        assert self.requests, "the fake node received no request"
        return self.requests[-1]


def error_body(code: int, name: str, message: str = "boom", details: Optional[dict] = None) -> dict:
    return {"error": {"code": code, "name": name, "message": message, "details": details or {}}}


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch):
    for var in ("SVC_URL", "SVC_TOKEN", "SVC_NAMESPACE"):
        monkeypatch.delenv(var, raising=False)
    svc.client._reset_default_client()
    yield
    svc.client._reset_default_client()


@pytest.fixture
def node():
    fake = FakeNode().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def client(node: FakeNode) -> svc.Client:
    return svc.Client(node.url, token="tok-123", namespace="team-a", timeout=5)


@pytest.fixture(scope="module")
def live_node():
    """A real node for the tests of one module (see live_node.py), stopped after them."""
    from live_node import LiveDaemon

    d = LiveDaemon()
    try:
        yield d
    finally:
        d.stop()
