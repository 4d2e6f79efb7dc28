// dom.js: building the pages. Everything from the service is hostile text: it only ever
// becomes a text node or an attribute value (never HTML), so an id or an error message
// cannot add markup or script. SVG is built the same way for the charts.

const SVG = 'http://www.w3.org/2000/svg';

function build(el, props, children) {
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) {
      continue;
    }
    if (k.startsWith('on')) {
      el.addEventListener(k.slice(2), v);
    } else {
      el.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
    }
  }
  for (const c of children.flat(Infinity)) {
    if (c !== undefined && c !== null && c !== false) {
      el.append(c instanceof Node ? c : String(c));
    }
  }
  return el;
}

/** An HTML element: h('a', {href: '#/'}, 'text', child...). */
export function h(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

/** Appends children to `el` the same way (null, undefined and false are left out). */
export function put(el, ...children) {
  return build(el, {}, children);
}

/** An SVG element, the same way. */
export function s(tag, props, ...children) {
  return build(document.createElementNS(SVG, tag), props, children);
}

/** A time of the API (RFC 3339, UTC) as shown: "2026-11-28 04:40:12.345Z". */
export function time(iso) {
  if (typeof iso !== 'string') {
    return '—';
  }
  return iso.replace('T', ' ');
}

/** How far a time is from now: "in 4 s", "3 min ago". */
export function relative(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return '';
  }
  const d = Math.round((t - now) / 1000);
  const a = Math.abs(d);
  const text = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min`
             : a < 86400 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
}

/** A duration in milliseconds as shown: "850 ms", "2.5 s", "4 min". */
export function duration(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    return '—';
  }
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  if (ms < 60000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  return `${Math.round(ms / 60000)} min`;
}

/** A state as a badge. */
export function badge(state) {
  return h('span', { className: `badge state-${String(state).replace(/[^a-z]/g, '')}` }, state);
}

/**
 * A button that asks once more before it acts: the first click arms it ("Really delete?"),
 * a second within five seconds runs `action`.
 */
export function confirmButton(label, armedLabel, action, props = {}) {
  let armed = null;
  const b = h('button', { type: 'button', ...props }, label);
  b.addEventListener('click', () => {
    if (armed === null) {
      b.textContent = armedLabel;
      b.classList.add('armed');
      armed = setTimeout(() => {
        armed = null;
        b.textContent = label;
        b.classList.remove('armed');
      }, 5000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    b.disabled = true;
    action();
  });
  return b;
}
