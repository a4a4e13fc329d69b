// Trends: the last twelve months of one host or of all devices — a calendar heat map of active
// time per day, and the time per top-level category week by week — from one request: each
// day's active time and categories from the Activity views' per-day program (`periodQuery`),
// which the server keeps per day and answers from its cache for every day no write has
// touched since.

import * as api from '../api.js';
import { h, replace, svg } from '../dom.js';
import * as fmt from '../format.js';
import * as period from '../period.js';
import { ALL_HOSTS } from '../queries.js';
import { categoryColor } from '../colors.js';
import { roving } from '../components/roving.js';
import { activityHosts, periodDays } from './activity.js';

export const title = 'Trends';

/** Heat levels: none, then quarters of the busiest day. */
function level(seconds, max) {
  if (seconds <= 0) return 0;
  return Math.min(4, 1 + Math.floor((seconds / max) * 4));
}

/** The days shown: whole weeks (starting on the user's first weekday) ending with the week of today. */
function shownDays(ctx) {
  const end = fmt.today(ctx.startOfDay);
  const weekStart = period.startOfWeek(ctx.settings);
  const first = period.periodOf('week', fmt.addDays(end, -364), { weekStart }).first;
  return period.days({ kind: 'custom', first, last: end });
}

function heatMap(days, seconds, ctx) {
  const max = Math.max(...seconds, 1);
  const weeks = [];
  for (let i = 0; i < days.length; i += 7) weeks.push(days.slice(i, i + 7).map((d, j) => [d, seconds[i + j]]));
  const open = (day) => ctx.navigate({ date: day, period: null, start: null, end: null }, 'activity');
  const map = h('div', { class: 'heatmap-wrap' },
    h('div', { class: 'heatmap', role: 'group', 'aria-label': 'Active time per day, last 12 months (arrow keys: left and right a week, up and down a day)' },
      weeks.map((week) => h('div', { class: 'heat-week' },
        week.map(([day, secs]) => h('button', {
          type: 'button',
          class: `heat-cell heat-${level(secs, max)}`,
          title: `${fmt.longDate(day)}: ${fmt.duration(secs)} active`,
          'aria-label': `${fmt.longDate(day)}: ${fmt.duration(secs)} active`,
          'data-day': day,
          onclick: () => open(day),
        }))))),
    h('div', { class: 'heat-legend', 'aria-hidden': 'true' }, 'Less',
      [0, 1, 2, 3, 4].map((l) => h('span', { class: `heat-cell heat-${l}` })), 'More'));
  // One Tab stop (today); left/right a week, up/down a day.
  roving([...map.querySelectorAll('button.heat-cell')], { step: { ArrowLeft: -7, ArrowRight: 7, ArrowUp: -1, ArrowDown: 1 } });
  return map;
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
  const days = shownDays(ctx);
  const started = performance.now();
  // The days of the Activity views' own program, so the server keeps one result per day for both.
  const { each } = await periodDays(ctx, hosts.map((x) => x.ids), days, [['active'], ['window', 'cat_events']]);
  const results = each.map((r) => ({ active: r.active || 0, cats: (r.window && r.window.cat_events) || [] }));
  const queryMs = Math.round(performance.now() - started);
  if (!ctx.isCurrent()) return;
  const active = results.map((r) => r.active);
  const total = active.reduce((a, b) => a + b, 0);
  const activeDays = active.filter((x) => x > 0).length;
  const busiest = active.indexOf(Math.max(...active));
  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Trends'),
      h('p', { class: 'page-sub' }, `${label} · ${fmt.longDate(days[0])} – ${fmt.longDate(days[days.length - 1])}`)),
    h('div', { class: 'stats' },
      h('div', { class: 'card stat', id: 'trend-total' }, h('div', { class: 'stat-label' }, 'Active time'), h('div', { class: 'stat-value' }, fmt.duration(total)),
        h('div', { class: 'stat-detail' }, `${activeDays} active days`)),
      h('div', { class: 'card stat', id: 'trend-average' }, h('div', { class: 'stat-label' }, 'Per active day'),
        h('div', { class: 'stat-value' }, fmt.duration(activeDays ? total / activeDays : 0))),
      h('div', { class: 'card stat', id: 'trend-busiest' }, h('div', { class: 'stat-label' }, 'Busiest day'),
        h('div', { class: 'stat-value' }, total ? fmt.duration(active[busiest]) : '—'),
        h('div', { class: 'stat-detail' }, total ? fmt.longDate(days[busiest]) : ''))),
    h('section', { class: 'card panel', id: 'heatmap', 'aria-labelledby': 'heatmap-h' },
      h('h2', { id: 'heatmap-h' }, 'Active time per day'), heatMap(days, active, ctx)),
    h('section', { class: 'card panel', id: 'weekly-categories', 'aria-labelledby': 'weekly-h' },
      h('h2', { id: 'weekly-h' }, 'Categories per week'), weekChart(categoriesPerWeek(days, results), ctx.classes)),
    h('p', { class: 'meta' }, `Computed by the server's query engine in ${queryMs} ms (${days.length} days).`));
  root.dataset.complete = 'trends';
  performance.mark('aw-trends-complete');
}
