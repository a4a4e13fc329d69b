// Changing the stored history from the dashboard, in real Chromium against the real binary
// (issue 36): a span of the Timeline is previewed with a dry run, then deleted from every
// bucket of the host, with the backup that undoes it named (and refused when a write changed
// the span after the preview); a span dragged on the timeline
// fills the times; an event is edited and deleted from its band; the privacy rules are
// checked against the stored history, then applied after a confirmation; and an activity
// added by hand shows on the Timeline and counts as active time, in the dashboard's query
// as in the client library's, and the summary for scripts gives what the Activity page
// shows. Each step is checked against what the server holds.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import * as harness from './harness.mjs';
import { CHROMIUM_ARGS, HANG_MS, dur, rustDesktopQuery } from './harness.mjs';
import { DEFAULT_CLASSES, dailyQuery, desktopQuery, hostBuckets, queryable } from '../../aw-server/webui/queries.js';

const DAY = '2025-03-04';
const at = (hh, mm = 0) => new Date(Date.parse(`${DAY}T00:00:00Z`) + (hh * 60 + mm) * 60_000).toISOString();

let server;
let browser;
let page;
let host;
const watcher = harness.problemWatcher();

const count = async (id) => server.api('GET', `buckets/${encodeURIComponent(id)}/events/count`);
const events = async (id) => server.api('GET', `buckets/${encodeURIComponent(id)}/events?limit=-1`);

before(async () => {
  server = await startServer({ dashboard: true });
  host = (await server.api('GET', 'info')).hostname;
  const window = `aw-watcher-window_${host}`;
  const afk = `aw-watcher-afk_${host}`;
  await server.api('POST', `buckets/${window}`, { client: 'aw-watcher-window', type: 'currentwindow', hostname: host });
  await server.api('POST', `buckets/${afk}`, { client: 'aw-watcher-afk', type: 'afkstatus', hostname: host });
  // 10:00–12:00: twelve window events of 10 minutes, one not-afk event across them.
  await server.api('POST', `buckets/${window}/events`, Array.from({ length: 12 }, (_, k) => ({
    timestamp: at(10, 10 * k),
    duration: 600,
    data: { app: k % 2 ? 'Firefox' : 'Code', title: k === 7 ? 'secret plan - Firefox' : `file ${k}.rs` },
  })));
  await server.api('POST', `buckets/${afk}/events`, [{ timestamp: at(10), duration: 7200, data: { status: 'not-afk' } }]);

  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
  context.setDefaultTimeout(HANG_MS);
  page = await context.newPage();
  await page.clock.setFixedTime(Date.parse(`${DAY}T19:00:00Z`));
  watcher.watch(page);
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

/** The x of a time on the axis (its hour label's left edge, interpolated within the hour). */
async function xOf(hh, mm) {
  const axis = await page.$$eval('.tl-hour.major', (spans) => spans.map((s) => [s.textContent, s.getBoundingClientRect().left]));
  const hour = (h) => axis.find(([t]) => t === `${String(h).padStart(2, '0')}:00`);
  const [a, b] = [hour(hh), hour(hh + 1)];
  assert.ok(a && b, `axis labels at ${hh}:00 and ${hh + 1}:00: ${JSON.stringify(axis)}`);
  return a[1] + ((b[1] - a[1]) * mm) / 60;
}

test('a span of the Timeline is previewed, then deleted from every bucket of the host, with its undo named', async () => {
  const window = `aw-watcher-window_${host}`;
  const afk = `aw-watcher-afk_${host}`;
  await page.goto(`${server.url}/#/timeline?date=${DAY}`);
  await harness.ready(page);

  // Dragged from 11:00 to 11:30 on the application row: the times are filled in (to the
  // pixel) and previewed; nothing changes.
  const track = await page.locator('.tl-track').nth(1).boundingBox();
  const y = track.y + track.height / 2;
  await page.mouse.move(await xOf(11, 0), y);
  await page.mouse.down();
  await page.mouse.move(await xOf(11, 15), y, { steps: 4 });
  await page.mouse.move(await xOf(11, 30), y, { steps: 4 });
  await page.mouse.up();
  await page.waitForSelector('#tl-del-summary');
  const minutes = (v) => { const [h, m, s] = v.split(':').map(Number); return h * 60 + m + s / 60; };
  assert.ok(Math.abs(minutes(await page.inputValue('#tl-del-from')) - 660) < 2, await page.inputValue('#tl-del-from'));
  assert.ok(Math.abs(minutes(await page.inputValue('#tl-del-to')) - 690) < 2, await page.inputValue('#tl-del-to'));
  assert.ok(await page.isVisible('#tl-selection'));

  // Typed exactly: 10:30–11:00 holds three window events and cuts the AFK event in two.
  await page.fill('#tl-del-from', '10:30:00');
  await page.fill('#tl-del-to', '11:00:00');
  assert.equal(await page.$('#tl-del-run'), null, 'a changed span is previewed again before it can be deleted');
  await page.click('#tl-del-preview');
  await page.waitForSelector('#tl-del-run');
  assert.equal(await page.textContent('#tl-del-summary'),
    'Between 10:30:00 and 11:00:00: 4 events in 2 buckets, 1h 00m 00s; 1 of them cut at the edges. Nothing is deleted until you press Delete.');
  assert.equal(await count(window), 12, 'the preview changes nothing');
  await harness.shot(page, 'timeline-delete-preview');

  // A watcher writes into the span after the preview: Delete is refused, nothing goes, and
  // the new preview counts the new event too.
  await server.api('POST', `buckets/${window}/events`, [{ timestamp: at(10, 35), duration: 60, data: { app: 'Code', title: 'late' } }]);
  await page.click('#tl-del-run');
  await page.waitForSelector('#tl-del-result .alert');
  assert.match(await page.textContent('#tl-del-result'), /changed since it was previewed/);
  assert.equal(await count(window), 13, 'nothing deleted');
  // The refused Delete (409) is the one failed request this step expects.
  const refusedRequests = watcher.problems.splice(0);
  assert.ok(refusedRequests.length && refusedRequests.every((x) => /409/.test(x)), JSON.stringify(refusedRequests));
  await page.click('#tl-del-preview');
  await page.waitForSelector('#tl-del-run');
  assert.match(await page.textContent('#tl-del-summary'), /: 5 events in 2 buckets, 1h 01m 00s;/);

  await harness.after(page, () => page.click('#tl-del-run'));
  assert.match(await page.textContent('#tl-del-done'), /^Deleted 5 events in 2 buckets/);
  assert.match(await page.textContent('#undo-note'), /aw-server .*restore .*before-rewrite/);
  assert.equal(await count(window), 9);
  const afkLeft = (await events(afk)).map((e) => [e.timestamp.slice(11, 16), e.duration]).sort();
  assert.deepEqual(afkLeft, [['10:00', 1800], ['11:00', 3600]]);
  const backups = await server.api('GET', 'backups');
  assert.ok(backups.backups.some((b) => b.kind === 'before-rewrite'), JSON.stringify(backups));
  watcher.assertClean();
});

test('an event is opened from its band, edited, and deleted', async () => {
  const window = `aw-watcher-window_${host}`;
  await harness.open(page, `#/timeline?date=${DAY}&host=${host}`);
  const track = await page.locator('.tl-track').nth(1).boundingBox();
  // 10:05 is in the first window event (Code, file 0.rs).
  await page.mouse.click(await xOf(10, 5), track.y + track.height / 2);
  await page.waitForSelector('dialog[open] #ev-data');
  assert.match(await page.inputValue('#ev-data'), /file 0\.rs/);
  // (Chromium leaves out seconds that are zero.)
  assert.match(await page.inputValue('#ev-start'), new RegExp(`^${DAY}T10:00(:00)?$`));
  await page.fill('#ev-data', '{"app": "Editor", "title": "renamed"}');
  await page.fill('#ev-duration', '300');
  await harness.after(page, () => page.click('#ev-save'));
  assert.equal(await page.$('dialog'), null);
  const edited = (await events(window)).find((e) => e.data.app === 'Editor');
  assert.deepEqual([edited.timestamp.slice(11, 19), edited.duration, edited.data.title], ['10:00:00', 300, 'renamed']);
  assert.equal(await count(window), 9, 'edited in place, not added');

  // Bad JSON is refused in the page, and nothing is sent.
  await page.mouse.click(await xOf(10, 2), track.y + track.height / 2);
  await page.waitForSelector('dialog[open] #ev-data');
  await page.fill('#ev-data', '{"app": ');
  await page.click('#ev-save');
  await page.waitForSelector('#ev-status .alert');
  // Deleted from the same dialog.
  await harness.after(page, () => page.click('#ev-delete'));
  assert.equal(await count(window), 8);
  assert.ok(!(await events(window)).some((e) => e.data.app === 'Editor'));
  watcher.assertClean();
});

test('the privacy rules are edited in Settings: added, changed, removed and saved', async () => {
  await server.api('POST', 'settings/privacy_filters', [{ enabled: true, field: 'title', pattern: 'old', action: 'drop' }]);
  await harness.open(page, '#/settings');
  assert.equal(await page.inputValue('#rule-0-pattern'), 'old');
  // Change the first into a redaction, add a second, then remove the first.
  await page.selectOption('#rule-0-action', 'redact');
  await page.fill('#rule-0-replacement', '(gone)');
  await page.click('#rules-add');
  await page.fill('#rule-1-bucket_prefix', 'aw-watcher-web');
  await page.fill('#rule-1-pattern', 'bank\\.example');
  await page.uncheck('#rule-1-enabled');
  await page.click('#rules-save');
  await page.waitForSelector('#rules-saved');
  assert.deepEqual(await server.api('GET', 'settings/privacy_filters'), [
    { enabled: true, field: 'title', pattern: 'old', action: 'redact', replacement: '(gone)' },
    { enabled: false, bucket_prefix: 'aw-watcher-web', pattern: 'bank\\.example', action: 'drop' },
  ]);
  await page.click('button[aria-label="Remove rule 1"]');
  assert.equal(await page.inputValue('#rule-0-pattern'), 'bank\\.example');
  // A rule without a pattern is not saved.
  await page.click('#rules-add');
  await page.click('#rules-save');
  assert.match(await page.textContent('#rules-status'), /Rule 2 has no pattern/);
  await page.click('button[aria-label="Remove rule 2"]');
  await page.click('#rules-save');
  await page.waitForSelector('#rules-saved');
  assert.deepEqual(await server.api('GET', 'settings/privacy_filters'), [
    { enabled: false, bucket_prefix: 'aw-watcher-web', pattern: 'bank\\.example', action: 'drop' },
  ]);
  await harness.shot(page, 'privacy-rules');
  await server.api('DELETE', 'settings/privacy_filters');
  // Away from Settings, so that the next test's visit there is a new page.
  await harness.open(page, '#/buckets');
  watcher.assertClean();
});

test('the privacy rules are checked against the stored history, then applied after a confirmation', async () => {
  const window = `aw-watcher-window_${host}`;
  await server.api('POST', 'settings/privacy_filters', [
    { enabled: true, field: 'title', pattern: 'secret', action: 'drop' },
    { enabled: true, field: 'title', pattern: '\\.rs$', action: 'redact', replacement: '(hidden)' },
  ]);
  const before = await count(window);
  await harness.open(page, '#/settings');
  await page.click('#privacy-check');
  await page.waitForSelector('#privacy-summary');
  assert.equal(await page.textContent('#privacy-summary'), `Of ${before + 2} stored events, 1 would be deleted and ${before - 1} redacted.`);
  assert.match(await page.textContent('.privacy-rules'), /secret plan - Firefox/);
  assert.equal(await count(window), before, 'the check changes nothing');
  await harness.shot(page, 'privacy-dry-run');

  // Cancel first, then apply.
  await page.click('#privacy-apply');
  await page.click('dialog button[value="cancel"]');
  await page.waitForSelector('dialog', { state: 'detached' });
  assert.equal(await count(window), before);
  await page.click('#privacy-apply');
  await page.click('dialog button[value="confirm"]');
  await page.waitForSelector('#privacy-done');
  assert.equal(await page.textContent('#privacy-done'), `Deleted 1 and redacted ${before - 1} of ${before + 2} stored events.`);
  assert.match(await page.textContent('#undo-note'), /aw-server .*restore .*before-rewrite/);
  const left = await events(window);
  assert.equal(left.length, before - 1);
  assert.ok(left.every((e) => e.data.title === '(hidden)'), JSON.stringify(left.map((e) => e.data.title)));
  watcher.assertClean();
});

test('an activity added by hand shows on the Timeline and counts as active time', async () => {
  const manual = `aw-manual_${host}`;
  const day = [`${DAY}T04:00:00Z`, '2025-03-05T04:00:00Z'].map((t) => new Date(t));
  const period = `${day[0].toISOString()}/${day[1].toISOString()}`;
  const active = async () => {
    const ids = queryable(hostBuckets(await server.api('GET', 'buckets/'), host)).ids;
    const [r] = await server.api('POST', 'query/', { timeperiods: [period], query: dailyQuery([ids], DEFAULT_CLASSES) });
    return r.active;
  };
  const before = await active();
  await harness.open(page, `#/timeline?date=${DAY}`);
  // 13:00–14:00: after the AFK bucket's last not-afk event, so away by the watchers.
  await page.fill('#tl-add-what', 'Team meeting');
  await page.fill('#tl-add-from', '13:00');
  await page.fill('#tl-add-to', '14:00');
  await harness.after(page, () => page.click('#tl-add-save'));
  const stored = await events(manual);
  assert.deepEqual(stored.map((e) => [e.timestamp.slice(11, 19), e.duration, e.data.title]), [['13:00:00', 3600, 'Team meeting']]);
  assert.equal((await server.api('GET', `buckets/${manual}`)).type, 'manual');
  assert.ok((await page.$$eval('.tl-label', (l) => l.map((x) => x.textContent))).includes('Added by hand'));
  assert.equal(await active(), before + 3600, 'active time includes the meeting');

  // Activity shows it: active time and the meeting among the applications; and the
  // summary for scripts (`GET /api/0/summary`) gives what the page shows, app by app.
  await harness.open(page, `#/activity?date=${DAY}`);
  assert.equal(await harness.stat(page, 'stat-active'), dur(before + 3600));
  assert.match(await page.textContent('main'), /Team meeting/);
  const summary = await server.api('GET', `summary?${new URLSearchParams({ start: day[0].toISOString(), end: day[1].toISOString(), hostname: host, by: 'app', tz: 'UTC' })}`);
  harness.assertBars(await harness.bars(page, 'top-apps'), summary.groups.map((g) => [g.key, g.seconds]), 'Top applications against the summary');
  assert.ok(summary.groups.some((g) => g.key === 'Team meeting' && g.seconds === 3600), JSON.stringify(summary));
  const titles = await server.api('GET', `summary?${new URLSearchParams({ start: day[0].toISOString(), end: day[1].toISOString(), hostname: host, by: 'title', tz: 'UTC' })}`);
  // (A title can stand twice, under two applications: compared as lists, not by title.)
  const rows = (list) => list.map(([k, v]) => `${k} ${v}`).sort();
  assert.deepEqual(rows(await harness.bars(page, 'top-titles')), rows(titles.groups.map((g) => [g.key, dur(g.seconds)])), 'Top window titles against the summary');

  // The client library's query counts what the dashboard's counts.
  const ids = queryable(hostBuckets(await server.api('GET', 'buckets/'), host)).ids;
  assert.equal(ids.manual, manual);
  const [dashboard] = await server.api('POST', 'query/', { timeperiods: [period], query: desktopQuery({ ...ids, classes: DEFAULT_CLASSES }) });
  const [client] = await server.api('POST', 'query/', { timeperiods: [period], query: [rustDesktopQuery(ids)] });
  assert.deepEqual(client, dashboard);
  assert.ok(dashboard.window.app_events.some((e) => e.data.app === 'Team meeting' && e.duration === 3600), JSON.stringify(dashboard.window.app_events));
  watcher.assertClean();
});
