#!/usr/bin/env bash
# Counts the instructions redis-server executes per task for dq::redis_store's scripts:
# submit on its own, and claim -> start -> ack (bench/dq/store_ceiling's cycle), under
# valgrind's callgrind. An instruction count does not move with the machine's load, where a
# CPU time on a shared 2-core VM swings by a third from one run to the next: this is the A/B
# measure for a change to the scripts (run it on both sides), and CPU time remains the
# figure users pay (scripts/bench-dq.sh).
#
# The count per script call is exact; how many tasks a call carries still depends on timing
# (what is due when a claim runs, how many acks wait), so two runs of one build differ by up
# to about a tenth: compare builds over two runs each.
#
# Each count is the difference of two runs (N and N/5 tasks), so that Redis's start, the
# FUNCTION LOAD of the store's library (once per connection) and
# store_ceiling's setup cancel out. Four redis-servers under callgrind, two at a time; about
# 2 minutes for N = 10,000.
#
# Usage: scripts/bench-redis-instructions.sh [--store-ceiling BIN] [--n N] [store_ceiling
#        options, e.g. --shards 64 --batch 256 --payload 100]
# Builds store_ceiling in Release in $BUILD_DIR (default build-release/) unless given.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=""
n=10000
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --store-ceiling) bin="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
command -v valgrind >/dev/null || sudo apt-get install -y valgrind >/dev/null
if [ -z "$bin" ]; then
  build="${BUILD_DIR:-build-release}"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target store_ceiling >/dev/null
  bin="$build/bench/dq/store_ceiling"
fi
work=$(mktemp -d /tmp/timewheel-redis-instructions-XXXXXX)
trap 'rm -rf "$work"' EXIT

# One redis-server under callgrind, one store_ceiling run against it: prints the total count.
count() { # $1 = tasks, then store_ceiling options
  local tasks="$1"; shift
  local d port pid
  d=$(mktemp -d "$work/run-XXXXXX")
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" redis-server --bind 127.0.0.1 \
    --port "$port" --save '' --appendonly no --dir "$d" --logfile "$d/redis.log" \
    >"$d/valgrind.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  if [ "$(redis-cli -p "$port" info server | tr -d '\r' | sed -n 's/^process_id://p')" != "$pid" ]; then
    echo "the redis-server on port $port is not ours: giving up" >&2
    kill "$pid" 2>/dev/null
    return 1
  fi
  "$bin" --port "$port" --tasks 0 --phases 0 --cycle-tasks "$tasks" "$@" >"$d/out.txt"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  grep -E '^(summary|totals):' "$d/cg.out" | head -1 | awk '{print $2}'
}

small=$((n / 5))
count "$n" "${extra[@]}" --cycle 0 >"$work/s2" & count "$small" "${extra[@]}" --cycle 0 >"$work/s1"
wait
count "$n" "${extra[@]}" >"$work/c2" & count "$small" "${extra[@]}" >"$work/c1"
wait
python3 - "$n" "$small" "$(cat "$work/s1")" "$(cat "$work/s2")" "$(cat "$work/c1")" \
  "$(cat "$work/c2")" "${extra[*]:-}" <<'EOF'
import sys
n, small, s1, s2, c1, c2 = (int(x) for x in sys.argv[1:7])
submit = (s2 - s1) / (n - small)
cycle = (c2 - c1) / (n - small) - submit
print(f"redis-server instructions per task ({n:,} vs {small:,} tasks; {sys.argv[7] or 'defaults'}):")
print(f"  submit               {submit:,.0f}")
print(f"  claim + start + ack  {cycle:,.0f}")
EOF
