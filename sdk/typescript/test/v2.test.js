// The SDK with @modelcontextprotocol/server 2.x and its client: stateless
// Streamable HTTP through createMcpHandler (a fresh McpServer per request,
// instrumented per request) under the 2026-07-28 protocol and the 2025 one,
// read back from the real service.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { instrument } from "../src/index.js";
import { clientInfo, makeServer } from "./fixtures/scenario.js";
import { api, base, eventually, newMcp, read, sessions, skip, tools, waitForCalls } from "./service.js";

/** capture is a fetch that sends for real and keeps every request's items. */
function capture() {
  const sent = [];
  let posts = 0;
  const f = async (url, init) => {
    posts++;
    sent.push(...JSON.parse(gunzipSync(init.body).toString()).items);
    return fetch(url, init);
  };
  return { sent, fetch: f, posts: () => posts };
}

/** serve runs createMcpHandler with a factory that builds and instruments
 * a fresh server per request, as a new user would write it. */
async function serve(options) {
  const handles = [];
  const handler = createMcpHandler(() => {
    const server = makeServer({ McpServer, z }, "7.1.0");
    handles.push(instrument(server, options));
    return server;
  });
  const http = createServer(toNodeHandler(handler));
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  const url = new URL(`http://127.0.0.1:${http.address().port}/mcp`);
  return { url, handles, built: () => handles.length, close: () => Promise.all([handler.close(), new Promise((r) => http.close(r))]) };
}

async function drive(url, info, mode, calls) {
  const client = new Client(info, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(url));
  for (let i = 0; i < calls; i++) await client.callTool({ name: "search", arguments: { q: `q${i}` } });
  await client.close();
}

test("v2 stateless, 2026-07-28: 34 calls from 2 clients make 1 sender and 2 sessions", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk v2 stateless modern");
  const wire = capture();
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on("warning", onWarning);
  const exitListeners = process.listenerCount("beforeExit");
  const srv = await serve({ key, endpoint: base, fetch: wire.fetch, flushIntervalMs: 600000 });
  const a = { name: "agent-a", version: "1.0.0" };
  const b = { name: "agent-b", version: "2.0.0" };
  await Promise.all([drive(srv.url, a, { pin: "2026-07-28" }, 17), drive(srv.url, b, { pin: "2026-07-28" }, 17)]);
  await srv.close();
  assert.ok(srv.built() >= 34, `${srv.built()} server instances`);
  assert.ok(process.listenerCount("beforeExit") <= exitListeners + 1, "one sender's listener, not one per request");
  // One sender: every instance's handle flushes the same queue, in one post.
  assert.equal(srv.handles[0].stats().queueLength, 36);
  for (const h of srv.handles) assert.equal(h.stats().queued, 36);
  await srv.handles[srv.handles.length - 1].flush();
  assert.equal(wire.posts(), 1, "one ingest post for the one flush");

  const o = await waitForCalls(id, 36); // 2 server/discover + 34 tools/call
  process.off("warning", onWarning);
  assert.deepEqual(warnings.filter((w) => w.name === "MaxListenersExceededWarning"), []);
  assert.equal(o.calls, 36);
  assert.equal(o.sessions, 2);
  await eventually(async () => assert.equal((await tools(id)).search?.calls, 34));
  const ss = await eventually(async () => {
    const ss = await sessions(id);
    assert.equal(ss.length, 2);
    return ss;
  });
  const byClient = Object.fromEntries(ss.map((s) => [s.client_name, s]));
  assert.equal(byClient["agent-a"].calls, 18);
  assert.equal(byClient["agent-a"].client_version, "1.0.0");
  assert.equal(byClient["agent-b"].calls, 18);
  // No session_id was sent: the service derived one session per client.
  for (const s of ss) assert.match(s.session_id, /^auto-[0-9a-f]{24}$/);
  assert.notEqual(byClient["agent-a"].session_id, byClient["agent-b"].session_id);
  // On the wire: the protocol and the server's version on every item, no
  // notification.
  assert.equal(wire.sent.length, 36);
  for (const it of wire.sent) {
    assert.equal(it.protocol_version, "2026-07-28", JSON.stringify(it));
    assert.equal(it.server_version, "7.1.0");
    assert.ok(!it.method.startsWith("notifications/"));
    assert.equal(it.session_id, undefined, "a stateless request has no session to send");
  }
  assert.deepEqual([...new Set(wire.sent.map((it) => it.method))].sort(), ["server/discover", "tools/call"]);
  await protocolBreakdown(id, { "2026-07-28": 36 });
});

test("v2 stateless, 2025 protocol: initialize per client, notifications not recorded", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk v2 stateless legacy");
  const wire = capture();
  const srv = await serve({ key, endpoint: base, fetch: wire.fetch, flushIntervalMs: 200 });
  await drive(srv.url, { name: "old-agent", version: "0.9" }, "legacy", 5);
  await srv.close();
  const o = await waitForCalls(id, 6); // initialize + 5 tools/call
  assert.equal(o.calls, 6);
  assert.deepEqual(wire.sent.map((it) => it.method).sort(), ["initialize", ...Array(5).fill("tools/call")]);
  for (const it of wire.sent) {
    assert.equal(it.server_version, "7.1.0", "from the server itself: a 2025 stateless instance saw no initialize");
    assert.equal(it.session_id, undefined, "a stateless request has no session to send");
  }
  const init = wire.sent.find((it) => it.method === "initialize");
  assert.equal(init.client_name, "old-agent");
  assert.ok(init.protocol_version, "the negotiated version");
});

// protocolBreakdown checks the breakdown by protocol_version once the
// service stores it (a service that does not yet answers 422 for the
// dimension and ignores the field).
async function protocolBreakdown(mcpId, want) {
  const r = await api("GET", `/v1/mcps/${mcpId}/breakdown?by=protocol_version`);
  if (r.status !== 200) {
    console.log(`# breakdown by protocol_version: ${r.status}, not checked (service without the dimension)`);
    return;
  }
  await eventually(async () => {
    const b = await read(`/v1/mcps/${mcpId}/breakdown?by=protocol_version`);
    assert.deepEqual(Object.fromEntries(b.items.map((i) => [i.value, i.calls])), want);
  });
}

test("v2 stdio through serveStdio, 2026-07-28: one session for the connection", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk v2 stdio");
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [fileURLToPath(new URL("./fixtures/stdio-server-v2.js", import.meta.url))],
    env: { ...process.env, TELEMETRY_KEY: key, TELEMETRY_ENDPOINT: base },
    stderr: "inherit",
  });
  const client = new Client(clientInfo, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(transport);
  for (let i = 0; i < 3; i++) await client.callTool({ name: "search", arguments: { q: `q${i}` } });
  await client.callTool({ name: "fail", arguments: {} });
  await client.close();
  // serveStdio answers the pinned client's server/discover in its entry
  // (it never reaches the instance's transport): the 4 tool calls.
  const o = await waitForCalls(id, 4);
  assert.equal(o.calls, 4);
  assert.equal(o.errors, 1);
  assert.equal(o.sessions, 1);
  const [s] = await eventually(async () => {
    const ss = await sessions(id);
    assert.equal(ss.length, 1);
    return ss;
  });
  assert.equal(s.client_name, clientInfo.name);
  assert.equal(s.client_version, clientInfo.version);
  await eventually(async () => assert.deepEqual(Object.fromEntries(Object.entries(await tools(id)).map(([k, v]) => [k, v.calls])), { search: 3, fail: 1 }));
  await protocolBreakdown(id, { "2026-07-28": 4 });
});
