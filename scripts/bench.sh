#!/usr/bin/env bash
# Sets up, builds in Release and runs the benchmark binary. Arguments go to Google Benchmark,
# e.g. scripts/bench.sh --benchmark_filter='/1000000$' --benchmark_format=json
#
# scripts/bench.sh --loopback-idle [options] builds and runs the end-to-end idle-timeout
# benchmark instead (bench/loopback_idle.cpp; its options are listed there), e.g.
# scripts/bench.sh --loopback-idle --seconds 5 --rounds 3
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
if [[ "${1:-}" == "--loopback-idle" ]]; then
  shift
  cmake --build build-release -j"${JOBS:-2}" --target loopback_idle_bench
  exec ./build-release/bench/loopback_idle_bench "$@"
fi
cmake --build build-release -j"${JOBS:-2}" --target timewheel_bench
./build-release/bench/timewheel_bench "$@"
