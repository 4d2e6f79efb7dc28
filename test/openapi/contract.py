#!/usr/bin/env python3
#
# test/openapi/contract.py
#
# The contract test of docs/openapi.yaml: a real timewheeld (test/support/timewheeld_process.py)
# is driven through every operation of the document, successes and errors (400 naming its
# field, 401, 403, 404, 405, 409, 413, 415), and every answer it gives is checked against the
# document: its status must be listed for that path and method (an undocumented status
# fails), its Content-Type must be one the document gives, its body must validate against
# that answer's schema (answer objects are closed, so a field added without the document
# fails), and its documented headers must be there. Every operation of the document must
# have been answered at least once, every 405's Allow must list exactly the document's
# methods of its path, and the routes of the router (the "METHOD /path" labels of
# server/api/src/routes.cpp) must be exactly the document's operations. The document is read
# from docs/openapi.json (the ctest openapi_json_current keeps it what docs/openapi.yaml gives)
# and must equal what the service serves at GET /v1/openapi.json. JSON Schema by Debian's
# python3-jsonschema (Draft 2020-12, which OpenAPI 3.1's schemas are).
#
# Usage: contract.py --timewheeld BUILD/server/timewheeld [--store sqlite|redis]

import argparse
import concurrent.futures
import hashlib
import http.client
import http.server
import json
import os
import re
import socket
import sys
import tempfile
import threading
import time
from urllib.parse import quote

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, '..', '..'))
sys.path.insert(0, os.path.join(repo, 'test', 'support'))
from timewheeld_process import Failed, Service, check, wait_for  # noqa: E402

import jsonschema  # noqa: E402

TOKEN = 'contract-token'
READ_TOKEN = 'contract-read-token'  # in a --tokens-file, scope read
METHODS = ('get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace')


def load_document():
    with open(os.path.join(repo, 'docs', 'openapi.json'), encoding='utf-8') as f:
        return json.load(f)


def pointer(doc, ref):
    check(ref.startswith('#/'), f'only local $refs are used: {ref}')
    node = doc
    for part in ref[2:].split('/'):
        node = node[part.replace('~1', '/').replace('~0', '~')]
    return node


def inline(doc, node):
    """`node` with every $ref replaced by what it points to (the document has no cycles)."""
    if isinstance(node, dict):
        if '$ref' in node:
            target = inline(doc, pointer(doc, node['$ref']))
            rest = {k: inline(doc, v) for k, v in node.items() if k != '$ref'}
            return {**target, **rest} if rest else target
        return {k: inline(doc, v) for k, v in node.items()}
    if isinstance(node, list):
        return [inline(doc, v) for v in node]
    return node


class Contract:
    """The document, and what the service answered against it."""

    def __init__(self, doc):
        self.doc = doc
        self.answered = {}  # (METHOD, template) -> set of statuses seen

    def operations(self):
        for template, item in self.doc['paths'].items():
            for method in METHODS:
                if method in item:
                    yield method.upper(), template, item[method]

    def operation(self, method, template):
        item = self.doc['paths'].get(template)
        check(item is not None, f'{template} is not a path of the document')
        op = item.get(method.lower())
        check(op is not None, f'{method} {template} is not an operation of the document')
        return op

    def validate(self, schema, value, what):
        errors = sorted(jsonschema.Draft202012Validator(inline(self.doc, schema)).iter_errors(value),
                        key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            raise Failed(f'{what}: {e.message} at {"/".join(map(str, e.absolute_path)) or "the top"} '
                         f'({len(errors)} error(s)); the value: {json.dumps(value)[:600]}')

    def request_schema(self, method, template):
        body = self.operation(method, template).get('requestBody')
        return body and inline(self.doc, body)['content']['application/json']['schema']

    def check_response(self, response, status, headers, body, what):
        response = inline(self.doc, response)
        for name, header in response.get('headers', {}).items():
            # Every header the document lists is promised, unless it says `required: false`
            # (a stricter reading than OpenAPI's default, which makes none required).
            if header.get('required') is False and name.lower() not in headers:
                continue
            check(name.lower() in headers, f'{what}: no {name} header, which the document promises')
            schema = header.get('schema', {})
            value = headers[name.lower()]
            self.validate(schema, int(value) if schema.get('type') == 'integer' else value,
                          f'{what}: header {name}')
        media = headers.get('content-type', '').split(';')[0].strip()
        content = response.get('content', {})
        check(media in content, f'{what}: Content-Type {media!r}, the document gives {sorted(content)}')
        schema = content[media].get('schema', {})
        if media == 'application/json':
            try:
                value = json.loads(body)
            except ValueError:
                raise Failed(f'{what}: not JSON: {body[:300]!r}')
            self.validate(schema, value, what)
            return value
        self.validate(schema, body.decode(), what)
        return body.decode()

    def answer(self, method, template, status, headers, body):
        """Checks one answer of `method template` against the document; returns its JSON."""
        what = f'{method} {template} -> {status}'
        responses = self.operation(method, template)['responses']
        check(str(status) in responses,
              f'{what}: a status the document does not list ({", ".join(sorted(responses))}): {body[:300]!r}')
        value = self.check_response(responses[str(status)], status, headers, body, what)
        self.answered.setdefault((method, template), set()).add(status)
        return value


class Client:
    """Requests to the service, each answer checked by the contract before the test sees it."""

    def __init__(self, svc, contract):
        self.svc = svc
        self.contract = contract

    def send(self, method, target, data=None, headers=None, token=True):
        conn = http.client.HTTPConnection('127.0.0.1', self.svc.port, timeout=30)
        try:
            h = dict(headers or {})
            if token:
                h['Authorization'] = f'Bearer {TOKEN}'
            conn.request(method, target, body=data, headers=h)
            res = conn.getresponse()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
        finally:
            conn.close()

    def call(self, method, target, template, body=None, expect=200, field=None, code=None,
             headers=None, token=True, data=None):
        """One request; its answer must have status `expect`, be what the document says, and
        (an error) carry `code` and name `field`. A request that should succeed must be one the
        document's request schema accepts."""
        h = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault('Content-Type', 'application/json')
            if expect < 300:
                schema = self.contract.request_schema(method, template)
                check(schema is not None, f'{method} {template}: a body the document does not take')
                self.contract.validate(schema, body, f'{method} {template}: the request body')
        status, headers_, raw = self.send(method, target, data, h, token)
        check(status == expect, f'{method} {target}: {status}, expected {expect}: {raw[:300]!r}')
        value = self.contract.answer(method, template, status, headers_, raw)
        if code is not None:
            check(value['error']['code'] == code, f'{method} {target}: code {value["error"]!r}, expected {code}')
        if field is not None:
            check(value['error'].get('field') == field,
                  f'{method} {target}: field {value["error"]!r}, expected {field}')
        return value, headers_

    def refused_by_document(self, method, template, body):
        """A body the service refused (400) must be refused by the document's schema too."""
        schema = inline(self.contract.doc, self.contract.request_schema(method, template))
        check(not jsonschema.Draft202012Validator(schema).is_valid(body),
              f'{method} {template}: the document accepts {json.dumps(body)}, which the service refuses')


class Receiver(http.server.BaseHTTPRequestHandler):
    """Callbacks: /ok answers 200, /fail 500, /defer 202 (the result comes by the API)."""
    calls = []

    def handle_any(self):
        self.rfile.read(int(self.headers.get('Content-Length') or 0))
        Receiver.calls.append((self.path, self.headers.get('Idempotency-Key')))
        status = {'/ok': 200, '/fail': 500, '/defer': 202}.get(self.path, 404)
        self.send_response(status)
        self.send_header('Content-Length', '0')
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    def log_message(self, *args):
        pass


def route_labels():
    """The routes of the router: its "METHOD /path" labels, but the dashboard's files."""
    with open(os.path.join(repo, 'server', 'api', 'src', 'routes.cpp'), encoding='utf-8') as f:
        text = f.read()
    labels = set(re.findall(r'"(GET|POST|PUT|PATCH|DELETE) (/[^"]*)"', text))
    check(len(labels) > 10, f'too few route labels found in routes.cpp: {labels}')
    return {(m, p) for m, p in labels if not p.startswith('/ui')}


def the_routes_of_the_router_are_the_operations_of_the_document(contract):
    router = route_labels()
    document = {(m, t) for m, t, _ in contract.operations()}
    check(router - document == set(),
          f'routes of server/api/src/routes.cpp missing from docs/openapi.yaml: {sorted(router - document)}')
    check(document - router == set(),
          f'operations of docs/openapi.yaml that routes.cpp does not route: {sorted(document - router)}')


def every_operation_needing_the_token_answers_401_without_it(client, contract):
    for method, template, op in contract.operations():
        if op.get('security', contract.doc.get('security')) == []:
            continue
        target = template.replace('{id}', 'x')
        value, headers = client.call(method, target, template, expect=401, code='unauthorized', token=False)
        check(headers.get('www-authenticate') == 'Bearer', f'{method} {target}: WWW-Authenticate')


def every_path_answers_405_for_a_method_it_does_not_take(client, contract):
    """The 405 is no operation's (it answers the methods a path does not list): checked against
    components/responses/MethodNotAllowed, its Allow against the document's methods."""
    response = contract.doc['components']['responses']['MethodNotAllowed']
    for template, item in contract.doc['paths'].items():
        methods = {m.upper() for m in METHODS if m in item}
        other = next(m for m in ('PUT', 'POST', 'DELETE') if m not in methods)
        target = template.replace('{id}', 'x')
        status, headers, body = client.send(other, target)
        what = f'{other} {target} -> {status}'
        check(status == 405, f'{what}: expected 405: {body[:200]!r}')
        contract.check_response(response, status, headers, body, what)
        allow = {m.strip() for m in headers['allow'].split(',')}
        check(allow == methods, f'{what}: Allow {sorted(allow)}, the document has {sorted(methods)}')


def every_operation_that_changes_state_refuses_a_foreign_origin(client, contract):
    for method, template, op in contract.operations():
        if method in ('POST', 'PATCH', 'DELETE'):
            client.call(method, template.replace('{id}', 'x'), template, headers={'Origin': 'http://evil.example'},
                        expect=403, code='forbidden_origin')


def every_operation_that_changes_state_refuses_a_read_token(client, contract):
    for method, template, op in contract.operations():
        if method in ('POST', 'PATCH', 'DELETE'):
            client.call(method, template.replace('{id}', 'x'), template, token=False,
                        headers={'Authorization': f'Bearer {READ_TOKEN}'},
                        expect=403, code='insufficient_scope')


def every_operation_taking_a_body_refuses_one_not_json_or_too_large(client, contract):
    too_large = b'{"pad": "' + b'x' * (1100 * 1024) + b'"}'  # --max-body-bytes is 1 MiB
    for method, template, op in contract.operations():
        if 'requestBody' in op:
            target = template.replace('{id}', 'x')
            client.call(method, target, template, data=b'delay_ms=1', headers={'Content-Type': 'text/plain'},
                        expect=415, code='unsupported_media_type', field='Content-Type')
            client.call(method, target, template, data=too_large, headers={'Content-Type': 'application/json'},
                        expect=413, code='body_too_large')


def every_operation_on_an_id_refuses_a_malformed_one(client, contract):
    for method, template, op in contract.operations():
        if '{id}' in template:
            client.call(method, template.replace('{id}', 'a%ZZ'), template, expect=400, code='invalid_field',
                        field='id')


def the_probes_and_the_served_document_are_as_documented(client, contract):
    client.call('GET', '/healthz', '/healthz', token=False)
    client.call('GET', '/readyz', '/readyz', token=False)
    text, _ = client.call('GET', '/metrics', '/metrics')
    check('timewheeld_tasks_submitted_total' in text, 'GET /metrics: no timewheeld_tasks_submitted_total')
    served, _ = client.call('GET', '/v1/openapi.json', '/v1/openapi.json')
    check(served == contract.doc, 'GET /v1/openapi.json is not docs/openapi.json: rebuild timewheeld')
    # An HTTP/1.1 request without Host, which http.client always sends.
    for template in ('/healthz', '/readyz'):
        with socket.create_connection(('127.0.0.1', client.svc.port), timeout=10) as s:
            s.sendall(f'GET {template} HTTP/1.1\r\nConnection: close\r\n\r\n'.encode())
            raw = b''
            while chunk := s.recv(65536):
                raw += chunk
        head, _, body = raw.partition(b'\r\n\r\n')
        lines = head.decode().split('\r\n')
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(':', 1) for line in lines[1:])}
        value = contract.answer('GET', template, status, headers, body)
        check(status == 400 and value['error']['code'] == 'missing_host', f'GET {template} without Host: {status}')


def submits_reads_changes_and_cancels_answer_as_documented(client, recv):
    callback = {'url': f'{recv}/ok', 'method': 'PUT', 'headers': {'X-Kind': 'reminder'},
                'secret_headers': {'X-Api-Key': 'hush'}, 'body': '{"invoice": 42}', 'timeout_ms': 5000}
    task = {'id': 'invoice-42', 'delay_ms': 3600000, 'callback': callback,
            'retry': {'attempts': 3, 'base_ms': 10, 'cap_ms': 1000}}
    created, headers = client.call('POST', '/v1/tasks', '/v1/tasks', task, expect=201)
    check(headers['location'] == '/v1/tasks/invoice-42', f'Location {headers["location"]}')
    again, _ = client.call('POST', '/v1/tasks', '/v1/tasks', task, expect=200)
    check(again['replaced'] is False and again['callback']['secret_headers'] == {'X-Api-Key': '***'},
          f'a second submit: {again}')
    replaced, _ = client.call('POST', '/v1/tasks', '/v1/tasks', {**task, 'on_conflict': 'replace'})
    check(replaced['replaced'] is True, f'a replace: {replaced}')
    client.call('POST', '/v1/tasks', '/v1/tasks',
                {'due_at': '2030-01-01T00:00:00+01:00', 'callback': {'url': f'{recv}/ok'}}, expect=201)
    client.call('POST', '/v1/tasks', '/v1/tasks',
                {'id': 'deb', 'delay_ms': 3600000, 'on_conflict': 'debounce', 'max_delay_ms': 7200000,
                 'callback': {'url': f'{recv}/ok'}}, expect=201)
    for body, field in (({**task, 'colour': 'red'}, 'colour'),
                        ({**task, 'due_at': '2030-01-01T00:00:00Z'}, 'due_at'),
                        ({'delay_ms': 1}, 'callback'),
                        ({**task, 'on_conflict': 'debounce'}, 'max_delay_ms'),
                        ({**task, 'callback': {**callback, 'headers': {'Host': 'x'}}}, 'callback.headers.Host'),
                        ({**task, 'retry': {'attempts': 0}}, 'retry.attempts')):
        client.call('POST', '/v1/tasks', '/v1/tasks', body, expect=400, code='invalid_field', field=field)
        if field != 'callback.headers.Host':  # a refused header name is the prose's, not the schema's
            client.refused_by_document('POST', '/v1/tasks', body)
    client.call('POST', '/v1/tasks', '/v1/tasks', data=b'{"id": ', headers={'Content-Type': 'application/json'},
                expect=400, code='invalid_field', field='body')

    client.call('GET', '/v1/tasks/invoice-42', '/v1/tasks/{id}')
    client.call('GET', '/v1/tasks/nobody', '/v1/tasks/{id}', expect=404, code='not_found')
    client.call('PATCH', '/v1/tasks/invoice-42', '/v1/tasks/{id}', {'delay_ms': 7200000})
    client.call('PATCH', '/v1/tasks/invoice-42', '/v1/tasks/{id}', {'due_at': '2030-01-01T09:00:00+01:00'})
    both = {'delay_ms': 1, 'due_at': '2030-01-01T00:00:00Z'}
    client.call('PATCH', '/v1/tasks/invoice-42', '/v1/tasks/{id}', both, expect=400, field='due_at')
    client.refused_by_document('PATCH', '/v1/tasks/{id}', both)
    client.call('PATCH', '/v1/tasks/nobody', '/v1/tasks/{id}', {'delay_ms': 1}, expect=404, code='not_found')
    client.call('DELETE', '/v1/tasks/invoice-42', '/v1/tasks/{id}')
    client.call('DELETE', '/v1/tasks/invoice-42', '/v1/tasks/{id}', expect=409, code='too_late')
    client.call('PATCH', '/v1/tasks/invoice-42', '/v1/tasks/{id}', {'delay_ms': 1}, expect=409, code='wrong_state')
    client.call('DELETE', '/v1/tasks/nobody', '/v1/tasks/{id}', expect=404, code='not_found')

    batch = {'tasks': [{'id': 'b1', 'delay_ms': 3600000, 'callback': {'url': f'{recv}/ok'}},
                       {'id': 'b2', 'delay_ms': 3600000, 'callback': {'url': 'ftp://b.example/x'}},
                       {'id': 'b1', 'delay_ms': 3600000, 'callback': {'url': f'{recv}/ok'}}]}
    results, _ = client.call('POST', '/v1/tasks:batch', '/v1/tasks:batch', batch)
    check([r['status'] for r in results['results']] == [201, 400, 200], f'a batch: {results}')
    check(results['results'][1]['error']['field'] == 'callback.url', f'a batch item: {results}')
    for body, field in (({}, 'tasks'), ({'tasks': []}, 'tasks'), ({'tasks': [], 'more': 1}, 'more')):
        client.call('POST', '/v1/tasks:batch', '/v1/tasks:batch', body, expect=400, code='invalid_field', field=field)
        client.refused_by_document('POST', '/v1/tasks:batch', body)
    many = {'tasks': [{'delay_ms': 0, 'callback': {'url': 'http://a.example'}}] * 1001}
    client.call('POST', '/v1/tasks:batch', '/v1/tasks:batch', many, expect=413, code='batch_too_large', field='tasks')
    client.refused_by_document('POST', '/v1/tasks:batch', many)


def tasks_that_ran_dead_letters_results_and_views_answer_as_documented(client, svc, recv):
    """Tasks that run: one finished, dead letters, and a 202 whose result is reported."""
    now = {'delay_ms': 0, 'retry': {'attempts': 1}}
    notices = {'on_success': {'url': f'{recv}/ok', 'headers': {'X-Notice': 'done'}}, 'on_failure': {'url': f'{recv}/ok'}}
    client.call('POST', '/v1/tasks', '/v1/tasks', {'id': 'done', 'callback': {'url': f'{recv}/ok', **notices}, **now},
                expect=201)
    for i in (1, 2):
        client.call('POST', '/v1/tasks', '/v1/tasks', {'id': f'dead-{i}', 'callback': {'url': f'{recv}/fail'}, **now},
                    expect=201)
    client.call('POST', '/v1/tasks', '/v1/tasks', {'id': 'deferred', 'callback': {'url': f'{recv}/defer'}, **now},
                expect=201)
    wait_for(lambda: svc.state('done') == 'finished', 'the task "done" to finish')
    wait_for(lambda: svc.state('dead-1') == 'dead' and svc.state('dead-2') == 'dead', 'two dead letters')
    # The attempt waits for its result once the 202 is read: until then a report finds none.
    report = json.dumps({'attempt': 2, 'outcome': 'success'}).encode()
    wait_for(lambda: client.send('POST', '/v1/tasks/deferred/result', report,
                                 {'Content-Type': 'application/json'})[0] == 409,
             'the deferred callback to wait for its result')

    task, _ = client.call('GET', '/v1/tasks/done', '/v1/tasks/{id}')
    check(len(task['log']) == 1, f'a finished task shows its attempt: {task}')
    # Its completion notice is a task of its own, shown with "notice" instead of "callback".
    wait_for(lambda: svc.state('done~notice') == 'finished', 'the notice of "done" to be delivered')
    notice, _ = client.call('GET', '/v1/tasks/done~notice', '/v1/tasks/{id}')
    check(notice.get('callback') is None and (notice['notice'] is None or notice['notice']['task_id'] == 'done'),
          f'a notice task: {notice}')
    client.call('POST', '/v1/tasks', '/v1/tasks', {'id': 'mine~notice', 'callback': {'url': f'{recv}/ok'}, **now},
                expect=400, code='invalid_field', field='id')
    client.call('POST', '/v1/tasks', '/v1/tasks', {'callback': {'url': f'{recv}/ok', 'on_success': {}}, **now},
                expect=400, code='invalid_field', field='callback.on_success.url')
    client.call('POST', '/v1/tasks', '/v1/tasks',
                {'id': 'done', 'callback': {'url': f'{recv}/ok'}, 'on_conflict': 'replace', **now},
                expect=409, code='conflict')
    batch = {'tasks': [{'id': 'done', 'callback': {'url': f'{recv}/ok'}, 'on_conflict': 'replace', **now}]}
    results, _ = client.call('POST', '/v1/tasks:batch', '/v1/tasks:batch', batch)
    check(results['results'][0]['status'] == 409, f'a batch replace of a finished task: {results}')

    page, _ = client.call('GET', '/v1/tasks?state=finished&limit=1', '/v1/tasks')
    check(page['entries'] and 'ended_at' in page['entries'][0], f'a finished page: {page}')
    page, _ = client.call('GET', '/v1/tasks?state=delayed&limit=1', '/v1/tasks')
    check(page['next_cursor'] is not None, f'a first page of one delayed task: {page}')
    client.call('GET', '/v1/tasks?state=delayed&limit=1&cursor=' + quote(page['next_cursor'], safe=''), '/v1/tasks')
    client.call('GET', '/v1/tasks?state=dead&host=127.0.0.1&order=asc&ended_after=2020-01-01T00:00:00Z', '/v1/tasks')
    for query, field in (('', 'state'), ('state=late', 'state'), ('state=dead&due_after=2020-01-01T00:00:00Z', 'due_after'),
                         ('state=dead&colour=red', 'colour'), ('state=dead&limit=0', 'limit'),
                         ('state=dead&cursor=nonsense', 'cursor')):
        client.call('GET', f'/v1/tasks?{query}', '/v1/tasks', expect=400, code='invalid_field', field=field)

    dead, _ = client.call('GET', '/v1/dead?limit=1', '/v1/dead')
    check(len(dead['entries']) == 1 and dead['next_cursor'], f'a first page of dead letters: {dead}')
    client.call('GET', '/v1/dead?limit=1&cursor=' + quote(dead['next_cursor'], safe=''), '/v1/dead')
    client.call('GET', '/v1/dead?limit=5000', '/v1/dead', expect=400, field='limit')
    client.call('GET', '/v1/dead?cursor=nonsense', '/v1/dead', expect=400, field='cursor')
    client.call('POST', '/v1/dead/dead-1/retry', '/v1/dead/{id}/retry', {'delay_ms': 3600000})
    client.call('POST', '/v1/dead/dead-1/retry', '/v1/dead/{id}/retry', expect=404, code='not_found')
    client.call('POST', '/v1/dead/dead-2/retry', '/v1/dead/{id}/retry', {'delay': 1}, expect=400, field='delay')
    client.call('DELETE', '/v1/dead/dead-2', '/v1/dead/{id}')
    client.call('DELETE', '/v1/dead/dead-2', '/v1/dead/{id}', expect=404, code='not_found')

    client.call('POST', '/v1/tasks/deferred/result', '/v1/tasks/{id}/result', {'attempt': 2, 'outcome': 'success'},
                expect=409, code='wrong_attempt')
    client.call('POST', '/v1/tasks/deferred/result', '/v1/tasks/{id}/result', {'attempt': 1, 'outcome': 'success'})
    client.call('POST', '/v1/tasks/deferred/result', '/v1/tasks/{id}/result', {'attempt': 1, 'outcome': 'success'},
                expect=404, code='no_pending_attempt')
    bad = {'attempt': 1, 'outcome': 'success', 'retry_after_ms': 5}
    client.call('POST', '/v1/tasks/deferred/result', '/v1/tasks/{id}/result', bad, expect=400, field='retry_after_ms')
    bad = {'attempt': 1, 'outcome': 'maybe'}
    client.call('POST', '/v1/tasks/deferred/result', '/v1/tasks/{id}/result', bad, expect=400, field='outcome')
    client.refused_by_document('POST', '/v1/tasks/{id}/result', bad)

    stats, _ = client.call('GET', '/v1/stats', '/v1/stats')
    check(stats['hosts'], f'the callbacks made show in /v1/stats: {stats}')


def schedules_and_their_actions_answer_as_documented(client, recv):
    spec = {'id': 'daily-report', 'cron': '0 9 * * 1-5', 'time_zone': 'Europe/Berlin',
            'callback': {'url': f'{recv}/ok'}, 'retry': {'attempts': 3},
            'misfire': {'policy': 'run_all', 'limit': 10}, 'overlap': 'forbid',
            'start_at': '2026-01-01T00:00:00Z', 'end_at': '2099-01-01T00:00:00Z'}
    _, headers = client.call('POST', '/v1/schedules', '/v1/schedules', spec, expect=201)
    check(headers['location'] == '/v1/schedules/daily-report', f'Location {headers["location"]}')
    client.call('POST', '/v1/schedules', '/v1/schedules', spec, expect=200)
    client.call('POST', '/v1/schedules', '/v1/schedules', {**spec, 'cron': '0 8 * * *'}, expect=409,
                code='schedule_conflict', field='id')
    client.call('POST', '/v1/schedules', '/v1/schedules',
                {'id': 'every', 'every_ms': 3600000, 'paused': True, 'callback': {'url': f'{recv}/ok'}}, expect=201)
    for body, field in (({**spec, 'id': 'x', 'cron': '0 25 * * *'}, 'cron'),
                        ({**spec, 'id': 'x', 'time_zone': 'Mars/Olympus'}, 'time_zone'),
                        ({**spec, 'id': 'x', 'every_ms': 1000}, 'cron'),
                        ({**spec, 'id': 'x', 'colour': 'red'}, 'colour'),
                        ({**spec, 'id': 'x', 'misfire': {'policy': 'skip', 'limit': 2}}, 'misfire.limit')):
        client.call('POST', '/v1/schedules', '/v1/schedules', body, expect=400, code='invalid_field', field=field)
    for body in ({**spec, 'id': 'x', 'every_ms': 1000}, {**spec, 'id': 'x', 'colour': 'red'},
                 {k: v for k, v in spec.items() if k != 'id'}):
        client.refused_by_document('POST', '/v1/schedules', body)

    page, _ = client.call('GET', '/v1/schedules?limit=1', '/v1/schedules')
    check(page['next_cursor'], f'a first page of one schedule: {page}')
    client.call('GET', '/v1/schedules?cursor=' + quote(page['next_cursor'], safe=''), '/v1/schedules')
    client.call('GET', '/v1/schedules?limit=x', '/v1/schedules', expect=400, field='limit')
    client.call('GET', '/v1/schedules/daily-report', '/v1/schedules/{id}')
    client.call('GET', '/v1/schedules/nobody', '/v1/schedules/{id}', expect=404, code='not_found')
    client.call('PATCH', '/v1/schedules/daily-report', '/v1/schedules/{id}', {'cron': '0 8 * * *', 'end_at': None})
    client.call('PATCH', '/v1/schedules/daily-report', '/v1/schedules/{id}', {'id': 'other'}, expect=400, field='id')
    client.refused_by_document('PATCH', '/v1/schedules/{id}', {'id': 'other'})
    client.call('PATCH', '/v1/schedules/nobody', '/v1/schedules/{id}', {'paused': True}, expect=404)
    client.call('GET', '/v1/schedules/daily-report/next?count=3&after=2026-03-27T12:00:00Z', '/v1/schedules/{id}/next')
    client.call('GET', '/v1/schedules/daily-report/next?count=0', '/v1/schedules/{id}/next', expect=400, field='count')
    client.call('GET', '/v1/schedules/daily-report/next?after=soon', '/v1/schedules/{id}/next', expect=400, field='after')
    client.call('GET', '/v1/schedules/nobody/next', '/v1/schedules/{id}/next', expect=404)
    for verb in ('pause', 'resume'):
        client.call('POST', f'/v1/schedules/daily-report/{verb}', f'/v1/schedules/{{id}}/{verb}')
        client.call('POST', f'/v1/schedules/nobody/{verb}', f'/v1/schedules/{{id}}/{verb}', expect=404)
    _, headers = client.call('POST', '/v1/schedules/daily-report/trigger', '/v1/schedules/{id}/trigger', expect=201)
    check(headers['location'].startswith('/v1/tasks/'), f'a trigger Location {headers["location"]}')
    client.call('POST', '/v1/schedules/nobody/trigger', '/v1/schedules/{id}/trigger', expect=404)
    client.call('DELETE', '/v1/schedules/daily-report', '/v1/schedules/{id}')
    client.call('DELETE', '/v1/schedules/daily-report', '/v1/schedules/{id}', expect=404, code='not_found')

    preview = {'cron': '30 2 * * *', 'time_zone': 'Europe/Berlin', 'after': '2026-03-27T12:00:00Z', 'count': 3}
    occurrences, _ = client.call('POST', '/v1/schedules:preview', '/v1/schedules:preview', preview)
    check([o['at'] for o in occurrences['occurrences']][1] == '2026-03-29T01:00:00.000Z', f'a preview: {occurrences}')
    client.call('POST', '/v1/schedules:preview', '/v1/schedules:preview', {'every_ms': 60000})
    bad, _ = client.call('POST', '/v1/schedules:preview', '/v1/schedules:preview', {'cron': '0 25 * * *'},
                         expect=400, field='cron')
    check('position' in bad['error'], f'a bad expression names its position: {bad}')
    client.call('POST', '/v1/schedules:preview', '/v1/schedules:preview', {'cron': '* * * * *', 'count': 0},
                expect=400, field='count')
    client.refused_by_document('POST', '/v1/schedules:preview', {'cron': '* * * * *', 'count': 0})


def queues_answer_as_documented(client, recv):
    spec = {'id': 'acme/billing', 'retry': {'attempts': 3, 'base_ms': 10, 'cap_ms': 50}}
    _, headers = client.call('POST', '/v1/queues', '/v1/queues', spec, expect=201)
    check(headers['location'] == '/v1/queues/acme%2Fbilling', f'Location {headers["location"]}')
    client.call('POST', '/v1/queues', '/v1/queues', spec, expect=200)
    client.call('POST', '/v1/queues', '/v1/queues', {'id': 'acme/billing'}, expect=409, code='queue_conflict',
                field='id')
    for body, field in (({'id': 'Acme'}, 'id'), ({'id': 'a/b/c'}, 'id'), ({}, 'id'),
                        ({'id': 'limited', 'rate_per_s': 5}, 'rate_per_s'),
                        ({'id': 'limited', 'paused': True}, 'paused')):
        client.call('POST', '/v1/queues', '/v1/queues', body, expect=400, code='invalid_field', field=field)
        client.refused_by_document('POST', '/v1/queues', body)
    client.call('POST', '/v1/queues', '/v1/queues', {'id': 'zeta'}, expect=201)
    page, _ = client.call('GET', '/v1/queues?limit=1', '/v1/queues')
    check(page['next_cursor'], f'a first page of one queue: {page}')
    client.call('GET', '/v1/queues?cursor=' + quote(page['next_cursor'], safe=''), '/v1/queues')
    client.call('GET', '/v1/queues?id_prefix=acme%2F', '/v1/queues')
    client.call('GET', '/v1/queues?limit=0', '/v1/queues', expect=400, field='limit')
    client.call('GET', '/v1/queues/acme%2Fbilling', '/v1/queues/{id}')
    client.call('GET', '/v1/queues/default', '/v1/queues/{id}')
    client.call('GET', '/v1/queues/nobody', '/v1/queues/{id}', expect=404, code='not_found')
    client.call('PATCH', '/v1/queues/acme%2Fbilling', '/v1/queues/{id}', {'retry': {'attempts': 9}})
    client.call('PATCH', '/v1/queues/acme%2Fbilling', '/v1/queues/{id}', {'concurrency': 2}, expect=400,
                field='concurrency')
    client.call('PATCH', '/v1/queues/nobody', '/v1/queues/{id}', {'retry': None}, expect=404)

    task = {'id': 'queued-1', 'queue': 'acme/billing', 'delay_ms': 3600000, 'callback': {'url': f'{recv}/ok'}}
    created, _ = client.call('POST', '/v1/tasks', '/v1/tasks', task, expect=201)
    check(created['queue'] == 'acme/billing' and created['retry']['attempts'] == 9, f'a queued task: {created}')
    client.call('POST', '/v1/tasks', '/v1/tasks', {**task, 'id': 'queued-2', 'queue': 'nowhere'}, expect=400,
                code='unknown_queue', field='queue')
    listed, _ = client.call('GET', '/v1/tasks?state=delayed&queue=acme%2Fbilling', '/v1/tasks')
    check([e['id'] for e in listed['entries']] == ['queued-1'], f'a list by queue: {listed}')
    client.call('DELETE', '/v1/queues/acme%2Fbilling', '/v1/queues/{id}', expect=409, code='queue_not_empty')
    client.call('DELETE', '/v1/queues/default', '/v1/queues/{id}', expect=400, field='id')
    client.call('DELETE', '/v1/tasks/queued-1', '/v1/tasks/{id}')
    client.call('DELETE', '/v1/queues/acme%2Fbilling', '/v1/queues/{id}')
    client.call('DELETE', '/v1/queues/acme%2Fbilling', '/v1/queues/{id}', expect=404, code='not_found')


def every_operation_answers_503_once_the_store_is_gone(client, contract, svc):
    """(Redis) The redis-server ended (by its PID): each operation, given the document's own
    example body, answers what the document lists, and 503 with Retry-After where it lists one
    (the probes' and the document's answers need no store; /metrics shows the last values)."""
    redis = svc.procs[0]
    redis.terminate()
    redis.wait(20)
    time.sleep(1.1)  # past the second for which /v1/stats reuses the last counts

    def send(operation):
        method, template, op = operation
        body = None
        if 'requestBody' in op:
            media = inline(contract.doc, op['requestBody'])['content']['application/json']
            body = media['example'] if 'example' in media else next(iter(media['examples'].values()))['value']
        target = template.replace('{id}', 'x') + ('?state=delayed' if (method, template) == ('GET', '/v1/tasks') else '')
        return target, client.send(method, target, body and json.dumps(body).encode(),
                                   {'Content-Type': 'application/json'})

    operations = list(contract.operations())
    # All at once: each waits for --store-timeout-ms.
    with concurrent.futures.ThreadPoolExecutor(len(operations)) as pool:
        answers = list(pool.map(send, operations))
    for (method, template, op), (target, (status, headers, raw)) in zip(operations, answers):
        contract.answer(method, template, status, headers, raw)
        if '503' in op['responses'] and template != '/v1/tasks/{id}/result':
            check(status == 503, f'{method} {target} without its store: {status} {raw[:200]!r}')


def every_operation_of_the_document_was_answered(contract):
    missing = [f'{m} {t}' for m, t, _ in contract.operations() if (m, t) not in contract.answered]
    check(not missing, f'operations of the document the test never reached: {missing}')
    unseen = []
    for method, template, op in contract.operations():
        for status in op['responses']:
            if int(status) not in contract.answered[(method, template)]:
                unseen.append(f'{method} {template} {status}')
    print(f'contract: {sum(len(s) for s in contract.answered.values())} (operation, status) pairs checked; '
          f'documented but not produced here: {", ".join(unseen)}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--timewheeld', required=True)
    ap.add_argument('--store', default='sqlite', choices=['sqlite', 'redis'])
    args = ap.parse_args()
    contract = Contract(load_document())
    try:
        the_routes_of_the_router_are_the_operations_of_the_document(contract)
    except Failed as e:
        print(f'FAILED: {e}', file=sys.stderr)
        return 1

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    recv = f'http://127.0.0.1:{server.server_address[1]}'
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        # On Redis, a shorter store timeout than the 5 s default: the 503s once the store is gone.
        extra = ['--store-timeout-ms', '1000'] if args.store == 'redis' else []
        tokens = os.path.join(tmp, 'tokens')
        with open(tokens, 'w') as f:
            f.write(f'read sha256:{hashlib.sha256(READ_TOKEN.encode()).hexdigest()} contract\n')
        svc = Service(args.timewheeld, args.store, tmp, TOKEN,
                      ['--result-deadline-ms', '60000', '--tokens-file', tokens, *extra])
        try:
            client = Client(svc, contract)
            the_probes_and_the_served_document_are_as_documented(client, contract)
            every_operation_needing_the_token_answers_401_without_it(client, contract)
            every_path_answers_405_for_a_method_it_does_not_take(client, contract)
            every_operation_that_changes_state_refuses_a_foreign_origin(client, contract)
            every_operation_that_changes_state_refuses_a_read_token(client, contract)
            every_operation_taking_a_body_refuses_one_not_json_or_too_large(client, contract)
            every_operation_on_an_id_refuses_a_malformed_one(client, contract)
            submits_reads_changes_and_cancels_answer_as_documented(client, recv)
            tasks_that_ran_dead_letters_results_and_views_answer_as_documented(client, svc, recv)
            schedules_and_their_actions_answer_as_documented(client, recv)
            queues_answer_as_documented(client, recv)
            if args.store == 'redis':
                every_operation_answers_503_once_the_store_is_gone(client, contract, svc)
            every_operation_of_the_document_was_answered(contract)
        except Failed as e:
            print(f'FAILED: {e}', file=sys.stderr)
            with open(os.path.join(tmp, 'timewheeld.log')) as log:
                print(log.read()[-3000:], file=sys.stderr)
            return 1
        finally:
            svc.close()
            server.shutdown()
    print(f'contract: every answer matches docs/openapi.yaml ({time.monotonic() - started:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
