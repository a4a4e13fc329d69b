// One horizontal bar split into coloured parts, one per item, sized by its share: the
// categories of a period at a glance. Each part has a tooltip; the list beside it (a
// barList) carries the same numbers as text.

import { h } from '../dom.js';
import { duration } from '../format.js';

/** `items`: `[{label, seconds, color}]`; parts under 0.5 % are drawn together as "other". */
export function stackBar(items, { name = 'Shares' } = {}) {
  const sorted = items.filter((i) => i.seconds > 0).sort((a, b) => b.seconds - a.seconds);
  const total = sorted.reduce((s, i) => s + i.seconds, 0);
  if (!total) return null;
  const shown = sorted.filter((i) => i.seconds / total >= 0.005);
  const rest = total - shown.reduce((s, i) => s + i.seconds, 0);
  const parts = shown.map((i) => ({ ...i, pct: (i.seconds / total) * 100 }));
  if (rest > 0) parts.push({ label: 'other', seconds: rest, color: 'var(--muted)', pct: (rest / total) * 100 });
  return h('div', { class: 'stack-bar', role: 'img', 'aria-label': `${name}: ${parts.map((p) => `${p.label} ${p.pct.toFixed(0)} %`).join(', ')}` },
    parts.map((p) => h('div', {
      class: 'stack-part',
      title: `${p.label}: ${duration(p.seconds)} (${p.pct.toFixed(1)} %)`,
      style: { width: `${p.pct}%`, backgroundColor: p.color },
    })));
}
