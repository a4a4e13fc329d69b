// A sorted list of horizontal bars: name, optional detail line, duration, bar length relative
// to the longest entry. Shows the first `initial` rows and a button for the rest.

import { h } from '../dom.js';
import { duration } from '../format.js';

/**
 * `items`: `[{label, detail?, seconds, color?, title?}]`, any order (sorted here, longest
 * first). `total` (seconds) adds a share in percent to each row's tooltip. `format` writes
 * a row's value (a duration by default; the storage page's rows are bytes); `sorted: false`
 * keeps the items' order (years in the order of time).
 */
export function barList(items, { initial = 10, empty = 'No data for this day.', total, name, format = duration, sorted: sort = true } = {}) {
  const shown = items.filter((i) => i.seconds > 0);
  const sorted = sort ? shown.sort((a, b) => b.seconds - a.seconds) : shown;
  if (!sorted.length) return h('p', { class: 'empty' }, empty);
  const max = sorted.reduce((m, i) => Math.max(m, i.seconds), 0);
  const list = h('ol', { class: 'bars', 'aria-label': name });
  const rows = sorted.map((item) => {
    const pct = Math.max(0.5, (item.seconds / max) * 100);
    const share = total ? ` (${((item.seconds / total) * 100).toFixed(1)} %)` : '';
    return h('li', { class: 'bar-row', title: `${item.title || item.label}: ${format(item.seconds)}${share}` },
      h('div', { class: 'bar-text' },
        h('span', { class: 'bar-label' }, item.label),
        h('span', { class: 'bar-value' }, format(item.seconds))),
      item.detail ? h('div', { class: 'bar-detail' }, item.detail) : null,
      h('div', { class: 'bar-track', 'aria-hidden': 'true' },
        h('div', { class: 'bar-fill', style: { width: `${pct}%`, backgroundColor: item.color || 'var(--accent)' } })));
  });
  list.append(...rows.slice(0, initial));
  if (rows.length <= initial) return list;
  const more = h('button', {
    class: 'btn link show-more',
    type: 'button',
    onclick: () => {
      list.append(...rows.slice(initial));
      more.remove();
    },
  }, `Show all ${rows.length}`);
  return h('div', {}, list, more);
}
