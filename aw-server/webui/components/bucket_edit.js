// Rename and Merge on the Buckets page (`PATCH /api/0/buckets/<id>`,
// `POST /api/0/buckets/<id>/merge`). A bucket a watcher wrote to in the last ten minutes is
// refused by the server (409: the watcher would keep writing to the old id); the user is
// shown why and may go on anyway (`force=true`). A merge takes a backup first, and says how
// to undo it.

import * as api from '../api.js';
import { h, replace, errorBox, confirmDialog, formDialog } from '../dom.js';
import * as fmt from '../format.js';
import { undoNote } from './history_edit.js';

const enc = encodeURIComponent;

/** Runs `send(force)`; on a 409 asks whether to go on anyway, then sends with force. */
async function withForce(send, what) {
  try {
    return await send(false);
  } catch (err) {
    if (err.status !== 409 || !/force=true/.test(err.message)) throw err;
    const ok = await confirmDialog({ title: `${what} anyway?`, text: err.message, confirmLabel: `${what} anyway`, danger: true });
    if (!ok) return null;
    return send(true);
  }
}

/** Asks for a bucket's new id and host, and renames it. */
export async function renameBucket(b, status, after) {
  const answer = await formDialog({
    title: `Rename ${b.id}`,
    text: 'Watchers keep writing to the id they know: restart the watcher that writes here after renaming.',
    fields: [{ name: 'id', label: 'New id', value: b.id }, { name: 'hostname', label: 'Host', value: b.hostname }],
    confirmLabel: 'Rename',
  });
  if (!answer || (answer.id === b.id && answer.hostname === b.hostname)) return;
  const body = {};
  if (answer.id !== b.id) body.id = answer.id;
  if (answer.hostname !== b.hostname) body.hostname = answer.hostname;
  try {
    const done = await withForce((force) => api.request('PATCH', `buckets/${enc(b.id)}${force ? '?force=true' : ''}`, body), 'Rename');
    if (!done) return;
    replace(status, h('div', { class: 'alert success', role: 'status', id: 'rename-done' }, `Renamed ${b.id} to ${done.id} on host ${done.hostname}.`));
    await after();
  } catch (err) {
    replace(status, errorBox(err, `Could not rename ${b.id}`));
  }
}

/** Asks which bucket of the same type `b` goes into, and merges it there. */
export async function mergeBucket(b, buckets, status, after) {
  const targets = buckets.filter((o) => o.id !== b.id && o.type === b.type);
  if (!targets.length) {
    replace(status, h('div', { class: 'alert info', role: 'status' }, `No other bucket has the type ${b.type}: ${b.id} can only be merged into one of its type.`));
    return;
  }
  const answer = await formDialog({
    title: `Merge ${b.id} into another bucket`,
    text: `Every event of ${b.id} moves into the chosen bucket (events it holds already are not doubled), and ${b.id} is deleted. A backup is taken first.`,
    fields: [{ name: 'into', label: 'Into', value: targets[0].id, options: targets.map((o) => [o.id, `${o.id} (${o.hostname})`]) }],
    confirmLabel: 'Merge',
    danger: true,
  });
  if (!answer) return;
  try {
    const done = await withForce((force) => api.request('POST', `buckets/${enc(answer.into)}/merge${force ? '?force=true' : ''}`, { from: b.id }), 'Merge');
    if (!done) return;
    replace(status, h('div', { class: 'alert success', role: 'status', id: 'merge-done' },
      h('p', {}, `Merged ${b.id} into ${answer.into}: ${fmt.count(done.moved)} events moved, ${fmt.count(done.duplicates)} already there.`),
      undoNote(done)));
    await after();
  } catch (err) {
    replace(status, errorBox(err, `Could not merge ${b.id}`));
  }
}
