// Inventory from complete answers only: a server that paginates tools/list
// (two tools a page, three tools) walked by the official clients reports
// its whole tool set once, never a page as if it were the set (which made
// the service record tools removed and added back at every walk). Neither
// official SDK paginates tools/list by itself, so the servers are low-level
// ones whose handler pages, as go-sdk's PageSize does.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { McpServer, Server as ServerV2, createMcpHandler, InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Client as ClientV2, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { instrument } from "../src/index.js";

const TOOLS = ["alpha", "beta", "gamma"].map((name) => ({ name, description: `tool ${name}`, inputSchema: { type: "object" } }));

/** page answers tools/list two tools at a time; the cursor is the index. */
function page(cursor) {
  const start = cursor === undefined ? 0 : Number(cursor);
  if (!Number.isInteger(start) || start < 0 || start >= TOOLS.length) throw new Error("invalid cursor");
  const end = Math.min(start + 2, TOOLS.length);
  return { tools: TOOLS.slice(start, end), ...(end < TOOLS.length ? { nextCursor: String(end) } : {}) };
}

/** inventoryEndpoint keeps every inventory report's tool names. */
async function inventoryEndpoint() {
  const reports = [];
  const srv = createServer((req, res) => {
    res.setHeader("Connection", "close");
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const body = JSON.parse((req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString());
      if (req.url === "/v1/ingest/inventory") reports.push(body.tools.map((t) => t.name).sort().join(","));
      res.writeHead(202, { "Content-Type": "application/json" }).end(JSON.stringify({ accepted: body.items?.length ?? 0 }));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, reports, close: () => srv.close() };
}

/** walk lists every tool with the client, page by page, and then asks
 * for the second page again alone (a page no walk awaits). */
async function walk(client) {
  const names = [];
  let cursor;
  do {
    const r = await client.listTools(cursor === undefined ? undefined : { cursor });
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor !== undefined);
  return names;
}

async function check(ep, telemetry, drive) {
  const first = await drive();
  assert.deepEqual(first, ["alpha", "beta", "gamma"]);
  await telemetry.flush();
  await telemetry.close();
  ep.close();
  assert.deepEqual(ep.reports, ["alpha,beta,gamma"], "one report of the whole list, no page reported alone");
}

test("v1 low-level Server paginating tools/list, walked by the v1 client", async () => {
  const ep = await inventoryEndpoint();
  const server = new ServerV1({ name: "paged", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (req) => page(req.params?.cursor));
  const telemetry = instrument(server, { key: "ik_v1_paged", endpoint: ep.url, flushIntervalMs: 600000 });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new ClientV1({ name: "c", version: "1" });
  await client.connect(ct);
  await check(ep, telemetry, async () => {
    const names = await walk(client);
    await walk(client); // the same list again: not reported again
    await client.listTools({ cursor: "2" }); // the last page alone
    await client.close();
    return names;
  });
});

test("v2 low-level Server paginating tools/list, walked by the v2 client", async () => {
  const ep = await inventoryEndpoint();
  const server = new ServerV2({ name: "paged", version: "2.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", async (req) => page(req.params?.cursor));
  const telemetry = instrument(server, { key: "ik_v2_paged", endpoint: ep.url, flushIntervalMs: 600000 });
  const [ct, st] = InMemoryV2.createLinkedPair();
  await server.connect(st);
  const client = new ClientV2({ name: "c", version: "1" });
  await client.connect(ct);
  await check(ep, telemetry, async () => {
    const names = await walk(client);
    await client.listTools({ cursor: "2" });
    await client.close();
    return names;
  });
});

test("v2 stateless HTTP, a server instance per request: the pages of one walk join up", async () => {
  const ep = await inventoryEndpoint();
  let telemetry;
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: "paged", version: "2.1.0" }, { capabilities: { tools: {} } });
    server.server.setRequestHandler("tools/list", async (req) => page(req.params?.cursor));
    telemetry = instrument(server, { key: "ik_v2_http_paged", endpoint: ep.url, flushIntervalMs: 600000 });
    return server;
  });
  const http = createServer(toNodeHandler(handler));
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  try {
    const client = new ClientV2({ name: "c", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.address().port}/mcp`)));
    const names = await walk(client);
    await client.listTools({ cursor: "2" });
    await client.close();
    await check(ep, telemetry, async () => names);
  } finally {
    http.closeAllConnections();
    await Promise.all([handler.close(), new Promise((r) => http.close(r))]);
    ep.close();
  }
});
