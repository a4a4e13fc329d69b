// Import of an export file (as written by Export, aw-webui or aw-client) through
// POST /api/0/import, with upload progress and a summary of what the server added.

import * as api from '../api.js';
import { h, replace, errorBox } from '../dom.js';
import * as fmt from '../format.js';

async function countsOf(ids) {
  const existing = (await api.getBuckets()) || {};
  const counts = await Promise.all(ids.map((id) => (existing[id] ? api.countEvents(id) : Promise.resolve(null))));
  return new Map(ids.map((id, i) => [id, counts[i]]));
}

/**
 * `{button, panel}`: the Import button (a file picker) and the panel that reports progress and
 * the result. `refresh()` is called after a successful import.
 */
export function importPanel(refresh) {
  const input = h('input', { type: 'file', id: 'import-file', class: 'visually-hidden', accept: '.json,application/json' });
  const button = h('span', {}, h('label', { for: 'import-file', class: 'btn primary', tabindex: '0', role: 'button' }, 'Import…'), input);
  const panel = h('section', { class: 'card import', id: 'import-panel', hidden: true, 'aria-live': 'polite' });
  button.querySelector('label').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      input.click();
    }
  });

  async function run(file) {
    panel.hidden = false;
    const heading = h('h2', {}, `Import ${file.name}`);
    const bar = h('progress', { id: 'import-progress', max: '100', value: '0' });
    const label = h('span', { class: 'progress-label', id: 'import-progress-label' }, `Reading ${fmt.bytes(file.size)}…`);
    replace(panel, heading, h('div', { class: 'progress' }, bar, label));

    let doc;
    try {
      doc = JSON.parse(await file.text());
    } catch (err) {
      replace(panel, heading, errorBox(new Error(`${file.name} is not valid JSON (${err.message}).`), 'Cannot import'));
      return;
    }
    if (!doc || typeof doc.buckets !== 'object' || doc.buckets === null || Array.isArray(doc.buckets)) {
      replace(panel, heading, errorBox(new Error('This is not an ActivityWatch export: it has no "buckets" object.'), 'Cannot import'));
      return;
    }
    const entries = Object.entries(doc.buckets).map(([key, b]) => ({
      key,
      id: b && typeof b.id === 'string' ? b.id : key,
      events: b && Array.isArray(b.events) ? b.events.length : 0,
    }));
    try {
      const before = await countsOf(entries.map((e) => e.id));
      const report = await api.importFile(file, (sent, total, done) => {
        const pct = total ? Math.round((sent / total) * 100) : 0;
        if (done) {
          bar.removeAttribute('value');
          label.textContent = `Uploaded ${fmt.bytes(file.size)} · importing on the server…`;
        } else {
          bar.value = pct;
          label.textContent = `Uploading ${pct} % of ${fmt.bytes(file.size)}…`;
        }
      });
      bar.value = 100;
      label.textContent = 'Done';
      const after = await countsOf(entries.map((e) => e.id));
      // Events the server left out, per bucket key (from the listed problems).
      const skippedIn = new Map();
      for (const p of report.problems) skippedIn.set(p.bucket, (skippedIn.get(p.bucket) || 0) + 1);
      let added = 0;
      const items = entries.map((e) => {
        const was = before.get(e.id);
        const now = after.get(e.id) || 0;
        const gained = now - (was || 0);
        const usable = Math.max(0, e.events - (skippedIn.get(e.key) || 0));
        added += Math.max(0, gained);
        let text;
        if (was === null) text = `new bucket, ${fmt.count(now)} events`;
        else if (gained > 0) text = `${fmt.count(gained)} new events added (${fmt.count(Math.max(0, usable - gained))} already present)`;
        else text = `nothing new (all ${fmt.count(usable)} events already present)`;
        return h('li', {}, h('strong', {}, e.id || '(no id)'), ` — ${text}`);
      });
      const summary = h('div', { class: 'alert success', role: 'status', id: 'import-summary' },
        h('p', {}, `Imported ${entries.length} bucket${entries.length === 1 ? '' : 's'}: ${fmt.count(added)} events added.`),
        h('ul', {}, items));
      const parts = [heading, summary];
      if (report.skipped > 0) {
        const listed = report.problems.map((p) => h('li', {}, h('strong', {}, p.bucket || '(no key)'), `, event ${p.index}: ${p.reason}`));
        const more = report.skipped - report.problems.length;
        parts.push(h('div', { class: 'alert error', role: 'alert', id: 'import-skipped' },
          h('p', {}, `${fmt.count(report.skipped)} event${report.skipped === 1 ? '' : 's'} could not be imported and ${report.skipped === 1 ? 'was' : 'were'} left out:`),
          h('ul', {}, listed),
          more > 0 ? h('p', {}, `… and ${fmt.count(more)} more.`) : null));
      }
      replace(panel, ...parts);
      await refresh();
    } catch (err) {
      replace(panel, heading, errorBox(err, 'Import failed'));
    }
  }

  input.addEventListener('change', () => {
    const file = input.files && input.files[0];
    input.value = '';
    if (file) run(file);
  });
  return { button, panel };
}
