#!/usr/bin/env bash
# The tests of the TypeScript client, as ctest runs them (test/clients/typescript/) and as
# `npm test` does: npm ci when node_modules is missing or older than package-lock.json, tsc
# into a temporary directory (so that two builds testing at once never write the same dist/),
# then node --test on the compiled tests. The live tests need timewheeld: --timewheeld PATH
# or TIMEWHEELD_BINARY. Exit 77 (skipped, for ctest) only when node/npm are missing or too
# old, or when the timewheeld named does not exist; without any binary named, the live tests
# are reported skipped by node and the others run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
binary=${TIMEWHEELD_BINARY:-}
while [ $# -gt 0 ]; do
  case $1 in
    --timewheeld) binary=$2; shift 2 ;;
    *) echo "usage: $0 [--timewheeld PATH]" >&2; exit 2 ;;
  esac
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "skipped: node or npm not found (the TypeScript client needs node >= 18)"; exit 77
fi
if [ "$(node -p 'parseInt(process.versions.node)')" -lt 18 ]; then
  echo "skipped: node $(node --version) has no global fetch (node >= 18 needed)"; exit 77
fi
if [ -n "$binary" ] && [ ! -x "$binary" ]; then
  echo "skipped: no timewheeld at $binary"; exit 77
fi
cd "$here"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/tw-tsclient-build.XXXXXX")
trap 'rm -rf "$out"' EXIT
node_modules/.bin/tsc -p . --outDir "$out"
TIMEWHEELD_BINARY=$binary TIMEWHEEL_OPENAPI_JSON="$here/../../docs/openapi.json" \
  node --test "$out"/test/*.test.js
