// One day's desktop results of several devices (the day view of All devices) put together:
// each device's lists come complete from its own query, so adding them up by their keys is
// exact. (Weeks, months and years are added up on the server: `POST /api/0/query/sum`.)

/** Every entry of `lists` (each a list of events) added up by `keyOf`, longest first. */
export function addUp(lists, keyOf) {
  const byKey = new Map();
  for (const events of lists) {
    for (const e of events) {
      const key = keyOf(e);
      const sum = byKey.get(key);
      if (sum) sum.duration += e.duration;
      else byKey.set(key, { ...e, duration: e.duration });
    }
  }
  return [...byKey.values()].sort((a, b) => b.duration - a.duration);
}

/**
 * One desktop result (`desktopQuery`'s shape) from several devices' `results`: each top list
 * added up by its key, not-AFK events put together, durations summed.
 */
export function combineHosts(results) {
  const lists = (pick) => results.map(pick);
  const total = (pick) => results.reduce((s, r) => s + pick(r), 0);
  return {
    window: {
      app_events: addUp(lists((r) => r.window.app_events), (e) => e.data.app),
      title_events: addUp(lists((r) => r.window.title_events), (e) => JSON.stringify([e.data.app, e.data.title])),
      cat_events: addUp(lists((r) => r.window.cat_events), (e) => JSON.stringify(e.data.$category)),
      active_events: results.flatMap((r) => r.window.active_events || []),
      duration: total((r) => r.window.duration),
    },
    browser: {
      domains: addUp(lists((r) => r.browser.domains), (e) => e.data.$domain),
      duration: total((r) => r.browser.duration),
    },
  };
}
