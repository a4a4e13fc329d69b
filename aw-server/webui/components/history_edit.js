// Changing stored history from the Timeline: deleting a span of a host's day after a dry run
// that says what it would remove, editing or deleting one event, and adding an activity by
// hand (a meeting away from the computer) to the host's `aw-manual_<host>` bucket, which the
// activity queries count as active time (`queries.js`). Each change goes to the
// server's history routes (`DELETE /api/0/events`, `PUT …/events/<id>`,
// `POST …/events/delete`), which take a backup first when more than one event changes; the
// answer's undo command is shown as the server gives it.

import * as api from '../api.js';
import { h, replace, errorBox } from '../dom.js';
import * as fmt from '../format.js';

const enc = encodeURIComponent;
const pad = (n) => String(n).padStart(2, '0');

/** `YYYY-MM-DDTHH:MM:SS` of a Date in local time, as `datetime-local` inputs take it. */
function localInput(d) {
  return `${fmt.isoDate(d)}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * The Date of a typed time (`HH:MM` or `HH:MM:SS`) within the day that starts at `dayStart`:
 * a time before the day's start (04:00 by default) is the next morning. `null` if not a time.
 */
function dayTime(dayStart, value) {
  const m = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(value);
  if (!m) return null;
  const d = new Date(dayStart.getFullYear(), dayStart.getMonth(), dayStart.getDate(), +m[1], +m[2], +(m[3] || 0));
  if (d < dayStart) d.setDate(d.getDate() + 1);
  return d;
}

/**
 * What the answer of a history rewrite (a deletion, a privacy run) says about undoing it:
 * the backup taken first and the restore command; nothing for a dry run or one event.
 */
export function undoNote(answer) {
  if (!answer || !answer.backup) return null;
  return h('p', { class: 'stat-detail', id: 'undo-note' },
    `A backup was taken first (${answer.backup}). To undo, stop the server and run: `,
    h('code', {}, answer.restore || `aw-server restore ${answer.backup}`),
    answer.restore_note ? ` (${answer.restore_note})` : '');
}

/** "12 events in 3 buckets, 47m" (and the events cut at the edges), from a deletion's answer. */
function describeDeletion(answer) {
  const events = answer.deleted + answer.cut;
  const parts = [`${fmt.count(events)} ${events === 1 ? 'event' : 'events'} in ${fmt.count(answer.buckets)} ${answer.buckets === 1 ? 'bucket' : 'buckets'}, ${fmt.preciseDuration(Math.round(answer.seconds))}`];
  if (answer.cut) parts.push(`${fmt.count(answer.cut)} of them cut at the edges`);
  return parts.join('; ');
}

/**
 * The card that deletes a span of `host`'s day (`dayStart`–`dayEnd`, Dates): the span is
 * dragged on the timeline (`setSpan`) or typed as two times; "Preview" asks for a dry run,
 * and only then "Delete" is offered, for exactly the span previewed. After a deletion
 * `onDeleted` gets what to tell the user (what went, and how to undo it), for the card of
 * the view rendered anew to show (`shown`); `onSpan` hears of each span previewed (to mark
 * it on the timeline).
 */
/**
 * What the other devices do with a deletion here, from the built-in sync's state: those
 * running ours follow at their next pass, those running the reference's aw-sync keep their
 * copies. Nothing when sync is off or the state cannot be read.
 */
export async function otherDevicesNote() {
  let status;
  try {
    status = await api.request('GET', 'sync');
  } catch {
    return null;
  }
  if (!status?.enabled || !status.devices?.length) return null;
  const name = (d) => d.hostnames?.[0] || d.device_id;
  const follow = status.devices.filter((d) => d.follows_changes).map(name);
  const keep = status.devices.filter((d) => !d.follows_changes).map(name);
  const parts = [];
  if (follow.length) parts.push(`${follow.join(', ')} will delete it too at the next sync pass.`);
  if (keep.length) parts.push(`${keep.join(', ')} (the reference's aw-sync) will keep their copies.`);
  return h('p', { class: 'stat-detail', id: 'tl-del-devices' }, parts.join(' '));
}

export function spanDeleter({ host, dayStart, dayEnd, onDeleted, onSpan = () => {}, shown = null }) {
  const from = h('input', { type: 'time', step: 1, id: 'tl-del-from', required: true });
  const to = h('input', { type: 'time', step: 1, id: 'tl-del-to', required: true });
  const result = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'tl-del-result' }, shown);
  const previewBtn = h('button', { type: 'submit', class: 'btn', id: 'tl-del-preview' }, 'Preview');
  // The span previewed and the events it would delete or cut: the run deletes that span
  // only while it still holds that many (`expect`; else 409 and nothing changes).
  let previewed = null; // { span, count }

  const span = () => {
    const s = dayTime(dayStart, from.value);
    const e = dayTime(dayStart, to.value);
    if (!s || !e) return null;
    return [s, e > dayEnd ? dayEnd : e];
  };
  const path = ([s, e], dryRun, expect) => {
    const q = { start: s.toISOString(), end: e.toISOString(), hostname: host, dry_run: String(dryRun) };
    if (!dryRun) q.expect = String(expect);
    return `events?${new URLSearchParams(q)}`;
  };
  const forget = () => {
    previewed = null;
    replace(result);
  };
  from.addEventListener('input', forget);
  to.addEventListener('input', forget);

  const run = async (dryRun) => {
    const chosen = dryRun ? span() : previewed?.span;
    if (!chosen) return;
    if (chosen[0] >= chosen[1]) {
      replace(result, h('div', { class: 'alert error', role: 'alert' }, 'The span must end after it starts.'));
      return;
    }
    previewBtn.disabled = true;
    try {
      const answer = await api.request('DELETE', path(chosen, dryRun, previewed?.count));
      if (dryRun) {
        previewed = { span: chosen, count: answer.deleted + answer.cut };
        onSpan(chosen[0], chosen[1]);
        const nothing = previewed.count === 0;
        replace(result,
          h('p', { id: 'tl-del-summary' }, nothing
            ? `Nothing recorded between ${fmt.clock(chosen[0], true)} and ${fmt.clock(chosen[1], true)}.`
            : `Between ${fmt.clock(chosen[0], true)} and ${fmt.clock(chosen[1], true)}: ${describeDeletion(answer)}. Nothing is deleted until you press Delete.`),
          nothing ? null : await otherDevicesNote(),
          nothing ? null : h('div', { class: 'form-actions' },
            h('button', { type: 'button', class: 'btn', onclick: forget }, 'Cancel'),
            h('button', { type: 'button', class: 'btn danger', id: 'tl-del-run', onclick: () => run(false) }, 'Delete')));
      } else {
        previewed = null;
        onDeleted([h('p', { id: 'tl-del-done' }, `Deleted ${describeDeletion(answer)}.`), undoNote(answer)]);
      }
    } catch (err) {
      replace(result, errorBox(err, dryRun ? 'Could not preview the deletion' : 'Could not delete'));
    } finally {
      previewBtn.disabled = false;
    }
  };

  const card = h('form', {
    class: 'card panel',
    id: 'tl-delete',
    'aria-label': 'Delete a span of the day',
    onsubmit: (e) => {
      e.preventDefault();
      run(true);
    },
  },
  h('h2', {}, 'Delete a span'),
  h('p', { class: 'stat-detail' }, `Drag across the timeline or type the times. Every bucket of ${host} loses what lies in the span; events across its edges are cut.`),
  h('div', { class: 'form-grid' },
    h('label', { for: 'tl-del-from' }, 'From'), from,
    h('label', { for: 'tl-del-to' }, 'To'), to),
  h('div', { class: 'form-actions' }, previewBtn),
  result);
  return {
    card,
    /** Sets the span (Dates) from a drag on the timeline, and previews it. */
    setSpan(s, e) {
      from.value = fmt.clock(s, true);
      to.value = fmt.clock(e, true);
      forget();
      run(true);
    },
  };
}

/**
 * A dialog to edit one stored event (`ev`, of bucket `bucketId`): its start, duration and
 * data, saved with `PUT`; or to delete it. `onChanged` runs after either.
 */
export function editEvent(ev, bucketId, onChanged) {
  const start = h('input', { type: 'datetime-local', step: 1, id: 'ev-start', required: true, value: localInput(new Date(ev.timestamp)) });
  const duration = h('input', { type: 'number', min: 0, step: 'any', id: 'ev-duration', required: true, value: String(ev.duration) });
  const data = h('textarea', { id: 'ev-data', rows: 6, spellcheck: 'false' }, JSON.stringify(ev.data, null, 2));
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'ev-status' });
  const dialog = h('dialog', { class: 'dialog wide', 'aria-labelledby': 'ev-title' });
  const close = () => dialog.close();
  const save = async (e) => {
    e.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(data.value);
    } catch (err) {
      replace(status, h('div', { class: 'alert error', role: 'alert' }, `The data is not JSON: ${err.message}`));
      return;
    }
    const when = new Date(start.value);
    if (Number.isNaN(when.getTime())) return;
    try {
      await api.request('PUT', `buckets/${enc(bucketId)}/events/${ev.id}`, {
        timestamp: when.toISOString(),
        duration: Number(duration.value),
        data: parsed,
      });
      close();
      onChanged();
    } catch (err) {
      replace(status, errorBox(err, 'Could not save the event'));
    }
  };
  const remove = async () => {
    try {
      await api.request('POST', `buckets/${enc(bucketId)}/events/delete`, { ids: [ev.id] });
      close();
      onChanged();
    } catch (err) {
      replace(status, errorBox(err, 'Could not delete the event'));
    }
  };
  replace(dialog,
    h('form', { onsubmit: save },
      h('h2', { id: 'ev-title' }, `Event ${ev.id} of ${bucketId}`),
      h('div', { class: 'form-grid' },
        h('label', { for: 'ev-start' }, 'Starts'), start,
        h('label', { for: 'ev-duration' }, 'Seconds'), duration,
        h('label', { for: 'ev-data' }, 'Data (JSON)'), data),
      status,
      h('div', { class: 'dialog-actions' },
        h('button', { type: 'button', class: 'btn danger-outline', id: 'ev-delete', onclick: remove }, 'Delete event'),
        h('button', { type: 'button', class: 'btn', onclick: close }, 'Cancel'),
        h('button', { type: 'submit', class: 'btn primary', id: 'ev-save' }, 'Save'))));
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

/**
 * The card that adds an activity by hand to `host`'s day (a meeting, a walk: time away from
 * the computer that was still work): what it was and when, stored in `aw-manual_<host>`
 * (type `manual`, created on first use) with the text as its `app` and `title`, so the
 * categories apply to it. The activity queries count it as active time and put it in the
 * place of the window time it overlaps. `onAdded` runs after.
 */
export function activityAdder({ host, dayStart, dayEnd, onAdded }) {
  const what = h('input', { type: 'text', id: 'tl-add-what', required: true, maxlength: 200, placeholder: 'Team meeting' });
  const from = h('input', { type: 'time', step: 1, id: 'tl-add-from', required: true });
  const to = h('input', { type: 'time', step: 1, id: 'tl-add-to', required: true });
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'tl-add-status' });
  const add = h('button', { type: 'submit', class: 'btn', id: 'tl-add-save' }, 'Add');
  const bucket = `aw-manual_${host}`;
  return h('form', {
    class: 'card panel',
    id: 'tl-add',
    'aria-label': 'Add an activity by hand',
    onsubmit: async (e) => {
      e.preventDefault();
      const s = dayTime(dayStart, from.value);
      const end = dayTime(dayStart, to.value);
      const text = what.value.trim();
      if (!s || !end || !text) return;
      if (end <= s || end > dayEnd) {
        replace(status, h('div', { class: 'alert error', role: 'alert' }, 'The activity must end after it starts, within the day.'));
        return;
      }
      add.disabled = true;
      try {
        // 304 when it exists already.
        await api.request('POST', `buckets/${enc(bucket)}`, { client: 'aw-server-dashboard', type: 'manual', hostname: host });
        await api.request('POST', `buckets/${enc(bucket)}/events`, [{
          timestamp: s.toISOString(),
          duration: (end - s) / 1000,
          data: { app: text, title: text },
        }]);
        onAdded();
      } catch (err) {
        replace(status, errorBox(err, 'Could not add the activity'));
      } finally {
        add.disabled = false;
      }
    },
  },
  h('h2', {}, 'Add an activity'),
  h('p', { class: 'stat-detail' }, 'Time away from the computer that counts as active, such as a meeting: it takes the place of what the watchers recorded then.'),
  h('div', { class: 'form-grid' },
    h('label', { for: 'tl-add-what' }, 'What'), what,
    h('label', { for: 'tl-add-from' }, 'From'), from,
    h('label', { for: 'tl-add-to' }, 'To'), to),
  status,
  h('div', { class: 'form-actions' }, add));
}
