#!/usr/bin/env bash
# Generates the flag tables of docs/server.md from timewheeld's one option table
# (server/service/src/settings.cpp), which `timewheeld --help-markdown` prints: each block
# between "<!-- BEGIN flags:NAME ...-->" and "<!-- END flags:NAME -->" in the docs is replaced
# by the binary's block of that name. The docs are never edited by hand there, so that
# `--help` and the docs cannot disagree.
#
# Usage: scripts/gen-server-flags.sh [--check] [TIMEWHEELD] [DOC]
#   TIMEWHEELD  the binary (default build/server/timewheeld)
#   DOC         the document (default docs/server.md)
#   --check     change nothing; exit 1, with the difference, when DOC is not what the binary
#               prints (the ctest docs_server_flags)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
binary="${1:-$root/build/server/timewheeld}"
doc="${2:-$root/docs/server.md}"

generated="$(mktemp)"
updated="$(mktemp)"
trap 'rm -f "$generated" "$updated"' EXIT
"$binary" --help-markdown >"$generated"

# First file: the generated blocks by name. Second: the document, each block replaced.
awk '
  FNR == NR {
    if (match($0, /^<!-- BEGIN flags:[a-z]+ /)) { name = substr($0, 18, RLENGTH - 18); order[++n] = name }
    block[name] = block[name] $0 "\n"
    next
  }
  match($0, /^<!-- BEGIN flags:[a-z]+ /) {
    name = substr($0, 18, RLENGTH - 18)
    if (!(name in block)) { print "no block flags:" name " in timewheeld --help-markdown" > "/dev/stderr"; exit 2 }
    printf "%s", block[name]
    found[name] = 1
    skipping = name
    next
  }
  skipping != "" {
    if ($0 == "<!-- END flags:" skipping " -->") skipping = ""
    next
  }
  { print }
  END {
    if (skipping != "") { print "no END flags:" skipping " in the document" > "/dev/stderr"; exit 2 }
    for (i = 1; i <= n; ++i)
      if (!(order[i] in found)) { print "the document has no block flags:" order[i] > "/dev/stderr"; exit 2 }
  }
' "$generated" "$doc" >"$updated"

if ((check)); then
  if ! diff -u "$doc" "$updated"; then
    echo "$doc: its flag tables differ from timewheeld --help-markdown;" \
      "run scripts/gen-server-flags.sh" >&2
    exit 1
  fi
  exit 0
fi
if cmp -s "$doc" "$updated"; then
  echo "$doc: up to date"
else
  cp "$updated" "$doc"
  echo "$doc: flag tables regenerated"
fi
