// The service's own MCP endpoint (/mcp, docs/mcp-endpoint.md) driven by the
// official TypeScript client (@modelcontextprotocol/client 2.x) over
// Streamable HTTP with a personal access token: every tool is listed with a
// description and an input schema, every tool answers the API's own JSON
// for the same query, and another account's token gets not_found for this
// account's ids through every tool. Run by cmd/telemetryd
// TestMCPEndpointTypeScriptClient against the service.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const base = process.env.TELEMETRY_TEST_BASE_URL;
const skip = base ? false : "TELEMETRY_TEST_BASE_URL is not set";

async function call(method, path, token, body) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function must(status, method, path, token, body) {
  const r = await call(method, path, token, body);
  assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

async function tenant(name) {
  const email = `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const s = await must(201, "POST", "/v1/auth/signup", "", { email, password: "a long password", name });
  const mcp = await must(201, "POST", "/v1/mcps", s.token, { name: `${name} server` });
  const key = await must(201, "POST", `/v1/mcps/${mcp.id}/keys`, s.token, { name: "k" });
  const pat = await must(201, "POST", "/v1/account/tokens", s.token, { name: "mcp client", scope: "read" });
  assert.match(pat.token, /^pat_/);
  return { session: s.token, mcp: mcp.id, key: key.key, pat: pat.token };
}

async function connect(token) {
  const client = new Client({ name: "e2e-ts-client", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

async function eventually(f, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}

const TOOLS = ["compare_releases", "get_breakdown", "get_overview", "get_rule_history", "get_session_timeline", "get_slo", "get_tool", "get_tools",
  "list_mcps", "list_probes", "list_releases", "list_rules", "list_sessions", "list_slos", "list_tool_changes", "list_unknown_tools", "top_errors"];

test("every /mcp tool answers the API's figures; other accounts get not_found", { skip }, async () => {
  const a = await tenant("mcp-ts-a");
  const b = await tenant("mcp-ts-b");
  const now = Date.now();
  const items = [
    { timestamp: new Date(now - 180000).toISOString(), session_id: "ts-1", method: "tools/call", name: "search", duration_ms: 120, client_name: "claude-code", user_id: "u-1" },
    { timestamp: new Date(now - 120000).toISOString(), session_id: "ts-1", method: "tools/call", name: "search", duration_ms: 300, error_type: "TimeoutError", error_message: "upstream timed out", client_name: "claude-code", user_id: "u-1" },
    { timestamp: new Date(now - 60000).toISOString(), session_id: "ts-2", method: "tools/call", name: "fetch", duration_ms: 40, error_type: "NotFound", error_message: "no such page", client_name: "cursor" },
  ];
  await must(202, "POST", "/v1/ingest", a.key, { items });
  const rule = await must(201, "POST", `/v1/mcps/${a.mcp}/rules`, a.session,
    { name: "errors", metric: "errors", comparator: ">", threshold: 0, window_minutes: 60, channels: ["in_app"] });
  const mcpPath = `/v1/mcps/${a.mcp}`;
  await eventually(async () => {
    const o = await must(200, "GET", `${mcpPath}/overview`, a.pat);
    assert.equal(o.calls, 3);
    const ins = await must(200, "GET", `${mcpPath}/insights`, a.pat);
    assert.equal(ins.top_errors.items.length, 2);
    await must(200, "GET", `${mcpPath}/sessions/ts-1`, a.pat);
  });
  const ev = await must(200, "POST", `/v1/rules/${rule.id}/evaluate`, a.session);
  assert.equal(ev.fired, true);

  const client = await connect(a.pat);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  for (const t of tools) {
    assert.ok(t.description.length >= 40, `${t.name}: description`);
    assert.equal(t.inputSchema.type, "object", `${t.name}: input schema`);
    assert.equal(t.annotations?.readOnlyHint, true, `${t.name}: read-only`);
  }

  const cases = [
    ["list_mcps", {}, "/v1/mcps"],
    ["get_overview", { mcp_id: a.mcp }, `${mcpPath}/overview`],
    ["get_tools", { mcp_id: a.mcp }, `${mcpPath}/tools`],
    ["get_tool", { mcp_id: a.mcp, name: "search" }, `${mcpPath}/tools/search`],
    ["get_breakdown", { mcp_id: a.mcp, by: "client_name", status: "error" }, `${mcpPath}/breakdown?by=client_name&status=error`],
    ["list_sessions", { mcp_id: a.mcp, limit: 1 }, `${mcpPath}/sessions?limit=1`],
    ["get_session_timeline", { mcp_id: a.mcp, session_id: "ts-1" }, `${mcpPath}/sessions/ts-1`],
    ["list_rules", { mcp_id: a.mcp }, `${mcpPath}/rules`],
    ["get_rule_history", { rule_id: rule.id }, `/v1/rules/${rule.id}/events`],
  ];
  for (const [name, args, path] of cases) {
    const res = await client.callTool({ name, arguments: args });
    assert.notEqual(res.isError, true, `${name}: ${JSON.stringify(res.content)}`);
    assert.equal(res.content[0].type, "text");
    assert.ok(res.content[0].text.length > 0);
    assert.deepEqual(res.structuredContent, await must(200, "GET", path, a.pat), name);
  }
  const top = await client.callTool({ name: "top_errors", arguments: { mcp_id: a.mcp } });
  const insights = await must(200, "GET", `${mcpPath}/insights`, a.pat);
  assert.deepEqual(top.structuredContent.items, insights.top_errors.items);
  assert.match(top.content[0].text, /1× TimeoutError on tools\/call search, last message "upstream timed out"/);
  const topTool = await client.callTool({ name: "top_errors", arguments: { mcp_id: a.mcp, tool: "search" } });
  const detail = await must(200, "GET", `${mcpPath}/tools/search`, a.pat);
  assert.deepEqual(topTool.structuredContent.items.map((e) => [e.error_type, e.count, e.last_message]),
    detail.error_types.map((e) => [e.error_type, e.count, e.last_message]));

  const bad = await client.callTool({ name: "get_overview", arguments: { mcp_id: a.mcp, from: "2026-02-30" } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /^Error invalid_date:/);
  await client.close();

  // Account B's token: account A's ids do not exist, through every tool.
  const other = await connect(b.pat);
  const theirs = await other.callTool({ name: "list_mcps", arguments: {} });
  assert.deepEqual(theirs.structuredContent.items.map((m) => m.id), [b.mcp]);
  for (const [name, args] of [...cases.slice(1), ["top_errors", { mcp_id: a.mcp }]]) {
    const res = await other.callTool({ name, arguments: args });
    assert.equal(res.isError, true, name);
    assert.match(res.content[0].text, /^Error not_found:/, name);
  }
  await other.close();

  // No credential, or an ingest key: an HTTP answer, not an MCP one.
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } } };
  for (const [auth, status] of [[undefined, 401], [`Bearer ${a.key}`, 403]]) {
    const res = await fetch(`${base}/mcp`, {
      method: "POST", body: JSON.stringify(init),
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...(auth ? { Authorization: auth } : {}) },
    });
    assert.equal(res.status, status);
  }
});

// @modelcontextprotocol/inspector-cli, an outside client, against /mcp over
// Streamable HTTP with a personal access token: it lists the tools and
// calls one, whose answer is the API's figures for the same query.
test("@modelcontextprotocol/inspector-cli lists and calls the tools of /mcp", { skip }, async () => {
  const { spawnSync } = await import("node:child_process");
  const { fileURLToPath } = await import("node:url");
  const t = await tenant("inspector");
  const cli = fileURLToPath(new URL("./node_modules/@modelcontextprotocol/inspector-cli/build/cli.js", import.meta.url));
  // The CLI reads its version from "../package.json" of its working
  // directory: run it from node_modules/, one level under this package.
  const cwd = fileURLToPath(new URL("./node_modules/", import.meta.url));
  const run = (...args) => {
    const r = spawnSync(process.execPath, [cli, "--cli", `${base}/mcp`, "--transport", "http",
      "--header", `Authorization: Bearer ${t.pat}`, ...args], { cwd, encoding: "utf8", timeout: 60000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    return JSON.parse(r.stdout);
  };
  const listed = run("--method", "tools/list");
  const names = listed.tools.map((x) => x.name).sort();
  assert.deepEqual(names, TOOLS);
  const called = run("--method", "tools/call", "--tool-name", "get_overview", "--tool-arg", `mcp_id=${t.mcp}`);
  assert.notEqual(called.isError, true, JSON.stringify(called));
  const api = await must(200, "GET", `/v1/mcps/${t.mcp}/overview`, t.session);
  assert.equal(called.structuredContent.mcp_id, t.mcp);
  assert.equal(called.structuredContent.calls, api.calls);
  assert.equal(called.structuredContent.from, api.from);
  assert.equal(called.structuredContent.to, api.to);
});
