// Builds the canonical queries the ActivityWatch web UI (aw-webui) sends, one statement
// per line, and picks the buckets they read for a host.

/** The web UI's default categories (used when the `classes` setting is absent). */
export { DEFAULT_CLASSES } from './default-classes.js';
import { BROWSERS } from './browsers.js';

/**
 * The user's categories: the `classes` setting (aw-webui stores a list; older versions a JSON
 * text of one), or null when it is unset or unreadable (then the defaults apply). An empty
 * list is the user's choice: no categories.
 */
export function classesSetting(settings) {
  let c = settings && settings.classes;
  if (typeof c === 'string') {
    try {
      c = JSON.parse(c);
    } catch {
      return null;
    }
  }
  return Array.isArray(c) ? c : null;
}

/**
 * Browser names as the web watcher's bucket ids contain them, with the window watcher's app
 * names of that browser (exact names, plus a case-insensitive pattern for variants).
 */
export { BROWSERS } from './browsers.js';

/**
 * Whether `text` can be written as a query-language string. Strings only know the `\"`
 * escape (every other backslash is kept verbatim), so a string cannot end with a backslash:
 * its closing quote would read as `\"` and the rest of the query would become the string.
 */
export function canWrite(text) {
  return typeof text === 'string' && !text.endsWith('\\');
}

/** Thrown by `literal` for a string that cannot be written (see `canWrite`). */
export class UnwritableError extends Error {}

/**
 * A value written as a query-language literal: quotes escaped, every other character as it
 * is (so regexes pass through unchanged, and a bucket id with quotes, semicolons or newlines
 * reads back as exactly that id). Throws `UnwritableError` for a string that ends with a
 * backslash; callers leave such values out (`queryable`, `classesForQuery`).
 */
export function literal(v) {
  if (v === null || v === undefined) return '[]';
  if (typeof v === 'string') {
    if (!canWrite(v)) throw new UnwritableError(`“${v}” ends with a backslash, which a query cannot contain`);
    return `"${v.replace(/"/g, '\\"')}"`;
  }
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '0';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${v.map(literal).join(', ')}]`;
  return `{${Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => `${literal(k)}: ${literal(x)}`).join(', ')}}`;
}

/** Whether every string in `v` (a JSON value) can be written into a query. */
function writable(v) {
  if (typeof v === 'string') return canWrite(v);
  if (Array.isArray(v)) return v.every(writable);
  if (v && typeof v === 'object') return Object.entries(v).every(([k, x]) => canWrite(k) && writable(x));
  return true;
}

/** The categories of the `classes` setting that cannot be written into a query (left out of it). */
export function unwritableClasses(classes) {
  return (classes || []).filter((c) => c && Array.isArray(c.name) && c.rule && !writable([c.name, c.rule.regex, c.rule.select_keys || []]));
}

/**
 * The `classes` setting as `categorize` takes it: rules that can match, as `[name, rule]`;
 * a category with a name or regex that cannot be written into a query is left out.
 */
export function classesForQuery(classes) {
  const unwritable = new Set(unwritableClasses(classes));
  return (classes || [])
    .filter((c) => !unwritable.has(c))
    .filter((c) => c && Array.isArray(c.name) && c.rule && c.rule.type === 'regex' && typeof c.rule.regex === 'string' && c.rule.regex !== '')
    .map((c) => {
      const rule = { type: 'regex', regex: c.rule.regex };
      if (c.rule.ignore_case) rule.ignore_case = true;
      if (Array.isArray(c.rule.select_keys) && c.rule.select_keys.length) rule.select_keys = c.rule.select_keys;
      return [c.name, rule];
    });
}

/** The hostnames that have buckets, the given one first when present. */
export function hostnames(buckets, preferred) {
  const hosts = new Set(Object.values(buckets).map((b) => b.hostname).filter((x) => typeof x === 'string' && x !== ''));
  const list = [...hosts].sort((a, b) => a.localeCompare(b));
  return preferred && hosts.has(preferred) ? [preferred, ...list.filter((x) => x !== preferred)] : list;
}

/** The `host` parameter that stands for every device (no hostname contains `*`). */
export const ALL_HOSTS = '*';

/** The hosts with a window-watcher bucket (whose day Activity can show), sorted. */
export function windowHosts(buckets) {
  const hosts = new Set(Object.values(buckets).filter((b) => b.type === 'currentwindow').map((b) => b.hostname));
  return [...hosts].sort((a, b) => a.localeCompare(b));
}

/** The host to show by default: this server's host when it has data, else the first with a window bucket. */
export function defaultHost(buckets, serverHost) {
  const all = Object.values(buckets);
  if (all.some((b) => b.hostname === serverHost)) return serverHost;
  const win = all.find((b) => b.type === 'currentwindow');
  return win ? win.hostname : (all[0] ? all[0].hostname : serverHost);
}

function pick(buckets, type, host, preferredId) {
  const all = Object.values(buckets).filter((b) => b.type === type && b.hostname === host);
  const exact = all.find((b) => b.id === preferredId);
  if (exact) return exact.id;
  all.sort((a, b) => a.id.localeCompare(b.id));
  return all.length ? all[0].id : null;
}

/**
 * The buckets the desktop query of `host` reads: `aw-watcher-window_<host>`,
 * `aw-watcher-afk_<host>` and `aw-manual_<host>` (activities added by hand; or another
 * bucket of that type and host), and the web-watcher buckets of that host (or of the legacy
 * host `unknown`) whose id names a known browser.
 */
export function hostBuckets(buckets, host) {
  const browsers = Object.values(buckets)
    .filter((b) => b.type === 'web.tab.current' && (b.hostname === host || b.hostname === 'unknown'))
    .map((b) => ({ id: b.id, browser: browserOf(b.id) }))
    .filter((b) => b.browser)
    .sort((a, b) => a.id.localeCompare(b.id));
  return {
    window: pick(buckets, 'currentwindow', host, `aw-watcher-window_${host}`),
    afk: pick(buckets, 'afkstatus', host, `aw-watcher-afk_${host}`),
    manual: pick(buckets, 'manual', host, `aw-manual_${host}`),
    browsers,
  };
}

/**
 * The buckets of `hostBuckets` that can be written into a query, and the ids left out
 * because they cannot (they end with a backslash): `{ids, leftOut}`. Without a writable
 * window bucket, `ids.window` is null.
 */
export function queryable(ids) {
  const leftOut = [ids.window, ids.afk, ids.manual, ...ids.browsers.map((b) => b.id)].filter((id) => id && !canWrite(id));
  return {
    ids: {
      window: ids.window && canWrite(ids.window) ? ids.window : null,
      afk: ids.afk && canWrite(ids.afk) ? ids.afk : null,
      manual: ids.manual && canWrite(ids.manual) ? ids.manual : null,
      browsers: ids.browsers.filter((b) => canWrite(b.id)),
    },
    leftOut,
  };
}

function browserOf(bucketId) {
  let found = null;
  for (const name of Object.keys(BROWSERS)) if (bucketId.includes(name)) found = name;
  return found;
}

/**
 * The statements every activity query of one host starts with: window events (flooded)
 * filtered to not-AFK time (extended by audible browser tabs), with the activities added by
 * hand in the place of the window time they overlap and counted as not AFK, categorized;
 * browser tab events cut to the time their browser window was focused. They leave `events<s>`, `not_afk<s>` and
 * `browser_events<s>` (`s`: a suffix, so that several hosts' can stand in one query).
 */
function activityStatements({ window: windowId, afk, manual, browsers = [], classes = [], includeAudible = true }, s = '') {
  const q = [];
  q.push(`events${s} = flood(query_bucket(${literal(windowId)}));`);
  if (afk) {
    q.push(`not_afk${s} = flood(query_bucket(${literal(afk)}));`);
    q.push(`not_afk${s} = filter_keyvals(not_afk${s}, "status", ["not-afk"]);`);
  } else {
    q.push(`not_afk${s} = [];`);
  }
  q.push(`browser_events${s} = [];`);
  for (const { id, browser } of browsers) {
    const v = `${browser}${s}`;
    q.push(`events_${v} = flood(query_bucket(${literal(id)}));`);
    q.push(`window_${v} = filter_keyvals(events${s}, "app", ${literal(BROWSERS[browser].names)});`);
    q.push(`window_${v} = sort_by_timestamp(concat(window_${v}, filter_keyvals_regex(events${s}, "app", ${literal(BROWSERS[browser].regex)})));`);
    q.push(`events_${v} = filter_period_intersect(events_${v}, window_${v});`);
    q.push(`events_${v} = split_url_events(events_${v});`);
    q.push(`browser_events${s} = concat(browser_events${s}, events_${v});`);
    q.push(`browser_events${s} = sort_by_timestamp(browser_events${s});`);
  }
  if (afk && includeAudible && browsers.length) {
    q.push(`audible_events${s} = filter_keyvals(browser_events${s}, "audible", [true]);`);
    q.push(`not_afk${s} = period_union(not_afk${s}, audible_events${s});`);
  }
  if (afk) q.push(`events${s} = filter_period_intersect(events${s}, not_afk${s});`);
  if (manual) {
    q.push(`manual${s} = sort_by_timestamp(query_bucket(${literal(manual)}));`);
    if (afk) q.push(`not_afk${s} = period_union(not_afk${s}, manual${s});`);
    q.push(`events${s} = union_no_overlap(manual${s}, events${s});`);
  }
  q.push(`events${s} = categorize(events${s}, ${literal(classesForQuery(classes))});`);
  return q;
}

/**
 * The full desktop query of the web UI's Activity view for one period (`activityStatements`,
 * then the summaries). Returns `{window: {app_events, title_events, cat_events, active_events,
 * duration}, browser: {domains, urls, titles, duration}}`; without `activeEvents` (long
 * periods, whose active time comes from `dailyQuery`), `active_events` is empty.
 */
export function desktopQuery({ limit = 100, activeEvents = true, ...ids }) {
  const q = activityStatements(ids);
  q.push('title_events = sort_by_duration(merge_events_by_keys(events, ["app", "title"]));');
  q.push('app_events = sort_by_duration(merge_events_by_keys(title_events, ["app"]));');
  q.push('cat_events = sort_by_duration(merge_events_by_keys(events, ["$category"]));');
  q.push(`app_events = limit_events(app_events, ${limit});`);
  q.push(`title_events = limit_events(title_events, ${limit});`);
  q.push('duration = sum_durations(events);');
  q.push(`browser_urls = limit_events(sort_by_duration(merge_events_by_keys(browser_events, ["url"])), ${limit});`);
  q.push(`browser_domains = limit_events(sort_by_duration(merge_events_by_keys(browser_events, ["$domain"])), ${limit});`);
  q.push(`browser_titles = limit_events(sort_by_duration(merge_events_by_keys(browser_events, ["title"])), ${limit});`);
  q.push('browser_duration = sum_durations(browser_events);');
  q.push(`RETURN = {"window": {"app_events": app_events, "title_events": title_events, "cat_events": cat_events, `
    + `"active_events": ${activeEvents ? 'not_afk' : '[]'}, "duration": duration}, "browser": {"domains": browser_domains, "urls": browser_urls, `
    + '"titles": browser_titles, "duration": browser_duration}};');
  return q;
}

/**
 * What a week, month or year view and Trends show of one day, for the server to add up
 * over a period's days (`POST /api/0/query/sum` with `PERIOD_KEYS`), of one host or of
 * several (`hosts`: a list of `hostBuckets`-like ids, their events put together):
 * `{active, window: {app_events, title_events, cat_events, duration}, browser: {domains,
 * duration}}`, every list complete (or its `limit` longest, for a server that cannot add
 * periods up); `active` is the union of not-AFK time across the hosts, as the day view
 * counts it.
 */
export function periodQuery(hosts, classes, limit = null) {
  const cut = (list) => (limit === null ? list : `limit_events(sort_by_duration(${list}), ${limit})`);
  const q = [];
  hosts.forEach((ids, i) => q.push(...activityStatements({ ...ids, classes }, `_${i}`)));
  q.push('active = [];');
  q.push('events = [];');
  q.push('browser_events = [];');
  hosts.forEach((_, i) => {
    q.push(`active = period_union(active, not_afk_${i});`);
    q.push(`events = concat(events, events_${i});`);
    q.push(`browser_events = concat(browser_events, browser_events_${i});`);
  });
  q.push('title_events = merge_events_by_keys(events, ["app", "title"]);');
  q.push(`RETURN = {"active": sum_durations(active), `
    + `"window": {"app_events": ${cut('merge_events_by_keys(title_events, ["app"])')}, "title_events": ${cut('title_events')}, `
    + `"cat_events": ${cut('merge_events_by_keys(events, ["$category"])')}, "duration": sum_durations(events)}, `
    + `"browser": {"domains": ${cut('merge_events_by_keys(browser_events, ["$domain"])')}, "duration": sum_durations(browser_events)}};`);
  return q;
}

/** The keys each list of `periodQuery` is merged by, for the server to add the days up by. */
export const PERIOD_KEYS = {
  window: { app_events: ['app'], title_events: ['app', 'title'], cat_events: ['$category'] },
  browser: { domains: ['$domain'] },
};

/**
 * A day's (or any period's) totals, of one host or of several (`hosts`: a list of
 * `hostBuckets`-like ids): `{active, duration, cats}` — active time (the union of not-AFK
 * time, as the day view counts it, across the hosts), window time while active, and that
 * time per category (`[{data: {$category}, duration}]`). The views take these from
 * `periodQuery`, and from this smaller program on a server that cannot add periods up
 * (the reference); the tests ask for it to check them.
 */
export function dailyQuery(hosts, classes) {
  const q = [];
  hosts.forEach((ids, i) => q.push(...activityStatements({ ...ids, classes }, `_${i}`)));
  q.push('active = [];');
  q.push('all_events = [];');
  hosts.forEach((_, i) => {
    q.push(`active = period_union(active, not_afk_${i});`);
    q.push(`all_events = concat(all_events, events_${i});`);
  });
  q.push('RETURN = {"active": sum_durations(active), "duration": sum_durations(all_events), '
    + '"cats": merge_events_by_keys(all_events, ["$category"])};');
  return q;
}

/** A starter query for the Query page: time per application of `host`. */
export function sampleQuery(host) {
  // A hostname that cannot be written is left out: then any host's buckets are found.
  const hostArg = canWrite(host) ? `, ${literal(host)}` : '';
  return [
    '# Time per application while not AFK',
    ...(canWrite(host) ? [] : ['# (this host\'s name ends with a backslash, which a query cannot contain)']),
    `events = flood(query_bucket(find_bucket("aw-watcher-window_"${hostArg})));`,
    `not_afk = flood(query_bucket(find_bucket("aw-watcher-afk_"${hostArg})));`,
    'not_afk = filter_keyvals(not_afk, "status", ["not-afk"]);',
    'events = filter_period_intersect(events, not_afk);',
    'events = sort_by_duration(merge_events_by_keys(events, ["app"]));',
    'RETURN = limit_events(events, 10);',
  ].join('\n');
}
