#!/usr/bin/env bash
# The performance report in one command: installs what is missing, builds the benchmarks in
# Release, runs the whole suite and writes into one folder
#   results.json  the raw Google Benchmark JSON (medians and cv over the repetitions)
#   results.md    the targets, a table per operation with ratios, every figure
#   *.png         ns per operation against live entries, one line per implementation
#   machine.txt   CPU, kernel, compiler, library versions, commit, load
#   run.log       the console output of the run (git ignores it)
#
# Usage: scripts/perf-report.sh [--quick] [--runs R] [--min-time S] [--filter REGEX] [OUTDIR]
#   OUTDIR          default docs/performance (then the figures in docs/performance.md too)
#   --quick         a short run to try the pipeline: the headline set only (the core
#                   operations at 10,000 and 1,000,000 timers), one process run, 0.1 s per
#                   benchmark (a few minutes); OUTDIR defaults to build-release/perf-quick,
#                   so that the committed report stays as it is
#   --runs R        process runs of the headline set (default 3; the tables use the medians
#                   over the runs, each a fresh process). The other benchmarks run once, and
#                   the 1e7-timer ones in a pass of their own.
#   --min-time S    Google Benchmark's minimum timed seconds per benchmark (default 0.2)
#   --filter REGEX  one pass over the benchmarks whose names match (Google Benchmark's
#                   filter; a leading '-' excludes), R process runs
# Environment: BUILD_DIR (default build-release), JOBS (default 2).
# Idempotent; run it on a quiet machine: other processes only ever add time.
set -euo pipefail
started=$(date +%s)
cd "$(dirname "$0")/.."

outdir=""
runs=3
min_time=""
quick=0
filter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --runs) runs="$2"; shift ;;
    --runs=*) runs="${1#*=}" ;;
    --min-time) min_time="$2"; shift ;;
    --min-time=*) min_time="${1#*=}" ;;
    --filter) filter="$2"; shift ;;
    --filter=*) filter="${1#*=}" ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "perf-report: unknown option $1" >&2; exit 2 ;;
    *) outdir="$1" ;;
  esac
  shift
done
case "$runs" in
  ''|*[!0-9]*|0) echo "perf-report: --runs must be a positive integer, got '$runs'" >&2; exit 2 ;;
esac

build="${BUILD_DIR:-build-release}"
# A quick run's figures are not for committing: by default they go to the build folder.
[ -n "$outdir" ] || { [ "$quick" -eq 1 ] && outdir="$build/perf-quick" || outdir=docs/performance; }
bash scripts/setup.sh gnuplot-nox python3
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target timewheel_bench
mkdir -p "$outdir"

# Passes: the headline set (the core operations at 1e4 and 1e6 against steady_timer, the heap
# and the multimap, the core's bytes and catch-up, and wheel_timer's arm and cancel at 1e6
# against steady_timer's: every ratio a target of issue 12 names), run as R separate
# processes whose medians the report uses; everything else up to 1e6 once; the 1e7-timer
# cases once. Their JSON is merged into results.json. --quick runs the headline set once;
# --filter makes one.
headline='^(wheel|heap|multimap|steady_timer)/(arm|cancel|expire|expire_tick|move_later)/(10000|1000000)$|^wheel/(catchup|bytes_per_entry)/|^asio/(wheel_timer|steady_timer)/(arm|cancel)/1000000/'
common=(--benchmark_format=console --benchmark_out_format=json)
if [ "$quick" -eq 1 ]; then
  runs=1
  min_time="${min_time:-0.1}"
fi
common+=(--benchmark_min_time="${min_time:-0.2}")
# Per pass: a name, a filter, and how many process runs.
if [ -n "$filter" ]; then
  pass_names=(main); pass_filters=("$filter"); pass_runs=("$runs")
elif [ "$quick" -eq 1 ]; then
  pass_names=(headline); pass_filters=("$headline"); pass_runs=(1)
else
  pass_names=(headline rest large)
  pass_filters=("$headline" "-$headline|/10000000$" '/10000000$')
  pass_runs=("$runs" 1 1)
fi

# A file rewritten with the same bytes (a previous report) is not a local change.
git update-index -q --refresh >/dev/null 2>&1 || true
{
  echo "date:       $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit:     $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "cpu:        $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs; $(lscpu | sed -n 's/^Hypervisor vendor: *//p' | sed 's/$/ guest/'))"
  echo "caches:     $(lscpu | sed -n 's/^\(L[123][di]\{0,1\}\) cache: *\(.*\)/\1 \2/p' | paste -sd';' | sed 's/;/; /g')"
  echo "memory:     $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "kernel:     $(uname -sr)"
  echo "compiler:   $(${CXX:-c++} --version | head -1)"
  echo "boost:      $(sed -n 's/^#define BOOST_LIB_VERSION "\(.*\)"/\1/p' /usr/include/boost/version.hpp | tr _ .)"
  echo "benchmark:  $(dpkg-query -W -f='${Version}' libbenchmark-dev 2>/dev/null || echo unknown)"
  echo "build:      Release ($(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:STRING=//p' "$build/CMakeCache.txt"))"
  for i in "${!pass_names[@]}"; do
    echo "run:        pass ${pass_names[$i]}: filter '${pass_filters[$i]}', ${pass_runs[$i]} process run(s), min_time ${min_time:-0.2} s"
  done
  echo "load avg:   $(cut -d' ' -f1-3 /proc/loadavg) (before the run)"
} > "$outdir/machine.txt"

: > "$outdir/run.log"
outputs=()
for i in "${!pass_names[@]}"; do
  for run in $(seq 1 "${pass_runs[$i]}"); do
    out="$build/perf-report-${pass_names[$i]}-$run.json" # merged into results.json below
    rm -f "$out"
    args=("${common[@]}" --benchmark_filter="${pass_filters[$i]}" --benchmark_out="$out")
    echo "perf-report: $build/bench/timewheel_bench ${args[*]}" | tee -a "$outdir/run.log"
    "$build/bench/timewheel_bench" "${args[@]}" 2>&1 | tee -a "$outdir/run.log"
    if [ ! -s "$out" ]; then
      echo "perf-report: the benchmarks wrote no results (bad --filter?); see $outdir/run.log" >&2
      exit 1
    fi
    outputs+=("$out")
  done
done
# One entry per benchmark; a benchmark run by several processes becomes a median and a cv
# aggregate (of every counter), as Google Benchmark's own repetitions would.
python3 - "$outdir/results.json" "${outputs[@]}" <<'PY'
import json, statistics, sys
merged, by_name, order = None, {}, []
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if merged is None:
        merged = data
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"])
        if name not in by_name:
            order.append(name)
        by_name.setdefault(name, []).append(b)
out = []
for name in order:
    runs = by_name[name]
    if len(runs) == 1:
        out += runs
        continue
    ok = [b for b in runs if not b.get("error_occurred")] or runs
    keys = [k for k, v in ok[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    median = dict(ok[0], run_name=name, run_type="aggregate", aggregate_name="median",
                  repetitions=len(runs))
    cv = dict(median, aggregate_name="cv")
    for k in keys:
        values = [b[k] for b in ok if isinstance(b.get(k), (int, float))]
        median[k] = statistics.median(values)
        mean = statistics.mean(values)
        cv[k] = statistics.pstdev(values) / mean if mean else 0.0
    median["name"] = name + "_median"
    cv["name"] = name + "_cv"
    out += [median, cv]
merged["benchmarks"] = out
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump(merged, f, indent=1)
PY
rm -f "${outputs[@]}"
elapsed=$(( $(date +%s) - started ))
{
  echo "load avg:   $(cut -d' ' -f1-3 /proc/loadavg) (after the run)"
  echo "duration:   $((elapsed / 60)) min $((elapsed % 60)) s, build included"
} >> "$outdir/machine.txt"

report_args=("$outdir/results.json" "$outdir" --machine "$outdir/machine.txt")
# The default folder is the committed report: refresh the figures quoted in its page too.
if [ "$(realpath "$outdir")" = "$(realpath docs/performance)" ]; then
  report_args+=(--doc docs/performance.md)
fi
python3 scripts/perf_report.py "${report_args[@]}"

elapsed=$(( $(date +%s) - started ))
echo "perf-report: done in $((elapsed / 60)) min $((elapsed % 60)) s; see $outdir/results.md"
