// Settings: when a day starts, which weekday starts a week, and the theme. They are
// aw-webui's own settings (`startOfDay`, `startOfWeek`, `theme`), so both dashboards count
// days and weeks alike, whichever of them the user changed it in. Below them, the privacy
// rules (the `privacy_filters` setting: `components/privacy_rules.js` edits them), applied
// to the stored history: a dry run first, which says per rule what it would drop or
// redact, then the run, after a confirmation; and what takes the space
// (`components/storage.js`).

import * as api from '../api.js';
import { h, replace, errorBox, confirmDialog } from '../dom.js';
import * as fmt from '../format.js';
import { undoNote } from '../components/history_edit.js';
import * as period from '../period.js';
import { storageCard } from '../components/storage.js';
import { privacyRulesEditor } from '../components/privacy_rules.js';

export const title = 'Settings';

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

export async function render(root, ctx) {
  const storage = await storageCard(ctx);
  if (!ctx.isCurrent()) return;
  const startOfDay = h('input', { type: 'time', id: 'set-start-of-day', required: true, value: period.startOfDay(ctx.settings) });
  const weekStart = period.startOfWeek(ctx.settings);
  const startOfWeek = h('select', { id: 'set-start-of-week' },
    WEEKDAYS.map((d) => h('option', { value: d, selected: WEEKDAYS.indexOf(d) === (weekStart + 6) % 7 }, d)));
  const chosen = ['light', 'dark'].includes(ctx.settings.theme) ? ctx.settings.theme : 'auto';
  const theme = h('select', { id: 'set-theme' },
    [['auto', 'As the system'], ['light', 'Light'], ['dark', 'Dark']].map(([v, label]) => h('option', { value: v, selected: v === chosen }, label)));
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'set-status' });
  const save = h('button', { type: 'submit', class: 'btn primary', id: 'set-save' }, 'Save');
  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Settings'),
      h('p', { class: 'page-sub' }, 'Shared with aw-webui: a change here shows there, and the reverse.')),
    h('form', {
      class: 'card panel',
      id: 'settings-form',
      'aria-label': 'Settings',
      onsubmit: async (e) => {
        e.preventDefault();
        if (!/^\d{1,2}:\d{2}$/.test(startOfDay.value)) return;
        save.disabled = true;
        try {
          await Promise.all([
            api.request('POST', 'settings/startOfDay', startOfDay.value),
            api.request('POST', 'settings/startOfWeek', startOfWeek.value),
            api.request('POST', 'settings/theme', theme.value),
          ]);
          Object.assign(ctx.settings, { startOfDay: startOfDay.value, startOfWeek: startOfWeek.value, theme: theme.value });
          ctx.applySettings();
          if (ctx.isCurrent()) replace(status, h('span', { id: 'set-saved' }, 'Saved. Days and weeks are counted this way from now on.'));
        } catch (err) {
          if (ctx.isCurrent()) replace(status, errorBox(err, 'Could not save the settings'));
        } finally {
          save.disabled = false;
        }
      },
    },
    h('div', { class: 'form-grid' },
      h('label', { for: 'set-start-of-day' }, 'A day starts at'), startOfDay,
      h('label', { for: 'set-start-of-week' }, 'A week starts on'), startOfWeek,
      h('label', { for: 'set-theme' }, 'Theme'), theme),
    h('p', { class: 'stat-detail' }, 'Activity before the day’s start counts for the day before (aw-webui’s default: 04:00, weeks from Monday).'),
    status,
    h('div', { class: 'form-actions' }, save)),
  privacyRulesEditor(ctx),
  privacyCard(ctx),
  storage);
}

/** One rule's line of a privacy run's report, with its samples. */
function ruleReport(r) {
  const what = r.action === 'drop' ? `drops ${fmt.count(r.dropped)}` : `redacts ${fmt.count(r.redacted)}`;
  return h('li', { class: 'privacy-rule' },
    h('div', {}, h('strong', {}, `Rule ${r.rule + 1}`), ` (${r.action} where ${r.field || 'any field'} matches `, h('code', {}, r.pattern), `): ${what}`,
      r.unevaluable ? ` · ${fmt.count(r.unevaluable)} values could not be checked and are kept` : ''),
    r.samples.length
      ? h('ul', { class: 'privacy-samples' }, r.samples.map((x) => h('li', {}, `${x.bucket} · ${x.timestamp} · `, h('span', { class: 'sample-value' }, x.value))))
      : null);
}

/** The report of a privacy run (`dry`: what it would do). */
function privacyReport(answer, dry) {
  const changed = answer.dropped + answer.redacted;
  return [
    h('p', { id: dry ? 'privacy-summary' : 'privacy-done' }, dry
      ? (changed
        ? `Of ${fmt.count(answer.events)} stored events, ${fmt.count(answer.dropped)} would be deleted and ${fmt.count(answer.redacted)} redacted.`
        : `None of the ${fmt.count(answer.events)} stored events matches a rule.`)
      : `Deleted ${fmt.count(answer.dropped)} and redacted ${fmt.count(answer.redacted)} of ${fmt.count(answer.events)} stored events.`),
    answer.rules.length ? h('ul', { class: 'privacy-rules' }, answer.rules.map(ruleReport)) : null,
    answer.skipped_rules && answer.skipped_rules.length
      ? h('div', { class: 'alert info', role: 'status' }, `Rules skipped (not valid): ${answer.skipped_rules.join('; ')}`)
      : null,
    dry ? null : undoNote(answer),
  ];
}

/**
 * The privacy rules on the stored history: "Check" runs them as a dry run and shows what
 * each would do, with samples; only then "Apply" is offered, and asks once more.
 */
function privacyCard(ctx) {
  const result = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite', id: 'privacy-result' });
  const check = h('button', { type: 'button', class: 'btn', id: 'privacy-check' }, 'Check the stored history');
  const run = async (dry) => {
    check.disabled = true;
    try {
      const answer = await api.request('POST', 'privacy/apply', { dry_run: dry });
      if (!ctx.isCurrent()) return;
      const changed = answer.dropped + answer.redacted;
      const apply = h('button', {
        type: 'button',
        class: 'btn danger',
        id: 'privacy-apply',
        onclick: async () => {
          const ok = await confirmDialog({
            title: 'Apply the privacy rules to the stored history?',
            text: `${fmt.count(answer.dropped)} events are deleted and ${fmt.count(answer.redacted)} redacted, and the removed text is erased from the database file. A backup is taken first, and older backups keep the old text. Other devices that sync with this one and run ours redact their copies at their next pass; those running the reference's aw-sync keep them.`,
            confirmLabel: 'Apply',
            danger: true,
          });
          if (ok) run(false);
        },
      }, 'Apply to the stored history');
      replace(result, privacyReport(answer, dry), dry && changed ? h('div', { class: 'form-actions' }, apply) : null);
    } catch (err) {
      if (ctx.isCurrent()) replace(result, errorBox(err, dry ? 'Could not check the history' : 'Could not apply the rules'));
    } finally {
      check.disabled = false;
    }
  };
  check.addEventListener('click', () => run(true));
  return h('section', { class: 'card panel', id: 'privacy', 'aria-label': 'Privacy rules on the stored history' },
    h('h2', {}, 'Privacy rules on the stored history'),
    h('p', { class: 'stat-detail' }, 'The rules of the privacy_filters setting drop or redact new events as they arrive. Here they are applied to what is stored already: first see what they would change.'),
    h('div', { class: 'form-actions' }, check),
    result);
}
