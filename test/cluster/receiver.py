#
# test/cluster/receiver.py
#
# The callbacks' receiver of the cluster tests (service_on_cluster.py, failover.py), on
# 127.0.0.1: it records every call (task id from Idempotency-Key, attempt, when) and answers by
# path: /ok 200, /fails-once 400 then 200 (a task that dies, then succeeds when retried from the
# dead letters), /later 202 (the result is reported with POST /v1/tasks/{id}/result).

import http.server
import threading
import time


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
