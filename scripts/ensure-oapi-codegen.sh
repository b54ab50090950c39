#!/usr/bin/env bash
# Installs oapi-codegen (the Go client generator checked by test/contract/generated-clients.test.ts)
# into .tools/bin, unless the pinned version is already there, and downloads the Go modules the
# generated client and its driver (test/contract/generated/go) import. Needs Go and the Go module
# proxy; the first build takes under a minute. Safe to run again.
#
#   scripts/ensure-oapi-codegen.sh                  install if missing, print the binary's path
#   OAPI_CODEGEN_VERSION=v2.8.0 scripts/...         another version (default pinned below)
set -euo pipefail
cd "$(dirname "$0")/.."

version="${OAPI_CODEGEN_VERSION:-v2.8.0}"
bin_dir="$PWD/.tools/bin"
binary="$bin_dir/oapi-codegen"

if ! command -v go >/dev/null 2>&1; then
  echo "ensure-oapi-codegen: Go is not installed (needed to build oapi-codegen $version)" >&2
  exit 1
fi

if ! { [ -x "$binary" ] && "$binary" -version 2>&1 | grep -qx -- "$version"; }; then
  mkdir -p "$bin_dir"
  echo "ensure-oapi-codegen: building oapi-codegen $version into $bin_dir…" >&2
  GOBIN="$bin_dir" GOFLAGS="${GOFLAGS:-} -buildvcs=false" \
    go install "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@$version"
fi
# the runtime the generated client imports, as go.mod/go.sum of the driver pin it
(cd test/contract/generated/go && go mod download)
echo "$binary"
