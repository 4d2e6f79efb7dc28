#!/usr/bin/env python3
"""Turns one Google Benchmark JSON run of timewheel_bench into a report.

Usage: perf_report.py RESULTS_JSON OUTDIR [--machine MACHINE_TXT] [--doc DOC_MD]

Writes OUTDIR/results.md (the targets, one table per operation with ratios against the
timewheel implementation, the other measurements, every benchmark's raw figures) and one PNG
per operation measured at two or more sizes (ns per operation against live entries, both
axes logarithmic, one line per implementation), drawn by gnuplot. Only the Python standard
library and gnuplot are needed. Benchmark names are <implementation>/<operation>/<N>.

With --doc, the block of DOC_MD between the lines `<!-- perf-report: begin -->` and
`<!-- perf-report: end -->` is replaced by the targets and the headline table at 1,000,000
live entries, so that the prose around it keeps pointing at the figures of the last run.

Figures are the medians over the repetitions when the run has aggregates
(--benchmark_repetitions=R --benchmark_report_aggregates_only=true), the single run's
otherwise.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from collections import OrderedDict

# The implementation that ratios are taken against, first found in an operation's group.
REFERENCES = ["wheel", "wheel_timer", "wheel_service", "keyed_timers", "ttl_cache",
              "idle_reaper"]

# The partner of a baseline that appears beside more than one timewheel implementation
# under the same operation name (ttl_cache and the core wheel both have `expire`).
PARTNERS = {"lru_steady_timer": "ttl_cache", "map_steady_timer": "keyed_timers",
            "lazy_steady_timer": "idle_reaper"}

# Operations shown first, in this order; the others follow in the order of the run.
ORDER = ["arm", "cancel", "expire", "expire_tick", "move_later", "catchup", "random_rmw",
         "pointer_chase"]

# Benchmarks whose ns_per_op is the figure; other groups are tables of counters.
TIME_COUNTER = "ns_per_op"

LAG_OPERATIONS = {"catchup"}


def load(path):
    """Returns (context, OrderedDict run_name -> figures) from a Google Benchmark JSON file."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    runs = OrderedDict()
    cvs = {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        kind = b.get("run_type", "iteration")
        if kind == "aggregate":
            agg = b.get("aggregate_name")
            if agg == "median":
                runs[name] = b
            elif agg == "cv":
                cvs[name] = b
        elif name not in runs or runs[name].get("run_type") != "aggregate":
            # Without aggregates (one repetition): the last run of that name.
            runs[name] = b
    for name, b in runs.items():
        b["_cv"] = cvs.get(name)
    return data.get("context", {}), runs


def split(name):
    parts = name.split("/")
    if len(parts) != 3:
        return None
    impl, op, n = parts
    try:
        return impl, op, int(n)
    except ValueError:
        return None


def fmt_ns(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_n(n):
    return f"{n:,}"


def fmt_ratio(x):
    if x is None:
        return "–"
    if x >= 10:
        return f"{x:.0f}×"
    return f"{x:.1f}×"


def fmt_value(x):
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def counter(run, key):
    v = run.get(key)
    return float(v) if isinstance(v, (int, float)) else None


def group(runs):
    """operation -> OrderedDict impl -> {N: run}, in the order of the run."""
    ops = OrderedDict()
    for name, run in runs.items():
        parsed = split(name)
        if parsed is None:
            continue
        impl, op, n = parsed
        ops.setdefault(op, OrderedDict()).setdefault(impl, {})[n] = run
    return ops


def families(op, impls):
    """Splits an operation's implementations into (title, file stem, impls) per timewheel
    implementation present, each with its baselines."""
    refs = [r for r in REFERENCES if r in impls]
    if len(refs) <= 1:
        return [(op, op, impls)]
    fam = OrderedDict((r, OrderedDict()) for r in refs)
    for impl, runs in impls.items():
        home = impl if impl in refs else PARTNERS.get(impl)
        fam[home if home in fam else refs[0]][impl] = runs
    return [(op if i == 0 else f"{op} ({r})", op if i == 0 else f"{op}-{r}", members)
            for i, (r, members) in enumerate(fam.items())]


def ordered(ops):
    first = [op for op in ORDER if op in ops]
    return first + [op for op in ops if op not in ORDER]


def reference_of(impls):
    for r in REFERENCES:
        if r in impls:
            return r
    return None


def is_timed(impls):
    return any(counter(run, TIME_COUNTER) is not None and not run.get("error_occurred")
               for runs in impls.values() for run in runs.values())


def timed_table(op, impls):
    ref = reference_of(impls)
    names = list(impls)
    sizes = sorted({n for runs in impls.values() for n in runs})
    others = [i for i in names if i != ref] if ref else []
    axis = "lag (s)" if op in LAG_OPERATIONS else "live entries"
    head = [axis] + [f"{i} ns/op" for i in names] + [f"{i} / {ref}" for i in others]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---:"] * len(head)) + "|"]
    for n in sizes:
        cells = [fmt_n(n)]
        values = {}
        for i in names:
            run = impls[i].get(n)
            v = None
            if run is not None and not run.get("error_occurred"):
                v = counter(run, TIME_COUNTER)
            values[i] = v
            cells.append(fmt_ns(v) if run is None or not run.get("error_occurred")
                         else "error")
        for i in others:
            a, b = values.get(i), values.get(ref)
            cells.append(fmt_ratio(a / b) if a is not None and b else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# Counters that are bookkeeping, not results.
HIDDEN = {"items_per_second", "iterations", "real_time", "cpu_time", "repetitions",
          "repetition_index", "threads", "family_index", "per_family_instance_index"}


def counters_of(run):
    known = {"name", "run_name", "run_type", "aggregate_name", "aggregate_unit", "time_unit",
             "error_occurred", "error_message", "_cv", "label"}
    return [k for k, v in run.items()
            if k not in known and k not in HIDDEN and isinstance(v, (int, float))]


def counter_table(impls):
    keys = []
    for runs in impls.values():
        for run in runs.values():
            for k in counters_of(run):
                if k not in keys:
                    keys.append(k)
    head = ["benchmark"] + keys
    lines = ["| " + " | ".join(head) + " |", "|---|" + "|".join(["---:"] * len(keys)) + "|"]
    for impl, runs in impls.items():
        for n in sorted(runs):
            run = runs[n]
            cells = [f"`{run.get('run_name', run['name'])}`"]
            for k in keys:
                v = counter(run, k)
                cells.append(fmt_value(v) if v is not None else "–")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def get(runs, name, key=TIME_COUNTER):
    run = runs.get(name)
    if run is None or run.get("error_occurred"):
        return None
    return counter(run, key)


def cpu_ns(runs, name):
    """CPU nanoseconds per operation: the thread's CPU time in the timed batches
    (cpu_ns_per_op) where the benchmark reports it, else from items_per_second."""
    c = get(runs, name, "cpu_ns_per_op")
    if c:
        return c
    ips = get(runs, name, "items_per_second")
    return 1e9 / ips if ips else None


def targets(runs):
    """The issue's targets at 1M live entries: (target, figure, verdict) rows."""
    rows = []

    def at_most(label, name, limit):
        v, c = get(runs, name), cpu_ns(runs, name)
        if v is None:
            rows.append((label, f"`{name}`: not measured", "–"))
            return
        figure = f"`{name}`: {fmt_ns(v)} ns" + (f" (CPU time: {fmt_ns(c)} ns)" if c else "")
        verdict = "met" if v <= limit else "missed"
        if v > limit and c is not None and c <= limit:
            verdict += " (met in CPU time)"
        rows.append((label, figure, verdict))

    at_most("expiry with one advance() per 1 ms tick at 10,000 ≤ 60 ns per timer",
            "wheel/expire_tick/10000", 60)

    b = get(runs, "wheel/bytes_per_entry/1000000", "bytes_per_entry")
    if b is not None:
        rows.append(("≤ 32 bytes per raw entry",
                     f"`wheel/bytes_per_entry/1000000`: {fmt_value(b)} bytes",
                     "met" if b <= 32 else "missed"))

    allocs = [(name, counter(run, "allocs_per_op")) for name, run in runs.items()
              if name.startswith("wheel/") and counter(run, "allocs_per_op") is not None]
    b_allocs = get(runs, "wheel/bytes_per_entry/1000000", "allocs_per_entry")
    if b_allocs is not None:
        allocs.append(("wheel/bytes_per_entry/1000000 (arm)", b_allocs))
    if allocs:
        worst = max(allocs, key=lambda x: x[1])
        rows.append(("0 allocations",
                     f"largest of {len(allocs)} `wheel/*` benchmarks: "
                     f"{fmt_value(worst[1])} per operation (`{worst[0]}`)",
                     "met" if worst[1] == 0 else "missed"))

    lags = [(lag, get(runs, f"wheel/catchup/{lag}", "ns_per_catchup"))
            for lag in (60, 3600, 86400, 31536000)]
    lags = [(lag, v) for lag, v in lags if v is not None]
    if len(lags) >= 2:
        lo, hi = min(v for _, v in lags), max(v for _, v in lags)
        figures = ", ".join(f"{lag:,} s: {v / 1000:.1f} µs" for lag, v in lags)
        rows.append(("catch-up flat in the lag (1000 entries; flat: max/min ≤ 1.5)",
                     f"`wheel/catchup/<lag>`: {figures} (max/min {hi / lo:.2f})",
                     "met" if hi / lo <= 1.5 else "missed"))

    def ratio(label, slow, fast, limit):
        a, b = get(runs, slow), get(runs, fast)
        ca, cb = cpu_ns(runs, slow), cpu_ns(runs, fast)
        if a is None or b is None:
            rows.append((label, f"`{slow}` / `{fast}`: not measured", "–"))
            return
        figure = f"`{slow}` / `{fast}`: {fmt_ns(a)} / {fmt_ns(b)} ns = {a / b:.1f}×"
        if ca and cb:
            figure += f" (CPU time: {ca / cb:.1f}×)"
        verdict = "met" if a / b >= limit else "missed"
        if a / b < limit and ca and cb and ca / cb >= limit:
            verdict += " (met in CPU time)"
        rows.append((label, figure, verdict))

    fires = [(name, counter(run, "allocs_per_fire")) for name, run in runs.items()
             if name.startswith("wheel_service/") and counter(run, "fired_per_s")]
    if fires:
        worst = max(fires, key=lambda x: x[1])
        rows.append(("0 allocations per expiry through wheel_service (callback_timer)",
                     f"largest of {len(fires)} `wheel_service/wakeups_*` windows: "
                     f"{fmt_value(worst[1])} per timer fired (`{worst[0]}`)",
                     "met" if worst[1] == 0 else "missed"))

    # Issue 12: the core against steady_timer at 1,000,000 live timers, random order.
    ratio("core arm ≥ 8× steady_timer", "steady_timer/arm/1000000", "wheel/arm/1000000", 8)
    ratio("core cancel ≥ 40× steady_timer", "steady_timer/cancel/1000000",
          "wheel/cancel/1000000", 40)
    ratio("core expiry (one advance) ≥ 6× steady_timer", "steady_timer/expire/1000000",
          "wheel/expire/1000000", 6)
    ratio("core idle-loop move with time advancing ≥ 25× steady_timer",
          "steady_timer/move_later/1000000", "wheel/move_later/1000000", 25)
    # Issue 12: the Asio face against steady_timer, a whole I/O object each.
    ratio("wheel_timer arm ≥ 3× steady_timer", "asio/steady_timer/arm/1000000/iterations:10",
          "asio/wheel_timer/arm/1000000/iterations:10", 3)
    ratio("wheel_timer cancel ≥ 3× steady_timer",
          "asio/steady_timer/cancel/1000000/iterations:10",
          "asio/wheel_timer/cancel/1000000/iterations:10", 3)
    timer_bytes = get(runs, "wheel_timer/bytes_per_timer/1", "bytes")
    if timer_bytes is not None:
        rows.append(("wheel_timer ≤ 160 bytes per timer with one pending wait",
                     f"`wheel_timer/bytes_per_timer/1`: {timer_bytes:.0f} bytes",
                     "met" if timer_bytes <= 160 else "missed"))

    # Issue 11: the timer's incremental cost per hot touch (counters: the timed batches
    # against the baseline batches interleaved with them, plus poll()'s extra work). CPU time
    # of the thread decides: a loaded machine inflates the wall time outside the batches.
    for impl in ("idle_reaper", "wheel_timer"):
        label = f"{impl} hot touch at 1M: incremental cost ≥ 20× below steady_timer's"
        slow = get(runs, "steady_timer/hot_touch/1000000", "incremental_cpu_ns")
        fast = get(runs, f"{impl}/hot_touch/1000000", "incremental_cpu_ns")
        slow_wall = get(runs, "steady_timer/hot_touch/1000000", "incremental_ns")
        fast_wall = get(runs, f"{impl}/hot_touch/1000000", "incremental_ns")
        if slow is None or not fast or fast <= 0:
            rows.append((label, "not measured", "–"))
            continue
        wall = ""
        if slow_wall and fast_wall and fast_wall > 0:
            wall = f" (wall time: {fmt_ns(slow_wall)} / {fmt_ns(fast_wall)} ns = {slow_wall / fast_wall:.1f}×)"
        rows.append((label, f"`incremental_cpu_ns`: steady_timer {fmt_ns(slow)} / {impl} "
                            f"{fmt_ns(fast)} ns = {slow / fast:.1f}×{wall}",
                     "met" if slow / fast >= 20 else "missed"))
    return rows


def plot(op, stem, impls, outdir):
    """Writes OUTDIR/<stem>.png with gnuplot; returns its file name, or None."""
    timed = OrderedDict()
    for impl, runs in impls.items():
        points = sorted((n, counter(r, TIME_COUNTER)) for n, r in runs.items()
                        if not r.get("error_occurred") and counter(r, TIME_COUNTER))
        if points:
            timed[impl] = points
    sizes = sorted({n for pts in timed.values() for n, _ in pts})
    if len(sizes) < 2 or not all(n > 0 for n in sizes):
        return None
    data = os.path.join(outdir, f".{stem}.dat")
    with open(data, "w", encoding="utf-8") as f:
        for impl, points in timed.items():
            f.write(f'"{impl}"\n')
            for n, v in points:
                f.write(f"{n} {v}\n")
            f.write("\n\n")
    png = f"{stem}.png"
    xlabel = "lag (seconds)" if op in LAG_OPERATIONS else "live entries"
    script = f"""
set terminal pngcairo noenhanced size 800,520 font 'sans,10'
set output '{os.path.join(outdir, png)}'
set title '{op}: time per operation (median)'
set logscale xy
set xrange [{sizes[0] / 1.5}:{sizes[-1] * 1.5}]
set format x '1e%L'
set xlabel '{xlabel}'
set ylabel 'ns per operation (log scale)'
set grid xtics ytics mytics
set key outside right top
plot for [i=0:{len(timed) - 1}] '{data}' index i using 1:2 with linespoints lw 2 pt 7 \\
     title columnheader(1)
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.remove(data)
    return png


HEADLINE_OPS = ["arm", "cancel", "expire", "expire_tick", "move_later"]
HEADLINE_IMPLS = ["wheel", "steady_timer", "heap", "multimap"]


def headline(runs, n=1_000_000, cpu=False):
    """The core operations at n live entries: ns/op per implementation and ratios (wall
    time, or with cpu the thread's CPU time)."""
    others = HEADLINE_IMPLS[1:]
    head = ["operation"] + [f"{i} ns/op" for i in HEADLINE_IMPLS] + [f"{i} / wheel"
                                                                   for i in others]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "|".join(["---:"] * (len(head) - 1))
             + "|"]
    for op in HEADLINE_OPS:
        values = {i: (cpu_ns if cpu else get)(runs, f"{i}/{op}/{n}") for i in HEADLINE_IMPLS}
        if values["wheel"] is None:
            continue
        cells = [f"`{op}`"] + [fmt_ns(values[i]) for i in HEADLINE_IMPLS]
        cells += [fmt_ratio(values[i] / values["wheel"]) if values[i] else "–" for i in others]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def target_lines(runs):
    return ["| target | figure | |", "|---|---|---|"] + [
        f"| {t} | {fig} | {v} |" for t, fig, v in targets(runs)]


def update_doc(doc, runs, context, machine):
    begin, end = "<!-- perf-report: begin -->", "<!-- perf-report: end -->"
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    if begin not in text or end not in text:
        print(f"perf_report: {doc} has no generated block; left alone", file=sys.stderr)
        return
    block = [begin, "",
             f"From the run of {context.get('date', '?')[:10]} "
             f"(load average {', '.join(f'{x:.2f}' for x in context.get('load_avg', []))} "
             "at its start); every table and plot is in "
             "[performance/results.md](performance/results.md).", ""]
    if machine and os.path.exists(machine):
        with open(machine, encoding="utf-8") as f:
            block += ["```", f.read().rstrip(), "```", ""]
    block += ["**Targets**", ""] + target_lines(runs)
    for n in (1_000_000, 10_000):
        for cpu in (False, True):
            block += ["", f"**The core operations at {n:,} live timers** (ns per operation "
                      f"of {'CPU time of the thread' if cpu else 'wall time'}, median; "
                      "ratios above 1: the wheel is faster)", ""] + headline(runs, n, cpu)
    block += ["", end]
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(doc, "w", encoding="utf-8") as f:
        f.write(head + "\n".join(block) + tail)
    print(f"perf_report: updated the figures in {doc}")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results")
    parser.add_argument("outdir")
    parser.add_argument("--machine")
    parser.add_argument("--doc")
    args = parser.parse_args(argv[1:])
    results, outdir, machine = args.results, args.outdir, args.machine
    context, runs = load(results)
    ops = group(runs)
    have_gnuplot = shutil.which("gnuplot") is not None
    for old in os.listdir(outdir):
        if old.endswith(".png"):
            os.remove(os.path.join(outdir, old))

    out = ["# timewheel benchmark results", "",
           "Generated by `scripts/perf-report.sh` from `results.json` (Google Benchmark "
           "JSON) in this folder; `docs/performance.md` explains the method and the "
           "figures. Times are nanoseconds of wall time per operation (`ns_per_op`), the "
           "median over the repetitions; ratios are the other implementation's time "
           "divided by the timewheel one's (above 1: timewheel is faster)."]
    reps = {run.get("repetitions") for run in runs.values()}
    out += ["", f"- Date: {context.get('date', '?')}; host: {context.get('host_name', '?')}, "
            f"{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz; "
            f"load average at the start: "
            f"{', '.join(f'{x:.2f}' for x in context.get('load_avg', []))}",
            f"- Repetitions per benchmark: {', '.join(str(r) for r in sorted(reps - {None}))}; "
            f"{len(runs)} benchmarks"]
    if machine and os.path.exists(machine):
        with open(machine, encoding="utf-8") as f:
            out += ["", "```", f.read().rstrip(), "```"]

    out += ["", "## Targets", ""] + target_lines(runs)
    for n in (1_000_000, 10_000):
        for cpu in (False, True):
            out += ["", f"## The core operations at {n:,} live timers "
                    f"({'CPU time' if cpu else 'wall time'})", ""] + headline(runs, n, cpu)

    out += ["", "## Time per operation", ""]
    plots = []
    for op in ordered(ops):
        if not is_timed(ops[op]):
            continue
        for title, stem, impls in families(op, ops[op]):
            out += [f"### {title}", ""]
            out += timed_table(op, impls)
            png = plot(op, stem, impls, outdir) if have_gnuplot else None
            if png:
                plots.append(png)
                out += ["", f"![{title}]({png})"]
            out.append("")

    out += ["## Other measurements", ""]
    for op in ordered(ops):
        impls = ops[op]
        if is_timed(impls):
            continue
        out += [f"### {op}", ""]
        out += counter_table(impls)
        out.append("")

    out += ["## Every benchmark", "",
            "`cv`: coefficient of variation of `ns_per_op` over the repetitions; `cpu ns/op`:"
            " CPU time per operation from Google Benchmark's `items_per_second` (its timed "
            "region includes some pause/resume overhead).", "",
            "| benchmark | ns/op | cv | cpu ns/op | allocs/op |", "|---|---:|---:|---:|---:|"]
    for name, run in runs.items():
        if run.get("error_occurred"):
            out.append(f"| `{name}` | error: {run.get('error_message', '')} | | | |")
            continue
        ns = counter(run, TIME_COUNTER)
        cv_run = run.get("_cv")
        cv = counter(cv_run, TIME_COUNTER) if cv_run else None
        ips = counter(run, "items_per_second")
        allocs = counter(run, "allocs_per_op")
        out.append(f"| `{name}` | {fmt_ns(ns) if ns is not None else '–'} | "
                   f"{f'{100 * cv:.1f}%' if cv is not None else '–'} | "
                   f"{fmt_ns(1e9 / ips) if ips else '–'} | "
                   f"{fmt_value(allocs) if allocs is not None else '–'} |")

    with open(os.path.join(outdir, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(f"perf_report: {os.path.join(outdir, 'results.md')} and {len(plots)} plots"
          + ("" if have_gnuplot else " (gnuplot not found: no plots)"))
    if args.doc:
        update_doc(args.doc, runs, context, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
