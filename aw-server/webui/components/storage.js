// The Storage card of Settings (`GET /api/0/storage`): the database's files and their sizes,
// the free space inside the file, and the last measure of the history — the largest buckets
// first, and a bar per year — with when it was measured and a button to measure again.
// The measure reads every event on the server's backup connection, so it never holds up a
// heartbeat; a first look starts one, and the card looks again until it is there. Below
// it, what gives space back or keeps the history short: compaction and the free space
// (`storage_upkeep.js`), and the retention rules with their last runs
// (`retention_rules.js`).

import * as api from '../api.js';
import { h, replace, errorBox } from '../dom.js';
import * as fmt from '../format.js';
import { barList } from './barlist.js';
import { upkeepSections } from './storage_upkeep.js';
import { retentionSection, runsView } from './retention_rules.js';

/** How often the card looks again while the server measures, and at most how many times. */
const POLL_MS = 700;
const POLLS = 100;

const nsDate = (ns) => (ns == null ? '—' : fmt.isoDate(new Date(ns / 1e6)));

/** The files' sizes, as a definition list. */
function fileList(r) {
  const f = r.files;
  const row = (label, value, id) => h('div', { class: 'prop' }, h('dt', {}, label), h('dd', { id }, value));
  return h('dl', { class: 'props', id: 'storage-files' },
    row('Database', fmt.bytes(f.database), 'storage-database'),
    row('Free inside it', r.free_bytes == null ? '…' : fmt.bytes(r.free_bytes), 'storage-free'),
    row('Write-ahead log', fmt.bytes(f.wal)),
    row('Journal of writes', `${fmt.bytes(f.journal_used)} used of ${fmt.bytes(f.journal_allocated)}`),
    row('Kept query results', fmt.bytes(f.kept_results)),
    row('Backups', `${fmt.bytes(f.backups)} in ${fmt.count(f.backup_count)} ${f.backup_count === 1 ? 'file' : 'files'}`, 'storage-backups'));
}

/** The measure: buckets largest first, then a bar per year. */
function measureView(m) {
  const buckets = m.buckets.map((b) => ({
    label: b.bucket,
    detail: `${fmt.count(b.events)} events · ${nsDate(b.first_ns)} to ${nsDate(b.last_ns)}`,
    seconds: b.bytes,
  }));
  const years = m.years.map((y) => ({ label: String(y.year), detail: `${fmt.count(y.events)} events`, seconds: y.bytes }));
  return [
    h('h3', {}, 'Buckets, largest first'),
    h('div', { id: 'storage-buckets' }, barList(buckets, { name: 'Buckets by size', format: fmt.bytes, empty: 'No events stored.' })),
    h('h3', {}, 'Years'),
    h('div', { id: 'storage-years' }, barList(years, { name: 'Years by size', format: fmt.bytes, initial: 50, sorted: false, empty: 'No events stored.' })),
    h('p', { class: 'meta', id: 'storage-measured' },
      `Measured ${fmt.dateTime(new Date(m.measured_at))} in ${fmt.count(m.took_ms)} ms; a bucket's size is its share of what the events take in the file.`),
  ];
}

/** The card; `ctx.isCurrent()` stops its looks once the user left the page. */
export async function storageCard(ctx) {
  const card = h('section', { class: 'card panel', id: 'storage', 'aria-labelledby': 'storage-h' });
  const button = h('button', { type: 'button', class: 'btn', id: 'storage-measure' }, 'Measure again');
  let polls = 0;
  // Made once, so a look again keeps what the user typed and the answers shown.
  const measureAgain = () => { if (ctx.isCurrent()) { button.disabled = true; fill(true); } };
  const upkeep = [...upkeepSections(ctx, measureAgain), retentionSection(ctx, measureAgain)];
  async function fill(fresh) {
    let r;
    try {
      r = await api.getStorage(fresh);
    } catch (err) {
      if (ctx.isCurrent()) replace(card, h('h2', { id: 'storage-h' }, 'Storage'), errorBox(err, 'Cannot load the storage report'));
      return;
    }
    if (!ctx.isCurrent()) return;
    button.disabled = false;
    button.textContent = 'Measure again';
    replace(card,
      h('div', { class: 'card-head' }, h('h2', { id: 'storage-h' }, 'Storage'), button),
      fileList(r),
      r.measure ? measureView(r.measure) : h('p', { class: 'meta', id: 'storage-measuring' }, 'Measuring the stored history…'),
      ...upkeep,
      h('h3', {}, 'Last runs of the retention rules'),
      runsView(r.retention));
    if ((!r.measure || r.measuring) && (polls += 1) <= POLLS) {
      setTimeout(() => { if (ctx.isCurrent()) fill(false); }, POLL_MS);
    }
  }
  button.addEventListener('click', () => {
    button.disabled = true;
    button.textContent = 'Measuring…';
    fill(true);
  });
  await fill(false);
  return card;
}
