// The upkeep actions of the Storage card: compaction (`POST /api/0/storage/compact`), which
// merges the window, AFK and browser events the queries would join anyway and removes
// duplicates, so every duration stays as it is; and giving the free space inside the file
// back (`POST /api/0/storage/reclaim`). Each asks first: compaction shows what it would
// remove and runs with that count (`expect`), so nothing more goes than was shown.

import * as api from '../api.js';
import { h, replace, errorBox, confirmDialog } from '../dom.js';
import * as fmt from '../format.js';
import { undoNote } from './history_edit.js';

/** "The file went from 12 MB to 9 MB" from a reclaim's answer, if it gave anything back. */
export function reclaimedNote(r) {
  if (!r || !r.incremental) return null;
  const freed = (r.pages_before - r.pages_after) * r.page_size;
  return h('p', { class: 'stat-detail', id: 'upkeep-reclaimed' },
    freed > 0 ? `The file is ${fmt.bytes(freed)} smaller: the space went back to the disk.` : 'The file had no free space to give back.');
}

/** Compaction: a check that counts, then the run of what it counted. */
function compactSection(ctx, onChanged) {
  const result = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'compact-result' });
  const check = h('button', { type: 'button', class: 'btn', id: 'compact-check' }, 'Check what compaction removes');
  const run = async (expect) => {
    check.disabled = true;
    try {
      const body = expect == null ? { dry_run: true } : { dry_run: false, expect };
      const a = await api.request('POST', 'storage/compact', body);
      if (!ctx.isCurrent()) return;
      const perBucket = a.buckets.filter((b) => b.merged + b.duplicates > 0).map((b) =>
        h('li', {}, `${b.bucket}: ${fmt.count(b.merged)} merged, ${fmt.count(b.duplicates)} duplicates, of ${fmt.count(b.events_before)}`));
      if (a.dry_run) {
        const go = h('button', {
          type: 'button',
          class: 'btn danger',
          id: 'compact-run',
          onclick: async () => {
            const ok = await confirmDialog({
              title: 'Compact the stored history?',
              text: `${fmt.count(a.removed)} events are merged into their neighbours or removed as duplicates. No duration changes. A backup is taken first.`,
              confirmLabel: 'Compact',
              danger: true,
            });
            if (ok) run(a.removed);
          },
        }, `Compact (${fmt.count(a.removed)} events)`);
        replace(result,
          h('p', { id: 'compact-preview' }, a.removed
            ? `${fmt.count(a.removed)} of ${fmt.count(a.events_before)} window, AFK and browser events can go without changing any duration.`
            : `Nothing to compact in ${fmt.count(a.events_before)} window, AFK and browser events.`),
          perBucket.length ? h('ul', {}, perBucket) : null,
          a.removed ? h('div', { class: 'form-actions' }, go) : null);
      } else {
        replace(result,
          h('p', { id: 'compact-done' }, `Compacted: ${fmt.count(a.events_before)} events became ${fmt.count(a.events_after)}.`),
          reclaimedNote(a.reclaimed), undoNote(a));
        onChanged();
      }
    } catch (err) {
      if (ctx.isCurrent()) replace(result, errorBox(err, 'Could not compact'));
    } finally {
      check.disabled = false;
    }
  };
  check.addEventListener('click', () => run(null));
  return h('div', { class: 'upkeep', id: 'compact' },
    h('h3', {}, 'Compaction'),
    h('p', { class: 'stat-detail' }, 'Watchers store many short events that the dashboard joins anyway: compaction joins them once, and removes the AFK watcher’s duplicates. Totals by app, title, site, category, day and hour stay the same; the Timeline shows fewer pieces.'),
    h('div', { class: 'form-actions' }, check), result);
}

/** The free pages given back. */
function reclaimSection(ctx, onChanged) {
  const result = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'reclaim-result' });
  const button = h('button', { type: 'button', class: 'btn', id: 'reclaim-run' }, 'Give free space back');
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const r = await api.request('POST', 'storage/reclaim');
      if (!ctx.isCurrent()) return;
      replace(result, h('p', { id: 'reclaim-done' }, `The database file went from ${fmt.bytes(r.file_bytes_before)} to ${fmt.bytes(r.file_bytes_after)} in ${fmt.count(r.took_ms)} ms.`));
      onChanged();
    } catch (err) {
      if (ctx.isCurrent()) replace(result, errorBox(err, 'Could not give the space back'));
    } finally {
      button.disabled = false;
    }
  });
  return h('div', { class: 'upkeep', id: 'reclaim' },
    h('h3', {}, 'Free space'),
    h('p', { class: 'stat-detail' }, 'Deleted events leave free space inside the file; it is reused for new events, or given back to the disk here while the server keeps running.'),
    h('div', { class: 'form-actions' }, button), result);
}

/** Compaction and the free space; `onChanged` measures the storage again after a change. */
export function upkeepSections(ctx, onChanged) {
  return [compactSection(ctx, onChanged), reclaimSection(ctx, onChanged)];
}
