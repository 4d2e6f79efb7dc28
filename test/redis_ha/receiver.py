#
# test/redis_ha/receiver.py
#
# What the tests of timewheeld on Redis Cluster and Sentinel share: the callbacks' receiver on
# 127.0.0.1, which records every call (task id from Idempotency-Key, attempt, when) and
# answers by path: /ok 200, /fails-once 400 then 200 (a task that dies, then succeeds when
# retried from the dead letters), /later 202 (the result is reported with POST
# /v1/tasks/{id}/result); and the main of a test that runs once in a temporary directory.

import argparse
import http.server
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
from timewheeld_process import Failed  # noqa: E402


class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {}  # task id -> [(attempt, time.time())]
        self.failed_once = set()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get('Content-Length') or 0))
                task_id = self.headers.get('Idempotency-Key', '')
                with outer.lock:
                    outer.calls.setdefault(task_id, []).append(
                        (int(self.headers.get('Timewheel-Attempt', '0')), time.time()))
                    status = 200
                    if self.path == '/fails-once' and task_id not in outer.failed_once:
                        outer.failed_once.add(task_id)
                        status = 400
                    elif self.path == '/later':
                        status = 202
                self.send_response(status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        return f'http://127.0.0.1:{self.server.server_address[1]}{path}'

    def called(self, task_id):
        with self.lock:
            return list(self.calls.get(task_id, ()))

    def snapshot(self):
        with self.lock:
            return {k: list(v) for k, v in self.calls.items()}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def main(run, prefix):
    """Runs run(timewheeld, tmp): exit 77 without redis-server or redis-cli, 1 (the logs kept
    in tmp) when a check failed."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', required=True)
    args = ap.parse_args()
    if not (shutil.which('redis-server') and shutil.which('redis-cli')):
        print('redis-server or redis-cli not found: skipped')
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        run(args.timewheeld, tmp)
    except Failed as e:
        print(f'FAILED: {e} (logs in {tmp})')
        sys.exit(1)
    shutil.rmtree(tmp, ignore_errors=True)
