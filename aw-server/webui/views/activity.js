// Activity: a day, week, month, year or custom range of one host or of all devices, computed
// by the server's query engine: a day with the web UI's canonical desktop query (window, AFK
// and browser buckets, categories); a longer period as the sum of its days, which the server
// adds up from each day's result (`POST /api/0/query/sum` with `periodQuery`) and keeps per
// day, so a write reaches one day's result, with each day's active time; and the days of the
// period before, added up the same way, to compare against.

import * as api from '../api.js';
import { h, replace, notice } from '../dom.js';
import * as fmt from '../format.js';
import * as period from '../period.js';
import { ALL_HOSTS, PERIOD_KEYS, dailyQuery, desktopQuery, hostBuckets, periodQuery, queryable, unwritableClasses, windowHosts } from '../queries.js';
import { combineHosts } from '../combine-hosts.js';
import { barList } from '../components/barlist.js';
import { dayChart } from '../components/daychart.js';
import { stackBar } from '../components/stackbar.js';
import { categoryColor, colorFor } from '../colors.js';
import { openInQuery } from './query.js';

export const title = 'Activity';

const end = (e) => new Date(e.timestamp).getTime() + e.duration * 1000;

/** Disjoint `[start, end]` ms intervals covering the events, sorted. */
function intervals(events) {
  const iv = events.map((e) => [new Date(e.timestamp).getTime(), end(e)]).filter(([s, t]) => t > s).sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const [s, t] of iv) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], t);
    else out.push([s, t]);
  }
  return out;
}

/** Seconds of `iv` inside each hour of the day. */
function perHour(iv, [dayStart, dayEnd]) {
  const hours = [];
  for (let t = new Date(dayStart); t < dayEnd; t = new Date(t.getFullYear(), t.getMonth(), t.getDate(), t.getHours() + 1)) {
    const next = Math.min(new Date(t.getFullYear(), t.getMonth(), t.getDate(), t.getHours() + 1).getTime(), dayEnd.getTime());
    let secs = 0;
    for (const [s, e] of iv) secs += Math.max(0, Math.min(e, next) - Math.max(s, t.getTime())) / 1000;
    hours.push({ start: t, seconds: secs, span: (next - t.getTime()) / 1000 });
  }
  return hours;
}

function card(label, value, detail, id, delta) {
  return h('div', { class: 'card stat', id },
    h('div', { class: 'stat-label' }, label),
    h('div', { class: 'stat-value' }, value),
    detail ? h('div', { class: 'stat-detail' }, detail) : null,
    delta ? h('div', { class: 'stat-change' }, delta) : null);
}

/** The category rows of a result's `cat_events` (or a day query's `cats`). */
function categoryItems(events, classes) {
  return events.map((e) => {
    const names = Array.isArray(e.data.$category) ? e.data.$category : [String(e.data.$category)];
    return { label: fmt.category(names), seconds: e.duration, color: categoryColor(classes, names) };
  });
}

/** Categories as one bar of shares and a list, each row with its change against the period before. */
function categoryBreakdown(cats, total, compare) {
  const before = new Map((compare.previous.cats || []).map((e) => [fmt.category(e.data.$category), e.duration]));
  const rows = cats.map((c) => ({ ...c, detail: change(c.seconds, before.get(c.label) || 0, compare.name) }));
  return h('div', {}, stackBar(cats, { name: 'Category shares' }), barList(rows, { name: 'Categories', total }));
}

function panel(heading, body, id) {
  return h('section', { class: 'card panel', id, 'aria-labelledby': `${id}-h` },
    h('h2', { id: `${id}-h` }, heading), body);
}

function hourChart(hours) {
  return h('div', { class: 'hours', role: 'img', 'aria-label': `Active time per hour: ${hours.filter((x) => x.seconds > 0).map((x) => `${fmt.clock(x.start)} ${fmt.duration(x.seconds)}`).join(', ') || 'none'}` },
    hours.map((x) => h('div', { class: 'hour', title: `${fmt.clock(x.start)}–${fmt.clock(new Date(x.start.getTime() + x.span * 1000))}: ${fmt.duration(x.seconds)} active` },
      h('div', { class: 'hour-bar' }, h('div', { class: 'hour-fill', style: { height: `${Math.min(100, (x.seconds / x.span) * 100)}%` } })),
      h('div', { class: 'hour-label' }, x.start.getHours() % 3 === 0 ? String(x.start.getHours()) : ''))));
}

/**
 * Notices for what data left out of the queries: bucket ids and categories that end with a
 * backslash cannot be written into a query2 string, so they are not read.
 */
function leftOutNotices(leftOut, classes) {
  const notes = leftOut.map((id) => `Bucket “${id}” is left out: its id ends with a backslash, which a query cannot contain.`);
  for (const c of unwritableClasses(classes)) {
    notes.push(`Category “${c.name.join(' > ')}” is left out: its name or rule ends with a backslash, which a query cannot contain.`);
  }
  return notes.map((text) => h('div', { class: 'alert info left-out', role: 'status' }, text));
}

/** The hosts a view of `ctx.host` reads (every host with a window bucket for All devices), and what was left out. */
export function activityHosts(ctx) {
  const leftOut = [];
  const names = ctx.host === ALL_HOSTS ? windowHosts(ctx.buckets) : [ctx.host];
  // A web bucket of the legacy host `unknown` goes with every host; across devices it is
  // read once (with the first), or its time would count once per device.
  const taken = new Set();
  const hosts = names
    .map((host) => {
      const q = queryable(hostBuckets(ctx.buckets, host));
      leftOut.push(...q.leftOut);
      q.ids.browsers = q.ids.browsers.filter((b) => !taken.has(b.id));
      q.ids.browsers.forEach((b) => taken.add(b.id));
      return { host, ids: q.ids };
    })
    .filter((x) => x.ids.window);
  return { hosts, leftOut };
}

/** How many entries each top list of a view shows (`desktopQuery`'s default limit). */
const SHOWN = 100;

/** What a period without data answers (`periodQuery`'s shape). */
const EMPTY = { active: 0, window: { app_events: [], title_events: [], cat_events: [], duration: 0 }, browser: { domains: [], duration: 0 } };

/** Whether the server adds periods up (`POST /api/0/query/sum`: ours; not the reference). */
let serverSums = true;

/**
 * The sum of `periodQuery` over `days`, added up by the server from each day's result,
 * which it keeps (so today's writes leave every other day's result kept, and the first look
 * after a restart is answered from kept days), and the values at the `each` paths of every
 * day: `{sum, each}`. A server without `/query/sum` (the reference, when it serves this
 * dashboard) is asked for the whole range and for each day's totals instead.
 */
export async function periodDays(ctx, ids, days, each = [['active']]) {
  if (!days.length) return { sum: EMPTY, each: [] };
  const ranges = days.map((d) => fmt.dayRange(d, ctx.startOfDay));
  const statements = periodQuery(ids, ctx.classes);
  if (serverSums) {
    try {
      // Without `each` the server answers the sum alone.
      if (!each.length) return { sum: (await api.querySum(ranges, statements, { keys: PERIOD_KEYS, limit: SHOWN })) || EMPTY, each: [] };
      const answer = await api.querySum(ranges, statements, { keys: PERIOD_KEYS, limit: SHOWN, each });
      return { sum: answer.sum || EMPTY, each: answer.each };
    } catch (e) {
      if (!(e instanceof api.ApiError) || e.status !== 404) throw e;
      serverSums = false;
    }
  }
  return wholeRange(ranges, ids, ctx.classes, each.length > 0);
}

/** `periodDays` on a server that cannot add up: the whole range (its lists cut by the query), and each day's totals. */
async function wholeRange(ranges, ids, classes, withDays) {
  const whole = [ranges[0][0], ranges[ranges.length - 1][1]];
  const [[sum], days] = await Promise.all([
    api.query([whole], periodQuery(ids, classes, SHOWN)),
    withDays ? api.query(ranges, dailyQuery(ids, classes)) : [],
  ]);
  return { sum, each: days.map((d) => ({ active: d.active, window: { cat_events: d.cats, duration: d.duration } })) };
}

/** What each of the day totals (`dailyQuery`) is asked for per day, and the keys its list is added up by. */
const DAY_TOTALS = [['active'], ['duration'], ['cats']];
const DAY_TOTAL_KEYS = { cats: ['$category'] };

/** The hosts whose periods this page asked the server to keep ready. */
const prepared = new Set();

/** Days back the server is asked to keep ready: a year of the period views', five of Trends' (small) totals. */
const PREPARED_DAYS = 365;
const PREPARED_TREND_DAYS = 5 * 365;

/**
 * Asks the server, once per page and host, to keep the past days of the period views'
 * program and of Trends' ready (`prepare`: evaluated in the background at the lowest
 * priority, nothing now), so the first look at a week, month, year or Trends after an
 * import or a restore finds its days computed. Nothing on a server that cannot add up.
 */
export async function prepareDays(ctx) {
  const { hosts } = activityHosts(ctx);
  if (!serverSums || !hosts.length || prepared.has(ctx.host)) return;
  prepared.add(ctx.host);
  const ids = hosts.map((x) => x.ids);
  const today = fmt.today(ctx.startOfDay);
  const back = (n) => period.days({ kind: 'custom', first: fmt.addDays(today, -n), last: fmt.addDays(today, -1) })
    .map((d) => fmt.dayRange(d, ctx.startOfDay));
  try {
    // The server fills the most recently asked first: the period views' year.
    await api.querySum(back(PREPARED_TREND_DAYS), dailyQuery(ids, ctx.classes), { keys: DAY_TOTAL_KEYS, prepare: true });
    await api.querySum(back(PREPARED_DAYS), periodQuery(ids, ctx.classes), { keys: PERIOD_KEYS, prepare: true });
  } catch (e) {
    if (e instanceof api.ApiError && e.status === 404) serverSums = false;
  }
}

/**
 * Each day's totals of `dailyQuery` over `days` (`[{active, duration, cats}]`): a program
 * far smaller than `periodQuery`, so years of its days fit the server's cache, which keeps
 * them (and ready in the background). A server without `/query/sum` answers them as
 * periods of one query.
 */
export async function dayTotals(ctx, ids, days) {
  const ranges = days.map((d) => fmt.dayRange(d, ctx.startOfDay));
  const statements = dailyQuery(ids, ctx.classes);
  if (serverSums) {
    try {
      const answer = await api.querySum(ranges, statements, { keys: DAY_TOTAL_KEYS, each: DAY_TOTALS });
      if (!answer) return [];
      return answer.each.map((d) => ({ active: d.active || 0, duration: d.duration || 0, cats: d.cats || [] }));
    } catch (e) {
      if (!(e instanceof api.ApiError) || e.status !== 404) throw e;
      serverSums = false;
    }
  }
  return api.query(ranges, statements);
}

/** The totals of the period `p` to compare with (`{active, duration, cats}`). */
async function periodTotals(ctx, ids, p) {
  const { sum } = await periodDays(ctx, ids, period.days(p), []);
  return { active: sum.active, duration: sum.window.duration, cats: sum.window.cat_events };
}

/** A change as text: `+1h 05m (+12 %) vs the week before`. */
function change(now, before, what) {
  if (!before && !now) return null;
  const diff = now - before;
  const sign = diff >= 0 ? '+' : '−';
  const pct = before > 0 ? ` (${sign}${Math.abs((diff / before) * 100).toFixed(0)} %)` : '';
  return `${sign}${fmt.duration(Math.abs(diff))}${pct} vs ${what}`;
}

export async function render(root, ctx) {
  const { hosts, leftOut } = activityHosts(ctx);
  const notices = leftOutNotices(leftOut, ctx.classes);
  if (!hosts.length) {
    replace(root,
      h('div', { class: 'page-head' }, h('h1', { class: 'page-title' }, 'Activity'), h('p', { class: 'page-sub' }, ctx.host === ALL_HOSTS ? 'All devices' : ctx.host)),
      notices,
      h('div', { class: 'alert info', role: 'status' },
        `No activity data for host “${ctx.host === ALL_HOSTS ? 'any device' : ctx.host}” yet: it has no window-watcher bucket (type currentwindow). `
        + 'Start aw-watcher-window and aw-watcher-afk on it (they report to this server), pick another host, or import an export on the ',
        h('a', { href: '#/buckets' }, 'Buckets'), ' page.'));
    return;
  }
  const isDay = ctx.period.kind === 'day';
  const ids = hosts.map((x) => x.ids);
  const perHost = ids.map((x) => desktopQuery({ ...x, classes: ctx.classes, activeEvents: isDay }));
  const before = period.previous(ctx.period);
  // Days after today have nothing yet: not asked for (a year seen in March is 300 of them).
  const today = fmt.today(ctx.startOfDay);
  const elapsed = period.days(ctx.period).filter((d) => d <= today);
  const started = performance.now();
  const day = () => Promise.all(perHost.map((statements) => api.query([ctx.range], statements).then(([r]) => r)))
    // Several devices: every list added up in full (each device's top list as it came).
    .then((results) => (results.length === 1 ? results[0] : combineHosts(results)));
  const [{ sum: result, each: perDay }, previous] = await Promise.all([
    isDay ? day().then((r) => ({ sum: r, each: [] })) : periodDays(ctx, ids, elapsed),
    periodTotals(ctx, ids, before),
  ]);
  const queryMs = Math.round(performance.now() - started);
  if (!ctx.isCurrent()) return;
  const all = ctx.host === ALL_HOSTS;
  const used = {
    window: ids.map((x) => x.window).join(', '),
    afk: ids.map((x) => x.afk).filter(Boolean).join(', '),
    browsers: ids.flatMap((x) => x.browsers),
  };
  const label = all ? `All devices (${hosts.map((x) => x.host).join(', ')})` : ctx.host;
  const statements = all ? null : perHost[0];
  const compare = { previous, name: period.previousName(ctx.period) };
  if (isDay) show(root, ctx, result, used, queryMs, { label, statements, notices, compare });
  else showPeriod(root, ctx, result, perDay, used, queryMs, { label, statements, notices, compare });
  // Every card and chart is filled: for the browser benchmark (`tests/browser/bench.mjs`) and the tests,
  // which also see whether the period was added up from its days or asked for whole.
  root.dataset.assembled = isDay ? 'whole' : 'days';
  root.dataset.complete = 'activity';
  performance.mark('aw-activity-complete');
}

/**
 * Renders a day's result; `statements` (one host's query) adds "Open this query", and
 * `notices` say what was left out of the query.
 */
function show(root, ctx, result, ids, queryMs, { label, statements, notices = [], compare }) {
  const win = result.window;
  const browser = result.browser;
  const active = intervals(win.active_events);
  const activeSecs = active.reduce((s, [a, b]) => s + (b - a) / 1000, 0);
  const hasData = activeSecs > 0 || win.duration > 0;

  const apps = win.app_events.map((e) => ({ label: e.data.app, seconds: e.duration, color: colorFor(e.data.app) }));
  const titles = win.title_events.map((e) => ({ label: e.data.title || '(no title)', detail: e.data.app, seconds: e.duration, color: colorFor(e.data.app) }));
  const domains = browser.domains.map((e) => ({ label: e.data.$domain || '(none)', seconds: e.duration, color: colorFor(e.data.$domain) }));
  const cats = categoryItems(win.cat_events, ctx.classes);

  const first = active.length ? new Date(active[0][0]) : null;
  const last = active.length ? new Date(active[active.length - 1][1]) : null;
  const topApp = apps[0];

  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Activity'),
      h('p', { class: 'page-sub' }, `${label} · ${fmt.longDate(ctx.date)}`)),
    notices,
    hasData ? null : notice(`No activity recorded for ${label} on ${fmt.longDate(ctx.date)}.`),
    h('div', { class: 'stats' },
      card('Active time', fmt.duration(activeSecs), first ? `${fmt.clock(first)} – ${fmt.clock(last)}` : 'not-AFK time', 'stat-active',
        change(activeSecs, compare.previous.active, compare.name)),
      card('Top application', topApp ? topApp.label : '—', topApp ? fmt.duration(topApp.seconds) : null, 'stat-top-app'),
      card('Window time', fmt.duration(win.duration), `${apps.length} application${apps.length === 1 ? '' : 's'}${ctx.host === ALL_HOSTS ? ', summed over devices' : ''}`, 'stat-window'),
      card('Browser time', fmt.duration(browser.duration), ids.browsers.length ? `${domains.length} domain${domains.length === 1 ? '' : 's'}` : 'no browser watcher', 'stat-browser')),
    h('section', { class: 'card panel', 'aria-labelledby': 'hours-h' },
      h('h2', { id: 'hours-h' }, 'Active time by hour'),
      hourChart(perHour(active, ctx.range))),
    h('div', { class: 'grid' },
      panel('Top applications', barList(apps, { name: 'Top applications', total: win.duration }), 'top-apps'),
      panel('Top window titles', barList(titles, { name: 'Top window titles', total: win.duration }), 'top-titles'),
      panel('Top browser domains', barList(domains, {
        name: 'Top browser domains',
        total: browser.duration,
        empty: ids.browsers.length ? 'No browser activity this day.' : 'No browser watcher bucket (aw-watcher-web-…) for this host.',
      }), 'top-domains'),
      panel('Categories', categoryBreakdown(cats, win.duration, compare), 'categories')),
    h('p', { class: 'meta' },
      `Computed by the server's query engine in ${queryMs} ms from ${[ids.window, ids.afk, ...ids.browsers.map((b) => b.id)].filter(Boolean).join(', ')}. `,
      statements ? h('button', { type: 'button', class: 'btn link', onclick: () => openInQuery(statements.join('\n'), ctx, ctx.range) }, 'Open this query') : null));
}

/** Renders a week, month, year or custom range: totals, a bar per day, the comparison, the top lists. */
function showPeriod(root, ctx, result, perDay, ids, queryMs, { label, statements, notices = [], compare }) {
  const win = result.window;
  const browser = result.browser;
  const dayList = period.days(ctx.period);
  const activePerDay = dayList.map((_, i) => (perDay[i] ? perDay[i].active : 0));
  const activeSecs = activePerDay.reduce((a, b) => a + b, 0);
  const activeDays = activePerDay.filter((x) => x > 0).length;
  const elapsedDays = perDay.length;
  const apps = win.app_events.map((e) => ({ label: e.data.app, seconds: e.duration, color: colorFor(e.data.app) }));
  const titles = win.title_events.map((e) => ({ label: e.data.title || '(no title)', detail: e.data.app, seconds: e.duration, color: colorFor(e.data.app) }));
  const domains = browser.domains.map((e) => ({ label: e.data.$domain || '(none)', seconds: e.duration, color: colorFor(e.data.$domain) }));
  const cats = categoryItems(win.cat_events, ctx.classes);
  const topApp = apps[0];
  const what = period.label(ctx.period);
  const openDay = (day) => ctx.navigate({ period: null, start: null, end: null, date: day });
  replace(root,
    h('div', { class: 'page-head' },
      h('h1', { class: 'page-title' }, 'Activity'),
      h('p', { class: 'page-sub' }, `${label} · ${what}`)),
    notices,
    activeSecs > 0 || win.duration > 0 ? null : notice(`No activity recorded for ${label} in ${what}.`),
    h('div', { class: 'stats' },
      card('Active time', fmt.duration(activeSecs), `${activeDays} of ${elapsedDays} day${elapsedDays === 1 ? '' : 's'} active${elapsedDays < dayList.length ? ' so far' : ''}`, 'stat-active',
        change(activeSecs, compare.previous.active, compare.name)),
      card('Top application', topApp ? topApp.label : '—', topApp ? fmt.duration(topApp.seconds) : null, 'stat-top-app'),
      card('Window time', fmt.duration(win.duration), `${apps.length} application${apps.length === 1 ? '' : 's'}${ctx.host === ALL_HOSTS ? ', summed over devices' : ''}`, 'stat-window',
        change(win.duration, compare.previous.duration, compare.name)),
      card('Browser time', fmt.duration(browser.duration), ids.browsers.length ? `${domains.length} domain${domains.length === 1 ? '' : 's'}` : 'no browser watcher', 'stat-browser')),
    h('section', { class: 'card panel', id: 'days', 'aria-labelledby': 'days-h' },
      h('h2', { id: 'days-h' }, 'Active time by day'),
      dayChart(dayList, activePerDay, { onPick: openDay })),
    h('div', { class: 'grid' },
      panel('Categories', categoryBreakdown(cats, win.duration, compare), 'categories'),
      panel('Top applications', barList(apps, { name: 'Top applications', total: win.duration, empty: 'No data for this period.' }), 'top-apps'),
      panel('Top window titles', barList(titles, { name: 'Top window titles', total: win.duration, empty: 'No data for this period.' }), 'top-titles'),
      panel('Top browser domains', barList(domains, {
        name: 'Top browser domains',
        total: browser.duration,
        empty: ids.browsers.length ? 'No browser activity in this period.' : 'No browser watcher bucket (aw-watcher-web-…) for this host.',
      }), 'top-domains')),
    h('p', { class: 'meta' },
      `Computed by the server's query engine in ${queryMs} ms from ${[ids.window, ids.afk, ...ids.browsers.map((b) => b.id)].filter(Boolean).join(', ')}. `,
      statements ? h('button', { type: 'button', class: 'btn link', onclick: () => openInQuery(statements.join('\n'), ctx, ctx.range) }, 'Open this query') : null));
}
