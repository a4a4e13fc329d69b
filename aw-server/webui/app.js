// The dashboard shell: loads what every page needs (server info, buckets, settings), keeps
// the chosen period, day and host in the URL hash (`#/activity?period=week&date=2024-03-04&host=laptop`,
// a custom range as `period=custom&start=…&end=…`), so the back button and bookmarks work,
// and renders the view of the current route into <main>.

import * as api from './api.js';
import { h, replace, errorBox, loading } from './dom.js';
import * as fmt from './format.js';
import { ALL_HOSTS, DEFAULT_CLASSES, classesSetting, hostnames, defaultHost, windowHosts } from './queries.js';
import * as period from './period.js';
import * as activity from './views/activity.js';
import * as trends from './views/trends.js';
import * as timeline from './views/timeline.js';
import * as buckets from './views/buckets.js';
import * as queryView from './views/query.js';
import * as categories from './views/categories.js';
import * as settingsView from './views/settings.js';

const VIEWS = { activity, trends, timeline, buckets, query: queryView, categories, settings: settingsView };
/** Views that show one host: the toolbar's host picker. */
const HOST_VIEWS = new Set(['activity', 'trends', 'timeline', 'query']);
/** Views that show a day: the toolbar's date controls (Activity also any period). */
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
  return period.startOfDay(state.settings);
}

/** The period a route asks for (Activity's; other views show one day). */
function periodOfRoute(view, params, date) {
  const kind = view === 'activity' && period.KINDS.includes(params.get('period')) ? params.get('period') : 'day';
  const first = fmt.parseDate(params.get('start')) ? params.get('start') : date;
  const last = fmt.parseDate(params.get('end')) ? params.get('end') : date;
  return period.periodOf(kind, date, { weekStart: period.startOfWeek(state.settings), first, last });
}

function classes() {
  return classesSetting(state.settings) || DEFAULT_CLASSES;
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

function renderToolbar(view, host, date, p) {
  const bar = $('toolbar');
  bar.hidden = !HOST_VIEWS.has(view);
  const dayControls = DAY_VIEWS.has(view);
  $('period-kinds').hidden = view !== 'activity';
  for (const b of document.querySelectorAll('#period-kinds [data-period]')) {
    b.setAttribute('aria-pressed', String(b.dataset.period === p.kind));
  }
  const custom = p.kind === 'custom';
  $('custom-range').hidden = !custom || !dayControls;
  bar.querySelector('.day-nav').hidden = !dayControls;
  const unit = { day: 'day', week: 'week', month: 'month', year: 'year', custom: 'range' }[p.kind];
  for (const [id, word] of [['prev-day', 'Previous'], ['next-day', 'Next']]) {
    $(id).setAttribute('aria-label', `${word} ${unit}`);
    $(id).title = `${word} ${unit}`;
  }
  $('range-start').value = p.first;
  $('range-end').value = p.last;
  $('date').hidden = custom;
  const hosts = hostnames(state.buckets, state.info && state.info.hostname);
  if (host !== ALL_HOSTS && !hosts.includes(host)) hosts.push(host);
  const options = hosts.map((x) => h('option', { value: x, selected: x === host }, x));
  // Activity can add up the day of every device (e.g. synced from other devices).
  if ((view === 'activity' || view === 'trends') && windowHosts(state.buckets).length > 1) {
    options.push(h('option', { value: ALL_HOSTS, selected: host === ALL_HOSTS }, 'All devices'));
  }
  const select = $('host');
  replace(select, options);
  $('date').value = date;
  $('date').max = fmt.today(startOfDay());
  $('next-day').disabled = period.shift(p, 1).first > fmt.today(startOfDay());
  $('day-label').textContent = view === 'trends' ? '' : period.label(p);
}

async function render() {
  const { view, params } = route();
  const id = ++state.renderId;
  const main = $('view');
  main.dataset.state = 'loading';
  delete main.dataset.complete;
  main.setAttribute('aria-busy', 'true');
  $('tooltip').hidden = true;
  renderNav(view);

  try {
    // The settings too: a change made in aw-webui (categories, the first weekday) shows at
    // the next page, without a reload.
    const [, settings] = await Promise.all([refreshBuckets(), api.request('GET', 'settings')]);
    state.settings = settings || {};
    applyTheme();
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
  // "All devices" is Activity's and Trends' only; the other views show the default host.
  if (host === ALL_HOSTS && view !== 'activity' && view !== 'trends') host = defaultHost(state.buckets, state.info.hostname);
  const p = periodOfRoute(view, params, date);

  const ctx = {
    info: state.info,
    buckets: state.buckets,
    settings: state.settings,
    classes: classes(),
    host,
    date,
    period: p,
    startOfDay: sod,
    range: period.range(p, sod),
    params,
    navigate,
    refreshBuckets: async () => {
      const b = await refreshBuckets();
      ctx.buckets = b;
      return b;
    },
    isCurrent: () => id === state.renderId,
    /** Renders the current view again (after the view changed what it shows). */
    reload: () => render(),
    /** Applies changed settings that show at once (the theme). */
    applySettings: () => applyTheme(),
  };
  const started = performance.now();
  const hostLabel = host === ALL_HOSTS ? 'All devices' : host;
  const when = p.kind === 'day' ? date : period.label(p);
  document.title = `${VIEWS[view].title}${DAY_VIEWS.has(view) ? ` · ${hostLabel} · ${when}` : ''} — ActivityWatch`;
  replace(main, loading());
  try {
    renderToolbar(view, host, date, p);
    await VIEWS[view].render(main, ctx);
    if (!ctx.isCurrent()) return;
    main.dataset.renderMs = String(Math.round(performance.now() - started));
  } catch (err) {
    if (!ctx.isCurrent()) return;
    replace(main, errorBox(err, `Could not load ${VIEWS[view].title}`));
  }
  main.dataset.state = 'ready';
  main.removeAttribute('aria-busy');
  // Once the page is shown: the periods it may show next, kept ready by the server.
  activity.prepareDays(ctx).catch(() => {});
  // The control the user pressed may be gone (a chart's day) or disabled (Next, at today):
  // the keyboard goes on from the page, not from the document's start.
  if (!document.activeElement || document.activeElement === document.body) main.focus({ preventScroll: true });
}

function wireToolbar() {
  $('host').addEventListener('change', (e) => navigate({ host: e.target.value }));
  $('date').addEventListener('change', (e) => {
    if (fmt.parseDate(e.target.value)) navigate({ date: e.target.value });
  });
  const current = () => {
    const { view, params } = route();
    const date = fmt.parseDate(params.get('date')) ? params.get('date') : fmt.today(startOfDay());
    return periodOfRoute(view, params, date);
  };
  const go = (p) => navigate(p.kind === 'custom' ? { start: p.first, end: p.last, date: p.last } : { date: p.first });
  $('prev-day').addEventListener('click', () => go(period.shift(current(), -1)));
  $('next-day').addEventListener('click', () => go(period.shift(current(), 1)));
  $('today').addEventListener('click', () => {
    const p = current();
    const day = fmt.today(startOfDay());
    if (p.kind !== 'custom') navigate({ date: day });
    else navigate({ start: fmt.addDays(day, -period.daysBetween(p.first, p.last)), end: day, date: day });
  });
  for (const b of document.querySelectorAll('#period-kinds [data-period]')) {
    b.addEventListener('click', () => {
      const p = current();
      const kind = b.dataset.period;
      // A custom range starts as the period shown; the other kinds hold its last day.
      if (kind === 'custom') navigate({ period: kind, start: p.first, end: p.last, date: p.last });
      else navigate({ period: kind === 'day' ? null : kind, start: null, end: null, date: p.kind === 'day' ? p.first : (p.last > fmt.today(startOfDay()) ? fmt.today(startOfDay()) : p.last) });
    });
  }
  const setRange = () => {
    const [start, end] = [$('range-start').value, $('range-end').value];
    if (fmt.parseDate(start) && fmt.parseDate(end)) navigate({ start, end, date: end });
  };
  $('range-start').addEventListener('change', setRange);
  $('range-end').addEventListener('change', setRange);
  for (const a of document.querySelectorAll('#nav a')) {
    a.addEventListener('click', (e) => {
      e.preventDefault();
      const { params } = route();
      const keep = {};
      for (const k of ['date', 'host', 'period', 'start', 'end']) if (params.get(k)) keep[k] = params.get(k);
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
    // Buckets and settings are read by every page (`render`).
    state.info = await api.getInfo();
  } catch (err) {
    replace(main, errorBox(err, 'Cannot load the dashboard'));
    main.dataset.state = 'ready';
    return;
  }
  $('server').textContent = `${state.info.hostname} · aw-server ${state.info.version}${state.info.testing ? ' · testing' : ''}`;
  window.addEventListener('hashchange', render);
  await render();
}

start();
