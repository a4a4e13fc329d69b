// Buckets: every bucket with its type, host, event count and last update; export, import,
// rename, merge (`components/bucket_edit.js`) and delete; a bucket's events page by page, newest first; the state of the sync with other
// devices; the database's backups, and a button that takes one.

import * as api from '../api.js';
import { h, replace, errorBox, notice, download, confirmDialog } from '../dom.js';
import * as fmt from '../format.js';
import { importPanel } from '../components/importer.js';
import { renameBucket, mergeBucket } from '../components/bucket_edit.js';

export const title = 'Buckets';

const PAGE_SIZE = 50;

/** The time of a bucket's last update: `last_updated`, else the end of its newest event. */
function lastUpdate(b) {
  const s = b.last_updated || (b.metadata && b.metadata.end);
  return s ? new Date(s) : null;
}

async function exportTo(id, status) {
  try {
    const { blob, filename } = await api.exportBuckets(id);
    download(blob, filename);
    replace(status, h('div', { class: 'alert success', role: 'status' }, `Exported ${id === undefined ? 'all buckets' : id} as ${filename} (${fmt.bytes(blob.size)}).`));
  } catch (err) {
    replace(status, errorBox(err, 'Export failed'));
  }
}

async function remove(id, status, after) {
  const ok = await confirmDialog({
    title: 'Delete bucket?',
    text: `“${id}” and all its events will be deleted from the server. This cannot be undone; export it first if you may need it.`,
    confirmLabel: 'Delete bucket',
    danger: true,
  });
  if (!ok) return;
  try {
    await api.deleteBucket(id);
    replace(status, h('div', { class: 'alert success', role: 'status' }, `Deleted bucket ${id}.`));
    await after();
  } catch (err) {
    replace(status, errorBox(err, `Could not delete ${id}`));
  }
}

async function bucketTable(ctx, status) {
  const buckets = Object.values(await ctx.refreshBuckets()).sort((a, b) => a.hostname.localeCompare(b.hostname) || a.id.localeCompare(b.id));
  const counts = await Promise.all(buckets.map((b) => api.countEvents(b.id).catch(() => null)));
  if (!buckets.length) return notice('No buckets yet. Start a watcher, or import an export file.');
  const now = new Date();
  const table = h('table', { class: 'table', id: 'bucket-table' },
    h('caption', { class: 'visually-hidden' }, 'Buckets'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Bucket'), h('th', { scope: 'col' }, 'Type'), h('th', { scope: 'col' }, 'Host'),
      h('th', { scope: 'col', class: 'num' }, 'Events'), h('th', { scope: 'col' }, 'Last update'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
    h('tbody', {}, buckets.map((b, i) => {
      const last = lastUpdate(b);
      return h('tr', { dataset: { bucket: b.id } },
        h('th', { scope: 'row', class: 'bucket-id' }, h('a', { href: `#/buckets?bucket=${encodeURIComponent(b.id)}` }, b.id)),
        h('td', { 'data-label': 'Type' }, b.type),
        h('td', { 'data-label': 'Host' }, b.hostname),
        h('td', { class: 'num', 'data-label': 'Events' }, counts[i] === null ? '?' : fmt.count(counts[i])),
        h('td', { 'data-label': 'Last update', title: last ? fmt.dateTime(last) : '' }, last ? fmt.ago(last, now) : '—'),
        h('td', { class: 'actions' },
          h('button', { type: 'button', class: 'btn small', onclick: () => exportTo(b.id, status), 'aria-label': `Export ${b.id}` }, 'Export'),
          h('button', { type: 'button', class: 'btn small', onclick: () => renameBucket(b, status, ctx.refreshView), 'aria-label': `Rename ${b.id}` }, 'Rename'),
          h('button', { type: 'button', class: 'btn small', onclick: () => mergeBucket(b, buckets, status, ctx.refreshView), 'aria-label': `Merge ${b.id}` }, 'Merge'),
          h('button', { type: 'button', class: 'btn small danger-outline', onclick: () => remove(b.id, status, ctx.refreshView), 'aria-label': `Delete ${b.id}` }, 'Delete')));
    })));
  return h('div', { class: 'card flush table-wrap' }, table);
}

function dataText(data) {
  return Object.entries(data || {}).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' · ');
}

async function renderBucket(root, ctx, id) {
  const page = Math.max(0, Number.parseInt(ctx.params.get('page') || '0', 10) || 0);
  const [bucket, total, events] = await Promise.all([
    api.request('GET', `buckets/${encodeURIComponent(id)}`),
    api.countEvents(id),
    api.getEvents(id, { limit: (page + 1) * PAGE_SIZE }),
  ]);
  if (!ctx.isCurrent()) return;
  const shown = events.slice(page * PAGE_SIZE);
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const status = h('div', { id: 'bucket-status' });
  const meta = bucket.metadata || {};
  const dl = (k, v) => h('div', { class: 'prop' }, h('dt', {}, k), h('dd', {}, v));
  const pager = (top) => h('nav', { class: 'pager', 'aria-label': top ? 'Event pages' : 'Event pages (bottom)' },
    h('button', { type: 'button', class: 'btn', id: top ? 'page-newer' : null, disabled: page === 0, onclick: () => ctx.navigate({ page: page - 1 || null }) }, '‹ Newer'),
    h('span', { class: 'pager-info', id: top ? 'page-info' : null }, total ? `Events ${fmt.count(page * PAGE_SIZE + 1)}–${fmt.count(page * PAGE_SIZE + shown.length)} of ${fmt.count(total)} · page ${page + 1} of ${pages}` : 'No events'),
    h('button', { type: 'button', class: 'btn', id: top ? 'page-older' : null, disabled: page + 1 >= pages, onclick: () => ctx.navigate({ page: page + 1 }) }, 'Older ›'));

  replace(root,
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/buckets' }, '‹ All buckets')),
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title bucket-title' }, id),
      h('div', { class: 'head-actions' },
        h('button', { type: 'button', class: 'btn', onclick: () => exportTo(id, status) }, 'Export'),
        h('button', { type: 'button', class: 'btn danger-outline', onclick: () => remove(id, status, () => ctx.navigate({ bucket: null, page: null })) }, 'Delete'))),
    status,
    h('section', { class: 'card' },
      h('dl', { class: 'props' },
        dl('Type', bucket.type), dl('Client', bucket.client), dl('Host', bucket.hostname),
        dl('Created', bucket.created ? fmt.dateTime(new Date(bucket.created)) : '—'),
        dl('First event', meta.start ? fmt.dateTime(new Date(meta.start)) : '—'),
        dl('Last event end', meta.end ? fmt.dateTime(new Date(meta.end)) : '—'),
        dl('Events', fmt.count(total)))),
    h('section', { class: 'card', 'aria-labelledby': 'events-h' },
      h('h2', { id: 'events-h' }, 'Events, newest first'),
      pager(true),
      shown.length
        ? h('div', { class: 'table-wrap' }, h('table', { class: 'table events', id: 'event-table' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Start'), h('th', { scope: 'col', class: 'num' }, 'Duration'), h('th', { scope: 'col' }, 'Data'))),
          h('tbody', {}, shown.map((e) => h('tr', {},
            h('td', { class: 'nowrap', title: `id ${e.id}` }, fmt.dateTime(new Date(e.timestamp))),
            h('td', { class: 'num nowrap' }, fmt.preciseDuration(e.duration)),
            h('td', { class: 'data', title: dataText(e.data) }, dataText(e.data)))))))
        : h('p', { class: 'empty' }, 'This bucket has no events.'),
      shown.length > 10 ? pager(false) : null));
}

/** `ago` for an ISO time, with the exact time as a tooltip; '—' for none. */
function when(iso, now) {
  if (!iso) return '—';
  const t = new Date(iso);
  return h('span', { title: fmt.dateTime(t) }, fmt.ago(t, now));
}

/**
 * The built-in sync (`[sync]` in config.toml): folder, last push and pull, every other
 * device seen with its hosts, and what failed. Off: how to turn it on.
 */
async function syncCard() {
  let s;
  try {
    s = await api.getSync();
  } catch (err) {
    return errorBox(err, 'Cannot load the sync state');
  }
  if (!s.enabled) {
    return h('section', { class: 'card', id: 'sync', 'aria-labelledby': 'sync-h' },
      h('h2', { id: 'sync-h' }, 'Sync between devices'),
      h('p', { class: 'meta' }, 'Off. To share this device\'s data with your other devices through a folder that Syncthing, Dropbox or Nextcloud keeps in sync, add to config.toml: ',
        h('code', {}, '[sync] folder = "/home/you/ActivityWatchSync"'), ', and restart the server. Other devices\' data then appears here as ',
        h('code', {}, '…-synced-from-<host>'), ' buckets.'));
  }
  const now = new Date();
  const dl = (k, v) => h('div', { class: 'prop' }, h('dt', {}, k), h('dd', {}, v));
  const pass = s.last_pass;
  const errors = [s.last_error, ...(pass ? pass.errors : [])].filter(Boolean);
  return h('section', { class: 'card', id: 'sync', 'aria-labelledby': 'sync-h' },
    h('h2', { id: 'sync-h' }, 'Sync between devices'),
    h('dl', { class: 'props' },
      dl('Folder', s.folder), dl('Mode', s.mode), dl('Every', fmt.duration(s.interval)),
      dl('Last push', when(s.last_push, now)), dl('Last pull', when(s.last_pull, now)),
      dl('Passes', s.running ? `${fmt.count(s.passes)} (one running)` : fmt.count(s.passes))),
    s.devices.length
      ? h('table', { class: 'table', id: 'sync-devices' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Other device'), h('th', { scope: 'col' }, 'Hosts'),
          h('th', { scope: 'col', class: 'num' }, 'Events imported'), h('th', { scope: 'col' }, 'Last read'), h('th', { scope: 'col' }, 'Problem'))),
        h('tbody', {}, s.devices.map((d) => h('tr', {},
          h('td', { class: 'bucket-id' }, d.device_id), h('td', {}, d.hostnames.join(', ')),
          h('td', { class: 'num' }, fmt.count(d.pulled_events)), h('td', {}, when(d.last_seen, now)),
          h('td', {}, d.error || '—')))))
      : h('p', { class: 'meta' }, pass ? 'No other device has written to the folder yet.' : 'The first pass has not finished yet.'),
    errors.length ? h('div', { class: 'alert error', role: 'status' }, h('p', {}, 'Last pass:'), h('ul', {}, errors.map((e) => h('li', {}, e)))) : null);
}

/**
 * The database's backups (`[backup]` in config.toml): every verified backup with its size
 * and time, the last attempt's problem, and a button that takes one now.
 */
async function backupCard() {
  const card = h('section', { class: 'card', id: 'backups', 'aria-labelledby': 'backups-h' });
  async function fill(note) {
    let s;
    try {
      s = await api.getBackups();
    } catch (err) {
      replace(card, errorBox(err, 'Cannot load the backups'));
      return;
    }
    const now = new Date();
    const button = h('button', { type: 'button', class: 'btn', id: 'backup-now' }, 'Back up now');
    button.addEventListener('click', async () => {
      button.disabled = true;
      button.textContent = 'Backing up…';
      try {
        const b = await api.takeBackup();
        await fill(h('div', { class: 'alert success', role: 'status', id: 'backup-done' },
          `Backed up to ${b.file} (${fmt.bytes(b.size)}), verified.`));
      } catch (err) {
        await fill(errorBox(err, 'Backup failed'));
      }
    });
    const last = s.last_attempt;
    replace(card,
      h('div', { class: 'card-head' }, h('h2', { id: 'backups-h' }, 'Backups'), button),
      h('p', { class: 'meta' }, s.enabled
        ? `Automatic: every ${fmt.duration(s.interval_hours * 3600)}, keeping the newest of each of the last ${s.keep_daily} days and ${s.keep_weekly} weeks, in ${s.folder}.`
        : `Automatic backups are off ([backup] enabled = false); backups taken here go to ${s.folder}.`),
      note || null,
      last && last.error ? h('div', { class: 'alert error', role: 'status' }, `Last attempt ${fmt.dateTime(new Date(last.time))}: ${last.error}`) : null,
      s.backups.length
        ? h('table', { class: 'table', id: 'backup-list' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Backup'), h('th', { scope: 'col' }, 'Taken'),
            h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col' }, 'Check'))),
          h('tbody', {}, s.backups.map((b) => h('tr', {},
            h('td', { class: 'bucket-id' }, b.file), h('td', {}, when(b.time, now)),
            h('td', { class: 'num' }, fmt.bytes(b.size)),
            h('td', {}, b.kind === 'before-migration' ? `${b.verdict} (before a schema upgrade)` : b.verdict)))))
        : h('p', { class: 'meta' }, 'No backup yet.'));
  }
  await fill();
  return card;
}

export async function render(root, ctx) {
  const id = ctx.params.get('bucket');
  if (id) {
    await renderBucket(root, ctx, id);
    return;
  }
  const status = h('div', { id: 'bucket-status' });
  const tableHolder = h('div', {});
  ctx.refreshView = async () => {
    replace(tableHolder, await bucketTable(ctx, status));
  };
  const importer = importPanel(ctx.refreshView);
  const [, sync, backups] = await Promise.all([ctx.refreshView(), syncCard(), backupCard()]);
  if (!ctx.isCurrent()) return;
  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Buckets'),
      h('div', { class: 'head-actions' },
        h('button', { type: 'button', class: 'btn', id: 'export-all', onclick: () => exportTo(undefined, status) }, 'Export all'),
        importer.button)),
    importer.panel,
    status,
    tableHolder,
    sync,
    backups);
}
