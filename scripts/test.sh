#!/usr/bin/env bash
# Sets up, checks and tests everything, as CI does (.ci/run):
#   format     every tracked *.cpp/*.hpp as .clang-format says (scripts/check-format.sh)
#   g++        tests, examples and benchmarks built with warnings as errors; the whole suite
#   package    installed, and built against by its three kinds of consumer (package-test.sh)
#   docs       the API reference, warnings as errors (scripts/docs.sh)
#   clang++    with warnings as errors, under AddressSanitizer + UndefinedBehaviorSanitizer:
#              tests and examples (no benchmarks); the whole suite again
# Each step prints its time, and a summary closes the run. A formatting failure does not stop
# the later steps (their results are worth having), but fails the run at the end; any other
# failure stops it at once.
# Usage: scripts/test.sh            (from anywhere in a clone); JOBS=N sets the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

jobs="${JOBS:-2}"
export CTEST_OUTPUT_ON_FAILURE=1
summary=()

# step <name> <function>: runs it, then records and prints how long it took.
step() {
  local name="$1" start=$SECONDS elapsed
  echo "== $name =="
  "$2"
  elapsed=$((SECONDS - start))
  summary+=("$(printf '%-32s %3d min %02d s' "$name" $((elapsed / 60)) $((elapsed % 60)))")
  echo "-- $name: $((elapsed / 60)) min $((elapsed % 60)) s"
}

format_failed=0
format() { bash scripts/check-format.sh || format_failed=1; }

# configure <build dir> <cmake arguments...>: the three builds below, each configured the
# same way (CONTRIBUTING.md, "Build time"). A new build directory gets Ninja, which keeps
# both cores busy across targets where make waits for each target's own steps; one made
# before keeps its generator (CMake cannot change it). Debug information is -g1 (functions
# and line tables: backtraces and sanitizer reports keep their file:line): full -g cost a
# test 17% more CPU and made its object three times larger, and it changes no code. The
# programs link with lld.
configure() {
  local dir="$1" generator=()
  shift
  [ -f "$dir/CMakeCache.txt" ] || generator=(-G Ninja)
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_DEBUG="-g1" \
    "$@" >/dev/null
}

gxx() {
  configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-Werror" \
    -DTIMEWHEEL_BUILD_TESTS=ON -DTIMEWHEEL_BUILD_EXAMPLES=ON -DTIMEWHEEL_BUILD_BENCHMARKS=ON
  cmake --build build -j"$jobs"
  ctest --test-dir build -j"$jobs" --timeout 900
}

package() { bash scripts/package-test.sh; }

docs() { bash scripts/docs.sh; }

# The second compiler and the sanitizers in one pass: Debian's clang++ (the same libstdc++ and
# Boost) with warnings as errors, under AddressSanitizer + UndefinedBehaviorSanitizer. It
# replaces a plain clang++ pass (11 to 12 minutes) and the sanitizers under g++: clang's
# warnings come from its front end, the same at -O1 as at -O2, and the suite runs once fewer.
# Its own directory, since a build directory cannot change its compiler. No benchmarks: they
# add build time and nothing that g++ has not compiled already.
sanitizers() {
  configure build-clang-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DTIMEWHEEL_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS="-O1 -Werror" \
    -DTIMEWHEEL_BUILD_TESTS=ON -DTIMEWHEEL_BUILD_EXAMPLES=ON -DTIMEWHEEL_BUILD_BENCHMARKS=OFF
  cmake --build build-clang-asan -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-clang-asan -j"$jobs" --timeout 1800
}

started=$SECONDS
step "format (clang-format)" format
step "build and test (g++)" gxx
step "install and consume the package" package
step "API reference (Doxygen)" docs
step "clang++, ASan + UBSan" sanitizers

total=$((SECONDS - started))
echo "== summary =="
printf '%s\n' "${summary[@]}"
printf '%-32s %3d min %02d s\n' "total" $((total / 60)) $((total % 60))
if [ "$format_failed" -ne 0 ]; then
  echo "test.sh: FAILED: files are not formatted (see the format step above)"
  exit 1
fi
echo "test.sh: all steps passed"
