// The dashboard over any period (issue 27): day, week, month, year and custom ranges, the
// comparison with the period before, All devices, Trends, and editing the categories — in
// headless Chromium against the real server, every number checked against the server's own
// answer to the same queries (made here through the API).

import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { workDay, shortDay, busyYear } from './seed.mjs';
import * as harness from './harness.mjs';
import { ARTIFACTS, CHROMIUM_ARGS, DAY_MS, HANG_MS, assertBars, dur, rustDesktopQuery } from './harness.mjs';
import { DEFAULT_CLASSES, dailyQuery, desktopQuery, hostBuckets, queryable } from '../../aw-server/webui/queries.js';
import * as period from '../../aw-server/webui/period.js';
import { addDays, dayRange, isoDate, longDate } from '../../aw-server/webui/format.js';

const DAY = '2025-03-04';
const DAY0 = Date.parse(`${DAY}T00:00:00Z`);
const NOW = DAY0 + 19 * 3_600_000;
const SOD = period.DEFAULT_START_OF_DAY;

let server;
let browser;
let page;
let host;
let buckets;
const watcher = harness.problemWatcher();

const ready = (p = page) => harness.ready(p);
const bars = (id, p = page) => harness.bars(p, id);
const stat = (id, p = page) => harness.stat(p, id);
const go = (action, p = page) => harness.after(p, action);

/** Opens `hash` as a new page load (a hash change alone would leave the last view's "ready" up). */
async function visit(hash, p = page) {
  await p.goto('about:blank');
  await p.goto(`${server.url}/${hash}`);
  await ready(p);
}

/** The server's answer to `statements` over `ranges` (`[[Date, Date]]`). */
function query(ranges, statements) {
  return server.api('POST', 'query/', {
    timeperiods: ranges.map(([s, e]) => `${s.toISOString()}/${e.toISOString()}`),
    query: statements,
  });
}

const idsOf = (h) => queryable(hostBuckets(buckets, h)).ids;

/** What the dashboard should show for `p` of these hosts: asked of the server directly. */
async function expected(p, hosts, classes = DEFAULT_CLASSES) {
  const ids = hosts.map(idsOf);
  const daily = dailyQuery(ids, classes);
  const perDay = await query(period.days(p).map((d) => dayRange(d, SOD)), daily);
  const [previous] = await query([period.range(period.previous(p), SOD)], daily);
  const summaries = await Promise.all(ids.map((x) => query([period.range(p, SOD)], desktopQuery({ ...x, classes, activeEvents: false })).then(([r]) => r)));
  return { perDay, previous, summaries, active: perDay.reduce((s, r) => s + r.active, 0) };
}

const label = (e) => (Array.isArray(e.data.$category) ? e.data.$category.join(' > ') : String(e.data.$category));

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startServer({ dashboard: true });
  host = (await server.api('GET', 'info')).hostname;
  await server.api('POST', 'import', workDay(host, DAY0).doc);
  await server.api('POST', 'import', shortDay(host, DAY0 - DAY_MS));
  await server.api('POST', 'import', busyYear('busyhost', DAY0).json);
  buckets = await server.api('GET', 'buckets/');
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
  // Every Playwright wait only guards against a hang: generous, so a slow machine passes.
  context.setDefaultTimeout(HANG_MS);
  page = await context.newPage();
  await page.clock.setFixedTime(NOW);
  watcher.watch(page);
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

beforeEach(() => {
  watcher.problems.length = 0;
});

test('every period shows what the server answers for the same queries, and the change against the one before', async () => {
  const cases = [
    ['week', `period=week&date=${DAY}`, 'the week before'],
    ['month', `period=month&date=2025-02-10`, 'the month before'],
    ['year', `period=year&date=${DAY}`, 'the year before'],
    ['custom', 'period=custom&start=2025-01-06&end=2025-02-16&date=2025-02-16', 'the 42 days before'],
  ];
  for (const [kind, qs, before] of cases) {
    await visit(`#/activity?${qs}&host=busyhost`);
    const params = new URLSearchParams(qs);
    const p = period.periodOf(kind, params.get('date'), { weekStart: 1, first: params.get('start'), last: params.get('end') });
    const exp = await expected(p, ['busyhost']);
    const [summary] = exp.summaries;
    assert.equal(await page.textContent('#day-label'), period.label(p), kind);
    assert.equal(await stat('stat-active'), dur(exp.active), `${kind}: active time`);
    assert.equal(await stat('stat-window'), dur(summary.window.duration), `${kind}: window time`);
    assert.equal(await stat('stat-browser'), dur(summary.browser.duration), `${kind}: browser time`);
    assertBars(await bars('top-apps'), summary.window.app_events.map((e) => [e.data.app, e.duration]), `${kind}: applications`);
    assertBars(await bars('top-domains'), summary.browser.domains.map((e) => [e.data.$domain, e.duration]), `${kind}: domains`);
    assertBars(await bars('categories'), summary.window.cat_events.map((e) => [label(e), e.duration]), `${kind}: categories`);
    // A bar per day, each with its day's active time.
    const titles = await page.$$eval('#days .day-bar title', (ts) => ts.map((t) => t.textContent));
    assert.equal(titles.length, period.days(p).length, `${kind}: a bar per day`);
    const busiest = exp.perDay.reduce((b, r, i) => (r.active > exp.perDay[b].active ? i : b), 0);
    assert.match(titles[busiest], new RegExp(`: ${dur(exp.perDay[busiest].active)} active$`));
    // The change against the period before.
    const diff = exp.active - exp.previous.active;
    assert.equal(await page.textContent('#stat-active .stat-change'),
      `${diff >= 0 ? '+' : '−'}${dur(Math.abs(diff))}${exp.previous.active > 0 ? ` (${diff >= 0 ? '+' : '−'}${Math.abs((diff / exp.previous.active) * 100).toFixed(0)} %)` : ''} vs ${before}`);
    assert.equal(await page.getAttribute('main', 'data-complete'), 'activity', 'the view marks itself complete');
    // A period is added up by the server from its days, each kept on its own.
    assert.equal(await page.getAttribute('main', 'data-assembled'), 'days', kind);
    await harness.shot(page, `period-${kind}`);
  }
  // A day: the same comparison, against the day before.
  await visit(`#/activity?date=${DAY}&host=${encodeURIComponent(host)}`);
  assert.match(await page.textContent('#stat-active .stat-change'), /vs the day before$/);
  // The day's active time, counted in the page from its not-AFK events, is what the server's
  // day query counts.
  const [today] = await query([dayRange(DAY, SOD)], dailyQuery([idsOf(host)], DEFAULT_CLASSES));
  assert.equal(await stat('stat-active'), dur(today.active));
  assert.ok(await page.$('#categories .stack-bar'), 'categories drawn as shares');
  watcher.assertClean();
});

test("the client library's desktop query counts what the dashboard's counts, over a day and a year", async () => {
  for (const [h, range] of [[host, dayRange(DAY, SOD)], ['busyhost', period.range(period.periodOf('year', DAY, { weekStart: 1 }), SOD)]]) {
    const ids = idsOf(h);
    assert.ok(ids.browsers.length > 0, `${h} has a browser bucket`);
    const [dashboard] = await query([range], desktopQuery({ ...ids, classes: DEFAULT_CLASSES }));
    const [client] = await query([range], [rustDesktopQuery(ids)]);
    assert.ok(dashboard.window.duration > 0 && dashboard.browser.duration > 0, `${h}: some time counted`);
    assert.deepEqual(client, dashboard, h);
  }
});

test('periods are chosen with buttons, moved with previous/next/today, kept in the URL, and weeks start on the chosen day', async () => {
  await visit(`#/activity?date=${DAY}&host=busyhost`);
  const dayLabel = () => page.textContent('#day-label');
  await go(() => page.click('[data-period="week"]'));
  assert.match(page.url(), /period=week/);
  assert.equal(await dayLabel(), 'Week of 3 Mar 2025');
  assert.equal(await page.getAttribute('[data-period="week"]', 'aria-pressed'), 'true');
  assert.ok(await page.isDisabled('#next-day'), 'no week after this one');
  assert.equal(await page.getAttribute('#prev-day', 'aria-label'), 'Previous week');
  await go(() => page.click('#prev-day'));
  assert.equal(await dayLabel(), 'Week of 24 Feb 2025');
  await go(() => page.click('[data-period="month"]'));
  assert.equal(await dayLabel(), 'March 2025');
  await go(() => page.click('#prev-day'));
  assert.equal(await dayLabel(), 'February 2025');
  await go(() => page.click('[data-period="year"]'));
  assert.equal(await dayLabel(), '2025');
  await go(() => page.goBack());
  assert.equal(await dayLabel(), 'February 2025', 'the back button returns to the month');
  await go(() => page.click('#today'));
  assert.equal(await dayLabel(), 'March 2025');
  // A custom range: from the inputs, then moved by its own length.
  await go(() => page.click('[data-period="custom"]'));
  assert.ok(await page.isVisible('#range-start'));
  await go(() => page.evaluate(() => {
    document.getElementById('range-start').value = '2025-02-01';
    const end = document.getElementById('range-end');
    end.value = '2025-02-10';
    end.dispatchEvent(new Event('change'));
  }));
  assert.equal(await dayLabel(), '1 Feb 2025 – 10 Feb 2025');
  await go(() => page.click('#prev-day'));
  assert.equal(await dayLabel(), '22 Jan 2025 – 31 Jan 2025');
  // A bookmark opens the same period.
  const bookmark = page.url();
  const other = await page.context().newPage();
  await other.clock.setFixedTime(NOW);
  watcher.watch(other);
  await other.goto(bookmark);
  await ready(other);
  assert.equal(await other.textContent('#day-label'), '22 Jan 2025 – 31 Jan 2025');
  await other.close();
  // A bar of the chart opens its day.
  await go(() => page.click('#days .day-bar >> nth=1'));
  assert.equal(await page.inputValue('#date'), '2025-01-23');
  assert.doesNotMatch(page.url(), /period=/);
  // The user's first weekday (aw-webui's `startOfWeek`).
  await server.api('POST', 'settings/startOfWeek', '"Sunday"');
  try {
    await visit(`#/activity?period=week&date=${DAY}&host=busyhost`);
    assert.equal(await dayLabel(), 'Week of 2 Mar 2025');
  } finally {
    await server.api('DELETE', 'settings/startOfWeek');
  }
  watcher.assertClean();
});

test('All devices over a week adds up every device, active time counted once', async () => {
  await visit(`#/activity?period=week&date=${DAY}&host=*`);
  const p = period.periodOf('week', DAY, { weekStart: 1 });
  const exp = await expected(p, [host, 'busyhost']);
  const [own, busy] = [await expected(p, [host]), await expected(p, ['busyhost'])];
  assert.match(await page.textContent('.page-sub'), /^All devices \(/);
  assert.equal(await stat('stat-active'), dur(exp.active));
  // Counted once: at least either device's, at most their sum; on 3 March both were active
  // at the same hours, so less than the sum.
  assert.ok(exp.active >= Math.max(own.active, busy.active), 'at least each device');
  assert.ok(exp.active < own.active + busy.active, 'overlapping hours counted once');
  const window = exp.summaries.reduce((s, r) => s + r.window.duration, 0);
  assert.equal(await stat('stat-window'), dur(window));
  watcher.assertClean();
});

test('Trends shows a heat map of twelve months and categories per week, as the server counts them', async () => {
  await visit(`#/trends?host=busyhost`);
  const first = period.periodOf('week', '2024-03-04', { weekStart: 1 }).first;
  const days = period.days({ kind: 'custom', first, last: DAY });
  const results = await query(days.map((d) => dayRange(d, SOD)), dailyQuery([idsOf('busyhost')], DEFAULT_CLASSES));
  const cells = await page.$$eval('#heatmap .heat-cell[data-day]', (cs) => cs.map((c) => [c.dataset.day, c.getAttribute('aria-label')]));
  assert.equal(cells.length, days.length);
  cells.forEach(([day, text], i) => {
    assert.equal(day, days[i]);
    assert.equal(text, `${longDate(day)}: ${dur(results[i].active)} active`);
  });
  const total = results.reduce((s, r) => s + r.active, 0);
  assert.equal(await stat('trend-total'), dur(total));
  const perCategory = new Map();
  for (const r of results) {
    for (const e of r.cats) {
      const top = Array.isArray(e.data.$category) ? e.data.$category[0] : String(e.data.$category);
      perCategory.set(top, (perCategory.get(top) || 0) + e.duration);
    }
  }
  const legend = await page.$$eval('#weekly-categories .legend li', (ls) => ls.map((l) => [l.childNodes[1].textContent.trim(), l.querySelector('.legend-value').textContent]));
  assert.deepEqual(new Map(legend), new Map([...perCategory].map(([k, v]) => [k, dur(v)])));
  assert.equal(await page.getAttribute('main', 'data-complete'), 'trends');
  await harness.shot(page, 'trends');
  // The months and the weekdays name the map: one row of a year, every month once, the
  // first with its year; Monday, Wednesday, Friday and Sunday beside it.
  const months = await page.$$eval('#heatmap .heat-month', (xs) => xs.map((x) => x.textContent));
  assert.equal(months[0], new Intl.DateTimeFormat(undefined, { month: 'short', year: 'numeric' }).format(new Date(2024, 2, 4)).replace(',', ''));
  assert.ok(months.length >= 12 && months.length <= 13, months.join());
  const weekdays = await page.$$eval('#heatmap .heat-weekday', (xs) => xs.map((x) => x.textContent).filter(Boolean));
  assert.equal(weekdays.length, 4, weekdays.join());
  // Longer ranges: two years, then all of the history (from the week of its first event),
  // a row of weeks per year, the same per-day totals.
  for (const [range, years] of [['2y', 2], ['all', null]]) {
    await go(() => page.click(`#trend-range [data-range="${range}"]`));
    await page.waitForSelector('main[data-complete="trends"]');
    assert.match(page.url(), new RegExp(`range=${range}`));
    assert.equal(await page.getAttribute(`#trend-range [data-range="${range}"]`, 'aria-pressed'), 'true');
    const buckets = await page.evaluate(async () => (await fetch('/api/0/buckets/')).json());
    const start = isoDate(new Date(buckets[idsOf('busyhost').window].metadata.start));
    const from = period.periodOf('week', years ? addDays(DAY, -(365 * years) + 1) : start, { weekStart: 1 }).first;
    const longer = period.days({ kind: 'custom', first: from, last: DAY });
    const longerResults = await query(longer.map((d) => dayRange(d, SOD)), dailyQuery([idsOf('busyhost')], DEFAULT_CLASSES));
    const shown = await page.$$eval('#heatmap .heat-cell[data-day]', (cs) => cs.map((c) => c.dataset.day));
    assert.deepEqual(shown, longer, range);
    assert.equal(await page.$$eval('#heatmap .heat-row', (xs) => xs.length), Math.ceil(longer.length / 7 / 53), range);
    assert.equal(await stat('trend-total'), dur(longerResults.reduce((t, r) => t + r.active, 0)), range);
    await harness.shot(page, `trends-${range}`);
  }
  await go(() => page.click('#trend-range [data-range="1y"]'));
  await page.waitForSelector('main[data-complete="trends"]');
  // A day of the heat map opens that day.
  await go(() => page.click(`#heatmap [data-day="${days[days.length - 1]}"]`));
  assert.match(page.url(), /#\/activity\?/);
  assert.equal(await page.inputValue('#date'), DAY);
  watcher.assertClean();
});

test('categories are added, renamed with their children, edited and deleted; the server checks each rule; aw-webui sees the same setting', async () => {
  // As aw-webui writes them: ids, colours, a score.
  await server.api('POST', 'settings/classes', [
    { id: 1, name: ['Work'], rule: { type: 'regex', regex: 'Code' }, data: { color: '#112233' }, score: 5 },
    { id: 2, name: ['Work', 'Docs'], rule: { type: 'regex', regex: 'docs\\.rs', ignore_case: true } },
    { id: 3, name: ['Comms'], rule: { type: 'none' }, data: { color: '#0F0' } },
  ]);
  const setting = () => server.api('GET', 'settings/classes');
  const rowNames = () => page.$$eval('.cat-row', (rs) => rs.map((r) => r.dataset.name));
  try {
    await visit(`#/categories`);
    assert.deepEqual(await rowNames(), ['Comms', 'Work', 'Work > Docs']);
    // Rename a parent: its child follows; every other field stays.
    await page.click('[aria-label="Edit Work"]');
    await page.fill('#cat-name', 'Job');
    await page.click('#cat-save');
    await page.waitForSelector('#cat-message');
    let saved = await setting();
    assert.deepEqual(saved.find((c) => c.id === 1), { id: 1, name: ['Job'], rule: { type: 'regex', regex: 'Code', ignore_case: false }, data: { color: '#112233' }, score: 5 });
    assert.deepEqual(saved.find((c) => c.id === 2).name, ['Job', 'Docs']);
    assert.equal(saved.find((c) => c.id === 2).rule.ignore_case, true);
    // Add one under a parent.
    await page.click('#cat-add');
    await page.fill('#cat-name', 'Chat');
    await page.selectOption('#cat-parent', { label: 'Comms' });
    await page.fill('#cat-regex', 'Slack|Zulip');
    await page.click('#cat-save');
    await page.waitForSelector('#cat-message');
    saved = await setting();
    const chat = saved.find((c) => c.name.join('>') === 'Comms>Chat');
    // No colour of its own: it takes its parent's, as in aw-webui.
    assert.deepEqual(chat, { id: 4, name: ['Comms', 'Chat'], rule: { type: 'regex', regex: 'Slack|Zulip', ignore_case: false } });
    // Changing only a rule keeps the colour as aw-webui wrote it (a colour input would say #00ff00).
    await page.click('[aria-label="Edit Comms"]');
    await page.fill('#cat-regex', 'Mattermost');
    await page.click('#cat-save');
    await page.waitForSelector('#cat-message');
    saved = await setting();
    assert.deepEqual(saved.find((c) => c.id === 3), { id: 3, name: ['Comms'], rule: { type: 'regex', regex: 'Mattermost', ignore_case: false }, data: { color: '#0F0' } });
    // A rule the server's regex engine refuses is not saved, and its error is shown.
    await watcher.allowingQueryErrors(async () => {
      await page.click('#cat-add');
      await page.fill('#cat-name', 'Bad');
      await page.fill('#cat-regex', 'a(b');
      await page.click('#cat-save');
      await page.waitForSelector('#cat-regex-error');
      assert.match(await page.textContent('#cat-regex-error'), /RegexCompileError/);
    });
    assert.equal((await setting()).length, 4);
    await harness.shot(page, 'categories-error');
    await page.click('#cat-cancel');
    // Delete, after confirming.
    await page.click('[aria-label="Delete Comms > Chat"]');
    await page.click('dialog button[value="confirm"]');
    await page.waitForSelector('#cat-message');
    assert.ok(!(await setting()).some((c) => c.name.join('>') === 'Comms>Chat'));
    // A change made elsewhere (aw-webui) shows here.
    await server.api('POST', 'settings/classes', [...(await setting()), { id: 9, name: ['Media'], rule: { type: 'regex', regex: 'Spotify' } }]);
    await page.reload();
    await ready();
    assert.ok((await rowNames()).includes('Media'));
    await harness.shot(page, 'categories');
  } finally {
    await server.api('DELETE', 'settings/classes');
  }
  watcher.assertClean();
});

test('Settings: the day start, the first weekday and the theme, stored as aw-webui stores them', async () => {
  try {
    await visit('#/settings');
    assert.equal(await page.inputValue('#set-start-of-day'), '04:00');
    assert.equal(await page.inputValue('#set-start-of-week'), 'Monday');
    await page.fill('#set-start-of-day', '06:30');
    await page.selectOption('#set-start-of-week', 'Sunday');
    await page.selectOption('#set-theme', 'dark');
    await page.click('#set-save');
    await page.waitForSelector('#set-saved');
    const settings = await server.api('GET', 'settings');
    assert.deepEqual([settings.startOfDay, settings.startOfWeek, settings.theme], ['06:30', 'Sunday', 'dark']);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    // Weeks now start on Sunday, days at 06:30.
    await visit(`#/activity?period=week&date=${DAY}&host=busyhost`);
    assert.equal(await page.textContent('#day-label'), 'Week of 2 Mar 2025');
    await visit(`#/query?date=${DAY}`);
    assert.equal(await page.inputValue('#query-start'), `${DAY}T06:30`);
    await harness.shot(page, 'settings-dark');
  } finally {
    for (const key of ['startOfDay', 'startOfWeek', 'theme']) await server.api('DELETE', `settings/${key}`);
  }
  watcher.assertClean();
});

test('keyboard only: a period, the previous one, and a new category', async () => {
  await visit(`#/activity?date=${DAY}&host=busyhost`);
  /** Tabs until `selector` has the focus (at most 40 presses). */
  const tabTo = async (selector) => {
    for (let i = 0; i < 40; i += 1) {
      if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) return;
      await page.keyboard.press('Tab');
    }
    assert.fail(`${selector} cannot be reached with Tab`);
  };
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await tabTo('[data-period="month"]');
  await go(() => page.keyboard.press('Enter'));
  assert.equal(await page.textContent('#day-label'), 'March 2025');
  await tabTo('#prev-day');
  await go(() => page.keyboard.press('Space'));
  assert.equal(await page.textContent('#day-label'), 'February 2025');
  // The chart's days: one Tab stop, arrows between them, Enter opens one.
  assert.equal(await page.$$eval('#days [tabindex="0"]', (xs) => xs.length), 1, 'one Tab stop in the chart');
  await tabTo('#days .day-bar');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('data-day')), '2025-02-28');
  await page.keyboard.press('ArrowLeft');
  await go(() => page.keyboard.press('Enter'));
  assert.equal(await page.inputValue('#date'), '2025-02-27');
  // The heat map's days likewise: left is a week earlier.
  await visit(`#/trends?host=busyhost`);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  assert.equal(await page.$$eval('#heatmap [tabindex="0"]', (xs) => xs.length), 1, 'one Tab stop in the heat map');
  await tabTo('#heatmap .heat-cell');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.day), DAY);
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowUp');
  await go(() => page.keyboard.press('Enter'));
  assert.equal(await page.inputValue('#date'), '2025-02-24');
  await visit(`#/categories`);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  try {
    await tabTo('#cat-add');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#cat-name:focus');
    await page.keyboard.type('Reading');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Kindle|Calibre');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#cat-message');
    const saved = await server.api('GET', 'settings/classes');
    assert.ok(saved.some((c) => c.name.join('>') === 'Reading' && c.rule.regex === 'Kindle|Calibre'));
  } finally {
    await server.api('DELETE', 'settings/classes');
  }
  watcher.assertClean();
});

test('the new views fit a 360 px screen and follow a dark system theme', async () => {
  const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, timezoneId: 'UTC', locale: 'en-US', colorScheme: 'dark' });
  phone.setDefaultTimeout(HANG_MS);
  try {
    const p = await phone.newPage();
    await p.clock.setFixedTime(NOW);
    watcher.watch(p);
    for (const [name, hash] of [
      ['week', `#/activity?period=week&date=${DAY}&host=busyhost`],
      ['month', `#/activity?period=month&date=${DAY}&host=busyhost`],
      ['year', `#/activity?period=year&date=${DAY}&host=busyhost`],
      ['custom', '#/activity?period=custom&start=2025-01-01&end=2025-02-15&date=2025-02-15&host=busyhost'],
      ['trends', '#/trends?host=busyhost'],
      ['categories', '#/categories'],
      ['settings', '#/settings'],
    ]) {
      await visit(hash, p);
      assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), 'dark');
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${name} overflows a 360 px screen by ${overflow}px`);
      await harness.shot(p, `${name}-360-dark`);
    }
    watcher.assertClean();
  } finally {
    await phone.close();
  }
});
