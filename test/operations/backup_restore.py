#!/usr/bin/env python3
#
# test/operations/backup_restore.py
#
# `timewheeld backup PATH` as an operator runs it: against a real timewheeld on its SQLite
# store, while a producer keeps submitting, then the restore docs/server.md describes (stop,
# put the backup in the store's place, start) into a new timewheeld. Everything on
# 127.0.0.1, in a temporary directory, ended by PID.
#
#   1. Tasks before: 60 delayed (one with a secret header), 10 of them cancelled, their
#      answers (state, due time, callback) read back over the API.
#   2. Two backups while a producer thread submits without pause: each exits 0, is one file
#      (no -wal beside it, rollback journal in its header) and passes integrity_check.
#   3. A new timewheeld on the first backup: every task from before (and every task the
#      producer had been answered for before the backup started) is there, with the same
#      state, due time and callback.
#   4. What must fail, with a message naming why and nothing left behind: a redis:// store,
#      an existing PATH (its bytes unchanged; --force replaces it), a PATH in a missing
#      directory, a store that is missing or not timewheeld's.
#   5. --check-config: the settings as given (secrets masked) and the store, exit 0; a bad
#      value exits 2 naming its variable, a bad store naming --store.
#
# Exit 0 when every check passed, 1 at the first that failed.
#
# Usage: backup_restore.py --timewheeld BUILD/server/timewheeld

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
from timewheeld_process import Failed, Service, check  # noqa: E402

TOKEN = 'backup-test-token'
HOUR_MS = 3600 * 1000


def task(task_id, extra_headers=None):
    cb = {'url': 'http://127.0.0.1:9/never', 'body': f'payload of {task_id}'}
    if extra_headers:
        cb['secret_headers'] = extra_headers
    return {'id': task_id, 'delay_ms': HOUR_MS, 'callback': cb}


def seen(svc, task_id):
    t = svc.api('GET', f'/v1/tasks/{task_id}')
    return {k: t[k] for k in ('state', 'due_at', 'callback')}


class Producer:
    """Submits tasks without pause on a thread; remembers when each was answered."""

    def __init__(self, svc):
        self.svc = svc
        self.answered = []  # (monotonic time of the answer, id)
        self.stop = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        n = 0
        try:
            while not self.stop.is_set():
                self.svc.api('POST', '/v1/tasks', task(f'during-{n}'))
                self.answered.append((time.monotonic(), f'during-{n}'))
                n += 1
        except Exception as e:  # reported by close()
            self.error = e

    def close(self):
        self.stop.set()
        self.thread.join()
        check(self.error is None, f'the producer failed: {self.error!r}')


def run_tw(binary, *args, env=None):
    return subprocess.run([binary, *args], env=dict(os.environ, **(env or {})),
                          capture_output=True, text=True, timeout=60)


def leftovers(directory):
    return [f for f in os.listdir(directory) if '.tmp-' in f]


def check_backup_file(path):
    with open(path, 'rb') as f:
        header = f.read(20)
    # Bytes 18 and 19: 1 for a rollback journal, 2 for WAL (which would need the -wal too).
    check(header[18] == 1 and header[19] == 1, f'{path} is not in rollback mode: {header[18:20]!r}')
    check(not os.path.exists(path + '-wal'), f'{path}-wal exists')
    db = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    try:
        result = db.execute('PRAGMA integrity_check').fetchall()
        check(result == [('ok',)], f'integrity_check of {path}: {result}')
        return db.execute('SELECT count(*) FROM tasks').fetchone()[0]
    finally:
        db.close()


def backups_while_busy(binary, tmp, store):
    svc = Service(binary, 'sqlite', os.path.join(tmp, 'a'), TOKEN)
    producer = None
    try:
        before = {}
        for i in range(60):
            headers = {'X-Api-Key': 'hush'} if i == 0 else None
            svc.api('POST', '/v1/tasks', task(f'before-{i}', headers))
        for i in range(50, 60):
            svc.api('DELETE', f'/v1/tasks/before-{i}')
        for i in range(60):
            before[f'before-{i}'] = seen(svc, f'before-{i}')
        check(before['before-55']['state'] == 'cancelled', 'a cancelled task before the backup')

        producer = Producer(svc)
        while len(producer.answered) < 20:
            time.sleep(0.01)
        backups = []
        for name in ['one.db', 'two.db']:
            started = time.monotonic()
            done_before = {i for (t, i) in producer.answered if t < started}
            path = os.path.join(tmp, name)
            r = run_tw(binary, 'backup', path, '--store', store)
            check(r.returncode == 0, f'backup {name} exit {r.returncode}: {r.stderr}')
            check('backed up' in r.stdout, f'backup {name} said: {r.stdout!r}')
            backups.append((path, done_before))
        answered_after = len(producer.answered)
        producer.close()
        producer = None
        check(answered_after > len(backups[0][1]), 'the producer went on during the backups')
        for path, done_before in backups:
            rows = check_backup_file(path)
            check(rows >= 60 + len(done_before), f'{path}: {rows} tasks, fewer than answered')
        print(f'ok: two backups while {answered_after} tasks were submitted: each one file, '
              f'integrity_check ok')
        return before, backups[0]
    finally:
        if producer:
            producer.stop.set()
            producer.thread.join()
        svc.close()


def restore(binary, tmp, before, backup):
    path, done_before = backup
    # The documented restore: the service stopped, the backup in the store's place (and no
    # -wal or -shm of the old file beside it), started again.
    restored = os.path.join(tmp, 'restored')
    os.mkdir(restored)
    shutil.copyfile(path, os.path.join(restored, 'tasks.db'))
    svc = Service(binary, 'sqlite', restored, TOKEN)
    try:
        for task_id, was in before.items():
            now = seen(svc, task_id)
            check(now == was, f'{task_id} after the restore: {now}, before: {was}')
        for task_id in sorted(done_before):
            check(svc.state(task_id) == 'delayed', f'{task_id}, answered before the backup, is missing')
        print(f'ok: restored: the {len(before)} tasks from before and the {len(done_before)} the '
              f'producer had been answered for, with their state, due time and callback')
    finally:
        svc.close()


def refusals(binary, tmp, store):
    def refused(args, wanted, what):
        r = run_tw(binary, *args)
        check(r.returncode == 2, f'{what}: exit {r.returncode}, stdout {r.stdout!r}')
        check(wanted in r.stderr, f'{what}: {r.stderr!r} does not say {wanted!r}')

    target = os.path.join(tmp, 'never.db')
    refused(['backup', target, '--store', 'redis://127.0.0.1:1/q'], 'redis://', 'a redis store')
    check(not os.path.exists(target), 'a refused backup left its PATH')
    existing = os.path.join(tmp, 'existing.db')
    with open(existing, 'wb') as f:
        f.write(b'keep me')
    refused(['backup', existing, '--store', store], 'exists (--force replaces it)', 'an existing PATH')
    check(open(existing, 'rb').read() == b'keep me', 'an existing PATH was changed')
    refused(['backup', os.path.join(tmp, 'missing', 'x.db'), '--store', store], 'cannot write in',
            'a PATH in a missing directory')
    refused(['backup', target, '--store', 'sqlite:' + os.path.join(tmp, 'nothing.db')], 'no store at',
            'a missing store')
    refused(['backup', target, '--store', 'sqlite:' + existing], 'not a timewheeld store',
            'a file that is not a store')
    refused(['backup'], 'needs the destination', 'no PATH')
    check(not os.path.exists(target), 'a refused backup left its PATH')
    check(leftovers(tmp) == [], f'temporary files left: {leftovers(tmp)}')
    r = run_tw(binary, 'backup', existing, '--force', '--store', store)
    check(r.returncode == 0, f'backup --force: {r.stderr}')
    check_backup_file(existing)
    check(leftovers(tmp) == [], f'temporary files left: {leftovers(tmp)}')
    print('ok: refused with a reason and nothing left: redis store, existing PATH, missing '
          'directory, missing store, not a store, no PATH; --force replaces')


def check_config(binary, tmp, store):
    env = {'TIMEWHEELD_TOKEN': 'very-secret-token', 'TIMEWHEELD_STORE': store}
    r = run_tw(binary, '--check-config', '--port', '9999', env=env)
    check(r.returncode == 0, f'--check-config: exit {r.returncode}: {r.stderr}')
    check('--port = 9999 (--port)' in r.stdout, f'--check-config does not show the flag: {r.stdout}')
    check(f'--store = {store} (TIMEWHEELD_STORE)' in r.stdout, f'no store line: {r.stdout}')
    check('--token = **** (TIMEWHEELD_TOKEN)' in r.stdout, f'the token line: {r.stdout}')
    check('very-secret-token' not in r.stdout + r.stderr, 'the token is printed')
    check('an SQLite database' in r.stdout, f'the store not checked: {r.stdout}')
    r = run_tw(binary, '--check-config', env=dict(env, TIMEWHEELD_PORT='70000'))
    check(r.returncode == 2 and 'TIMEWHEELD_PORT' in r.stderr, f'a bad port: {r.returncode} {r.stderr!r}')
    r = run_tw(binary, '--check-config', '--store', 'sqlite:' + os.path.join(tmp, 'existing.db.txt'),
               env=env)
    check(r.returncode == 0 and 'missing: created at start' in r.stdout, f'a new store: {r.stdout}')
    with open(os.path.join(tmp, 'text.db'), 'w') as f:
        f.write('not a database at all')
    r = run_tw(binary, '--check-config', '--store', 'sqlite:' + os.path.join(tmp, 'text.db'), env=env)
    check(r.returncode == 2 and '--store' in r.stderr and 'not an SQLite database' in r.stderr,
          f'not a database: {r.returncode} {r.stderr!r}')
    r = run_tw(binary, '--check-config', '--store', 'sqlite:' + os.path.join(tmp, 'no', 'x.db'), env=env)
    check(r.returncode == 2 and '--store' in r.stderr, f'a missing directory: {r.returncode} {r.stderr!r}')
    r = run_tw(binary, '--check-config', '--store', 'redis://u:pw1234@127.0.0.1:1/q', env=env)
    check(r.returncode == 0 and 'pw1234' not in r.stdout and 'redis://u:****@127.0.0.1:1/q' in r.stdout,
          f'a redis store: {r.stdout}')
    tokens = os.path.join(tmp, 'tokens')
    with open(tokens, 'w') as f:
        f.write('read sha256:' + '0' * 64 + ' ok\n')
    r = run_tw(binary, '--check-config', '--tokens-file', tokens, env=env)
    check(r.returncode == 0 and f'tokens: 1 in {tokens}' in r.stdout, f'a tokens file: {r.stdout} {r.stderr!r}')
    with open(tokens, 'a') as f:
        f.write('owner sha256:' + '1' * 64 + '\n')
    r = run_tw(binary, '--check-config', '--tokens-file', tokens, env=env)
    check(r.returncode == 2 and 'line 2: unknown scope' in r.stderr, f'a bad tokens file: {r.returncode} {r.stderr!r}')
    print('ok: --check-config shows the settings (secrets masked), checks the store and the tokens file; bad ones '
          'exit 2 naming them')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', required=True)
    args = ap.parse_args()
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='timewheel-backup-')
    os.mkdir(os.path.join(tmp, 'a'))
    store = 'sqlite:' + os.path.join(tmp, 'a', 'tasks.db')
    try:
        before, first = backups_while_busy(args.timewheeld, tmp, store)
        restore(args.timewheeld, tmp, before, first)
        refusals(args.timewheeld, tmp, store)
        check_config(args.timewheeld, tmp, store)
    except Failed as e:
        print(f'FAILED: {e}')
        for d in ['a', 'restored']:
            log = os.path.join(tmp, d, 'timewheeld.log')
            if os.path.exists(log):
                print(f'--- {d}/timewheeld.log\n' + open(log).read()[-3000:])
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'passed in {time.monotonic() - started:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
