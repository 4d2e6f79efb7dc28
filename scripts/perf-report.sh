#!/usr/bin/env bash
# The performance report in one command: installs what is missing, builds the benchmarks in
# Release, runs the whole suite and writes into one folder
#   results.json  the raw Google Benchmark JSON (medians and cv over the repetitions)
#   results.md    the targets, a table per operation with ratios, every figure
#   *.png         ns per operation against live entries, one line per implementation
#   machine.txt   CPU, kernel, compiler, library versions, commit, load
#   run.log       the console output of the run (git ignores it)
#
# Usage: scripts/perf-report.sh [--quick] [--repetitions R] [--min-time S] [--filter REGEX]
#                               [OUTDIR]
#   OUTDIR          default docs/performance (then the figures in docs/performance.md too)
#   --quick         a short run to try the pipeline: sizes up to 1e6 only, one repetition,
#                   0.1 s per benchmark (a few minutes); OUTDIR defaults to
#                   build-release/perf-quick, so that the committed report stays as it is
#   --repetitions R repetitions of each benchmark up to 1e6 entries (default 3; the tables
#                   use the medians). The 1e7-entry benchmarks run once, in a second pass:
#                   each takes from seconds to a minute to set up.
#   --min-time S    Google Benchmark's minimum timed seconds per benchmark (default 0.5)
#   --filter REGEX  one pass over the benchmarks whose names match (Google Benchmark's
#                   filter; a leading '-' excludes), with R repetitions
# Environment: BUILD_DIR (default build-release), JOBS (default 2).
# Idempotent; run it on a quiet machine: other processes only ever add time.
set -euo pipefail
started=$(date +%s)
cd "$(dirname "$0")/.."

outdir=""
repetitions=3
min_time=""
quick=0
filter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --repetitions) repetitions="$2"; shift ;;
    --repetitions=*) repetitions="${1#*=}" ;;
    --min-time) min_time="$2"; shift ;;
    --min-time=*) min_time="${1#*=}" ;;
    --filter) filter="$2"; shift ;;
    --filter=*) filter="${1#*=}" ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "perf-report: unknown option $1" >&2; exit 2 ;;
    *) outdir="$1" ;;
  esac
  shift
done
case "$repetitions" in
  ''|*[!0-9]*|0) echo "perf-report: --repetitions must be a positive integer, got '$repetitions'" >&2; exit 2 ;;
esac

build="${BUILD_DIR:-build-release}"
# A quick run's figures are not for committing: by default they go to the build folder.
[ -n "$outdir" ] || { [ "$quick" -eq 1 ] && outdir="$build/perf-quick" || outdir=docs/performance; }
bash scripts/setup.sh gnuplot-nox python3
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
  -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target timewheel_bench
mkdir -p "$outdir"

# Two passes: everything up to 1e6 entries with the repetitions, then the 1e7-entry cases
# once; their JSON is merged into results.json. --quick skips the second, --filter makes one.
common=(--benchmark_format=console --benchmark_out_format=json)
if [ "$quick" -eq 1 ]; then
  repetitions=1
  min_time="${min_time:-0.1}"
fi
[ -z "$min_time" ] || common+=(--benchmark_min_time="$min_time")
repeat=()
if [ "$repetitions" -gt 1 ]; then
  repeat=(--benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true)
fi
# Per pass: a name, a filter, and whether it repeats.
if [ -n "$filter" ]; then
  pass_names=(main); pass_filters=("$filter"); pass_repeats=(yes)
elif [ "$quick" -eq 1 ]; then
  pass_names=(main); pass_filters=('-/10000000$'); pass_repeats=(no)
else
  pass_names=(main large); pass_filters=('-/10000000$' '/10000000$'); pass_repeats=(yes no)
fi

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
    echo "run:        pass ${pass_names[$i]}: filter '${pass_filters[$i]}', $([ "${pass_repeats[$i]}" = yes ] && echo "$repetitions" || echo 1) repetition(s), min_time ${min_time:-0.5} s"
  done
  echo "load avg:   $(cut -d' ' -f1-3 /proc/loadavg) (before the run)"
} > "$outdir/machine.txt"

: > "$outdir/run.log"
outputs=()
for i in "${!pass_names[@]}"; do
  out="$build/perf-report-${pass_names[$i]}.json" # merged into results.json below
  rm -f "$out"
  args=("${common[@]}" --benchmark_filter="${pass_filters[$i]}" --benchmark_out="$out")
  [ "${pass_repeats[$i]}" = no ] || args+=("${repeat[@]}")
  echo "perf-report: $build/bench/timewheel_bench ${args[*]}" | tee -a "$outdir/run.log"
  "$build/bench/timewheel_bench" "${args[@]}" 2>&1 | tee -a "$outdir/run.log"
  if [ ! -s "$out" ]; then
    echo "perf-report: the benchmarks wrote no results (bad --filter?); see $outdir/run.log" >&2
    exit 1
  fi
  outputs+=("$out")
done
python3 - "$outdir/results.json" "${outputs[@]}" <<'PY'
import json, sys
merged = None
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if merged is None:
        merged = data
    else:
        merged["benchmarks"] += data["benchmarks"]
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
