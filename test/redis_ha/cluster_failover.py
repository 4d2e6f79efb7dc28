#
# test/redis_ha/cluster_failover.py
#
# A master of the store's Redis Cluster killed (-9) under load, through timewheeld: a producer
# submits tasks all the time (due 1 s later) and their callbacks arrive while one master
# (3 masters, 3 replicas, cluster-node-timeout 1000 ms) dies and its replica is promoted.
# Twice, each on a cluster of its own: without WAIT (the default) and with ?wait=1. The master
# killed is the worst one: the first seed of the store's URL, which also serves the slots of
# the workers' wake-up channel and of the channels that forward results between nodes (the
# queue's name is picked for that). It checks what a client of the service sees: every
# request answered (201, or 503 with Retry-After while a slot has no master, or with wait=1 no
# replica: never a hang, never another status), every task answered 201 after the promotion
# called back, the workers woken by submits again (timewheeld_store_wakeups_total grows: they
# do not only poll), and a result reported to a second node (API only) forwarded to the node
# that holds the attempt and answered 2xx, not 503. Before the kill it prints the
# cost of the round's durability: p50 and p99 of the producer's POSTs and its rate (one
# thread, a new connection per request, 20 ms between requests: for comparing the rounds,
# not the service's peak).
#
# Without WAIT it prints what asynchronous replication costs, which is allowed to be more
# than nothing: of the tasks answered 201 before the kill, how many were never called (lost
# with the writes the replica had not received), how many were called twice, the longest
# answer, and the lateness of the callbacks due during the failover.
#
# With wait=1 every write waits for a replica of its shard's master, so nothing answered 201
# may be lost: every such task must be called (duplicates, at-least-once, are counted). The
# promoted replica has no replica of its own, so its slots answer 503 until the killed master
# comes back (empty, as its replica): the test restarts it, as an operator would.
# Skipped (77) without redis-server or redis-cli.
#
#   python3 test/redis_ha/cluster_failover.py --timewheeld build/server/timewheeld

import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_cluster import RedisCluster  # noqa: E402
from receiver import Receiver, main  # noqa: E402
from timewheeld_process import Failed, Service, check, wait_for  # noqa: E402

TOKEN = 'failover-token'
DELAY_MS = 1000
# A client's patience: an answer that takes longer is a hang. The service's own bound is
# --store-timeout-ms (5 s) plus the Cluster client's retries of CLUSTERDOWN (about 3 s).
HANG_S = 30


class Producer:
    """Submits a task every few milliseconds until stopped; records every answer."""

    def __init__(self, port, callback_url):
        self.port = port
        self.callback_url = callback_url
        self.answers = []  # (id, sent, answered, status, retry_after or None, error or None)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        i = 0
        while not self.stopping.is_set():
            task_id = f'p-{i}'
            i += 1
            body = json.dumps({'id': task_id, 'delay_ms': DELAY_MS, 'callback': {'url': self.callback_url}})
            sent = time.time()
            status, retry_after, error = None, None, None
            conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=HANG_S)
            try:
                conn.request('POST', '/v1/tasks', body=body,
                             headers={'Authorization': f'Bearer {TOKEN}', 'Content-Type': 'application/json'})
                res = conn.getresponse()
                res.read()
                status, retry_after = res.status, res.getheader('Retry-After')
            except Exception as e:  # a timeout is a hang
                error = repr(e)
            finally:
                conn.close()
            self.answers.append((task_id, sent, time.time(), status, retry_after, error))
            time.sleep(0.02)

    def stop(self):
        self.stopping.set()
        self.thread.join(HANG_S + 5)


def wakeups(svc):
    status, _, body = svc.raw('GET', '/metrics', headers={'Authorization': f'Bearer {TOKEN}'})
    check(status == 200, f'/metrics answered {status}')
    for line in body.decode().splitlines():
        if line.startswith('timewheeld_store_wakeups_total '):
            return float(line.split()[1])
    raise Failed('/metrics has no timewheeld_store_wakeups_total')


def forward_result(node, task_id, attempt, when):
    """Reports success for `attempt` to `node` until it answers 2xx; returns the statuses seen.

    The holder waits for the result only once it has read the callback's 202, a little after
    the receiver saw the call: until then every node answers 404. While a node has not
    subscribed again after a failover it is not counted (404 too), and while no master serves
    the channels' slot the answer is 503. Asked again, the attempt still waits."""
    seen = []

    def taken():
        status, _, body = node.raw('POST', f'/v1/tasks/{task_id}/result',
                                   body={'attempt': attempt, 'outcome': 'success'},
                                   headers={'Authorization': f'Bearer {TOKEN}'})
        seen.append(status)
        check(status in (200, 202, 404, 503), f'a forwarded result answered {status}: {body[:200]}')
        return status in (200, 202)  # 202: sent, the holder's reply not waited for

    wait_for(taken, f'a result reported to the other node {when} to be forwarded (2xx)', 20)
    return seen


MEASURED = 150  # POSTs before the kill whose answers give the cost figures


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def run_round(binary, tmp, wait):
    mode = f'wait={wait}'
    tmp = os.path.join(tmp, f'wait-{wait}')
    os.makedirs(tmp)
    cluster = RedisCluster(tmp, masters=3, replicas=1, node_timeout_ms=1000)
    rx = Receiver()
    svc = producer = other = None
    try:
        # The first seed is the victim: a queue whose wake-up channel (`<queue>:wake`) and
        # result channels (`{<queue>}:results...`) hash to its slots, so that every
        # subscription of the service starts there.
        first_seed = cluster.ports[0]
        check(first_seed in cluster.masters(), f'the first seed {first_seed} is not a master')
        queue = next(q for q in (f'failover{i}' for i in range(1000))
                     if cluster.slot_owner(f'{q}:wake') == first_seed
                     and cluster.slot_owner('{' + q + '}:results') == first_seed)
        url = cluster.url(queue, f'wait={wait}' if wait else '')
        svc = Service(binary, url, tmp, TOKEN)
        other_tmp = os.path.join(tmp, 'api-node')
        os.makedirs(other_tmp)
        other = Service(binary, url, other_tmp, TOKEN, extra_args=['--no-worker'])
        producer = Producer(svc.port, rx.url('/ok'))
        wait_for(lambda: len(rx.snapshot()) >= 50 and len(producer.answers) >= MEASURED,
                 f'callbacks to arrive and {MEASURED} POSTs answered before the kill ({mode})')

        # The cost, before anything fails.
        first = producer.answers[:MEASURED]
        lat = [(a[2] - a[1]) * 1000 for a in first]
        print(f'cost {mode}: POST /v1/tasks p50 {percentile(lat, 0.5):.1f} ms, p99 {percentile(lat, 0.99):.1f} ms, '
              f'{(len(first) - 1) / (first[-1][1] - first[0][1]):.1f}/s (one thread, 20 ms between POSTs), '
              f'{sum(1 for a in first if a[3] != 201)} not 201')

        check(wakeups(svc) > 0, f'{mode}: no wake-up before the kill')
        # A result forwarded between the nodes before the kill: the channels work.
        svc.api('POST', '/v1/tasks', {'id': 'later-before', 'delay_ms': 0, 'callback': {'url': rx.url('/later')}})
        wait_for(lambda: rx.called('later-before'), 'the 202 callback before the kill to be called')
        forward_result(other, 'later-before', rx.called('later-before')[0][0], 'before the kill')
        victim = first_seed
        replica = cluster.replica_of(victim)
        killed = time.time()
        cluster.kill(victim)
        cluster.wait_healthy(3, timeout=60)
        promoted = time.time()
        check(replica in cluster.masters(), f'the replica {replica} of {victim} was not promoted')
        resumed = promoted
        if wait:
            # Writes to the promoted master's slots need a replica of it: the old master, back.
            cluster.restart(victim)
            wait_for(lambda: 'state=online' in cluster.info(replica, 'replication').get('slave0', ''),
                     f'the restarted {victim} to be an online replica of {replica}', 60)
            resumed = time.time()

        # (a) The workers are woken by submits again (the producer's): their subscription left
        # the dead first seed. Before the subscription followed the cluster, it kept trying
        # the dead node and the count stayed.
        woken = wakeups(svc)
        wait_for(lambda: wakeups(svc) > woken, f'a wake-up after the promotion (the workers only poll, {mode})', 20)
        # (b) A result reported to the node without the attempt is forwarded: 2xx, where the
        # subscriptions on the dead first seed answered 503 until it came back.
        svc.api('POST', '/v1/tasks', {'id': 'later-after', 'delay_ms': 0, 'callback': {'url': rx.url('/later')}})
        wait_for(lambda: rx.called('later-after'), 'the 202 callback after the promotion to be called')
        seen = forward_result(other, 'later-after', rx.called('later-after')[0][0], 'after the promotion')
        wait_for(lambda: svc.state('later-after') == 'finished', 'the task whose result was forwarded to finish')
        print(f'after the promotion ({mode}): wake-ups again, a result forwarded between nodes (answers {seen})')
        time.sleep(3)
        producer.stop()
        answers = producer.answers

        hangs = [a for a in answers if a[5] is not None]
        check(not hangs, f'{mode}: {len(hangs)} requests got no answer within {HANG_S} s: {hangs[:3]}')
        others = [a for a in answers if a[3] not in (201, 503)]
        check(not others, f'{mode}: answers other than 201 and 503: {[(a[0], a[3]) for a in others[:10]]}')
        no_retry_after = [a for a in answers if a[3] == 503 and not a[4]]
        check(not no_retry_after, f'{mode}: 503 without Retry-After: {[a[0] for a in no_retry_after[:10]]}')
        after = [a[0] for a in answers if a[3] == 201 and a[1] > resumed]
        check(after, f'{mode}: no task was answered 201 after the promotion')
        wait_for(lambda: all(rx.called(i) for i in after),
                 f'every task answered 201 after the promotion to be called ({mode})', 60)

        # Every task answered 201: with wait=1 each must be called; without, give the others
        # time to be called too (due 1 s after their answer) and count those that are not.
        accepted = [a for a in answers if a[3] == 201]
        try:
            wait_for(lambda: all(rx.called(a[0]) for a in accepted), 'every accepted task to be called',
                     60 if wait else 15)
        except Failed:
            if wait:
                lost = [a[0] for a in accepted if not rx.called(a[0])]
                raise Failed(f'{mode}: {len(lost)} tasks answered 201 never called: {lost[:10]}')
        calls = rx.snapshot()
        before = [a for a in accepted if a[2] < killed]
        during = [a for a in accepted if killed <= a[1] <= promoted]
        lost_before = [a[0] for a in before if a[0] not in calls]
        lost_during = [a[0] for a in during if a[0] not in calls]
        twice = [a[0] for a in accepted if len(calls.get(a[0], ())) > 1]
        answer_s = max(a[2] - a[1] for a in answers)
        failover_answer_s = max((a[2] - a[1] for a in answers if killed <= a[1] <= resumed + 1), default=0)
        due_during = [(min(t for _, t in calls[a[0]]) - (a[1] + DELAY_MS / 1000)) for a in accepted
                      if a[0] in calls and killed <= a[1] + DELAY_MS / 1000 <= promoted + 1]
        unavailable = sum(1 for a in answers if a[3] == 503)
        print(f'failover {mode}: master {victim} killed, replica {replica} promoted after {promoted - killed:.1f} s'
              + (f', {victim} its replica after {resumed - killed:.1f} s' if wait else ''))
        print(f'  requests {len(answers)}: 201 {len(accepted)}, 503 {unavailable} (all with Retry-After), '
              f'no hang, no other status')
        print(f'  longest answer {answer_s * 1000:.0f} ms (during the failover {failover_answer_s * 1000:.0f} ms)')
        print(f'  answered 201 before the kill: {len(before)}, never called (lost): {len(lost_before)} {lost_before[:5]}')
        print(f'  answered 201 between kill and promotion: {len(during)}, never called: {len(lost_during)}')
        print(f'  called more than once: {len(twice)} {twice[:5]}')
        if due_during:
            due_during.sort()
            print(f'  lateness of the {len(due_during)} callbacks due during the failover: '
                  f'median {due_during[len(due_during) // 2] * 1000:.0f} ms, max {due_during[-1] * 1000:.0f} ms')
        print(f'  answered 201 after the {"replica came back" if wait else "promotion"}: {len(after)}, all called')
    finally:
        if producer:
            producer.stop()
        if svc:
            svc.close()
        if other:
            other.close()
        rx.close()
        cluster.close()


def run(binary, tmp):
    started = time.time()
    run_round(binary, tmp, 0)
    middle = time.time()
    run_round(binary, tmp, 1)
    print(f'ok: Cluster failover without WAIT ({middle - started:.0f} s) and with wait=1 '
          f'({time.time() - middle:.0f} s)')


if __name__ == '__main__':
    main(run, 'timewheel-failover-')
