#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (fuzz/README.md): builds them with clang++ in
# build-fuzz/ (-fsanitize=fuzzer,address,undefined), runs each for SECONDS, merges the new
# interesting inputs into fuzz/corpus/<target>/, and prints per target: executions, exec/s,
# corpus files, findings. For people, not CI (CI replays the corpus in every ctest run).
# Usage: bash scripts/fuzz.sh [SECONDS] [FILTER]
#   SECONDS  time per target (default 60; 600 = the 10 minutes each of a release check)
#   FILTER   an extended regex on target names (request, task_json, rfc3339, callback_url,
#            retry_after, redis_reply, redis_topology, cron_expression), e.g. 'request|redis'
# One target at a time, under nice: the fuzzer uses one core. A finding does not stop the
# run (-fork=1 -ignore_crashes=1): every crash, leak, timeout or out-of-memory input is kept
# in build-fuzz/fuzz-work/<target>/artifacts/ (outside git); replay one with
#   build-fuzz/fuzz/fuzz_<target> FILE
# and keep what still fails in fuzz/findings/<target>/ (not replayed by CI) until fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
filter="${2:-.}"
bash scripts/setup.sh libclang-rt-14-dev

build=build-fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
  CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld \
    -DTIMEWHEEL_BUILD_FUZZERS=ON -DTIMEWHEEL_BUILD_TESTS=OFF -DTIMEWHEEL_BUILD_EXAMPLES=OFF \
    -DTIMEWHEEL_BUILD_BENCHMARKS=OFF -DTIMEWHEEL_INSTALL=OFF >/dev/null
fi
targets=()
for source in fuzz/*.cpp; do
  name="$(basename "$source" .cpp)"
  [ "$name" = replay_main ] && continue
  grep -Eq -- "$filter" <<<"$name" && targets+=("$name")
done
[ ${#targets[@]} -eq 0 ] && { echo "fuzz: no target matches '$filter'" >&2; exit 2; }
nice -n 10 cmake --build "$build" -j"${JOBS:-2}" --target "${targets[@]/#/fuzz_}"

results=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  work="$build/fuzz-work/$t"
  rm -rf "$work/new"
  mkdir -p "$work/new" "$work/artifacts"
  echo "== fuzz_$t: $seconds s =="
  before=$(find "$work/artifacts" -type f | wc -l)
  touch "$work/started"
  # New inputs go to $work/new (the first directory); the committed corpus seeds the run.
  (cd "$work" && nice -n 10 "$OLDPWD/$bin" -fork=1 -ignore_crashes=1 -ignore_ooms=1 \
    -ignore_timeouts=1 -timeout=25 -rss_limit_mb=2048 -max_total_time="$seconds" \
    -artifact_prefix=artifacts/ new "$OLDPWD/fuzz/corpus/$t") >"$work/log" 2>&1 || true
  # The last status line of the fork mode, "#<execs>: cov: .. corp: .. exec/s <now> ..",
  # gives the executions; the rate printed is the mean over the run.
  stats="$(grep -E '^#[0-9]+: cov:' "$work/log" | tail -1 || true)"
  execs="$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$stats")"
  rate="?"
  [ -n "$execs" ] && rate=$((execs / seconds))
  # The committed corpus, minimized: the hand-written seeds (any name that is not a SHA-1),
  # then one input per new coverage edge from the old corpus and this run's (-merge=1 with
  # edges only, not hit counts: a few hundred files, which CI replays in well under a second).
  rm -rf "$work/min" && mkdir -p "$work/min"
  find "fuzz/corpus/$t" -type f -regextype posix-extended ! -regex '.*/[0-9a-f]{40}' -exec cp {} "$work/min/" \;
  if nice -n 10 "$bin" -merge=1 -use_counters=0 "$work/min" "fuzz/corpus/$t" "$work/new" \
    >"$work/merge.log" 2>&1; then
    rm -f "fuzz/corpus/$t"/* && cp "$work/min"/* "fuzz/corpus/$t/"
  else
    echo "fuzz: the merge failed (see $work/merge.log); fuzz/corpus/$t left as it was" >&2
  fi
  files=$(find "fuzz/corpus/$t" -type f | wc -l)
  after=$(find "$work/artifacts" -type f | wc -l)
  results+=("$(printf '%-14s %6s s %12s execs %8s exec/s %5s corpus files %3s new findings' \
    "$t" "$seconds" "${execs:-?}" "${rate:-?}" "$files" "$((after - before))")")
  echo "${results[-1]}"
  find "$work/artifacts" -type f -newer "$work/started" -printf '  finding: %p\n' 2>/dev/null | head -20
done
echo "== summary (logs: $build/fuzz-work/<target>/log) =="
printf '%s\n' "${results[@]}"
