#!/usr/bin/env bash
# Installs everything svc-node needs on a fresh machine: the npm packages pinned in
# package-lock.json (isolated-vm compiles from source: 2-4 minutes), the compiled daemon,
# the Python packages the tests use (pytest, hypothesis, grpcio-tools, cryptography, setuptools,
# openapi-spec-validator, openapi-python-client, datamodel-code-generator, schemathesis), grpcurl
# and oapi-codegen, Chromium for the console's browser tests and bubblewrap for the sandbox's OS
# wall. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# node-gyp downloads Node's headers unless told where they are; Debian ships them in /usr/include/node.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi

# `npm install` with the committed lockfile installs exactly the locked versions. `npm ci` is not
# used: it insists on lock entries for every platform's optional packages (rollup's android, darwin,
# win32 builds), which the registry reachable from these machines does not serve.
echo "svc-node setup: installing the npm packages pinned in package-lock.json…"
npm install --no-audit --no-fund --loglevel=error
echo "svc-node setup: compiling TypeScript…"
npm run build --silent
if command -v python3 >/dev/null 2>&1 && ! python3 -m pytest --version >/dev/null 2>&1; then
  echo "svc-node setup: installing pytest for the Python client's tests…"
  python3 -m pip install --quiet pytest
fi
if command -v python3 >/dev/null 2>&1 && [ "$(python3 -c 'import importlib.metadata as m; print(m.version("grpcio-tools"))' 2>/dev/null)" != "1.85.1" ]; then
  # the Python gRPC stubs svc.v1 are generated (and checked) with exactly this grpcio-tools; it
  # brings grpcio and protobuf, which the Python client's gRPC test uses (the grpc extra of the svc-node-client distribution)
  echo "svc-node setup: installing grpcio-tools 1.85.1 for the Python gRPC stubs and their test…"
  python3 -m pip install --quiet grpcio-tools==1.85.1
fi
if command -v python3 >/dev/null 2>&1 && [ "$(python3 -c 'import hypothesis; print(hypothesis.__version__)' 2>/dev/null)" != "6.170.17" ]; then
  # property-based tests of the Python client's parsing (clients/python/tests/test_parsing_properties.py)
  echo "svc-node setup: installing hypothesis 6.170.17 for the Python client's property tests…"
  python3 -m pip install --quiet hypothesis==6.170.17
fi
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import cryptography.x509' >/dev/null 2>&1; then
  echo "svc-node setup: installing cryptography (the verify extra of the Python client, svc-node-client) for the receipt tests…"
  python3 -m pip install --quiet cryptography==48.0.0
fi
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 61)' >/dev/null 2>&1; then
  # the Python client's distribution test builds its wheel (svc-node-client) without build isolation
  # (clients/python/tests/test_distribution.py); Python 3.12's venvs come without setuptools
  echo "svc-node setup: installing setuptools for the Python client's distribution test…"
  python3 -m pip install --quiet setuptools==80.9.0
fi
# the OpenAPI document is checked by a validator outside JavaScript (test/e2e/openapi.test.ts)
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import openapi_spec_validator' >/dev/null 2>&1; then
  echo "svc-node setup: installing openapi-spec-validator for the OpenAPI document's test…"
  python3 -m pip install --quiet 'openapi-spec-validator==0.9.0'
fi
# clients generated from /openapi.json by outside generators must compile and work
# (test/contract/generated-clients.test.ts): openapi-python-client and datamodel-code-generator here,
# oapi-codegen below, openapi-typescript and openapi-fetch as pinned npm devDependencies
if command -v python3 >/dev/null 2>&1 && [ "$(python3 -c 'import importlib.metadata as m; print(m.version("openapi-python-client"))' 2>/dev/null)" != "0.29.0" ]; then
  echo "svc-node setup: installing openapi-python-client 0.29.0 for the generated-clients test…"
  python3 -m pip install --quiet 'openapi-python-client==0.29.0'
fi
if command -v python3 >/dev/null 2>&1 && [ "$(python3 -c 'import importlib.metadata as m; print(m.version("datamodel-code-generator"))' 2>/dev/null)" != "0.89.0" ]; then
  echo "svc-node setup: installing datamodel-code-generator 0.89.0 for the generated-clients test…"
  python3 -m pip install --quiet 'datamodel-code-generator==0.89.0'
fi
# schemathesis runs against a live daemon in test/contract/schemathesis.test.ts (issue 28)
if command -v python3 >/dev/null 2>&1 && [ "$(python3 -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" != "4.32.5" ]; then
  echo "svc-node setup: installing schemathesis 4.32.5 for the API contract test…"
  python3 -m pip install --quiet schemathesis==4.32.5
fi
if command -v go >/dev/null 2>&1; then
  echo "svc-node setup: grpcurl (a real external gRPC client for the tests) into .tools/bin…"
  bash scripts/ensure-grpcurl.sh >/dev/null
  echo "svc-node setup: oapi-codegen (the Go client generator for the tests) into .tools/bin…"
  bash scripts/ensure-oapi-codegen.sh >/dev/null
fi
# The operator console's browser tests (test/console/) drive Debian's Chromium through playwright-core.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
  echo "svc-node setup: installing Debian's chromium for the console's browser tests…"
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
# The sandbox workers' OS wall (execution.os_isolation, README "Sandbox layers") uses bubblewrap;
# its tests (test/engine/sandbox/sandbox-os-wall.test.ts, test/faults/sandbox-wall.test.ts) need it.
if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "svc-node setup: installing Debian's bubblewrap for the sandbox workers' OS wall…"
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
echo "svc-node setup: done"
