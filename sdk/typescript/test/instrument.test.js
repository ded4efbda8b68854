// The SDK against the real service: a real McpServer and Client of
// @modelcontextprotocol/sdk, over the in-memory and stdio transports, and
// every figure read back from overview, tools, tool detail and sessions.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { instrument } from "../src/index.js";
import { clientInfo, exercise, expected, makeServer } from "./fixtures/scenario.js";
import { gunzipSync } from "node:zlib";
import { base, checkScenario, errorTypes, eventually, newMcp, read, sessions, skip, tool, topErrors, waitForCalls } from "./service.js";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** capture is a fetch that sends for real and keeps every request's
 * decoded items, to check what goes over the wire. */
function capture() {
  const sent = [];
  const f = async (url, init) => {
    assert.equal(init.headers["Content-Encoding"], "gzip");
    sent.push(...JSON.parse(gunzipSync(init.body).toString()).items);
    return fetch(url, init);
  };
  return { sent, fetch: f };
}

test("McpServer over the in-memory transport reads back exactly", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk in-memory");
  const server = makeServer({ McpServer, z });
  const telemetry = instrument(server, { key, endpoint: base, flushIntervalMs: 100 });
  for (let i = 0; i < 2; i++) {
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    const client = new Client(clientInfo);
    await client.connect(ct);
    await exercise(client);
    await client.close();
    await server.close();
  }
  await telemetry.flush();
  const stats = telemetry.stats();
  assert.equal(stats.queued, 2 * expected.calls);
  assert.equal(stats.sent, 2 * expected.calls);
  assert.equal(stats.dropped + stats.failed, 0);
  await checkScenario(id, 2);
  // The JSON-RPC error of resources/read carries its code as error_type.
  await eventually(async () =>
    assert.deepEqual(await topErrors(id), {
      "tools/call fail tool_error": 4,
      "tools/call missing tool_error": 2,
      "tools/call boom tool_error": 2,
      [`resources/read docs://nope ${ErrorCode.InvalidParams}`]: 2,
    }),
  );
  await telemetry.close();
});

test("a stdio server instrumented from the environment reads back exactly", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk stdio");
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [fileURLToPath(new URL("./fixtures/stdio-server.js", import.meta.url))],
    env: { ...process.env, TELEMETRY_KEY: key, TELEMETRY_ENDPOINT: base },
    stderr: "inherit",
  });
  const client = new Client(clientInfo);
  await client.connect(transport);
  await exercise(client);
  await client.close(); // stdin ends: the server sends what is queued before its process exits
  const [s] = await checkScenario(id, 1);
  assert.ok(s.session_id.length > 0);
  const t = await tool(id, "search");
  assert.equal(t.calls, 3);
});

test("a low-level Server: thrown errors, JSON-RPC errors and arguments with the redaction hook", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk low-level");
  const server = new Server({ name: "low", version: "0.0.9" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
  const wire = capture();
  const telemetry = instrument(server, {
    key,
    endpoint: base,
    fetch: wire.fetch,
    recordArguments: true,
    redact: (args) => ({ ...args, token: "[redacted]" }),
  });
  // Registered after instrument(): wrapped too.
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    if (req.params.name === "throws") throw new TypeError("bad input");
    if (req.params.name === "rpc") throw new McpError(ErrorCode.InvalidParams, "no such thing");
    return { content: [{ type: "text", text: "ok" }] };
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client(clientInfo);
  await client.connect(ct);
  await client.callTool({ name: "echo", arguments: { q: "x", token: "s3cret" } });
  await assert.rejects(client.callTool({ name: "throws", arguments: {} }));
  await assert.rejects(client.callTool({ name: "rpc", arguments: {} }));
  await client.close();
  await server.close();
  await telemetry.close();
  const s = await eventually(async () => {
    const o = await waitForCalls(id, 4);
    assert.equal(o.calls, 4);
    assert.equal(o.errors, 2);
    // A thrown error is answered as a JSON-RPC internal error: its code.
    assert.deepEqual(errorTypes(await tool(id, "throws")), { [String(ErrorCode.InternalError)]: 1 });
    assert.deepEqual(errorTypes(await tool(id, "rpc")), { "-32602": 1 });
    assert.equal((await tool(id, "throws")).error_types[0].last_message, "bad input");
    const [s] = await sessions(id);
    assert.equal(s.client_name, clientInfo.name);
    return s;
  });
  // On the wire: a UUID per item, the server's version, the arguments as
  // the redaction hook returned them.
  assert.equal(wire.sent.length, 4);
  assert.equal(new Set(wire.sent.map((it) => it.id)).size, 4);
  for (const it of wire.sent) {
    assert.match(it.id, uuid);
    assert.equal(it.server_version, "0.0.9");
    assert.equal(it.session_id, s.session_id);
  }
  const echo = wire.sent.find((it) => it.name === "echo");
  assert.deepEqual(echo.attributes, { "arg.q": "x", "arg.token": "[redacted]" });
});

test("arguments are not sent unless asked", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk no-args");
  const wire = capture();
  const server = makeServer({ McpServer, z });
  const telemetry = instrument(server, { key, endpoint: base, fetch: wire.fetch });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client(clientInfo);
  await client.connect(ct);
  await client.callTool({ name: "search", arguments: { q: "x", token: "s3cret" } });
  await client.close();
  await telemetry.close();
  await waitForCalls(id, 2);
  assert.equal(wire.sent.length, 2);
  for (const it of wire.sent) assert.equal(it.attributes, undefined, JSON.stringify(it));
  assert.ok(!JSON.stringify(wire.sent).includes("s3cret"));
});

test("Streamable HTTP with sessions: each client's Mcp-Session-Id is its session", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk v1 stateful http");
  const transports = new Map();
  const wire = capture();
  const http = createServer(async (req, res) => {
    const sid = req.headers["mcp-session-id"];
    let transport = sid && transports.get(sid);
    if (!transport) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (s) => transports.set(s, transport) });
      const server = makeServer({ McpServer, z });
      instrument(server, { key, endpoint: base, fetch: wire.fetch, flushIntervalMs: 100 });
      await server.connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  const url = new URL(`http://127.0.0.1:${http.address().port}/mcp`);
  const ids = [];
  for (const name of ["http-a", "http-b"]) {
    const client = new Client({ name, version: "1.0" });
    const t = new StreamableHTTPClientTransport(url);
    await client.connect(t);
    ids.push(t.sessionId);
    await exercise(client);
    await client.close();
  }
  for (const t of transports.values()) await t.close();
  http.closeAllConnections();
  await new Promise((r) => http.close(r));
  const ss = await checkScenarioClients(id, ids);
  assert.deepEqual(ss.map((s) => s.session_id).sort(), [...ids].sort());
  assert.ok(wire.sent.every((it) => it.protocol_version === wire.sent[0].protocol_version && it.protocol_version), "protocol on every item");
});

/** checkScenarioClients waits for two exercise() runs in the given sessions. */
async function checkScenarioClients(mcpId, sessionIds) {
  await waitForCalls(mcpId, expected.calls * sessionIds.length);
  return eventually(async () => {
    const ss = await sessions(mcpId);
    assert.equal(ss.length, sessionIds.length);
    for (const s of ss) assert.equal(s.calls, expected.calls);
    return ss;
  });
}

test("@modelcontextprotocol/inspector-cli as an outside client of a wrapped stdio server", { skip }, async () => {
  const { id, key } = await newMcp("ts-sdk inspector-cli");
  const testDir = fileURLToPath(new URL(".", import.meta.url));
  const cli = fileURLToPath(new URL("../node_modules/@modelcontextprotocol/inspector-cli/build/cli.js", import.meta.url));
  const inspector = JSON.parse(readFileSync(new URL("../node_modules/@modelcontextprotocol/inspector-cli/package.json", import.meta.url)));
  const run = (...args) => {
    // The CLI finds its own package.json through "../package.json" of the
    // working directory: run it from test/.
    const r = spawnSync(process.execPath, [cli, "--cli", "-e", `TELEMETRY_KEY=${key}`, "-e", `TELEMETRY_ENDPOINT=${base}`, process.execPath, "fixtures/stdio-server.js", ...args], { cwd: testDir, encoding: "utf8", timeout: 60000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    return r.stdout;
  };
  assert.match(run("--method", "tools/list"), /"search"/);
  assert.match(run("--method", "tools/call", "--tool-name", "search", "--tool-arg", "q=x"), /results for x/);
  // Two connections: initialize and tools/list; initialize, tools/list
  // (the CLI looks the tool's schema up) and tools/call. No notification.
  const o = await waitForCalls(id, 5);
  assert.equal(o.calls, 5);
  assert.equal(o.sessions, 2);
  await eventually(async () => {
    const b = await read(`/v1/mcps/${id}/breakdown?by=method`);
    assert.deepEqual(Object.fromEntries(b.items.map((i) => [i.value, i.calls])), { initialize: 2, "tools/list": 2, "tools/call": 1 });
  });
  const ss = await eventually(async () => {
    const ss = await sessions(id);
    assert.equal(ss.length, 2);
    return ss;
  });
  assert.deepEqual(ss.map((s) => s.calls).sort(), [2, 3]);
  for (const s of ss) {
    assert.equal(s.client_name, inspector.name.split("/")[1]);
    assert.equal(s.client_version, inspector.version);
  }
  await eventually(async () => assert.equal((await tool(id, "search")).calls, 1));
});
