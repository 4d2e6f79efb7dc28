#!/usr/bin/env python3
#
# test/browser/dashboard.py
#
# timewheeld's dashboard (/ui/) as a user meets it, in a real browser: starts the built
# timewheeld on a store of its own (SQLite in a temporary directory, or a redis-server of
# its own), a receiver of callbacks on 127.0.0.1 that answers per path (200, 500, 400, or
# holds the request), and headless Chromium through chromedriver (Debian's chromium,
# chromium-driver and python3-selenium). It makes tasks in every state through the API,
# then checks through the pages what a user sees and does: the page under a wrong token
# (the error, no data), the counts on the overview, a search by id prefix that narrows the
# table, a task page that hides header values, a dead letter retried from the page and then
# delivered (the receiver sees it), a dead letter deleted, a cancel, a schedule paused and
# triggered. Throughout: no console error (nor any CSP violation) and no request to
# anything but the service. Before the browser, plain HTTP checks of /ui/ itself: the
# headers, the redirect, 404, 304, and that the token is still needed everywhere else.
#
# Exit 0 when every check passed, 1 at the first that failed, 77 (ctest's SKIP_RETURN_CODE)
# when Chromium is missing. --screenshots DIR also writes the pages as PNGs (1280x800): how
# docs/images/dashboard-*.png are made.
#
# Usage: dashboard.py --timewheeld BUILD/server/timewheeld --store sqlite|redis
#                     [--screenshots DIR]

import argparse
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'support'))
from timewheeld_process import Failed, Service, check, wait_for  # noqa: E402

SKIP = 77
TOKEN = 'dashboard-test-token'
STATES = ['delayed', 'prefetched', 'running', 'finished', 'dead', 'cancelled']


# --- The receiver of callbacks --------------------------------------------------------------

class Receiver:
    """Answers per path: /ok/* 200, /fail/* 500, /bad/* 400, /hold/* holds the request
    until release(), /flaky/* 500 the first time a path is asked and 200 after. Records
    every request (path, method, headers)."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        self.released = threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                if length:
                    self.rfile.read(length)
                with receiver.lock:
                    seen = sum(1 for r in receiver.requests if r[0] == self.path)
                    receiver.requests.append((self.path, self.command, dict(self.headers)))
                kind = self.path.split('/')[1]
                if kind == 'hold':
                    receiver.released.wait(60)
                status = {'ok': 200, 'hold': 200, 'fail': 500, 'bad': 400,
                          'flaky': 500 if seen == 0 else 200}.get(kind, 404)
                self.send_response(status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            do_POST = do_GET = do_PUT = answer

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f'http://127.0.0.1:{self.port}{path}'

    def count(self, path):
        with self.lock:
            return sum(1 for r in self.requests if r[0] == path)

    def release(self):
        self.released.set()

    def close(self):
        self.released.set()
        self.server.shutdown()


# --- /ui/ over plain HTTP ---------------------------------------------------------------------

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def check_files_over_http(svc):
    status, h, _ = svc.raw('GET', '/ui')
    check(status == 301 and h.get('location') == '/ui/', f'GET /ui: {status} {h.get("location")}')
    status, h, body = svc.raw('GET', '/ui/')
    check(status == 200, f'GET /ui/ without a token: {status}')
    check(h.get('content-type') == 'text/html; charset=utf-8', f'/ui/ Content-Type: {h.get("content-type")}')
    check(h.get('content-security-policy') == CSP, f'/ui/ CSP: {h.get("content-security-policy")}')
    check(h.get('x-content-type-options') == 'nosniff', '/ui/ without nosniff')
    check(h.get('referrer-policy') == 'no-referrer', '/ui/ without Referrer-Policy')
    check(h.get('cache-control') == 'no-cache' and h.get('etag', '').startswith('"'), '/ui/ cache headers')
    check(b'<script type="module" src="app.js">' in body, '/ui/ is not the dashboard page')
    check(b'<script>' not in body and b' style=' not in body, '/ui/ has inline script or style')
    status, h2, _ = svc.raw('GET', '/ui/', headers={'If-None-Match': h['etag']})
    check(status == 304 and h2.get('etag') == h['etag'], f'GET /ui/ with its ETag: {status}')
    for name, ctype in [('app.js', 'text/javascript; charset=utf-8'), ('app.css', 'text/css; charset=utf-8'),
                        ('favicon.svg', 'image/svg+xml')]:
        status, h, _ = svc.raw('GET', f'/ui/{name}')
        check(status == 200 and h.get('content-type') == ctype, f'GET /ui/{name}: {status} {h.get("content-type")}')
    # Exact names only: nothing is decoded or normalised into another file or a route.
    for target in ['/ui/nope.js', '/ui/../v1/dead', '/ui/%61pp.js', '/ui/index.html/', '/ui//app.js']:
        status, h, body = svc.raw('GET', target)
        check(status == 404 and b'"not_found"' in body, f'GET {target} without a token: {status} {body[:200]!r}')
    status, _, _ = svc.raw('POST', '/ui/', body={})
    check(status == 405, f'POST /ui/: {status}')
    # Only /ui and /ui/... are let through without the token.
    for target in ['/uix', '/ui.js', '/v1/dead', '/v1/tasks?state=dead', '/v1/stats', '/metrics', '/']:
        status, _, _ = svc.raw('GET', target)
        check(status == 401, f'GET {target} without a token: {status}')
    print('ok: /ui/ over HTTP: headers, redirect, 304, 404, 405, and the token everywhere else')


# --- Tasks in every state -----------------------------------------------------------------------

def submit(svc, task_id, url, delay_ms=0, attempts=3, **callback):
    svc.api('POST', '/v1/tasks', {'id': task_id, 'delay_ms': delay_ms, 'callback': {'url': url, **callback},
                                   'retry': {'attempts': attempts, 'base_ms': 100, 'cap_ms': 100}})


def populate(svc, rx):
    """Tasks in every state; returns the counts expected."""
    hour = 3600 * 1000
    submit(svc, 'done-1', rx.url('/ok/done-1'))
    submit(svc, 'done-2', rx.url('/ok/done-2'))
    submit(svc, 'dead-bad', rx.url('/bad/dead-bad'))
    submit(svc, 'dead-flaky', rx.url('/flaky/dead-flaky'), attempts=1, headers={'X-Source': 'billing'},
           secret_headers={'Authorization': 'Bearer secret-value-789'}, body='{"invoice": 7}')
    for t, st in [('done-1', 'finished'), ('done-2', 'finished'), ('dead-bad', 'dead'), ('dead-flaky', 'dead')]:
        wait_for(lambda: svc.state(t) == st, f'{t} to be {st}')
    submit(svc, 'alpha-1', rx.url('/ok/alpha-1'), hour, headers={'X-Api-Key': 'plain-header-value-123'},
           secret_headers={'Authorization': 'Bearer secret-value-456'}, body='{"order": 42}')
    for t in ['alpha-2', 'alpha-3', 'beta-1', 'beta-2', 'gone-1']:
        submit(svc, t, rx.url(f'/ok/{t}'), hour)
    svc.api('DELETE', '/v1/tasks/gone-1')
    submit(svc, 'held-1', rx.url('/hold/held-1'), timeout_ms=60000)
    wait_for(lambda: rx.count('/hold/held-1') == 1 and svc.state('held-1') == 'running', 'held-1 to be running')
    submit(svc, 'queued-1', rx.url('/ok/queued-1'))
    wait_for(lambda: svc.state('queued-1') == 'prefetched', 'queued-1 to wait prefetched')
    expected = {'delayed': 5, 'prefetched': 1, 'running': 1, 'finished': 2, 'dead': 2, 'cancelled': 1}
    for t, st in [('alpha-1', 'delayed'), ('gone-1', 'cancelled')]:
        check(svc.state(t) == st, f'{t} is {svc.state(t)}, not {st}')
    print('ok: tasks in every state:', expected)
    return expected


# --- The browser ----------------------------------------------------------------------------------

def start_browser(tmp):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which('chromium')
    for arg in ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                '--window-size=1280,800', '--hide-scrollbars', f'--user-data-dir={os.path.join(tmp, "chromium")}',
                # Nothing but the page's own requests: no update checks, sync, or services.
                '--disable-background-networking', '--disable-component-update', '--disable-sync',
                '--disable-default-apps', '--disable-extensions', '--no-first-run', '--no-default-browser-check',
                '--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication',
                '--lang=en-US']:
        options.add_argument(arg)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
    driver_path = shutil.which('chromedriver') or '/usr/bin/chromedriver'
    return webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)


class Page:
    def __init__(self, driver, svc):
        from selenium.webdriver.common.by import By
        self.By = By
        self.d = driver
        self.svc = svc
        self.urls = []
        self.missing = []  # (404, path) of the routes this timewheeld lacks

    def all(self, css):
        return self.d.find_elements(self.By.CSS_SELECTOR, css)

    def one(self, css, timeout=20):
        return wait_for(lambda: (self.all(css) or [None])[0], f'an element {css}', timeout)

    def text(self, css):
        els = self.all(css)
        return els[0].text if els else None

    def go(self, hash_):
        self.d.execute_script('location.hash = arguments[0]', hash_)

    def sign_in(self, token):
        self.one('#token').send_keys(token)
        self.one('#login-form button[type=submit]').click()

    def console(self, allow=()):
        """The console's entries since the last call; fails on an error or a CSP report, but
        the failed requests of `allow`, (status, path) pairs that the test caused on purpose."""
        for e in self.d.get_log('browser'):
            msg = e.get('message', '')
            if any(msg.startswith(f'{self.svc.base}{path}') and f'status of {status}' in msg
                   for status, path in [*allow, *self.missing]):
                continue
            check(e.get('level') != 'SEVERE' and 'Content Security Policy' not in msg and 'Refused to' not in msg,
                  f'console: {e.get("level")} {msg}')

    def requests(self):
        """Every URL the dashboard asked for since the last call (the DevTools performance
        log): the requests of any document but Chromium's own pages (its start page, loaded
        as it starts, is chrome://new-tab-page...), and no data: URL, which reaches no
        network (Chromium draws the date inputs' icon with one)."""
        for e in self.d.get_log('performance'):
            m = json.loads(e['message'])['message']
            if m.get('method') == 'Network.requestWillBeSent':
                url = m['params']['request']['url']
                document = m['params'].get('documentURL', '')
                if document.startswith(('chrome://', 'chrome-untrusted://')) or url.startswith('data:'):
                    continue
                self.urls.append(url)

    def shot(self, directory, name):
        if directory:
            self.d.save_screenshot(os.path.join(directory, f'dashboard-{name}.png'))


def browse(svc, rx, expected, screenshots, tmp):
    driver = start_browser(tmp)
    try:
        p = Page(driver, svc)
        has_stats = svc.has_route('/v1/stats')
        has_list = svc.has_route('/v1/tasks?state=delayed')
        p.missing = [] if has_stats else [(404, '/v1/stats')]

        # A wrong token: the error, the form again, and no data on the page.
        driver.get(f'{svc.base}/ui/')
        p.sign_in('not-the-token')
        err = p.one('#login-error')
        wait_for(lambda: err.is_displayed() and 'Wrong token' in err.text, 'the wrong-token message')
        check(p.one('#login').is_displayed(), 'the sign-in form is not shown again')
        check(not p.one('#nav').is_displayed(), 'the navigation shows under a wrong token')
        check(p.all('#main *') == [], 'the page shows something under a wrong token')
        check('dead-flaky' not in driver.page_source and 'alpha-1' not in driver.page_source,
              'task data on the page under a wrong token')
        p.console(allow=[(401, '/v1/stats')])
        print('ok: a wrong token: "wrong token", the form again, no data')

        # The right token: the overview's counts are the store's.
        p.sign_in(TOKEN)
        if has_stats:
            for st in STATES:
                wait_for(lambda: p.text(f'#count-{st} .number') == str(expected[st]),
                         f'the overview to count {expected[st]} {st} (shows {p.text(f"#count-{st} .number")})')
            p.one('#lateness svg')
            p.one('#throughput svg polyline')
            # The receiver failed twice (the 400 and the first 500): its host is listed.
            wait_for(lambda: f'127.0.0.1:{rx.port}' in p.one('#hosts').text, 'the receiver among the hosts')
            p.shot(screenshots, 'overview')
            print('ok: the overview counts every state')
        else:
            print('SKIPPED: the overview: this timewheeld has no GET /v1/stats')
        p.console()

        # The table, and a search by id prefix that narrows it.
        if has_list:
            p.go('#/tasks?state=delayed')
            ids = lambda: [r.get_attribute('data-id') for r in p.all('#task-rows tr[data-id]')]
            wait_for(lambda: sorted(ids()) == ['alpha-1', 'alpha-2', 'alpha-3', 'beta-1', 'beta-2'],
                     'the table of delayed tasks')
            p.shot(screenshots, 'tasks')
            box = p.one('#id-prefix')
            box.clear()
            box.send_keys('alpha-')
            p.one('#search').click()
            wait_for(lambda: sorted(ids()) == ['alpha-1', 'alpha-2', 'alpha-3'], 'the search to narrow the table')
            check('id_prefix=alpha-' in driver.current_url, 'the search is not in the URL')
            p.go('#/tasks?state=dead')
            wait_for(lambda: sorted(ids()) == ['dead-bad', 'dead-flaky'], 'the table of dead letters')
            # Paging by cursor, two at a time: 2, 2, 1, then back.
            p.go('#/tasks?state=delayed&limit=2')
            pages = []
            for n in [2, 2, 1]:
                wait_for(lambda: len(ids()) == n and ids() not in pages, f'a page of {n}')
                pages.append(ids())
                if n > 1:
                    p.one('#next-page').click()
            check(not p.one('#next-page').is_enabled(), 'a next page after the last')
            check(sorted(sum(pages, [])) == ['alpha-1', 'alpha-2', 'alpha-3', 'beta-1', 'beta-2'],
                  f'the pages {pages}')
            p.one('#prev-page').click()
            wait_for(lambda: ids() == pages[1], 'the previous page again')
            print('ok: the table, and a search by id prefix that narrows it')
        else:
            print('SKIPPED: the task table: this timewheeld has no GET /v1/tasks (list)')
        p.console()

        # A task page: the callback with header names but no values.
        p.go('#/task/alpha-1')
        wait_for(lambda: p.text('#task-id') == 'alpha-1', 'the page of alpha-1')
        cb = p.one('#callback').text
        check('X-Api-Key' in cb and 'Authorization' in cb and '•••' in cb, f'the callback panel: {cb!r}')
        check('plain-header-value-123' not in driver.page_source and 'secret-value-456' not in driver.page_source,
              'a header value shows on the task page')
        check('No attempt yet' in p.one('#log').text, 'alpha-1 has a log')
        words = p.one('#main').text.split()
        check('null' not in words and 'undefined' not in words, f'a missing value shows as text: {words}')
        p.go('#/task/dead-flaky')
        wait_for(lambda: p.text('#task-id') == 'dead-flaky', 'the page of dead-flaky')
        entries = wait_for(lambda: p.all('#log li'), 'the execution log of dead-flaky')
        check(len(entries) == 1 and 'Attempt 1' in entries[0].text and '500' in entries[0].text,
              f'the execution log of dead-flaky: {[e.text for e in entries]}')
        p.console()
        print('ok: a task page: header names without values, the execution log')

        # The held callback answers; the prefetched task runs after it.
        rx.release()
        for t in ['held-1', 'queued-1']:
            wait_for(lambda: svc.state(t) == 'finished', f'{t} to finish')

        # A dead letter retried from the list, then delivered.
        p.go('#/dead')
        p.one('#dead-table tr[data-id="dead-flaky"] button.retry').click()
        wait_for(lambda: rx.count('/flaky/dead-flaky') == 2, 'the retried dead letter to reach the receiver')
        wait_for(lambda: svc.state('dead-flaky') == 'finished', 'the retried dead letter to finish')
        check('queued again' in p.one('#notice').text, 'no notice of the retry')
        p.go('#/task/dead-flaky')
        wait_for(lambda: p.text('#task-state') == 'finished', 'the page to show dead-flaky finished')
        if svc.store == 'sqlite':  # Redis forgets a finished task's record, its log too
            wait_for(lambda: len(p.all('#log li')) == 2, 'the second attempt in the execution log')
        check('secret-value-789' not in driver.page_source, 'a secret header value shows on the task page')
        words = p.one('#main').text.split()
        check('null' not in words and 'undefined' not in words, f'a missing value shows as text: {words}')
        p.shot(screenshots, 'task')
        print('ok: a dead letter retried from the page, delivered')

        # A dead letter deleted from its page (two clicks: the button asks again).
        p.go('#/task/dead-bad')
        button = p.one('#delete-dead')
        button.click()
        wait_for(lambda: 'Really' in button.text, 'the delete button to ask again')
        check(svc.state('dead-bad') == 'dead', 'one click deleted the dead letter')
        button.click()
        wait_for(lambda: svc.state('dead-bad') is None, 'the dead letter to be deleted')
        wait_for(lambda: 'dead-bad deleted' in (p.text('#notice') or ''), 'the notice of the delete')
        check(p.all('#dead-table tr[data-id="dead-bad"]') == [], 'dead-bad still listed')
        print('ok: a dead letter deleted from its page')

        # A cancel from the page.
        p.go('#/task/beta-1')
        button = p.one('#cancel-task')
        button.click()
        button.click()
        wait_for(lambda: p.text('#task-state') == 'cancelled', 'the page to show beta-1 cancelled')
        check(svc.state('beta-1') == 'cancelled', f'beta-1 is {svc.state("beta-1")}')
        check('cancelled' in p.one('#notice').text, 'no notice of the cancel')
        print('ok: a cancel from the page')

        # A schedule paused, then triggered, from the page.
        svc.api('POST', '/v1/schedules', {'id': 'hourly', 'every_ms': 3600000,
                                          'start_at': '2099-01-01T00:00:00Z',
                                          'callback': {'url': rx.url('/ok/hourly')}})
        p.go('#/schedules')
        p.one('#schedule-table tr[data-id="hourly"] button.pause').click()
        wait_for(lambda: svc.api('GET', '/v1/schedules/hourly')['paused'] is True, 'the schedule to be paused')
        p.one('#schedule-table tr[data-id="hourly"] button.resume')
        p.one('#schedule-table tr[data-id="hourly"] button.trigger').click()
        wait_for(lambda: rx.count('/ok/hourly') == 1, 'the triggered occurrence to reach the receiver')
        print('ok: a schedule paused and triggered from the page')

        p.console()
        p.requests()
        prefix = f'{svc.base}/'
        check(any(u.startswith(f'{prefix}ui/app.js') for u in p.urls) and
              any(u.startswith(f'{prefix}v1/tasks/') for u in p.urls), f'the request log misses the page: {p.urls}')
        outside = [u for u in p.urls if not u.startswith(prefix)]
        check(outside == [], f'requests outside the service: {outside}')
        print(f'ok: no console error, and all {len(p.urls)} requests to {prefix} only')
    finally:
        driver.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', required=True)
    ap.add_argument('--store', choices=['sqlite', 'redis'], default='sqlite')
    ap.add_argument('--screenshots')
    args = ap.parse_args()
    if not shutil.which('chromium'):
        print('SKIPPED: chromium is not installed (scripts/setup.sh installs chromium, chromium-driver '
              'and python3-selenium)')
        return SKIP
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='timewheel-dashboard-')
    rx = Receiver()
    svc = None
    try:
        # One callback at a time, so that a held callback keeps the next due task waiting
        # prefetched: every state can be seen at once.
        svc = Service(args.timewheeld, args.store, tmp, TOKEN, ['--worker-concurrency', '1'])
        check_files_over_http(svc)
        expected = populate(svc, rx)
        if svc.has_route('/v1/stats'):
            counts = svc.api('GET', '/v1/stats')['counts']
            check(counts == expected, f'GET /v1/stats counts {counts}, not {expected}')
        browse(svc, rx, expected, args.screenshots, tmp)
    except Failed as e:
        print(f'FAILED ({args.store}): {e}')
        if svc:
            svc.log.flush()
            print(open(os.path.join(tmp, 'timewheeld.log')).read()[-4000:])
        return 1
    finally:
        rx.close()
        if svc:
            svc.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'passed ({args.store}) in {time.monotonic() - started:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
