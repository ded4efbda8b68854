// Issue 39's "done when", read back through the service: a v2 TypeScript
// server (stateless Streamable HTTP) wrapped by the SDK, driven by the 2.x
// client through the agent-failure script (get_forcast for get_forecast,
// refused arguments, a throw, an isError result, a 100 KB answer, a loop,
// a missing prompt and resource), then the service's reads: unknown tools
// with the closest name and client, error kinds per tool, answer sizes,
// repeats; a rule on unknown_tool_calls fires and reaches the inbox. The reads are the service side of issue 39 (branch h39api):
// on a service without GET /v1/mcps/{id}/unknown-tools (404) the test
// skips, saying so.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { z } from "zod";
import { instrument } from "../src/index.js";
import { agentCalls, agentMisses, makeWeatherServer } from "./fixtures/agentfail.js";
import { api, base, eventually, newMcp, read, sessions, skip, tool } from "./service.js";

test("v2 server read back: unknown tools, error kinds, sizes, repeats (issue 39 reads)", { skip }, async (t) => {
  const { id, key } = await newMcp("ts-sdk agent failures");
  if ((await api("GET", `/v1/mcps/${id}/unknown-tools`)).status === 404) {
    t.skip("the service has no GET /v1/mcps/{id}/unknown-tools yet: issue 39's reads (branch h39api) are not merged");
    return;
  }
  const handles = [];
  const handler = createMcpHandler(() => {
    const server = makeWeatherServer({ McpServer, z });
    handles.push(instrument(server, { key, endpoint: base, flushIntervalMs: 600000 }));
    return server;
  });
  const http = createServer(toNodeHandler(handler));
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  const client = new Client({ name: "agent", version: "2.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.address().port}/mcp`)));
  await client.listTools(); // the inventory the closest name is taken from
  await agentCalls(client);
  await agentMisses(client);
  await client.close();
  await Promise.all([handler.close(), new Promise((r) => http.close(r))]);
  await handles[0].flush();

  // server/discover, tools/list, 12 tools/call, the prompt and resource misses
  await eventually(async () => {
    const o = await read(`/v1/mcps/${id}/overview`);
    assert.equal(o.calls, 16);
    assert.equal(o.unknown_tool_calls, 3);
    assert.equal(o.repeated_calls, 5, "the 2nd to 6th of the six same calls");
  });
  await eventually(async () => {
    const u = (await read(`/v1/mcps/${id}/unknown-tools`)).items.find((i) => i.name === "get_forcast");
    assert.ok(u, "get_forcast is an unknown tool");
    assert.equal(u.closest, "get_forecast");
    assert.equal(u.calls, 1);
    assert.equal(u.sessions, 1);
    assert.deepEqual(u.clients, [{ client_name: "agent", calls: 1 }]);
  });
  const kinds = (d) => Object.fromEntries(d.error_kinds.map((k) => [k.error_kind, k.count]));
  await eventually(async () => {
    assert.deepEqual(kinds(await tool(id, "get_forecast")), { invalid_params: 1 });
    assert.deepEqual(kinds(await tool(id, "explode")), { exception: 1 });
    assert.deepEqual(kinds(await tool(id, "refuse")), { tool_error: 1 });
    const big = await tool(id, "big_report");
    assert.ok(big.response_bytes_max > 100 * 1024, `big_report response_bytes_max ${big.response_bytes_max}`);
    assert.equal(big.response_bytes_p50, big.response_bytes_max);
  });
  const ss = await sessions(id);
  assert.equal(ss.length, 1, "one derived session for the one client");
  const tl = await read(`/v1/mcps/${id}/sessions/${encodeURIComponent(ss[0].session_id)}`);
  const repeats = tl.items.filter((i) => i.method === "tools/call").map((i) => i.repeat);
  assert.deepEqual(repeats, [0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 0]);

  // A rule on unknown_tool_calls fires and reaches the inbox.
  const rule = await api("POST", `/v1/mcps/${id}/rules`, { name: "agents ask for tools we lack", metric: "unknown_tool_calls",
    comparator: ">=", threshold: 1, window_minutes: 60, channels: ["in_app"] });
  assert.equal(rule.status, 201, JSON.stringify(rule.body));
  const ev = await api("POST", `/v1/rules/${rule.body.id}/evaluate`);
  assert.equal(ev.status, 200, JSON.stringify(ev.body));
  assert.equal(ev.body.fired, true);
  assert.equal(ev.body.value, 3, "the tool, prompt and resource misses");
  const inbox = await read("/v1/account/inbox");
  assert.ok(inbox.items.some((i) => i.rule_id === rule.body.id), `the inbox holds the rule's alert: ${JSON.stringify(inbox.items)}`);
});
