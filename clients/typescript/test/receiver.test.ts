// The receiver helper against signatures made by a real timewheeld (`--signing-secret
// new,old`): the genuine request is accepted, with either secret (the rotation case), and any
// change to what the signature covers (body, secret, time, attempt, URL, method) is refused.
// The README's example handler (example/receiver.ts) is run as a real receiver too.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { callbackHandler } from '../example/receiver';
import { SignatureError, TimewheelClient, verifySignature, type SignedRequest, type VerifyOptions, type Verified } from '../src';
import { Receiver, Service, skipLive, token, waitFor, type Received } from './support';

function refusedFor(request: SignedRequest, options: VerifyOptions): string {
  try {
    verifySignature(request, options);
  } catch (e) {
    assert.ok(e instanceof SignatureError, String(e));
    return e.reason;
  }
  return 'accepted';
}

describe('the signature of the documentation (docs/server.md, "The signature")', () => {
  const mac = '801b3dee032e4b9d32d9658eb4bae0770e98bcaf15062276e93b1bcbff01609f';
  const documented: SignedRequest = {
    method: 'POST', url: 'https://hooks.example.com/orders', body: '{"order": 42}',
    headers: { 'timewheel-signature': `t=1700000000,v2=${mac}`, 'idempotency-key': 'order-42', 'timewheel-attempt': '1' },
  };
  const at = (seconds: number) => () => seconds * 1000;

  it('is accepted with its secret, at its time and within the tolerance either way', () => {
    for (const now of [1700000000, 1700000300, 1699999700]) {
      assert.equal(verifySignature(documented, { secrets: 'shared-secret', now: at(now) }).taskId, 'order-42');
    }
  });

  it('is accepted among other entries: a v2 of another secret before it, a v1 after it', () => {
    const crowded = `t=1700000000,v2=${'0'.repeat(64)},v2=${mac},v1=${'1'.repeat(64)}`;
    const headers = { ...documented.headers, 'timewheel-signature': crowded };
    assert.equal(verifySignature({ ...documented, headers }, { secrets: 'shared-secret', now: at(1700000000) }).taskId, 'order-42');
  });

  it('is refused past the tolerance, or with a tolerance made smaller', () => {
    assert.equal(refusedFor(documented, { secrets: 'shared-secret', now: at(1700000301) }), 'stale_timestamp');
    assert.equal(refusedFor(documented, { secrets: 'shared-secret', now: at(1700000011), toleranceSeconds: 10 }), 'stale_timestamp');
  });

  it('is refused without its headers, or with a header that is not the documented form', () => {
    const options = { secrets: 'shared-secret', now: at(1700000000) };
    assert.equal(refusedFor({ ...documented, headers: { 'idempotency-key': 'order-42', 'timewheel-attempt': '1' } }, options), 'missing_header');
    assert.equal(refusedFor({ ...documented, headers: { ...documented.headers, 'timewheel-signature': 'v2=00' } }, options), 'malformed_header');
    assert.equal(refusedFor({ ...documented, headers: { ...documented.headers, 'timewheel-attempt': ['1', '1'] } }, options), 'missing_header');
  });
});

describe('the receiver helper against a real timewheeld signing with new,old', { skip: skipLive }, () => {
  let service: Service;
  let receiver: Receiver;
  let client: TimewheelClient;
  let signed: Received;
  let url: string;
  let options: VerifyOptions;
  const body = '{"order": 42,\n  "note": "caf\u00e9"}';

  before(async () => {
    service = await Service.start(['--signing-secret', 'new-secret,old-secret']);
    receiver = await Receiver.start();
    client = new TimewheelClient({ baseUrl: service.baseUrl, token });
    // A URL whose text differs from what the receiver sees in its request line.
    url = `${receiver.base}/signed?from=timewheel`;
    await client.submit({ id: 'signed-1', delay_ms: 0, callback: { url, body, headers: { 'Content-Type': 'application/json' } } });
    [signed] = await receiver.waitFor('/signed?from=timewheel');
    const t = Number(/t=(\d+)/.exec(String(signed.headers['timewheel-signature']))![1]);
    options = { secrets: ['new-secret'], now: () => t * 1000 };
  });
  after(async () => {
    await receiver?.stop();
    await service?.stop();
  });

  const request = (): SignedRequest => ({ method: signed.method, url, headers: signed.headers, body: signed.body });

  it('accepts the request the service signed, with the new secret, and says which task and attempt', () => {
    assert.match(String(signed.headers['timewheel-signature']), /^t=\d+,v2=[0-9a-f]{64},v2=[0-9a-f]{64}$/);
    const verified = verifySignature(request(), options);
    assert.deepEqual([verified.taskId, verified.attempt, verified.secretIndex], ['signed-1', 1, 0]);
  });

  it('accepts it with only the old secret configured (a receiver not yet rotated)', () => {
    assert.equal(verifySignature(request(), { ...options, secrets: ['old-secret'] }).secretIndex, 0);
    assert.equal(verifySignature(request(), { ...options, secrets: ['unknown', 'old-secret'] }).secretIndex, 1);
  });

  it('accepts it with the headers as a WHATWG Headers object and the body as a string', () => {
    const headers = new Headers(Object.entries(signed.headers).map(([k, v]): [string, string] => [k, String(v)]));
    assert.equal(verifySignature({ ...request(), headers, body: signed.body.toString('utf8') }, options).taskId, 'signed-1');
  });

  it('refuses a tampered body, even one only re-serialized by a JSON parser', () => {
    const tampered = Buffer.from(signed.body);
    tampered[tampered.length - 2] ^= 1;
    assert.equal(refusedFor({ ...request(), body: tampered }, options), 'no_match');
    assert.equal(refusedFor({ ...request(), body: JSON.stringify(JSON.parse(signed.body.toString('utf8'))) }, options), 'no_match');
  });

  it('refuses a wrong secret', () => {
    assert.equal(refusedFor(request(), { ...options, secrets: ['new-secreT'] }), 'no_match');
  });

  it('refuses an old t: the same request replayed past the tolerance', () => {
    const replayedAt = options.now!() + 301_000;
    assert.equal(refusedFor(request(), { ...options, now: () => replayedAt }), 'stale_timestamp');
  });

  it('refuses another attempt number, another task id, another URL or another method', () => {
    assert.equal(refusedFor({ ...request(), headers: { ...signed.headers, 'timewheel-attempt': '2' } }, options), 'no_match');
    assert.equal(refusedFor({ ...request(), headers: { ...signed.headers, 'idempotency-key': 'signed-2' } }, options), 'no_match');
    assert.equal(refusedFor({ ...request(), url: `${receiver.base}/signed` }, options), 'no_match');
    assert.equal(refusedFor({ ...request(), method: 'PUT' }, options), 'no_match');
  });

  it('verifies a completion notice, keyed <task id>~notice, against its on_success URL', async () => {
    const noticeUrl = `${receiver.base}/notice`;
    await client.submit({ id: 'noticed-1', delay_ms: 0, callback: { url: `${receiver.base}/plain`, on_success: { url: noticeUrl } } });
    const [notice] = await receiver.waitFor('/notice');
    const verified = verifySignature({ method: 'POST', url: noticeUrl, headers: notice.headers, body: notice.body }, { secrets: ['old-secret'] });
    assert.equal(verified.taskId, 'noticed-1~notice');
    assert.equal((JSON.parse(notice.body.toString('utf8')) as { state: string }).state, 'finished');
  });

  describe('the example handler (example/receiver.ts) as the receiver', () => {
    let server: Server;
    let base: string;
    const seen: [Verified, unknown][] = [];
    let publicUrl: string;

    before(async () => {
      server = createServer((req, res) => {
        const secrets = req.url === '/rotated' ? ['old-secret'] : req.url === '/wrong' ? ['not-the-secret'] : ['new-secret', 'old-secret'];
        void callbackHandler(`${base}${req.url}`, secrets, (v, b) => { seen.push([v, b]); })(req, res);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      publicUrl = `${base}/hook`;
    });
    after(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));

    it('takes a real callback, with either secret, and hands over the parsed body', async () => {
      await client.submit({ id: 'example-1', delay_ms: 0, callback: { url: publicUrl, body: '{"invoice": 42}' } });
      await client.submit({ id: 'example-2', delay_ms: 0, callback: { url: `${base}/rotated`, body: '{"invoice": 43}' } });
      await waitFor('both callbacks to be taken', () => (seen.length >= 2 ? true : undefined));
      const byId = new Map(seen.map(([v, b]) => [v.taskId, b]));
      assert.deepEqual(byId.get('example-1'), { invoice: 42 });
      assert.deepEqual(byId.get('example-2'), { invoice: 43 });
      await waitFor('example-1 to finish', async () => ((await client.get('example-1')).state === 'finished' ? true : undefined));
    });

    it('answers 401 to a callback it cannot verify, which the service then counts as failed', async () => {
      await client.submit({ id: 'example-3', delay_ms: 0, retry: { attempts: 1 }, callback: { url: `${base}/wrong`, body: '{}' } });
      const task = await waitFor('example-3 to die', async () => {
        const t = await client.get('example-3');
        return t.state === 'dead' ? t : undefined;
      });
      assert.match(task.last_error ?? '', /401/);
      assert.ok(!seen.some(([v]) => v.taskId === 'example-3'), 'the handler never ran for it');
    });
  });
});
