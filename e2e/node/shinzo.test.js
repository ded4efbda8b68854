// Shinzo's @shinzolabs/instrumentation-mcp 1.1.0 exports traces and metrics
// to the service (`<endpoint>/traces`, `<endpoint>/metrics`); the tool calls
// it records read back exactly, and its metrics exports are answered 200.
// It instruments tools registered with McpServer.tool() only, reports a
// thrown error with error.type = the error's name, and does not look at
// isError results (so those are successes for it).
import assert from "node:assert/strict";
import { test } from "node:test";
import { instrumentServer } from "@shinzolabs/instrumentation-mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { clientInfo } from "../../sdk/typescript/test/fixtures/scenario.js";
import { base, errorTypes, eventually, newMcp, sessions, skip, tool, tools, waitForCalls } from "../../sdk/typescript/test/service.js";

/** routeCount reads the service's request counter of one route and status. */
async function routeCount(route, status) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`telemetry_http_requests_total{method="POST",route="${route}",status="${status}"}`));
  return line ? Number(line.split(" ").pop()) : 0;
}

test("@shinzolabs/instrumentation-mcp tool spans read back exactly, its metrics are answered", { skip }, async () => {
  const { id, key } = await newMcp("shinzo");
  const metricsBefore = await routeCount("/v1/otlp/v1/metrics", "200");
  const server = new McpServer({ name: "shinzo-docs", version: "4.1.0" });
  const telemetry = instrumentServer(server, {
    serverName: "shinzo-docs",
    serverVersion: "4.1.0",
    exporterEndpoint: `${base}/v1/otlp/v1`,
    exporterAuth: { type: "bearer", token: key },
    metricExportIntervalMs: 500,
    batchTimeoutMs: 200,
  });
  server.tool("search", { q: z.string() }, async ({ q }) => ({ content: [{ type: "text", text: `results for ${q}` }] }));
  server.tool("fail", {}, async () => ({ content: [{ type: "text", text: "quota exceeded" }], isError: true }));
  server.tool("boom", {}, async () => {
    throw new RangeError("index offline");
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client(clientInfo);
  await client.connect(ct);
  for (const q of ["a", "b", "c"]) await client.callTool({ name: "search", arguments: { q } });
  await client.callTool({ name: "fail", arguments: {} });
  await client.callTool({ name: "fail", arguments: {} });
  await client.callTool({ name: "boom", arguments: {} }).catch(() => {});
  await new Promise((r) => setTimeout(r, 1200)); // at least one periodic metrics export
  await client.close();
  await telemetry.shutdown(); // flushes traces and metrics

  await eventually(async () => {
    const o = await waitForCalls(id, 6);
    assert.equal(o.calls, 6);
    assert.equal(o.errors, 1);
    assert.equal(o.sessions, 1, "one session: Shinzo's resource mcp.session.id");
    const ts = await tools(id);
    assert.deepEqual(
      Object.fromEntries(Object.entries(ts).map(([n, t]) => [n, [t.calls, t.errors]])),
      { search: [3, 0], fail: [2, 0], boom: [1, 1] },
    );
    assert.deepEqual(errorTypes(await tool(id, "boom")), { RangeError: 1 });
    assert.equal((await tool(id, "boom")).error_types[0].last_message, "index offline");
    const ss = await sessions(id);
    assert.equal(ss.length, 1);
    assert.equal(ss[0].calls, 6);
  });
  assert.ok((await routeCount("/v1/otlp/v1/metrics", "200")) > metricsBefore, "metrics exports answered 200");
  assert.equal(await routeCount("/v1/otlp/v1/metrics", "404"), 0);
});
