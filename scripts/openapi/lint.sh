#!/usr/bin/env bash
#
# scripts/openapi/lint.sh: lints docs/openapi.yaml with Redocly's CLI (npm, pinned in
# scripts/openapi/package-lock.json) and its recommended rules (scripts/openapi/redocly.yaml
# says what is adjusted and why). A warning fails too, so that none accumulate.
# Installs the CLI with `npm ci` when scripts/openapi/node_modules is missing (the registry
# is needed once; later runs check in about two seconds). Exit 77 (ctest's skip) only when
# node or npm is missing: a failed install or a bad document fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "openapi lint: node or npm not found, skipped (scripts/setup.sh does not install them)"
  exit 77
fi
if [ ! -x "$here/node_modules/.bin/redocly" ]; then
  (cd "$here" && npm ci --no-audit --no-fund >/dev/null)
fi
out="$("$here/node_modules/.bin/redocly" lint --config "$here/redocly.yaml" --format=stylish \
         "$repo/docs/openapi.yaml" 2>&1)" || { echo "$out"; exit 1; }
if grep -q ' warning ' <<<"$out"; then
  echo "$out"
  echo "openapi lint: warnings fail too"
  exit 1
fi
echo "openapi lint: docs/openapi.yaml passes"
