// The dashboard shell: loads what every page needs (server info, buckets, settings), keeps
// the chosen day and host in the URL hash (`#/activity?date=2024-03-04&host=laptop`) and
// renders the view of the current route into <main>.

import * as api from './api.js';
import { h, replace, errorBox, loading } from './dom.js';
import * as fmt from './format.js';
import { ALL_HOSTS, DEFAULT_CLASSES, hostnames, defaultHost, windowHosts } from './queries.js';
import * as activity from './views/activity.js';
import * as timeline from './views/timeline.js';
import * as buckets from './views/buckets.js';
import * as queryView from './views/query.js';

const VIEWS = { activity, timeline, buckets, query: queryView };
const DAY_VIEWS = new Set(['activity', 'timeline', 'query']);

const state = {
  info: null,
  buckets: {},
  settings: {},
  renderId: 0,
};

const $ = (id) => document.getElementById(id);

/** The current route: view name and its parameters. */
function route() {
  const hash = window.location.hash.replace(/^#\/?/, '');
  const [path, qs] = hash.split('?');
  const view = VIEWS[path] ? path : 'activity';
  return { view, params: new URLSearchParams(qs || '') };
}

function startOfDay() {
  const s = state.settings.startOfDay;
  return typeof s === 'string' && /^\d{1,2}:\d{2}$/.test(s) ? s : '00:00';
}

function classes() {
  let c = state.settings.classes;
  if (typeof c === 'string') {
    try {
      c = JSON.parse(c);
    } catch {
      c = null;
    }
  }
  return Array.isArray(c) && c.length ? c : DEFAULT_CLASSES;
}

/** Goes to `view` (default: the current one) with `params` merged into the current ones. */
export function navigate(params = {}, view = route().view) {
  const merged = new URLSearchParams(route().params);
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') merged.delete(k);
    else merged.set(k, v);
  }
  const qs = merged.toString();
  window.location.hash = `#/${view}${qs ? `?${qs}` : ''}`;
}

async function refreshBuckets() {
  state.buckets = (await api.getBuckets()) || {};
  return state.buckets;
}

function renderNav(view) {
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function renderToolbar(view, host, date) {
  const bar = $('toolbar');
  bar.hidden = !DAY_VIEWS.has(view);
  const hosts = hostnames(state.buckets, state.info && state.info.hostname);
  if (host !== ALL_HOSTS && !hosts.includes(host)) hosts.push(host);
  const options = hosts.map((x) => h('option', { value: x, selected: x === host }, x));
  // Activity can add up the day of every device (e.g. synced from other devices).
  if (view === 'activity' && windowHosts(state.buckets).length > 1) {
    options.push(h('option', { value: ALL_HOSTS, selected: host === ALL_HOSTS }, 'All devices'));
  }
  const select = $('host');
  replace(select, options);
  $('date').value = date;
  $('date').max = fmt.today(startOfDay());
  $('next-day').disabled = date >= fmt.today(startOfDay());
  $('day-label').textContent = fmt.longDate(date);
}

async function render() {
  const { view, params } = route();
  const id = ++state.renderId;
  const main = $('view');
  main.dataset.state = 'loading';
  main.setAttribute('aria-busy', 'true');
  $('tooltip').hidden = true;
  renderNav(view);

  try {
    await refreshBuckets();
  } catch (err) {
    if (id !== state.renderId) return;
    replace(main, errorBox(err, 'Cannot load the buckets'));
    main.dataset.state = 'ready';
    main.removeAttribute('aria-busy');
    return;
  }
  if (id !== state.renderId) return;

  const sod = startOfDay();
  const date = fmt.parseDate(params.get('date')) ? params.get('date') : fmt.today(sod);
  let host = params.get('host') || defaultHost(state.buckets, state.info.hostname);
  // "All devices" is Activity's only; the other day views show the default host.
  if (host === ALL_HOSTS && view !== 'activity') host = defaultHost(state.buckets, state.info.hostname);
  renderToolbar(view, host, date);

  const ctx = {
    info: state.info,
    buckets: state.buckets,
    settings: state.settings,
    classes: classes(),
    host,
    date,
    range: fmt.dayRange(date, sod),
    params,
    navigate,
    refreshBuckets: async () => {
      const b = await refreshBuckets();
      ctx.buckets = b;
      return b;
    },
    isCurrent: () => id === state.renderId,
  };
  const started = performance.now();
  const hostLabel = host === ALL_HOSTS ? 'All devices' : host;
  document.title = `${VIEWS[view].title}${DAY_VIEWS.has(view) ? ` · ${hostLabel} · ${date}` : ''} — ActivityWatch`;
  replace(main, loading());
  try {
    await VIEWS[view].render(main, ctx);
    if (!ctx.isCurrent()) return;
    main.dataset.renderMs = String(Math.round(performance.now() - started));
  } catch (err) {
    if (!ctx.isCurrent()) return;
    replace(main, errorBox(err, `Could not load ${VIEWS[view].title}`));
  }
  main.dataset.state = 'ready';
  main.removeAttribute('aria-busy');
}

function wireToolbar() {
  $('host').addEventListener('change', (e) => navigate({ host: e.target.value }));
  $('date').addEventListener('change', (e) => {
    if (fmt.parseDate(e.target.value)) navigate({ date: e.target.value });
  });
  const shift = (days) => {
    const current = route().params.get('date') || fmt.today(startOfDay());
    navigate({ date: fmt.addDays(current, days) });
  };
  $('prev-day').addEventListener('click', () => shift(-1));
  $('next-day').addEventListener('click', () => shift(1));
  $('today').addEventListener('click', () => navigate({ date: fmt.today(startOfDay()) }));
  for (const a of document.querySelectorAll('#nav a')) {
    a.addEventListener('click', (e) => {
      e.preventDefault();
      const { params } = route();
      const keep = {};
      for (const k of ['date', 'host']) if (params.get(k)) keep[k] = params.get(k);
      const qs = new URLSearchParams(keep).toString();
      window.location.hash = `#/${a.dataset.view}${qs ? `?${qs}` : ''}`;
    });
  }
}

// The theme setting wins; otherwise the system's preference, followed as it changes. The
// stylesheet has one dark palette, keyed on this attribute.
const systemDark = window.matchMedia('(prefers-color-scheme: dark)');

function applyTheme() {
  const chosen = state.settings.theme;
  const dark = chosen === 'dark' || (chosen !== 'light' && systemDark.matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}
systemDark.addEventListener('change', applyTheme);
applyTheme();

async function start() {
  wireToolbar();
  const main = $('view');
  replace(main, loading('Connecting to the server…'));
  try {
    const [info, , settings] = await Promise.all([api.getInfo(), refreshBuckets(), api.request('GET', 'settings')]);
    state.info = info;
    state.settings = settings || {};
  } catch (err) {
    replace(main, errorBox(err, 'Cannot load the dashboard'));
    main.dataset.state = 'ready';
    return;
  }
  applyTheme();
  $('server').textContent = `${state.info.hostname} · aw-server ${state.info.version}${state.info.testing ? ' · testing' : ''}`;
  window.addEventListener('hashchange', render);
  await render();
}

start();
