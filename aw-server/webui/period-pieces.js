// A week, month, year or custom range that reaches today, asked for in pieces whose answers
// stay the same while the watchers write: the whole months before this one as one piece,
// then each day of this month up to today on its own. The server caches each piece's
// answer (and keeps it across restarts), and a heartbeat reaches only today's piece, so
// the first look of the day at a year evaluates one day, not a year.
//
// The pieces are added up here, exactly or not at all. The day pieces list everything
// (a day has few distinct titles); the months' piece lists its `MONTHS_LIMIT` longest of
// each kind (all of them, in most years), so a title that is not in a list that long has
// at most the last listed one's time there. When that unknown could change which entries are in the top list or their
// times, `addUp` gives up, and the caller asks for the whole range in one query instead
// (the answer it always gave).

import * as fmt from './format.js';

/**
 * How many of each list the months' piece returns: every entry of most years (a title
 * that is not in the months' list could be in the top 100 with an unknown share, so the
 * list must be long), and still a bound on what one answer carries.
 */
export const MONTHS_LIMIT = 20000;

/**
 * The pieces of period `p` (`{first, last}`, `YYYY-MM-DD`) when it reaches today (`today`):
 * `{months, days}`: the months before today's month as `{first, last}` (or null), and each
 * day from the month's first (or the period's) through today, the last one reaching to the
 * period's end. `null` for a period that does not reach today, or starts after it: its
 * answer does not change with today's writes, so it is asked for whole.
 */
export function pieces(p, today) {
  if (p.last < today || p.first > today) return null;
  const monthStart = `${today.slice(0, 8)}01`;
  const months = p.first < monthStart ? { first: p.first, last: fmt.addDays(monthStart, -1) } : null;
  const days = [];
  for (let d = p.first > monthStart ? p.first : monthStart; d <= today; d = fmt.addDays(d, 1)) {
    days.push({ first: d, last: d === today ? p.last : d });
  }
  return { months, days };
}

/**
 * The top `shown` of one kind of list over every piece, added up by `keyOf`, longest first;
 * `null` when they cannot be known exactly. `lists` holds each piece's list and its limit
 * (`null`: complete); a list as long as its limit may have left out entries of at most its
 * last entry's duration.
 */
export function addUp(lists, keyOf, shown) {
  const cut = lists.map(({ events, limit }) => (limit !== null && events.length >= limit && events.length ? events[events.length - 1].duration : 0));
  const byKey = new Map();
  lists.forEach(({ events }, i) => {
    for (const e of events) {
      const key = keyOf(e);
      let sum = byKey.get(key);
      if (!sum) {
        sum = { event: { ...e, duration: 0 }, seen: new Set() };
        byKey.set(key, sum);
      }
      sum.event.duration += e.duration;
      sum.seen.add(i);
    }
  });
  // The most an entry may lack: the cut of every truncated list it is not in.
  const unknown = (sum) => cut.reduce((a, c, i) => a + (sum.seen.has(i) ? 0 : c), 0);
  const all = [...byKey.values()].sort((a, b) => b.event.duration - a.event.duration);
  const top = all.slice(0, shown);
  const last = top.length === shown ? top[shown - 1].event.duration : 0;
  const exact = top.every((sum) => unknown(sum) === 0)
    && all.slice(shown).every((sum) => sum.event.duration + unknown(sum) <= last)
    // An entry in no list at all.
    && cut.reduce((a, c) => a + c, 0) <= last;
  return exact ? top.map((sum) => sum.event) : null;
}

/**
 * One desktop result (`desktopQuery`'s shape) from the results of several pieces or hosts:
 * `results` is a list of `{result, limit}` (`limit` null: its lists are complete). Each top
 * list is added up by its key (`addUp`); not-AFK events are put together. `null` when a
 * top list cannot be known exactly.
 */
export function combinePieces(results, shown) {
  const lists = (pick) => results.map(({ result, limit }) => ({ events: pick(result), limit }));
  const apps = addUp(lists((r) => r.window.app_events), (e) => e.data.app, shown);
  const titles = addUp(lists((r) => r.window.title_events), (e) => JSON.stringify([e.data.app, e.data.title]), shown);
  // Categories are never cut by the query: every one is added up.
  const cats = addUp(results.map(({ result }) => ({ events: result.window.cat_events, limit: null })), (e) => JSON.stringify(e.data.$category), Infinity);
  const domains = addUp(lists((r) => r.browser.domains), (e) => e.data.$domain, shown);
  if (!apps || !titles || !cats || !domains) return null;
  const total = (pick) => results.reduce((s, { result }) => s + pick(result), 0);
  return {
    window: {
      app_events: apps,
      title_events: titles,
      cat_events: cats,
      active_events: results.flatMap(({ result }) => result.window.active_events || []),
      duration: total((r) => r.window.duration),
    },
    browser: { domains, duration: total((r) => r.browser.duration) },
  };
}
