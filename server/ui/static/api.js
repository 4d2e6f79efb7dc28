// api.js: the one way the dashboard talks to the service: same-origin fetches of the public
// API, each carrying the bearer token. The token lives in this module's variable only (no
// cookie, no storage), so that no other page, extension storage dump or later visitor of
// the browser finds it; a 401 forgets it and asks for it again.

let token = null;
let onUnauthorized = () => {};

/** An answer of the API that is not a success: its status and its error object. */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export function setToken(value) {
  token = value;
}

export function hasToken() {
  return token !== null;
}

/** Called, once the token is forgotten, when the service answers 401. */
export function whenUnauthorized(callback) {
  onUnauthorized = callback;
}

/**
 * A request to the API: `path` starts with "/v1/"; `body`, when given, is sent as JSON.
 * Resolves to the parsed answer (null when empty); rejects with ApiError.
 */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token}` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  if (text !== '') {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const e = data && typeof data.error === 'object' && data.error !== null ? data.error : {};
    if (res.status === 401) {
      token = null;
      onUnauthorized();
    }
    throw new ApiError(res.status, String(e.code ?? `http_${res.status}`),
                       String(e.message ?? res.statusText), e.field);
  }
  return data;
}

/** A query string of the parameters that have a value ("" and null are left out). */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') {
      q.set(k, String(v));
    }
  }
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

/** An id as one path segment. */
export function segment(id) {
  return encodeURIComponent(id);
}
