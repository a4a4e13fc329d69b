// Settings: when a day starts, which weekday starts a week, and the theme. They are
// aw-webui's own settings (`startOfDay`, `startOfWeek`, `theme`), so both dashboards count
// days and weeks alike, whichever of them the user changed it in.

import * as api from '../api.js';
import { h, replace, errorBox } from '../dom.js';
import * as period from '../period.js';

export const title = 'Settings';

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

export async function render(root, ctx) {
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
    h('div', { class: 'form-actions' }, save)));
}
