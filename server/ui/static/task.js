// task.js: one task, from GET /v1/tasks/{id}: its state and times, its callback (header
// names shown, every value hidden: a header is where credentials travel, and the page may
// be on a shared screen), the execution log as a timeline of attempts with what each got
// back, and the actions its state allows: cancel or reschedule a task that waits, retry or
// delete a dead letter.

import { api, segment } from './api.js';
import { badge, confirmButton, duration, h, put, relative, time } from './dom.js';
import { action, describe, say, sayNext } from './notice.js';

const HIDDEN = '•••';

function headerList(title, headers) {
  const names = headers && typeof headers === 'object' ? Object.keys(headers) : [];
  if (names.length === 0) {
    return null;
  }
  return [h('dt', {}, title), h('dd', {}, h('ul', { className: 'headers' },
    names.map((n) => h('li', {}, h('code', {}, n), ': ', h('span', { className: 'hidden-value' }, HIDDEN)))))];
}

function callback(t) {
  if (t.callback === null || t.callback === undefined) {
    return h('section', { className: 'panel', id: 'callback' }, h('h2', {}, 'Callback'),
      h('p', { className: 'empty' }, t.payload !== undefined
        ? 'An opaque payload (not submitted through the API).'
        : 'The store no longer keeps it (a finished or cancelled task).'));
  }
  const cb = t.callback;
  return h('section', { className: 'panel', id: 'callback' }, h('h2', {}, 'Callback'),
    h('dl', {},
      h('dt', {}, 'Request'), h('dd', {}, h('code', {}, `${cb.method ?? 'POST'} ${cb.url ?? ''}`)),
      headerList('Headers', cb.headers),
      headerList('Secret headers', cb.secret_headers),
      cb.timeout_ms !== undefined ? [h('dt', {}, 'Timeout'), h('dd', {}, duration(cb.timeout_ms))] : null,
      cb.body !== undefined ? [h('dt', {}, 'Body'), h('dd', {}, h('details', {},
        h('summary', {}, `${String(cb.body).length} characters`), h('pre', {}, String(cb.body))))] : null));
}

function summary(t) {
  const r = t.retry ?? {};
  return h('section', { className: 'panel', id: 'summary' },
    h('dl', {},
      h('dt', {}, 'State'), h('dd', { id: 'task-state' }, badge(t.state)),
      h('dt', {}, 'Due'), h('dd', {}, time(t.due_at), h('span', { className: 'rel' }, ` ${relative(t.due_at)}`)),
      h('dt', {}, 'Attempts'), h('dd', {}, `${t.attempts} of ${r.attempts ?? '?'} (backoff ${duration(r.base_ms)} to ${duration(r.cap_ms)})`),
      h('dt', {}, 'Created'), h('dd', {}, time(t.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, time(t.updated_at)),
      h('dt', {}, 'Last error'), h('dd', { className: 'error-text' }, t.last_error ?? '—')));
}

// The attempts, oldest first, each with its worker, its span and what the callback
// answered (the outcome and the error text the store kept).
function timeline(t) {
  const log = Array.isArray(t.log) ? t.log : [];
  return h('section', { className: 'panel wide', id: 'log' }, h('h2', {}, 'Execution log'),
    log.length === 0 ? h('p', { className: 'empty' }, 'No attempt yet.') :
      h('ol', { className: 'timeline' }, log.map((a) => {
        const took = Date.parse(a.ended_at) - Date.parse(a.started_at);
        return h('li', { className: `outcome-${String(a.outcome).replace(/[^a-z_]/g, '')}` },
          h('div', { className: 'when' }, time(a.started_at)),
          h('div', { className: 'what' },
            h('strong', {}, `Attempt ${a.attempt}: ${a.outcome}`),
            ` after ${duration(took)} on ${a.worker}`,
            a.error ? h('div', { className: 'error-text' }, a.error) : null));
      })));
}

function actions(t, ctx) {
  const id = t.id;
  const run = (what, f) => action(ctx, what, f);
  const buttons = [];
  if (t.state === 'delayed' || t.state === 'prefetched') {
    buttons.push(confirmButton('Cancel task', 'Really cancel?',
      run('Task cancelled.', () => api('DELETE', `/v1/tasks/${segment(id)}`)), { id: 'cancel-task' }));
    const when = h('input', { type: 'number', min: 0, step: 1, value: 60, id: 'reschedule-seconds', 'aria-label': 'seconds from now' });
    const form = h('form', { className: 'inline', id: 'reschedule' },
      h('label', {}, 'Due in ', when, ' s'),
      h('button', { type: 'submit' }, 'Reschedule'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const s = Number(when.value);
      run(`Task rescheduled to ${s} s from now.`,
        () => api('PATCH', `/v1/tasks/${segment(id)}`, { delay_ms: Math.round(s * 1000) }))();
    });
    buttons.push(form);
  }
  if (t.state === 'dead') {
    buttons.push(h('button', { type: 'button', id: 'retry-dead', onclick: run('Dead letter queued again, due now.',
      () => api('POST', `/v1/dead/${segment(id)}/retry`, {})) }, 'Retry now'));
    // Gone once deleted: back to the list of dead letters.
    buttons.push(confirmButton('Delete dead letter', 'Really delete?', async () => {
      try {
        await api('DELETE', `/v1/dead/${segment(id)}`);
        sayNext(`Dead letter ${id} deleted.`);
        location.hash = '#/dead';
      } catch (e) {
        say(`Delete failed: ${describe(e)}`, true);
        ctx.reload();
      }
    }, { id: 'delete-dead', className: 'danger' }));
  }
  return buttons.length ? h('div', { className: 'actions', id: 'actions' }, buttons) : null;
}

export async function task(root, ctx) {
  const t = await api('GET', `/v1/tasks/${segment(ctx.arg)}`);
  if (!ctx.current()) {
    return;
  }
  put(root, 
    h('p', { className: 'crumbs' }, h('a', { href: `#/tasks?state=${encodeURIComponent(t.state)}` }, `← ${t.state} tasks`)),
    h('h1', {}, 'Task ', h('code', { id: 'task-id' }, t.id)),
    actions(t, ctx),
    h('div', { className: 'panels' }, summary(t), callback(t), timeline(t)));
}
