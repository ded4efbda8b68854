// Releases compared with a verdict, end to end (docs/releases.md): real
// servers of the official TypeScript SDK (@modelcontextprotocol/server
// 2.x, Streamable HTTP through createMcpHandler), wrapped by this SDK,
// released twice with a version bump and driven by the official client;
// the service compares the releases and answers a CI's verdict with a
// personal access token. Run by cmd/telemetryd's TestReleaseVerdictsEndToEnd.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { z } from "zod";
import { instrument } from "../src/index.js";
import { api, base, eventually, newMcp, read, skip } from "./service.js";

/** release serves one version of a server whose search fails on the
 * queries failing() picks, wrapped by the SDK, and makes calls calls. */
async function release(key, version, calls, failing) {
  const handles = [];
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: "release-server", version });
    server.registerTool("search", { description: "search the docs", inputSchema: { q: z.string() } }, async ({ q }) =>
      failing(q) ? { content: [{ type: "text", text: "index offline" }], isError: true } : { content: [{ type: "text", text: `results for ${q}` }] },
    );
    handles.push(instrument(server, { key, endpoint: base, flushIntervalMs: 600000 }));
    return server;
  });
  const http = createServer(toNodeHandler(handler));
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  const client = new Client({ name: "ci-agent", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.address().port}/mcp`)));
  // Ten calls at a time: the session's calls in a few seconds.
  for (let i = 0; i < calls; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, calls - i) }, (_, j) => client.callTool({ name: "search", arguments: { q: `q${i + j}` } })),
    );
  }
  await client.close();
  await handles[handles.length - 1].flush();
  await Promise.all([handler.close(), new Promise((r) => http.close(r))]);
}

/** pat is a read-only personal access token, as a CI holds. */
let pat;
async function ciToken() {
  if (!pat) {
    const r = await api("POST", "/v1/account/tokens", { name: "ci", scope: "read" });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    pat = r.body.token;
  }
  return pat;
}

async function verdict(mcpId, version) {
  const res = await fetch(`${base}/v1/mcps/${mcpId}/releases/${encodeURIComponent(version)}/verdict`, {
    headers: { Authorization: `Bearer ${await ciToken()}` },
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

/** twoReleases serves 1.0.0 then 1.1.0 and waits until both are readable
 * with every call. */
async function twoReleases(name, v1, v2) {
  const { id, key } = await newMcp(name);
  await release(key, "1.0.0", v1.calls, v1.failing);
  await release(key, "1.1.0", v2.calls, v2.failing);
  const list = await eventually(async () => {
    const l = await read(`/v1/mcps/${id}/releases`);
    // discover + the calls of each release
    assert.deepEqual(l.items.map((r) => [r.server_version, r.calls]), [["1.1.0", v2.calls + 1], ["1.0.0", v1.calls + 1]]);
    return l;
  });
  return { id, list };
}

const none = () => false;

test("a release where search's error rate rises: worse, and the CI's verdict fails", { skip }, async () => {
  const { id, list } = await twoReleases("release worse", { calls: 110, failing: none }, { calls: 110, failing: (q) => Number(q.slice(1)) % 5 === 0 });
  assert.equal(list.items[0].errors, 22);
  assert.deepEqual(list.items[0].error_kinds, [{ error_kind: "tool_error", count: 22 }]);
  const c = await read(`/v1/mcps/${id}/releases/compare`);
  assert.equal(c.base.server_version, "1.0.0");
  assert.equal(c.head.server_version, "1.1.0");
  assert.equal(c.verdict, "worse");
  const search = c.tools.find((t) => t.name === "search");
  assert.equal(search.verdict, "worse");
  assert.deepEqual([search.base.calls, search.base.error_rate, search.head.calls, search.head.error_rate], [110, 0, 110, 0.2]);
  assert.ok(search.reasons.some((r) => r.code === "error_rate_up"), JSON.stringify(search.reasons));
  const v = await verdict(id, "1.1.0");
  assert.equal(v.verdict, "fail");
  assert.equal(v.compared_with, "1.0.0");
  assert.ok(v.reasons.some((r) => r.code === "error_rate_up" && r.tool === "search"), JSON.stringify(v.reasons));
});

test("a release with equal traffic: same, and the verdict passes", { skip }, async () => {
  const { id } = await twoReleases("release same", { calls: 110, failing: none }, { calls: 110, failing: none });
  const c = await read(`/v1/mcps/${id}/releases/compare?base=1.0.0&head=1.1.0`);
  assert.equal(c.verdict, "same", JSON.stringify(c.reasons));
  assert.equal(c.tools[0].verdict, "same");
  const v = await verdict(id, "1.1.0");
  assert.equal(v.verdict, "pass");
  assert.equal(v.compared_with, "1.0.0");
});

test("a release with too little traffic: insufficient, and the verdict is pending", { skip }, async () => {
  const { id } = await twoReleases("release pending", { calls: 110, failing: none }, { calls: 20, failing: none });
  const c = await read(`/v1/mcps/${id}/releases/compare`);
  assert.equal(c.verdict, "insufficient");
  assert.equal(c.reasons[0].code, "insufficient_calls");
  const v = await verdict(id, "1.1.0");
  assert.equal(v.verdict, "pending");
  // The overview marks both releases on its series.
  const o = await read(`/v1/mcps/${id}/overview`);
  assert.deepEqual(o.releases.map((r) => r.server_version), ["1.0.0", "1.1.0"]);
});
