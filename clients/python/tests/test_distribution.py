"""The distribution installs as a user installs it: named svc-node-client, importing as svc.

"svc" on PyPI is an unrelated project (a spreadsheet viewer whose setup.py runs at install), so the
distribution must not be named "svc", and no install line in the docs may say ``pip install svc``.
The import package stays ``svc``: ``from svc.rufid import …`` is part of the contract.

Building the wheel needs setuptools>=61 in this Python (``--no-build-isolation``: no download
during the tests); scripts/setup.sh installs it when it is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent
ROOT = PACKAGE_DIR.parent.parent
DISTRIBUTION = "svc-node-client"


def test_wheel_is_svc_node_client_and_imports_as_svc(tmp_path):
    try:
        import setuptools  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the installation
        pytest.fail("setuptools is not installed (scripts/setup.sh installs it)")
    # built from a copy: setuptools writes build/ and *.egg-info next to the sources, and a stale
    # build/ in the checkout would put old files into the wheel
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(PACKAGE_DIR / name, source / name)
    shutil.copytree(PACKAGE_DIR / "svc", source / "svc", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(wheels), str(source)],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
    )
    assert build.returncode == 0, build.stdout + build.stderr
    built = sorted(wheels.glob("*.whl"))
    assert [w.name.split("-")[0] for w in built] == ["svc_node_client"], [w.name for w in built]
    with zipfile.ZipFile(built[0]) as wheel:
        names = wheel.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = wheel.read(metadata).decode("utf-8")
    assert re.search(r"^Name: svc-node-client$", text, flags=re.M), text[:400]
    assert re.search(r"^Provides-Extra: grpc$", text, flags=re.M)
    assert re.search(r"^Provides-Extra: verify$", text, flags=re.M)
    assert "svc/__init__.py" in names and "svc/rufid.py" in names and "svc/v1/__init__.py" in names

    # installed on its own (not this checkout): `import svc` and `from svc.rufid import …` resolve
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(built[0])],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
    )
    assert install.returncode == 0, install.stdout + install.stderr
    probe = (
        "import importlib.metadata as m, svc, svc.rufid\n"
        "assert svc.__file__.startswith(%r), svc.__file__\n"
        "print(m.distribution(%r).metadata['Name'])\n" % (str(target), DISTRIBUTION)
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=str(tmp_path), env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == DISTRIBUTION


# `pip install svc`, `pip install svc[grpc]`, `pip install 'svc[verify]'`: the unrelated project
WRONG_INSTALL = re.compile(r"pip3? install\s+(?:-\S+\s+)*[\"']?svc(?:\[[a-z,]+\])?[\"']?(?=[\s`)\"']|$)", flags=re.M)


def test_no_install_line_names_the_unrelated_svc_distribution():
    # the client's own files and the setup script (the reference pages in docs/ are the lead's)
    places = [PACKAGE_DIR / "README.md", PACKAGE_DIR / "pyproject.toml", ROOT / "scripts" / "setup.sh"]
    places += sorted((PACKAGE_DIR / "svc").rglob("*.py")) + sorted((PACKAGE_DIR / "tests").glob("*.py"))
    found = []
    for path in places:
        if not path.is_file() or path.name == Path(__file__).name:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if WRONG_INSTALL.search(line):
                found.append("%s:%d: %s" % (path.relative_to(ROOT), number, line.strip()))
    assert found == [], "install lines naming the unrelated PyPI project 'svc':\n" + "\n".join(found)
