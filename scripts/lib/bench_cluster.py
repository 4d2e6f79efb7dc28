#
# scripts/lib/bench_cluster.py
#
# The Redis Cluster case of scripts/bench-server.sh: what one task costs each master, so that
# throughput at N masters can be projected on a machine too small to show it. For 1, 2 and 3
# masters (no replicas, test/support/redis_cluster.py), a timewheeld of its own on
# redis+cluster://, then timewheeld_bench's callbacks case (N tasks submitted, all due within
# a second, each called back to its sink). Each master's CPU (INFO cpu, used_cpu_sys +
# used_cpu_user) is read before and after: per master, CPU microseconds per task; the skew is
# max/mean over the masters, of CPU and of keys. Prints one JSON line per run and a table.
#
# --wait: the cost of ?wait=1 instead (docs/server.md, "Durability"): 3 masters with one
# replica each, a timewheeld on redis+cluster://...?wait=0, then one on ?wait=1 (a fresh
# cluster each), each with timewheeld_bench's submit case (latency p50/p99, requests/s) and
# its callbacks case (callbacks/s: claims, starts and acks wait for a replica too).
#
#   python3 scripts/lib/bench_cluster.py --timewheeld T --bench B [--n 20000] [--rate 2000] [--wait]

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'test', 'support'))
from redis_cluster import RedisCluster  # noqa: E402
from timewheeld_process import wait_for  # noqa: E402


def one_run(args, masters, tmp):
    cluster = RedisCluster(tmp, masters=masters, replicas=0)
    tw = None
    try:
        port_file = os.path.join(tmp, 'port')
        log = open(os.path.join(tmp, 'timewheeld.log'), 'w')
        tw = subprocess.Popen([args.timewheeld, '--port', '0', '--port-file', port_file, '--store',
                               cluster.url(f'bench{masters}'), '--callback-allow-loopback', '--log-level', 'warn'],
                              stdout=log, stderr=subprocess.STDOUT)
        port = int(wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(),
                            'timewheeld to listen', 30))
        ports = cluster.masters()
        before = {p: cluster.cpu_seconds(p) for p in ports}
        out = subprocess.run([args.bench, 'callbacks', '--n', str(args.n), '--window-ms', '1000', '--conns', '32',
                              '--submit-rate', str(args.rate), '--store', f'cluster-{masters}',
                              '--api-port', str(port), '--pids', f'timewheeld:{tw.pid}'],
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        after = {p: cluster.cpu_seconds(p) for p in ports}
        keys = {p: cluster.dbsize(p) for p in ports}
        us_per_task = {p: (after[p] - before[p]) * 1e6 / args.n for p in ports}
        mean_cpu = sum(us_per_task.values()) / masters
        mean_keys = sum(keys.values()) / masters
        return {
            'masters': masters, 'n': args.n, 'bench': json.loads(out),
            'redis_cpu_us_per_task': [round(us_per_task[p], 1) for p in ports],
            'redis_cpu_us_per_task_total': round(sum(us_per_task.values()), 1),
            'cpu_skew': round(max(us_per_task.values()) / mean_cpu, 2) if mean_cpu else None,
            'keys': [keys[p] for p in ports],
            'keys_skew': round(max(keys.values()) / mean_keys, 2) if mean_keys else None,
        }
    finally:
        if tw:
            tw.terminate()
            tw.wait(30)
        cluster.close()


def wait_run(args, wait, tmp):
    cluster = RedisCluster(tmp, masters=3, replicas=1)
    tw = None
    try:
        port_file = os.path.join(tmp, 'port')
        log = open(os.path.join(tmp, 'timewheeld.log'), 'w')
        tw = subprocess.Popen([args.timewheeld, '--port', '0', '--port-file', port_file, '--store',
                               cluster.url('benchwait', f'wait={wait}'), '--callback-allow-loopback',
                               '--log-level', 'warn'], stdout=log, stderr=subprocess.STDOUT)
        port = int(wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(),
                            'timewheeld to listen', 30))
        runs = {}
        for case, extra in (('submit', []),
                            ('callbacks', ['--window-ms', '1000', '--submit-rate', str(args.rate)])):
            out = subprocess.run([args.bench, case, '--n', str(args.n), '--conns', '32', *extra,
                                  '--store', f'cluster-wait{wait}', '--api-port', str(port),
                                  '--pids', f'timewheeld:{tw.pid}'],
                                 capture_output=True, text=True).stdout.strip().splitlines()
            runs[case] = json.loads(out[-1]) if out else {}
        return {'wait': wait, 'n': args.n, 'submit': runs['submit'], 'callbacks': runs['callbacks']}
    finally:
        if tw:
            tw.terminate()
            tw.wait(30)
        cluster.close()


def runs_in_temp_dirs(values, run, prefix):
    """run(value, tmp) for each value, each in a temporary directory of its own removed after;
    each run's figures are printed to stderr as they come."""
    runs = []
    for value in values:
        tmp = tempfile.mkdtemp(prefix=f'{prefix}-{value}-')
        try:
            runs.append(run(value, tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    return runs


def wait_table(args):
    runs = runs_in_temp_dirs((0, 1), lambda wait, tmp: wait_run(args, wait, tmp), 'timewheel-bench-wait')
    print('| wait | submit requests/s | submit p50 ms | submit p99 ms | submit errors | callbacks/s '
          '| callback lateness p99 ms |')
    print('|---:|---:|---:|---:|---:|---:|---:|')
    for r in runs:
        s, c = r['submit'], r['callbacks']
        print(f"| {r['wait']} | {s.get('requests_per_s', 0):,.0f} | {s.get('latency_p50_ms', 0):.2f} "
              f"| {s.get('latency_p99_ms', 0):.2f} | {s.get('errors', '?')} | {c.get('callbacks_per_s', 0):,.0f} "
              f"| {c.get('lateness_p99_ms', 0):.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--n', type=int, default=20000)
    ap.add_argument('--rate', type=int, default=2000)
    ap.add_argument('--masters', default='1,2,3')
    ap.add_argument('--wait', action='store_true', help='the cost of ?wait=1 instead')
    args = ap.parse_args()
    if args.wait:
        wait_table(args)
        return
    runs = runs_in_temp_dirs((int(x) for x in args.masters.split(',')),
                             lambda m, tmp: one_run(args, m, tmp), 'timewheel-bench-cluster')
    print(f'| masters | Redis CPU µs per task, each master | total | CPU skew (max/mean) | keys per master '
          f'| keys skew | callbacks/s |')
    print('|---:|---|---:|---:|---|---:|---:|')
    for r in runs:
        print(f"| {r['masters']} | {', '.join(f'{v:.0f}' for v in r['redis_cpu_us_per_task'])} "
              f"| {r['redis_cpu_us_per_task_total']:.0f} | {r['cpu_skew']} | {', '.join(map(str, r['keys']))} "
              f"| {r['keys_skew']} | {r['bench'].get('callbacks_per_s', 0):,.0f} |")


if __name__ == '__main__':
    main()
