#!/usr/bin/env bash
# Checks that every tracked C++ file (*.cpp, *.hpp) is formatted as .clang-format says.
# Lists the files that are not, with the command that fixes them, and exits 1 if there are any.
# Usage: scripts/check-format.sh            (from anywhere in a clone)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh clang-format

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
else # an export without .git: the same files, found by name
  mapfile -t files < <(find . -path ./build\* -prune -o \( -name '*.cpp' -o -name '*.hpp' \) \
    -type f -print | sed 's|^\./||' | sort)
fi

# One clang-format for all files; each misformatted spot is reported as <file>:<line>:<col>.
status=0
output="$(clang-format --dry-run -Werror "${files[@]}" 2>&1)" || status=$?
mapfile -t unformatted < <(printf '%s\n' "$output" |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ "$status" -ne 0 ] && [ ${#unformatted[@]} -eq 0 ]; then
  echo "check-format: clang-format failed:"
  echo "$output"
  exit 1
fi

if [ ${#unformatted[@]} -ne 0 ]; then
  echo "check-format: ${#unformatted[@]} of ${#files[@]} files are not formatted:"
  printf '  %s\n' "${unformatted[@]}"
  echo "fix with: clang-format -i ${unformatted[*]}"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
