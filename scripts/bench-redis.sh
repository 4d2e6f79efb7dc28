#!/usr/bin/env bash
# Benchmarks redis::connection side by side with redis-benchmark, against one redis-server
# started here on 127.0.0.1 (free port, no persistence), in the same run, and prints a
# Markdown table with the ratios. Builds in Release in build-release/.
# Usage: scripts/bench-redis.sh [--requests N] [--rtt-requests N]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

requests=200000
rtt_requests=50000
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --rtt-requests) rtt_requests="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-release -j"${JOBS:-2}" --target redis_bench >/dev/null

dir=$(mktemp -d /tmp/timewheel-bench-redis-XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --daemonize no \
  --dir "$dir" --logfile "$dir/redis.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done

# redis-benchmark: one client, SET, pipelines of 1, 16, 256 (CSV: rps, avg, min, p50, p95, p99, max).
rb() { # $1 = pipeline, $2 = requests
  redis-benchmark -h 127.0.0.1 -p "$port" -c 1 -P "$1" -n "$2" -t set --csv 2>/dev/null |
    awk -F'"' '/^"SET"/ { print $4 "," $6 "," $10 "," $14 }'
}
declare -A rb_rps rb_avg rb_p50 rb_p99
for p in 1 16 256; do
  n=$requests
  [ "$p" = 1 ] && n=$rtt_requests
  IFS=, read -r rps avg p50 p99 <<<"$(rb "$p" "$n")"
  rb_rps[$p]=$rps; rb_avg[$p]=$avg; rb_p50[$p]=$p50; rb_p99[$p]=$p99
done

ours=$(./build-release/bench/redis/redis_bench --port "$port" --requests "$requests" \
  --rtt-requests "$rtt_requests" --depths 1,16,256)
field() { # $1 = name, $2 = column (1-based)
  awk -F, -v n="$1" -v c="$2" '$1 == n { print $c }' <<<"$ours"
}
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

echo
echo "redis-server $(redis-server --version | awk '{print $3}' | cut -d= -f2), one connection, SET key:__rand_int__ xxx, $(nproc) cores"
echo
echo "| case | redis::connection | redis-benchmark | ratio |"
echo "|---|---:|---:|---:|"
for p in 1 16 256; do
  ours_rps=$(field "set/batch/$p" 4)
  echo "| SET, pipeline $p (batches, like redis-benchmark -P $p), req/s | $ours_rps | ${rb_rps[$p]} | $(ratio "$ours_rps" "${rb_rps[$p]}") |"
done
for p in 1 16 256; do
  echo "| SET, $p always in flight (window), req/s | $(field "set/window/$p" 4) | | |"
done
rtt_avg=$(field rtt 5); rtt_p50=$(field rtt 6); rtt_p99=$(field rtt 7)
echo "| round trip, one request at a time, avg ms | $rtt_avg | ${rb_avg[1]} | $(ratio "$rtt_avg" "${rb_avg[1]}") |"
echo "| round trip, p50 ms | $rtt_p50 | ${rb_p50[1]} | |"
echo "| round trip, p99 ms | $rtt_p99 | ${rb_p99[1]} | |"
echo "| round trip, req/s | $(field rtt 4) | ${rb_rps[1]} | $(ratio "$(field rtt 4)" "${rb_rps[1]}") |"
for p in 1 16 256; do
  echo "| allocations per request, pipeline $p | $(field "set/batch/$p" 8) | | |"
done
echo "| allocations per request, round trip | $(field rtt 8) | | |"
echo
echo "raw:"
echo "$ours"
