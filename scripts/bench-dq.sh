#!/usr/bin/env bash
# Benchmarks the durable queue (timewheel::dq: dq::queue, dq::worker, dq::redis_store) side by
# side with BullMQ (npm, bench/bullmq/), against ONE redis-server started here on 127.0.0.1
# (a free port, `--save '' --appendonly no`: throughput without disk; both systems alike),
# in the same run, the same N, FLUSHALL between runs. The two alternate case by case, so
# that a change of load on the machine hits both alike. Prints one Markdown table with the
# ratios, then every run's JSON line (bench/dq/dq_bench.cpp and bench/bullmq/bench.js say
# what each field means).
#
# Cases (full): throughput with N = 100k and 1M, one worker process then two; Redis memory
# per delayed task at 1M (100-byte payload) from the 1M one-worker run; lateness at 1,000
# tasks/s (20,000 tasks, 20 s); timewheel's allocations per task in the worker; the store
# scripts' own ceiling (claim -> start -> ack with no worker, and each script's Redis time).
# --quick: N = 100k only (memory at 100k), lateness over 5,000 tasks: a smoke run.
#
# Builds dq_bench in Release in $BUILD_DIR (default build-release/). Installs BullMQ with
# `npm ci` when bench/bullmq/node_modules is missing (the registry is needed once).
# Usage: scripts/bench-dq.sh [--quick] [--only timewheel|bullmq] [--keep-log FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

quick=0
only=""
keep_log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --keep-log) keep_log="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build-release}"
started=$(date +%s)

if [ "$only" != bullmq ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target dq_bench >/dev/null
fi
dq="$build/bench/dq/dq_bench"
if [ "$only" != timewheel ] && [ ! -d bench/bullmq/node_modules ]; then
  # npm ci when the lock is complete; npm 11 counts the optional platform packages of
  # msgpackr-extract as missing from a lock written elsewhere, so fall back on npm install
  # (versions still pinned by package.json and the lock, nothing saved).
  (cd bench/bullmq && { npm ci --no-audit --no-fund >/dev/null 2>&1 ||
                        npm install --no-audit --no-fund --no-save >/dev/null; })
fi

source scripts/lib/private-redis.sh
start_private_redis timewheel-bench-dq
dir="$redis_dir" port="$redis_port"

log="$dir/runs.jsonl"
: >"$log"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
run() { # $1 = system, then the mode and its options
  local who="$1"; shift
  [ -n "$only" ] && [ "$only" != "$who" ] && return 0
  local out
  if [ "$who" = timewheel ]; then
    out=$("$dq" "$@" --port "$port")
  else
    out=$(node bench/bullmq/bench.js "$@" --port "$port")
  fi
  echo "$out" | tee -a "$log" >&2
}
both() { run timewheel "$@"; run bullmq "$@"; }

if [ "$quick" = 1 ]; then
  sizes=(100000)
  late_n=5000
else
  sizes=(100000 1000000)
  late_n=20000
fi
biggest=${sizes[-1]}
for n in "${sizes[@]}"; do
  for w in 1 2; do
    mem=()
    [ "$n" = "$biggest" ] && [ "$w" = 1 ] && mem=(--memory)
    both throughput --n "$n" --workers "$w" --window-ms 1000 --payload 100 "${mem[@]}"
  done
done
both lateness --n "$late_n" --rate 1000 --payload 100
run timewheel ceiling --n 100000 --batch 256 --depth 4 --payload 100
# The store's own measure of its scripts (bench/dq/store_ceiling.cpp, the store's tool).
store_ceiling_out=""
if [ "$only" != bullmq ]; then
  cmake --build "$build" -j"${JOBS:-2}" --target store_ceiling >/dev/null
  store_ceiling_out=$("$build/bench/dq/store_ceiling" --port "$port" --tasks 100000 \
    --cycle-tasks 100000 --payload 100 --batch 256)
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

bullmq_version=$(node -p 'require("./bench/bullmq/node_modules/bullmq/package.json").version' 2>/dev/null || echo "?")
ioredis_version=$(node -p 'require("./bench/bullmq/node_modules/ioredis/package.json").version' 2>/dev/null || echo "?")
echo
echo "redis-server $(redis-server --version | awk '{print $3}' | cut -d= -f2) on 127.0.0.1" \
     "(--save '' --appendonly no), $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1))," \
     "Node $(node --version), BullMQ $bullmq_version, ioredis $ioredis_version," \
     "$(${CXX:-c++} --version | head -1), commit $(git rev-parse --short HEAD);" \
     "load average $load_before before, $load_after after; $(( $(date +%s) - started )) s"
echo
python3 - "$log" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def get(system, case, **kw):
    for r in runs:
        if r["system"] == system and r["case"] == case and all(r.get(k) == v for k, v in kw.items()):
            return r
    return None
def fmt(v, d=0):
    return "" if v is None else (f"{v:,.{d}f}" if isinstance(v, (int, float)) else str(v))
def row(name, a, b, d=0, better="higher"):
    ratio = ""
    if a is not None and b is not None and a and b:
        ratio = f"{a / b:.2f}×" if better == "higher" else f"{b / a:.2f}× lower"
        if better == "lower" and a > b:
            ratio = f"{a / b:.2f}× higher"
    print(f"| {name} | {fmt(a, d)} | {fmt(b, d)} | {ratio} |")
def field(r, k):
    return None if r is None else r.get(k)

print("| measure | timewheel dq | BullMQ | ratio |")
print("|---|---:|---:|---:|")
sizes = sorted({r["n"] for r in runs if r["case"] == "throughput"})
for n in sizes:
    for w in (1, 2):
        a = get("timewheel", "throughput", n=n, workers=w)
        b = get("bullmq", "throughput", n=n, workers=w)
        row(f"throughput, {n:,} tasks due over 1 s, {w} worker process{'es' if w > 1 else ''}: tasks/s (first due → last ack)",
            field(a, "tasks_per_s"), field(b, "tasks_per_s"))
for n in sizes:
    a = get("timewheel", "throughput", n=n, workers=1)
    b = get("bullmq", "throughput", n=n, workers=1)
    row(f"submit, {n:,} tasks (1024 / 8×1000 in flight): tasks/s", field(a, "submit_per_s"), field(b, "submit_per_s"))
for r in runs:
    if r["case"] == "throughput" and "bytes_per_task" in r and r["system"] == "timewheel":
        b = get("bullmq", "throughput", n=r["n"], workers=1)
        row(f"Redis used_memory per delayed task, {r['n']:,} pending, 100-byte payload: bytes",
            r["bytes_per_task"], field(b, "bytes_per_task"), 0, "lower")
a = get("timewheel", "lateness"); b = get("bullmq", "lateness")
if a or b:
    n = (a or b)["n"]
    for k in ("p50_ms", "p99_ms", "max_ms"):
        row(f"lateness at 1,000 tasks/s ({n:,} tasks), handler start − due: {k[:-3]} ms",
            field(a, k), field(b, k), 2, "lower")
    row("lateness: tasks started before their due time", field(a, "early"), field(b, "early"))
for n in sizes:
    for w in (1, 2):
        a = get("timewheel", "throughput", n=n, workers=w)
        b = get("bullmq", "throughput", n=n, workers=w)
        if a or b:
            row(f"Redis CPU per task over the drain, {n:,}, {w} worker{'s' if w > 1 else ''}: µs",
                field(a, "redis_cpu_us_per_task"), field(b, "redis_cpu_us_per_task"), 1, "lower")
for n in sizes:
    for w in (1, 2):
        a = get("timewheel", "throughput", n=n, workers=w)
        if a:
            row(f"allocations per task in the worker after warm-up, {n:,}, {w} worker{'s' if w > 1 else ''}",
                a.get("allocs_per_task"), None, 2)
a = get("timewheel", "lateness")
if a:
    row("allocations per task in the worker, lateness run", a.get("allocs_per_task"), None, 2)
c = get("timewheel", "ceiling")
if c:
    row(f"the store's scripts alone: claim → start → ack loop, {c['n']:,} tasks, batch {c['batch']}, {c['depth']} in flight: tasks/s",
        c.get("tasks_per_s"), None)
    row("the scripts' Redis time per task: claim + start + ack = µs", c.get("scripts_us_per_task"), None, 2)
    row(f"  claim {c.get('claim_us_per_task')} µs, start {c.get('start_us_per_task')} µs, ack {c.get('ack_us_per_task')} µs: Redis-bound ceiling, tasks/s",
        c.get("scripts_ceiling_per_s"), None)
print()
print("Redis shares of a core over each drain (Redis CPU seconds / drain seconds):",
      ", ".join(f"{r['system']} {r['n']:,}×{r['workers']}: {r.get('redis_cpu_share', '?')}"
                for r in runs if r["case"] == "throughput"))
EOF
if [ -n "$store_ceiling_out" ]; then
  echo
  echo "bench/dq/store_ceiling (the store's scripts alone, 100,000 tasks, same server):"
  echo "$store_ceiling_out" | sed 's/^/    /'
fi
echo
echo "every run:"
cat "$log"
[ -n "$keep_log" ] && cp "$log" "$keep_log"
exit 0
