"use strict";
// Sender: a bounded queue of telemetry items posted to POST /v1/ingest in
// gzip batches, in the background. It never throws to its caller and never
// blocks it: add() is a push onto an array. One process shares one sender
// per endpoint and key (see shared()), however many servers it instruments.
const http = require("node:http");
const https = require("node:https");
const { gzip: gzipCb } = require("node:zlib");
const { promisify } = require("node:util");

const gzip = promisify(gzipCb);

/** The service's limits on one ingest request (wire version 1). */
const MAX_BATCH_ITEMS = 1000;
const MAX_BODY_BYTES = 1 << 20;

const DEFAULTS = Object.freeze({
  endpoint: "http://127.0.0.1:8080",
  maxQueue: 10000,
  flushIntervalMs: 1000,
  batchSize: MAX_BATCH_ITEMS,
  maxRetries: 5,
  retryBaseDelayMs: 250,
  maxRetryDelayMs: 60000,
  timeoutMs: 30000,
  shutdownTimeoutMs: 2000,
  exitTimeoutMs: 500,
});

const WARNING = "McpscopeTelemetryWarning";

class Sender {
  /**
   * @param {object} o
   * @param {string} o.endpoint base address of the service, without /v1
   * @param {string} o.key ingest key (ik_...)
   */
  constructor(o) {
    this.url = o.endpoint.replace(/\/+$/, "") + "/v1/ingest";
    this.key = o.key;
    this.maxQueue = o.maxQueue ?? DEFAULTS.maxQueue;
    this.batchSize = Math.min(o.batchSize ?? DEFAULTS.batchSize, MAX_BATCH_ITEMS);
    this.maxRetries = o.maxRetries ?? DEFAULTS.maxRetries;
    this.retryBaseDelayMs = o.retryBaseDelayMs ?? DEFAULTS.retryBaseDelayMs;
    this.maxRetryDelayMs = o.maxRetryDelayMs ?? DEFAULTS.maxRetryDelayMs;
    this.timeoutMs = o.timeoutMs ?? DEFAULTS.timeoutMs;
    this.shutdownTimeoutMs = o.shutdownTimeoutMs ?? DEFAULTS.shutdownTimeoutMs;
    this.exitTimeoutMs = o.exitTimeoutMs ?? Math.min(this.shutdownTimeoutMs, DEFAULTS.exitTimeoutMs);
    this.gzip = o.gzip ?? true;
    // By default requests go through node:http with unreferenced sockets
    // and timers: a send in flight never keeps the server's process alive.
    this.fetch = o.fetch ?? unrefPost;
    this.onError = o.onError;
    this.queue = [];
    this.stats = { queued: 0, sent: 0, accepted: 0, dropped: 0, failed: 0, requests: 0, retries: 0 };
    this.sending = null; // the running drain, if any
    this.posts = new Set(); // one-shot posts in flight (inventory); flush waits for them
    this.sleepers = new Set(); // retries waiting for their backoff: woken at exit
    this.closed = false;
    this.keyRefused = false; // a 401 or 403 was reported
    this.abort = new AbortController(); // ends sends and waits at the shutdown deadline
    const interval = o.flushIntervalMs ?? DEFAULTS.flushIntervalMs;
    this.timer = setInterval(() => this.#kick(), interval);
    this.timer.unref?.(); // never keeps a server's process alive
    // When the process runs out of work (a stdio server whose client closed
    // stdin), send what is queued before it exits, within the exit deadline
    // (exitTimeoutMs, 500 ms: the official clients send SIGTERM 2 s after
    // closing stdin, and a server must be gone well before): the sends are
    // new work, and once they end or the deadline drops them the process
    // exits, unless something else gave it more work, in which case the
    // sender goes on as before.
    this.beforeExit = () => {
      if ((this.queue.length > 0 || this.sending || this.posts.size > 0) && !this.shuttingDown) this.#within(this.exitTimeoutMs, true);
    };
    process.on("beforeExit", this.beforeExit);
  }

  /** Queues an item; beyond maxQueue the item is dropped and counted. */
  add(item) {
    if (this.closing || this.queue.length >= this.maxQueue) {
      this.stats.dropped++;
      return false;
    }
    this.queue.push(item);
    this.stats.queued++;
    if (this.queue.length >= this.batchSize) this.#kick();
    return true;
  }

  /** Sends everything queued; resolves when done (never rejects). The
   * process stays alive while it is awaited (background sends do not). */
  async flush() {
    const keepAlive = setInterval(() => {}, 1 << 30);
    try {
      while ((this.queue.length > 0 && !this.abort.signal.aborted) || this.sending || this.posts.size > 0) {
        await Promise.all([this.#kick(), ...[...this.posts].map((p) => p.catch(() => {}))]);
      }
    } finally {
      clearInterval(keepAlive);
    }
  }

  /** Flushes for at most shutdownTimeoutMs, then drops what is left with
   * one warning and stops; later add() calls drop. */
  close() {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      process.off("beforeExit", this.beforeExit);
      await this.#within(this.shutdownTimeoutMs);
      this.closed = true;
    })();
    return this.closing;
  }

  /** post sends one JSON body to url with the key, once (no retry);
   * rejects unless the service answers 2xx. A refused key is reported as
   * for batches. flush() and close() wait for posts in flight, within the
   * shutdown deadline. */
  post(url, json) {
    const p = this.#post(url, json);
    this.posts.add(p);
    const done = () => this.posts.delete(p);
    p.then(done, done);
    return p;
  }

  async #post(url, json) {
    const body = this.gzip ? await gzip(json) : Buffer.from(json);
    const [signal, release] = withTimeout(this.abort.signal, this.timeoutMs);
    let res;
    try {
      res = await this.fetch(url, { method: "POST", headers: this.#headers(), body, signal });
      await res.text().catch(() => "");
    } finally {
      release();
    }
    if (res.status < 200 || res.status >= 300) {
      const err = new Error(`POST ${url}: ${res.status}`);
      err.status = res.status;
      if (res.status !== 401 && res.status !== 403) this.#report(err, false);
      throw err;
    }
  }

  #headers() {
    return {
      "Content-Type": "application/json",
      ...(this.gzip ? { "Content-Encoding": "gzip" } : {}),
      Authorization: `Bearer ${this.key}`,
      "User-Agent": "mcpscope-telemetry-js/0.2.0",
    };
  }

  // #within flushes, and at the deadline aborts the send in flight and its
  // retries and drops the queue (counted failed, with one warning). At
  // exit (beforeExit), a send the network refuses is not retried, and a
  // retry waiting for its backoff goes at once: waiting for a service that
  // is down only delays the exit. Unless the sender is closing, a fresh
  // abort signal then lets later items be sent as usual (a process that
  // was given more work after beforeExit).
  async #within(ms, exiting = false) {
    this.shuttingDown = true;
    this.exiting = exiting;
    if (exiting) for (const wake of this.sleepers) wake();
    const failed = this.stats.failed;
    let timer;
    const deadline = new Promise((resolve) => {
      timer = setTimeout(resolve, ms, "deadline");
    });
    const outcome = await Promise.race([this.flush().then(() => "done"), deadline]);
    clearTimeout(timer);
    if (outcome === "deadline") {
      this.abort.abort();
      await this.sending?.catch(() => {});
      const left = this.queue.length;
      this.queue.length = 0;
      this.stats.failed += left;
      this.#report(new Error(`@mcpscope/telemetry: the service did not answer within the shutdown deadline of ${ms} ms; telemetry not sent was dropped`), true);
      if (!this.closing) this.abort = new AbortController();
    } else if (this.unreachable && this.stats.failed > failed) {
      this.#report(new Error(`@mcpscope/telemetry: the service was unreachable at exit; ${this.stats.failed - failed} items were dropped`), true);
    }
    this.unreachable = false;
    this.exiting = false;
    this.shuttingDown = false;
  }

  #kick() {
    if (!this.sending && this.queue.length > 0 && !this.abort.signal.aborted) {
      this.sending = this.#drain().finally(() => {
        this.sending = null;
      });
    }
    return this.sending ?? Promise.resolve();
  }

  async #drain() {
    while (this.queue.length > 0 && !this.abort.signal.aborted) {
      const batch = this.queue.splice(0, this.batchSize);
      try {
        await this.#sendBatch(batch);
      } catch (err) {
        this.stats.failed += batch.length;
        if (err?.status === 401 || err?.status === 403) {
          // A refused key stays refused until someone replaces it.
          if (this.keyRefused) continue;
          this.keyRefused = true;
          this.#report(new Error(`@mcpscope/telemetry: the service refuses the ingest key (${err.status}: wrong or deleted); nothing is recorded until it is replaced`), true);
          continue;
        }
        if (!this.abort.signal.aborted) this.#report(err, false);
      }
    }
  }

  // #sendBatch posts one batch, halving it while its JSON is over 1 MiB; an
  // item over the limit alone is dropped alone.
  async #sendBatch(batch) {
    const json = JSON.stringify({ items: batch });
    if (Buffer.byteLength(json) > MAX_BODY_BYTES) {
      if (batch.length === 1) {
        throw new Error(`an item of ${Buffer.byteLength(json)} bytes is over the 1 MiB body limit; dropped`);
      }
      const half = Math.ceil(batch.length / 2);
      const parts = [batch.slice(0, half), batch.slice(half)];
      let first;
      for (const part of parts) {
        try {
          await this.#sendBatch(part);
        } catch (err) {
          if (err?.status) throw err; // the service refused: the other half would fare no better
          this.stats.failed += part.length;
          first ??= err;
        }
      }
      if (first) this.#report(first, false);
      return;
    }
    const body = this.gzip ? await gzip(json) : Buffer.from(json);
    for (let attempt = 0; ; attempt++) {
      let res;
      let wait;
      try {
        this.stats.requests++;
        res = await this.fetch(this.url, {
          method: "POST",
          headers: this.#headers(),
          body,
          signal: AbortSignal.any
            ? AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.abort.signal])
            : AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        wait = this.#backoff(attempt); // network error: retried, except at exit
        if (this.exiting) this.unreachable = true;
        if (attempt >= this.maxRetries || this.abort.signal.aborted || this.exiting) throw err;
      }
      if (res) {
        const text = await res.text().catch(() => "");
        if (res.status >= 200 && res.status < 300) {
          let r = {};
          try {
            r = JSON.parse(text);
          } catch {}
          this.stats.sent += batch.length;
          this.stats.accepted += Number(r.accepted ?? 0);
          return;
        }
        const retryable = res.status === 429 || res.status >= 500;
        if (!retryable || attempt >= this.maxRetries) {
          const err = new Error(`POST ${this.url}: ${res.status} ${text.slice(0, 300)}`);
          err.status = res.status;
          throw err;
        }
        wait = retryAfterMs(res.headers.get("retry-after")) ?? this.#backoff(attempt);
      }
      this.stats.retries++;
      await this.#sleep(Math.min(wait, this.maxRetryDelayMs));
      if (this.abort.signal.aborted) throw new Error("shutdown deadline");
    }
  }

  #sleep(ms) {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      t.unref?.(); // the shutdown deadline, not a retry, keeps a process alive
      const signal = this.abort.signal;
      const sleepers = this.sleepers;
      function done() {
        clearTimeout(t);
        signal.removeEventListener("abort", done);
        sleepers.delete(done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
      sleepers.add(done);
    });
  }

  // #backoff is the exponential wait before retry attempt+1, with full jitter
  // over its upper half.
  #backoff(attempt) {
    const d = Math.min(this.retryBaseDelayMs * 2 ** attempt, this.maxRetryDelayMs);
    return d / 2 + Math.random() * (d / 2);
  }

  // #report hands a failure to onError; without one, only what the server's
  // author must act on (a refused key, telemetry dropped at shutdown) is
  // printed, once, as a process warning.
  #report(err, warn) {
    try {
      if (this.onError) this.onError(err);
      else if (warn) process.emitWarning(err.message, WARNING);
    } catch {}
  }
}

// unrefPost is the subset of fetch the sender uses, over node:http(s), on a
// socket that does not keep the process alive.
function unrefPost(url, init) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = (u.protocol === "https:" ? https : http).request(u, { method: init.method, headers: init.headers, agent: false }, (res) => {
      const chunks = [];
      let size = 0;
      res.on("data", (c) => {
        size += c.length;
        if (size <= 65536) chunks.push(c); // the service's answers are small
      });
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode, headers: { get: (h) => res.headers[h.toLowerCase()] ?? null }, text: async () => text });
      });
      res.on("error", reject);
    });
    req.on("socket", (sock) => sock.unref());
    req.on("error", reject);
    const signal = init.signal;
    if (signal) {
      if (signal.aborted) return req.destroy(signal.reason ?? new Error("aborted"));
      signal.addEventListener("abort", () => req.destroy(signal.reason ?? new Error("aborted")), { once: true });
    }
    req.end(init.body);
  });
}

/** retryAfterMs reads a Retry-After header: seconds or an HTTP date. */
function retryAfterMs(value) {
  if (value == null || value === "") return undefined;
  const s = Number(value);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - Date.now());
}

// withTimeout is a signal that aborts with signal or after ms (AbortSignal.any
// is not in Node 18), and the function that lets go of both.
function withTimeout(signal, ms) {
  const c = new AbortController();
  const t = setTimeout(() => c.abort(new Error(`timed out after ${ms} ms`)), ms);
  t.unref?.();
  const follow = () => c.abort(signal.reason);
  if (signal.aborted) follow();
  else signal.addEventListener("abort", follow, { once: true });
  return [c.signal, () => (clearTimeout(t), signal.removeEventListener("abort", follow))];
}

// The process-wide senders, by endpoint and key, kept on globalThis so that
// the CommonJS and ESM entry points (and two copies of this package) share
// them.
const REGISTRY = Symbol.for("mcpscope.telemetry.senders");

/** shared returns the process's sender for o.endpoint and o.key, creating
 * it with o's options the first time. */
function shared(o) {
  const senders = (globalThis[REGISTRY] ??= new Map());
  const id = `${o.endpoint}\n${o.key}`;
  let s = senders.get(id);
  if (!s || s.closing) {
    s = new Sender(o);
    senders.set(id, s);
    const close = s.close.bind(s);
    s.close = async () => {
      if (senders.get(id) === s) senders.delete(id);
      await close();
    };
  }
  return s;
}

module.exports = { Sender, DEFAULTS, MAX_BATCH_ITEMS, MAX_BODY_BYTES, retryAfterMs, shared };
