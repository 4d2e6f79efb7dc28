#
# test/support/timewheeld_process.py
#
# What the Python tests of timewheeld share (test/browser/, test/monitoring/, test/redis_ha/):
# the built binary started on a store of its own (SQLite in a temporary directory, a
# redis-server of its own on 127.0.0.1, or a store URL the test made, such as a cluster's),
# its port read from --port-file, requests to it, and checks that fail naming what was wrong.
# Every process it starts is ended by its PID.

import http.client
import json
import os
import shutil
import socket
import subprocess
import time


class Failed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failed(what)


def wait_for(predicate, what, timeout=30.0):
    """Polls `predicate` until it returns a true value (returned), or fails naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Failed:
            raise
        except Exception as e:  # a page in the middle of being redrawn
            last = e
        if time.monotonic() > deadline:
            raise Failed(f'timed out waiting for {what}' + (f' (last error: {last!r})' if last else ''))
        time.sleep(0.1)



def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Service:
    """timewheeld (and its redis-server) in a temporary directory; ended by PID."""

    def __init__(self, binary, store, tmp, token, extra_args=()):
        """`store`: 'redis' (a redis-server of its own), a store URL, or else SQLite in `tmp`."""
        self.procs = []
        self.token = token
        self.store = store
        if store == 'redis':
            rport = free_port()
            redis = shutil.which('redis-server') or '/usr/bin/redis-server'
            self.procs.append(subprocess.Popen(
                [redis, '--port', str(rport), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
                 '--dir', tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_for(lambda: self._redis_answers(rport), 'redis-server to answer', 20)
            url = f'redis://127.0.0.1:{rport}/dashboard'
        elif '://' in store:  # a store URL of the caller's (a Sentinel group's, a Cluster's)
            url = store
        else:
            url = f'sqlite:{os.path.join(tmp, "tasks.db")}'
        port_file = os.path.join(tmp, 'port')
        env = dict(os.environ, TIMEWHEELD_TOKEN=token)
        self.log = open(os.path.join(tmp, 'timewheeld.log'), 'w')
        self.procs.append(subprocess.Popen(
            [binary, '--port', '0', '--port-file', port_file, '--store', url,
             '--callback-allow-loopback', '--log-level', 'warn', *extra_args],
            env=env, stdout=self.log, stderr=subprocess.STDOUT))
        self.port = int(wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(),
                                 'timewheeld to listen', 30))
        self.base = f'http://127.0.0.1:{self.port}'

    @staticmethod
    def _redis_answers(port):
        with socket.create_connection(('127.0.0.1', port), timeout=1) as s:
            s.sendall(b'PING\r\n')
            return s.recv(16).startswith(b'+PONG')

    def raw(self, method, target, body=None, headers=None):
        """One request exactly as given (the target is not normalised): (status, headers, body)."""
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=30)
        try:
            h = dict(headers or {})
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h['Content-Type'] = 'application/json'
            conn.request(method, target, body=data, headers=h)
            res = conn.getresponse()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
        finally:
            conn.close()

    def api(self, method, path, body=None, expect=(200, 201)):
        status, _, data = self.raw(method, path, body, {'Authorization': f'Bearer {self.token}'})
        check(status in expect, f'{method} {path}: {status} {data[:300]!r}')
        return json.loads(data) if data else None

    def has_route(self, path):
        status, _, _ = self.raw('GET', path, headers={'Authorization': f'Bearer {self.token}'})
        return status not in (404, 405)  # no route, or only other methods on it

    def state(self, task_id):
        status, _, data = self.raw('GET', f'/v1/tasks/{task_id}', headers={'Authorization': f'Bearer {self.token}'})
        return json.loads(data)['state'] if status == 200 else None

    def close(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()
