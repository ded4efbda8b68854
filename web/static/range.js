// range.js: the date range of metric pages, kept in the URL.
//
// ?preset=30 means "the last 30 whole UTC days including today" and moves
// with the calendar, so a shared link always shows recent data; ?from=&to=
// pins exact days. Without either we use the API's own default (7 days).

import { h, showFormErrors, clearFormErrors, fieldError } from './ui.js';

export const PRESETS = [7, 30, 90, 365];
export const DEFAULT_PRESET = 7;
const DAY = 86400000;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function isDate(s) {
  const m = DATE_RE.exec(s || '');
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return d.toISOString().slice(0, 10) === s;
}

export function todayUTC() {
  return new Date().toISOString().slice(0, 10);
}

export function addDays(date, n) {
  return new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
}

/** Days in from..to, counting both ends. */
export function daysBetween(from, to) {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY) + 1;
}

/** The last n UTC days ending today. */
export function presetRange(n) {
  const to = todayUTC();
  return { preset: n, from: addDays(to, -(n - 1)), to };
}

/**
 * fromQuery reads {preset, from, to} from URLSearchParams. Explicit dates are
 * passed on even when invalid, so the API's own message (invalid_date,
 * invalid_range) appears next to the picker.
 */
export function fromQuery(query) {
  const from = query.get('from');
  const to = query.get('to');
  if (from || to) {
    const t = to || todayUTC();
    const f = from || (isDate(t) ? addDays(t, -(DEFAULT_PRESET - 1)) : t);
    return { preset: null, from: f, to: t };
  }
  const n = Number(query.get('preset'));
  return presetRange(PRESETS.includes(n) ? n : DEFAULT_PRESET);
}

/** The query parameters that describe a range in a URL. */
export function toQuery(range) {
  return range.preset ? { preset: range.preset } : { from: range.from, to: range.to };
}

/** The parameters the API takes. */
export function apiQuery(range) {
  return { from: range.from, to: range.to };
}

export function label(range) {
  if (range.preset) return `Last ${range.preset} days`;
  return range.from === range.to ? range.from : `${range.from} – ${range.to}`;
}

/**
 * picker renders preset buttons and from/to inputs. onChange(range) gets a
 * new range; showError(err) on the returned element marks the inputs with an
 * API problem about query.from/query.to.
 */
export function picker(range, onChange) {
  const today = todayUTC();
  const presets = h('div', { class: 'segmented', role: 'group', 'aria-label': 'Preset ranges' },
    PRESETS.map((n) => h('button', {
      type: 'button', class: 'seg-btn', testid: `range-preset-${n}`, 'aria-pressed': String(range.preset === n),
      onclick: () => onChange(presetRange(n)),
    }, `${n}d`)));

  const fromInput = h('input', { type: 'date', name: 'from', value: range.from, max: today, required: true, testid: 'range-from', 'aria-label': 'From (UTC day)' });
  const toInput = h('input', { type: 'date', name: 'to', value: range.to, max: today, required: true, testid: 'range-to', 'aria-label': 'To (UTC day)' });
  const form = h('form', { class: 'range-form', novalidate: true },
    h('div', { class: 'field field-inline' }, h('span', { class: 'range-label' }, 'From'), fromInput),
    h('div', { class: 'field field-inline' }, h('span', { class: 'range-label' }, 'To'), toInput),
    h('button', { type: 'submit', class: 'btn', testid: 'range-apply' }, 'Apply'),
    h('div', { class: 'form-problem', hidden: true, testid: 'range-error' }));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    clearFormErrors(form);
    const from = fromInput.value;
    const to = toInput.value;
    if (!isDate(from)) return fieldError(form, 'from', 'Pick a day (YYYY-MM-DD).');
    if (!isDate(to)) return fieldError(form, 'to', 'Pick a day (YYYY-MM-DD).');
    if (from > to) return fieldError(form, 'from', 'Must not be after "to".');
    const n = daysBetween(from, to);
    if (n > 1096) return fieldError(form, 'from', `At most 1096 days; this range has ${n}.`);
    // A custom range that equals a preset still reads better as the preset.
    if (to === today && PRESETS.includes(n)) return onChange(presetRange(n));
    return onChange({ preset: null, from, to });
  });

  const el = h('div', { class: 'range-picker', testid: 'range-picker' },
    h('span', { class: 'range-summary', testid: 'range-summary' }, `${label(range)} (UTC)`), presets, form);
  el.showError = (err) => {
    const mine = (err?.errors || []).some((e) => /^query\.(from|to)$/.test(e.location || ''));
    if (mine || ['invalid_range', 'invalid_date', 'range_too_large'].includes(err?.code)) showFormErrors(form, err);
  };
  return el;
}
