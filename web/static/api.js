// api.js: the one way the dashboard talks to the /v1 API.
//
// Every call sends JSON with the session token as a bearer credential, turns
// problem documents (RFC 9457: detail, code, errors[{location, message}]) into
// ApiError, and reports whether requests are in flight so the shell can show
// a loading bar. A 401 on a request that carried a token means the session
// expired or was revoked: the session is dropped and the app sends the user
// to the login page.

import * as session from './session.js';

export class ApiError extends Error {
  constructor({ status, title, detail, code, errors, retryAfter }) {
    super(detail || title || `Request failed with status ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.title = title || '';
    this.detail = this.message;
    this.code = code || '';
    this.errors = Array.isArray(errors) ? errors.filter((e) => e && typeof e === 'object') : [];
    this.retryAfter = retryAfter || null;
  }
}

/** True for the rejection fetch gives when a page's AbortController fires. */
export function isAbort(err) {
  return err?.name === 'AbortError';
}

const FALLBACK_DETAIL = {
  0: 'Could not reach the service. Check your connection and try again.',
  401: 'You are not signed in, or your session has ended.',
  403: 'You are not allowed to do this.',
  404: 'Not found.',
  409: 'This conflicts with the current state. Reload and try again.',
  413: 'The request is too large.',
  429: 'Too many requests. Wait a moment and try again.',
  500: 'The service failed to answer. Try again later.',
  502: 'The service is unreachable right now. Try again later.',
  503: 'The service is temporarily unavailable. Try again later.',
  504: 'The service took too long to answer. Try again later.',
};

let inflight = 0;
const loadingListeners = new Set();

/** fn(busy: boolean) runs whenever the count of visible requests changes. */
export function onLoadingChange(fn) {
  loadingListeners.add(fn);
  return () => loadingListeners.delete(fn);
}

function track(delta) {
  inflight = Math.max(0, inflight + delta);
  for (const fn of loadingListeners) fn(inflight > 0);
}

let unauthorizedHandler = () => {};

/** fn(err) runs when a request with a session token is answered 401. */
export function onUnauthorized(fn) {
  unauthorizedHandler = fn;
}

/**
 * Tagged template that percent-encodes each interpolated value as one path
 * segment: path`/v1/mcps/${id}/tools/${name}` keeps a tool named "a/b" in one
 * segment ("a%2Fb"), as the contract asks.
 */
export function path(strings, ...values) {
  let out = strings[0];
  values.forEach((v, i) => { out += encodeURIComponent(String(v)) + strings[i + 1]; });
  return out;
}

function queryString(query) {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

/**
 * request sends one API call and resolves to the parsed JSON body (null for
 * 204). Options: query (object), body (JSON-encoded), signal (AbortSignal),
 * quiet (do not show the loading bar: background polls), auth (send the
 * session token; default true), expire (treat a 401 as an ended session and
 * go to login; default true: off for logout, where 401 is harmless).
 */
export async function request(method, url, { query, body, signal, quiet = false, auth = true, expire = true } = {}) {
  const headers = { Accept: 'application/json, application/problem+json' };
  const token = auth ? session.token() : null;
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, signal, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }

  if (!quiet) track(1);
  try {
    let res;
    try {
      res = await fetch(url + queryString(query), init);
    } catch (err) {
      if (isAbort(err)) throw err;
      throw new ApiError({ status: 0, title: 'Network error', detail: FALLBACK_DETAIL[0], code: 'network_error' });
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { data = undefined; }
    }
    if (res.ok) {
      if (data === undefined) {
        throw new ApiError({ status: res.status, title: 'Unexpected response', detail: 'The service answered with something that is not JSON.', code: 'bad_response' });
      }
      return data;
    }
    const problem = data && typeof data === 'object' ? data : {};
    const retry = Number.parseInt(res.headers.get('Retry-After') || '', 10);
    const err = new ApiError({
      status: res.status,
      title: problem.title || res.statusText,
      detail: typeof problem.detail === 'string' && problem.detail ? problem.detail
        : (FALLBACK_DETAIL[res.status] || problem.title || `Request failed with status ${res.status}.`),
      code: problem.code,
      errors: problem.errors,
      retryAfter: Number.isFinite(retry) && retry > 0 ? retry : null,
    });
    if (res.status === 401 && token && expire) {
      session.clear();
      unauthorizedHandler(err);
    }
    throw err;
  } finally {
    if (!quiet) track(-1);
  }
}

export const get = (url, query, opts = {}) => request('GET', url, { ...opts, query });
export const post = (url, body, opts = {}) => request('POST', url, { ...opts, body });
export const put = (url, body, opts = {}) => request('PUT', url, { ...opts, body });
export const patch = (url, body, opts = {}) => request('PATCH', url, { ...opts, body });
export const del = (url, opts = {}) => request('DELETE', url, opts);

/**
 * download fetches a file the API streams (GET with the session token, which
 * a plain link cannot carry) and hands it to the browser as a download named
 * by the response's Content-Disposition (else fallbackName). Failures are
 * ApiErrors, as for request.
 */
export async function download(url, query, fallbackName, { signal } = {}) {
  const headers = { Accept: '*/*' };
  const token = session.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  track(1);
  try {
    let res;
    try {
      res = await fetch(url + queryString(query), { method: 'GET', headers, signal, credentials: 'omit', cache: 'no-store' });
    } catch (err) {
      if (isAbort(err)) throw err;
      throw new ApiError({ status: 0, title: 'Network error', detail: FALLBACK_DETAIL[0], code: 'network_error' });
    }
    if (!res.ok) {
      let problem = {};
      try { problem = await res.json(); } catch { problem = {}; }
      const retry = Number.parseInt(res.headers.get('Retry-After') || '', 10);
      const err = new ApiError({
        status: res.status, title: problem.title || res.statusText,
        detail: typeof problem.detail === 'string' && problem.detail ? problem.detail : (FALLBACK_DETAIL[res.status] || `Request failed with status ${res.status}.`),
        code: problem.code, errors: problem.errors, retryAfter: Number.isFinite(retry) && retry > 0 ? retry : null,
      });
      if (res.status === 401 && token) {
        session.clear();
        unauthorizedHandler(err);
      }
      throw err;
    }
    const blob = await res.blob();
    const m = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') || '');
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = m ? m[1] : fallbackName;
    a.hidden = true;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
    return { name: a.download, bytes: blob.size };
  } finally {
    track(-1);
  }
}
