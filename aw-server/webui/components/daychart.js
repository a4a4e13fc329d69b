// Active time per day of a period as an SVG bar chart that scales to any width (a year's 365
// bars fit a phone's screen), with a tooltip and a label per bar. With `onPick`, each bar
// opens its day, by pointer or keyboard (one Tab stop, arrows between the days).

import { h, svg as el } from '../dom.js';
import { duration, longDate, parseDate } from '../format.js';
import { roving } from './roving.js';

// Formatters made once: `toLocaleDateString` builds one per call, which took 60 ms for a
// year's 365 bars.
const WEEKDAY = new Intl.DateTimeFormat('en-GB', { weekday: 'short' });
const MONTH = new Intl.DateTimeFormat('en-GB', { month: 'short' });

/** The label under day `i` of `days`: weekday (a week), day of month (a month), month (longer). */
function tick(days, i) {
  const d = parseDate(days[i]);
  if (days.length <= 7) return WEEKDAY.format(d);
  if (days.length <= 31) return d.getDate() === 1 || (d.getDate() % 5 === 0 && d.getDate() < 30) || i === 0 ? String(d.getDate()) : '';
  return d.getDate() === 1 ? MONTH.format(d) : '';
}

/**
 * `days`: `YYYY-MM-DD` of each bar; `seconds`: the active seconds of each. `onPick(day)`
 * (optional) makes each bar a link to that day (mouse and keyboard).
 */
export function dayChart(days, seconds, { onPick, name = 'Active time per day' } = {}) {
  const n = days.length;
  const width = Math.max(n * 10, 280);
  const height = 120;
  const barW = width / n;
  const max = Math.max(3600, ...seconds);
  const svg = el('svg', { viewBox: `0 0 ${width} ${height + 16}`, preserveAspectRatio: 'none', class: 'day-chart-svg' });
  const grid = el('line', { x1: 0, x2: width, y1: height, y2: height, class: 'axis' });
  svg.append(grid);
  const rects = days.map((day, i) => {
    const barH = (seconds[i] / max) * (height - 4);
    const text = `${longDate(day)}: ${duration(seconds[i])} active`;
    // A day without activity still gets a (thin) bar to point at.
    const rect = el('rect', {
      x: i * barW + barW * 0.1, y: height - Math.max(barH, 2), width: Math.max(barW * 0.8, 0.6), height: Math.max(barH, 2),
      class: seconds[i] > 0 ? 'day-bar' : 'day-bar empty', 'data-day': day, role: onPick ? 'button' : 'img', 'aria-label': text,
    }, el('title', {}, text));
    svg.append(rect);
    return rect;
  });
  const labels = h('div', { class: 'day-chart-ticks' }, days.map((d, i) => h('span', { style: { left: `${((i + 0.5) / n) * 100}%` } }, tick(days, i))));
  const figure = h('div', { class: 'day-chart', role: 'group', 'aria-label': name }, svg, labels);
  if (onPick) {
    figure.addEventListener('click', (e) => {
      const day = e.target && e.target.getAttribute && e.target.getAttribute('data-day');
      if (day) onPick(day);
    });
    roving(rects, { step: { ArrowLeft: -1, ArrowRight: 1 }, pick: (rect) => onPick(rect.getAttribute('data-day')) });
  }
  return figure;
}
