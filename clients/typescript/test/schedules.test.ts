// The schedule calls of the client against a real timewheeld: create (201, then 200 for the
// same spec, 409 schedule_conflict for another), read, list, change, pause, resume, trigger,
// next occurrences, preview (and its 400 naming cron with a position), delete.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TimewheelClient, type ScheduleCreate } from '../src';
import { apiError, Service, skipLive, token } from './support';

describe('the schedule calls against a real timewheeld', { skip: skipLive }, () => {
  let service: Service;
  let client: TimewheelClient;
  const spec: ScheduleCreate = {
    id: 'report', cron: '30 2 * * *', time_zone: 'Europe/Berlin', paused: true,
    callback: { url: 'http://127.0.0.1:1/never' },
  };

  before(async () => {
    service = await Service.start();
    client = new TimewheelClient({ baseUrl: service.baseUrl, token });
  });
  after(() => service?.stop());

  it('creates a schedule: 201, 200 for the same spec, 409 schedule_conflict for another', async () => {
    const created = await client.createSchedule(spec);
    assert.deepEqual([created.status, created.schedule.id, created.schedule.paused], [201, 'report', true]);
    assert.equal((await client.createSchedule(spec)).status, 200);
    const e = await apiError(client.createSchedule({ ...spec, cron: '0 3 * * *' }));
    assert.deepEqual([e.status, e.code], [409, 'schedule_conflict']);
  });

  it('reads, lists, changes, resumes and pauses it', async () => {
    assert.equal((await client.getSchedule('report')).cron, '30 2 * * *');
    const ids = [];
    for await (const s of client.listAllSchedules({ limit: 1 })) ids.push(s.id);
    assert.deepEqual(ids, ['report']);
    assert.equal((await client.updateSchedule('report', { cron: '0 4 * * *' })).cron, '0 4 * * *');
    assert.equal((await client.resumeSchedule('report')).paused, false);
    assert.equal((await client.pauseSchedule('report')).paused, true);
  });

  it('gives the next occurrences on the wall clock of its zone, across a DST change', async () => {
    await client.updateSchedule('report', { cron: '30 2 * * *' });
    const next = await client.nextOccurrences('report', { count: 3, after: '2026-03-27T12:00:00Z' });
    assert.equal(next.time_zone, 'Europe/Berlin');
    assert.deepEqual(next.occurrences.map((o) => o.at), ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
  });

  it('previews an unsaved rule, and refuses a bad one with a 400 naming cron and the position', async () => {
    const preview = await client.previewSchedule({ every_ms: 60_000, after: '2026-01-01T00:00:00Z', count: 2 });
    assert.equal(preview.occurrences.length, 2);
    const e = await apiError(client.previewSchedule({ cron: '0 25 * * *' }));
    assert.deepEqual([e.status, e.code, e.field, e.position], [400, 'invalid_field', 'cron', 2]);
  });

  it('triggers one task now, and deletes the schedule (then 404)', async () => {
    const task = await client.triggerSchedule('report');
    assert.equal(task.id, '{report}@trigger-1');
    assert.deepEqual(await client.deleteSchedule('report'), { id: 'report', deleted: true });
    const e = await apiError(client.getSchedule('report'));
    assert.deepEqual([e.status, e.code], [404, 'not_found']);
  });
});
