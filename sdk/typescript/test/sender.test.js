// The sender's delivery rules against a local HTTP endpoint that plays the
// service's answers (202, 429 with Retry-After, 503, 400), so each rule is
// seen on the wire: batch limits, gzip, retries, the bounded queue, flush on
// close, and that nothing ever throws.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { MAX_BODY_BYTES, Sender, canonicalJSON, instrument, retryAfterMs, toolSchemaHash } from "../src/index.js";
import { makeServer } from "./fixtures/scenario.js";

/** endpoint starts a local ingest endpoint; answer(n) gives the status and
 * headers of the n-th request (0-based). */
async function endpoint(answer = () => ({ status: 202 })) {
  const requests = [];
  const srv = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const json = req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
      const body = JSON.parse(json.toString());
      const items = body.items ?? [];
      requests.push({ at: Date.now(), path: req.url, headers: req.headers, bytes: json.length, items, body });
      const a = answer(requests.length - 1);
      res.writeHead(a.status, { "Content-Type": "application/json", ...(a.headers ?? {}) });
      res.end(a.status === 202 ? JSON.stringify({ accepted: items.length, dropped: 0 }) : "{}");
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, requests, close: () => srv.close() };
}

const item = (i, extra = {}) => ({ id: `id-${i}`, timestamp: new Date().toISOString(), session_id: "s", method: "ping", ...extra });

test("batches hold at most 1000 items and 1 MiB, gzip-compressed, with the key", async () => {
  const ep = await endpoint();
  const s = new Sender({ endpoint: ep.url, key: "ik_test", flushIntervalMs: 60000 });
  for (let i = 0; i < 2500; i++) s.add(item(i));
  // Items of 4 KiB: 2.4 MiB in all, so bodies are split under 1 MiB.
  for (let i = 0; i < 600; i++) s.add(item(`big-${i}`, { attributes: { pad: "x".repeat(4096) } }));
  await s.close();
  ep.close();
  const ids = ep.requests.flatMap((r) => r.items.map((it) => it.id));
  assert.equal(ids.length, 3100);
  assert.equal(new Set(ids).size, 3100, "every item sent once");
  for (const r of ep.requests) {
    assert.ok(r.items.length <= 1000, `${r.items.length} items`);
    assert.ok(r.bytes <= MAX_BODY_BYTES, `${r.bytes} bytes`);
    assert.equal(r.headers["content-encoding"], "gzip");
    assert.equal(r.headers.authorization, "Bearer ik_test");
  }
  assert.deepEqual(ep.requests.slice(0, 2).map((r) => r.items.length), [1000, 1000]);
  assert.ok(ep.requests.length >= 6, "the big items took several bodies");
  assert.equal(s.stats.sent, 3100);
});

test("429 and 503 are retried after Retry-After; 5xx with backoff; other 4xx are final", async () => {
  const answers = [
    { status: 429, headers: { "Retry-After": "1" } },
    { status: 503, headers: { "Retry-After": "1" } },
    { status: 500 },
    { status: 202 },
    { status: 400 },
  ];
  const ep = await endpoint((n) => answers[n] ?? { status: 202 });
  const errors = [];
  const s = new Sender({ endpoint: ep.url, key: "k", flushIntervalMs: 60000, retryBaseDelayMs: 10, onError: (e) => errors.push(e) });
  s.add(item(1));
  await s.flush();
  s.add(item(2));
  await s.flush();
  await s.close();
  ep.close();
  assert.equal(ep.requests.length, 5);
  assert.ok(ep.requests[1].at - ep.requests[0].at >= 950, "waited Retry-After after 429");
  assert.ok(ep.requests[2].at - ep.requests[1].at >= 950, "waited Retry-After after 503");
  assert.deepEqual(ep.requests.slice(0, 4).map((r) => r.items[0].id), ["id-1", "id-1", "id-1", "id-1"], "same batch, same ids");
  assert.equal(s.stats.sent, 1);
  assert.equal(s.stats.failed, 1, "the 400 batch is given up, not retried");
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /400/);
  assert.equal(retryAfterMs("2"), 2000);
  assert.ok(retryAfterMs(new Date(Date.now() + 5000).toUTCString()) > 3000);
  assert.equal(retryAfterMs("soon"), undefined);
});

test("the queue is bounded: beyond it items are dropped and counted", async () => {
  const ep = await endpoint();
  const s = new Sender({ endpoint: ep.url, key: "k", maxQueue: 10, batchSize: 1000, flushIntervalMs: 60000 });
  const added = Array.from({ length: 15 }, (_, i) => s.add(item(i)));
  assert.deepEqual(added, [...Array(10).fill(true), ...Array(5).fill(false)]);
  assert.equal(s.stats.dropped, 5);
  await s.close();
  ep.close();
  assert.equal(ep.requests.flatMap((r) => r.items).length, 10);
});

test("close flushes what is queued", async () => {
  const ep = await endpoint();
  const s = new Sender({ endpoint: ep.url, key: "k", flushIntervalMs: 3600000 });
  for (let i = 0; i < 7; i++) s.add(item(i));
  assert.equal(ep.requests.length, 0);
  await s.close();
  ep.close();
  assert.equal(ep.requests.flatMap((r) => r.items).length, 7);
  assert.equal(s.add(item(8)), false, "a closed sender drops");
});

test("close waits for a one-shot post in flight (the inventory), within the deadline", async () => {
  // The endpoint answers the post only after 300 ms: close must not resolve
  // before it, or the inventory of a server that shuts down is lost.
  const slow = createServer((req, res) => {
    req.resume();
    req.on("end", () => setTimeout(() => res.writeHead(202).end("{}"), 300));
  });
  await new Promise((r) => slow.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${slow.address().port}`;
  const s = new Sender({ endpoint: url, key: "k", flushIntervalMs: 3600000 });
  let answered = false;
  s.post(`${url}/v1/ingest/inventory`, "{}").then(() => (answered = true));
  await s.close();
  assert.ok(answered, "close resolved before the post in flight was answered");
  // A post that outlives the deadline is cut there, not waited for.
  const s2 = new Sender({ endpoint: url, key: "k", flushIntervalMs: 3600000, shutdownTimeoutMs: 50, onError: () => {} });
  const cut = s2.post(`${url}/v1/ingest/inventory`, "{}").then(() => "answered", () => "cut");
  const start = Date.now();
  await s2.close();
  assert.equal(await cut, "cut");
  assert.ok(Date.now() - start < 250, `close took ${Date.now() - start} ms`);
  slow.close();
});

test("nothing throws into the server or delays it: a dead endpoint, a failing fetch, a throwing hook", async () => {
  const ep = await endpoint();
  ep.close(); // nothing listens there any more
  const errors = [];
  const server = makeServer({ McpServer, z });
  const telemetry = instrument(server, {
    key: "k",
    endpoint: ep.url,
    maxRetries: 1,
    retryBaseDelayMs: 1,
    recordArguments: true,
    redact: () => {
      throw new Error("hook bug");
    },
    userId: () => {
      throw new Error("another hook bug");
    },
    onError: (e) => errors.push(e),
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: "c", version: "1" });
  await client.connect(ct);
  const r = await client.callTool({ name: "search", arguments: { q: "x" } });
  assert.equal(r.content[0].text, "results for x");
  await client.close();
  await telemetry.close(); // resolves although every send fails
  assert.ok(errors.some((e) => /hook bug/.test(String(e))));
  // A fetch that throws synchronously is a failed send, not an exception.
  const s = new Sender({ endpoint: "http://127.0.0.1:1", key: "k", maxRetries: 0, fetch: () => { throw new Error("boom"); } });
  s.add(item(1));
  await s.close();
  assert.equal(s.stats.failed, 1);
});

test("without a key nothing is recorded and nothing fails", async () => {
  const errors = [];
  const server = makeServer({ McpServer, z });
  const t = instrument(server, { env: {}, onError: (e) => errors.push(e) });
  assert.equal(t.endpoint, undefined);
  assert.match(String(errors[0]), /no ingest key/);
  await t.close();
  assert.throws(() => instrument({}), TypeError);
});

test("the default endpoint is the service's base address, overridable by TELEMETRY_ENDPOINT", () => {
  const a = instrument(makeServer({ McpServer, z }), { env: { TELEMETRY_KEY: "k" } });
  assert.equal(a.endpoint, "http://127.0.0.1:8080");
  const b = instrument(makeServer({ McpServer, z }), { env: { TELEMETRY_KEY: "k", TELEMETRY_ENDPOINT: "https://t.example.com" } });
  assert.equal(b.endpoint, "https://t.example.com");
  const c = instrument(makeServer({ McpServer, z }), { endpoint: "https://o.example.com", env: { TELEMETRY_ENDPOINT: "https://t.example.com", TELEMETRY_KEY: "k" } });
  assert.equal(c.endpoint, "https://o.example.com");
  return Promise.all([a.close(), b.close(), c.close()]);
});

test("the package loads with require as well as import, and both share one sender", () => {
  const script = `
    const t = require("@mcpscope/telemetry");
    const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
    const v2 = require("@modelcontextprotocol/server");
    const o = { key: "ik_req", endpoint: "http://127.0.0.1:1", flushIntervalMs: 600000 };
    const h1 = t.instrument(new McpServer({ name: "a", version: "1" }), o);
    const h2 = t.instrument(new v2.McpServer({ name: "b", version: "2" }), o);
    import("@mcpscope/telemetry").then(async (m) => {
      const h3 = m.instrument(new McpServer({ name: "c", version: "3" }), o);
      console.log(JSON.stringify({ fn: typeof t.instrument, same: m.instrument === t.instrument, listeners: process.listenerCount("beforeExit") }));
      await h1.close();
    });`;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { fn: "function", same: true, listeners: 1 });
});

test("a refused key is reported once, not on every batch", async () => {
  const ep = await endpoint(() => ({ status: 401 }));
  const errors = [];
  const s = new Sender({ endpoint: ep.url, key: "ik_deleted", flushIntervalMs: 600000, onError: (e) => errors.push(e) });
  for (let i = 0; i < 3; i++) {
    s.add(item(i));
    await s.flush();
  }
  await s.close();
  ep.close();
  assert.equal(ep.requests.length, 3, "401 is final: one request per batch");
  assert.equal(s.stats.failed, 3);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /refuses the ingest key/);
});

for (const down of ["does not answer", "refuses connections"]) {
  test(`a stdio server exits within 1 s of its client closing stdin when the service ${down}`, async () => {
    // The service does not answer (it accepts connections and says
    // nothing), or is down (nothing listens on its port).
    const held = [];
    const silent = net.createServer((sock) => held.push(sock));
    await new Promise((r) => silent.listen(0, "127.0.0.1", r));
    const port = silent.address().port;
    if (down === "refuses connections") await new Promise((r) => silent.close(r));
    const child = spawn(process.execPath, [fileURLToPath(new URL("./fixtures/stdio-server.js", import.meta.url))], {
      env: { ...process.env, TELEMETRY_KEY: "ik_x", TELEMETRY_ENDPOINT: `http://127.0.0.1:${port}` },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const answers = [];
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        answers.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    });
    const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
    const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
    send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    send({ method: "notifications/initialized" });
    send({ id: 2, method: "tools/call", params: { name: "search", arguments: { q: "x" } } });
    while (answers.length < 2) await new Promise((r) => setTimeout(r, 20));
    // Let the sender start its post (flush interval 1 s), which never
    // ends, or fails; then queue one more item just before stdin closes.
    await new Promise((r) => setTimeout(r, 1200));
    send({ id: 3, method: "tools/call", params: { name: "search", arguments: { q: "y" } } });
    while (answers.length < 3) await new Promise((r) => setTimeout(r, 5));
    const start = Date.now();
    child.stdin.end();
    const { code, signal } = await exited;
    const took = Date.now() - start;
    for (const s of held) s.destroy();
    silent.close();
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.ok(took < 1000, `the server took ${took} ms to exit after its client closed stdin (SIGTERM comes at 2000 ms)`);
    console.log(`# the service ${down}: the stdio server exited ${took} ms after its client closed stdin`);
    const warning = down === "does not answer" ? /shutdown deadline/g : /unreachable at exit/g;
    assert.equal(stderr.match(warning)?.length, 1, stderr);
  });
}

test("after an exit flush hits its deadline, later items are still sent", async () => {
  // The first request hangs past the exit deadline; later ones are
  // answered. A process given more work after beforeExit goes on sending.
  let n = 0;
  const got = [];
  const srv = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      if (n++ === 0) return; // never answered
      got.push(...JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()).items);
      res.writeHead(202, { "Content-Type": "application/json" }).end(JSON.stringify({ accepted: 1, dropped: 0 }));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const errors = [];
  const s = new Sender({ endpoint: `http://127.0.0.1:${srv.address().port}`, key: "k", flushIntervalMs: 50, exitTimeoutMs: 100, onError: (e) => errors.push(e) });
  s.add(item(1));
  s.beforeExit(); // what the process does when it runs out of work
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(s.stats.failed, 1, "the item in flight at the deadline is counted");
  assert.match(String(errors.at(-1)), /shutdown deadline/);
  s.add(item(2));
  for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(got.map((it) => it.id), ["id-2"], "an item added after the deadline is sent by the background sender");
  s.add(item(3));
  await s.flush();
  assert.equal(s.queue.length, 0);
  assert.deepEqual(got.map((it) => it.id), ["id-2", "id-3"]);
  assert.equal(s.stats.sent, 2);
  await s.close();
  srv.closeAllConnections?.();
  srv.close();
});

test("tools/list answers are reported to the inventory endpoint once per distinct list", async () => {
  const ep = await endpoint();
  const url = ep.url;
  const server = makeServer({ McpServer, z }, "4.0.0");
  const telemetry = instrument(server, { key: "ik_inv", endpoint: url, flushIntervalMs: 600000 });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: "c", version: "1" });
  await client.connect(ct);
  const listed = (await client.listTools()).tools;
  await client.listTools(); // the same list: not reported again
  server.registerTool("added", { description: "a new tool" }, async () => ({ content: [] }));
  await new Promise((r) => setTimeout(r, 50));
  const relisted = (await client.listTools()).tools; // a different list: reported
  await client.close();
  await telemetry.close();
  ep.close();
  const inventory = ep.requests.filter((p) => p.path === "/v1/ingest/inventory");
  assert.equal(inventory.length, 2, JSON.stringify(ep.requests.map((p) => p.path)));
  assert.equal(inventory[0].headers.authorization, "Bearer ik_inv");
  assert.equal(inventory[0].body.server_version, "4.0.0");
  assert.ok(inventory[0].body.protocol_version);
  assert.deepEqual(
    inventory[0].body.tools,
    // definition_bytes: the tool's JSON as listed, what an agent pays for it.
    // schema: the definition, sent by default (the service grades changes by it).
    listed.map((t) => ({
      name: t.name,
      schema_hash: toolSchemaHash(t),
      definition_bytes: Buffer.byteLength(JSON.stringify(t)),
      schema: Object.fromEntries(["description", "inputSchema", "outputSchema", "annotations"].filter((k) => t[k] !== undefined).map((k) => [k, t[k]])),
    })),
  );
  assert.deepEqual(inventory[1].body.tools.map((t) => t.name).sort(), relisted.map((t) => t.name).sort());
  assert.ok(inventory[1].body.tools.some((t) => t.name === "added"));
  // The hash is the one both SDKs compute (mcpgo's TestToolSchemaHash has
  // the same vector).
  assert.equal(
    toolSchemaHash({ name: "search", description: "search the docs", inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } }),
    "67fa58c78bd7194b462d63c679324ff1fe415c1d697166e65dc00ff2f438670f",
  );
  assert.equal(canonicalJSON({ b: [1, { d: 2, c: undefined, a: "<&>" }], a: null }), '{"a":null,"b":[1,{"a":"<&>","d":2}]}');
});

test("server version without initialize: stateless requests of both SDK lines name it", async () => {
  // A stateless 2025-protocol request after initialize reaches a server
  // instance that answered no initialize and stamps nothing: its version
  // comes from the server itself, the private _serverInfo in 1.x and the
  // protected _outboundServerInfo() in 2.x. This fails when a release of
  // the pinned SDKs renames them.
  const v1 = await import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const { createMcpHandler, McpServer: McpServerV2 } = await import("@modelcontextprotocol/server");
  const { toNodeHandler } = await import("@modelcontextprotocol/node");
  const ep = await endpoint();
  const opts = { key: "ik_version", endpoint: ep.url, flushIntervalMs: 600000 };
  const v1http = createServer(async (req, res) => {
    const server = makeServer({ McpServer, z }, "1.0.1");
    instrument(server, opts);
    const transport = new v1.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  const v2http = createServer(
    toNodeHandler(
      createMcpHandler(() => {
        const server = makeServer({ McpServer: McpServerV2, z }, "2.0.2");
        instrument(server, opts);
        return server;
      }),
    ),
  );
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  for (const srv of [v1http, v2http]) {
    await new Promise((r) => srv.listen(0, "127.0.0.1", r));
    const client = new Client({ name: "c", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${srv.address().port}/mcp`)));
    await client.callTool({ name: "search", arguments: { q: "x" } });
    await client.close();
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
  const handle = instrument(makeServer({ McpServer, z }), opts);
  await handle.close();
  ep.close();
  const calls = ep.requests.flatMap((r) => r.items).filter((it) => it.method === "tools/call");
  assert.deepEqual(calls.map((it) => it.server_version), ["1.0.1", "2.0.2"]);
});
