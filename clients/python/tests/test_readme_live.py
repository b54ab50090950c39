"""The README's example against a live daemon of its own, as a user runs it on a fresh node.

(Its own daemon: the scenario of test_live_daemon.py publishes a JavaScript ``add``, and the
README's Python ``add`` on that node would be the next version of the same lineage, v2.)
"""

from __future__ import annotations

import contextlib
import io

import pytest

from live_node import ADMIN_KEY
from test_readme import README_OUTPUT, python_blocks


@pytest.fixture(scope="module")
def fresh_daemon(live_node):
    return live_node


def test_readme_example_runs_as_written(fresh_daemon):
    """The README's example, with only the URL and the token replaced, prints what it says."""
    example = python_blocks()[0]
    code = example.replace('url="http://127.0.0.1:8080"', 'url="%s"' % fresh_daemon.url).replace('token="svck_..."', 'token="%s"' % ADMIN_KEY)
    assert code != example
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    assert out.getvalue().splitlines() == README_OUTPUT
