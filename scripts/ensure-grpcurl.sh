#!/usr/bin/env bash
# Installs grpcurl (the external gRPC client used by test/e2e/grpcurl.test.ts) into .tools/bin,
# unless the pinned version is already there. Needs Go (1.21+) and the Go module proxy; the first
# build takes one to two minutes. Safe to run again.
#
#   scripts/ensure-grpcurl.sh            install if missing, print the binary's path
#   GRPCURL_VERSION=v1.9.4 scripts/...   another version (default pinned below)
set -euo pipefail
cd "$(dirname "$0")/.."

version="${GRPCURL_VERSION:-v1.9.4}"
bin_dir="$PWD/.tools/bin"
binary="$bin_dir/grpcurl"

if [ -x "$binary" ] && "$binary" -version 2>&1 | grep -q -- "${version#v}"; then
  echo "$binary"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "ensure-grpcurl: Go is not installed (needed to build grpcurl $version)" >&2
  exit 1
fi

mkdir -p "$bin_dir"
echo "ensure-grpcurl: building grpcurl $version into $bin_dir (1-2 minutes the first time)…" >&2
# -ldflags sets the version grpcurl reports (it is "dev build" otherwise), so the check above works
GOBIN="$bin_dir" GOFLAGS="${GOFLAGS:-} -buildvcs=false" \
  go install -ldflags "-X main.version=$version" "github.com/fullstorydev/grpcurl/cmd/grpcurl@$version"
"$binary" -version >&2
echo "$binary"
