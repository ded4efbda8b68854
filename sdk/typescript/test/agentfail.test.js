// What agents do wrong, as the SDK records it: real servers of
// @modelcontextprotocol/sdk 1.x and @modelcontextprotocol/server 2.x,
// driven by their real clients, posting to a local ingest endpoint. Every
// tools/call item is checked: error_kind, the refusal's message without
// the argument values, response_bytes, and args_hash (equal for the same
// arguments in any key order, different otherwise).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer as McpServer1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server as Server1 } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { McpServer as McpServer2, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Client as Client2, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { z } from "zod";
import { instrument } from "../src/index.js";
import { BIG, LOOP, REFUSED, agentCalls, agentMisses, makeWeatherServer, receiver } from "./fixtures/agentfail.js";

const hex32 = /^[0-9a-f]{32}$/;
const bytes = (result) => Buffer.byteLength(JSON.stringify(result));
const text = (t, isError) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError: true } : {}) });

/** check asserts the tools/call items of one run of agentCalls. */
function check(items, { unknownMessage, unknownBytes, refusedMessage, refusedBytes, refuseBytes, bigBytes, loopBytes }) {
  const calls = items.filter((it) => it.method === "tools/call");
  assert.equal(calls.length, 12, JSON.stringify(items.map((i) => i.method)));
  const [typo, refused, explode, refuse, big, ...rest] = calls;
  const loop = rest.slice(0, 5);
  const [reordered, other] = rest.slice(5);

  assert.deepEqual(pick(typo), { name: "get_forcast", status: "error", error_kind: "unknown_tool", error_message: unknownMessage });
  assert.equal(typo.response_bytes, unknownBytes);

  assert.equal(refused.error_kind, "invalid_params");
  assert.equal(refused.status, "error");
  assert.equal(refused.error_message, refusedMessage, "which property (days) and rule (at most 7)");
  assert.ok(!refused.error_message.includes(REFUSED.city) && !/\b99\b/.test(refused.error_message), refused.error_message);
  assert.equal(refused.response_bytes, refusedBytes);

  assert.deepEqual(pick(explode), { name: "explode", status: "error", error_kind: "exception", error_message: "weather backend exploded" });
  assert.deepEqual(pick(refuse), { name: "refuse", status: "error", error_kind: "tool_error", error_message: "no data for that region" });
  assert.equal(refuse.response_bytes, refuseBytes);
  assert.deepEqual(pick(big), { name: "big_report", status: "ok" });
  assert.equal(big.response_bytes, bigBytes);
  assert.ok(big.response_bytes > 100 * 1024);

  for (const it of loop) {
    assert.deepEqual(pick(it), { name: "get_forecast", status: "ok" });
    assert.equal(it.response_bytes, loopBytes);
    assert.match(it.args_hash, hex32);
    assert.equal(it.args_hash, loop[0].args_hash, "the same call five times hashes equal");
  }
  assert.equal(reordered.args_hash, loop[0].args_hash, "canonical: key order does not count");
  assert.equal(typo.args_hash, loop[0].args_hash, "the typo had the same arguments");
  assert.notEqual(other.args_hash, loop[0].args_hash);
  assert.notEqual(refused.args_hash, loop[0].args_hash);
  assert.equal(explode.args_hash, refuse.args_hash, "{} and {}");
  // The arguments never leave the process.
  const wire = JSON.stringify(items);
  assert.ok(!wire.includes(REFUSED.city) && !wire.includes('"Paris"') && !wire.includes("Lyon"), "no argument value on the wire");
  for (const it of items.filter((i) => i.status === "ok")) assert.equal(it.error_kind, undefined);
  for (const it of items.filter((i) => i.method !== "tools/call")) assert.equal(it.args_hash, undefined);
  // A prompt and a resource the server does not have are unknown too.
  const misses = items.filter((i) => i.method === "prompts/get" || i.method === "resources/read").map((i) => [i.method, i.name, i.status, i.error_kind]);
  assert.deepEqual(misses, [
    ["prompts/get", "sumary", "error", "unknown_tool"],
    ["resources/read", "weather://station", "error", "unknown_tool"],
  ]);
}

/** wireResults is a fetch for the client transport that keeps the
 * JSON-RPC answers to tools/call as they came over the wire (JSON or SSE). */
function wireResults() {
  const calls = [];
  const f = async (url, init) => {
    const res = await fetch(url, init);
    const req = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
    if (req?.method !== "tools/call") return res;
    const body = await res.text();
    const msgs = (res.headers.get("content-type") ?? "").includes("text/event-stream")
      ? body.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)))
      : [JSON.parse(body)];
    calls.push(msgs.find((m) => m.id === req.id));
    return new Response(body, { status: res.status, headers: res.headers });
  };
  return { calls, fetch: f };
}

function pick(it) {
  const out = { name: it.name, status: it.status };
  if (it.error_kind !== undefined) out.error_kind = it.error_kind;
  if (it.error_message !== undefined) out.error_message = it.error_message;
  return out;
}

test("v1 McpServer (@modelcontextprotocol/sdk 1.x): kinds, sizes, args_hash", async () => {
  const rx = await receiver(createServer, gunzipSync);
  const server = makeWeatherServer({ McpServer: McpServer1, z });
  const telemetry = instrument(server, { key: "ik_test_v1", endpoint: rx.endpoint, flushIntervalMs: 600000 });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client1({ name: "agent", version: "1.0.0" });
  await client.connect(ct);
  const results = await agentCalls(client);
  await agentMisses(client);
  await client.close();
  await telemetry.flush();
  await rx.close();
  // 1.x answers an unknown tool and refused arguments as isError results,
  // "MCP error -32602: ..." texts.
  assert.equal(results[1].isError, true);
  check(rx.items, {
    unknownMessage: "MCP error -32602: Tool get_forcast not found",
    refusedMessage: "MCP error -32602: Input validation error: Invalid arguments for tool get_forecast: Too big: expected number to be <=7 at days",
    unknownBytes: bytes(results[0]),
    refusedBytes: bytes(results[1]),
    refuseBytes: bytes(text("no data for that region", true)),
    bigBytes: bytes(text(BIG)),
    loopBytes: bytes(text(`${LOOP.days} days of sun in ${LOOP.city}`)),
  });
});

test("v2 McpServer (@modelcontextprotocol/server 2.x), stateless HTTP: kinds, sizes, args_hash", async () => {
  const rx = await receiver(createServer, gunzipSync);
  const handles = [];
  const handler = createMcpHandler(() => {
    const server = makeWeatherServer({ McpServer: McpServer2, z });
    handles.push(instrument(server, { key: "ik_test_v2", endpoint: rx.endpoint, flushIntervalMs: 600000 }));
    return server;
  });
  const http = createServer(toNodeHandler(handler));
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  const client = new Client2({ name: "agent", version: "2.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const wire = wireResults();
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.address().port}/mcp`), { fetch: wire.fetch }));
  await agentCalls(client);
  await agentMisses(client);
  // The sizes are of the results as the server sent them (2026-07-28
  // results carry resultType, which the client's answer leaves out).
  const results = wire.calls;
  await client.close();
  await Promise.all([handler.close(), new Promise((r) => http.close(r))]);
  await handles[0].flush();
  await rx.close();
  // 2.x answers an unknown tool with a JSON-RPC error (no result, so no
  // size), refused arguments with an isError result.
  assert.ok(results[0].error, "get_forcast is a JSON-RPC error");
  assert.equal(results.length, 12);
  assert.equal(results[1].result.isError, true);
  check(rx.items, {
    unknownMessage: "Tool get_forcast not found",
    refusedMessage: "Input validation error: Invalid arguments for tool get_forecast: days: Too big: expected number to be <=7",
    unknownBytes: undefined,
    refusedBytes: bytes(results[1].result),
    refuseBytes: bytes(results[3].result),
    bigBytes: bytes(results[4].result),
    loopBytes: bytes(results[5].result),
  });
  assert.equal(rx.items.find((i) => i.name === "get_forcast").error_type, "-32602");
});

test("v1 low-level Server: a throwing handler is an exception, an McpError is not", async () => {
  const rx = await receiver(createServer, gunzipSync);
  const server = new Server1({ name: "low", version: "1.0.0" }, { capabilities: { tools: {} } });
  const telemetry = instrument(server, { key: "ik_test_low", endpoint: rx.endpoint, flushIntervalMs: 600000 });
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    if (req.params.name === "crash") throw new Error("null pointer");
    if (req.params.name === "slow") throw Object.assign(new Error("upstream took too long"), { name: "TimeoutError" });
    return { content: [{ type: "text", text: "ok" }] };
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client1({ name: "agent", version: "1.0.0" });
  await client.connect(ct);
  for (const name of ["crash", "slow", "fine"]) await client.callTool({ name, arguments: {} }).catch(() => {});
  await client.request({ method: "prompts/list" }, z.any()).catch(() => {});
  await client.close();
  await telemetry.flush();
  await rx.close();
  const kinds = rx.items.filter((i) => i.method !== "initialize").map((i) => [i.method, i.name ?? "", i.error_type ?? "", i.error_kind ?? ""]);
  assert.deepEqual(kinds, [
    ["tools/call", "crash", "-32603", "exception"],
    ["tools/call", "slow", "-32603", "timeout"],
    ["tools/call", "fine", "", ""],
    ["prompts/list", "", "-32601", "method_not_found"],
  ]);
});

test("v1 McpServer: a prompt or resource handler registered before instrument that throws is an exception", async () => {
  const rx = await receiver(createServer, gunzipSync);
  const server = new McpServer1({ name: "early", version: "1.0.0" });
  server.registerPrompt("broken", { description: "throws" }, async () => {
    throw new Error("template missing");
  });
  server.registerResource("broken", "file:///broken", { description: "throws" }, async () => {
    throw new Error("disk gone");
  });
  const telemetry = instrument(server, { key: "ik_test_early", endpoint: rx.endpoint, flushIntervalMs: 600000 });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client1({ name: "agent", version: "1.0.0" });
  await client.connect(ct);
  await client.getPrompt({ name: "broken" }).catch(() => {});
  await client.readResource({ uri: "file:///broken" }).catch(() => {});
  await client.getPrompt({ name: "absent" }).catch(() => {});
  await client.close();
  await telemetry.flush();
  await rx.close();
  const kinds = rx.items.filter((i) => i.method !== "initialize").map((i) => [i.method, i.error_kind ?? ""]);
  assert.deepEqual(kinds, [
    ["prompts/get", "exception"],
    ["resources/read", "exception"],
    ["prompts/get", "unknown_tool"],
  ]);
});

test("v1 McpServer: a call the client cancels is recorded, as cancelled", async () => {
  const rx = await receiver(createServer, gunzipSync);
  const server = new McpServer1({ name: "slow", version: "1.0.0" });
  let started;
  const running = new Promise((r) => (started = r));
  server.registerTool("slow_report", { description: "never ends by itself" }, async (_args, extra) => {
    started();
    await new Promise((r) => extra.signal.addEventListener("abort", r));
    return { content: [{ type: "text", text: "too late" }] };
  });
  const telemetry = instrument(server, { key: "ik_test_cancel", endpoint: rx.endpoint, flushIntervalMs: 600000 });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client1({ name: "agent", version: "1.0.0" });
  await client.connect(ct);
  const ac = new AbortController();
  const pending = client.callTool({ name: "slow_report", arguments: {} }, undefined, { signal: ac.signal }).catch((e) => e);
  await running;
  ac.abort("the user gave up");
  await pending;
  await new Promise((r) => setTimeout(r, 50)); // the notification crosses the transport
  await client.close();
  await telemetry.flush();
  await rx.close();
  const it = rx.items.find((i) => i.method === "tools/call");
  assert.deepEqual(pick(it), { name: "slow_report", status: "error", error_kind: "cancelled", error_message: "the user gave up" });
  assert.equal(it.error_type, "cancelled");
  assert.equal(rx.items.filter((i) => i.method === "tools/call").length, 1, "recorded once");
});
