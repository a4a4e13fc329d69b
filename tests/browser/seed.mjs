// Seed data for the dashboard tests: a hand-written realistic working day whose expected
// totals are computed here independently of the server (interval arithmetic mirroring the
// canonical desktop query), and a generated year of a busy host for the speed check.

const MIN = 60_000;

/** A deterministic generator (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const iso = (ms) => new Date(ms).toISOString();

/** `HH:MM` on the day starting at `day0` (ms, UTC midnight) → ms. */
const at = (day0, hhmm) => {
  const [h, m] = hhmm.split(':').map(Number);
  return day0 + (h * 60 + m) * MIN;
};

/**
 * Splits `[s, e)` into consecutive events of 1–4 minutes with the same data, like merged
 * heartbeats; sums are unchanged by flood, so expectations stay exact.
 */
function chunks(s, e, data, rand) {
  const out = [];
  let t = s;
  while (t < e) {
    const len = Math.min(e - t, (1 + Math.floor(rand() * 4)) * MIN);
    out.push({ timestamp: iso(t), duration: len / 1000, data });
    t += len;
  }
  return out;
}

// The working day (UTC). Window segments run without gaps; the window watcher keeps
// recording while the user is away, which the query must filter out.
const WINDOW = [
  ['08:00', '08:25', 'Thunderbird', 'Inbox - Mozilla Thunderbird'],
  ['08:25', '09:45', 'Code', 'dashboard.rs - aw-server - Visual Studio Code'],
  ['09:45', '10:10', 'Firefox', 'GitHub - ActivityWatch/aw-server-rust'],
  ['10:10', '10:50', 'Slack', 'general | Slack'],
  ['10:50', '11:40', 'Code', 'queries.js - webui - Visual Studio Code'],
  ['11:40', '12:00', 'Firefox', 'Stack Overflow - How do lifetimes work?'],
  ['12:00', '12:40', 'Terminal', 'cargo test - aw-server'],
  ['12:40', '13:30', 'Firefox', 'YouTube - Lo-fi beats to code to'],
  ['13:30', '15:30', 'Code', 'timeline.js - webui - Visual Studio Code'],
  ['15:30', '15:50', 'Firefox', 'reddit - the front page of the internet'],
  ['15:50', '16:30', 'Code', 'buckets.js - webui - Visual Studio Code'],
  ['16:30', '16:45', 'Spotify', 'Spotify Premium'],
  ['16:45', '18:30', 'Firefox', 'GitHub - Pull requests'],
];

// The active tab over the whole day (the web watcher follows the browser's active tab even
// while another application is focused). Audible: YouTube playing 12:40–13:00 while the
// user is away from the keyboard, which counts as active time.
const WEB = [
  ['08:00', '09:45', 'https://mail.google.com/mail/u/0/#inbox', 'Inbox - Gmail', false],
  ['09:45', '10:10', 'https://github.com/ActivityWatch/aw-server-rust', 'GitHub - ActivityWatch/aw-server-rust', false],
  ['10:10', '11:40', 'https://github.com/ActivityWatch/aw-server-rust/issues', 'Issues - GitHub', false],
  ['11:40', '12:00', 'https://stackoverflow.com/questions/31012923', 'Stack Overflow - How do lifetimes work?', false],
  ['12:00', '12:40', 'https://doc.rust-lang.org/book/', 'The Rust Programming Language', false],
  ['12:40', '13:00', 'https://www.youtube.com/watch?v=jfKfPfyJRdk', 'YouTube - Lo-fi beats to code to', true],
  ['13:00', '15:30', 'https://www.youtube.com/watch?v=jfKfPfyJRdk', 'YouTube - Lo-fi beats to code to', false],
  ['15:30', '15:50', 'https://www.reddit.com/', 'reddit - the front page of the internet', false],
  ['15:50', '16:45', 'https://www.reddit.com/r/rust/', 'r/rust', false],
  ['16:45', '17:05', 'https://github.com/pulls', 'GitHub - Pull requests', false],
  ['17:05', '18:30', 'https://github.com/ActivityWatch/aw-server-rust/pull/42', 'GitHub - PR #42', false],
];

const AFK = [
  ['07:55', '10:30', 'not-afk'],
  ['10:30', '10:50', 'afk'],
  ['10:50', '12:30', 'not-afk'],
  ['12:30', '13:30', 'afk'],
  ['13:30', '17:30', 'not-afk'],
  ['17:30', '18:30', 'afk'],
];

// ---- interval arithmetic over [start, end) ms pairs ----

function union(list) {
  const sorted = list.filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

function overlap([s, e], set) {
  let total = 0;
  for (const [a, b] of set) total += Math.max(0, Math.min(e, b) - Math.max(s, a));
  return total;
}

const sumBy = (pairs) => {
  const m = new Map();
  for (const [k, v] of pairs) if (v > 0) m.set(k, (m.get(k) || 0) + v);
  return [...m.entries()].sort((a, b) => b[1] - a[1]).map(([k, ms]) => [k, ms / 1000]);
};

/** The domain as split_url_events gives it: host without leading `www.`. */
const domainOf = (url) => new URL(url).hostname.replace(/^(www\.)+/, '');

/** The category of `data` under `classes` (deepest match wins, ties to the later rule). */
function categorize(data, classes) {
  let best = ['Uncategorized'];
  for (const c of classes) {
    if (!c.rule || c.rule.type !== 'regex' || !c.rule.regex) continue;
    const re = new RegExp(c.rule.regex, c.rule.ignore_case ? 'i' : '');
    if (Object.values(data).some((v) => typeof v === 'string' && re.test(v)) && c.name.length >= best.length) best = c.name;
  }
  return best;
}

/**
 * The realistic day of `host` starting at `day0` (ms, 00:00 UTC): `{doc, expected(classes)}`.
 * `doc` is an import document with window, AFK and Firefox buckets.
 */
export function workDay(host, day0, seed = 42) {
  const rand = rng(seed);
  const win = WINDOW.map(([s, e, app, title]) => ({ s: at(day0, s), e: at(day0, e), data: { app, title } }));
  const web = WEB.map(([s, e, url, title, audible]) => ({ s: at(day0, s), e: at(day0, e), data: { audible, incognito: false, tabCount: 7, title, url } }));
  const afk = AFK.map(([s, e, status]) => ({ s: at(day0, s), e: at(day0, e), data: { status } }));
  const bucket = (id, type, client, list) => ({
    id, type, client, hostname: host, created: iso(day0), data: {},
    events: list.flatMap((x) => chunks(x.s, x.e, x.data, rand)).reverse(),
  });
  const ids = {
    window: `aw-watcher-window_${host}`,
    afk: `aw-watcher-afk_${host}`,
    web: `aw-watcher-web-firefox_${host}`,
  };
  const doc = {
    buckets: {
      [ids.window]: bucket(ids.window, 'currentwindow', 'aw-watcher-window', win),
      [ids.afk]: bucket(ids.afk, 'afkstatus', 'aw-watcher-afk', afk),
      [ids.web]: bucket(ids.web, 'web.tab.current', 'aw-watcher-web-firefox', web),
    },
  };

  // The canonical desktop query, by hand: browser tabs only count while Firefox is focused;
  // audible tabs extend not-AFK time; window time only counts while not AFK.
  const dayEnd = day0 + 24 * 60 * MIN;
  const clip = ([s, e]) => [Math.max(s, day0), Math.min(e, dayEnd)];
  const firefox = union(win.filter((w) => w.data.app === 'Firefox').map((w) => clip([w.s, w.e])));
  const webPieces = web.map((w) => ({ ...w, ms: overlap(clip([w.s, w.e]), firefox) }));
  const audible = web.filter((w) => w.data.audible).flatMap((w) => firefox.map(([a, b]) => [Math.max(a, w.s), Math.min(b, w.e)]));
  const notAfk = union([...afk.filter((a) => a.data.status === 'not-afk').map((a) => clip([a.s, a.e])), ...audible]);
  const winPieces = win.map((w) => ({ ...w, ms: overlap(clip([w.s, w.e]), notAfk) }));

  const expected = (classes) => ({
    activeSeconds: notAfk.reduce((t, [s, e]) => t + (e - s), 0) / 1000,
    windowSeconds: winPieces.reduce((t, w) => t + w.ms, 0) / 1000,
    browserSeconds: webPieces.reduce((t, w) => t + w.ms, 0) / 1000,
    apps: sumBy(winPieces.map((w) => [w.data.app, w.ms])),
    titles: sumBy(winPieces.map((w) => [w.data.title, w.ms])),
    domains: sumBy(webPieces.map((w) => [domainOf(w.data.url), w.ms])),
    categories: sumBy(winPieces.map((w) => [categorize(w.data, classes).join(' > '), w.ms])),
    firstActive: notAfk[0][0],
    lastActive: notAfk[notAfk.length - 1][1],
  });
  const eventCounts = Object.fromEntries(Object.values(doc.buckets).map((b) => [b.id, b.events.length]));
  return { doc, ids, expected, eventCounts };
}

/** A short day: one hour of Code 09:00–10:00, not AFK. */
export function shortDay(host, day0) {
  const data = { app: 'Code', title: 'notes.md - Visual Studio Code' };
  return {
    buckets: {
      [`aw-watcher-window_${host}`]: { id: `aw-watcher-window_${host}`, type: 'currentwindow', client: 'aw-watcher-window', hostname: host, created: iso(day0), data: {}, events: [{ timestamp: iso(at(day0, '09:00')), duration: 3600, data }] },
      [`aw-watcher-afk_${host}`]: { id: `aw-watcher-afk_${host}`, type: 'afkstatus', client: 'aw-watcher-afk', hostname: host, created: iso(day0), data: {}, events: [{ timestamp: iso(at(day0, '09:00')), duration: 3600, data: { status: 'not-afk' } }] },
    },
  };
}

const APPS = ['Code', 'Firefox', 'Terminal', 'Slack', 'Thunderbird', 'Spotify', 'Obsidian', 'Zoom', 'GIMP', 'LibreOffice',
  'Postman', 'DBeaver', 'Figma', 'Discord', 'Signal', 'Evince', 'Nautilus', 'Calculator', 'Inkscape', 'Blender'];
const SITES = ['github.com', 'stackoverflow.com', 'docs.rs', 'news.ycombinator.com', 'www.youtube.com', 'mail.google.com',
  'www.reddit.com', 'en.wikipedia.org', 'crates.io', 'developer.mozilla.org', 'calendar.google.com', 'www.bbc.co.uk'];

/**
 * A year of a busy host ending the day before `lastDay0` (ms, 00:00 UTC): working days
 * 08:00–18:30 with short window events (~1,300 a day, Zipf-skewed applications, many
 * titles), AFK alternation and Firefox tab events. Returns the import document as a JSON
 * string (built as text: it is large) and the busiest day's midnight.
 */
export function busyYear(host, lastDay0, days = 365, seed = 7) {
  const rand = rng(seed);
  const zipf = APPS.map((_, i) => 1 / (i + 1));
  const zsum = zipf.reduce((a, b) => a + b, 0);
  const pickApp = () => {
    let r = rand() * zsum;
    for (let i = 0; i < APPS.length; i += 1) {
      r -= zipf[i];
      if (r <= 0) return APPS[i];
    }
    return APPS[0];
  };
  const win = [];
  const afk = [];
  const web = [];
  let busiest = { day0: 0, n: 0 };
  const ev = (t, dur, data) => `{"timestamp":"${iso(t)}","duration":${(dur / 1000).toFixed(3)},"data":${JSON.stringify(data)}}`;
  for (let d = days; d >= 1; d -= 1) {
    const day0 = lastDay0 - d * 24 * 60 * MIN;
    const weekday = new Date(day0).getUTCDay();
    const weekend = weekday === 0 || weekday === 6;
    if (weekend && rand() < 0.6) continue;
    const start = day0 + (weekend ? 10 : 8) * 60 * MIN + Math.floor(rand() * 30) * MIN;
    const stop = day0 + (weekend ? 13 : 18) * 60 * MIN + Math.floor(rand() * 30) * MIN;
    let t = start;
    let n = 0;
    // AFK: active stretches of 20–90 min with 3–20 min breaks.
    let a = start;
    while (a < stop) {
      const on = Math.min(stop - a, (20 + rand() * 70) * MIN);
      afk.push(ev(a, on, { status: 'not-afk' }));
      a += on;
      const off = (3 + rand() * 17) * MIN;
      afk.push(ev(a, off, { status: 'afk' }));
      a += off;
    }
    while (t < stop) {
      const app = pickApp();
      const stretch = (1 + rand() * 8) * MIN;
      const end = Math.min(stop, t + stretch);
      while (t < end) {
        const dur = Math.min(end - t, (5 + rand() * 40) * 1000);
        const k = Math.floor(rand() * 400);
        let data;
        if (app === 'Firefox') {
          const site = SITES[Math.floor(rand() * rand() * SITES.length)];
          const url = `https://${site}/page/${k}`;
          data = { app, title: `Page ${k} on ${site} - Mozilla Firefox` };
          web.push(ev(t, dur, { audible: false, incognito: false, tabCount: 9, title: `Page ${k} on ${site}`, url }));
        } else {
          data = { app, title: `${app} document ${k % 60} (${new Date(day0).toISOString().slice(0, 7)})` };
        }
        win.push(ev(t, dur, data));
        t += dur + 200;
        n += 1;
      }
    }
    if (n > busiest.n) busiest = { day0, n };
  }
  const bucket = (id, type, client, events) => `"${id}":{"id":"${id}","type":"${type}","client":"${client}","hostname":"${host}","created":"${iso(lastDay0 - days * 24 * 60 * MIN)}","data":{},"events":[${events.join(',')}]}`;
  const json = `{"buckets":{${[
    bucket(`aw-watcher-window_${host}`, 'currentwindow', 'aw-watcher-window', win),
    bucket(`aw-watcher-afk_${host}`, 'afkstatus', 'aw-watcher-afk', afk),
    bucket(`aw-watcher-web-firefox_${host}`, 'web.tab.current', 'aw-watcher-web-firefox', web),
  ].join(',')}}}`;
  return { json, busiestDay0: busiest.day0, busiestEvents: busiest.n, counts: { window: win.length, afk: afk.length, web: web.length } };
}
