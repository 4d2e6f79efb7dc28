// The client facing answers no timewheeld gives but a network can: a proxy's HTML page, an
// endless body, JSON of the wrong shape, an error without its code, a 503 with Retry-After, no
// answer at all. Each must be a clear TimewheelError, never a half-read value. A node:http
// server of this test plays the other side; no timewheeld is needed.

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApiError, ResponseError, TimewheelClient, TransportError } from '../src';

describe('the client against hostile answers', () => {
  let server: Server;
  let base: string;
  let reply: (req: IncomingMessage, res: ServerResponse) => void;

  before(async () => {
    server = createServer((req, res) => reply(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));

  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (_: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  async function failure(call: () => Promise<unknown>): Promise<unknown> {
    return call().then(() => assert.fail('expected the call to throw'), (e: unknown) => e);
  }
  const client = (extra = {}) => new TimewheelClient({ baseUrl: base, token: 't', ...extra });

  it('refuses an HTML page answered with 200, quoting its start', async () => {
    reply = (_, res) => { res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>proxy login</html>'); };
    const e = await failure(() => client().stats());
    assert.ok(e instanceof ResponseError, String(e));
    assert.match(e.message, /not JSON.*proxy login/);
  });

  it('refuses JSON that does not parse, and JSON of the wrong shape', async () => {
    reply = (_, res) => { res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"entries": ['); };
    assert.ok((await failure(() => client().list({ state: 'dead' }))) instanceof ResponseError);
    reply = json(200, [1, 2]);
    assert.match(String(await failure(() => client().get('x'))), /not a JSON object/);
    reply = json(200, { entries: {}, next_cursor: null });
    assert.match(String(await failure(() => client().dead())), /entries is not an array/);
    reply = json(200, { results: [] });
    assert.match(String(await failure(() => client().submitBatch([{ delay_ms: 0, callback: { url: 'http://x/' } }]))), /0 results for 1 tasks/);
  });

  it('stops reading past maxResponseBytes, declared or streamed without a length', async () => {
    reply = json(200, { id: 'x', state: 'delayed', due_at: 'y', pad: 'z'.repeat(5000) });
    assert.match(String(await failure(() => client({ maxResponseBytes: 1000 }).get('x'))), /over the limit of 1000/);
    let written = 0;
    reply = (_, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const more = () => { while (written < 50_000_000 && res.write('['.repeat(65536))) written += 65536; };
      res.on('drain', more);
      more();
    };
    const e = await failure(() => client({ maxResponseBytes: 100_000 }).stats());
    assert.ok(e instanceof ResponseError && /over the limit of 100000/.test(e.message), String(e));
    assert.ok(written < 50_000_000, 'the client stopped reading long before the end');
  });

  it('throws ApiError with status, code, field and message, and Retry-After in seconds', async () => {
    reply = json(503, { error: { code: 'store_unavailable', message: 'store did not answer' } }, { 'Retry-After': '7' });
    const e = await failure(() => client().cancel('x'));
    assert.ok(e instanceof ApiError, String(e));
    assert.deepEqual([e.status, e.code, e.field, e.apiMessage, e.retryAfter], [503, 'store_unavailable', undefined, 'store did not answer', 7]);
    reply = json(429, { error: { code: 'overloaded', field: 'tasks', message: 'later' } }, { 'Retry-After': new Date(Date.now() + 60_000).toUTCString() });
    const late = await failure(() => client().stats());
    assert.ok(late instanceof ApiError && late.retryAfter !== undefined && late.retryAfter > 50 && late.retryAfter <= 61, String(late));
    assert.equal(late.field, 'tasks');
  });

  it('refuses an error answer without its code', async () => {
    reply = json(500, { message: 'oops' });
    const e = await failure(() => client().stats());
    assert.ok(e instanceof ResponseError && e.status === 500, String(e));
  });

  it('refuses a redirect instead of following it', async () => {
    reply = (_, res) => { res.writeHead(302, { Location: 'http://example.com/' }).end(); };
    assert.ok((await failure(() => client().stats())) instanceof ResponseError);
  });

  it('gives up after timeoutMs when no answer comes, and when a service is not there', async () => {
    reply = () => undefined; // never answers
    const started = Date.now();
    const e = await failure(() => client({ timeoutMs: 200 }).stats());
    assert.ok(e instanceof TransportError && /within 200 ms/.test(e.message), String(e));
    assert.ok(Date.now() - started < 5000);
    const closed = await failure(() => new TimewheelClient({ baseUrl: 'http://127.0.0.1:1' }).stats());
    assert.ok(closed instanceof TransportError, String(closed));
  });

  it('sends the bearer token, JSON, and ids percent-encoded in the path', async () => {
    let seen: IncomingMessage | undefined;
    let body = '';
    reply = (req, res) => {
      seen = req;
      req.on('data', (c: Buffer) => { body += c.toString(); });
      req.on('end', () => json(200, { id: 'a/b c', state: 'delayed', due_at: 'x' })(req, res));
    };
    await client().reschedule('a/b c', { delay_ms: 5 });
    assert.equal(seen?.method, 'PATCH');
    assert.equal(seen?.url, '/v1/tasks/a%2Fb%20c');
    assert.equal(seen?.headers.authorization, 'Bearer t');
    assert.equal(seen?.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(body), { delay_ms: 5 });
  });
});
