// The retention rules (the `retention_rules` setting, ours): a row per rule — on or off,
// which buckets (an id prefix, a type, a host; empty for any), after how many days, and
// what happens then: the events are deleted, chosen data fields get a fixed text, or the
// events shorter than some seconds are deleted; whether a rule may delete every event of a
// bucket, and whether its deletions reach the other devices or stay on this one. Saved as
// one list (the server refuses a rule that does not validate and names it); whether the
// rules run by themselves once a day (`retention_daily`); a check that says per rule what
// it would do, then the run of exactly that; and the last runs, with the backups that still
// hold what they removed.

import * as api from '../api.js';
import { h, replace, errorBox, confirmDialog } from '../dom.js';
import * as fmt from '../format.js';
import { undoNote } from './history_edit.js';
import { reclaimedNote } from './storage_upkeep.js';

const ACTIONS = [['delete', 'Delete the events'], ['redact', 'Replace fields with a text'], ['delete_shorter', 'Delete events shorter than']];

/** The rules as stored (not a list: none). */
function storedRules(settings) {
  const rules = settings.retention_rules;
  return Array.isArray(rules) ? rules.filter((r) => r && typeof r === 'object') : [];
}

/** One rule's row of inputs; `remove` drops it from the list. */
function ruleRow(rule, i, remove) {
  const id = (name) => `ret-${i}-${name}`;
  const text = (name, label, placeholder, value = rule[name]) => h('input', { type: 'text', id: id(name), 'aria-label': label, placeholder, value: value == null ? '' : String(value), dataset: { field: name } });
  const number = (name, label, min, step) => h('input', { type: 'number', id: id(name), 'aria-label': label, min, step, value: rule[name] == null ? '' : String(rule[name]), dataset: { field: name } });
  const check = (name, label, checked) => h('label', { class: 'check' }, h('input', { type: 'checkbox', id: id(name), checked, dataset: { field: name } }), ` ${label}`);
  const action = h('select', { id: id('action'), 'aria-label': 'Action', dataset: { field: 'action' } },
    ACTIONS.map(([v, label]) => h('option', { value: v, selected: (rule.action || 'delete') === v }, label)));
  const fields = text('fields', 'Fields', 'title, url', (rule.fields || []).join(', '));
  const replacement = text('replacement', 'Put in place', '(redacted)');
  const shorter = number('shorter_than_seconds', 'Seconds', '0.001', 'any');
  const show = () => {
    fields.hidden = replacement.hidden = action.value !== 'redact';
    shorter.hidden = action.value !== 'delete_shorter';
  };
  action.addEventListener('change', show);
  show();
  return h('tr', { class: 'retention-row' },
    h('td', {}, h('input', { type: 'checkbox', id: id('enabled'), 'aria-label': 'On', checked: rule.enabled !== false, dataset: { field: 'enabled' } })),
    h('td', {}, text('bucket_prefix', 'Buckets starting with', 'all buckets'), text('bucket_type', 'Of type', 'any type'), text('hostname', 'Of host', 'any host')),
    h('td', {}, number('older_than_days', 'Older than (days)', '1', '1')),
    h('td', {}, action, fields, replacement, shorter),
    h('td', {}, check('all_of_bucket', 'may empty a bucket', rule.all_of_bucket === true), check('everywhere', 'on every device', rule.everywhere === true)),
    h('td', {}, h('button', { type: 'button', class: 'btn small danger-outline', 'aria-label': `Remove rule ${i + 1}`, onclick: remove }, 'Remove')));
}

/** A row's rule as the setting stores it (empty and hidden fields left out). */
function readRow(tr) {
  const rule = {};
  for (const el of tr.querySelectorAll('[data-field]')) {
    const name = el.dataset.field;
    if (el.type === 'checkbox') {
      if (name === 'enabled' || el.checked) rule[name] = el.checked;
    } else if (el.value.trim() && !el.hidden) {
      if (name === 'fields') rule.fields = el.value.split(',').map((f) => f.trim()).filter(Boolean);
      else if (el.type === 'number') rule[name] = Number(el.value);
      else rule[name] = el.value.trim();
    }
  }
  return rule;
}

/** One rule's line of a run's report, with its samples. */
function ruleReport(r) {
  const what = r.action === 'drop' ? `deletes ${fmt.count(r.dropped)} events` : `redacts ${fmt.count(r.redacted)} events`;
  return h('li', { class: 'retention-rule' },
    h('div', {}, h('strong', {}, `Rule ${r.rule + 1}`), `: ${what} (${fmt.duration(r.seconds)})`,
      r.buckets.length ? ` in ${r.buckets.join(', ')}` : ''),
    r.empties.length ? h('div', { class: 'alert error', role: 'status' }, `Leaves no event in ${r.empties.join(', ')}: the rule must allow that (“may empty a bucket”) to run.`) : null,
    r.samples.length ? h('ul', { class: 'privacy-samples' }, r.samples.map((x) => h('li', {}, `${x.bucket} · ${x.timestamp} · `, h('span', { class: 'sample-value' }, x.value)))) : null);
}

/** The last runs, and the backups that still hold what they removed. */
export function runsView(retention) {
  if (!retention || !retention.runs.length) return h('p', { class: 'meta', id: 'retention-runs' }, 'The rules have not run yet.');
  return h('div', { id: 'retention-runs' },
    h('ul', {}, retention.runs.slice(0, 5).map((r) => h('li', {},
      `${fmt.dateTime(new Date(r.at))}${r.automatic ? ' (daily)' : ''}: `,
      r.error ? h('span', { class: 'run-error' }, `nothing changed: ${r.error}`) : `${fmt.count(r.dropped)} deleted, ${fmt.count(r.redacted)} redacted`))),
    retention.backups_holding_removed.length
      ? h('p', { class: 'stat-detail', id: 'retention-backups' }, `These backups still hold what the rules removed: ${retention.backups_holding_removed.join(', ')}.`)
      : null);
}

/** The card's retention part; `onChanged` measures the storage again after a run. */
export function retentionSection(ctx, onChanged) {
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'retention-status' });
  const result = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'retention-result' });
  const body = h('tbody', { id: 'retention-body' });
  const rows = () => [...body.querySelectorAll('tr.retention-row')];
  const render = (rules) => {
    replace(body, ...(rules.length
      ? rules.map((r, i) => ruleRow(r, i, () => render(rows().map(readRow).filter((_, j) => j !== i))))
      : [h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No rules: everything is kept for ever.'))]));
  };
  render(storedRules(ctx.settings));
  const add = h('button', { type: 'button', class: 'btn', id: 'retention-add' }, 'Add a rule');
  add.addEventListener('click', () => render([...rows().map(readRow), { enabled: true, action: 'delete', older_than_days: 365 }]));
  const save = h('button', { type: 'submit', class: 'btn primary', id: 'retention-save' }, 'Save the rules');
  const daily = h('input', { type: 'checkbox', id: 'retention-daily', checked: ctx.settings.retention_daily === true });
  daily.addEventListener('change', async () => {
    try {
      await api.request('POST', 'settings/retention_daily', daily.checked);
      ctx.settings.retention_daily = daily.checked;
      replace(status, h('span', { id: 'retention-daily-saved' }, daily.checked ? 'The rules run by themselves once a day.' : 'The rules run only when asked.'));
    } catch (err) {
      daily.checked = !daily.checked;
      replace(status, errorBox(err, 'Could not change the daily run'));
    }
  });
  const check = h('button', { type: 'button', class: 'btn', id: 'retention-check' }, 'Check what the rules do');
  const run = async (expect) => {
    check.disabled = true;
    try {
      const a = await api.request('POST', 'retention/apply', expect ? { dry_run: false, expect } : { dry_run: true });
      if (!ctx.isCurrent()) return;
      const changed = a.dropped + a.redacted;
      const counts = [];
      for (const r of a.rules) counts[r.rule] = (counts[r.rule] || 0) + r.dropped + r.redacted;
      const go = h('button', {
        type: 'button',
        class: 'btn danger',
        id: 'retention-apply',
        onclick: async () => {
          const ok = await confirmDialog({
            title: 'Apply the retention rules now?',
            text: `${fmt.count(a.dropped)} events are deleted and ${fmt.count(a.redacted)} redacted, and the removed text is erased from the database file. A backup is taken first; it, and older backups, keep what is removed until they are deleted.`,
            confirmLabel: 'Apply',
            danger: true,
          });
          if (ok) run(Array.from(counts, (n) => n || 0));
        },
      }, 'Apply the rules');
      const blocked = a.rules.some((r) => r.empties.length);
      replace(result,
        h('p', { id: a.dry_run ? 'retention-preview' : 'retention-done' }, a.dry_run
          ? (changed ? `Of ${fmt.count(a.events)} stored events, ${fmt.count(a.dropped)} would be deleted and ${fmt.count(a.redacted)} redacted.` : `None of the ${fmt.count(a.events)} stored events is old enough for a rule.`)
          : `Deleted ${fmt.count(a.dropped)} and redacted ${fmt.count(a.redacted)} events.`),
        a.rules.length ? h('ul', { class: 'retention-rules' }, a.rules.map(ruleReport)) : null,
        a.dry_run && changed && !blocked ? h('div', { class: 'form-actions' }, go) : null,
        a.dry_run ? null : reclaimedNote(a.reclaimed),
        a.dry_run ? null : undoNote(a));
      if (!a.dry_run) onChanged();
    } catch (err) {
      if (ctx.isCurrent()) replace(result, errorBox(err, expect ? 'Could not apply the rules' : 'Could not check the rules'));
    } finally {
      check.disabled = false;
    }
  };
  check.addEventListener('click', () => run(null));
  // The server checks the rules and names what is wrong, so the browser's own checks are off.
  const form = h('form', {
    id: 'retention-form',
    novalidate: true,
    'aria-label': 'Retention rules',
    onsubmit: async (e) => {
      e.preventDefault();
      const rules = rows().map(readRow);
      save.disabled = true;
      try {
        await api.request('POST', 'settings/retention_rules', rules);
        ctx.settings.retention_rules = rules;
        if (ctx.isCurrent()) replace(status, h('span', { id: 'retention-saved' }, `Saved ${rules.length} ${rules.length === 1 ? 'rule' : 'rules'}.`));
      } catch (err) {
        if (ctx.isCurrent()) replace(status, errorBox(err, 'Could not save the rules'));
      } finally {
        save.disabled = false;
      }
    },
  },
  h('div', { class: 'table-wrap' }, h('table', { class: 'table rules' },
    h('thead', {}, h('tr', {}, ['On', 'Buckets', 'Older than (days)', 'Then', 'Reach', ''].map((t) => h('th', { scope: 'col' }, t)))),
    body)),
  h('div', { class: 'form-actions' }, add, save));
  return h('div', { class: 'upkeep', id: 'retention' },
    h('h3', {}, 'Retention rules'),
    h('p', { class: 'stat-detail' }, 'What is kept, and for how long. An event is old once it ended that many days ago. Deletions stay on this device unless a rule is “on every device”, which other devices running this server follow at their next sync.'),
    form,
    h('label', { class: 'check', for: 'retention-daily' }, daily, ' Run the rules by themselves once a day'),
    status,
    h('div', { class: 'form-actions' }, check),
    result);
}
