// ui.js: small DOM building blocks shared by every page.
//
// Everything from the API is inserted as text (never innerHTML), so a tool or
// rule name can never inject markup.

import { isAbort } from './api.js';
import * as fmt from './format.js';

/**
 * h(tag, attrs, ...children) creates an element. attrs: class, testid
 * (data-testid), on<event> functions, boolean and value properties, any other
 * attribute as a string. children: nodes, strings, numbers, arrays; null,
 * undefined and false are skipped.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'testid') el.dataset.testid = v;
    else if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'indeterminate') el[k] = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

let uid = 0;
export const nextId = (prefix = 'f') => `${prefix}-${++uid}`;

/** A spinner with a label, announced to screen readers. */
export function loadingBlock(text = 'Loading…') {
  return h('div', { class: 'loading', role: 'status', testid: 'loading-block' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

/** The problem (API or other error) explained in words. */
export function problemBox(err, { showFieldErrors = true } = {}) {
  const detail = err?.detail || err?.message || 'Something went wrong.';
  const extra = [];
  if (err?.retryAfter) extra.push(`Try again in ${err.retryAfter} second${err.retryAfter === 1 ? '' : 's'}.`);
  if (err?.status === 403) extra.push('Ask an owner or admin of this account if you need this.');
  const fields = showFieldErrors && err?.errors?.length
    ? h('ul', { class: 'problem-fields' }, err.errors.map((e) => h('li', null, e.location ? h('code', null, e.location) : null, e.location ? ': ' : '', e.message || '')))
    : null;
  return h('div', { class: 'problem', role: 'alert', testid: 'problem', dataset: { code: err?.code || '' } },
    h('p', null, detail, extra.length ? ` ${extra.join(' ')}` : ''),
    fields,
    err?.code ? h('p', { class: 'problem-code' }, 'Code: ', h('code', null, err.code)) : null);
}

/**
 * load fills container with a loading indicator, then with what build()
 * returns, or with the problem it threw. Aborted loads (the user navigated
 * away) leave the container alone. onError(err) runs too, e.g. to mark form
 * fields.
 */
export async function load(container, build, { onError } = {}) {
  container.replaceChildren(loadingBlock());
  container.setAttribute('aria-busy', 'true');
  try {
    const node = await build();
    container.replaceChildren(...[node].flat().filter(Boolean));
  } catch (err) {
    if (isAbort(err)) return;
    container.replaceChildren(problemBox(err));
    onError?.(err);
  } finally {
    container.removeAttribute('aria-busy');
  }
}

/**
 * busy disables a button while promise-returning fn runs and shows it is
 * working; it resolves to fn's result and rethrows its error.
 */
export async function busy(button, fn) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.classList.add('is-busy');
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.classList.remove('is-busy');
  }
}

// ---------------------------------------------------------------- forms

/**
 * field builds a labelled input inside a .field wrapper, where per-field
 * errors appear. opts: label, name, type, value, required, testid, hint,
 * placeholder, autocomplete, min, max, step, minlength, options (for select:
 * [{value, label}]), attrs (extra attributes).
 */
export function field(opts) {
  const id = nextId(opts.name || 'f');
  const common = {
    id, name: opts.name, required: opts.required, testid: opts.testid,
    placeholder: opts.placeholder, autocomplete: opts.autocomplete,
    'aria-describedby': opts.hint ? `${id}-hint` : null, ...(opts.attrs || {}),
  };
  let input;
  if (opts.type === 'select') {
    input = h('select', common, (opts.options || []).map((o) => h('option', { value: o.value, selected: String(o.value) === String(opts.value ?? '') }, o.label ?? o.value)));
  } else if (opts.type === 'textarea') {
    input = h('textarea', { ...common, rows: opts.rows || 3 });
    input.value = opts.value ?? '';
  } else {
    input = h('input', {
      ...common, type: opts.type || 'text', value: opts.value ?? '',
      min: opts.min, max: opts.max, step: opts.step, minlength: opts.minlength, maxlength: opts.maxlength,
    });
  }
  return h('div', { class: 'field' },
    h('label', { for: id }, opts.label, opts.required ? null : opts.optionalLabel === false ? null : h('span', { class: 'optional' }, ' (optional)')),
    input,
    opts.hint ? h('p', { class: 'hint', id: `${id}-hint` }, opts.hint) : null);
}

/** A checkbox with its label to the right. */
export function checkbox({ label, name, value, checked, testid, disabled, hint }) {
  const id = nextId(name || 'c');
  return h('div', { class: 'field field-check' },
    h('input', { type: 'checkbox', id, name, value, checked: !!checked, testid, disabled }),
    h('label', { for: id }, label),
    hint ? h('p', { class: 'hint' }, hint) : null);
}

/** The box where a form shows a problem that is not about one field. */
export function formProblem() {
  return h('div', { class: 'form-problem', hidden: true, 'aria-live': 'polite' });
}

/** Maps "body.channels[0]" or "query.from" to the input name "channels"/"from". */
export function fieldFromLocation(location) {
  if (!location) return null;
  const parts = String(location).replace(/^(body|query|path|header|cookie)\./, '').split(/[.[\]]+/).filter(Boolean);
  return parts.length ? parts[0] : null;
}

export function clearFormErrors(form) {
  form.querySelectorAll('.field-error').forEach((e) => e.remove());
  form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
  const box = form.querySelector('.form-problem');
  if (box) { box.replaceChildren(); box.hidden = true; }
}

/**
 * showFormErrors puts each errors[].message next to the input named after
 * its location, and the detail (with anything it could not place) in the
 * form's problem box. Returns true if the error was shown.
 */
export function showFormErrors(form, err) {
  clearFormErrors(form);
  const unplaced = [];
  let first = null;
  for (const e of err?.errors || []) {
    const name = fieldFromLocation(e.location);
    const input = name ? form.querySelector(`[name="${CSS.escape(name)}"]`) : null;
    if (!input) { unplaced.push(e); continue; }
    input.setAttribute('aria-invalid', 'true');
    const wrap = input.closest('fieldset') || input.closest('.field') || input.parentElement;
    wrap.append(h('p', { class: 'field-error', testid: 'field-error', dataset: { field: name } }, e.message || 'Invalid value.'));
    first ??= input;
  }
  const box = form.querySelector('.form-problem');
  if (box) {
    box.replaceChildren(problemBox({ ...err, detail: err?.detail || err?.message, errors: unplaced }, { showFieldErrors: unplaced.length > 0 }));
    box.hidden = false;
  }
  (first || box)?.focus?.();
  return true;
}

/** Sets a client-side validation message on one field, the same way. */
export function fieldError(form, name, message) {
  showFormErrors(form, { detail: 'Please correct the highlighted field.', errors: [{ location: `body.${name}`, message }] });
}

/**
 * submitForm wires a form's submit to fn(form): the submit button is busy
 * while fn runs, errors from fn land next to their fields.
 */
export function onSubmit(form, fn) {
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const button = form.querySelector('[type=submit]');
    clearFormErrors(form);
    try {
      await (button ? busy(button, () => fn(form)) : fn(form));
    } catch (err) {
      if (isAbort(err)) return;
      showFormErrors(form, err);
    }
  });
}

// ---------------------------------------------------------------- widgets

/** Copies text to the clipboard; falls back to a selection for plain http. */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const ta = h('textarea', { class: 'sr-only', readonly: true });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  try {
    if (!document.execCommand('copy')) throw new Error('copy refused');
  } finally {
    ta.remove();
  }
}

export function copyButton(getText, { testid, label = 'Copy' } = {}) {
  const button = h('button', { type: 'button', class: 'btn btn-small', testid }, label);
  button.addEventListener('click', async () => {
    try {
      await copyText(typeof getText === 'function' ? getText() : getText);
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Select and copy by hand';
    }
    setTimeout(() => { button.textContent = label; }, 2000);
  });
  return button;
}

/** A code block with a copy button. */
export function codeBlock(text, { testid, label } = {}) {
  return h('div', { class: 'code-block' },
    label ? h('div', { class: 'code-label' }, label) : null,
    h('pre', { testid }, h('code', null, text)),
    copyButton(text, { testid: testid ? `${testid}-copy` : undefined }));
}

let toastRegion = null;
/** A short message that disappears by itself; kind: info, success, error. */
export function toast(message, kind = 'info') {
  if (!toastRegion) {
    toastRegion = h('div', { class: 'toasts', 'aria-live': 'polite', role: 'status' });
    document.body.append(toastRegion);
  }
  const t = h('div', { class: `toast toast-${kind}`, testid: 'toast' }, message);
  toastRegion.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

/** A modal confirmation; resolves true when confirmed. */
export function confirmDialog(message, { confirmLabel = 'Delete', danger = true } = {}) {
  return new Promise((resolve) => {
    const ok = h('button', { type: 'button', class: danger ? 'btn btn-danger' : 'btn btn-primary', testid: 'confirm-ok' }, confirmLabel);
    const cancel = h('button', { type: 'button', class: 'btn', testid: 'confirm-cancel' }, 'Cancel');
    const dialog = h('dialog', { class: 'dialog', testid: 'confirm-dialog' },
      h('p', null, message), h('div', { class: 'actions' }, cancel, ok));
    const finish = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    ok.addEventListener('click', () => finish(true));
    cancel.addEventListener('click', () => finish(false));
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); finish(false); });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/**
 * table renders rows under columns [{key, label, render(row), num, sortable,
 * value(row)}]. sort: {key, dir, onSort(key)} makes headers buttons.
 */
export function table({ columns, rows, testid, rowTestid, empty = 'Nothing to show.', sort, rowAttrs }) {
  if (!rows.length) return h('p', { class: 'empty', testid: testid ? `${testid}-empty` : undefined }, empty);
  const head = h('tr', null, columns.map((c) => {
    const cls = c.num ? 'num' : null;
    if (!sort || c.sortable === false) return h('th', { scope: 'col', class: cls }, c.label);
    const active = sort.key === c.key;
    return h('th', { scope: 'col', class: cls, 'aria-sort': active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none' },
      h('button', { type: 'button', class: 'sort', testid: testid ? `${testid}-sort-${c.key}` : undefined, onclick: () => sort.onSort(c.key) },
        c.label, h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, active ? (sort.dir === 'asc' ? ' ▲' : ' ▼') : '')));
  }));
  const body = rows.map((row) => h('tr', { testid: rowTestid, ...(rowAttrs ? rowAttrs(row) : {}) },
    columns.map((c) => h('td', { class: c.num ? 'num' : null, 'data-label': c.label }, c.render ? c.render(row) : fmt.byKey(c.key, row[c.key])))));
  return h('div', { class: 'table-wrap' }, h('table', { class: sort ? 'table sortable' : 'table', testid }, h('thead', null, head), h('tbody', null, body)));
}

/** A <time> showing UTC with the local reading as tooltip. */
export function time(iso) {
  if (!iso) return fmt.DASH;
  return h('time', { datetime: iso, title: fmt.localTime(iso) }, fmt.timestamp(iso));
}

/** A labelled figure: {label, value (display text), raw (data-value), testid, hint}. */
export function stat({ label, value, raw, testid, hint, tone, delta }) {
  return h('div', { class: ['stat', tone ? `stat-${tone}` : null] },
    h('div', { class: 'stat-label' }, label),
    h('div', { class: 'stat-value', testid, 'data-value': raw === null || raw === undefined ? '' : String(raw) }, value),
    delta ? h('div', { class: ['stat-delta', delta.tone ? `text-${delta.tone}` : null], testid: testid ? `${testid}-delta` : null, 'data-value': delta.raw ?? '' }, delta.text) : null,
    hint ? h('div', { class: 'stat-hint' }, hint) : null);
}

/** A page section with a heading. */
export function section(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', null, title) : null, ...children);
}

export function pageHeader(title, ...extra) {
  document.title = `${title} · MCPScope`;
  return h('div', { class: 'page-header' }, h('h1', null, title), extra.length ? h('div', { class: 'page-actions' }, ...extra) : null);
}

/** A link rendered as a pill/badge for states such as "firing". */
export function badge(text, tone = 'neutral', attrs = {}) {
  return h('span', { class: `badge badge-${tone}`, ...attrs }, text);
}
