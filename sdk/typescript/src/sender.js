// Sender: a bounded queue of telemetry items posted to POST /v1/ingest in
// gzip batches, in the background. It never throws to its caller and never
// blocks it: add() is a push onto an array.
import { gzip as gzipCb } from "node:zlib";
import { promisify } from "node:util";

const gzip = promisify(gzipCb);

/** The service's limits on one ingest request (wire version 1). */
export const MAX_BATCH_ITEMS = 1000;
export const MAX_BODY_BYTES = 1 << 20;

export const DEFAULTS = Object.freeze({
  endpoint: "http://127.0.0.1:8080",
  maxQueue: 10000,
  flushIntervalMs: 1000,
  batchSize: MAX_BATCH_ITEMS,
  maxRetries: 5,
  retryBaseDelayMs: 250,
  maxRetryDelayMs: 60000,
  timeoutMs: 30000,
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Sender {
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
    this.gzip = o.gzip ?? true;
    this.fetch = o.fetch ?? globalThis.fetch;
    this.onError = o.onError ?? (() => {});
    this.queue = [];
    this.stats = { queued: 0, sent: 0, accepted: 0, dropped: 0, failed: 0, requests: 0, retries: 0 };
    this.sending = null; // the running drain, if any
    this.closed = false;
    const interval = o.flushIntervalMs ?? DEFAULTS.flushIntervalMs;
    this.timer = setInterval(() => this.#kick(), interval);
    this.timer.unref?.(); // never keeps a server's process alive
    // When the process runs out of work (a stdio server whose client closed
    // stdin), send what is queued before it exits: the sends are new work,
    // and once they end the process exits for good.
    this.beforeExit = () => {
      if (this.queue.length > 0) this.#kick();
    };
    process.on("beforeExit", this.beforeExit);
  }

  /** Queues an item; beyond maxQueue the item is dropped and counted. */
  add(item) {
    if (this.closed || this.queue.length >= this.maxQueue) {
      this.stats.dropped++;
      return false;
    }
    this.queue.push(item);
    this.stats.queued++;
    if (this.queue.length >= this.batchSize) this.#kick();
    return true;
  }

  /** Sends everything queued; resolves when done (never rejects). */
  async flush() {
    while (this.queue.length > 0 || this.sending) {
      await this.#kick();
    }
  }

  /** Flushes, then stops the timer; later add() calls drop. */
  async close() {
    clearInterval(this.timer);
    await this.flush();
    this.closed = true;
    process.off("beforeExit", this.beforeExit);
  }

  #kick() {
    if (!this.sending && this.queue.length > 0) {
      this.sending = this.#drain().finally(() => {
        this.sending = null;
      });
    }
    return this.sending ?? Promise.resolve();
  }

  async #drain() {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.batchSize);
      try {
        await this.#sendBatch(batch);
      } catch (err) {
        this.stats.failed += batch.length;
        this.#report(err);
      }
    }
  }

  // #sendBatch posts one batch, halving it while its JSON is over 1 MiB.
  async #sendBatch(batch) {
    const json = JSON.stringify({ items: batch });
    if (Buffer.byteLength(json) > MAX_BODY_BYTES) {
      if (batch.length === 1) {
        throw new Error(`an item of ${Buffer.byteLength(json)} bytes is over the 1 MiB body limit; dropped`);
      }
      const half = Math.ceil(batch.length / 2);
      await this.#sendBatch(batch.slice(0, half));
      await this.#sendBatch(batch.slice(half));
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
          headers: {
            "Content-Type": "application/json",
            ...(this.gzip ? { "Content-Encoding": "gzip" } : {}),
            Authorization: `Bearer ${this.key}`,
            "User-Agent": "mcpscope-telemetry-js/0.1.0",
          },
          body,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        wait = this.#backoff(attempt); // network error: retried
        if (attempt >= this.maxRetries) throw err;
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
          throw new Error(`POST ${this.url}: ${res.status} ${text.slice(0, 300)}`);
        }
        wait = retryAfterMs(res.headers.get("retry-after")) ?? this.#backoff(attempt);
      }
      this.stats.retries++;
      await sleep(Math.min(wait, this.maxRetryDelayMs));
    }
  }

  // #backoff is the exponential wait before retry attempt+1, with full jitter
  // over its upper half.
  #backoff(attempt) {
    const d = Math.min(this.retryBaseDelayMs * 2 ** attempt, this.maxRetryDelayMs);
    return d / 2 + Math.random() * (d / 2);
  }

  #report(err) {
    try {
      this.onError(err);
    } catch {}
  }
}

/** retryAfterMs reads a Retry-After header: seconds or an HTTP date. */
export function retryAfterMs(value) {
  if (value == null || value === "") return undefined;
  const s = Number(value);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - Date.now());
}
