"use strict";
// Why a request failed (error_kind), how big its answer was
// (response_bytes) and which arguments it had, without sending them
// (args_hash): the fields docs/sdks.md describes. errorKind follows the
// service's own derivation (analytics/errorderive.go) so that an item
// reads the same whether the SDK or the service classified it.
const { createHmac, randomBytes } = require("node:crypto");

const ERROR_KINDS = [
  "tool_error",
  "exception",
  "invalid_params",
  "unknown_tool",
  "method_not_found",
  "timeout",
  "cancelled",
  "auth",
  "internal",
  "other",
];

/** ARGS_HASH_LENGTH is the length of an args_hash, hex characters (128 bits). */
const ARGS_HASH_LENGTH = 32;

// The process's args_hash key: random, never sent, so the service cannot
// test a guess of the arguments against a hash. Equal arguments hash equal
// within the process (every session it serves).
const PROCESS_KEY = randomBytes(32);

/**
 * argsHash is the args_hash of a call's arguments: HMAC-SHA256 under key
 * (the process's random key unless the caller gives one) of the arguments'
 * canonical JSON (keys sorted at every level, no whitespace; no arguments
 * are {}), its first 32 hex characters.
 */
function argsHash(args, canonicalJSON, key = PROCESS_KEY) {
  const a = args && typeof args === "object" ? args : {};
  return createHmac("sha256", key).update(canonicalJSON(a)).digest("hex").slice(0, ARGS_HASH_LENGTH);
}

/** responseBytes is the size in bytes of a result as JSON, or undefined. */
function responseBytes(result) {
  if (result === undefined) return undefined;
  try {
    const s = JSON.stringify(result);
    return s === undefined ? undefined : Buffer.byteLength(s, "utf8");
  } catch {
    return undefined;
  }
}

// JSON-RPC codes that tell a kind.
const CODE_KINDS = new Map([
  [-32601, "method_not_found"],
  [-32602, "invalid_params"],
  [-32603, "internal"],
  [-32001, "timeout"], // the TypeScript SDK's RequestTimeout
  [-32800, "cancelled"],
]);

/**
 * errorKind is the kind of a failed request from its method, its error
 * type (a JSON-RPC code as a string, "tool_error", an error class) and its
 * message: the SDKs' own "not found" and validation messages first, then
 * the code, then the class. It never returns undefined.
 */
function errorKind(method, errorType, message) {
  let msg = String(message ?? "").trim();
  const typ = String(errorType ?? "").trim();
  let code = jsonrpcCode(typ);
  const m = /^MCP error (-3\d{4}): ([\s\S]*)$/.exec(msg); // 1.x McpError as text
  if (m && jsonrpcCode(m[1]) !== undefined) {
    msg = m[2];
    code ??= Number(m[1]);
  }
  if (unknownName(method, msg) || (code === -32002 && method === "resources/read")) return "unknown_tool";
  if (refusedArguments(msg)) return "invalid_params";
  if (code !== undefined) {
    if (code === -32001 && msg.toLowerCase() === "unknown error") return "other";
    return CODE_KINDS.get(code) ?? "other";
  }
  if (typ === "tool_error") return msg.startsWith("Error executing tool ") ? "exception" : "tool_error";
  if (/^-?\d+$/.test(typ)) return httpStatusKind(Number(typ));
  if (typ === "" || typ === "_OTHER" || ["mcperror", "mcp.shared.exceptions.mcperror", "protocolerror"].includes(typ.toLowerCase())) {
    return messageKind(msg);
  }
  return typeNameKind(typ) ?? (ERROR_KINDS.includes(typ) ? typ : "exception");
}

function httpStatusKind(n) {
  if (n === 401 || n === 403) return "auth";
  if (n === 408 || n === 504) return "timeout";
  if (n === 499) return "cancelled";
  return n >= 500 && n <= 599 ? "internal" : "other";
}

// messageKind is the kind a failure without a type says in its message.
function messageKind(msg) {
  const m = msg.toLowerCase();
  if (m.includes("context deadline exceeded") || m.includes("timed out")) return "timeout";
  if (m.includes("context canceled") || m.includes("request cancelled")) return "cancelled";
  return "other";
}

function jsonrpcCode(s) {
  if (!/^-3\d{4}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= -32899 && n <= -32000 ? n : undefined;
}

function unknownName(method, msg) {
  const noun = { "tools/call": "Tool", "prompts/get": "Prompt", "resources/read": "Resource" }[method];
  if (!noun) return false;
  if (method === "resources/read" && (msg === "Resource not found" || msg.startsWith("Resource not found: "))) return true;
  if (msg.startsWith(noun + " ") && (msg.endsWith(" not found") || msg.endsWith(" disabled"))) {
    return !msg.startsWith("Resource template ");
  }
  const lower = noun.toLowerCase();
  return msg.startsWith(`unknown ${lower} "`) || msg.startsWith(`Unknown ${lower}: `);
}

function refusedArguments(msg) {
  return (
    ["Input validation error: ", "Invalid arguments for tool ", "Invalid arguments for prompt ", 'validating "arguments": ', "Invalid request parameters"].some(
      (p) => msg.startsWith(p),
    ) || / validation errors? for /.test(msg)
  );
}

/** typeNameKind is the kind an error class's name says, if any. */
function typeNameKind(name) {
  const t = String(name ?? "").toLowerCase();
  if (/timeout|timedout|deadline/.test(t)) return "timeout";
  if (/cancel|abort/.test(t)) return "cancelled";
  if (/unauthori|unauthenticated|forbidden|authentication|permissiondenied/.test(t)) return "auth";
  return undefined;
}

/**
 * thrownKind is the kind of an error a handler threw: a protocol error
 * (an McpError or ProtocolError, with a numeric code) is the SDK's answer,
 * not a throw of the handler's own, so it gets undefined; an error whose
 * class names a timeout, cancellation or authentication failure that kind;
 * any other "exception".
 */
function thrownKind(e) {
  if (typeof e?.code === "number") return undefined;
  return typeNameKind(e?.name) ?? "exception";
}

const VALUE = "<value>";
const MAX_SCRUBBED_VALUES = 256;

/**
 * scrubValues replaces, in a validation message, every argument value it
 * quotes with "<value>": the message keeps which property and which rule
 * refused the call, never what the agent sent. Leaf values (strings,
 * numbers, booleans) are matched whole, between characters that are not
 * letters, digits, "_" or ".", longest first, so "7" is not taken out of
 * "<=70" and a property named like a value keeps its name when quoted as
 * a path (["days"]) only if no argument has that value.
 */
function scrubValues(message, args) {
  const values = new Set();
  const walk = (v, depth) => {
    if (values.size >= MAX_SCRUBBED_VALUES || depth > 32) return;
    if (typeof v === "string") {
      if (v !== "") values.add(v);
    } else if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") {
      values.add(String(v));
    } else if (v && typeof v === "object") {
      for (const x of Array.isArray(v) ? v : Object.values(v)) walk(x, depth + 1);
    }
  };
  walk(args, 0);
  let out = String(message);
  for (const v of [...values].sort((a, b) => b.length - a.length)) {
    out = replaceWhole(out, v);
    const quoted = JSON.stringify(v).slice(1, -1); // as it appears inside JSON text
    if (quoted !== v) out = replaceWhole(out, quoted);
  }
  return out;
}

function replaceWhole(s, v) {
  const word = (c) => c !== undefined && /[\p{L}\p{N}_.]/u.test(c);
  let from = 0;
  let out = "";
  for (;;) {
    const i = s.indexOf(v, from);
    if (i < 0) return out + s.slice(from);
    const before = s[i - 1];
    const after = s[i + v.length];
    // A value's own edge that is no word character needs no boundary.
    const okBefore = !word(v[0]) || !word(before);
    const okAfter = !word(v[v.length - 1]) || !word(after);
    if (okBefore && okAfter) {
      out += s.slice(from, i) + VALUE;
    } else {
      out += s.slice(from, i + v.length);
    }
    from = i + v.length;
  }
}

module.exports = { ERROR_KINDS, ARGS_HASH_LENGTH, argsHash, responseBytes, errorKind, thrownKind, scrubValues };
