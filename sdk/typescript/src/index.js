// @mcpscope/telemetry: one call records every request an MCP server of
// @modelcontextprotocol/sdk handles and sends it to the telemetry service.
//
//   import { instrument } from "@mcpscope/telemetry";
//   instrument(server); // key from TELEMETRY_KEY, endpoint from TELEMETRY_ENDPOINT
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Sender, DEFAULTS, MAX_BATCH_ITEMS, MAX_BODY_BYTES, retryAfterMs } from "./sender.js";

export { Sender, DEFAULTS, MAX_BATCH_ITEMS, MAX_BODY_BYTES, retryAfterMs };

/** error_type of a tool result with isError (the semantic conventions' value). */
export const TOOL_ERROR = "tool_error";

const MAX_ATTRIBUTES = 32;
const MAX_ATTRIBUTE_VALUE = 256;
const MAX_MESSAGE = 1024;
const INSTRUMENTED = Symbol.for("mcpscope.telemetry.instrumented");

/**
 * Instruments an McpServer or a Server of @modelcontextprotocol/sdk: every
 * request it handles (from now on, and for handlers registered later)
 * becomes a telemetry item. Returns a handle to flush or close the sender;
 * the server's own close() also flushes.
 */
export function instrument(server, options = {}) {
  const inner = lowLevelServer(server);
  if (inner[INSTRUMENTED]) return inner[INSTRUMENTED];
  const env = options.env ?? process.env;
  const key = options.key ?? env.TELEMETRY_KEY;
  const endpoint = options.endpoint ?? env.TELEMETRY_ENDPOINT ?? DEFAULTS.endpoint;
  const onError = options.onError ?? (() => {});
  if (!key) {
    safe(onError, new Error("@mcpscope/telemetry: no ingest key (option key or TELEMETRY_KEY); nothing is recorded"));
    return disabledHandle();
  }
  const sender = new Sender({ ...options, endpoint, key, onError });
  const recorder = new Recorder(inner, sender, options);

  // Wrap the handlers already registered (initialize, ping, and whatever
  // the author set) and every one registered later: McpServer registers
  // its tools/prompts/resources handlers lazily through setRequestHandler,
  // which stores them in this map.
  const handlers = inner._requestHandlers;
  for (const [method, h] of handlers) handlers.set(method, recorder.wrap(method, h));
  const set = handlers.set.bind(handlers);
  handlers.set = (method, h) => set(method, recorder.wrap(method, h));

  // One session per connection when the transport has no session id.
  const connect = inner.connect;
  inner.connect = function (...args) {
    recorder.connectionId = randomUUID();
    return connect.apply(this, args);
  };
  // Closing the server flushes what is queued.
  const close = inner.close;
  inner.close = async function (...args) {
    try {
      return await close.apply(this, args);
    } finally {
      await sender.flush();
    }
  };

  const handle = {
    endpoint,
    flush: () => sender.flush(),
    close: () => sender.close(),
    stats: () => ({ ...sender.stats, queueLength: sender.queue.length }),
  };
  inner[INSTRUMENTED] = handle;
  return handle;
}

function lowLevelServer(server) {
  // McpServer keeps its Server in .server; a Server has the protocol's
  // handler map itself.
  const inner = server?.server?._requestHandlers instanceof Map ? server.server : server;
  if (!(inner?._requestHandlers instanceof Map)) {
    throw new TypeError("instrument: expected an McpServer or Server of @modelcontextprotocol/sdk");
  }
  return inner;
}

function disabledHandle() {
  const stats = { queued: 0, sent: 0, accepted: 0, dropped: 0, failed: 0, requests: 0, retries: 0, queueLength: 0 };
  return { endpoint: undefined, flush: async () => {}, close: async () => {}, stats: () => ({ ...stats }) };
}

class Recorder {
  constructor(server, sender, options) {
    this.server = server;
    this.sender = sender;
    this.connectionId = randomUUID();
    this.recordArguments = options.recordArguments ?? false;
    this.redact = options.redact;
    this.serverVersion = options.serverVersion;
    this.userId = options.userId;
    this.attributes = options.attributes;
    this.onError = options.onError ?? (() => {});
  }

  wrap(method, handler) {
    const rec = this;
    return function instrumentedHandler(request, extra) {
      const started = Date.now();
      const t0 = performance.now();
      let out;
      try {
        out = handler.call(this, request, extra);
      } catch (err) {
        rec.record(method, request, extra, started, t0, undefined, err);
        throw err;
      }
      if (out && typeof out.then === "function") {
        return out.then(
          (result) => {
            rec.record(method, request, extra, started, t0, result, undefined);
            return result;
          },
          (err) => {
            rec.record(method, request, extra, started, t0, undefined, err ?? new Error("rejected"));
            throw err;
          },
        );
      }
      rec.record(method, request, extra, started, t0, out, undefined);
      return out;
    };
  }

  // record builds the item of one handled request and queues it; nothing in
  // it may throw into the server.
  record(method, request, extra, started, t0, result, err) {
    try {
      const durationMs = performance.now() - t0;
      const params = request?.params ?? {};
      const client = method === "initialize" ? params.clientInfo : this.server.getClientVersion?.();
      const item = {
        id: randomUUID(),
        timestamp: new Date(started).toISOString(),
        session_id: str(extra?.sessionId) || this.connectionId,
        method: String(request?.method ?? method),
        duration_ms: Math.max(0, durationMs),
        status: "ok",
      };
      const name = targetName(method, params);
      if (name) item.name = name;
      if (client?.name) item.client_name = String(client.name);
      if (client?.version) item.client_version = String(client.version);
      const serverVersion = this.serverVersion ?? this.server._serverInfo?.version;
      if (serverVersion) item.server_version = String(serverVersion);
      if (this.userId) {
        const u = this.userId(request, extra);
        if (u) item.user_id = String(u);
      }
      if (err !== undefined) {
        item.status = "error";
        item.error_type = errorType(err);
        item.error_message = cut(err?.message ?? String(err), MAX_MESSAGE);
      } else if (result?.isError === true) {
        item.status = "error";
        item.error_type = TOOL_ERROR;
        const text = Array.isArray(result.content) ? result.content.find((c) => c?.type === "text")?.text : undefined;
        if (text) item.error_message = cut(String(text), MAX_MESSAGE);
      }
      const attrs = this.#attributes(method, params, request, extra);
      if (attrs) item.attributes = attrs;
      this.sender.add(item);
    } catch (e) {
      safe(this.onError, e);
    }
  }

  #attributes(method, params, request, extra) {
    const out = {};
    let n = 0;
    const put = (k, v) => {
      if (n >= MAX_ATTRIBUTES || v === undefined || v === null) return;
      const s = typeof v === "string" ? v : JSON.stringify(v);
      if (s === undefined) return;
      out[k] = cut(s, MAX_ATTRIBUTE_VALUE);
      n++;
    };
    if (this.attributes) {
      for (const [k, v] of Object.entries(this.attributes(request, extra) ?? {})) put(k, v);
    }
    if (this.recordArguments && method === "tools/call" && params.arguments && typeof params.arguments === "object") {
      let args = params.arguments;
      if (this.redact) {
        // The hook gets a copy, so it may change it freely; what it returns
        // is sent (nothing when it returns null or undefined).
        args = this.redact(structuredClone(args), { tool: params.name, request });
      }
      if (args && typeof args === "object") {
        for (const [k, v] of Object.entries(args)) put(`arg.${k}`, v);
      }
    }
    return n > 0 ? out : undefined;
  }
}

function targetName(method, params) {
  switch (method) {
    case "tools/call":
    case "prompts/get":
      return str(params.name);
    case "resources/read":
    case "resources/subscribe":
    case "resources/unsubscribe":
      return str(params.uri);
  }
  return undefined;
}

// errorType is the error_type of a thrown error: the JSON-RPC code of an
// McpError (as the semantic conventions' error.type has it), else the
// error's class name.
function errorType(err) {
  if (typeof err?.code === "number" && Number.isInteger(err.code)) return String(err.code);
  return str(err?.name) || str(err?.constructor?.name) || "Error";
}

function str(v) {
  return typeof v === "string" ? v : v == null ? "" : String(v);
}

function cut(s, n) {
  return s.length > n ? s.slice(0, n) : s;
}

function safe(f, arg) {
  try {
    f(arg);
  } catch {}
}
