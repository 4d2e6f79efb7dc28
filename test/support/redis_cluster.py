#
# test/support/redis_cluster.py
#
# A real Redis Cluster on 127.0.0.1 for the tests of timewheeld on a cluster (test/redis_ha/) and
# for scripts/bench-server.sh: redis-server --cluster-enabled yes per node in a temporary
# directory, `redis-cli --cluster create` (with replicas if asked), and what the tests ask of
# it (which node is a master, its key count, its CPU, killing one by PID and starting it
# again). A small cluster-node-timeout makes a failover take about two seconds rather than
# fifteen. Every process it starts is ended by its PID, by close(), also when a test fails.
# Ports are picked at random in 20000-45000, or in $TIMEWHEEL_TEST_PORTS (LO-HI) when set.

import os
import random
import shutil
import signal
import socket
import subprocess

from timewheeld_process import Failed, check, wait_for


def _port_pair_free(port):
    # A node listens on `port` and on its cluster bus, port + 10000.
    for p in (port, port + 10000):
        with socket.socket() as s:
            try:
                s.bind(('127.0.0.1', p))
            except OSError:
                return False
    return True


def _port_range():
    # TIMEWHEEL_TEST_PORTS=LO-HI: where to look (a machine shared with other test runs, each
    # given its own range); 20000-45000 otherwise.
    lo, _, hi = os.environ.get('TIMEWHEEL_TEST_PORTS', '').partition('-')
    if lo.isdigit() and hi.isdigit() and 0 < int(lo) <= int(hi) <= 65535 - 10000:
        return int(lo), int(hi)
    return 20000, 45000


def _free_ports(n):
    ports = []
    lo, hi = _port_range()
    while len(ports) < n:
        p = random.randint(lo, hi)
        if p not in ports and _port_pair_free(p):
            ports.append(p)
    return ports


class RedisCluster:
    """`masters` masters, each with `replicas` replicas, on 127.0.0.1; ended by PID."""

    def __init__(self, tmp, masters=3, replicas=1, node_timeout_ms=1500):
        self.redis_server = shutil.which('redis-server') or '/usr/bin/redis-server'
        self.redis_cli = shutil.which('redis-cli') or '/usr/bin/redis-cli'
        self.procs = {}  # port -> Popen
        self.tmp, self.node_timeout_ms = tmp, node_timeout_ms
        self.ports = _free_ports(masters * (1 + replicas))
        try:
            for port in self.ports:
                os.makedirs(os.path.join(tmp, f'redis-{port}'))
                self._start(port)
            for port in self.ports:
                wait_for(lambda p=port: self.cli(p, 'PING') == 'PONG', f'redis-server on {port} to answer', 20)
            if masters < 3:  # redis-cli --cluster create wants 3 masters at least
                check(replicas == 0, 'fewer than 3 masters: without replicas only')
                self._create_by_hand(masters)
            else:
                self._create(replicas)
            self.wait_healthy(masters)
        except BaseException:
            self.close()
            raise

    def _start(self, port):
        self.procs[port] = subprocess.Popen(
            [self.redis_server, '--port', str(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
             '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', str(self.node_timeout_ms),
             '--appendonly', 'no', '--save', '', '--dir', os.path.join(self.tmp, f'redis-{port}'),
             '--logfile', 'redis.log'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _create(self, replicas):
        create = subprocess.run(
            [self.redis_cli, '--cluster', 'create', *[f'127.0.0.1:{p}' for p in self.ports],
             '--cluster-replicas', str(replicas), '--cluster-yes'],
            capture_output=True, text=True, timeout=60)
        check(create.returncode == 0, f'redis-cli --cluster create failed: {create.stdout[-800:]}'
                                      f'{create.stderr[-400:]}')

    def _create_by_hand(self, masters):
        # Each node its share of the 16384 slots, then the others met.
        for i, port in enumerate(self.ports):
            first, last = 16384 * i // masters, 16384 * (i + 1) // masters - 1
            check(self.cli(port, 'CLUSTER', 'ADDSLOTSRANGE', str(first), str(last)) == 'OK',
                  f'CLUSTER ADDSLOTSRANGE on {port} failed')
        for port in self.ports[1:]:
            check(self.cli(self.ports[0], 'CLUSTER', 'MEET', '127.0.0.1', str(port)) == 'OK',
                  f'CLUSTER MEET {port} failed')

    def cli(self, port, *args):
        r = subprocess.run([self.redis_cli, '-p', str(port), *args], capture_output=True, text=True, timeout=10)
        return r.stdout.strip()

    def info(self, port, section):
        fields = {}
        for line in self.cli(port, 'INFO', section).splitlines():
            if ':' in line:
                k, v = line.split(':', 1)
                fields[k] = v.strip()
        return fields

    def alive(self):
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def masters(self):
        """The ports of the masters, as the live nodes' CLUSTER NODES says (failed ones left out)."""
        for port in self.alive():
            out = self.cli(port, 'CLUSTER', 'NODES')
            if out:
                found = []
                for line in out.splitlines():
                    f = line.split()
                    if 'master' in f[2].split(',') and 'fail' not in f[2].split(',') and len(f) > 8:
                        found.append(int(f[1].split('@')[0].rsplit(':', 1)[1]))
                return sorted(found)
        raise Failed('no node of the cluster answers CLUSTER NODES')

    def slot_owner(self, key):
        """The port of the master that serves the hash slot of `key` (CLUSTER KEYSLOT, CLUSTER NODES)."""
        for port in self.alive():
            slot = int(self.cli(port, 'CLUSTER', 'KEYSLOT', key))
            for line in self.cli(port, 'CLUSTER', 'NODES').splitlines():
                f = line.split()
                if 'master' not in f[2].split(',') or 'fail' in f[2].split(','):
                    continue
                for r in f[8:]:
                    if r.startswith('['):
                        continue  # a slot being migrated
                    lo, _, hi = r.partition('-')
                    if int(lo) <= slot <= int(hi or lo):
                        return int(f[1].split('@')[0].rsplit(':', 1)[1])
            raise Failed(f'no master serves slot {slot} of {key}')
        raise Failed('no node of the cluster answers')

    def state_ok(self, port):
        return self.info_cluster(port).get('cluster_state') == 'ok'

    def info_cluster(self, port):
        fields = {}
        for line in self.cli(port, 'CLUSTER', 'INFO').splitlines():
            if ':' in line:
                k, v = line.split(':', 1)
                fields[k] = v.strip()
        return fields

    def wait_healthy(self, masters, timeout=60):
        """cluster_state:ok on every live node, `masters` masters with slots, every replica in sync."""
        def healthy():
            if not all(self.state_ok(p) for p in self.alive()):
                return False
            if len(self.masters()) != masters:
                return False
            for p in self.alive():
                repl = self.info(p, 'replication')
                if repl.get('role') == 'slave' and repl.get('master_link_status') != 'up':
                    return False
            return True
        wait_for(healthy, f'the cluster of {masters} masters to be ok on every node', timeout)

    def dbsize(self, port):
        return int(self.cli(port, 'DBSIZE') or 0)

    def cpu_seconds(self, port):
        i = self.info(port, 'cpu')
        return float(i['used_cpu_sys']) + float(i['used_cpu_user'])

    def replica_of(self, master_port):
        """The port of a replica of the master on `master_port`."""
        for p in self.alive():
            repl = self.info(p, 'replication')
            if repl.get('role') == 'slave' and int(repl.get('master_port', 0)) == master_port:
                return p
        raise Failed(f'no replica of {master_port}')

    def kill(self, port):
        """kill -9 the node on `port`, by its PID."""
        proc = self.procs[port]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def restart(self, port):
        """Starts the node killed on `port` again, empty (no persistence) but with its
        nodes.conf: a master whose replica was promoted meanwhile rejoins as its replica."""
        check(self.procs[port].poll() is not None, f'the node on {port} is still running')
        self._start(port)
        wait_for(lambda: self.cli(port, 'PING') == 'PONG', f'redis-server on {port} to answer again', 20)

    def url(self, queue, query=''):
        # Two seeds (one with a single node): either is enough.
        seeds = sorted({self.ports[0], self.ports[-1]}, key=self.ports.index)
        return ('redis+cluster://' + ','.join(f'127.0.0.1:{p}' for p in seeds) + f'/{queue}' +
                (f'?{query}' if query else ''))

    def close(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
