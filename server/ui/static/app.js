// app.js: the dashboard's shell: the sign-in, the navigation (the part of the URL after
// "#", so that every view is a link, and the server serves one page), and a notice line for
// what an action did (notice.js). Each view lives in its own module and draws itself into <main>.

import { hasToken, setToken, whenUnauthorized } from './api.js';
import { h } from './dom.js';
import { describe, hush } from './notice.js';
import { overview } from './overview.js';
import { tasks } from './tasks.js';
import { task } from './task.js';
import { dead } from './dead.js';
import { schedules } from './schedules.js';

const main = document.getElementById('main');
const login = document.getElementById('login');
const loginError = document.getElementById('login-error');
const tokenInput = document.getElementById('token');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');

// The running view's clean-up (a refresh timer), and a counter that makes the answers of a
// view left behind land nowhere.
let leave = () => {};
let generation = 0;

function askToken(message) {
  leave();
  leave = () => {};
  generation += 1;
  main.replaceChildren();
  nav.hidden = true;
  signOut.hidden = true;
  hush();
  login.hidden = false;
  loginError.hidden = message === undefined;
  loginError.textContent = message ?? '';
  tokenInput.value = '';
  tokenInput.focus();
}

const views = { overview, tasks, task, dead, schedules };

// "#/tasks?state=dead" -> the view "tasks" with its parameters; "#/task/<id>" -> "task".
function parse(hash) {
  const path = hash.replace(/^#\/?/, '');
  const q = path.indexOf('?');
  const route = q < 0 ? path : path.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
  const [name, ...rest] = route.split('/');
  if (name === '') {
    return { name: 'overview', params, arg: '' };
  }
  return { name, params, arg: rest.map(decodeURIComponent).join('/') };
}

async function show() {
  if (!hasToken()) {
    askToken();
    return;
  }
  leave();
  leave = () => {};
  const mine = ++generation;
  const { name, params, arg } = parse(location.hash);
  const view = views[name];
  for (const a of nav.querySelectorAll('a')) {
    a.classList.toggle('current', a.dataset.view === name || (name === 'task' && a.dataset.view === 'tasks'));
  }
  const root = h('div', { className: `view view-${name}` });
  main.replaceChildren(root);
  if (!view) {
    root.append(h('p', { className: 'error' }, 'No such page.'));
    return;
  }
  const ctx = {
    params,
    arg,
    current: () => mine === generation && hasToken(),
    onLeave: (f) => { leave = f; },
    reload: () => show(),
  };
  try {
    await view(root, ctx);
  } catch (e) {
    if (ctx.current()) {
      root.append(h('p', { className: 'error', role: 'alert' }, describe(e)));
    }
  }
}

whenUnauthorized(() => askToken('Wrong token: the service refused it. Try again.'));

document.getElementById('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const value = tokenInput.value;
  tokenInput.value = '';
  if (value === '') {
    return;
  }
  setToken(value);
  login.hidden = true;
  nav.hidden = false;
  signOut.hidden = false;
  show();
});

signOut.addEventListener('click', () => {
  setToken(null);
  askToken();
});

window.addEventListener('hashchange', () => {
  hush();
  show();
});

show();
