#
# test/redis_ha/service_on_cluster.py
#
# timewheeld on a real Redis Cluster (3 masters, 3 replicas, on 127.0.0.1) through its API, as
# a user runs it: `--store redis+cluster://seed,seed/queue`. The store's shards are spread
# over the masters by hash tags; the test checks that every master holds keys of the queue,
# then the whole life of tasks there: many tasks submitted and each called back, a cancel (never
# called), a reschedule (called at its new time), a task that dies into the dead letters and
# is retried from there, a callback answering 202 whose result is reported with POST
# /v1/tasks/{id}/result to a second node without a worker (forwarded to the holder over the
# cluster's pub/sub), the listing, the stats, /readyz and /metrics. Skipped (77) without
# redis-server or redis-cli.
#
#   python3 test/redis_ha/service_on_cluster.py --timewheeld build/server/timewheeld

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_cluster import RedisCluster  # noqa: E402
from receiver import Receiver, main  # noqa: E402
from timewheeld_process import Service, check, wait_for  # noqa: E402

TOKEN = 'cluster-token'
TASKS = 300


def run(binary, tmp):
    cluster = RedisCluster(tmp, masters=3, replicas=1)
    rx = Receiver()
    svc = None
    try:
        svc = Service(binary, cluster.url('orders'), tmp, TOKEN)
        check(svc.raw('GET', '/readyz')[0] == 200, '/readyz is not 200 on the cluster')

        # Many tasks, due together in 2 s: their shards land on every master.
        for i in range(TASKS):
            svc.api('POST', '/v1/tasks', {'id': f'task-{i}', 'delay_ms': 2000, 'callback': {'url': rx.url('/ok')}},
                    expect=(201,))
        masters = cluster.masters()
        check(len(masters) == 3, f'3 masters expected, CLUSTER NODES names {masters}')
        keys = {p: cluster.dbsize(p) for p in masters}
        print(f'keys per master after {TASKS} submits: {keys}')
        check(all(n > 0 for n in keys.values()), f'a master holds no key of the queue: {keys}')

        # Cancel: never called. Reschedule: called at its new time.
        svc.api('POST', '/v1/tasks', {'id': 'cancelled', 'delay_ms': 60000, 'callback': {'url': rx.url('/ok')}})
        check(svc.api('DELETE', '/v1/tasks/cancelled')['state'] == 'cancelled', 'cancel did not answer cancelled')
        svc.api('POST', '/v1/tasks', {'id': 'moved', 'delay_ms': 600000, 'callback': {'url': rx.url('/ok')}})
        svc.api('PATCH', '/v1/tasks/moved', {'delay_ms': 500})

        # A task that dies (400 is final), retried from the dead letters: then it succeeds.
        svc.api('POST', '/v1/tasks', {'id': 'dies', 'delay_ms': 0, 'callback': {'url': rx.url('/fails-once')}})
        wait_for(lambda: svc.state('dies') == 'dead', 'the task answered 400 to be dead')
        dead = svc.api('GET', '/v1/dead?limit=100')['entries']
        check([e['id'] for e in dead] == ['dies'], f'the dead letters are not [dies]: {dead}')
        svc.api('POST', '/v1/dead/dies/retry')

        # A callback that answers 202; its result reported to another node (API only), which
        # forwards it over the cluster's pub/sub to the node that holds the attempt.
        svc.api('POST', '/v1/tasks', {'id': 'later', 'delay_ms': 0, 'callback': {'url': rx.url('/later')}})
        wait_for(lambda: rx.called('later'), 'the 202 callback to be called')
        attempt = rx.called('later')[0][0]
        other_tmp = os.path.join(tmp, 'api-node')
        os.makedirs(other_tmp)
        other = Service(binary, cluster.url('orders'), other_tmp, TOKEN, extra_args=['--no-worker'])
        try:
            answer = other.api('POST', '/v1/tasks/later/result', {'attempt': attempt, 'outcome': 'success'},
                               expect=(200,))
            check(not answer.get('forwarded'), f'the result was not taken by the holder: {answer}')
        finally:
            other.close()

        ids = [f'task-{i}' for i in range(TASKS)] + ['moved', 'dies', 'later']
        wait_for(lambda: all(svc.state(i) == 'finished' for i in ids), 'every task to finish', 60)
        calls = rx.snapshot()
        missing = [i for i in ids if i not in calls]
        check(not missing, f'never called: {missing[:10]}')
        check('cancelled' not in calls, 'the cancelled task was called')
        check(len(calls['dies']) == 2, f'the dead letter retried: {len(calls["dies"])} calls, not 2')
        twice = [i for i in ids if i != 'dies' and len(calls[i]) != 1]
        check(not twice, f'called more than once without a failure: {twice[:10]}')

        # Listing (paged) and stats read every shard, on every master.
        listed, cursor = [], None
        while True:
            page = svc.api('GET', '/v1/tasks?state=finished&limit=100' + (f'&cursor={cursor}' if cursor else ''))
            listed += [e['id'] for e in page['entries']]
            cursor = page.get('next_cursor')
            if not cursor:
                break
        check(sorted(listed) == sorted(ids), f'the listing of finished tasks has {len(listed)} ids, not {len(ids)}')
        counts = svc.api('GET', '/v1/stats')['counts']
        check(counts.get('finished') == len(ids) and counts.get('cancelled') == 1,
              f'the stats count {counts}, not {len(ids)} finished and 1 cancelled')
        status, _, metrics = svc.raw('GET', '/metrics', headers={'Authorization': f'Bearer {TOKEN}'})
        check(status == 200 and b'timewheeld_' in metrics, f'/metrics answered {status}')
        print(f'service on cluster: ok: {len(ids)} tasks finished over 3 masters, 1 cancelled, '
              f'a dead letter retried, a result forwarded between nodes')
    finally:
        if svc:
            svc.close()
        rx.close()
        cluster.close()


if __name__ == '__main__':
    main(run, 'timewheel-cluster-')
