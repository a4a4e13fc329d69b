// Timeline: the day as horizontal bands over the hours — AFK status, the active application
// and, per browser, the active tab's domain. Pointing at a band names the event under it;
// clicking it opens that event to edit or delete; dragging across the bands selects a span
// to delete from every bucket of the host, after a preview (`components/history_edit.js`).

import * as api from '../api.js';
import { h, replace, notice } from '../dom.js';
import * as fmt from '../format.js';
import { hostBuckets } from '../queries.js';
import { colorFor, STATUS_COLORS } from '../colors.js';
import { spanDeleter, editEvent, activityAdder } from '../components/history_edit.js';

export const title = 'Timeline';

/** What the last deletion did, shown once by the next render (which shows its result). */
let lastDeletion = null;

/** The domain of a URL, without `www.`; the URL itself when it does not parse. */
function domainOf(url) {
  try {
    const u = new URL(url);
    return (u.hostname || u.protocol.replace(':', '')).replace(/^(www\.)+/, '');
  } catch {
    return url || '(no url)';
  }
}

/** Events (newest first from the API) as sorted `{s, e, key, detail, ev}` in ms. */
function spans(events, key, detail) {
  return events
    .map((ev) => {
      const s = new Date(ev.timestamp).getTime();
      return { s, e: s + ev.duration * 1000, key: key(ev), detail: detail(ev), ev };
    })
    .filter((x) => x.e > x.s)
    .sort((a, b) => a.s - b.s);
}

/** Adjacent spans with the same key (gaps under 5 s) drawn as one band. */
function bands(list) {
  const out = [];
  for (const x of list) {
    const last = out[out.length - 1];
    if (last && last.key === x.key && x.s - last.e < 5000) {
      last.e = Math.max(last.e, x.e);
      last.events += 1;
    } else out.push({ s: x.s, e: x.e, key: x.key, events: 1 });
  }
  return out;
}

/** The span covering time `t` (ms), if any. */
function at(list, t) {
  let lo = 0;
  let hi = list.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid].s <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  for (let i = found; i >= 0 && i > found - 50; i -= 1) if (list[i].e > t) return list[i];
  return null;
}

function totals(list) {
  const m = new Map();
  for (const x of list) m.set(x.key, (m.get(x.key) || 0) + (x.e - x.s) / 1000);
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

export async function render(root, ctx) {
  const ids = hostBuckets(ctx.buckets, ctx.host);
  const [start, endDate] = ctx.range;
  const rowDefs = [];
  if (ids.afk) {
    rowDefs.push({ label: 'AFK status', id: ids.afk, key: (e) => e.data.status || '?', detail: () => '', color: (k) => STATUS_COLORS[k] || '#999' });
  }
  if (ids.window) {
    rowDefs.push({ label: 'Application', id: ids.window, key: (e) => e.data.app || '(unknown)', detail: (e) => e.data.title || '', color: colorFor });
  }
  for (const b of ids.browsers) {
    rowDefs.push({ label: `Browser (${b.browser})`, id: b.id, key: (e) => domainOf(e.data.url), detail: (e) => e.data.title || '', color: colorFor });
  }
  if (ids.manual) {
    rowDefs.push({ label: 'Added by hand', id: ids.manual, key: (e) => e.data.title || e.data.app || '(activity)', detail: () => '', color: colorFor });
  }
  const adder = activityAdder({ host: ctx.host, dayStart: start, dayEnd: endDate, onAdded: () => ctx.reload() });
  if (!rowDefs.length) {
    replace(root,
      h('div', { class: 'page-head' }, h('h1', { class: 'page-title' }, 'Timeline'), h('p', { class: 'page-sub' }, ctx.host)),
      notice(`Host “${ctx.host}” has no AFK, window or browser buckets yet.`),
      adder);
    return;
  }
  const lists = await Promise.all(rowDefs.map((r) => api.getEvents(r.id, { start, end: endDate, limit: -1 })));
  if (!ctx.isCurrent()) return;

  const rows = rowDefs.map((r, i) => ({ ...r, spans: spans(lists[i], r.key, r.detail) }));
  const all = rows.flatMap((r) => r.spans);
  const whole = ctx.params.get('whole') === '1' || !all.length;
  // By default the axis spans the recorded hours (plus one on each side), not the whole day.
  const HOUR = 3600000;
  const t0 = whole ? start.getTime() : Math.max(start.getTime(), Math.floor(all.reduce((m, x) => Math.min(m, x.s), Infinity) / HOUR) * HOUR - HOUR);
  const t1 = whole ? endDate.getTime() : Math.min(endDate.getTime(), Math.ceil(all.reduce((m, x) => Math.max(m, x.e), 0) / HOUR) * HOUR + HOUR);
  const span = t1 - t0;
  const pct = (t) => `${(((t - t0) / span) * 100).toFixed(4)}%`;

  const tooltip = document.getElementById('tooltip');
  const cursor = h('div', { class: 'tl-cursor', hidden: true });
  const selection = h('div', { class: 'tl-selection', hidden: true, id: 'tl-selection' });
  const deleter = spanDeleter({
    host: ctx.host,
    dayStart: start,
    dayEnd: endDate,
    shown: lastDeletion,
    onSpan: (s, e) => {
      selection.hidden = false;
      selection.style.left = pct(Math.max(s.getTime(), t0));
      selection.style.width = pct(t0 + Math.max(0, Math.min(e.getTime(), t1) - Math.max(s.getTime(), t0)));
    },
    onDeleted: (told) => {
      lastDeletion = told;
      ctx.reload();
    },
  });
  lastDeletion = null;
  // A press on a track: a click opens the event under it; a drag selects a span.
  let drag = null;
  const timeAt = (track, clientX) => {
    const rect = track.getBoundingClientRect();
    return t0 + (Math.min(Math.max(clientX - rect.left, 0), rect.width) / rect.width) * span;
  };

  const hours = [];
  for (let t = new Date(t0); t.getTime() < t1; t = new Date(t.getFullYear(), t.getMonth(), t.getDate(), t.getHours() + 1)) hours.push(t);
  const step = hours.length <= 9 ? 1 : hours.length <= 16 ? 2 : 3;
  let labelled = 0;
  const axis = h('div', { class: 'tl-axis', 'aria-hidden': 'true' },
    hours.map((t) => {
      const major = t.getHours() % step === 0;
      const cls = major ? `tl-hour major${labelled++ % 2 ? ' alt' : ''}` : 'tl-hour';
      return h('span', { class: cls, style: { left: pct(t.getTime()) } }, major ? `${String(t.getHours()).padStart(2, '0')}:00` : '');
    }));

  const now = Date.now();
  const tracks = rows.map((r) => {
    r.bands = bands(r.spans);
    const track = h('div', {
      class: 'tl-track',
      role: 'img',
      'aria-label': `${r.label}: ${r.spans.length} events${r.spans.length ? ` from ${fmt.clock(new Date(r.spans[0].s))} to ${fmt.clock(new Date(r.spans[r.spans.length - 1].e))}` : ''}`,
    }, r.bands.map((b) => h('div', {
      class: 'tl-band',
      style: { left: pct(b.s), width: pct(t0 + Math.max(b.e - b.s, span / 4000)), background: r.color(b.key) },
    })));
    if (now > t0 && now < t1) track.append(h('div', { class: 'tl-now', style: { left: pct(now) }, title: 'Now' }));
    track.addEventListener('pointermove', (ev) => {
      const rect = track.getBoundingClientRect();
      const t = t0 + ((ev.clientX - rect.left) / rect.width) * span;
      const hit = at(r.spans, t);
      const band = (hit && at(r.bands, t)) || hit;
      cursor.hidden = false;
      cursor.style.left = pct(t);
      replace(tooltip,
        h('div', { class: 'tt-time' }, `${fmt.clock(new Date(t))} · ${r.label}`),
        hit
          ? [h('div', { class: 'tt-key' }, h('span', { class: 'swatch', style: { background: r.color(hit.key) } }), hit.key),
            hit.detail ? h('div', { class: 'tt-detail' }, hit.detail) : null,
            h('div', { class: 'tt-range' }, `${fmt.clock(new Date(band.s), true)} – ${fmt.clock(new Date(band.e), true)} · ${fmt.preciseDuration(Math.round((band.e - band.s) / 1000))}${band.events > 1 ? ` · ${band.events} events` : ''}`)]
          : h('div', { class: 'tt-detail' }, 'No event'));
      tooltip.hidden = false;
      const x = Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
      tooltip.style.left = `${Math.max(8, x)}px`;
      tooltip.style.top = `${ev.clientY + 16}px`;
    });
    track.addEventListener('pointerdown', (ev) => {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, t: timeAt(track, ev.clientX) };
      track.setPointerCapture(ev.pointerId);
    });
    track.addEventListener('pointermove', (ev) => {
      if (!drag || Math.abs(ev.clientX - drag.x) < 4) return;
      const t = timeAt(track, ev.clientX);
      selection.hidden = false;
      selection.style.left = pct(Math.min(t, drag.t));
      selection.style.width = pct(t0 + Math.abs(t - drag.t));
    });
    track.addEventListener('pointerup', (ev) => {
      if (!drag) return;
      const t = timeAt(track, ev.clientX);
      const clicked = Math.abs(ev.clientX - drag.x) < 4;
      const from = drag.t;
      drag = null;
      if (clicked) {
        const hit = at(r.spans, t);
        if (hit) editEvent(hit.ev, r.id, ctx.reload);
        return;
      }
      deleter.setSpan(new Date(Math.min(from, t)), new Date(Math.max(from, t)));
    });
    track.addEventListener('pointerleave', () => {
      tooltip.hidden = true;
      cursor.hidden = true;
    });
    return track;
  });

  const legends = rows.map((r) => {
    const top = totals(r.spans).slice(0, 8);
    return top.length
      ? h('div', { class: 'tl-legend' }, h('span', { class: 'tl-legend-title' }, `${r.label}:`),
        top.map(([k, s]) => h('span', { class: 'tl-legend-item' }, h('span', { class: 'swatch', style: { background: r.color(k) } }), `${k} ${fmt.duration(s)}`)))
      : null;
  });

  const empty = !all.length;
  const wholeBox = h('input', { type: 'checkbox', id: 'tl-whole', checked: whole, disabled: !all.length });
  wholeBox.addEventListener('change', () => ctx.navigate({ whole: wholeBox.checked ? '1' : null }));
  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Timeline'),
      h('p', { class: 'page-sub' }, `${ctx.host} · ${fmt.longDate(ctx.date)} · point at a band to see its event, click it to edit, drag to select a span`),
      h('label', { class: 'check', for: 'tl-whole' }, wholeBox, 'Whole day')),
    empty ? notice(`No events recorded for ${ctx.host} on ${fmt.longDate(ctx.date)}.`) : null,
    h('section', { class: 'card timeline', 'aria-label': 'Timeline of the day' },
      h('div', { class: 'tl-grid' },
        h('div', { class: 'tl-labels' }, h('div', { class: 'tl-axis-spacer' }), rows.map((r) => h('div', { class: 'tl-label' }, r.label))),
        h('div', { class: 'tl-body' }, axis, h('div', { class: 'tl-tracks' }, tracks, cursor, selection)))),
    h('section', { class: 'card legends' }, h('h2', {}, 'Most time per row'), legends),
    empty ? null : deleter.card,
    adder,
    h('p', { class: 'meta' }, `${rows.map((r) => `${r.spans.length} ${r.label.toLowerCase()} events`).join(' · ')} from ${rows.map((r) => r.id).join(', ')}.`));
}
