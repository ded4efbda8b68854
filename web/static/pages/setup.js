// Keys & setup of one MCP: ingest keys (GET/POST /v1/mcps/{id}/keys, DELETE
// /v1/keys/{keyId}), how to send telemetry (the TypeScript and Go wrappers,
// OpenLLMetry, Shinzo, HTTP ingest or OpenTelemetry),
// and the MCP's own settings (PATCH/DELETE /v1/mcps/{id}).
//
// A new key is shown once, in the creation response; no read returns it.

import * as api from '../api.js';
import * as store from '../store.js';
import * as session from '../session.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, field, formProblem, onSubmit, load, section, table, time, busy, problemBox, confirmDialog, copyButton, codeBlock, toast } from '../ui.js';
import { formValues } from '../auth.js';

const PLACEHOLDER = '<YOUR_INGEST_KEY>';

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'setup', { title: 'Keys & setup' });
  const acct = await store.account().catch(() => null);
  const admin = store.isAdmin(acct) || !acct;

  const newKey = h('div', { testid: 'new-key' });
  const keys = h('div');
  const snippets = h('div');
  const drawSnippets = (key) => snippets.replaceChildren(setupSnippets(key || PLACEHOLDER, !!key));
  drawSnippets(null);

  const reloadKeys = () => load(keys, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/keys`, null, { signal: ctx.signal });
    return keyTable(d.items || [], admin, reloadKeys);
  });

  frame.content.append(
    section('Ingest keys',
      h('p', { class: 'muted' }, 'An ingest key lets an MCP server post telemetry for this MCP, and nothing else. Give each deployment its own key so you can revoke one without touching the others.'),
      newKey,
      keys,
      admin ? createKeyForm(frame.mcpId, (created) => {
        newKey.replaceChildren(showOnce(created));
        drawSnippets(created.key);
        reloadKeys();
      }) : h('p', { class: 'muted' }, 'Only owners and admins can create keys.')),
    section('Send telemetry', snippets),
    admin ? mcpSettings(frame) : null);
  await reloadKeys();
}

function createKeyForm(mcpId, onCreated) {
  const form = h('form', { class: 'form-bar', testid: 'key-create-form', novalidate: true },
    field({ label: 'New key name', name: 'name', required: true, testid: 'key-name', placeholder: 'production' }),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'key-create-submit' }, 'Create key'),
    formProblem());
  onSubmit(form, async () => {
    const created = await api.post(api.path`/v1/mcps/${mcpId}/keys`, { name: formValues(form).name || '' });
    form.reset();
    onCreated(created);
  });
  return form;
}

function showOnce(created) {
  return h('div', { class: 'secret-once', role: 'alert' },
    h('p', null, h('strong', null, `Key “${created.name}” created. `), 'Copy it now: this is the only time it is shown. Store it as a secret; if you lose it, delete it and create a new one.'),
    h('div', { class: 'secret-row' },
      h('code', { class: 'secret', testid: 'key-display' }, created.key),
      copyButton(created.key, { testid: 'key-copy' })),
    h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: 'key-dismiss', onclick: (e) => e.target.closest('.secret-once').remove() }, 'I have stored it'));
}

function keyTable(items, admin, reload) {
  return table({
    testid: 'keys-table',
    rowTestid: 'key-row',
    rows: items,
    empty: 'No keys yet. Create one to start sending telemetry.',
    rowAttrs: (k) => ({ dataset: { keyId: k.id } }),
    columns: [
      { key: 'name', label: 'Name', render: (k) => h('span', { class: 'strong' }, k.name) },
      { key: 'hint', label: 'Key', render: (k) => h('code', { testid: 'key-hint' }, k.hint) },
      { key: 'created_at', label: 'Created', render: (k) => time(k.created_at) },
      { key: 'last_used_at', label: 'Last used', render: (k) => (k.last_used_at ? time(k.last_used_at) : h('span', { class: 'muted' }, 'Never')) },
      {
        key: 'actions', label: '', render: (k) => {
          if (!admin) return '';
          const msg = h('div');
          const del = h('button', { type: 'button', class: 'btn btn-small btn-danger-ghost', testid: 'key-delete' }, 'Delete');
          del.addEventListener('click', async () => {
            if (!await confirmDialog(`Delete the key “${k.name}”? Servers using it stop being able to send telemetry within seconds.`)) return;
            try {
              await busy(del, () => api.del(api.path`/v1/keys/${k.id}`));
              toast(`Deleted key ${k.name}.`, 'success');
              reload();
            } catch (err) {
              msg.replaceChildren(problemBox(err));
            }
          });
          return h('div', null, del, msg);
        },
      },
    ],
  });
}

/** Examples built from this page's own origin, with the new key if there is one. */
function setupSnippets(key, isReal) {
  const origin = window.location.origin;
  const now = new Date().toISOString();
  const sample = {
    items: [{
      id: (window.crypto?.randomUUID?.() || '6f1c2a9e-0000-4000-8000-000000000001'),
      timestamp: now,
      session_id: 's-1',
      method: 'tools/call',
      name: 'search_docs',
      duration_ms: 182.5,
      status: 'ok',
      client_name: 'my-client',
      client_version: '1.0.0',
      user_id: 'u-1',
    }],
  };
  const curl = [
    `curl -X POST '${origin}/v1/ingest' \\`,
    `  -H 'Authorization: Bearer ${key}' \\`,
    "  -H 'Content-Type: application/json' \\",
    "  --data-binary @- <<'JSON'",
    JSON.stringify(sample, null, 2),
    'JSON',
  ].join('\n');
  const otel = [
    `OTEL_EXPORTER_OTLP_ENDPOINT=${origin}/v1/otlp`,
    `OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20${key}`,
    'OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf',
    'OTEL_TRACES_EXPORTER=otlp',
  ].join('\n');
  const typescript = [
    '// npm install @mcpscope/telemetry',
    "import { instrument } from '@mcpscope/telemetry';",
    '',
    "const server = new McpServer({ name: 'my-server', version: '1.0.0' });",
    `instrument(server, { key: '${key}', endpoint: '${origin}' });`,
    '// or: instrument(server) with TELEMETRY_KEY and TELEMETRY_ENDPOINT in the environment',
  ].join('\n');
  const golang = [
    'import (',
    '\t"github.com/mcpscope/telemetry/client"',
    '\t"github.com/mcpscope/telemetry/mcpgo"',
    ')',
    '',
    'server := mcp.NewServer(&mcp.Implementation{Name: "my-server", Version: "1.0.0"}, nil)',
    'tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{',
    `\tEndpoint: "${origin}", Key: "${key}",`,
    '}})',
    'defer tel.Close(ctx) // sends what is still queued',
  ].join('\n');
  const openllmetry = [
    "import { McpInstrumentation } from '@traceloop/instrumentation-mcp';",
    "import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';",
    "import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';",
    "import { Client } from '@modelcontextprotocol/sdk/client/index.js';",
    "import { Server } from '@modelcontextprotocol/sdk/server/index.js';",
    '',
    'const exporter = new OTLPTraceExporter({',
    `  url: '${origin}/v1/otlp/v1/traces',`,
    `  headers: { Authorization: 'Bearer ${key}' },`,
    '});',
    'const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });',
    'const mcp = new McpInstrumentation();',
    'mcp.setTracerProvider(provider);',
    'mcp.manuallyInstrument({ Client, Server }); // ESM: the require hook does not see the SDK',
  ].join('\n');
  const shinzo = [
    "import { instrumentServer } from '@shinzolabs/instrumentation-mcp';",
    '',
    'instrumentServer(server, {',
    "  serverName: 'my-server',",
    "  serverVersion: '1.0.0',",
    `  exporterEndpoint: '${origin}/v1/otlp/v1',`,
    `  exporterAuth: { type: 'bearer', token: '${key}' },`,
    '});',
  ].join('\n');
  return h('div', { class: 'snippets' },
    isReal ? h('p', { class: 'notice' }, 'The examples below contain your new key. Treat them as secrets.') : h('p', { class: 'muted' }, `Replace ${PLACEHOLDER} with a key from above. The service's address is `, h('code', { testid: 'service-origin' }, origin), '.'),
    h('h3', null, 'TypeScript MCP server (@modelcontextprotocol/sdk)'),
    h('p', { class: 'muted' }, 'One call wraps an McpServer or Server: every request it handles is recorded, with its duration, errors, session and client. Tool arguments are sent only with recordArguments: true, through your redact hook.'),
    codeBlock(typescript, { testid: 'snippet-typescript' }),
    h('h3', null, 'Go MCP server (github.com/modelcontextprotocol/go-sdk)'),
    h('p', { class: 'muted' }, 'A receiving middleware records every request the server handles and sends it in the background.'),
    codeBlock(golang, { testid: 'snippet-go' }),
    h('h3', null, 'OpenLLMetry (@traceloop/instrumentation-mcp)'),
    h('p', { class: 'muted' }, 'Its spans (<tool>.tool, <method>.mcp) are read as they are; the two sides of one call count once.'),
    codeBlock(openllmetry, { testid: 'snippet-openllmetry' }),
    h('h3', null, 'Shinzo (@shinzolabs/instrumentation-mcp)'),
    h('p', { class: 'muted' }, 'Its tool spans become calls; its metrics exports are answered but not stored.'),
    codeBlock(shinzo, { testid: 'snippet-shinzo' }),
    h('h3', null, 'HTTP (any SDK or language)'),
    h('p', { class: 'muted' }, 'Post batches of up to 1000 items as JSON to /v1/ingest. The key names the MCP. The answer is 202 with the counts accepted and dropped; items with an id already seen in the last 24 hours are dropped, so retrying a batch never double counts.'),
    codeBlock(curl, { testid: 'snippet-curl' }),
    h('h3', null, 'OpenTelemetry'),
    h('p', { class: 'muted' }, 'Point an OTLP/HTTP trace exporter at the service; spans that follow the OpenTelemetry MCP conventions become telemetry items. The space after Bearer is written %20, as the OpenTelemetry specification asks for this variable.'),
    codeBlock(otel, { testid: 'snippet-otel' }));
}

function mcpSettings(frame) {
  const body = h('div');
  frame.mcp.then((m) => {
    const form = h('form', { class: 'form', testid: 'mcp-edit-form', novalidate: true },
      field({ label: 'Name', name: 'name', required: true, value: m.name, testid: 'mcp-edit-name' }),
      field({ label: 'Description', name: 'description', type: 'textarea', rows: 2, value: m.description || '', testid: 'mcp-edit-description' }),
      formProblem(),
      h('button', { type: 'submit', class: 'btn btn-primary', testid: 'mcp-edit-submit' }, 'Save'));
    onSubmit(form, async () => {
      const v = new FormData(form);
      const updated = await api.patch(api.path`/v1/mcps/${m.id}`, { name: v.get('name'), description: v.get('description') });
      store.invalidateMcps();
      Object.assign(m, updated);
      document.querySelector('[data-testid="mcp-title"]').textContent = updated.name;
      toast('MCP saved.', 'success');
    });
    const del = h('button', { type: 'button', class: 'btn btn-danger', testid: 'mcp-delete' }, 'Delete this MCP');
    const msg = h('div');
    del.addEventListener('click', async () => {
      if (!await confirmDialog(`Delete “${m.name}”? Its keys stop working and its alert rules are removed.`)) return;
      try {
        await busy(del, () => api.del(api.path`/v1/mcps/${m.id}`));
        store.invalidateMcps();
        session.setLastMcp(null);
        toast(`Deleted ${m.name}.`, 'success');
        router.navigate('/mcps');
      } catch (err) {
        msg.replaceChildren(problemBox(err));
      }
    });
    body.replaceChildren(form, h('div', { class: 'danger-zone' }, h('h3', null, 'Danger zone'), del, msg));
  }, (err) => body.replaceChildren(problemBox(err)));
  return section('MCP settings', body);
}
