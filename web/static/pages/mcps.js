// MCP list and create: GET/POST /v1/mcps.

import * as api from '../api.js';
import * as store from '../store.js';
import * as router from '../router.js';
import { h, field, formProblem, onSubmit, load, pageHeader, section, table, time, toast } from '../ui.js';
import { formValues } from '../auth.js';

export async function render({ root }) {
  const list = h('div', { testid: 'mcp-list-section' });
  const createSection = h('div');
  root.append(pageHeader('MCP servers'), h('div', { class: 'grid-2 grid-wide-first' }, section('Your MCPs', list), createSection));

  const acct = await store.account().catch(() => null);
  if (store.isAdmin(acct) || !acct) createSection.append(createForm());
  else createSection.append(section('Add an MCP', h('p', { class: 'muted' }, 'Only owners and admins can add MCPs.')));

  await load(list, async () => {
    const items = await store.mcps({ force: true });
    return table({
      testid: 'mcp-list',
      rowTestid: 'mcp-row',
      rows: items,
      empty: 'No MCPs yet. Add one to get an ingest key and start sending telemetry.',
      columns: [
        { key: 'name', label: 'Name', render: (m) => h('a', { href: router.href(`/mcps/${router.seg(m.id)}/overview`), testid: 'mcp-link', class: 'strong nowrap' }, m.name) },
        { key: 'description', label: 'Description', render: (m) => m.description || h('span', { class: 'muted' }, '—') },
        { key: 'created_at', label: 'Created', render: (m) => time(m.created_at) },
        {
          key: 'links', label: '', render: (m) => h('div', { class: 'row-actions' },
            h('a', { class: 'btn btn-small btn-ghost', href: router.href(`/mcps/${router.seg(m.id)}/setup`) }, 'Keys & setup'),
            h('a', { class: 'btn btn-small btn-ghost', href: router.href(`/mcps/${router.seg(m.id)}/alerts`) }, 'Alerts')),
        },
      ],
    });
  });
}

function createForm() {
  const form = h('form', { class: 'form', testid: 'mcp-create-form', novalidate: true },
    field({ label: 'Name', name: 'name', required: true, testid: 'mcp-name', placeholder: 'docs-search' }),
    field({ label: 'Description', name: 'description', type: 'textarea', testid: 'mcp-description', rows: 2 }),
    formProblem(),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'mcp-create-submit' }, 'Add MCP'));
  onSubmit(form, async () => {
    const v = formValues(form);
    const body = { name: v.name || '' };
    if (v.description) body.description = v.description;
    const mcp = await api.post('/v1/mcps', body);
    store.invalidateMcps();
    toast(`Added ${mcp.name}. Create an ingest key to start sending data.`, 'success');
    router.navigate(`/mcps/${router.seg(mcp.id)}/setup`);
  });
  return section('Add an MCP', h('p', { class: 'muted' }, 'Each MCP server you run gets its own metrics, ingest keys and alert rules.'), form);
}
