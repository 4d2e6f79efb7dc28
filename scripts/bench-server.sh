#!/usr/bin/env bash
# Benchmarks timewheeld end to end (bench/server/server_bench.cpp says what each case
# measures): POST /v1/tasks requests per second, callbacks per second delivered to a
# keep-alive loopback sink that answers 200 at once, and lateness at a steady 1,000 tasks/s;
# each with the Redis store (a private redis-server, scripts/lib/private-redis.sh) and the
# SQLite store (a file in a temporary directory). Every run gets a timewheeld of its own
# (free port, 127.0.0.1, --callback-allow-loopback) over a fresh store (a new Redis queue
# name, a new SQLite file), stopped with SIGTERM after it. Prints one Markdown table, then
# every run's JSON line. Then the Redis Cluster case (scripts/lib/bench_cluster.py): with 1, 2
# and 3 masters, each master's Redis CPU per task and how evenly the shards spread (skew,
# max/mean over the masters), so that throughput at N masters can be projected. Then the
# cost of ?wait=1 on a Cluster whose masters have a replica each (bench_cluster.py --wait):
# submit latency and callbacks/s with wait=0 and wait=1 (--only wait runs it alone).
#
# Full: 50,000 submits, 100,000 callbacks due over 1 s, lateness over 20 s. --quick: 10,000
# submits, 20,000 callbacks, lateness over 5 s. Cluster: 20,000 tasks per run (--quick 5,000).
#
# Builds timewheeld and timewheeld_bench in Release in $BUILD_DIR (default build-release/).
# Usage: scripts/bench-server.sh [--quick] [--only redis|sqlite|cluster|wait] [--threads N] [--sqlite-threads N]
#                                [--keep-log FILE] [--perf DIR] [-- timewheeld flags...]
#   --threads N   timewheeld's --threads with the Redis store
#   --sqlite-threads N  timewheeld's --threads with the SQLite store (default 1; the threads
#                 share one database file, each with a connection of its own)
#   --perf DIR    perf record -g on timewheeld during each callbacks run, into DIR/perf-STORE.data
# Environment: BUILD_DIR (above), TIMEWHEELD (a timewheeld binary to run instead of the
# one built, for A/B runs), JOBS (build parallelism).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

quick=0
only=""
threads=1
sqlite_threads=1
keep_log=""
perf_dir=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --sqlite-threads) sqlite_threads="$2"; shift 2 ;;
    --keep-log) keep_log="$2"; shift 2 ;;
    --perf) perf_dir="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build-release}"
started=$(date +%s)

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON -DTIMEWHEEL_BUILD_SERVER=ON \
  >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target timewheeld timewheeld_bench >/dev/null
# TIMEWHEELD=PATH runs that timewheeld binary instead of $build's (an A/B against another
# build, with the same timewheeld_bench).
tw="${TIMEWHEELD:-$build/server/timewheeld}"
bench="$build/bench/server/timewheeld_bench"

source scripts/lib/private-redis.sh
start_private_redis timewheel-bench-server
dir="$redis_dir"
tw_pid=""
perf_pid=""
stop_timewheeld() {
  if [ -n "$tw_pid" ]; then
    kill -TERM "$tw_pid" 2>/dev/null || true
    wait "$tw_pid" 2>/dev/null || true
    tw_pid=""
  fi
}
# private-redis.sh's own trap, with timewheeld stopped first.
trap 'stop_timewheeld; kill $redis_pid 2>/dev/null; wait $redis_pid 2>/dev/null; rm -rf "$redis_dir"' EXIT

seq=0
start_timewheeld() { # $1 = redis or sqlite
  seq=$((seq + 1))
  local store t=1
  if [ "$1" = redis ]; then
    store="redis://127.0.0.1:$redis_port/bench$seq"
    t="$threads"
  else
    store="sqlite:$dir/bench$seq.db"
    t="$sqlite_threads"
  fi
  rm -f "$dir/port"
  "$tw" --port 0 --port-file "$dir/port" --store "$store" --threads "$t" \
    --callback-allow-loopback --log-level warn "${extra[@]}" 2>>"$dir/timewheeld.log" &
  tw_pid=$!
  for _ in $(seq 200); do
    [ -s "$dir/port" ] && break
    kill -0 "$tw_pid" 2>/dev/null || { cat "$dir/timewheeld.log" >&2; exit 1; }
    sleep 0.05
  done
  tw_port=$(cat "$dir/port")
}

log="$dir/runs.jsonl"
: >"$log"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
run() { # $1 = store, $2 = case, then its options
  local store="$1" kase="$2"
  shift 2
  start_timewheeld "$store"
  if [ -n "$perf_dir" ] && [ "$kase" = callbacks ]; then
    mkdir -p "$perf_dir"
    perf record -g -p "$tw_pid" -o "$perf_dir/perf-$store.data" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  local out status=0
  out=$("$bench" "$kase" --store "$store" --api-port "$tw_port" \
    --pids "timewheeld:$tw_pid,redis-server:$redis_pid" "$@") || status=$?
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; perf_pid=""
  fi
  stop_timewheeld
  echo "$out" | tee -a "$log" >&2
  [ "$status" = 0 ] || echo "($store $kase: timewheeld_bench exited $status)" >&2
}

if [ "$quick" = 1 ]; then
  submit_n=10000 n=20000 late_n=5000
else
  submit_n=50000 n=100000 late_n=20000
fi
for store in redis sqlite; do
  [ -n "$only" ] && [ "$only" != "$store" ] && continue
  run "$store" submit --n "$submit_n" --conns 32
  rate=$(tail -1 "$log" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["requests_per_s"]) or 1000)' 2>/dev/null || echo 1000)
  run "$store" callbacks --n "$n" --window-ms 1000 --conns 32 --submit-rate "$rate"
  # 32 submitters, as in the other cases: with SQLite's synchronous=FULL a submit waits for
  # an fsync (about 6 ms here), so 8 one-at-a-time submitters may not keep up with 1,000/s,
  # and a task that reaches the store late is not the callbacks' lateness (submit_p99_ms).
  run "$store" lateness --n "$late_n" --rate 1000 --lead-ms 1000 --conns 32
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cluster_table=""
if [ -z "$only" ] || [ "$only" = cluster ]; then
  cluster_table=$(python3 scripts/lib/bench_cluster.py --timewheeld "$tw" --bench "$bench" \
    --n "$([ "$quick" = 1 ] && echo 5000 || echo 20000)" 2> >(tee -a "$log" >&2))
fi
wait_table=""
if [ -z "$only" ] || [ "$only" = wait ]; then
  wait_table=$(python3 scripts/lib/bench_cluster.py --wait --timewheeld "$tw" --bench "$bench" \
    --n "$([ "$quick" = 1 ] && echo 5000 || echo 20000)" 2> >(tee -a "$log" >&2))
fi

echo
echo "timewheeld (--threads $threads with Redis, $sqlite_threads with SQLite${extra:+, ${extra[*]}}), redis-server" \
     "$(redis-server --version | awk '{print $3}' | cut -d= -f2) (--save '' --appendonly no)," \
     "SQLite $(sqlite3 --version 2>/dev/null | awk '{print $1}' || echo '?') (synchronous=FULL)," \
     "$(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1))," \
     "$(${CXX:-c++} --version | head -1), commit $(git rev-parse --short HEAD);" \
     "load average $load_before before, $load_after after; $(( $(date +%s) - started )) s"
echo
python3 - "$log" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def get(store, case):
    for r in runs:
        if r.get("store") == store and r.get("case") == case:
            return r
    return None
def fmt(v, d=0):
    return "" if v is None else (f"{v:,.{d}f}" if isinstance(v, (int, float)) else str(v))
def cpu(r):
    c = (r or {}).get("cpu_percent") or {}
    return ", ".join(f"{k} {v:.0f}%" for k, v in c.items())
stores = [s for s in ("redis", "sqlite") if any(r.get("store") == s for r in runs)]
print("| measure | " + " | ".join(stores) + " | target |")
print("|---|" + "---:|" * len(stores) + "---|")
def row(name, case, key, d=0, target=""):
    vals = [fmt((get(s, case) or {}).get(key), d) for s in stores]
    print(f"| {name} | " + " | ".join(vals) + f" | {target} |")
c = next((r for r in runs if r.get("case") == "callbacks"), None)
if c:
    row(f"callbacks/s, {c['n']:,} tasks due over {c['window_ms']} ms (first due → last callback)",
        "callbacks", "callbacks_per_s", 0, "≥ 20,000 Redis, ≥ 5,000 SQLite")
    row("  the same from the first callback received", "callbacks", "from_first_callback_per_s")
    row("  lateness of the last callback: max ms", "callbacks", "lateness_max_ms", 1)
    row("  callbacks received / retries", "callbacks", "received")
    row("  retries (Timewheel-Attempt > 1)", "callbacks", "retries")
    print("| CPU over the drain, % of one core | " +
          " | ".join(cpu(get(s, "callbacks")) for s in stores) + " | |")
l = next((r for r in runs if r.get("case") == "lateness"), None)
if l:
    row(f"lateness at {l['rate']:,} tasks/s ({l['n']:,} tasks): p50 ms", "lateness", "lateness_p50_ms", 2)
    row("  p99 ms", "lateness", "lateness_p99_ms", 2, "≤ 10")
    row("  max ms", "lateness", "lateness_max_ms", 2)
    row("  callbacks before their due time", "lateness", "early")
    print("| CPU at 1,000 tasks/s, % of one core | " +
          " | ".join(cpu(get(s, "lateness")) for s in stores) + " | |")
s = next((r for r in runs if r.get("case") == "submit"), None)
if s:
    row(f"POST /v1/tasks, {s['n']:,} requests, {s['conns']} keep-alive connections, not pipelined: requests/s",
        "submit", "requests_per_s")
    row("  latency p50 ms", "submit", "latency_p50_ms", 2)
    row("  latency p99 ms", "submit", "latency_p99_ms", 2)
    print("| CPU while submitting, % of one core | " +
          " | ".join(cpu(get(s, "submit")) for s in stores) + " | |")
EOF
if [ -n "$cluster_table" ]; then
  echo
  echo "Redis Cluster, no replicas (timewheeld --threads 1, callbacks case):"
  echo "$cluster_table"
fi
if [ -n "$wait_table" ]; then
  echo
  echo "Redis Cluster, 3 masters with a replica each: ?wait=0 against ?wait=1 (timewheeld --threads 1):"
  echo "$wait_table"
fi
echo
echo "every run:"
cat "$log"
[ -n "$keep_log" ] && cp "$log" "$keep_log"
exit 0
