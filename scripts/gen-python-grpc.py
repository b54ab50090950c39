#!/usr/bin/env python3
"""Generates the Python gRPC stubs of svc-node from proto/ into the client package as ``svc.v1``
(clients/python/svc/v1/), so that ``from svc.v1 import svc_protocol_pb2_grpc`` works beside the
REST client ``svc.Client`` in one environment.

    python3 scripts/gen-python-grpc.py           regenerate (replaces the generated files)
    python3 scripts/gen-python-grpc.py --check   generate into a temporary directory; exit 1 when
                                                 the committed files differ (CI), 0 when up to date

Needs grpcio-tools at exactly GRPCIO_TOOLS_VERSION (its protoc and plugin versions are written
into the files): ``python3 -m pip install grpcio-tools==<that version>`` (scripts/setup.sh does).
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GRPCIO_TOOLS_VERSION = "1.85.1"
ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "proto"
PACKAGE_ROOT = ROOT / "clients" / "python"
OUT = PACKAGE_ROOT / "svc" / "v1"
# written by hand, never generated
KEEP = {"__init__.py"}


def generated_names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file() and p.name not in KEEP and not p.name.endswith(".pyc"))


def generate(into: Path) -> Path:
    """Runs protoc (grpc_tools) over every .proto under proto/svc/v1 into ``into``; returns the
    directory of the svc.v1 files."""
    try:
        from importlib.metadata import version

        found = version("grpcio-tools")
    except Exception:  # noqa: BLE001 - not installed
        found = None
    if found != GRPCIO_TOOLS_VERSION:
        sys.exit("gen-python-grpc: grpcio-tools %s is needed (found %s): python3 -m pip install grpcio-tools==%s"
                 % (GRPCIO_TOOLS_VERSION, found or "none", GRPCIO_TOOLS_VERSION))
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "svc" / "v1").glob("*.proto"))
    if not protos:
        sys.exit("gen-python-grpc: no .proto files under %s" % (PROTO_ROOT / "svc" / "v1"))
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", ".", "--python_out=%s" % into,
           "--pyi_out=%s" % into, "--grpc_python_out=%s" % into, *protos]
    subprocess.run(cmd, cwd=PROTO_ROOT, check=True)
    return into / "svc" / "v1"


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a != "--check"]
    if unknown:
        print("gen-python-grpc: unknown argument(s) %s; usage: gen-python-grpc.py [--check]" % " ".join(unknown), file=sys.stderr)
        return 2
    check = "--check" in argv
    with tempfile.TemporaryDirectory(prefix="svc-python-grpc-") as tmp:
        fresh = generate(Path(tmp))
        if check:
            names, committed = generated_names(fresh), generated_names(OUT) if OUT.is_dir() else []
            stale = sorted(set(names) ^ set(committed))
            stale += [n for n in names if n in committed and not filecmp.cmp(fresh / n, OUT / n, shallow=False)]
            if stale:
                print("gen-python-grpc: clients/python/svc/v1 is not what proto/ generates (%s): run python3 scripts/gen-python-grpc.py"
                      % ", ".join(stale), file=sys.stderr)
                return 1
            print("gen-python-grpc: clients/python/svc/v1 is up to date (%d files)" % len(names))
            return 0
        OUT.mkdir(parents=True, exist_ok=True)
        for name in generated_names(OUT):
            (OUT / name).unlink()
        for name in generated_names(fresh):
            shutil.copyfile(fresh / name, OUT / name)
        print("gen-python-grpc: wrote %s" % ", ".join(os.path.join("clients/python/svc/v1", n) for n in generated_names(OUT)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
