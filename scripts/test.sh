#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: once as built for use (warnings are errors)
# and once more under AddressSanitizer + UndefinedBehaviorSanitizer.
# Usage: scripts/test.sh            (from anywhere in a clone)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

jobs="${JOBS:-2}"
export CTEST_OUTPUT_ON_FAILURE=1

echo "== build and test (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-Werror" \
  -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build -j"$jobs" --timeout 900

echo "== install and consume the package =="
bash scripts/package-test.sh

echo "== API reference (Doxygen, warnings are errors) =="
bash scripts/docs.sh

echo "== build and test (ASan + UBSan) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTIMEWHEEL_SANITIZE=address,undefined \
  -DCMAKE_CXX_FLAGS="-O1" >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j"$jobs" --timeout 1800
