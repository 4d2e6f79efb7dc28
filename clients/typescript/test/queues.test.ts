// The queue calls of the client against a real timewheeld: create (201, then 200 for the same
// settings, 409 queue_conflict for others), read, list, change, a task in the queue (with the
// queue's retry policy, listed by ?queue=), 400 unknown_queue, 409 queue_not_empty, delete.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TimewheelClient, type QueueCreate } from '../src';
import { apiError, Service, skipLive, token } from './support';

describe('the queue calls against a real timewheeld', { skip: skipLive }, () => {
  let service: Service;
  let client: TimewheelClient;
  const spec: QueueCreate = { id: 'acme/billing', retry: { attempts: 3, base_ms: 1000, cap_ms: 60000 } };
  const callback = { url: 'http://127.0.0.1:1/never' };

  before(async () => {
    service = await Service.start();
    client = new TimewheelClient({ baseUrl: service.baseUrl, token });
  });
  after(() => service?.stop());

  it('creates a queue: 201, 200 for the same settings, 409 queue_conflict for others', async () => {
    const created = await client.createQueue(spec);
    assert.deepEqual([created.status, created.queue.id, created.queue.generation], [201, 'acme/billing', 1]);
    assert.equal((await client.createQueue(spec)).status, 200);
    const e = await apiError(client.createQueue({ ...spec, retry: { attempts: 4 } }));
    assert.deepEqual([e.status, e.code], [409, 'queue_conflict']);
  });

  it('reads (the slash of the name encoded), lists and changes it', async () => {
    assert.equal((await client.getQueue('acme/billing')).retry?.attempts, 3);
    const ids = [];
    for await (const q of client.listAllQueues({ limit: 1 })) ids.push(q.id);
    assert.deepEqual(ids, ['acme/billing', 'default']);
    assert.deepEqual((await client.listQueues({ id_prefix: 'acme/' })).entries.map((q) => q.id), ['acme/billing']);
    const changed = await client.updateQueue('acme/billing', { retry: { attempts: 5 } });
    assert.deepEqual([changed.generation, changed.retry?.attempts], [2, 5]);
  });

  it('takes a task in the queue, with its policy, and lists it by queue', async () => {
    const { task } = await client.submit({ id: 'q-1', delay_ms: 3_600_000, callback, queue: 'acme/billing' });
    assert.deepEqual([task.queue, task.retry.attempts], ['acme/billing', 5]);
    const page = await client.list({ state: 'delayed', queue: 'acme/billing' });
    assert.deepEqual(page.entries.map((t) => t.id), ['q-1']);
    const e = await apiError(client.submit({ delay_ms: 1, callback, queue: 'nope' }));
    assert.deepEqual([e.status, e.code, e.field], [400, 'unknown_queue', 'queue']);
  });

  it('refuses to delete a queue that holds a task (409 queue_not_empty), then deletes it (then 404)', async () => {
    const e = await apiError(client.deleteQueue('acme/billing'));
    assert.deepEqual([e.status, e.code], [409, 'queue_not_empty']);
    await client.cancel('q-1');
    assert.deepEqual(await client.deleteQueue('acme/billing'), { id: 'acme/billing', deleted: true });
    const gone = await apiError(client.getQueue('acme/billing'));
    assert.deepEqual([gone.status, gone.code], [404, 'not_found']);
  });
});
