// Tiny DOM helpers. Text always goes in as text nodes: window titles and URLs are data, never
// markup.

/**
 * Creates an element: `h('div', {class: 'x', onclick: f}, 'text', child, [more])`.
 * Attributes starting with `on` become listeners; `null`/`false` attributes and children are
 * skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Creates an SVG element: `svg('rect', {x: 1, width: 2}, svg('title', {}, 'text'))`. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** An error panel showing `err.message` (the server's message for API errors). */
export function errorBox(err, context) {
  const status = err && err.status ? ` (HTTP ${err.status})` : '';
  return h('div', { class: 'alert error', role: 'alert' },
    h('strong', {}, context ? `${context}${status}: ` : `Error${status}: `),
    h('span', { class: 'alert-message' }, err && err.message ? err.message : String(err)));
}

/** A quiet informational panel. */
export function notice(text) {
  return h('div', { class: 'alert info', role: 'status' }, text);
}

/** A loading placeholder. */
export function loading(text = 'Loading…') {
  return h('div', { class: 'loading', role: 'status', 'aria-live': 'polite' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

/** Starts a browser download of `blob` as `filename`. */
export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: filename, style: { display: 'none' } });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/**
 * A modal confirmation; resolves true when the user confirms. `danger` styles the confirm
 * button as destructive.
 */
export function confirmDialog({ title, text, confirmLabel = 'OK', danger = false }) {
  return new Promise((resolve) => {
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': 'dialog-title' },
      h('form', { method: 'dialog' },
        h('h2', { id: 'dialog-title' }, title),
        h('p', {}, text),
        h('div', { class: 'dialog-actions' },
          h('button', { value: 'cancel', class: 'btn' }, 'Cancel'),
          h('button', { value: 'confirm', class: danger ? 'btn danger' : 'btn primary' }, confirmLabel))));
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'confirm');
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/**
 * A modal form: `fields` are `[{name, label, value, options?}]` (a text input, or a select
 * of `options` `[[value, label]]`); resolves with `{name: value}` on confirm, `null` on
 * cancel. The confirm button stays off until every field has a value.
 */
export function formDialog({ title, text, fields, confirmLabel = 'OK', danger = false }) {
  return new Promise((resolve) => {
    const inputs = fields.map((f) => (f.options
      ? h('select', { id: `dialog-${f.name}`, name: f.name }, f.options.map(([v, label]) => h('option', { value: v, selected: v === f.value }, label)))
      : h('input', { id: `dialog-${f.name}`, name: f.name, type: 'text', value: f.value || '', required: true, autocomplete: 'off' })));
    const confirm = h('button', { value: 'confirm', class: danger ? 'btn danger' : 'btn primary', id: 'dialog-confirm' }, confirmLabel);
    const check = () => { confirm.disabled = inputs.some((i) => !i.value.trim()); };
    inputs.forEach((i) => i.addEventListener('input', check));
    check();
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': 'dialog-title' },
      h('form', { method: 'dialog' },
        h('h2', { id: 'dialog-title' }, title),
        text ? h('p', {}, text) : null,
        h('div', { class: 'form-grid' }, fields.flatMap((f, i) => [h('label', { for: `dialog-${f.name}` }, f.label), inputs[i]])),
        h('div', { class: 'dialog-actions' },
          h('button', { value: 'cancel', class: 'btn', formnovalidate: true }, 'Cancel'),
          confirm)));
    dialog.addEventListener('close', () => {
      const ok = dialog.returnValue === 'confirm';
      resolve(ok ? Object.fromEntries(fields.map((f, i) => [f.name, inputs[i].value.trim()])) : null);
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
