// overview.js: what an operator looks at first: how many tasks are in each state, how late
// callbacks fire (a histogram), how many fired, succeeded and failed over the last minutes
// (a chart), and the destination hosts that fail most. All from one GET /v1/stats, again
// every five seconds while the page is shown. "node" and "hosts" are the view of the node
// that answered, over its last window: the page says so.

import { api } from './api.js';
import { duration, h, s } from './dom.js';

export const STATES = ['delayed', 'prefetched', 'running', 'finished', 'dead', 'cancelled'];

function counts(stats) {
  const c = stats.counts ?? {};
  return h('section', { className: 'cards', id: 'counts' },
    STATES.map((st) => h('a', { className: `card state-${st}`, href: `#/tasks?state=${st}`, id: `count-${st}` },
      h('span', { className: 'number' }, Number(c[st] ?? 0).toLocaleString('en')),
      h('span', { className: 'label' }, st))),
    h('div', { className: 'card plain', id: 'due-now' },
      h('span', { className: 'number' }, Number(stats.due_now ?? 0).toLocaleString('en')),
      h('span', { className: 'label' }, 'due now, waiting')),
    h('div', { className: 'card plain', id: 'oldest-due' },
      h('span', { className: 'number' },
        stats.oldest_due_age_ms === null || stats.oldest_due_age_ms === undefined
          ? '—' : duration(stats.oldest_due_age_ms)),
      h('span', { className: 'label' }, 'oldest due task waits')));
}

// A bucket's upper bound, short: "5ms", "2.5s", "5min", "∞".
function bound(ms) {
  if (ms === null || ms === undefined) {
    return '∞';
  }
  const n = Number(ms);
  return n < 1000 ? `${n}ms` : n < 60000 ? `${n / 1000}s` : `${n / 60000}min`;
}

// A bar chart of the lateness histogram: one bar per bucket, labelled with its upper bound.
function histogram(node) {
  const buckets = Array.isArray(node.lateness_histogram) ? node.lateness_histogram : [];
  const l = node.lateness_ms ?? {};
  const W = 560, H = 180, pad = 28;
  const max = Math.max(1, ...buckets.map((b) => Number(b.count) || 0));
  const bw = buckets.length ? (W - 2 * pad) / buckets.length : 0;
  const every = Math.ceil(buckets.length / 12); // labels that fit side by side
  const chart = s('svg', { viewBox: `0 0 ${W} ${H}`, className: 'chart', role: 'img',
                           'aria-label': 'lateness histogram' },
    s('line', { x1: pad, y1: H - pad, x2: W - pad, y2: H - pad, className: 'axis' }),
    buckets.map((b, i) => {
      const n = Number(b.count) || 0;
      const bh = ((H - 2 * pad) * n) / max;
      const x = pad + i * bw;
      const label = bound(b.le_ms);
      return s('g', {},
        s('rect', { x: x + 2, y: H - pad - bh, width: Math.max(1, bw - 4), height: bh, className: 'bar' },
          s('title', {}, `≤ ${label}: ${n}`)),
        i % every === 0 || b.le_ms === null ? s('text', { x: x + bw / 2, y: H - pad + 14, className: 'tick' }, label) : null,
        n ? s('text', { x: x + bw / 2, y: H - pad - bh - 4, className: 'tick' }, n) : null);
    }));
  return h('section', { className: 'panel', id: 'lateness' },
    h('h2', {}, 'Lateness of callbacks (how long after due they fired)'),
    h('p', { className: 'figures' },
      `p50 ${duration(l.p50)} · p90 ${duration(l.p90)} · p99 ${duration(l.p99)} · max ${duration(l.max)} · ${Number(l.count ?? 0)} callbacks`),
    buckets.length ? chart : h('p', { className: 'empty' }, 'No callbacks yet.'));
}

// Fired, succeeded and failed per bucket of the window, as three lines.
function throughput(node) {
  const pts = Array.isArray(node.throughput) ? node.throughput : [];
  const W = 560, H = 180, pad = 28;
  const series = [['fired', 'line-fired'], ['succeeded', 'line-ok'], ['failed', 'line-failed']];
  const max = Math.max(1, ...pts.flatMap((p) => series.map(([k]) => Number(p[k]) || 0)));
  const x = (i) => pad + (pts.length > 1 ? (i * (W - 2 * pad)) / (pts.length - 1) : 0);
  const y = (v) => H - pad - ((H - 2 * pad) * (Number(v) || 0)) / max;
  const chart = s('svg', { viewBox: `0 0 ${W} ${H}`, className: 'chart', role: 'img',
                           'aria-label': 'throughput over time' },
    s('line', { x1: pad, y1: H - pad, x2: W - pad, y2: H - pad, className: 'axis' }),
    s('line', { x1: pad, y1: pad, x2: pad, y2: H - pad, className: 'axis' }),
    s('text', { x: pad - 4, y: pad + 4, className: 'tick end' }, max),
    s('text', { x: pad - 4, y: H - pad, className: 'tick end' }, 0),
    pts.length ? s('text', { x: pad, y: H - 8, className: 'tick start' }, String(pts[0].at ?? '').slice(11, 19)) : null,
    pts.length ? s('text', { x: W - pad, y: H - 8, className: 'tick end' }, String(pts[pts.length - 1].at ?? '').slice(11, 19)) : null,
    series.map(([k, cls]) => s('polyline', {
      className: cls, points: pts.map((p, i) => `${x(i).toFixed(1)},${y(p[k]).toFixed(1)}`).join(' ') })));
  return h('section', { className: 'panel', id: 'throughput' },
    h('h2', {}, `Throughput, last ${Math.round((node.window_s ?? 0) / 60)} min`),
    h('p', { className: 'figures' },
      `${Number(node.callbacks_per_second ?? 0).toFixed(2)} callbacks/s · `,
      h('span', { className: 'key line-fired' }, 'fired'), ' ',
      h('span', { className: 'key line-ok' }, 'succeeded'), ' ',
      h('span', { className: 'key line-failed' }, 'failed')),
    pts.length ? chart : h('p', { className: 'empty' }, 'No callbacks yet.'));
}

function hosts(list) {
  const rows = Array.isArray(list) ? list : [];
  return h('section', { className: 'panel wide', id: 'hosts' },
    h('h2', {}, 'Destination hosts, most failing first'),
    rows.length === 0 ? h('p', { className: 'empty' }, 'No callbacks yet.') :
      h('table', {},
        h('thead', {}, h('tr', {}, ['host', 'in flight', 'backing off', 'succeeded', 'failed', 'last error']
          .map((t) => h('th', {}, t)))),
        h('tbody', {}, rows.map((r) => h('tr', {},
          h('td', {}, h('a', { href: `#/tasks?state=dead&host=${encodeURIComponent(String(r.host ?? ''))}` }, r.host)),
          h('td', { className: 'num' }, r.in_flight), h('td', { className: 'num' }, r.backing_off),
          h('td', { className: 'num' }, r.succeeded), h('td', { className: 'num failed' }, r.failed),
          h('td', { className: 'error-text' }, r.last_error ?? '—'))))));
}

export async function overview(root, ctx) {
  const draw = async () => {
    const stats = await api('GET', '/v1/stats');
    if (!ctx.current()) {
      return;
    }
    const node = stats.node ?? {};
    root.replaceChildren(
      h('h1', {}, 'Overview'),
      counts(stats),
      h('p', { className: 'note' }, `Counts are the store's; the charts and hosts are this node's view over its last ${node.window_s ?? '?'} s.`),
      h('div', { className: 'panels' }, histogram(node), throughput(node), hosts(stats.hosts)));
  };
  await draw();
  const timer = setInterval(() => { draw().catch(() => {}); }, 5000);
  ctx.onLeave(() => clearInterval(timer));
}
