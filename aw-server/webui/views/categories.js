// Categories: the user's categorisation rules, kept where aw-webui keeps them (the `classes`
// setting), so a change made here shows in aw-webui and the reverse. Every field aw-webui
// writes (`id`, `data.color`, `score`, …) is kept as it is. A rule's regex is checked by the
// server's own regex engine (the query language's), since that is the engine that runs it.

import * as api from '../api.js';
import { h, replace, errorBox, confirmDialog } from '../dom.js';
import * as fmt from '../format.js';
import { DEFAULT_CLASSES, canWrite, literal } from '../queries.js';
import { categoryColor } from '../colors.js';

export const title = 'Categories';

/** The categories of the setting (aw-webui's defaults when it is absent), as a fresh copy. */
function current(settings) {
  let c = settings.classes;
  if (typeof c === 'string') {
    try {
      c = JSON.parse(c);
    } catch {
      c = null;
    }
  }
  const list = Array.isArray(c) && c.length ? c : DEFAULT_CLASSES.map((x, i) => ({ id: i + 1, ...x }));
  return JSON.parse(JSON.stringify(list.filter((x) => x && Array.isArray(x.name))));
}

const key = (names) => JSON.stringify(names);

/** Whether `names` starts with `prefix`. */
const under = (names, prefix) => prefix.length <= names.length && prefix.every((n, i) => names[i] === n);

/**
 * The server's verdict on a regex: null when it compiles, else the engine's message. The
 * check is a query that compiles the rule (`categorize` compiles every rule before reading
 * any event), over an empty list.
 */
export async function regexError(regex, ignoreCase) {
  if (!canWrite(regex)) return 'A rule cannot end with a backslash: a query cannot contain it.';
  const rule = { type: 'regex', regex };
  if (ignoreCase) rule.ignore_case = true;
  try {
    await api.query([[new Date(0), new Date(1000)]], [`RETURN = categorize([], ${literal([[['check'], rule]])});`]);
    return null;
  } catch (e) {
    if (e.status >= 400 && e.status < 600) return e.message;
    throw e;
  }
}

/** Sorted as a tree: parents before their children, siblings by name. */
function sorted(list) {
  return [...list].sort((a, b) => {
    for (let i = 0; i < Math.min(a.name.length, b.name.length); i += 1) {
      const c = a.name[i].localeCompare(b.name[i]);
      if (c) return c;
    }
    return a.name.length - b.name.length;
  });
}

function ruleText(c) {
  if (!c.rule || c.rule.type !== 'regex') return 'no rule';
  return `/${c.rule.regex}/${c.rule.ignore_case ? 'i' : ''}`;
}

/** The form for a new or an existing category; resolves when saved or cancelled. */
function form(list, existing, onDone) {
  const parents = sorted(list).filter((c) => !existing || !under(c.name, existing.name));
  const nameInput = h('input', { type: 'text', id: 'cat-name', required: true, value: existing ? existing.name[existing.name.length - 1] : '', autocomplete: 'off' });
  const parentSelect = h('select', { id: 'cat-parent' },
    h('option', { value: '' }, '(top level)'),
    parents.map((c) => h('option', { value: key(c.name), selected: existing && key(c.name) === key(existing.name.slice(0, -1)) }, fmt.category(c.name))));
  const regexInput = h('input', { type: 'text', id: 'cat-regex', value: existing && existing.rule && existing.rule.type === 'regex' ? existing.rule.regex : '', autocomplete: 'off', spellcheck: 'false' });
  const ignoreCase = h('input', { type: 'checkbox', id: 'cat-ignore-case', checked: Boolean(existing && existing.rule && existing.rule.ignore_case) });
  const color = h('input', { type: 'color', id: 'cat-color', value: (existing && existing.data && existing.data.color) || (existing ? categoryColor(list, existing.name) : '#4e79a7') });
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite' });
  const save = h('button', { type: 'submit', class: 'btn primary', id: 'cat-save' }, existing ? 'Save' : 'Add category');
  const el = h('form', {
    class: 'card panel cat-form',
    id: 'cat-form',
    'aria-label': existing ? `Edit ${fmt.category(existing.name)}` : 'New category',
    onsubmit: async (e) => {
      e.preventDefault();
      const name = nameInput.value.trim();
      if (!name) return;
      if (!canWrite(name)) {
        replace(status, h('span', { class: 'error-text' }, 'A name cannot end with a backslash: a query cannot contain it.'));
        return;
      }
      const parent = parentSelect.value ? JSON.parse(parentSelect.value) : [];
      const names = [...parent, name];
      if (list.some((c) => c !== existing && key(c.name) === key(names))) {
        replace(status, h('span', { class: 'error-text' }, `“${fmt.category(names)}” exists already.`));
        return;
      }
      const regex = regexInput.value;
      if (regex !== '') {
        save.disabled = true;
        replace(status, 'Checking the rule with the server…');
        const problem = await regexError(regex, ignoreCase.checked);
        save.disabled = false;
        if (problem) {
          replace(status, h('span', { class: 'error-text', id: 'cat-regex-error' }, `The server refuses this rule: ${problem}`));
          regexInput.focus();
          return;
        }
      }
      const rule = regex === '' ? { type: 'none' } : { ...(existing && existing.rule), type: 'regex', regex, ignore_case: ignoreCase.checked };
      if (regex === '') delete rule.regex;
      const data = { ...((existing && existing.data) || {}), color: color.value };
      if (existing) {
        const old = existing.name;
        // A renamed or moved category takes its subcategories with it, as in aw-webui.
        for (const c of list) if (c !== existing && under(c.name, old)) c.name = [...names, ...c.name.slice(old.length)];
        Object.assign(existing, { name: names, rule, data });
      } else {
        const id = Math.max(0, ...list.map((c) => (Number.isInteger(c.id) ? c.id : 0))) + 1;
        list.push({ id, name: names, rule, data });
      }
      await onDone(true);
    },
  },
  h('h2', {}, existing ? `Edit “${fmt.category(existing.name)}”` : 'New category'),
  h('div', { class: 'form-grid' },
    h('label', { for: 'cat-name' }, 'Name'), nameInput,
    h('label', { for: 'cat-parent' }, 'Parent'), parentSelect,
    h('label', { for: 'cat-regex' }, 'Rule (regex)'), regexInput,
    h('label', { for: 'cat-ignore-case' }, 'Ignore case'), ignoreCase,
    h('label', { for: 'cat-color' }, 'Colour'), color),
  status,
  h('div', { class: 'form-actions' }, save, h('button', { type: 'button', class: 'btn', onclick: () => onDone(false) }, 'Cancel')));
  return el;
}

export async function render(root, ctx) {
  const list = current(ctx.settings);
  const usesDefaults = !ctx.settings.classes;
  let editing = null;
  const persist = async () => {
    await api.request('POST', 'settings/classes', list);
    ctx.settings.classes = JSON.parse(JSON.stringify(list));
  };
  const draw = (message) => {
    const rows = sorted(list).map((c) => h('li', { class: 'cat-row', style: { paddingLeft: `${(c.name.length - 1) * 20 + 8}px` }, 'data-name': fmt.category(c.name) },
      h('span', { class: 'swatch', style: { background: categoryColor(list, c.name) } }),
      h('span', { class: 'cat-name' }, c.name[c.name.length - 1]),
      h('code', { class: 'cat-rule' }, ruleText(c)),
      h('span', { class: 'cat-actions' },
        h('button', { type: 'button', class: 'btn small', 'aria-label': `Edit ${fmt.category(c.name)}`, onclick: () => { editing = c; draw(); } }, 'Edit'),
        h('button', {
          type: 'button',
          class: 'btn small danger-outline',
          'aria-label': `Delete ${fmt.category(c.name)}`,
          onclick: async () => {
            const ok = await confirmDialog({ title: 'Delete category', text: `Delete “${fmt.category(c.name)}”? Its subcategories stay.`, confirmLabel: 'Delete', danger: true });
            if (!ok) return;
            list.splice(list.indexOf(c), 1);
            try {
              await persist();
              draw(`Deleted “${fmt.category(c.name)}”.`);
            } catch (err) {
              draw();
              root.prepend(errorBox(err, 'Could not save the categories'));
            }
          },
        }, 'Delete'))));
    const done = async (saved) => {
      const was = editing;
      editing = null;
      if (!saved) {
        draw();
        return;
      }
      try {
        await persist();
        draw(was === 'new' ? 'Category added.' : 'Saved.');
      } catch (err) {
        draw();
        root.prepend(errorBox(err, 'Could not save the categories'));
      }
    };
    replace(root,
      h('div', { class: 'page-head' },
        h('h1', { class: 'page-title' }, 'Categories'),
        h('p', { class: 'page-sub' }, 'Rules match window titles, apps and URLs; the deepest matching category wins. Shared with aw-webui (setting “classes”).')),
      usesDefaults && !message ? h('div', { class: 'alert info', role: 'status' }, 'These are aw-webui’s default categories; saving a change stores them as your own.') : null,
      message ? h('div', { class: 'alert info', role: 'status', id: 'cat-message' }, message) : null,
      editing ? form(list, editing === 'new' ? null : editing, done) : h('button', { type: 'button', class: 'btn primary', id: 'cat-add', onclick: () => { editing = 'new'; draw(); } }, 'Add category'),
      h('section', { class: 'card panel' }, h('h2', {}, `${list.length} categories`), h('ul', { class: 'cat-list', 'aria-label': 'Categories' }, rows)));
    const first = root.querySelector('#cat-name');
    if (first) first.focus();
  };
  draw();
}
