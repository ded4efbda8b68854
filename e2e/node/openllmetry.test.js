// OpenLLMetry's @traceloop/instrumentation-mcp 0.27.0, exporting OTLP/HTTP
// JSON to the service, reads back exactly. The instrumentation wraps the
// MCP client's (and server's) request method; its require hook misses the
// SDK's ESM paths, so the classes are instrumented by hand as its docs say.
import assert from "node:assert/strict";
import { test } from "node:test";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { McpInstrumentation } from "@traceloop/instrumentation-mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { z } from "zod";
import { clientInfo, exercise, expected, makeServer } from "../../sdk/typescript/test/fixtures/scenario.js";
import { base, checkScenario, eventually, newMcp, skip, topErrors } from "../../sdk/typescript/test/service.js";

test("@traceloop/instrumentation-mcp spans read back exactly", { skip }, async () => {
  const { id, key } = await newMcp("openllmetry");
  const exporter = new OTLPTraceExporter({ url: `${base}/v1/otlp/v1/traces`, headers: { Authorization: `Bearer ${key}` } });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "agent" }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 60000 })],
  });
  const inst = new McpInstrumentation();
  inst.setTracerProvider(provider);
  inst.manuallyInstrument({ Client, Server });
  try {
    const server = makeServer({ McpServer, z });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    const client = new Client(clientInfo);
    await client.connect(ct);
    await exercise(client);
    await client.close();
    await provider.forceFlush();
  } finally {
    inst.disable();
    await provider.shutdown();
  }
  // One client connection: every call once, the session span not a call.
  await checkScenario(id, 1);
  await eventually(async () =>
    assert.deepEqual(await topErrors(id), {
      "tools/call fail tool_error": 2,
      "tools/call missing tool_error": 1,
      "tools/call boom tool_error": 1,
      "resources/read docs://nope -32602": 1,
    }),
  );
});
