#!/usr/bin/env python3
#
# test/redis_ha/sentinel_failover.py
#
# timewheeld on redis+sentinel:// while its master dies: a Sentinel group on 127.0.0.1
# (test/support/redis_sentinel.py: a master, a replica, three Sentinels, quorum 2, a master
# down after 1 s), timewheeld with --store redis+sentinel://..., four producer threads
# POSTing tasks due 300 ms later, and a receiver counting the callbacks (receiver.py). Twice: without
# WAIT (the default) and with ?wait=1. Each run:
#
#   1. Cost: the first 400 POSTs (--measure N), before anything fails: p50, p99 and
#      requests per second (four Python threads, one request at a time each, a new
#      connection per request: the figures compare wait=0 with wait=1 on the same loop,
#      they are not the service's peak).
#   2. Failover: SIGKILL to the master. Every POST meanwhile must be answered (the client's
#      20 s timeout is the bound: a hang fails) with 201, or 503 with Retry-After; never a
#      500. The Sentinels promote the replica; the old master comes back empty, as a
#      replica of the new one (with wait=1 writes need it: the promoted one has no replica
#      until then). The service must answer 201 again, 200 times: it follows the new master.
#   3. Outcome: every task answered 201 either fires or is gone from the store (GET 404).
#      With wait=1 none may be gone (nothing acknowledged is lost); without, the number
#      lost is printed. Duplicate callbacks (at-least-once) are printed for both.
#
# Exit 0 when every check passed, 1 at the first that failed, 77 (ctest's SKIP_RETURN_CODE)
# without redis-server.
#
# Usage: sentinel_failover.py --timewheeld BUILD/server/timewheeld

import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
from timewheeld_process import Failed, Service, check, wait_for  # noqa: E402
from redis_sentinel import SentinelGroup  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import Receiver  # noqa: E402

SKIP = 77
TOKEN = 'failover-test-token'
MEASURED = 400  # --measure
AFTER = 200


class Producers:
    """Four threads POSTing tasks one at a time until stopped; every answer recorded."""

    def __init__(self, svc, rx, prefix):
        self.svc, self.rx, self.prefix = svc, rx, prefix
        self.answers = []  # (task id, status, has Retry-After, seconds)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.error = None
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(4)]
        for t in self.threads:
            t.start()

    def _run(self, worker):
        n = 0
        try:
            while not self.stop.is_set():
                task = f'{self.prefix}-{worker}-{n}'
                n += 1
                body = json.dumps({'id': task, 'delay_ms': 300,
                                   'callback': {'url': self.rx.url('/ok')}}).encode()
                started = time.monotonic()
                conn = http.client.HTTPConnection('127.0.0.1', self.svc.port, timeout=20)
                try:
                    conn.request('POST', '/v1/tasks', body=body,
                                 headers={'Authorization': f'Bearer {TOKEN}',
                                          'Content-Type': 'application/json'})
                    res = conn.getresponse()
                    res.read()
                    status, retry_after = res.status, res.getheader('Retry-After') is not None
                finally:
                    conn.close()
                with self.lock:
                    self.answers.append((task, status, retry_after, time.monotonic() - started))
        except Exception as e:  # a timeout here is a hang of the service
            self.error = e

    def count(self, since=0, status=None):
        with self.lock:
            return sum(1 for a in self.answers[since:] if status is None or a[1] == status)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)
        if self.error:
            raise Failed(f'a POST /v1/tasks got no answer: {self.error!r}')


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def run(binary, tmp, wait):
    mode = f'wait={wait}'
    group = SentinelGroup(os.path.join(tmp, f'sentinel-{wait}'))
    svc = rx = producers = None
    try:
        rx = Receiver()
        svc_tmp = os.path.join(tmp, f'service-{wait}')
        os.makedirs(svc_tmp)
        svc = Service(binary, group.url('failover', f'wait={wait}' if wait else ''), svc_tmp, TOKEN,
                      ['--store-timeout-ms', '2000'])
        producers = Producers(svc, rx, f'w{wait}')

        # 1. Cost, before anything fails.
        wait_for(lambda: producers.count() >= MEASURED, f'{MEASURED} POSTs answered ({mode})', 120)
        with producers.lock:
            first = producers.answers[:MEASURED]
            measured_seconds = sum(a[3] for a in first) / 4
        # (A 503 here is allowed as everywhere: with wait=1 a replica slower than
        # wait_timeout_ms on a loaded machine is one. It is counted.)
        lat = [a[3] * 1000 for a in first]
        print(f'cost {mode}: POST /v1/tasks p50 {percentile(lat, 0.5):.1f} ms, '
              f'p99 {percentile(lat, 0.99):.1f} ms, {MEASURED / measured_seconds:.0f}/s '
              f'(4 Python threads, a connection per request), '
              f'{sum(1 for a in first if a[1] != 201)} not 201')

        # 2. Failover.
        killed_at = producers.count()
        group.kill_master()
        started = time.monotonic()
        group.wait_failover()
        promoted = time.monotonic() - started
        group.restart_old_master()
        rejoined = time.monotonic() - started
        wait_for(lambda: producers.count(killed_at, 201) >= AFTER,
                 f'{AFTER} POSTs answered 201 after the failover ({mode})', 120)
        resumed = time.monotonic() - started
        producers.close()
        answers = producers.answers
        during = answers[killed_at:]
        bad = [a for a in answers if a[1] not in (201, 503)]
        check(not bad, f'{mode}: answers other than 201 or 503: {bad[:5]}')
        no_retry = [a for a in answers if a[1] == 503 and not a[2]]
        check(not no_retry, f'{mode}: 503 without Retry-After: {no_retry[:5]}')
        print(f'failover {mode}: promoted after {promoted:.1f} s, old master a replica after '
              f'{rejoined:.1f} s, {AFTER} answers 201 after {resumed:.1f} s; '
              f'{sum(1 for a in during if a[1] == 503)} answered 503 with Retry-After, '
              f'slowest answer {max(a[3] for a in answers):.1f} s')

        # 3. Outcome: every task answered 201 fires, or is gone.
        acknowledged = [a[0] for a in answers if a[1] == 201]
        lost = set()

        def settled():
            fired = rx.snapshot()
            pending = [t for t in acknowledged if t not in fired and t not in lost]
            for t in pending[:200]:
                status, _, _ = svc.raw('GET', f'/v1/tasks/{t}', headers={'Authorization': f'Bearer {TOKEN}'})
                if status == 404:
                    lost.add(t)
            return not pending

        wait_for(settled, f'every task answered 201 to fire or be found gone ({mode})', 120)
        calls = rx.snapshot()
        duplicates = sum(1 for t in acknowledged if len(calls.get(t, ())) > 1)
        print(f'outcome {mode}: {len(acknowledged)} tasks answered 201, {len(lost)} lost, '
              f'{duplicates} fired more than once')
        if wait:
            check(not lost, f'{mode}: tasks answered 201 and lost: {sorted(lost)[:10]}')
    finally:
        if producers:
            producers.stop.set()
        if svc:
            svc.close()
        if rx:
            rx.close()
        group.close()


def main():
    global MEASURED
    parser = argparse.ArgumentParser()
    parser.add_argument('--timewheeld', required=True)
    parser.add_argument('--measure', type=int, default=MEASURED, help='POSTs measured before the kill')
    args = parser.parse_args()
    MEASURED = args.measure
    if not shutil.which('redis-server'):
        print('redis-server not found: skipped')
        return SKIP
    with tempfile.TemporaryDirectory(prefix='timewheeld-sentinel-') as tmp:
        try:
            run(args.timewheeld, tmp, 0)
            run(args.timewheeld, tmp, 1)
        except Failed as e:
            print(f'FAILED: {e}')
            return 1
    print('ok: Sentinel failover, without WAIT and with wait=1')
    return 0


if __name__ == '__main__':
    sys.exit(main())
