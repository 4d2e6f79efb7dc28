#!/usr/bin/env python3
#
# test/monitoring/prometheus_alerts.py
#
# The example alerts of monitoring/timewheeld.rules.yml as an operator meets them: a real
# Prometheus (Debian's prometheus package) scrapes a real timewheeld every second, with the
# API token, and evaluates the shipped rules, unchanged, every second. Everything on
# 127.0.0.1, in a temporary directory, ended by PID.
#
#   1. Healthy: the target is up, its counters are scraped at 0, and no alert is pending or
#      firing.
#   2. The receiver answers 500: three tasks die (one attempt each) and one is retried. The
#      scraped counters say so, TimewheeldDeadLetters fires (it has no `for:`), and
#      TimewheeldCallbackFailures is pending (its expression holds; its `for:` is 5 minutes).
#   3. timewheeld is killed: TimewheeldDown is pending on its instance.
#
# promtool's unit tests (monitoring/timewheeld.rules.test.yml) cover each rule's thresholds
# and `for:`; this test covers what they cannot: that the rules match the metric names,
# labels and types timewheeld really exposes, through a real scrape.
#
# Exit 0 when every check passed, 1 at the first that failed, 77 (ctest's SKIP_RETURN_CODE)
# when Prometheus is not installed.
#
# Usage: prometheus_alerts.py --timewheeld BUILD/server/timewheeld --rules monitoring/timewheeld.rules.yml

import argparse
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
from timewheeld_process import Failed, Service, check, free_port, wait_for  # noqa: E402

SKIP = 77
TOKEN = 'monitoring-test-token'


class FailingReceiver:
    """Answers every callback 500 and counts them."""

    def __init__(self):
        self.calls = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get('Content-Length') or 0))
                outer.calls += 1
                self.send_response(500)
                self.send_header('Content-Length', '0')
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}/hook'

    def close(self):
        self.server.shutdown()


class Prometheus:
    """Prometheus scraping `target` every second and evaluating `rules` every second."""

    def __init__(self, target, rules, tmp):
        self.port = free_port()
        config = os.path.join(tmp, 'prometheus.yml')
        with open(config, 'w') as f:
            # JSON is YAML: no YAML library needed.
            json.dump({
                'global': {'scrape_interval': '1s', 'evaluation_interval': '1s'},
                'rule_files': [os.path.abspath(rules)],
                'scrape_configs': [{
                    'job_name': 'timewheeld',
                    'authorization': {'type': 'Bearer', 'credentials': TOKEN},
                    'static_configs': [{'targets': [target]}],
                }],
            }, f)
        self.log = open(os.path.join(tmp, 'prometheus.log'), 'w')
        self.proc = subprocess.Popen(
            [shutil.which('prometheus'), f'--config.file={config}',
             f'--storage.tsdb.path={os.path.join(tmp, "data")}',
             f'--web.listen-address=127.0.0.1:{self.port}'],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: self._get('/-/ready', raw=True), 'Prometheus to be ready', 60)

    def _get(self, path, raw=False, **params):
        url = f'http://127.0.0.1:{self.port}{path}'
        if params:
            url += '?' + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as res:
            body = res.read()
        if raw:
            return res.status == 200
        doc = json.loads(body)
        check(doc.get('status') == 'success', f'{path}: {doc}')
        return doc['data']

    def value(self, expr):
        """The query's single value as a float, or None when it has no result."""
        result = self._get('/api/v1/query', query=expr)['result']
        check(len(result) <= 1, f'{expr}: several series {result}')
        return float(result[0]['value'][1]) if result else None

    def alerts(self):
        """{alert name: state} of the pending and firing alerts."""
        return {a['labels']['alertname']: a['state'] for a in self._get('/api/v1/alerts')['alerts']}

    def target_health(self):
        targets = self._get('/api/v1/targets')['activeTargets']
        return targets[0]['health'] if targets else None

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def submit(svc, task_id, url, attempts):
    svc.api('POST', '/v1/tasks', {'id': task_id, 'delay_ms': 0, 'callback': {'url': url},
                                   'retry': {'attempts': attempts, 'base_ms': 100, 'cap_ms': 100}})


def run(svc, prom, rx):
    # 1. Healthy: scraped, counters at 0, and quiet.
    wait_for(lambda: prom.target_health() == 'up', 'the scrape of timewheeld to succeed', 30)
    wait_for(lambda: (prom.value('count_over_time(timewheeld_tasks_dead_total[1m])') or 0) >= 3,
             'three scrapes of timewheeld', 30)
    check(prom.value('timewheeld_tasks_dead_total') == 0, 'dead letters before any task')
    check(prom.value('timewheeld_store_errors_total{op="claim"}') == 0, 'the store errors series at 0')
    time.sleep(2)  # two more evaluations of the rules
    check(prom.alerts() == {}, f'alerts on a healthy node: {prom.alerts()}')
    print('ok: healthy: scraped with the token, counters at 0, no alert')

    # 2. Failing callbacks: three die at their only attempt, one is retried (two attempts).
    for i in range(3):
        submit(svc, f'doomed-{i}', rx.url, attempts=1)
    submit(svc, 'retried', rx.url, attempts=2)
    wait_for(lambda: svc.state('retried') == 'dead' and all(svc.state(f'doomed-{i}') == 'dead' for i in range(3)),
             'the four tasks to die', 30)
    check(rx.calls == 5, f'the receiver got {rx.calls} callbacks, not 5')
    wait_for(lambda: prom.value('timewheeld_tasks_dead_total') == 4, 'Prometheus to scrape 4 dead letters', 30)
    check(prom.value('timewheeld_callbacks_fired_total') == 5, 'fired_total as scraped')
    check(prom.value('timewheeld_callbacks_retried_total') == 1, 'retried_total as scraped')
    wait_for(lambda: prom.alerts().get('TimewheeldDeadLetters') == 'firing', 'TimewheeldDeadLetters to fire', 30)
    wait_for(lambda: prom.alerts().get('TimewheeldCallbackFailures') == 'pending',
             'TimewheeldCallbackFailures to be pending', 30)
    alerts = prom.alerts()
    check(set(alerts) == {'TimewheeldDeadLetters', 'TimewheeldCallbackFailures'}, f'other alerts: {alerts}')
    print(f'ok: callbacks failing: the counters scraped, alerts {alerts}')

    # 3. The node goes away.
    svc.close()
    wait_for(lambda: prom.target_health() == 'down', 'the scrape to fail', 30)
    wait_for(lambda: prom.alerts().get('TimewheeldDown') == 'pending', 'TimewheeldDown to be pending', 30)
    print('ok: timewheeld killed: TimewheeldDown pending')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', required=True)
    ap.add_argument('--rules', required=True)
    args = ap.parse_args()
    if not shutil.which('prometheus'):
        print('SKIPPED: prometheus is not installed (scripts/setup.sh installs it)')
        return SKIP
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='timewheel-prometheus-')
    rx = FailingReceiver()
    svc = prom = None
    try:
        svc = Service(args.timewheeld, 'sqlite', tmp, TOKEN)
        prom = Prometheus(f'127.0.0.1:{svc.port}', args.rules, tmp)
        run(svc, prom, rx)
    except Failed as e:
        print(f'FAILED: {e}')
        for name in ['timewheeld.log', 'prometheus.log']:
            path = os.path.join(tmp, name)
            if os.path.exists(path):
                print(f'--- {name}\n' + open(path).read()[-3000:])
        return 1
    finally:
        rx.close()
        if prom:
            prom.close()
        if svc:
            svc.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'passed in {time.monotonic() - started:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
