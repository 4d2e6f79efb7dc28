// notice.js: the line above the view that says what an action did, or why it failed.

import { ApiError } from './api.js';

const notice = document.getElementById('notice');

/** Shows `text` (as an error when `isError`). */
export function say(text, isError = false) {
  notice.textContent = text;
  notice.classList.toggle('error', isError);
  notice.hidden = false;
}

let next = null;

/** Shows `text` on the next view: for an action that leaves the page it was on. */
export function sayNext(text) {
  next = text;
}

/** Hides the notice when the view changes (or shows the one left by sayNext). */
export function hush() {
  if (next !== null) {
    say(next);
    next = null;
  } else {
    notice.hidden = true;
  }
}

/** A failed request as a sentence: status, code, field and the service's message. */
export function describe(e) {
  if (e instanceof ApiError) {
    return `${e.status} ${e.code}${e.field ? ` (${e.field})` : ''}: ${e.message}`;
  }
  return `the service did not answer: ${e.message}`;
}

/**
 * A click handler that runs the request `f`, says `what` (or why it failed) and reloads the
 * view: what every action button of the pages does.
 */
export function action(ctx, what, f) {
  return async () => {
    try {
      await f();
      say(what);
    } catch (e) {
      say(`${what.replace(/\.$/, '')} failed: ${describe(e)}`, true);
    }
    ctx.reload();
  };
}
