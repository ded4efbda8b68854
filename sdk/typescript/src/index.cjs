"use strict";
// @mcpscope/telemetry: one call records every request an MCP server handles
// and sends it to the telemetry service. It works with servers of
// @modelcontextprotocol/sdk 1.x and @modelcontextprotocol/server 2.x, on
// every transport, under the 2025 protocol (initialize) and the 2026-07-28
// one (server/discover, client identity in every request's _meta).
//
//   const { instrument } = require("@mcpscope/telemetry"); // or import
//   instrument(server); // key from TELEMETRY_KEY, endpoint from TELEMETRY_ENDPOINT
//
// It observes the server's transport, the SDKs' public extension point:
// the JSON-RPC requests the transport delivers (onmessage) and the answers
// the server sends back (send). It touches no private field of either SDK
// and needs no knowledge of how handlers are stored.
const { createHash, randomUUID } = require("node:crypto");
const { performance } = require("node:perf_hooks");
const { Sender, DEFAULTS, MAX_BATCH_ITEMS, MAX_BODY_BYTES, retryAfterMs, shared } = require("./sender.cjs");
const { argsHash, errorKind, responseBytes, scrubValues, thrownKind } = require("./failure.cjs");

/** error_type of a tool result with isError (the semantic conventions' value). */
const TOOL_ERROR = "tool_error";

const MAX_ATTRIBUTES = 32;
const MAX_ATTRIBUTE_VALUE = 256;
const MAX_MESSAGE = 1024;
const INSTRUMENTED = Symbol.for("mcpscope.telemetry.instrumented");
const TRANSPORT = Symbol.for("mcpscope.telemetry.transport");

// The 2026-07-28 protocol's per-request and per-result _meta keys.
const META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo";
const META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion";
const META_SERVER_INFO = "io.modelcontextprotocol/serverInfo";

/**
 * Instruments an McpServer or a Server of @modelcontextprotocol/sdk (1.x) or
 * @modelcontextprotocol/server (2.x): every request it handles on every
 * transport it connects to from now on (and on the one it is connected to)
 * becomes a telemetry item. Call it once per server instance, also when a
 * stateless HTTP server builds an instance per request: all instances of a
 * process share one sender per endpoint and key. Returns a handle to flush
 * or close that sender.
 */
function instrument(server, options = {}) {
  const inner = lowLevelServer(server);
  if (inner[INSTRUMENTED]) return inner[INSTRUMENTED];
  const env = options.env ?? process.env;
  const key = options.key ?? env.TELEMETRY_KEY;
  const endpoint = options.endpoint ?? env.TELEMETRY_ENDPOINT ?? DEFAULTS.endpoint;
  if (!key) {
    const err = new Error("@mcpscope/telemetry: no ingest key (option key or TELEMETRY_KEY); nothing is recorded");
    if (options.onError) safe(options.onError, err);
    else warnOnce(err.message);
    return disabledHandle();
  }
  const sender = shared({ ...options, endpoint, key });
  sender.inventory ??= new Inventory(sender, options); // per process, like the sender
  const recorder = new Recorder(sender, options, ownServerVersion(inner));
  watchThrows(server, inner, recorder);

  const connect = inner.connect;
  inner.connect = function (transport, ...rest) {
    recorder.attach(transport);
    return connect.call(this, transport, ...rest);
  };
  // Already connected: observe that transport too (its onmessage is set).
  let current;
  try {
    current = inner.transport;
  } catch {}
  if (current) recorder.attach(current);

  const handle = {
    endpoint,
    flush: () => sender.flush(),
    close: () => sender.close(),
    stats: () => ({ ...sender.stats, queueLength: sender.queue.length }),
  };
  inner[INSTRUMENTED] = handle;
  return handle;
}

// watchThrows tells the recorder which requests failed because a handler
// threw: the SDKs answer a throw in a tool as an isError result (and a
// throw elsewhere as -32603), indistinguishable on the wire from a tool
// that returns isError. McpServer runs every tool through its
// executeToolHandler (both SDK lines); McpServer's prompts/get and
// resources/read handlers set before instrument are wrapped in place, and
// other handlers when set (setRequestHandler) after instrument.
function watchThrows(server, inner, recorder) {
  const mark = (ctx, e) => {
    const kind = thrownKind(e);
    if (kind) recorder.markThrown(ctx, kind);
  };
  if (server !== inner && typeof server.executeToolHandler === "function") {
    const exec = server.executeToolHandler;
    server.executeToolHandler = async function (tool, args, ctx, ...rest) {
      try {
        return await exec.call(this, tool, args, ctx, ...rest);
      } catch (e) {
        mark(ctx, e);
        throw e;
      }
    };
  }
  const guard = (h) =>
    async function (request, ctx, ...rest) {
      try {
        return await h.call(this, request, ctx, ...rest);
      } catch (e) {
        mark(ctx, e);
        throw e;
      }
    };
  // Handlers set before instrument: McpServer sets its prompts/get and
  // resources/read handlers when the first prompt or resource is
  // registered (both SDK lines keep them in _requestHandlers).
  if (inner._requestHandlers instanceof Map) {
    for (const method of ["prompts/get", "resources/read"]) {
      const h = inner._requestHandlers.get(method);
      if (typeof h === "function") inner._requestHandlers.set(method, guard(h));
    }
  }
  const set = inner.setRequestHandler;
  inner.setRequestHandler = function (...args) {
    const h = args[args.length - 1];
    if (typeof h === "function") args[args.length - 1] = guard(h);
    return set.apply(this, args);
  };
}

function lowLevelServer(server) {
  // McpServer keeps its Server in .server (both SDK lines); a Server is a
  // protocol endpoint with connect and setRequestHandler.
  const isServer = (s) => typeof s?.connect === "function" && typeof s?.setRequestHandler === "function";
  if (isServer(server?.server)) return server.server;
  if (isServer(server)) return server;
  throw new TypeError("instrument: expected an McpServer or Server of @modelcontextprotocol/sdk or @modelcontextprotocol/server");
}

// ownServerVersion is the version the server was created with, for the
// requests whose answer does not name it (2025 protocol without an
// initialize on this instance: stateless HTTP). Version 2 offers it through
// the protected hook that stamps results (_outboundServerInfo); version 1
// only in the private field _serverInfo (test "server version without
// initialize" pins both for the tested releases).
function ownServerVersion(server) {
  try {
    const info = typeof server._outboundServerInfo === "function" ? server._outboundServerInfo() : server._serverInfo;
    return typeof info?.version === "string" ? info.version : undefined;
  } catch {
    return undefined;
  }
}

function disabledHandle() {
  const stats = { queued: 0, sent: 0, accepted: 0, dropped: 0, failed: 0, requests: 0, retries: 0, queueLength: 0 };
  return { endpoint: undefined, flush: async () => {}, close: async () => {}, stats: () => ({ ...stats }) };
}

class Recorder {
  constructor(sender, options, serverVersion) {
    this.sender = sender;
    this.recordArguments = options.recordArguments ?? false;
    this.redact = options.redact;
    this.serverVersion = options.serverVersion;
    this.ownVersion = serverVersion;
    this.userId = options.userId;
    this.attributes = options.attributes;
    this.onError = options.onError ?? (() => {});
    this.reportInventory = options.inventory ?? true;
    this.argsHashKey = options.argsHashKey; // undefined: the process's random key
    this.thrown = new Map(); // request key -> error kind, until answered
  }

  // markThrown notes that the handler of the request of ctx (the handler
  // context: requestId in 1.x, mcpReq.id in 2.x) threw an error of kind.
  markThrown(ctx, kind) {
    const id = ctx?.requestId ?? ctx?.mcpReq?.id;
    if (id === undefined) return;
    if (this.thrown.size >= 1000) this.thrown.clear(); // bounded: marks of unanswered requests
    this.thrown.set(requestKey(ctx?.sessionId, id), kind);
  }

  // attach observes one transport: requests in, answers out. The state of
  // the connection (its id, the client and protocol of its initialize)
  // lives with it.
  attach(transport) {
    if (!transport || transport[TRANSPORT]) return;
    const conn = { id: randomUUID(), client: undefined, protocol: undefined, serverVersion: undefined, pending: new Map(), seen: new WeakSet() };
    transport[TRANSPORT] = conn;
    conn.transport = transport;
    const rec = this;
    const wrap = (h) =>
      typeof h === "function"
        ? function onmessage(message, extra) {
            rec.#received(conn, message, extra);
            return h.call(this, message, extra);
          }
        : h;
    // onmessage is a plain field on most transports, an accessor on some
    // (the Node Streamable HTTP transport of version 1 forwards it to an
    // inner transport): keep whichever it is, storing the wrapped handler.
    const inherited = accessorOf(transport, "onmessage");
    if (inherited) {
      const current = inherited.get?.call(transport);
      if (current) inherited.set?.call(transport, wrap(current));
      Object.defineProperty(transport, "onmessage", {
        configurable: true,
        enumerable: true,
        get: () => inherited.get?.call(transport),
        set: (h) => inherited.set?.call(transport, wrap(h)),
      });
    } else {
      let wrapped = wrap(transport.onmessage);
      Object.defineProperty(transport, "onmessage", {
        configurable: true,
        enumerable: true,
        get: () => wrapped,
        set: (h) => {
          wrapped = wrap(h);
        },
      });
    }
    const send = transport.send;
    transport.send = function (message, ...rest) {
      rec.#answered(transport, conn, message);
      return send.call(this, message, ...rest);
    };
  }

  #received(conn, message, extra) {
    try {
      // Notifications (no id) are not requests; answers to the server's
      // own requests have no method.
      if (message?.method === "notifications/cancelled") return this.#cancelled(conn, message.params);
      if (typeof message?.method !== "string" || message.id === undefined || message.id === null) return;
      // A handler chained after another (the SDK keeps one it replaces)
      // sees the same message twice.
      if (conn.seen.has(message)) return;
      conn.seen.add(message);
      const params = message.params ?? {};
      if (message.method === "initialize" && params.clientInfo) conn.client = params.clientInfo;
      conn.pending.set(message.id, { message, extra, started: Date.now(), t0: performance.now() });
    } catch (e) {
      safe(this.onError, e);
    }
  }

  // #cancelled records a request the client cancelled: the SDKs send no
  // answer to it, so it is recorded now, as an error of kind cancelled.
  #cancelled(conn, params) {
    const req = conn.pending.get(params?.requestId);
    if (!req || !conn.transport) return;
    conn.pending.delete(params.requestId);
    const reason = typeof params.reason === "string" && params.reason ? params.reason : "cancelled by the client";
    this.#record(conn.transport, conn, req, { error: { code: "cancelled", message: reason } }, "cancelled");
  }

  #answered(transport, conn, message) {
    try {
      if (message?.id === undefined || !("result" in message || "error" in message)) return;
      const req = conn.pending.get(message.id);
      if (!req) return;
      conn.pending.delete(message.id);
      this.#record(transport, conn, req, message);
    } catch (e) {
      safe(this.onError, e);
    }
  }

  // #record builds the item of one answered request and queues it.
  #record(transport, conn, req, answer, kind) {
    const durationMs = performance.now() - req.t0;
    const { message: request, extra } = req;
    const method = request.method;
    const params = request.params ?? {};
    const meta = params._meta ?? {};
    const result = answer.result;
    if (method === "initialize" && result) {
      if (typeof result.protocolVersion === "string") conn.protocol = result.protocolVersion;
      if (typeof result.serverInfo?.version === "string") conn.serverVersion = result.serverInfo.version;
    }
    const stamped = result?._meta?.[META_SERVER_INFO]?.version;
    const client = meta[META_CLIENT_INFO] ?? (method === "initialize" ? params.clientInfo : conn.client);
    const item = {
      id: randomUUID(),
      timestamp: new Date(req.started).toISOString(),
      method: String(method),
      duration_ms: Math.max(0, durationMs),
      status: "ok",
    };
    const name = targetName(method, params);
    if (name) item.name = name;
    if (client?.name) item.client_name = String(client.name);
    if (client?.version) item.client_version = String(client.version);
    const serverVersion = this.serverVersion ?? stamped ?? conn.serverVersion ?? this.ownVersion;
    if (serverVersion) item.server_version = String(serverVersion);
    const protocol = meta[META_PROTOCOL_VERSION] ?? conn.protocol;
    if (protocol) item.protocol_version = String(protocol);
    if (this.userId) {
      try {
        const u = this.userId(request, extra);
        if (u) item.user_id = String(u);
      } catch (e) {
        safe(this.onError, e);
      }
    }
    const session = sessionOf(transport, conn, extra);
    if (session) item.session_id = session;
    const thrownKey = requestKey(transport.sessionId, request.id);
    const thrown = this.thrown.get(thrownKey);
    this.thrown.delete(thrownKey);
    let message;
    if (answer.error) {
      item.status = "error";
      item.error_type = String(answer.error.code ?? "error");
      message = answer.error.message;
    } else if (result?.isError === true) {
      item.status = "error";
      item.error_type = TOOL_ERROR;
      message = Array.isArray(result.content) ? result.content.find((c) => c?.type === "text")?.text : undefined;
    }
    if (item.status === "error") {
      const text = message ? String(message) : "";
      item.error_kind = kind ?? errorKind(method, item.error_type, text);
      // A throw is an exception unless the SDK's answer says it was the
      // arguments or the name (a handler may also refuse them by throwing
      // an McpError, which is no throw of its own).
      if (thrown && (item.error_kind === "tool_error" || item.error_kind === "internal")) item.error_kind = thrown;
      if (text) {
        // Refused arguments: keep which property and rule, never the values.
        const scrubbed = item.error_kind === "invalid_params" ? scrubValues(cut(text, 4 * MAX_MESSAGE), params.arguments) : text;
        item.error_message = cut(scrubbed, MAX_MESSAGE);
      }
    }
    if (result !== undefined) {
      const n = responseBytes(result);
      if (n !== undefined) item.response_bytes = n;
    }
    if (method === "tools/call") item.args_hash = argsHash(params.arguments, canonicalJSON, this.argsHashKey);
    const attrs = this.#attributes(method, params, request, extra);
    if (attrs) item.attributes = attrs;
    this.sender.add(item);
    if (method === "tools/list" && Array.isArray(result?.tools) && this.reportInventory) {
      const tools = this.sender.inventory.walks.page(params.cursor, result.tools, result.nextCursor);
      if (tools) this.sender.inventory.report(tools, item.server_version, item.protocol_version);
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
    try {
      if (this.attributes) {
        for (const [k, v] of Object.entries(this.attributes(request, extra) ?? {})) put(k, v);
      }
      if (this.recordArguments && method === "tools/call" && params.arguments && typeof params.arguments === "object") {
        let args = params.arguments;
        if (this.redact) {
          // The hook gets a copy, so it may change it freely; what it
          // returns is sent (nothing when it returns null or undefined).
          args = this.redact(structuredClone(args), { tool: params.name, request });
        }
        if (args && typeof args === "object") {
          for (const [k, v] of Object.entries(args)) put(`arg.${k}`, v);
        }
      }
    } catch (e) {
      safe(this.onError, e);
      return undefined;
    }
    return n > 0 ? out : undefined;
  }
}

// requestKey identifies a request among those a server is handling: its
// JSON-RPC id within its session.
function requestKey(sessionId, id) {
  return `${typeof sessionId === "string" ? sessionId : ""}\u0000${typeof id}:${String(id)}`;
}

// canonicalJSON is JSON with object keys sorted recursively and no
// whitespace; undefined members are left out, as JSON.stringify does.
function canonicalJSON(v) {
  if (Array.isArray(v)) return "[" + v.map((x) => (x === undefined ? "null" : canonicalJSON(x))).join(",") + "]";
  if (v && typeof v === "object") {
    const keys = Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonicalJSON(v[k])).join(",") + "}";
  }
  return JSON.stringify(v) ?? "null";
}

/**
 * toolSchemaHash is the schema_hash of a tool of a tools/list answer: the
 * SHA-256 (hex) of the canonical JSON of {description, inputSchema,
 * annotations}, absent members left out. The Go SDK computes the same.
 */
function toolSchemaHash(tool) {
  const part = {};
  for (const k of ["description", "inputSchema", "annotations"]) if (tool?.[k] !== undefined) part[k] = tool[k];
  return createHash("sha256").update(canonicalJSON(part)).digest("hex");
}

const INVENTORY_RESEND_MS = 3600 * 1000;
// The definitions an inventory report carries (docs/sdks.md): a tool's
// when its JSON is at most 64 KiB (what the service keeps), all of them
// while their sum stays within 1 MiB (a report stays far below the
// service's 4 MiB body limit); the other tools are reported by hash only.
const INVENTORY_DEFINITION_MAX = 64 * 1024;
const INVENTORY_DEFINITIONS_BUDGET = 1024 * 1024;

// Bounds of the paginated walks followed at once (ToolWalks).
const MAX_WALKS = 64;
const WALK_TTL_MS = 10 * 60 * 1000;
const MAX_INVENTORY_TOOLS = 1000;

// ToolWalks turns tools/list pages into complete lists: a list is whole
// when a request without a cursor is answered without nextCursor, or when
// the last page of a walk is (each page's answer names the cursor of the
// next). A page alone is never reported as the tool set, or a paginating
// server would show tools removed and added back at every walk. Walks are
// followed by the cursor each awaits, process-wide, so the pages of a
// stateless HTTP client (a server instance per request) join up too.
class ToolWalks {
  constructor() {
    this.byNext = new Map(); // awaited cursor -> { tools, at }
  }

  /** page takes an answered page; returns the whole list when it
   * completes one, else undefined. */
  page(cursor, tools, nextCursor, now = Date.now()) {
    const next = typeof nextCursor === "string" && nextCursor !== "" ? nextCursor : undefined;
    let walk;
    if (cursor === undefined || cursor === null || cursor === "") {
      if (next === undefined) return tools.length <= MAX_INVENTORY_TOOLS ? tools : undefined;
      walk = { tools: [], at: now };
    } else {
      walk = this.byNext.get(cursor);
      this.byNext.delete(cursor);
      if (!walk || now - walk.at > WALK_TTL_MS) return undefined; // a page of a walk whose start this process did not answer
    }
    walk.tools = walk.tools.concat(tools);
    walk.at = now;
    if (walk.tools.length > MAX_INVENTORY_TOOLS) return undefined;
    if (next === undefined) return walk.tools;
    this.byNext.delete(next);
    this.byNext.set(next, walk); // Map order: the oldest first
    while (this.byNext.size > MAX_WALKS) this.byNext.delete(this.byNext.keys().next().value);
    return undefined;
  }
}

// Inventory reports the tools a server lists to POST /v1/ingest/inventory:
// each complete list (ToolWalks), once per distinct list per process,
// again at most hourly when unchanged.
class Inventory {
  constructor(sender, options) {
    this.sender = sender;
    this.walks = new ToolWalks();
    this.withSchemas = options.inventorySchemas ?? true;
    this.url = sender.url.replace(/\/ingest$/, "/ingest/inventory");
    this.sent = new Map(); // body → last sent (ms)
  }

  report(tools, serverVersion, protocolVersion) {
    try {
      let budget = INVENTORY_DEFINITIONS_BUDGET;
      const definition = (t) => {
        if (!this.withSchemas) return {};
        const schema = pick(t, ["description", "inputSchema", "outputSchema", "annotations"]);
        const size = Buffer.byteLength(JSON.stringify(schema));
        if (size > INVENTORY_DEFINITION_MAX || size > budget) return {};
        budget -= size;
        return { schema };
      };
      const body = {
        ...(serverVersion ? { server_version: String(serverVersion) } : {}),
        ...(protocolVersion ? { protocol_version: String(protocolVersion) } : {}),
        tools: tools
          .filter((t) => typeof t?.name === "string")
          .map((t) => ({
            name: t.name,
            schema_hash: toolSchemaHash(t),
            definition_bytes: Buffer.byteLength(JSON.stringify(t)), // what an agent pays for the tool in context
            ...definition(t),
          })),
      };
      const text = JSON.stringify(body);
      const last = this.sent.get(text);
      const now = Date.now();
      if (last !== undefined && now - last < INVENTORY_RESEND_MS) return;
      this.sent.set(text, now);
      if (this.sent.size > 100) this.sent.delete(this.sent.keys().next().value); // bounded
      this.sender.post(this.url, text).catch(() => this.sent.delete(text)); // not sent: try again next time
    } catch {}
  }
}

function pick(o, keys) {
  const out = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

// sessionOf is the transport's session (Streamable HTTP with sessions);
// for an HTTP request without one (stateless), none: the service derives
// the session from the client's identity and the idle timeout
// (docs/sessions.md), never one per request; otherwise (stdio, in-memory)
// the connection's own id.
function sessionOf(transport, conn, extra) {
  const sid = transport.sessionId;
  if (typeof sid === "string" && sid) return sid;
  if (extra?.requestInfo || extra?.request) return undefined;
  return conn.id;
}

// accessorOf is the getter/setter pair of a property on obj's prototype
// chain, if it is one.
function accessorOf(obj, prop) {
  for (let o = obj; o; o = Object.getPrototypeOf(o)) {
    const d = Object.getOwnPropertyDescriptor(o, prop);
    if (d) return d.get || d.set ? d : undefined;
  }
  return undefined;
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

let warned = false;
function warnOnce(message) {
  if (warned) return;
  warned = true;
  process.emitWarning(message, "McpscopeTelemetryWarning");
}

module.exports = { instrument, toolSchemaHash, canonicalJSON, TOOL_ERROR, Sender, DEFAULTS, MAX_BATCH_ITEMS, MAX_BODY_BYTES, retryAfterMs };
