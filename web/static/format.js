// format.js: how numbers, latencies, rates and times read on screen.
// Missing values (null: "no item in scope carried a duration") show as an em
// dash, never as 0, so "not measured" is not mistaken for "instant".

export const DASH = '—';

const intFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const numFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

export function count(v) {
  return typeof v === 'number' && Number.isFinite(v) ? intFmt.format(v) : DASH;
}

export function number(v) {
  return typeof v === 'number' && Number.isFinite(v) ? numFmt.format(v) : DASH;
}

/** Milliseconds with a precision that suits their size. */
export function ms(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  if (v >= 10000) return `${numFmt.format(v / 1000)} s`;
  if (v >= 100) return `${intFmt.format(v)} ms`;
  if (v >= 10) return `${v.toFixed(1)} ms`;
  if (v === 0) return '0 ms';
  return `${v.toFixed(2)} ms`;
}

/** A ratio in 0..1 as a percentage. */
export function percent(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  const p = v * 100;
  if (p === 0) return '0%';
  if (p < 0.01) return '<0.01%';
  return `${p >= 10 ? p.toFixed(1) : p.toFixed(2)}%`;
}

/** "2026-11-20 10:00 UTC": the API speaks UTC days, so the UI does too. */
export function timestamp(iso) {
  if (!iso) return DASH;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  return `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The local-time reading of a timestamp, for tooltips. */
export function localTime(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '' : new Date(t).toLocaleString();
}

const ISO_TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
export const looksLikeTimestamp = (v) => typeof v === 'string' && ISO_TS.test(v);

/** "slowest_tools" → "Slowest tools", "p95_ms" → "p95 (ms)". */
export function humanize(key) {
  const s = String(key);
  const ms = s.match(/^(.*)_ms$/);
  if (ms) return `${humanize(ms[1])} (ms)`;
  const words = s.replace(/_/g, ' ').trim();
  if (/^p\d+$/.test(words)) return words;
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * Formats a value of unknown shape by its key: *_ms as latency, rates and
 * shares as percentages, timestamps in UTC, numbers with grouping. Used where
 * the contract does not fix shapes (insights).
 */
export function byKey(key, v) {
  if (v === null || v === undefined) return DASH;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') {
    if (/_ms$|^ms$/.test(key)) return ms(v);
    if (/(rate|ratio|share|stickiness|retention|percent)/i.test(key) && v >= 0 && v <= 1) return percent(v);
    return number(v);
  }
  if (looksLikeTimestamp(v)) return timestamp(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
