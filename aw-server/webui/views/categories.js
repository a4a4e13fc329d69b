// Categories: the user's categorisation rules, kept where aw-webui keeps them (the `classes`
// setting), so a change made here shows in aw-webui and the reverse. Every field aw-webui
// writes (`id`, `data.color`, `score`, …) is kept as it is. A rule's regex is checked by the
// server's own regex engine (the query language's), since that is the engine that runs it.

import * as api from '../api.js';
import { h, replace, errorBox, confirmDialog } from '../dom.js';
import * as fmt from '../format.js';
import { DEFAULT_CLASSES, canWrite, classesSetting, literal } from '../queries.js';
import { categoryColor } from '../colors.js';

export const title = 'Categories';

/** The categories of the setting (aw-webui's defaults when it is unset), as a fresh copy. */
function current(settings) {
  const list = classesSetting(settings) || DEFAULT_CLASSES.map((x, i) => ({ id: i + 1, ...x }));
  return clone(list.filter((x) => x && Array.isArray(x.name)));
}

const clone = (v) => JSON.parse(JSON.stringify(v));
const key = (names) => JSON.stringify(names);

/** Whether `names` starts with `prefix`. */
const under = (names, prefix) => prefix.length <= names.length && prefix.every((n, i) => names[i] === n);

/** `#abc` as `#aabbcc` (what a colour input takes); null for anything that is not hex. */
function hex6(color) {
  if (typeof color !== 'string') return null;
  if (/^#[0-9a-f]{6}$/i.test(color)) return color.toLowerCase();
  const m = /^#([0-9a-f])([0-9a-f])([0-9a-f])$/i.exec(color);
  return m ? `#${m[1]}${m[1]}${m[2]}${m[2]}${m[3]}${m[3]}`.toLowerCase() : null;
}

/** Thrown by `regexError` when the server could not be asked (not a verdict on the rule). */
class CheckFailed extends Error {}

/**
 * The server's verdict on a regex: null when it compiles, else the engine's message. The
 * check is a query that compiles the rule (`categorize` compiles every rule before reading
 * any event), over an empty list. Throws `CheckFailed` when the server could not answer.
 */
export async function regexError(regex, ignoreCase) {
  if (!canWrite(regex)) return 'A rule cannot end with a backslash: a query cannot contain it.';
  const rule = { type: 'regex', regex };
  if (ignoreCase) rule.ignore_case = true;
  try {
    await api.query([[new Date(0), new Date(1000)]], [`RETURN = categorize([], ${literal([[['check'], rule]])});`]);
    return null;
  } catch (e) {
    // The query engine's errors are 500s with its message; anything else is not about the rule.
    if (e.status === 500 && /Error/.test(e.message)) return e.message;
    throw new CheckFailed(e.message);
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

/**
 * The form for a new category (`index` null) or the one at `index` of `list`. `save(next)`
 * stores the whole new list; the form changes a copy, so a failed save changes nothing.
 */
function form(list, index, save, cancel) {
  const existing = index === null ? null : list[index];
  const parents = sorted(list).filter((c) => !existing || !under(c.name, existing.name));
  const nameInput = h('input', { type: 'text', id: 'cat-name', required: true, value: existing ? existing.name[existing.name.length - 1] : '', autocomplete: 'off' });
  const parentSelect = h('select', { id: 'cat-parent' },
    h('option', { value: '' }, '(top level)'),
    parents.map((c) => h('option', { value: key(c.name), selected: existing && key(c.name) === key(existing.name.slice(0, -1)) }, fmt.category(c.name))));
  const regexInput = h('input', { type: 'text', id: 'cat-regex', value: existing && existing.rule && existing.rule.type === 'regex' ? existing.rule.regex : '', autocomplete: 'off', spellcheck: 'false' });
  const ignoreCase = h('input', { type: 'checkbox', id: 'cat-ignore-case', checked: Boolean(existing && existing.rule && existing.rule.ignore_case) });
  // A category without a colour of its own takes its parent's: kept so unless changed here.
  const own = existing && existing.data && existing.data.color;
  const inherit = h('input', { type: 'checkbox', id: 'cat-inherit', checked: !own });
  const color = h('input', { type: 'color', id: 'cat-color', value: hex6(own) || hex6(categoryColor(list, existing ? existing.name : ['new'])) || '#4e79a7', disabled: !own });
  let colorChanged = false;
  color.addEventListener('input', () => { colorChanged = true; });
  inherit.addEventListener('change', () => { color.disabled = inherit.checked; });
  const status = h('div', { class: 'form-status', role: 'status', 'aria-live': 'polite' });
  const saveButton = h('button', { type: 'submit', class: 'btn primary', id: 'cat-save' }, existing ? 'Save' : 'Add category');
  const refuse = (text, id) => replace(status, h('span', { class: 'error-text', id }, text));
  return h('form', {
    class: 'card panel cat-form',
    id: 'cat-form',
    'aria-label': existing ? `Edit ${fmt.category(existing.name)}` : 'New category',
    onsubmit: async (e) => {
      e.preventDefault();
      const name = nameInput.value.trim();
      if (!name) return;
      if (!canWrite(name)) {
        refuse('A name cannot end with a backslash: a query cannot contain it.');
        return;
      }
      const parent = parentSelect.value ? JSON.parse(parentSelect.value) : [];
      const names = [...parent, name];
      if (list.some((c, i) => i !== index && key(c.name) === key(names))) {
        refuse(`“${fmt.category(names)}” exists already.`);
        return;
      }
      const regex = regexInput.value;
      saveButton.disabled = true;
      try {
        if (regex !== '') {
          replace(status, 'Checking the rule with the server…');
          const problem = await regexError(regex, ignoreCase.checked);
          if (problem) {
            refuse(`The server refuses this rule: ${problem}`, 'cat-regex-error');
            regexInput.focus();
            return;
          }
        }
        const next = clone(list);
        const rule = regex === ''
          ? { type: 'none' }
          : { ...(existing && existing.rule), type: 'regex', regex, ignore_case: ignoreCase.checked };
        if (regex === '') delete rule.regex;
        const data = { ...((existing && existing.data) || {}) };
        if (inherit.checked) delete data.color;
        else if (colorChanged || !own) data.color = color.value;
        if (existing) {
          const old = existing.name;
          // A renamed or moved category takes its subcategories with it, as in aw-webui.
          next.forEach((c, i) => {
            if (i !== index && under(c.name, old)) c.name = [...names, ...c.name.slice(old.length)];
          });
          Object.assign(next[index], { name: names, rule });
          if (Object.keys(data).length) next[index].data = data;
          else delete next[index].data;
        } else {
          const id = Math.max(0, ...list.map((c) => (Number.isInteger(c.id) ? c.id : 0))) + 1;
          next.push({ id, name: names, rule, ...(Object.keys(data).length ? { data } : {}) });
        }
        await save(next, existing ? `Saved “${fmt.category(names)}”.` : `Added “${fmt.category(names)}”.`);
      } catch (err) {
        replace(status, errorBox(err, err instanceof CheckFailed ? 'Could not check the rule' : 'Could not save the categories'));
      } finally {
        saveButton.disabled = false;
      }
    },
  },
  h('h2', {}, existing ? `Edit “${fmt.category(existing.name)}”` : 'New category'),
  h('div', { class: 'form-grid' },
    h('label', { for: 'cat-name' }, 'Name'), nameInput,
    h('label', { for: 'cat-parent' }, 'Parent'), parentSelect,
    h('label', { for: 'cat-regex' }, 'Rule (regex)'), regexInput,
    h('label', { for: 'cat-ignore-case' }, 'Ignore case'), ignoreCase,
    h('label', { for: 'cat-inherit' }, 'Parent’s colour'), inherit,
    h('label', { for: 'cat-color' }, 'Colour'), color),
  status,
  h('div', { class: 'form-actions' }, saveButton, h('button', { type: 'button', class: 'btn', id: 'cat-cancel', onclick: cancel }, 'Cancel')));
}

export async function render(root, ctx) {
  const list = current(ctx.settings);
  const usesDefaults = !classesSetting(ctx.settings);
  // What the form edits: null (no form), 'new', or the index in `list` of the category.
  let editing = null;
  /** Stores `next` as the setting; on success it becomes the list shown. */
  const save = async (next, message) => {
    await api.request('POST', 'settings/classes', next);
    ctx.settings.classes = clone(next);
    list.splice(0, list.length, ...next);
    editing = null;
    if (ctx.isCurrent()) draw(message);
  };
  const draw = (message) => {
    const rows = sorted(list).map((c) => h('li', { class: 'cat-row', style: { paddingLeft: `${(c.name.length - 1) * 20 + 8}px` }, 'data-name': fmt.category(c.name) },
      h('span', { class: 'swatch', style: { backgroundColor: categoryColor(list, c.name) } }),
      h('span', { class: 'cat-name' }, c.name[c.name.length - 1]),
      h('code', { class: 'cat-rule' }, ruleText(c)),
      h('span', { class: 'cat-actions' },
        h('button', { type: 'button', class: 'btn small', disabled: editing !== null, 'aria-label': `Edit ${fmt.category(c.name)}`, onclick: () => { editing = list.indexOf(c); draw(); } }, 'Edit'),
        h('button', {
          type: 'button',
          class: 'btn small danger-outline',
          disabled: editing !== null,
          'aria-label': `Delete ${fmt.category(c.name)}`,
          onclick: async () => {
            const ok = await confirmDialog({ title: 'Delete category', text: `Delete “${fmt.category(c.name)}”? Its subcategories stay.`, confirmLabel: 'Delete', danger: true });
            if (!ok || !ctx.isCurrent()) return;
            const next = clone(list);
            next.splice(list.indexOf(c), 1);
            try {
              await save(next, `Deleted “${fmt.category(c.name)}”.`);
            } catch (err) {
              if (!ctx.isCurrent()) return;
              draw();
              root.prepend(errorBox(err, 'Could not save the categories'));
            }
          },
        }, 'Delete'))));
    const cancel = () => {
      editing = null;
      draw();
    };
    replace(root,
      h('div', { class: 'page-head' },
        h('h1', { class: 'page-title' }, 'Categories'),
        h('p', { class: 'page-sub' }, 'Rules match window titles, apps and URLs; the deepest matching category wins. Shared with aw-webui (setting “classes”).')),
      usesDefaults && !message ? h('div', { class: 'alert info', role: 'status' }, 'These are aw-webui’s default categories; saving a change stores them as your own.') : null,
      message ? h('div', { class: 'alert info', role: 'status', id: 'cat-message', tabindex: '-1' }, message) : null,
      editing !== null
        ? form(list, editing === 'new' ? null : editing, save, cancel)
        : h('button', { type: 'button', class: 'btn primary', id: 'cat-add', onclick: () => { editing = 'new'; draw(); } }, 'Add category'),
      h('section', { class: 'card panel' }, h('h2', {}, `${list.length} categories`), h('ul', { class: 'cat-list', 'aria-label': 'Categories' }, rows)));
    // After the user's own action, keep the keyboard where they are: in the form, on the
    // message, or on the Add button (the first drawing leaves the focus alone).
    const focus = root.querySelector('#cat-name') || root.querySelector('#cat-message') || root.querySelector('#cat-add');
    if (drawn && focus) focus.focus();
    drawn = true;
  };
  let drawn = false;
  draw();
}
