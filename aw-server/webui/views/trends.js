// Trends: a year, two, five or all of one host's history (or of all devices) — a calendar
// heat map of active time per day, with its months and weekdays, and the time per top-level
// category week by week — from one request: each day's totals from the small per-day
// program `dailyQuery`, which the server keeps per day (and ready in the background) and
// answers from its cache for every day no write has touched since.

import * as api from '../api.js';
import { h, replace, svg } from '../dom.js';
import * as fmt from '../format.js';
import * as period from '../period.js';
import { ALL_HOSTS } from '../queries.js';
import { categoryColor } from '../colors.js';
import { roving } from '../components/roving.js';
import { activityHosts, dayTotals } from './activity.js';

export const title = 'Trends';

/** The ranges offered: URL value, label, years back (`null`: since the first event). */
const RANGES = [['1y', '12 months', 1], ['2y', '2 years', 2], ['5y', '5 years', 5], ['all', 'All history', null]];

/** The longest history shown at once, in years: the calendar's far end. */
const MAX_YEARS = 20;

/** Weeks per row of the heat map: a year and a day. */
const ROW_WEEKS = 53;

/** Heat levels: none, then quarters of the busiest day. */
function level(seconds, max) {
  if (seconds <= 0) return 0;
  return Math.min(4, 1 + Math.floor((seconds / max) * 4));
}

/** The range asked for in the URL (`range=`), else twelve months. */
function rangeOf(ctx) {
  return RANGES.find(([v]) => v === ctx.params.get('range')) || RANGES[0];
}

/** The first day the hosts' window buckets hold an event, if they say. */
function firstEventDay(ctx, hosts) {
  const starts = hosts
    .map((x) => ctx.buckets[x.ids.window] && ctx.buckets[x.ids.window].metadata && ctx.buckets[x.ids.window].metadata.start)
    .filter(Boolean)
    .map((s) => new Date(s))
    .filter((d) => !Number.isNaN(d.getTime()));
  return starts.length ? fmt.isoDate(new Date(Math.min(...starts))) : null;
}

/** The days shown: whole weeks (starting on the user's first weekday) ending with the week of today. */
function shownDays(ctx, hosts, years) {
  const end = fmt.today(ctx.startOfDay);
  const floor = fmt.addDays(end, -(365 * MAX_YEARS) + 1);
  let from = years === null ? firstEventDay(ctx, hosts) : fmt.addDays(end, -(365 * years) + 1);
  if (!from || from > end) from = fmt.addDays(end, -364);
  if (from < floor) from = floor;
  const weekStart = period.startOfWeek(ctx.settings);
  const first = period.periodOf('week', from, { weekStart }).first;
  return period.days({ kind: 'custom', first, last: end });
}

const MONTH = new Intl.DateTimeFormat(undefined, { month: 'short' });
const WEEKDAY = new Intl.DateTimeFormat(undefined, { weekday: 'short' });

/** One row of the heat map: up to `ROW_WEEKS` weeks, with the months above and the weekdays beside. */
function heatRow(weeks, open) {
  const at = (col, row) => ({ gridColumn: String(col + 2), gridRow: String(row + 2) });
  // A month's name above the week its first day is in (the row's first with its year, and
  // every January); the row's first week is named too when no month begins within 3 weeks.
  const starts = weeks.map((week, w) => [w, week.find(([day]) => day.endsWith('-01'))]).filter(([, first]) => first);
  if (!starts.length || starts[0][0] > 2) starts.unshift([0, weeks[0][0]]);
  const labels = starts.map(([w, [day]], i) => {
    const d = fmt.parseDate(day);
    const text = i === 0 || d.getMonth() === 0 ? `${MONTH.format(d)} ${d.getFullYear()}` : MONTH.format(d);
    return h('span', { class: 'heat-month', style: at(w, -1) }, text);
  });
  const weekdays = weeks[0].map(([day], d) => h('span', { class: 'heat-weekday', style: at(-1, d) }, d % 2 ? '' : WEEKDAY.format(fmt.parseDate(day))));
  const cells = weeks.flatMap((week, w) => week.map(([day, secs], d) => h('button', {
    type: 'button',
    class: `heat-cell heat-${level(secs, weeks.max)}`,
    style: at(w, d),
    title: `${fmt.longDate(day)}: ${fmt.duration(secs)} active`,
    'aria-label': `${fmt.longDate(day)}: ${fmt.duration(secs)} active`,
    'data-day': day,
    onclick: () => open(day),
  })));
  return h('div', { class: 'heat-row', style: { gridTemplateColumns: `auto repeat(${ROW_WEEKS}, minmax(0, 1fr))` } },
    h('span', { 'aria-hidden': 'true', class: 'heat-labels' }, labels, weekdays), cells);
}

function heatMap(days, seconds, ctx, rangeLabel) {
  const max = Math.max(...seconds, 1);
  const weeks = [];
  for (let i = 0; i < days.length; i += 7) weeks.push(days.slice(i, i + 7).map((d, j) => [d, seconds[i + j]]));
  const rows = [];
  // Rows of a year each, the newest ending with this week.
  for (let end = weeks.length; end > 0; end -= ROW_WEEKS) rows.unshift(Object.assign(weeks.slice(Math.max(0, end - ROW_WEEKS), end), { max }));
  const open = (day) => ctx.navigate({ date: day, period: null, start: null, end: null, range: null }, 'activity');
  const map = h('div', { class: 'heatmap-wrap' },
    h('div', { class: 'heatmap', role: 'group', 'aria-label': `Active time per day, ${rangeLabel} (arrow keys: left and right a week, up and down a day)` },
      rows.map((row) => heatRow(row, open))),
    h('div', { class: 'heat-legend', 'aria-hidden': 'true' }, 'Less',
      [0, 1, 2, 3, 4].map((l) => h('span', { class: `heat-cell heat-${l}` })), 'More'));
  // One Tab stop (today); left/right a week, up/down a day (the days run on across rows).
  roving([...map.querySelectorAll('button.heat-cell')], { step: { ArrowLeft: -7, ArrowRight: 7, ArrowUp: -1, ArrowDown: 1 } });
  return map;
}

function rangeChoice(ctx, current) {
  return h('div', { class: 'toolbar-group segmented', role: 'group', 'aria-label': 'Range', id: 'trend-range' },
    RANGES.map(([value, label]) => h('button', {
      type: 'button',
      class: 'btn seg',
      'aria-pressed': String(value === current),
      'data-range': value,
      onclick: () => ctx.navigate({ range: value === '1y' ? null : value }),
    }, label)));
}

/** Seconds per top-level category per week: `{weeks: [first day], names: [...], values: Map(name → [secs per week])}`. */
function categoriesPerWeek(days, results) {
  const weeks = [];
  const values = new Map();
  results.forEach((r, i) => {
    const w = Math.floor(i / 7);
    if (i % 7 === 0) weeks.push(days[i]);
    for (const e of r.cats) {
      const names = Array.isArray(e.data.$category) ? e.data.$category : [String(e.data.$category)];
      const top = names[0] || 'Uncategorized';
      if (!values.has(top)) values.set(top, []);
      const row = values.get(top);
      row[w] = (row[w] || 0) + e.duration;
    }
  });
  const totals = [...values].map(([name, row]) => [name, row.reduce((a, b) => a + (b || 0), 0)]).sort((a, b) => b[1] - a[1]);
  return { weeks, names: totals.map(([n]) => n), totals: new Map(totals), values };
}

function weekChart(data, classes) {
  const { weeks, names, values } = data;
  const width = weeks.length * 12;
  const height = 140;
  const sums = weeks.map((_, w) => names.reduce((s, n) => s + (values.get(n)[w] || 0), 0));
  const max = Math.max(3600, ...sums);
  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', class: 'week-chart-svg', 'aria-hidden': 'true' });
  weeks.forEach((week, w) => {
    let y = height;
    for (const n of names) {
      const secs = values.get(n)[w] || 0;
      if (!secs) continue;
      const hgt = (secs / max) * (height - 4);
      y -= hgt;
      chart.append(svg('rect', { x: w * 12 + 1, y, width: 10, height: hgt, fill: categoryColor(classes, [n]) },
        svg('title', {}, `Week of ${fmt.longDate(week)} · ${n}: ${fmt.duration(secs)}`)));
    }
  });
  const label = names.map((n) => `${n} ${fmt.duration(data.totals.get(n))}`).join(', ');
  return h('div', {},
    h('div', { class: 'week-chart', role: 'img', 'aria-label': `Time per category per week: ${label || 'none'}` }, chart),
    h('ul', { class: 'legend' }, names.map((n) => h('li', {},
      h('span', { class: 'swatch', style: { backgroundColor: categoryColor(classes, [n]) } }),
      `${n} `, h('span', { class: 'legend-value' }, fmt.duration(data.totals.get(n)))))));
}

export async function render(root, ctx) {
  const { hosts } = activityHosts(ctx);
  const label = ctx.host === ALL_HOSTS ? 'All devices' : ctx.host;
  if (!hosts.length) {
    replace(root, h('div', { class: 'page-head' }, h('h1', { class: 'page-title' }, 'Trends'), h('p', { class: 'page-sub' }, label)),
      h('div', { class: 'alert info', role: 'status' }, `No activity data for “${label}”: it has no window-watcher bucket.`));
    return;
  }
  const [range, rangeLabel, years] = rangeOf(ctx);
  const days = shownDays(ctx, hosts, years);
  const started = performance.now();
  const results = await dayTotals(ctx, hosts.map((x) => x.ids), days);
  const queryMs = Math.round(performance.now() - started);
  if (!ctx.isCurrent()) return;
  const active = results.map((r) => r.active);
  const total = active.reduce((a, b) => a + b, 0);
  const activeDays = active.filter((x) => x > 0).length;
  const busiest = active.indexOf(Math.max(...active));
  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Trends'),
      h('p', { class: 'page-sub' }, `${label} · ${fmt.longDate(days[0])} – ${fmt.longDate(days[days.length - 1])}`),
      rangeChoice(ctx, range)),
    h('div', { class: 'stats' },
      h('div', { class: 'card stat', id: 'trend-total' }, h('div', { class: 'stat-label' }, 'Active time'), h('div', { class: 'stat-value' }, fmt.duration(total)),
        h('div', { class: 'stat-detail' }, `${activeDays} active days`)),
      h('div', { class: 'card stat', id: 'trend-average' }, h('div', { class: 'stat-label' }, 'Per active day'),
        h('div', { class: 'stat-value' }, fmt.duration(activeDays ? total / activeDays : 0))),
      h('div', { class: 'card stat', id: 'trend-busiest' }, h('div', { class: 'stat-label' }, 'Busiest day'),
        h('div', { class: 'stat-value' }, total ? fmt.duration(active[busiest]) : '—'),
        h('div', { class: 'stat-detail' }, total ? fmt.longDate(days[busiest]) : ''))),
    h('section', { class: 'card panel', id: 'heatmap', 'aria-labelledby': 'heatmap-h' },
      h('h2', { id: 'heatmap-h' }, 'Active time per day'), heatMap(days, active, ctx, rangeLabel)),
    h('section', { class: 'card panel', id: 'weekly-categories', 'aria-labelledby': 'weekly-h' },
      h('h2', { id: 'weekly-h' }, 'Categories per week'), weekChart(categoriesPerWeek(days, results), ctx.classes)),
    h('p', { class: 'meta' }, `Computed by the server's query engine in ${queryMs} ms (${days.length} days).`));
  root.dataset.complete = 'trends';
  performance.mark('aw-trends-complete');
}
