// Each call of the client against a real timewheeld, its answer checked, and the API's errors
// (400 with its field, 404, 409) arriving as ApiError with their code. The receiver of
// support.ts plays the callbacks' destination, so dead letters and result reports are real.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, TimewheelClient } from '../src';
import { Receiver, Service, skipLive, token, waitFor } from './support';

describe('the client against a real timewheeld', { skip: skipLive }, () => {
  let service: Service;
  let receiver: Receiver;
  let client: TimewheelClient;
  const later = { delay_ms: 3_600_000 };

  before(async () => {
    service = await Service.start();
    receiver = await Receiver.start();
    client = new TimewheelClient({ baseUrl: service.baseUrl, token, timeoutMs: 10_000 });
  });
  after(async () => {
    await receiver?.stop();
    await service?.stop();
  });

  async function rejectsWith(call: Promise<unknown>, status: number, code: string, field?: string): Promise<ApiError> {
    const error = await call.then(() => assert.fail(`expected ${status} ${code}, got an answer`), (e: unknown) => e);
    assert.ok(error instanceof ApiError, `expected an ApiError, got ${String(error)}`);
    assert.equal(error.status, status);
    assert.equal(error.code, code);
    assert.equal(error.field, field);
    return error;
  }

  it('submits a task: 201 the first time, 200 with replaced false the second, replaced with on_conflict replace', async () => {
    const task = { id: 'submit-1', ...later, callback: { url: `${receiver.base}/a`, body: '{"n": 1}' } };
    const created = await client.submit(task);
    assert.equal(created.status, 201);
    assert.equal(created.task.id, 'submit-1');
    assert.equal(created.task.state, 'delayed');
    assert.equal(created.task.callback?.body, '{"n": 1}');
    const kept = await client.submit(task);
    assert.deepEqual([kept.status, kept.task.replaced], [200, false]);
    const replaced = await client.submit({ ...task, callback: { url: `${receiver.base}/b` }, on_conflict: 'replace' });
    assert.deepEqual([replaced.status, replaced.task.replaced, replaced.task.callback?.url], [200, true, `${receiver.base}/b`]);
  });

  it('gets a task, and a 404 not_found for an unknown id (an id with a slash is encoded)', async () => {
    await client.submit({ id: 'get/1', ...later, callback: { url: `${receiver.base}/a` } });
    const task = await client.get('get/1');
    assert.equal(task.id, 'get/1');
    assert.deepEqual(task.log, []);
    await rejectsWith(client.get('no-such-task'), 404, 'not_found');
  });

  it('refuses a bad callback URL with a 400 naming callback.url, and stores nothing', async () => {
    await rejectsWith(client.submit({ id: 'bad-url', ...later, callback: { url: 'ftp://example.com/x' } }), 400, 'invalid_field', 'callback.url');
    await rejectsWith(client.get('bad-url'), 404, 'not_found');
  });

  it('answers 409 conflict with the state when a replace finds a cancelled task', async () => {
    await client.submit({ id: 'conflict-1', ...later, callback: { url: `${receiver.base}/a` } });
    await client.cancel('conflict-1');
    const e = await rejectsWith(client.submit({ id: 'conflict-1', ...later, callback: { url: `${receiver.base}/a` }, on_conflict: 'replace' }), 409, 'conflict');
    assert.equal(e.state, 'cancelled');
  });

  it('cancels a task, then answers 409 too_late for a second cancel', async () => {
    await client.submit({ id: 'cancel-1', ...later, callback: { url: `${receiver.base}/a` } });
    assert.deepEqual(await client.cancel('cancel-1'), { id: 'cancel-1', state: 'cancelled' });
    await rejectsWith(client.cancel('cancel-1'), 409, 'too_late');
  });

  it('reschedules a task to a due_at, and refuses a cancelled one with 409 wrong_state', async () => {
    await client.submit({ id: 'move-1', ...later, callback: { url: `${receiver.base}/a` } });
    const moved = await client.reschedule('move-1', { due_at: '2099-01-02T03:04:05+01:00' });
    assert.equal(moved.due_at, '2099-01-02T02:04:05.000Z');
    await client.cancel('move-1');
    await rejectsWith(client.reschedule('move-1', { delay_ms: 1000 }), 409, 'wrong_state');
  });

  it('submits a batch: each item has its own result, in order, a bad one naming its field and index', async () => {
    const results = await client.submitBatch([
      { id: 'batch-1', ...later, callback: { url: `${receiver.base}/a` } },
      { id: 'batch-2', ...later, callback: { url: 'ftp://example.com/b' } },
    ]);
    assert.equal(results.length, 2);
    assert.equal(results[0].status, 201);
    assert.ok('task' in results[0] && results[0].task.id === 'batch-1');
    const bad = results[1];
    assert.ok('error' in bad);
    assert.deepEqual([bad.status, bad.error.code, bad.error.field, bad.error.index], [400, 'invalid_field', 'callback.url', 1]);
  });

  it('lists tasks a page at a time with filters, and iterates over every page', async () => {
    for (const n of [1, 2, 3, 4, 5]) {
      await client.submit({ id: `list-${n}`, delay_ms: 3_600_000 + n * 1000, callback: { url: `${receiver.base}/a` } });
    }
    const first = await client.list({ state: 'delayed', id_prefix: 'list-', limit: 2 });
    assert.deepEqual(first.entries.map((e) => e.id), ['list-1', 'list-2']);
    assert.equal(typeof first.next_cursor, 'string');
    const all = [];
    for await (const entry of client.listAll({ state: 'delayed', id_prefix: 'list-', limit: 2 })) all.push(entry.id);
    assert.deepEqual(all, ['list-1', 'list-2', 'list-3', 'list-4', 'list-5']);
    const desc = await client.list({ state: 'delayed', id_prefix: 'list-', order: 'desc', limit: 1000 });
    assert.deepEqual(desc.entries.map((e) => e.id), ['list-5', 'list-4', 'list-3', 'list-2', 'list-1']);
    assert.equal(desc.next_cursor, null);
    await rejectsWith(client.list({ state: 'delayed', cursor: 'not-a-cursor' }), 400, 'invalid_field', 'cursor');
  });

  it('lists, retries and deletes a dead letter', async () => {
    receiver.answer = (r) => (r.path === '/dies' ? 400 : 200);
    await client.submit({ id: 'dead-1', delay_ms: 0, retry: { attempts: 1 }, callback: { url: `${receiver.base}/dies` } });
    await waitFor('dead-1 to die', async () => ((await client.get('dead-1')).state === 'dead' ? true : undefined));
    const page = await client.dead({ limit: 1000 });
    const entry = page.entries.find((e) => e.id === 'dead-1');
    assert.equal(entry?.attempts, 1, 'dead-1 is listed, after its one attempt');
    const seen = [];
    for await (const e of client.deadAll({ limit: 1 })) seen.push(e.id);
    assert.ok(seen.includes('dead-1'));
    const retried = await client.retryDead('dead-1', { delay_ms: 3_600_000 });
    assert.deepEqual([retried.id, retried.state, retried.attempts], ['dead-1', 'delayed', 0]);
    await client.cancel('dead-1');
    await client.submit({ id: 'dead-2', delay_ms: 0, retry: { attempts: 1 }, callback: { url: `${receiver.base}/dies` } });
    await waitFor('dead-2 to die', async () => ((await client.get('dead-2')).state === 'dead' ? true : undefined));
    assert.deepEqual(await client.deleteDead('dead-2'), { id: 'dead-2', deleted: true });
    await rejectsWith(client.deleteDead('dead-2'), 404, 'not_found');
  });

  it('reports the result a 202 promised: accepted once, then 404 no_pending_attempt', async () => {
    receiver.answer = (r) => (r.path === '/later' ? 202 : 200);
    await client.submit({ id: 'result-1', delay_ms: 0, callback: { url: `${receiver.base}/later` } });
    const [call] = await receiver.waitFor('/later');
    const attempt = Number(call.headers['timewheel-attempt']);
    await waitFor('result-1 to wait for its result', async () => ((await client.get('result-1')).state === 'running' ? true : undefined));
    const answer = await client.reportResult('result-1', { attempt, outcome: 'success' });
    assert.deepEqual(answer, { id: 'result-1', attempt, accepted: true });
    await waitFor('result-1 to finish', async () => ((await client.get('result-1')).state === 'finished' ? true : undefined));
    await rejectsWith(client.reportResult('result-1', { attempt, outcome: 'success' }), 404, 'no_pending_attempt');
  });

  it('reads the stats, counting the tasks of each state', async () => {
    const stats = await client.stats();
    assert.ok(stats.counts.delayed >= 5, `delayed: ${stats.counts.delayed}`);
    assert.ok(stats.counts.cancelled >= 1);
    assert.ok(Array.isArray(stats.hosts));
    assert.equal(typeof stats.node.window_s, 'number');
  });

  it('sends the token: without it every call is a 401', async () => {
    const anonymous = new TimewheelClient({ baseUrl: service.baseUrl });
    const e = await anonymous.stats().then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof ApiError && e.status === 401, String(e));
  });
});
