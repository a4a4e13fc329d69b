// Query: run any query over a chosen period and see the JSON result, or the server's error.

import * as api from '../api.js';
import { h, replace, errorBox } from '../dom.js';
import * as fmt from '../format.js';
import { sampleQuery } from '../queries.js';

export const title = 'Query';

const TEXT_KEY = 'aw-dashboard-query';
const RANGE_KEY = 'aw-dashboard-query-range';
const MAX_SHOWN = 400_000;

/** Opens the Query page with `text` in the editor, over `range` (`[Date, Date]`; default: the day). */
export function openInQuery(text, ctx, range) {
  sessionStorage.setItem(TEXT_KEY, text);
  if (range) sessionStorage.setItem(RANGE_KEY, JSON.stringify(range.map((d) => d.toISOString())));
  ctx.navigate({}, 'query');
}

/** The range `openInQuery` left for this page (once), else the day's. */
function takeRange(ctx) {
  const saved = sessionStorage.getItem(RANGE_KEY);
  sessionStorage.removeItem(RANGE_KEY);
  try {
    const [a, b] = JSON.parse(saved).map((s) => new Date(s));
    if (!Number.isNaN(a.getTime()) && !Number.isNaN(b.getTime())) return [a, b];
  } catch {
    // none, or not ours
  }
  return ctx.range;
}

/** `YYYY-MM-DDTHH:MM` for a datetime-local input. */
function localInput(d) {
  return `${fmt.isoDate(d)}T${fmt.clock(d)}`;
}

export async function render(root, ctx) {
  const text = h('textarea', { id: 'query-text', class: 'code', rows: 14, wrap: 'off', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off' });
  text.value = sessionStorage.getItem(TEXT_KEY) || sampleQuery(ctx.host);
  const start = h('input', { type: 'datetime-local', id: 'query-start', required: true });
  const end = h('input', { type: 'datetime-local', id: 'query-end', required: true });
  const [from, to] = takeRange(ctx);
  start.value = localInput(from);
  end.value = localInput(to);
  const run = h('button', { type: 'submit', class: 'btn primary', id: 'query-run' }, 'Run query');
  const output = h('div', { id: 'query-output', 'aria-live': 'polite' });

  const setPeriod = (from, to) => {
    start.value = localInput(from);
    end.value = localInput(to);
  };

  async function execute(e) {
    if (e) e.preventDefault();
    sessionStorage.setItem(TEXT_KEY, text.value);
    const from = new Date(start.value);
    const to = new Date(end.value);
    if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) {
      replace(output, errorBox(new Error('Choose a start and an end for the period.'), 'Invalid period'));
      return;
    }
    run.disabled = true;
    replace(output, h('div', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Running…'));
    const t0 = performance.now();
    try {
      const result = await api.query([[from, to]], text.value.split('\n'));
      const ms = Math.round(performance.now() - t0);
      const json = JSON.stringify(result.length === 1 ? result[0] : result, null, 2);
      const shown = json.length > MAX_SHOWN ? `${json.slice(0, MAX_SHOWN)}\n…` : json;
      replace(output,
        h('div', { class: 'query-status ok', id: 'query-status' },
          `OK · ${ms} ms · ${fmt.bytes(json.length)}`,
          json.length > MAX_SHOWN ? ` · showing the first ${fmt.bytes(MAX_SHOWN)}` : ''),
        h('pre', { class: 'code result', id: 'query-result', tabindex: '0' }, shown));
    } catch (err) {
      replace(output, errorBox(err, 'Query failed'));
    } finally {
      run.disabled = false;
    }
  }

  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) execute(e);
  });

  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Query'),
      h('p', { class: 'page-sub' }, 'Runs on the server with POST /api/0/query/. One statement per line; ends with RETURN = …;')),
    h('form', { class: 'card query-form', onsubmit: execute },
      h('label', { for: 'query-text' }, 'Query'),
      text,
      h('div', { class: 'query-controls' },
        h('div', { class: 'field' }, h('label', { for: 'query-start' }, 'From'), start),
        h('div', { class: 'field' }, h('label', { for: 'query-end' }, 'To'), end),
        h('div', { class: 'field presets' },
          h('button', { type: 'button', class: 'btn', onclick: () => setPeriod(...ctx.range) }, 'Selected day'),
          h('button', { type: 'button', class: 'btn', onclick: () => setPeriod(new Date(ctx.range[1].getTime() - 7 * 86400000), ctx.range[1]) }, 'Last 7 days'),
          h('button', { type: 'button', class: 'btn', onclick: () => { text.value = sampleQuery(ctx.host); } }, 'Example')),
        h('div', { class: 'field run' }, run)),
      h('p', { class: 'hint' }, 'Ctrl+Enter runs the query.')),
    output);
}
