"""A live svc node for the Python client's tests: ``svc-node start`` from the built dist/ (native
auth, test mode, a fixed admin key) on free loopback ports, its URL and gRPC address read from its
JSON log line. Without Node.js or the built daemon the tests that use it FAIL (never skip): run
``npm run build`` in the repository root first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ENTRY = REPO / "bin" / "svc-node.js"
BUILT = REPO / "dist" / "cli" / "svc-node.js"
ADMIN_KEY = "svck_python-live-test_0123456789abcdefghijklmnop"
START_TIMEOUT_S = 30


class LiveDaemon:
    """``svc-node start`` on a free loopback port; ``url`` is read from its JSON log line."""

    def __init__(self) -> None:
        node = os.environ.get("NODE") or shutil.which("node")
        if not node:
            pytest.fail("node (Node.js >= 20.19) is not on PATH: the live daemon tests need it")
        if not BUILT.exists():
            pytest.fail("the daemon is not built (%s is missing): run `npm run build` in %s first" % (BUILT, REPO))
        self.data_dir = tempfile.mkdtemp(prefix="svc-python-live-")
        env = dict(os.environ)
        for var in ("SVC_URL", "SVC_TOKEN", "SVC_NAMESPACE", "SVC_CONFIG"):
            env.pop(var, None)
        env.update({
            "API_HOST": "127.0.0.1", "API_PORT": "0", "GRPC_PORT": "0", "SVC_DATA_DIR": self.data_dir, "LOG_FORMAT": "json",
            "LOG_LEVEL": "info", "AUTH_PROVIDER": "native", "ENABLE_TEST_MODE": "true", "DEPLOYMENT_MODE": "test",
            "ADMIN_API_KEY": ADMIN_KEY, "SVC_SANDBOX_WORKERS": "1",
        })
        self.output: list = []
        self.proc = subprocess.Popen([node, str(ENTRY), "start"], cwd=str(REPO), env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._url_found = threading.Event()
        self.url = None
        #: host:port of the node's gRPC door (from the same log line)
        self.grpc_address = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._url_found.wait(START_TIMEOUT_S) or self.url is None:
            self.stop()
            pytest.fail("the daemon did not report `svc-node listening` within %ds:\n%s"
                        % (START_TIMEOUT_S, "".join(self.output)))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace")
            self.output.append(line)
            if self.url is None and "svc-node listening" in line:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("msg") == "svc-node listening" and entry.get("url"):
                    self.url = entry["url"]
                    self.grpc_address = entry.get("grpc")
                    self._url_found.set()
        self._url_found.set()  # the process ended: stop waiting

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._reader.join(timeout=5)
        shutil.rmtree(self.data_dir, ignore_errors=True)
