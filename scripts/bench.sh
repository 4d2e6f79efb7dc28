#!/usr/bin/env bash
# Sets up, builds in Release and runs the benchmark binary. Arguments go to Google Benchmark,
# e.g. scripts/bench.sh --benchmark_filter='/1000000$' --benchmark_format=json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-release -j"${JOBS:-2}" --target timewheel_bench
./build-release/bench/timewheel_bench "$@"
