#!/usr/bin/env bash
# Benchmarks redis::connection side by side with redis-benchmark, against one redis-server
# started here on 127.0.0.1 (free port, no persistence), in the same run, and prints a
# Markdown table with the ratios. The two alternate, case by case, REPS times; the table
# shows medians, so that a load change on the machine hits both alike. Builds in Release in
# build-release/.
# Usage: scripts/bench-redis.sh [--requests N] [--rtt-requests N] [--reps R]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

requests=200000
rtt_requests=50000
reps=3
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --rtt-requests) rtt_requests="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-release -j"${JOBS:-2}" --target redis_bench >/dev/null
bench=./build-release/bench/redis/redis_bench

source scripts/lib/private-redis.sh
start_private_redis timewheel-bench-redis
dir="$redis_dir" port="$redis_port"

# redis-benchmark, one client, SET: prints rps,avg_ms,p50_ms,p99_ms.
rb() { # $1 = pipeline, $2 = requests
  redis-benchmark -h 127.0.0.1 -p "$port" -c 1 -P "$1" -n "$2" -t set --csv 2>/dev/null |
    awk -F'"' '/^"SET"/ { print $4 "," $6 "," $10 "," $14 }'
}
# ours: prints the CSV line of one case.
ours() { # $1 = case, $2 = depth
  "$bench" --port "$port" --requests "$requests" --rtt-requests "$rtt_requests" \
    --cases "$1" --depths "$2" | tail -n 1
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
col() { cut -d, -f"$1"; }

log="$dir/runs.csv"
: >"$log"
for _ in $(seq "$reps"); do
  for p in 1 16 256; do
    echo "rb,set/batch/$p,$(rb "$p" "$requests")" >>"$log"
    echo "us,$(ours batch "$p")" >>"$log"
  done
  echo "rb,rtt,$(rb 1 "$rtt_requests")" >>"$log"
  echo "us,$(ours rtt 1)" >>"$log"
  for p in 16 256; do
    echo "us,$(ours window "$p")" >>"$log"
  done
done

# med <who> <name> <column>: the median of a column over the repetitions.
# rb lines: who,name,rps,avg,p50,p99; us lines: who,name,requests,seconds,rps,avg,p50,p99,allocs
med() { grep "^$1,$2," "$log" | col "$3" | median; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

echo
echo "redis-server $(redis-server --version | awk '{print $3}' | cut -d= -f2), one connection," \
     "SET key:__rand_int__ xxx, $(nproc) cores, medians of $reps alternating runs"
echo
echo "| case | redis::connection | redis-benchmark -c 1 | ratio |"
echo "|---|---:|---:|---:|"
for p in 1 16 256; do
  a=$(med us "set/batch/$p" 5); b=$(med rb "set/batch/$p" 3)
  echo "| SET, pipeline $p (batches of $p, as -P $p), req/s | $a | $b | $(ratio "$a" "$b") |"
done
for p in 16 256; do
  echo "| SET, $p always in flight (window), req/s | $(med us "set/window/$p" 5) | | |"
done
a=$(med us rtt 6); b=$(med rb rtt 4)
echo "| round trip, one at a time: avg ms | $a | $b | $(ratio "$a" "$b") |"
a=$(med us rtt 7); b=$(med rb rtt 5)
echo "| round trip: p50 ms | $a | $b | $(ratio "$a" "$b") |"
a=$(med us rtt 8); b=$(med rb rtt 6)
echo "| round trip: p99 ms | $a | $b | $(ratio "$a" "$b") |"
for p in 1 16 256; do
  echo "| allocations per request, pipeline $p | $(med us "set/batch/$p" 9) | | |"
done
echo "| allocations per request, round trip | $(med us rtt 9) | | |"
echo
echo "every run (rb: redis-benchmark rps,avg,p50,p99; us: redis_bench CSV):"
cat "$log"
