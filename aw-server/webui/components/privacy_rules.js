// The editor of the privacy rules themselves (the `privacy_filters` setting, which the
// server applies to every new event and, on request, to the stored history): a row per
// rule — on or off, the buckets it applies to (an id prefix, empty for all), the data field
// (empty for any), the pattern (a regular expression), drop or redact with the text put in
// place — added, changed and removed here, and saved as one list. The server skips a rule
// it cannot use (a pattern that does not compile) with a warning; a check of the stored
// history below lists such rules.

import * as api from '../api.js';
import { h, replace, errorBox } from '../dom.js';

/** The rules as stored (not a list: none). */
function storedRules(settings) {
  const rules = settings.privacy_filters;
  return Array.isArray(rules) ? rules.filter((r) => r && typeof r === 'object') : [];
}

/** One rule's row of inputs; `remove` drops it from the list. */
function ruleRow(rule, i, remove) {
  const id = (name) => `rule-${i}-${name}`;
  const text = (name, label, placeholder) => h('input', { type: 'text', id: id(name), 'aria-label': label, placeholder, value: rule[name] || '', dataset: { field: name } });
  const action = h('select', { id: id('action'), 'aria-label': 'Action', dataset: { field: 'action' } },
    [['drop', 'Drop the event'], ['redact', 'Redact the value']].map(([v, label]) => h('option', { value: v, selected: (rule.action || 'drop') === v }, label)));
  const replacement = text('replacement', 'Put in place', 'REDACTED');
  const showReplacement = () => { replacement.hidden = action.value !== 'redact'; };
  action.addEventListener('change', showReplacement);
  showReplacement();
  return h('tr', { class: 'rule-row' },
    h('td', {}, h('input', { type: 'checkbox', id: id('enabled'), 'aria-label': 'On', checked: rule.enabled !== false, dataset: { field: 'enabled' } })),
    h('td', {}, text('bucket_prefix', 'Buckets starting with', 'all buckets')),
    h('td', {}, text('field', 'Data field', 'any field')),
    h('td', {}, text('pattern', 'Pattern', 'a regular expression')),
    h('td', {}, action, replacement),
    h('td', {}, h('button', { type: 'button', class: 'btn small danger-outline', 'aria-label': `Remove rule ${i + 1}`, onclick: remove }, 'Remove')));
}

/** A row's rule as the setting stores it (empty fields left out). */
function readRow(tr) {
  const rule = {};
  for (const el of tr.querySelectorAll('[data-field]')) {
    const name = el.dataset.field;
    if (name === 'enabled') rule.enabled = el.checked;
    else if (el.value.trim() && !(name === 'replacement' && el.hidden)) rule[name] = el.value.trim();
  }
  return rule;
}

/** The card: the rules, a button to add one, and Save. */
export function privacyRulesEditor(ctx) {
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'rules-status' });
  const body = h('tbody', { id: 'rules-body' });
  const rows = () => [...body.querySelectorAll('tr.rule-row')];
  const render = (rules) => {
    replace(body, ...(rules.length
      ? rules.map((r, i) => ruleRow(r, i, () => render(rows().map(readRow).filter((_, j) => j !== i))))
      : [h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No rules: every event is stored as it arrives.'))]));
  };
  render(storedRules(ctx.settings));
  const add = h('button', { type: 'button', class: 'btn', id: 'rules-add' }, 'Add a rule');
  add.addEventListener('click', () => render([...rows().map(readRow), { enabled: true, action: 'drop' }]));
  const save = h('button', { type: 'submit', class: 'btn primary', id: 'rules-save' }, 'Save the rules');
  return h('form', {
    class: 'card panel',
    id: 'privacy-rules',
    'aria-label': 'Privacy rules',
    onsubmit: async (e) => {
      e.preventDefault();
      const rules = rows().map(readRow);
      const missing = rules.findIndex((r) => !r.pattern);
      if (missing >= 0) {
        replace(status, h('div', { class: 'alert error', role: 'alert' }, `Rule ${missing + 1} has no pattern.`));
        return;
      }
      save.disabled = true;
      try {
        await api.request('POST', 'settings/privacy_filters', rules);
        ctx.settings.privacy_filters = rules;
        if (ctx.isCurrent()) replace(status, h('span', { id: 'rules-saved' }, `Saved ${rules.length} ${rules.length === 1 ? 'rule' : 'rules'}: new events are filtered by them from now on.`));
      } catch (err) {
        if (ctx.isCurrent()) replace(status, errorBox(err, 'Could not save the rules'));
      } finally {
        save.disabled = false;
      }
    },
  },
  h('h2', {}, 'Privacy rules'),
  h('p', { class: 'stat-detail' }, 'Each new event is checked against the rules that are on: one whose field (any field when empty) matches the pattern is dropped, or has that value replaced. Buckets: those whose id starts with the text (all when empty).'),
  h('div', { class: 'table-wrap' }, h('table', { class: 'table rules' },
    h('thead', {}, h('tr', {}, ['On', 'Buckets', 'Field', 'Pattern', 'Action', ''].map((t) => h('th', { scope: 'col' }, t)))),
    body)),
  status,
  h('div', { class: 'form-actions' }, add, save));
}
