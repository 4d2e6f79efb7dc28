// tasks.js: the task table: GET /v1/tasks with its filters (a state, a range of the
// state's time, an id prefix, a callback host) and paging by cursor. The filters live in
// the URL (#/tasks?state=dead&id_prefix=order-), so a filtered view is a link; the cursors
// of the pages seen are kept to go back. A page may come back short, even empty, with a
// next cursor (the store bounded its scan): "Next" goes on.

import { api, query } from './api.js';
import { badge, h, put, relative, time } from './dom.js';
import { describe } from './notice.js';
import { STATES } from './overview.js';

const ENDED = new Set(['finished', 'dead', 'cancelled']);

// A value of <input type="datetime-local"> (local time) as RFC 3339, and back.
function toIso(local) {
  const t = Date.parse(local);
  return Number.isNaN(t) ? '' : new Date(t).toISOString();
}
function toLocal(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return '';
  }
  const d = new Date(t - new Date(t).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 19);
}

function filters(params) {
  const state = STATES.includes(params.get('state')) ? params.get('state') : 'delayed';
  const key = ENDED.has(state) ? 'ended' : 'due';
  return {
    state,
    key,
    order: params.get('order') ?? '',
    after: params.get(`${key}_after`) ?? '',
    before: params.get(`${key}_before`) ?? '',
    id_prefix: params.get('id_prefix') ?? '',
    host: params.get('host') ?? '',
    limit: params.get('limit') ?? '50',
  };
}

function form(f) {
  const field = (label, input) => h('label', {}, h('span', {}, label), input);
  const el = h('form', { className: 'filters', id: 'task-filters' },
    field('State', h('select', { name: 'state' },
      STATES.map((st) => h('option', { value: st, selected: st === f.state }, st)))),
    field('Order', h('select', { name: 'order' },
      h('option', { value: '', selected: f.order === '' }, 'default'),
      h('option', { value: 'asc', selected: f.order === 'asc' }, 'oldest first'),
      h('option', { value: 'desc', selected: f.order === 'desc' }, 'newest first'))),
    field(`${f.key === 'due' ? 'Due' : 'Ended'} from`, h('input', { type: 'datetime-local', step: 1, name: 'after', value: toLocal(f.after) })),
    field('until', h('input', { type: 'datetime-local', step: 1, name: 'before', value: toLocal(f.before) })),
    field('Id starts with', h('input', { type: 'search', name: 'id_prefix', value: f.id_prefix, id: 'id-prefix', spellcheck: 'false' })),
    field('Callback host', h('input', { type: 'search', name: 'host', value: f.host, placeholder: 'host:port', spellcheck: 'false' })),
    field('Per page', h('select', { name: 'limit' },
      [...new Set(['20', '50', '100', '500', f.limit])].map((n) => h('option', { value: n, selected: n === f.limit }, n)))),
    h('button', { type: 'submit', id: 'search' }, 'Search'));
  el.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const d = new FormData(el);
    const state = String(d.get('state'));
    const key = ENDED.has(state) ? 'ended' : 'due';
    const p = {
      state,
      order: d.get('order'),
      [`${key}_after`]: toIso(String(d.get('after'))),
      [`${key}_before`]: toIso(String(d.get('before'))),
      id_prefix: String(d.get('id_prefix')).trim(),
      host: String(d.get('host')).trim(),
      limit: d.get('limit'),
    };
    location.hash = `#/tasks${query(p)}`;
  });
  return el;
}

function row(e) {
  const ended = ENDED.has(e.state);
  const when = ended ? e.ended_at : e.due_at;
  const cb = e.callback ?? {};
  return h('tr', { 'data-id': e.id },
    h('td', { className: 'id' }, h('a', { href: `#/task/${encodeURIComponent(e.id)}` }, e.id)),
    h('td', {}, badge(e.state)),
    h('td', { title: when ?? '' }, time(when), h('span', { className: 'rel' }, ` ${relative(when)}`)),
    h('td', { className: 'num' }, e.attempt),
    h('td', { className: 'url' }, cb.method ? `${cb.method} ` : '', cb.url ?? '—'),
    h('td', { className: 'error-text' }, e.last_error ?? ''));
}

export async function tasks(root, ctx) {
  const f = filters(ctx.params);
  const body = h('tbody', { id: 'task-rows' });
  const status = h('p', { className: 'paging-status', id: 'task-status' });
  const prev = h('button', { type: 'button', id: 'prev-page', disabled: true }, '← Previous');
  const next = h('button', { type: 'button', id: 'next-page', disabled: true }, 'Next →');
  put(root, 
    h('h1', {}, 'Tasks'),
    form(f),
    h('table', { className: 'tasks', id: 'task-table' },
      h('thead', {}, h('tr', {}, ['id', 'state', f.key === 'due' ? 'due' : 'ended', 'attempt', 'callback', 'last error']
        .map((t) => h('th', {}, t)))),
      body),
    h('div', { className: 'paging' }, prev, status, next));

  const base = {
    state: f.state, order: f.order, [`${f.key}_after`]: f.after, [`${f.key}_before`]: f.before,
    id_prefix: f.id_prefix, host: f.host, limit: f.limit,
  };
  const cursors = ['']; // the cursor of each page seen; the last is the page shown
  let nextCursor = null;
  const load = async () => {
    prev.disabled = next.disabled = true;
    const cursor = cursors[cursors.length - 1];
    const page = await api('GET', `/v1/tasks${query({ ...base, cursor })}`);
    if (!ctx.current()) {
      return;
    }
    const entries = Array.isArray(page.entries) ? page.entries : [];
    body.replaceChildren(...entries.map(row));
    nextCursor = page.next_cursor ?? null;
    status.textContent = `page ${cursors.length}: ${entries.length} task${entries.length === 1 ? '' : 's'}` +
      (nextCursor ? ', more on the next page' : ', the last page');
    if (entries.length === 0) {
      body.append(h('tr', {}, h('td', { colspan: 6, className: 'empty' },
        nextCursor ? 'None on this page: the next may have some.' : 'No task matches.')));
    }
    prev.disabled = cursors.length === 1;
    next.disabled = nextCursor === null;
  };
  const go = (f2) => () => f2().then(load).catch((e) => { status.textContent = describe(e); });
  next.addEventListener('click', go(async () => { cursors.push(nextCursor); }));
  prev.addEventListener('click', go(async () => { cursors.pop(); }));
  await load();
}
