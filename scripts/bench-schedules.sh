#!/usr/bin/env bash
# Benchmarks the materialiser of schedules on one node (issue 28: "100,000 schedules firing
# every minute are materialised without falling behind"): a private redis-server (loopback,
# no persistence, scripts/lib/private-redis.sh), one timewheeld on it with --no-worker (the
# materialiser runs on any node: the tasks it makes stay delayed, so nothing but the
# materialiser spends the node's CPU), N schedules created through POST /v1/schedules, all
# firing at the same instant every minute (`--rule cron`: "* * * * *", the worst case: a
# minute's work due at once; `--rule every`: every_ms 60000 with start_at spread evenly over
# the minute). Every schedule gets a start_at (the first occurrence, a whole minute), late
# enough that creating them all ends first, so that the materialiser is idle while they are
# created and the memory they take is read before any task exists.
#
# Reported, for each of --minutes minutes after the first occurrence:
#   - occurrences materialised (schedules whose next occurrence moved past that minute's
#     instants, read from the materialiser's index `{Q:s}:si` on every shard every 50 ms);
#   - when the last of them was created, relative to its instant (negative: ahead of it, as
#     the window of --schedule-window-ms intends; positive: late, the materialiser fell
#     behind), within 50 ms;
#   - the most schedules seen at once with an occurrence due (its instant passed) and not yet
#     materialised (0: never behind);
#   - timewheeld's CPU over the minute (/proc/PID/stat, utime + stime) and Redis's
#     (INFO cpu, used_cpu_user + used_cpu_sys), in % of one core;
# and once: Redis memory per schedule (INFO memory used_memory, after creating them less
# before), the creation rate.
#
# Builds timewheeld in Release in $BUILD_DIR (default build-release/) unless TIMEWHEELD names
# a binary. Run it with `nice` on a shared machine; it takes --minutes + about 2 minutes.
# Usage: scripts/bench-schedules.sh [--schedules N] [--minutes M] [--rule cron|every]
#                                   [--lead-s S] [-- timewheeld flags...]
#   --schedules N  default 100000
#   --minutes M    default 3
#   --lead-s S     seconds from the start of creation to the first occurrence, at least
#                  (default N/1500 + 20 + the window: creation ran at 1,100-2,500 a second
#                  here, depending on the load)
# Environment: BUILD_DIR, TIMEWHEELD, JOBS (build parallelism), CONNS (creating connections,
# default 8).
set -euo pipefail
cd "$(dirname "$0")/.."

n=100000
minutes=3
rule=cron
lead=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --schedules) n="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --rule) rule="$2"; shift 2 ;;
    --lead-s) lead="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$rule" in cron|every) ;; *) echo "--rule: cron or every" >&2; exit 2 ;; esac
build="${BUILD_DIR:-build-release}"
started=$(date +%s)

if [ -z "${TIMEWHEELD:-}" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=OFF -DTIMEWHEEL_BUILD_SERVER=ON \
    >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target timewheeld >/dev/null
fi
tw="${TIMEWHEELD:-$build/server/timewheeld}"

source scripts/lib/private-redis.sh
start_private_redis timewheel-bench-schedules
dir="$redis_dir"
tw_pid=""
trap '[ -n "$tw_pid" ] && kill -TERM $tw_pid 2>/dev/null && wait $tw_pid 2>/dev/null;
      kill $redis_pid 2>/dev/null; wait $redis_pid 2>/dev/null; rm -rf "$redis_dir"' EXIT

queue=sched
"$tw" --port 0 --port-file "$dir/port" --store "redis://127.0.0.1:$redis_port/$queue" \
  --threads 1 --no-worker --log-level warn "${extra[@]}" 2>>"$dir/timewheeld.log" &
tw_pid=$!
for _ in $(seq 200); do
  [ -s "$dir/port" ] && break
  kill -0 "$tw_pid" 2>/dev/null || { cat "$dir/timewheeld.log" >&2; exit 1; }
  sleep 0.05
done

# The materialiser's window (how long before its instant an occurrence becomes a task): the
# memory figure is read before the first one does.
window_ms=5000
for ((i = 0; i < ${#extra[@]}; i++)); do
  case "${extra[$i]}" in
    --schedule-window-ms) window_ms="${extra[$((i + 1))]}" ;;
    --schedule-window-ms=*) window_ms="${extra[$i]#*=}" ;;
  esac
done
lead="${lead:-$((n / 1500 + 20 + window_ms / 1000))}"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$(cat "$dir/port")" "$redis_port" "$queue" "$tw_pid" "$n" "$minutes" "$rule" \
  "$lead" "${CONNS:-8}" "$window_ms" <<'EOF'
import http.client, json, os, socket, sys, threading, time

api_port, redis_port, queue, tw_pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
n, minutes, rule, lead, conns = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], int(sys.argv[8]), int(sys.argv[9])
window_ms = int(sys.argv[10])
tick = os.sysconf("SC_CLK_TCK")

class redis:
    """A minimal RESP client: commands pipelined, replies parsed (integers, bulk, arrays)."""
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")
    def call(self, *cmds):
        out = b""
        for c in cmds:
            out += b"*%d\r\n" % len(c) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a)
                                                for a in (str(x).encode() for x in c))
        self.s.sendall(out)
        return [self.read() for _ in cmds]
    def read(self):
        line = self.f.readline().rstrip(b"\r\n")
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-"):
            return rest.decode()
        if t == b":":
            return int(rest)
        if t == b"$":
            if int(rest) < 0:
                return None
            data = self.f.read(int(rest) + 2)
            return data[:-2].decode()
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise RuntimeError("bad reply " + repr(line))
    def info(self, section):
        text = self.call(("INFO", section))[0]
        return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)

r = redis(redis_port)
def redis_cpu():
    i = r.info("cpu")
    return float(i["used_cpu_user"]) + float(i["used_cpu_sys"])
def node_cpu():
    f = open(f"/proc/{tw_pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick  # utime, stime (fields 14, 15)

def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)

# The first occurrence: a whole minute at least `lead` seconds away.
now = int(time.time() * 1000)
first = (now + lead * 1000 + 59999) // 60000 * 60000

mem_before = int(r.info("memory")["used_memory"])
payload = "x" * 100  # the callback's body: 100 bytes, as in docs/dq.md's earlier figures
def body(i):
    b = {"id": f"s-{i}", "callback": {"url": "http://127.0.0.1:9/hook", "body": payload}}
    if rule == "cron":
        b.update({"cron": "* * * * *", "start_at": iso(first)})
    else:
        b.update({"every_ms": 60000, "start_at": iso(first + i * 60000 // n)})
    return json.dumps(b)

failed = []
def create(lo, hi):
    c = http.client.HTTPConnection("127.0.0.1", api_port)
    for i in range(lo, hi):
        c.request("POST", "/v1/schedules", body(i), {"Content-Type": "application/json"})
        a = c.getresponse()
        a.read()
        if a.status != 201:
            failed.append((i, a.status))
t0 = time.time()
threads = [threading.Thread(target=create, args=(k * n // conns, (k + 1) * n // conns))
           for k in range(conns)]
for t in threads: t.start()
for t in threads: t.join()
created_s = time.time() - t0
if failed:
    sys.exit(f"{len(failed)} creates failed, e.g. {failed[:3]}")
mem_after = int(r.info("memory")["used_memory"])
ahead_ms = first - int(time.time() * 1000)
print(f"created {n:,} schedules in {created_s:.1f} s ({n / created_s:,.0f}/s); "
      f"Redis memory {mem_before:,} -> {mem_after:,} B: {(mem_after - mem_before) / n:.0f} B a "
      f"schedule; the first occurrence {ahead_ms / 1000:.1f} s later", flush=True)
if ahead_ms < window_ms + 1000:
    print("WARNING: creation ended less than the window before the first occurrence: the "
          "memory figure may include tasks, and the first minute's is not a minute's work; "
          "raise --lead-s", flush=True)

shards = int(r.call(("HGET", "{%s}:config" % queue, "shards"))[0] or 64)
def pending(instant):  # schedules whose next occurrence is at or before `instant`
    return sum(r.call(*[("ZCOUNT", "{%s:%d}:si" % (queue, s), "-inf", instant)
                        for s in range(shards)]))

rows = []
for m in range(minutes):
    # Minute m's instants: first + m min (cron), or [first + m min, first + m+1 min) (every).
    lo = first + m * 60000
    hi = lo + (0 if rule == "cron" else 59999)
    start = lo - 30000 if rule == "cron" else lo  # cron: from the middle of the minute before
    while time.time() * 1000 < start:
        time.sleep(0.05)
    cpu0, rcpu0, w0 = node_cpu(), redis_cpu(), time.time()
    done_at, behind = None, 0
    while time.time() * 1000 < start + 60000:
        now = int(time.time() * 1000)
        # Due (at or before now) and not yet materialised: the materialiser is behind. (Not
        # before the minute's first instant: a schedule just created has its creation time
        # as its index entry until the materialiser has computed its next occurrence.)
        if now >= lo:
            behind = max(behind, pending(min(now, hi)))
        if done_at is None and pending(hi) == 0:
            done_at = int(time.time() * 1000)
        time.sleep(0.05)
    wall = time.time() - w0
    rows.append({"minute": m + 1, "instant": iso(lo),
                 "materialised": n - pending(hi),
                 "last_created_ms": None if done_at is None else done_at - hi,
                 "max_due_not_materialised": behind,
                 "timewheeld_cpu_percent": round(100 * (node_cpu() - cpu0) / wall, 1),
                 "redis_cpu_percent": round(100 * (redis_cpu() - rcpu0) / wall, 1)})
    print(json.dumps(rows[-1]), flush=True)

print()
print(f"| minute from | occurrences materialised | last one created, ms after its instant | "
      f"most due and not yet materialised at once | timewheeld CPU % | Redis CPU % |")
print("|---|---:|---:|---:|---:|---:|")
for row in rows:
    late = "not all" if row["last_created_ms"] is None else f"{row['last_created_ms']:+,}"
    print(f"| {row['instant']} | {row['materialised']:,} of {n:,} | {late} | "
          f"{row['max_due_not_materialised']:,} | {row['timewheeld_cpu_percent']:.1f} | "
          f"{row['redis_cpu_percent']:.1f} |")
print(f"\nRedis memory per schedule: {(mem_after - mem_before) / n:.0f} B "
      f"(used_memory {mem_before:,} -> {mem_after:,} for {n:,} schedules)")
EOF
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "rule $rule, $n schedules, timewheeld --no-worker${extra:+ ${extra[*]}}, redis-server" \
     "$(redis-server --version | awk '{print $3}' | cut -d= -f2) (--save '' --appendonly no)," \
     "$(nproc) cores, commit $(git rev-parse --short HEAD); load average $load_before before," \
     "$load_after after; $(( $(date +%s) - started )) s"
