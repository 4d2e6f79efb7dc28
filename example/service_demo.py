#!/usr/bin/env python3
"""timewheeld in a few seconds, as a user meets it (the second half of scripts/demo.sh).

It starts the built timewheeld on its embedded SQLite store (in a temporary directory, on
127.0.0.1, with a token and a signing secret), runs a receiver of its callbacks on
127.0.0.1, submits four tasks with the Python client (clients/python) and shows what
happens to each:

    welcome    due in 0.5 s, its receiver answers 200: finished at the first attempt
    flaky      due in 0.7 s, answered 500 then 200: retried once, then finished
    broken     due in 0.9 s, answered 400: dead at once (a 4xx is final), and its
               completion notice (callback.on_failure) reaches the receiver
    cancelled  due in 60 s, cancelled at once: never called

The receiver verifies every request's Timewheel-Signature from the raw body before it
reads it (timewheel_client.Verifier). Then the final state of each task, as GET
/v1/tasks/{id} shows it, and everything started is stopped by its PID.

    python3 example/service_demo.py --timewheeld build/server/timewheeld
"""

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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'clients', 'python', 'src'))
from timewheel_client import Client, SignatureError, Verifier  # noqa: E402

TOKEN = 'demo-token'
SECRET = 'demo-signing-secret'


class Receiver:
    """Answers per path (/ok 200, /flaky 500 then 200, /broken 400, /alerts 200) and prints
    each callback, verified, with the time since the demo began."""

    def __init__(self, started):
        self.started = started
        self.calls = 0
        self.refused = 0
        self.flaky_seen = False
        self.lock = threading.Lock()
        verifier = Verifier([SECRET])
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                try:  # the URL as submitted, the raw bytes: then, only then, the body
                    verifier.verify(self.command, outer.url(self.path), self.headers, body)
                    signed = 'signature ok'
                except SignatureError as e:
                    signed = f'signature REFUSED ({e.reason})'
                    outer.refused += 1
                status = outer.answer(self.path)
                with outer.lock:
                    outer.calls += 1
                    shown = body.decode(errors='replace')
                    if self.path == '/alerts':  # a completion notice: the task's end
                        notice = json.loads(body)
                        shown = f'notice: {notice["task_id"]} is {notice["state"]} ({notice["last_error"]})'
                    print(f'  [+{time.monotonic() - outer.started:4.1f} s] {self.headers["Idempotency-Key"]:<14} '
                          f'attempt {self.headers["Timewheel-Attempt"]}  {signed}  -> {status}   {shown}', flush=True)
                self.send_response(status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f'http://127.0.0.1:{self.server.server_address[1]}{path}'

    def answer(self, path):
        if path == '/flaky':
            with self.lock:
                first, self.flaky_seen = not self.flaky_seen, True
            return 500 if first else 200
        return {'/ok': 200, '/broken': 400, '/alerts': 200}.get(path, 404)


def start_timewheeld(binary, tmp):
    port_file = os.path.join(tmp, 'port')
    log = open(os.path.join(tmp, 'timewheeld.log'), 'w')
    env = dict(os.environ, TIMEWHEELD_TOKEN=TOKEN, TIMEWHEELD_SIGNING_SECRET=SECRET)
    proc = subprocess.Popen([binary, '--port', '0', '--port-file', port_file,
                             '--store', f'sqlite:{os.path.join(tmp, "tasks.db")}',
                             '--callback-allow-loopback', '--log-level', 'warn'],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not (os.path.exists(port_file) and open(port_file).read().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f'timewheeld did not start: see {log.name}')
        time.sleep(0.05)
    return proc, int(open(port_file).read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', default='build/server/timewheeld')
    args = ap.parse_args()
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='timewheel-demo-')
    rx = Receiver(started)
    proc, port = start_timewheeld(args.timewheeld, tmp)
    try:
        tw = Client(f'http://127.0.0.1:{port}', token=TOKEN)
        print(f'timewheeld on 127.0.0.1:{port} (its SQLite store in a temporary directory); receiver on {rx.url("/")}')
        quick = {'attempts': 3, 'base_ms': 300, 'cap_ms': 300}
        tw.submit({'url': rx.url('/ok'), 'body': '{"hello": "world"}'}, id='welcome', delay_ms=500)
        tw.submit({'url': rx.url('/flaky'), 'body': '{"try": "again"}'}, id='flaky', delay_ms=700, retry=quick)
        tw.submit({'url': rx.url('/broken'), 'body': '{"bad": true}', 'on_failure': {'url': rx.url('/alerts')}},
                  id='broken', delay_ms=900, retry=quick)
        tw.submit({'url': rx.url('/ok')}, id='cancelled', delay_ms=60_000)
        tw.cancel('cancelled')
        print('submitted welcome, flaky, broken and cancelled (cancelled at once); the callbacks:')
        ends = {'welcome': 'finished', 'flaky': 'finished', 'broken': 'dead', 'cancelled': 'cancelled',
                'broken~notice': 'finished'}
        deadline = time.monotonic() + 60
        while any(tw.get(i)['state'] != s for i, s in ends.items()):
            if time.monotonic() > deadline:
                raise SystemExit('the tasks did not end as expected: ' +
                                 ', '.join(f'{i} {tw.get(i)["state"]}' for i in ends))
            time.sleep(0.1)
        print('final states (GET /v1/tasks/{id}):')
        for task_id in ends:
            t = tw.get(task_id)
            print(f'  {task_id:<14} {t["state"]:<10} attempts {t["attempts"]}  last error: {t["last_error"]}')
        if rx.refused:
            raise SystemExit(f'{rx.refused} callbacks did not verify')
        print(f'service demo: done: 4 tasks, {rx.calls} callbacks received and verified, 1 notice')
    finally:
        proc.terminate()
        proc.wait(20)
        rx.server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
