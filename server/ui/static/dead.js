// dead.js: the dead letters (GET /v1/dead, newest first, by cursor), each with the two
// things an operator does with one: retry it now, or delete it.

import { api, query, segment } from './api.js';
import { confirmButton, h, put, relative, time } from './dom.js';
import { action } from './notice.js';

export async function dead(root, ctx) {
  const cursor = ctx.params.get('cursor') ?? '';
  const page = await api('GET', `/v1/dead${query({ limit: 50, cursor })}`);
  if (!ctx.current()) {
    return;
  }
  const entries = Array.isArray(page.entries) ? page.entries : [];
  const act = (what, f) => action(ctx, what, f);
  put(root, h('h1', {}, 'Dead letters'),
    entries.length === 0 ? h('p', { className: 'empty' }, 'No dead letters.') :
      h('table', { id: 'dead-table' },
        h('thead', {}, h('tr', {}, ['id', 'died', 'attempts', 'last error', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, entries.map((e) => h('tr', { 'data-id': e.id },
          h('td', { className: 'id' }, h('a', { href: `#/task/${encodeURIComponent(e.id)}` }, e.id)),
          h('td', { title: e.died_at }, time(e.died_at), h('span', { className: 'rel' }, ` ${relative(e.died_at)}`)),
          h('td', { className: 'num' }, e.attempts),
          h('td', { className: 'error-text' }, e.last_error ?? '—'),
          h('td', { className: 'row-actions' },
            h('button', { type: 'button', className: 'retry', onclick: act(`${e.id} queued again, due now.`,
              () => api('POST', `/v1/dead/${segment(e.id)}/retry`, {})) }, 'Retry'),
            confirmButton('Delete', 'Really?', act(`${e.id} deleted.`,
              () => api('DELETE', `/v1/dead/${segment(e.id)}`)), { className: 'danger' })))))),
    page.next_cursor ? h('p', { className: 'paging' },
      h('a', { href: `#/dead${query({ cursor: page.next_cursor })}` }, 'Next page →')) : null);
}
