// charts.js: daily charts on top of uPlot (vendor/uPlot.iife.min.js, loaded as
// a classic script before the app so window.uPlot exists).
//
// The API's series have exactly one entry per UTC day, so the x axis is days
// at UTC midnight, labelled in UTC. A null value (no duration measured that
// day) leaves a gap instead of drawing a false zero. Each chart resizes with
// its container and is destroyed when the page's AbortSignal fires.

import { h } from './ui.js';
import * as fmt from './format.js';

const DAY_S = 86400;
const DAY_INCRS = [1, 2, 3, 7, 14, 30, 60, 90, 180, 365].map((n) => n * DAY_S);

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

const toSeconds = (date) => Date.parse(`${date}T00:00:00Z`) / 1000;
const dayLabel = (ts) => new Date(ts * 1000).toISOString().slice(0, 10);

/**
 * dailyChart returns an element holding a chart of the given daily series.
 * opts: dates ['YYYY-MM-DD'], series [{label, values, color (CSS var name),
 * fill}], format (value → text), title, testid, signal, height, marks
 * [{from, to}] (RFC 3339: periods shaded behind the series, e.g. a probe's
 * down periods; each covers the days or hours it touches).
 */
export function dailyChart({ dates, starts, series, format = fmt.number, title, testid, signal, height = 220, marks = [], releases = [] }) {
  // releases ([{server_version, first_seen_at}], from the read) are drawn
  // as vertical lines at their first item and listed under the chart.
  // starts (RFC 3339, one per entry) make an hourly chart: the x axis is
  // the entries' first instants and its labels include the hour.
  const hourly = Array.isArray(starts);
  const unit = hourly ? 'hour' : 'day';
  const labels = hourly ? starts.map((s) => `${s.slice(0, 10)} ${s.slice(11, 16)}`) : dates;
  const plot = h('div', { class: 'chart-plot', role: 'img', 'aria-label': `${title}: chart by ${unit}; the numbers are in the table below it` });
  const wrap = h('figure', { class: 'chart', testid, 'data-granularity': unit, 'data-marks': String(marks.length) },
    title ? h('figcaption', null, title) : null,
    plot,
    releases.length ? h('p', { class: 'chart-releases muted', testid: testid ? `${testid}-releases` : null },
      'Releases: ', releases.map((r, i) => h('span', { class: 'release-marker' }, `${i ? ', ' : ''}${r.server_version} (${r.first_seen_at.slice(0, 16).replace('T', ' ')} UTC)`))) : null,
    dataTable(labels, series, format, hourly));

  if (!window.uPlot) {
    plot.replaceWith(h('p', { class: 'empty' }, 'The chart library did not load; the numbers are in the table.'));
    return wrap;
  }

  let chart = null;
  let frame = 0;
  // Drawing inside the observer callback would resize what is observed in
  // the same frame (a "ResizeObserver loop" warning); defer to the next one.
  const observer = new ResizeObserver(() => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => {
      const width = Math.floor(plot.clientWidth);
      if (width <= 0 || signal?.aborted) return;
      if (!chart) chart = create(plot, width, height, hourly ? starts.map((x) => Date.parse(x) / 1000) : dates.map(toSeconds), series, format, hourly, marks, wrap, releases);
      else if (Math.abs(chart.width - width) > 1) chart.setSize({ width, height });
    });
  });
  observer.observe(plot);
  signal?.addEventListener('abort', () => {
    observer.disconnect();
    cancelAnimationFrame(frame);
    chart?.destroy();
  }, { once: true });
  return wrap;
}

const HOUR_INCRS = [1, 2, 3, 6, 12, 24, 48].map((n) => n * 3600);
const hourLabel = (ts) => new Date(ts * 1000).toISOString().slice(0, 16).replace('T', ' ');

// drawMarks shades each mark's steps (the days or hours it touches) behind
// the series and counts the bands drawn on the figure (data-marks-drawn).
function drawMarks(u, marks, step, fig) {
  const { ctx, bbox } = u;
  let drawn = 0;
  ctx.save();
  ctx.fillStyle = colorWithAlpha(cssVar('--chart-errors', '#dc2626'), 0.14);
  for (const m of marks) {
    const from = Math.floor(Date.parse(m.from) / 1000 / step) * step - step / 2;
    const to = Math.floor(Date.parse(m.to) / 1000 / step) * step + step / 2;
    const x0 = Math.max(bbox.left, u.valToPos(from, 'x', true));
    const x1 = Math.min(bbox.left + bbox.width, u.valToPos(to, 'x', true));
    if (!(x1 > x0)) continue;
    ctx.fillRect(x0, bbox.top, Math.max(x1 - x0, 2), bbox.height);
    drawn += 1;
  }
  ctx.restore();
  fig.dataset.marksDrawn = String(drawn);
}

function create(el, width, height, xs, series, format, hourly, marks, fig, releases = []) {
  const uPlot = window.uPlot;
  const axis = cssVar('--muted', '#666');
  const grid = cssVar('--grid', 'rgba(0,0,0,.08)');
  const step = hourly ? 3600 : DAY_S;
  const few = xs.length <= 45;
  const opts = {
    width,
    height,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    hooks: {
      drawClear: [(u) => drawMarks(u, marks, step, fig)],
      draw: [(u) => drawReleases(u, releases, cssVar('--muted', '#666'))],
    },
    scales: {
      x: {
        time: true,
        range: (u, min, max) => (min === max ? [min - step / 2, max + step / 2] : [min, max]),
      },
      y: {
        range: (u, min, max) => [0, max === null || !(max > 0) ? 1 : max * 1.1],
      },
    },
    axes: [
      // Whole days only: the data has one point per UTC day, so hour ticks
      // would suggest a resolution it does not have. 30 and 365 days are
      // the lengths uPlot treats as month and year steps.
      { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, incrs: hourly ? HOUR_INCRS : DAY_INCRS },
      {
        stroke: axis,
        size: 64,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        values: (u, vals) => vals.map((v) => format(v)),
      },
    ],
    series: [
      { label: hourly ? 'Hour (UTC)' : 'Day (UTC)', value: (u, ts) => (ts === null ? '—' : (hourly ? hourLabel(ts) : dayLabel(ts))) },
      ...series.map((s) => {
        const color = cssVar(s.color, '#4f46e5');
        return {
          label: s.label,
          stroke: color,
          width: 2,
          fill: s.fill ? colorWithAlpha(color, 0.12) : undefined,
          spanGaps: false,
          points: { show: few, size: 5 },
          value: (u, v) => (v === null || v === undefined ? '—' : format(v)),
        };
      }),
    ],
  };
  return new uPlot(opts, [xs, ...series.map((s) => s.values.map((v) => (typeof v === 'number' ? v : null)))], el);
}

/** drawReleases draws a dashed vertical line at each release's first item. */
function drawReleases(u, releases, color) {
  const ctx = u.ctx;
  ctx.save();
  ctx.strokeStyle = color;
  ctx.setLineDash([4, 4]);
  ctx.lineWidth = 1;
  for (const r of releases) {
    const x = Math.round(u.valToPos(Date.parse(r.first_seen_at) / 1000, 'x', true));
    if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
    ctx.beginPath();
    ctx.moveTo(x, u.bbox.top);
    ctx.lineTo(x, u.bbox.top + u.bbox.height);
    ctx.stroke();
  }
  ctx.restore();
}

function colorWithAlpha(color, alpha) {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return color;
  const n = parseInt(m[1], 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/** The chart's numbers, folded away, for screen readers and exact values. */
function dataTable(dates, series, format, hourly) {
  return h('details', { class: 'chart-data' },
    h('summary', null, hourly ? 'Show hourly numbers' : 'Show daily numbers'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'table table-compact' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, hourly ? 'Hour (UTC)' : 'Day (UTC)'), series.map((s) => h('th', { scope: 'col', class: 'num' }, s.label)))),
      h('tbody', null, dates.map((d, i) => h('tr', null, h('td', null, d), series.map((s) => h('td', { class: 'num' }, format(s.values[i])))))))));
}
