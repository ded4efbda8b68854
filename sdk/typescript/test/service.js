// Access to the real telemetry service for the tests: `make test` starts it
// (cmd/telemetryd's node tests) and passes its address and a session token
// in TELEMETRY_TEST_BASE_URL and TELEMETRY_TEST_TOKEN. Without them the
// tests that need the service are skipped, except under CI=true, where they
// fail.
import assert from "node:assert/strict";
import { clientInfo, expected } from "./fixtures/scenario.js";

export const base = process.env.TELEMETRY_TEST_BASE_URL;
export const token = process.env.TELEMETRY_TEST_TOKEN;

/** skip is the node:test option that skips a test when there is no service. */
export const skip =
  base && token ? false : process.env.CI === "true" ? false : "no service (TELEMETRY_TEST_BASE_URL, TELEMETRY_TEST_TOKEN)";

export function requireService() {
  assert.ok(base && token, "TELEMETRY_TEST_BASE_URL and TELEMETRY_TEST_TOKEN must be set under CI=true");
}

export async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}

/** newMcp creates an MCP of its own for a test, with an ingest key. */
export async function newMcp(name) {
  requireService();
  const mcp = await api("POST", "/v1/mcps", { name });
  assert.equal(mcp.status, 201, JSON.stringify(mcp.body));
  const key = await api("POST", `/v1/mcps/${mcp.body.id}/keys`, { name: "test" });
  assert.equal(key.status, 201, JSON.stringify(key.body));
  return { id: mcp.body.id, key: key.body.key };
}

/** read GETs a metric read and fails the test unless it answers 200. */
export async function read(path) {
  const r = await api("GET", path);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** waitForCalls polls the overview until it counts want calls (ingest is
 * asynchronous: readable within seconds), then returns it. */
export async function waitForCalls(mcpId, want, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  let o;
  while (Date.now() < deadline) {
    o = await read(`/v1/mcps/${mcpId}/overview`);
    if (o.calls >= want) return o;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail(`overview of ${mcpId} counts ${o?.calls} calls, want ${want}`);
}

/** tool reads one tool's detail. */
export const tool = (mcpId, name) => read(`/v1/mcps/${mcpId}/tools/${encodeURIComponent(name)}`);

/** byName indexes the items of a tools read. */
export async function tools(mcpId) {
  const r = await read(`/v1/mcps/${mcpId}/tools`);
  return Object.fromEntries(r.items.map((t) => [t.name, t]));
}

export async function sessions(mcpId) {
  return (await read(`/v1/mcps/${mcpId}/sessions`)).items;
}

/** errorTypes turns a tool detail's error_types into {type: count}. */
export const errorTypes = (detail) => Object.fromEntries(detail.error_types.map((e) => [e.error_type, e.count]));
/** clients turns a tool detail's clients into {name: calls}. */
export const clients = (detail) => Object.fromEntries(detail.clients.map((c) => [c.client_name, c.calls]));

/** topErrors indexes the insights' top errors as "method name error_type" → count. */
export async function topErrors(mcpId) {
  const r = await read(`/v1/mcps/${mcpId}/insights`);
  return Object.fromEntries(r.top_errors.items.map((e) => [`${e.method} ${e.name} ${e.error_type}`, e.count]));
}

/** eventually retries an assertion until it passes or timeoutMs passes,
 * then throws its last failure: the reads come from tables a batch reaches
 * one after the other, so right after the overview counts a batch another
 * read may not yet. */
export async function eventually(check, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** checkScenario asserts the read-back of `connections` runs of exercise(). */
export function checkScenario(mcpId, connections) {
  return eventually(() => scenarioFigures(mcpId, connections));
}

async function scenarioFigures(mcpId, connections) {
  const o = await waitForCalls(mcpId, expected.calls * connections);
  assert.equal(o.calls, expected.calls * connections, "overview calls");
  assert.equal(o.errors, expected.errors * connections, "overview errors");
  assert.equal(o.sessions, connections, "overview sessions");
  const ts = await tools(mcpId);
  assert.deepEqual(Object.keys(ts).sort(), Object.keys(expected.tools).sort());
  for (const [name, want] of Object.entries(expected.tools)) {
    assert.equal(ts[name].calls, want.calls * connections, `${name} calls`);
    assert.equal(ts[name].errors, want.errors * connections, `${name} errors`);
  }
  const fail = await tool(mcpId, "fail");
  assert.deepEqual(errorTypes(fail), { tool_error: 2 * connections });
  assert.equal(fail.error_types[0].last_message, "quota exceeded");
  assert.deepEqual(clients(fail), { [clientInfo.name]: 2 * connections });
  const boom = await tool(mcpId, "boom");
  assert.deepEqual(errorTypes(boom), { tool_error: connections });
  assert.equal(boom.error_types[0].last_message, "index offline");
  const ss = await sessions(mcpId);
  assert.equal(ss.length, connections);
  for (const s of ss) {
    assert.equal(s.calls, expected.calls);
    assert.equal(s.errors, expected.errors);
    assert.equal(s.client_name, clientInfo.name);
    assert.equal(s.client_version, clientInfo.version);
  }
  return ss;
}

