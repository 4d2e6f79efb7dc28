// schedules.js: the durable schedules (GET /v1/schedules, by cursor): each one's rule, its
// next occurrence and its counts, and the actions on it: pause, resume, trigger now.

import { api, query, segment } from './api.js';
import { h, put, relative, time } from './dom.js';
import { describe, say } from './notice.js';

function rule(sc) {
  if (sc.cron !== undefined) {
    return `cron "${sc.cron}" (${sc.time_zone})`;
  }
  return `every ${Number(sc.every_ms) / 1000} s`;
}

export async function schedules(root, ctx) {
  const cursor = ctx.params.get('cursor') ?? '';
  const page = await api('GET', `/v1/schedules${query({ limit: 50, cursor })}`);
  if (!ctx.current()) {
    return;
  }
  const entries = Array.isArray(page.entries) ? page.entries : [];
  const act = (what, f) => async () => {
    try {
      const r = await f();
      say(r && r.id && what.includes('{task}') ? what.replace('{task}', r.id) : what);
    } catch (e) {
      say(`${what.split(':')[0]} failed: ${describe(e)}`, true);
    }
    ctx.reload();
  };
  put(root, h('h1', {}, 'Schedules'),
    entries.length === 0 ? h('p', { className: 'empty' }, 'No schedules.') :
      h('table', { id: 'schedule-table' },
        h('thead', {}, h('tr', {}, ['id', 'rule', 'callback', 'next', 'occurrences', 'state', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, entries.map((sc) => {
          const next = sc.next_occurrence?.at;
          const c = sc.counts ?? {};
          const path = `/v1/schedules/${segment(sc.id)}`;
          return h('tr', { 'data-id': sc.id },
            h('td', { className: 'id' }, sc.id),
            h('td', {}, rule(sc)),
            h('td', { className: 'url' }, sc.callback ? `${sc.callback.method ?? 'POST'} ${sc.callback.url}` : '—'),
            h('td', { title: next ?? '' }, next ? [time(next), h('span', { className: 'rel' }, ` ${relative(next)}`)] : '—'),
            h('td', { className: 'num' }, c.occurrences ?? 0),
            h('td', {}, h('span', { className: `badge ${sc.paused ? 'state-paused' : 'state-active'}` }, sc.paused ? 'paused' : 'active')),
            h('td', { className: 'row-actions' },
              sc.paused
                ? h('button', { type: 'button', className: 'resume', onclick: act(`${sc.id} resumed.`, () => api('POST', `${path}/resume`)) }, 'Resume')
                : h('button', { type: 'button', className: 'pause', onclick: act(`${sc.id} paused.`, () => api('POST', `${path}/pause`)) }, 'Pause'),
              h('button', { type: 'button', className: 'trigger', onclick: act(`${sc.id} triggered: task {task}.`, () => api('POST', `${path}/trigger`)) }, 'Trigger now')));
        }))),
    page.next_cursor ? h('p', { className: 'paging' },
      h('a', { href: `#/schedules${query({ cursor: page.next_cursor })}` }, 'Next page →')) : null);
}
