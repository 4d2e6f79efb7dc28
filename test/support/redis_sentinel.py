#
# test/support/redis_sentinel.py
#
# A Redis Sentinel group on 127.0.0.1 for the Python tests of timewheeld: one master, one
# replica and three Sentinels (quorum 2, a master down after 1 s), each a real redis-server
# (Debian's runs as a Sentinel with --sentinel), in a temporary directory, ended by PID. A
# minimal RESP client is here too, for the group's own state: the tests ask the Sentinels
# what a client would (the master's address), not a log line.

import os
import shutil
import signal
import socket
import subprocess

from timewheeld_process import Failed, free_port, wait_for


def redis_call(port, *args, timeout=2.0):
    """One command to 127.0.0.1:port; its reply (bytes, int, list, None; an error raises)."""
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        out = b'*%d\r\n' % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b'$%d\r\n%s\r\n' % (len(a), a)
        s.sendall(out)
        f = s.makefile('rb')
        return _read_reply(f)


def _read_reply(f):
    line = f.readline()
    if not line.endswith(b'\r\n'):
        raise Failed(f'truncated Redis reply {line!r}')
    kind, rest = line[:1], line[1:-2]
    if kind == b'+':
        return rest
    if kind == b'-':
        raise Failed(f'Redis error: {rest.decode(errors="replace")}')
    if kind == b':':
        return int(rest)
    if kind == b'$':
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b'*':
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise Failed(f'unexpected Redis reply {line!r}')


def _pairs(flat):
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


class SentinelGroup:
    """A master, its replica and three Sentinels watching it as `name`."""

    def __init__(self, tmp, name='tw'):
        self.name = name
        self.tmp = tmp
        self.procs = {}  # port -> Popen
        self.redis = shutil.which('redis-server') or '/usr/bin/redis-server'
        try:
            self.master_port = free_port()
            self.replica_port = free_port()
            self._server(self.master_port)
            self._server(self.replica_port, '--replicaof', '127.0.0.1', str(self.master_port))
            # Sentinels learn replicas from the master's INFO, every 10 s: start them once
            # the replica is linked, so that the first INFO names it.
            wait_for(lambda: b'master_link_status:up' in redis_call(self.replica_port, 'INFO', 'replication'),
                     'the replica to link to its master', 20)
            self.sentinel_ports = [free_port() for _ in range(3)]
            for port in self.sentinel_ports:
                self._sentinel(port)
            wait_for(self._ready, 'every Sentinel to know the replica and the two other Sentinels', 30)
        except BaseException:
            self.close()
            raise

    def _log(self, port):
        return open(os.path.join(self.tmp, f'redis-{port}.log'), 'w')

    def _server(self, port, *extra):
        d = os.path.join(self.tmp, f'redis-{port}')
        os.makedirs(d, exist_ok=True)
        self.procs[port] = subprocess.Popen(
            [self.redis, '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
             '--repl-diskless-sync-delay', '0', '--dir', d, *extra], stdout=self._log(port), stderr=subprocess.STDOUT)
        wait_for(lambda: redis_call(port, 'PING') == b'PONG', f'redis-server on {port} to answer', 20)

    def _sentinel(self, port):
        conf = os.path.join(self.tmp, f'sentinel-{port}.conf')
        with open(conf, 'w') as f:
            f.write(f'port {port}\nbind 127.0.0.1\ndir {self.tmp}\n'
                    f'sentinel monitor {self.name} 127.0.0.1 {self.master_port} 2\n'
                    f'sentinel down-after-milliseconds {self.name} 1000\n'
                    f'sentinel failover-timeout {self.name} 2000\n'
                    f'sentinel parallel-syncs {self.name} 1\n')
        self.procs[port] = subprocess.Popen([self.redis, conf, '--sentinel'],
                                            stdout=self._log(port), stderr=subprocess.STDOUT)

    def _ready(self):
        for port in self.sentinel_ports:
            m = _pairs(redis_call(port, 'SENTINEL', 'MASTER', self.name))
            if int(m['num-slaves']) != 1 or int(m['num-other-sentinels']) != 2:
                return False
        return True

    def master_address(self, sentinel_index=0):
        """What a Sentinel says the master is: (host, port) or None."""
        a = redis_call(self.sentinel_ports[sentinel_index], 'SENTINEL', 'get-master-addr-by-name', self.name)
        return (a[0].decode(), int(a[1])) if a else None

    def url(self, queue, options=''):
        hosts = ','.join(f'127.0.0.1:{p}' for p in self.sentinel_ports)
        return f'redis+sentinel://{hosts}/{queue}?master={self.name}' + (f'&{options}' if options else '')

    def kill_master(self):
        """SIGKILL to the master's redis-server: no goodbye to anyone."""
        p = self.procs.pop(self.master_port)
        p.send_signal(signal.SIGKILL)
        p.wait()

    def restart_old_master(self):
        """The killed master back on its port, empty (no persistence), as a replica of the
        new master (what its operator would do; Sentinel would convert it too, after 10 to
        20 s); returns once it is linked."""
        self._server(self.master_port, '--replicaof', '127.0.0.1', str(self.replica_port))
        wait_for(lambda: b'master_link_status:up' in redis_call(self.master_port, 'INFO', 'replication'),
                 'the old master to come back as a replica of the new one', 60)

    def wait_failover(self):
        wait_for(lambda: all(self.master_address(i) == ('127.0.0.1', self.replica_port) for i in range(3)),
                 'the Sentinels to promote the replica', 60)
        wait_for(lambda: redis_call(self.replica_port, 'ROLE')[0] == b'master',
                 'the promoted replica to say it is the master', 30)

    def close(self):
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
